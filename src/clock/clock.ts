/**
 * The one clock every actor uses. XState v5 accepts `{ setTimeout, clearTimeout }` as `createActor(…, { clock })`;
 * we add `now()` (epoch milliseconds) so machines and the orchestrator never read `Date.now()` themselves, and
 * `monotonic()` for intervals that must not move when the wall clock is stepped (at boot, by NTP).
 */
export type TimerId = unknown;

export interface Clock {
  /** Wall-clock time, epoch ms: for what outlives the process or is shown to people. */
  now(): number;
  /** Milliseconds on a clock that never steps (its origin is arbitrary): for measuring intervals. */
  monotonic(): number;
  setTimeout(fn: () => void, ms: number): TimerId;
  clearTimeout(id: TimerId): void;
}

interface SystemTimer {
  timer: ReturnType<typeof setTimeout> | undefined;
  immediate: ReturnType<typeof setImmediate> | undefined;
}

/**
 * Wall-clock time for the daemon. A deadline never beats a message that reached the daemon before it fired: Node
 * runs expired timers *before* it reads the sockets in each turn of its event loop, so after a busy stretch (a burst
 * of hundreds of questions) a 125 ms claim bound would close a poll while the pongs sent in time still sit unread in
 * the socket — measured: whole bursts of answers lost. So an expired timer's callback runs one `setImmediate` later,
 * after the I/O phase of that turn has delivered everything already received (the bus delivers from a microtask).
 * On an idle daemon this costs well under a millisecond.
 */
export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  setTimeout: (fn, ms) => {
    const handle: SystemTimer = { timer: undefined, immediate: undefined };
    handle.timer = setTimeout(() => {
      handle.timer = undefined;
      handle.immediate = setImmediate(() => {
        handle.immediate = undefined;
        fn();
      });
    }, ms);
    return handle;
  },
  clearTimeout: (id) => {
    const handle = id as SystemTimer | undefined;
    if (handle === undefined) return;
    if (handle.timer !== undefined) clearTimeout(handle.timer);
    if (handle.immediate !== undefined) clearImmediate(handle.immediate);
    handle.timer = undefined;
    handle.immediate = undefined;
  },
};
