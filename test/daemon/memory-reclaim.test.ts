/**
 * Giving memory back after a burst (issue 12; src/daemon/memory-reclaim.ts), on the deterministic clock with scripted
 * probes: a full collection runs only on a loop that was idle over the interval just past, only while V8 holds more
 * than the slack over what the last collection left in use — and the real collector is reachable on this node.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock/manual-clock.js';
import { silentLogger } from '../../src/log/logger.js';
import { processProbes, RECLAIM_IDLE_UTILIZATION, RECLAIM_INTERVAL_MS, RECLAIM_SLACK_BYTES, startMemoryReclaimer } from '../../src/daemon/memory-reclaim.js';

const MB = 1024 * 1024;

/** A heap that `collect` shrinks to `live` used, and `settle` (V8's next collection) gives back down to live. */
function scripted(start: { total: number; used: number }) {
  const state = { ...start, utilization: 0, collected: 0, live: start.used };
  return {
    state,
    probes: {
      utilization: () => state.utilization,
      heap: () => ({ total: state.total, used: state.used }),
      collect: () => {
        state.collected += 1;
        state.used = state.live;
      },
    },
  };
}

function reclaimer(start: { total: number; used: number }) {
  const clock = new ManualClock(0);
  const heap = scripted(start);
  const r = startMemoryReclaimer({ clock, logger: silentLogger(), probes: heap.probes });
  return { clock, heap, r, tick: () => clock.advance(RECLAIM_INTERVAL_MS) };
}

describe('memory reclaim after a burst', () => {
  it('after a flood, on an idle loop: one collection at the next check, none while the loop is busy', () => {
    const { heap, tick, r } = reclaimer({ total: 30 * MB, used: 20 * MB });
    // The flood: the heap grows, the loop is busy — V8's own collections run there; ours does not.
    heap.state.total = 120 * MB;
    heap.state.used = 90 * MB;
    heap.state.utilization = 0.9;
    tick();
    expect(heap.state.collected).toBe(0);
    // Quiet again.
    heap.state.utilization = 0.01;
    tick();
    expect(heap.state.collected).toBe(1);
    expect(r.collections).toBe(1);
  });

  it('the pages V8 frees at its next collection: collected again while the heap held is over the live size + slack, then left alone', () => {
    const { heap, tick } = reclaimer({ total: 120 * MB, used: 90 * MB });
    heap.state.live = 19 * MB;
    tick(); // first: garbage freed (used 19 MB), the heap still held (120 MB)
    expect(heap.state.collected).toBe(1);
    tick(); // 120 − 19 > 16 MB: again (V8 gives the emptied pages back now)
    expect(heap.state.collected).toBe(2);
    heap.state.total = 23 * MB;
    tick();
    tick();
    expect(heap.state.collected).toBe(2);
  });

  it(`boundaries: slack exactly ${RECLAIM_SLACK_BYTES / MB} MB is left alone, one byte more is collected; utilisation exactly ${RECLAIM_IDLE_UTILIZATION} is not idle`, () => {
    const atSlack = reclaimer({ total: 40 * MB, used: 24 * MB });
    atSlack.tick();
    expect(atSlack.heap.state.collected).toBe(0);
    atSlack.heap.state.total = 40 * MB + 1;
    atSlack.tick();
    expect(atSlack.heap.state.collected).toBe(1);

    const busyEnough = reclaimer({ total: 100 * MB, used: 20 * MB });
    busyEnough.heap.state.utilization = RECLAIM_IDLE_UTILIZATION;
    busyEnough.tick();
    expect(busyEnough.heap.state.collected).toBe(0);
    busyEnough.heap.state.utilization = RECLAIM_IDLE_UTILIZATION - 0.001;
    busyEnough.tick();
    expect(busyEnough.heap.state.collected).toBe(1);
  });

  it('checks once per interval, not before; stopped, never again', () => {
    const { heap, clock, r } = reclaimer({ total: 100 * MB, used: 20 * MB });
    clock.advance(RECLAIM_INTERVAL_MS - 1);
    expect(heap.state.collected).toBe(0);
    clock.advance(1);
    expect(heap.state.collected).toBe(1);
    r.stop();
    heap.state.total = 500 * MB;
    clock.advance(10 * RECLAIM_INTERVAL_MS);
    expect(heap.state.collected).toBe(1);
  });

  it('the real probes on this node: utilisation in [0, 1], the heap read, and a full collection that runs', async () => {
    const probes = processProbes();
    const utilization = probes.utilization();
    expect(utilization).toBeGreaterThanOrEqual(0);
    expect(utilization).toBeLessThanOrEqual(1);
    const heap = probes.heap();
    expect(heap.total).toBeGreaterThanOrEqual(heap.used);
    // Garbage made here is gone after collect.
    let garbage: number[][] | undefined = Array.from({ length: 2_000 }, () => Array.from({ length: 100 }, (_, i) => i));
    const ref = new WeakRef(garbage);
    garbage = undefined;
    // A WeakRef's target is kept until the job that made it ends (ECMA-262 KeepDuringJob).
    await new Promise<void>((resolve) => setImmediate(resolve));
    probes.collect();
    expect(ref.deref()).toBeUndefined();
  });
});
