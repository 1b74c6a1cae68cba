/**
 * The barrier clock (src/clock/barrier-clock.ts): a deadline that falls due waits for the barrier — in a cluster, every
 * daemon with clients saying it has relayed what it had read — so a reply that reached the cluster in time is read
 * before the deadline acts. Harness: ManualClock as the base, the barrier passed by hand.
 */
import { describe, expect, it } from 'vitest';
import { barrierClock } from '../../src/clock/barrier-clock.js';
import { ManualClock } from '../../src/clock/manual-clock.js';

function rig() {
  const base = new ManualClock();
  const asked: Array<() => void> = [];
  const clock = barrierClock(base, (passed) => asked.push(passed));
  const fired: string[] = [];
  const timer = (name: string, ms: number) => clock.setTimeout(() => fired.push(name), ms);
  return { base, asked, clock, fired, timer };
}

describe('FALLBACK-1 §6.1, COMMON-QUERY-1 §6.3 / §7.2 deadlines in a cluster: a deadline waits for the barrier (a reply that reached the cluster before it fell due is read first)', () => {
  it('a timer that falls due fires only once the barrier has passed; the barrier is not asked before', () => {
    const { base, asked, fired, timer } = rig();
    timer('poll', 125);
    base.advance(124);
    expect(asked).toHaveLength(0);
    base.advance(1);
    expect(asked).toHaveLength(1);
    expect(fired).toEqual([]);
    asked[0]!();
    expect(fired).toEqual(['poll']);
  });

  it('timers that fall due while the barrier is asked wait for the next one, asked once it has passed: each fires once, in the order they fell due, after at most two', () => {
    const { base, asked, fired, timer } = rig();
    timer('a', 10);
    timer('b', 10);
    base.advance(10);
    expect(asked).toHaveLength(1); // asked for a; b fell due after that
    timer('c', 5);
    base.advance(5);
    expect(asked).toHaveLength(1);
    asked[0]!();
    expect(fired).toEqual(['a']);
    expect(asked).toHaveLength(2); // one ask for b and c
    asked[1]!();
    expect(fired).toEqual(['a', 'b', 'c']);
    base.advance(1_000);
    expect(asked).toHaveLength(2);
    expect(fired).toEqual(['a', 'b', 'c']);
  });

  it('a timer cleared while it waits for the barrier never fires (the reply it waited for came in time); one cleared before it fell due asks nothing', () => {
    const { base, asked, clock, fired, timer } = rig();
    const answered = timer('answered', 10);
    timer('silent', 10);
    const early = timer('early', 20);
    base.advance(10);
    clock.clearTimeout(answered);
    clock.clearTimeout(early);
    asked[0]!();
    expect(fired).toEqual([]);
    asked[1]!();
    expect(fired).toEqual(['silent']);
    base.advance(100);
    expect(asked).toHaveLength(2);
  });

  it('a barrier that passes at once (no other daemon to wait for) fires the timer when it falls due, as the base clock would', () => {
    const base = new ManualClock();
    const clock = barrierClock(base, (passed) => passed());
    const fired: number[] = [];
    clock.setTimeout(() => fired.push(base.now()), 50);
    clock.setTimeout(() => fired.push(base.now()), 70);
    base.advance(100);
    expect(fired).toEqual([base.now() - 50, base.now() - 30]);
    expect(clock.now()).toBe(base.now());
    expect(clock.monotonic()).toBe(base.monotonic());
  });

  it('a timer armed by a timer that fired waits for a barrier of its own', () => {
    const { base, asked, clock, fired } = rig();
    clock.setTimeout(() => {
      fired.push('first');
      clock.setTimeout(() => fired.push('second'), 0);
    }, 10);
    base.advance(10);
    asked[0]!();
    expect(fired).toEqual(['first']);
    base.advance(0);
    expect(asked).toHaveLength(2);
    asked[1]!();
    expect(fired).toEqual(['first', 'second']);
  });
});
