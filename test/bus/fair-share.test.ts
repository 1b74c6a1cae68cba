/**
 * The fair-share policy alone (src/bus/fair-share.ts): who is paused — at once, mid-window, or at the window's end —
 * for how long, and who resumes, from the costs charged, whether the daemon was saturated and how many clients are
 * connected.
 */
import { describe, expect, it } from 'vitest';
import { BUSY_COST, COST_BYTES, FairShare, MIN_COST, WINDOW_MS } from '../../src/bus/fair-share.js';

/** Charges `frames` frames; returns the 1-based frame at which `charge` said to pause at once (0: never). */
function charge(share: FairShare<string>, key: string, frames: number, connected: number, bytes = 100): number {
  let pausedAt = 0;
  for (let i = 1; i <= frames; i++) if (share.charge(key, bytes, connected) && pausedAt === 0) pausedAt = i;
  return pausedAt;
}

describe('fair share policy', () => {
  it('a saturated bus: a client going over twice the mean over the connected clients (and MIN_COST) is paused at once, and at the window end for as long as its excess takes at its share', () => {
    const share = new FairShare<string>(1_000);
    share.roll(0, true, 4); // the last window was saturated
    charge(share, 'a', 10, 4);
    charge(share, 'b', 10, 4);
    // after n frames of its own: share = max(MIN_COST, 2 × (20 + n) / 4) — it is over once past MIN_COST
    expect(charge(share, 'loud', 4 * MIN_COST, 4)).toBe(MIN_COST + 1);
    expect(share.isPaused('loud')).toBe(true);
    // at the end: total 4,020, share 2,010, excess 1,990 → 99 ms, one window at least
    expect(share.roll(100, true, 4)).toEqual({ pause: [{ key: 'loud', cost: 4 * MIN_COST, share: 2_010, ms: WINDOW_MS }], resume: [] });
    expect(share.roll(200, true, 4).resume).toEqual(['loud']);
  });

  it('busy without saturation once the window has carried more than BUSY_COST', () => {
    const share = new FairShare<string>(1_000);
    expect(charge(share, 'loud', BUSY_COST, 10)).toBe(0);
    expect(charge(share, 'loud', 1, 10)).toBe(1);
    expect(share.roll(0, false, 10).pause.map((p) => p.key)).toEqual(['loud']);
  });

  it('the pause grows with the excess, up to maxPauseMs', () => {
    const share = new FairShare<string>(1_000);
    charge(share, 'a', 1, 10);
    // paused at its frame past BUSY_COST; the frames its socket had already handed over still arrive
    charge(share, 'loud', 20 * MIN_COST, 10);
    // 10 connected: share = 2 × 20,001 / 10 ≈ 4,000; excess 16,000 = 4 windows
    expect(share.roll(0, false, 10).pause).toEqual([{ key: 'loud', cost: 20 * MIN_COST, share: 4_000, ms: 400 }]);
    expect(share.roll(300, false, 10).resume).toEqual([]);
    expect(share.roll(400, false, 10).resume).toEqual(['loud']);
    share.roll(500, false, 100);
    charge(share, 'loud', 200 * MIN_COST, 100);
    expect(share.roll(600, false, 100).pause[0]!.ms).toBe(1_000);
  });

  it('pauses nobody while the bus keeps up and carries little, with one or two connected clients, or below MIN_COST', () => {
    const share = new FairShare<string>(1_000);
    expect(charge(share, 'loud', BUSY_COST, 10)).toBe(0);
    expect(share.roll(0, false, 10).pause).toEqual([]);
    expect(charge(share, 'loud', 4_000, 1)).toBe(0);
    expect(share.roll(100, true, 1).pause).toEqual([]);
    charge(share, 'other', 1, 2);
    expect(charge(share, 'loud', 4_000, 2)).toBe(0);
    expect(share.roll(200, true, 2).pause).toEqual([]);
    expect(charge(share, 'loud', MIN_COST, 100)).toBe(0);
    expect(share.roll(300, true, 100).pause).toEqual([]);
    expect(charge(share, 'loud', MIN_COST + 1, 100)).toBe(MIN_COST + 1);
  });

  it('counts bytes: a frame costs one more for every COST_BYTES it carries', () => {
    const share = new FairShare<string>(1_000);
    share.roll(0, true, 3);
    charge(share, 'small', 5, 3);
    expect(charge(share, 'big', 4, 3, 200 * COST_BYTES)).toBe(0); // 804 ≤ MIN_COST
    expect(charge(share, 'big', 1, 3, 200 * COST_BYTES)).toBe(1); // 1,005 > max(MIN_COST, 2 × 1,010 / 3)
  });

  it('a client resumed is not paused again for what it cost while paused, but is at once when it goes over its share again', () => {
    const share = new FairShare<string>(1_000);
    share.roll(0, true, 4);
    charge(share, 'loud', 4 * MIN_COST, 4);
    share.roll(100, true, 4);
    charge(share, 'loud', 3 * MIN_COST, 4); // read from its socket before the pause took hold
    expect(share.roll(200, true, 4)).toEqual({ pause: [], resume: ['loud'] });
    expect(charge(share, 'loud', 4 * MIN_COST, 4)).toBe(MIN_COST + 1);
  });

  it('forgets a closed client', () => {
    const share = new FairShare<string>(1_000);
    share.roll(0, true, 4);
    charge(share, 'loud', 400, 4);
    share.forget('loud');
    expect(share.paused).toBe(0);
    expect(share.isPaused('loud')).toBe(false);
  });
});
