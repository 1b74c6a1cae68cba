import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock/manual-clock.js';

const T0 = 1_000_000;

describe('ManualClock', () => {
  it('deterministic time: starts at the given epoch and does not move by itself', () => {
    const clock = new ManualClock(T0);
    expect(clock.now()).toBe(T0);
    expect(clock.now()).toBe(T0);
  });

  it('deterministic time: timers fire in due order, not arming order', () => {
    const clock = new ManualClock(T0);
    const fired: string[] = [];
    clock.setTimeout(() => fired.push('c'), 300);
    clock.setTimeout(() => fired.push('a'), 100);
    clock.setTimeout(() => fired.push('b'), 200);
    clock.advance(1000);
    expect(fired).toEqual(['a', 'b', 'c']);
  });

  it('deterministic time: now() inside a callback equals that timer’s due time', () => {
    const clock = new ManualClock(T0);
    const seen: number[] = [];
    for (const ms of [250, 50, 700]) clock.setTimeout(() => seen.push(clock.now() - T0), ms);
    clock.advance(1000);
    expect(seen).toEqual([50, 250, 700]);
  });

  it('deterministic time: a timer not yet due does not fire; it fires exactly at its due time', () => {
    const clock = new ManualClock(T0);
    let fired = 0;
    clock.setTimeout(() => fired++, 500);
    clock.advance(499);
    expect(fired).toBe(0);
    clock.advance(1);
    expect(fired).toBe(1);
    clock.advance(10_000);
    expect(fired).toBe(1);
  });

  it('deterministic time: cascade — three chained 500 ms timers all fire within advance(1500), each at its due time', () => {
    const clock = new ManualClock(T0);
    const firedAt: Array<[string, number]> = [];
    clock.setTimeout(() => {
      firedAt.push(['A', clock.now()]);
      clock.setTimeout(() => {
        firedAt.push(['B', clock.now()]);
        clock.setTimeout(() => firedAt.push(['C', clock.now()]), 500);
      }, 500);
    }, 500);
    clock.advance(1500);
    expect(firedAt).toEqual([
      ['A', T0 + 500],
      ['B', T0 + 1000],
      ['C', T0 + 1500],
    ]);
    expect(clock.now()).toBe(T0 + 1500);
  });

  it('deterministic time: cascade — a timer armed by a firing timer past the window waits for the next advance', () => {
    const clock = new ManualClock(T0);
    const fired: string[] = [];
    clock.setTimeout(() => {
      fired.push('A');
      clock.setTimeout(() => fired.push('B'), 600);
    }, 500);
    clock.advance(1000);
    expect(fired).toEqual(['A']);
    clock.advance(99);
    expect(fired).toEqual(['A']);
    clock.advance(1);
    expect(fired).toEqual(['A', 'B']);
  });

  it('deterministic time: cascade — a chained timer interleaves with an earlier-armed later timer in due order', () => {
    const clock = new ManualClock(T0);
    const fired: string[] = [];
    clock.setTimeout(() => {
      fired.push('A@100');
      clock.setTimeout(() => fired.push('C@200'), 100);
    }, 100);
    clock.setTimeout(() => fired.push('B@300'), 300);
    clock.advance(300);
    expect(fired).toEqual(['A@100', 'C@200', 'B@300']);
  });

  it('deterministic time: clearTimeout prevents firing', () => {
    const clock = new ManualClock(T0);
    const fired: string[] = [];
    const a = clock.setTimeout(() => fired.push('a'), 100);
    clock.setTimeout(() => fired.push('b'), 200);
    clock.clearTimeout(a);
    clock.advance(1000);
    expect(fired).toEqual(['b']);
  });

  it('deterministic time: a timer cleared by an earlier firing timer in the same advance does not fire', () => {
    const clock = new ManualClock(T0);
    const fired: string[] = [];
    const later = clock.setTimeout(() => fired.push('later'), 200);
    clock.setTimeout(() => {
      fired.push('first');
      clock.clearTimeout(later);
    }, 100);
    clock.advance(1000);
    expect(fired).toEqual(['first']);
  });

  it('deterministic time: clearing twice or clearing an already fired timer is harmless', () => {
    const clock = new ManualClock(T0);
    let fired = 0;
    const id = clock.setTimeout(() => fired++, 10);
    clock.advance(10);
    clock.clearTimeout(id);
    clock.clearTimeout(id);
    clock.clearTimeout('not-a-timer');
    const other = clock.setTimeout(() => fired++, 10);
    expect(clock.pending).toBe(1);
    clock.advance(10);
    expect(fired).toBe(2);
    expect(other).not.toBe(id);
  });

  it('deterministic time: equal due times fire in arming order', () => {
    const clock = new ManualClock(T0);
    const fired: number[] = [];
    for (let i = 0; i < 20; i++) clock.setTimeout(() => fired.push(i), 100);
    clock.advance(100);
    expect(fired).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });

  it('deterministic time: a 0 ms timer armed while firing at time t fires after the timers already due at t', () => {
    const clock = new ManualClock(T0);
    const fired: string[] = [];
    clock.setTimeout(() => {
      fired.push('a');
      clock.setTimeout(() => fired.push('a-child'), 0);
    }, 100);
    clock.setTimeout(() => fired.push('b'), 100);
    clock.advance(100);
    expect(fired).toEqual(['a', 'b', 'a-child']);
  });

  it('deterministic time: a negative delay is treated as 0', () => {
    const clock = new ManualClock(T0);
    let at = -1;
    clock.setTimeout(() => (at = clock.now()), -50);
    clock.advance(0);
    expect(at).toBe(T0);
  });

  it('deterministic time: advance leaves now() at the end of the window', () => {
    const clock = new ManualClock(T0);
    clock.setTimeout(() => {}, 100);
    clock.advance(250);
    expect(clock.now()).toBe(T0 + 250);
    clock.advance(0);
    expect(clock.now()).toBe(T0 + 250);
    clock.advance(750);
    expect(clock.now()).toBe(T0 + 1000);
  });

  it('deterministic time: runAll fires every timer, cascades included, and stops at the last due time', () => {
    const clock = new ManualClock(T0);
    const fired: Array<[string, number]> = [];
    clock.setTimeout(() => fired.push(['x', clock.now() - T0]), 5000);
    clock.setTimeout(() => {
      fired.push(['y', clock.now() - T0]);
      clock.setTimeout(() => fired.push(['z', clock.now() - T0]), 10_000);
    }, 1000);
    clock.runAll();
    expect(fired).toEqual([
      ['y', 1000],
      ['x', 5000],
      ['z', 11_000],
    ]);
    expect(clock.pending).toBe(0);
    expect(clock.now()).toBe(T0 + 11_000);
  });

  it('deterministic time: runAll skips cleared timers', () => {
    const clock = new ManualClock(T0);
    const fired: string[] = [];
    const a = clock.setTimeout(() => fired.push('a'), 100);
    clock.setTimeout(() => fired.push('b'), 200);
    clock.clearTimeout(a);
    clock.runAll();
    expect(fired).toEqual(['b']);
    expect(clock.pending).toBe(0);
  });

  it('deterministic time: runAll is bounded, so a self-re-arming timer cannot hang', () => {
    const clock = new ManualClock(T0);
    let fired = 0;
    const tick = (): void => {
      fired++;
      clock.setTimeout(tick, 10);
    };
    clock.setTimeout(tick, 10);
    clock.runAll(50);
    expect(fired).toBe(50);
    expect(clock.pending).toBe(1);
  });

  it('deterministic time: pending counts armed timers, not fired or cleared ones', () => {
    const clock = new ManualClock(T0);
    expect(clock.pending).toBe(0);
    const a = clock.setTimeout(() => {}, 100);
    clock.setTimeout(() => {}, 200);
    clock.setTimeout(() => {}, 300);
    expect(clock.pending).toBe(3);
    clock.clearTimeout(a);
    expect(clock.pending).toBe(2);
    clock.advance(200);
    expect(clock.pending).toBe(1);
    clock.advance(100);
    expect(clock.pending).toBe(0);
  });

  it('deterministic time: nextDue is the earliest live timer — cleared ones skipped, undefined when none is left', () => {
    const clock = new ManualClock(T0);
    expect(clock.nextDue()).toBeUndefined();
    const a = clock.setTimeout(() => {}, 100);
    const b = clock.setTimeout(() => {}, 50);
    clock.setTimeout(() => {}, 300);
    expect(clock.nextDue()).toBe(T0 + 50);
    clock.clearTimeout(b);
    expect(clock.nextDue()).toBe(T0 + 100);
    clock.clearTimeout(a);
    expect(clock.nextDue()).toBe(T0 + 300);
    // Asking does not fire, move or lose anything.
    expect(clock.now()).toBe(T0);
    expect(clock.pending).toBe(1);
    const fired: number[] = [];
    clock.setTimeout(() => fired.push(clock.now()), 0);
    expect(clock.nextDue()).toBe(T0);
    clock.advance(300);
    expect(fired).toEqual([T0]);
    expect(clock.nextDue()).toBeUndefined();
    expect(clock.pending).toBe(0);
  });

  it('deterministic time: clearing an id the clock has not issued (yet, or ever) cancels nothing', () => {
    const clock = new ManualClock(T0);
    const other = new ManualClock(T0);
    const fired: string[] = [];
    clock.clearTimeout(1); // the id the next timer will get
    const foreign = other.setTimeout(() => {}, 10);
    clock.clearTimeout(foreign); // the same number, from another clock, before this one issued it
    clock.setTimeout(() => fired.push('first'), 10);
    clock.setTimeout(() => fired.push('second'), 20);
    expect(clock.pending).toBe(2);
    clock.advance(20);
    expect(fired).toEqual(['first', 'second']);
  });

  it('deterministic time: 100k timers, many re-arming once, all fire in due order', () => {
    const clock = new ManualClock(T0);
    const count = 100_000;
    let fired = 0;
    let rearmedFired = 0;
    let lastNow = clock.now();
    let ordered = true;
    for (let i = 0; i < count; i++) {
      clock.setTimeout(() => {
        fired++;
        if (clock.now() < lastNow) ordered = false;
        lastNow = clock.now();
        if (i % 2 === 0) {
          clock.setTimeout(() => {
            rearmedFired++;
            if (clock.now() < lastNow) ordered = false;
            lastNow = clock.now();
          }, 500);
        }
      }, (i * 7919) % 1000);
    }
    clock.advance(2000);
    expect(fired).toBe(count);
    expect(rearmedFired).toBe(count / 2);
    expect(ordered).toBe(true);
    expect(clock.pending).toBe(0);
  });
});
