/**
 * A clock whose timers, once due, wait for a barrier before they fire: what lets a daemon of a cluster keep the
 * promise the system clock keeps on one bus — a deadline never beats a reply that reached the daemon before it fell
 * due (`systemClock`) — for replies that reached the cluster, through another daemon, before it fell due.
 *
 * A barrier covers the deadlines that fell due before it was asked: it is asked when a timer falls due and none is
 * pending; the timers that fall due while one is pending wait for the next, asked as soon as it has passed — a
 * deadline waits for two at most. The timers fire in the order they fell due. A timer cleared while it waits never
 * fires (the reply it waited for came in time). Time itself (`now`, `monotonic`) is the base clock's.
 */
import type { Clock, TimerId } from './clock.js';

/** Asked when timers fell due: calls `passed` once whatever might still answer them has been read. */
export type Barrier = (passed: () => void) => void;

interface Waiting {
  fn: (() => void) | undefined;
  base: TimerId | undefined;
}

export function barrierClock(base: Clock, barrier: Barrier): Clock {
  /** Due, waiting for the barrier asked next. */
  let due: Waiting[] = [];
  let asking = false;

  const ask = (): void => {
    if (asking || due.length === 0) return;
    asking = true;
    const batch = due;
    due = [];
    barrier(() => {
      asking = false;
      for (const timer of batch) {
        const fn = timer.fn;
        timer.fn = undefined;
        fn?.();
      }
      ask();
    });
  };

  return {
    now: () => base.now(),
    monotonic: () => base.monotonic(),
    setTimeout: (fn, ms) => {
      const timer: Waiting = { fn, base: undefined };
      timer.base = base.setTimeout(() => {
        timer.base = undefined;
        due.push(timer);
        ask();
      }, ms);
      return timer;
    },
    clearTimeout: (id) => {
      const timer = id as Waiting | undefined;
      if (timer === undefined) return;
      if (timer.base !== undefined) base.clearTimeout(timer.base);
      timer.base = undefined;
      timer.fn = undefined;
    },
  };
}
