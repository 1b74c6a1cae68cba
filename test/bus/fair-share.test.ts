/**
 * The fair-share policy alone (src/bus/fair-share.ts): who is paused and resumed at a window's end, from the costs
 * charged in it, whether the bus was saturated and how many clients are connected.
 */
import { describe, expect, it } from 'vitest';
import { COST_BYTES, FairShare, MIN_COST } from '../../src/bus/fair-share.js';

function charge(share: FairShare<string>, key: string, frames: number, bytes = 100): void {
  for (let i = 0; i < frames; i++) share.charge(key, bytes);
}

describe('fair share policy', () => {
  it('pauses, when saturated, only a client above twice the mean cost over the connected clients', () => {
    const share = new FairShare<string>(1_000);
    charge(share, 'loud', 400);
    charge(share, 'a', 10);
    charge(share, 'b', 10);
    // mean over 4 connected = 105; twice = 210: only 'loud' is above
    expect(share.roll(0, true, 4)).toEqual({ pause: [{ key: 'loud', cost: 400, share: 210 }], resume: [] });
    expect(share.isPaused('loud')).toBe(true);
  });

  it('pauses nobody when not saturated, with one or two connected clients, or below MIN_COST', () => {
    const share = new FairShare<string>(1_000);
    charge(share, 'loud', 400);
    expect(share.roll(0, false, 4).pause).toEqual([]);
    charge(share, 'loud', 400);
    expect(share.roll(100, true, 1).pause).toEqual([]);
    charge(share, 'loud', 400);
    charge(share, 'other', 1);
    expect(share.roll(200, true, 2).pause).toEqual([]);
    charge(share, 'loud', MIN_COST);
    expect(share.roll(300, true, 100).pause).toEqual([]);
    charge(share, 'loud', MIN_COST + 1);
    expect(share.roll(400, true, 100).pause.map((p) => p.key)).toEqual(['loud']);
  });

  it('counts bytes: a frame costs one more for every COST_BYTES it carries', () => {
    const share = new FairShare<string>(1_000);
    share.charge('big', 10 * COST_BYTES);
    charge(share, 'small', 5);
    expect(share.roll(0, true, 3)).toMatchObject({ pause: [] });
    for (let i = 0; i < 10; i++) share.charge('big', 10 * COST_BYTES);
    expect(share.roll(100, true, 3).pause).toEqual([{ key: 'big', cost: 110, share: 73 }]); // 2 × 110 / 3
  });

  it('resumes at the first window not saturated, or after maxPauseMs — and then gives it that window', () => {
    const share = new FairShare<string>(300);
    charge(share, 'loud', 400);
    share.roll(0, true, 4);
    expect(share.roll(100, true, 4).resume).toEqual([]);
    expect(share.roll(200, false, 4).resume).toEqual(['loud']);
    charge(share, 'loud', 400);
    share.roll(300, true, 4);
    expect(share.roll(500, true, 4).resume).toEqual([]);
    charge(share, 'loud', 400); // frames already read from its socket when it was paused
    expect(share.roll(600, true, 4)).toEqual({ pause: [], resume: ['loud'] });
    charge(share, 'loud', 400);
    expect(share.roll(700, true, 4).pause.map((p) => p.key)).toEqual(['loud']);
  });

  it('forgets a closed client', () => {
    const share = new FairShare<string>(1_000);
    charge(share, 'loud', 400);
    share.roll(0, true, 4);
    share.forget('loud');
    expect(share.paused).toBe(0);
    expect(share.charged).toBe(false);
  });
});
