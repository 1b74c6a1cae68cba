/**
 * Giving memory back after a burst (src/daemon/memory-reclaim.ts), on the deterministic clock with scripted
 * probes: a full collection runs only on a loop that was idle over the interval just past, only while V8 holds more
 * than the slack over what the last collection left in use — and the real collector is reachable on this node.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock/manual-clock.js';
import { silentLogger } from '../../src/log/logger.js';
import { processProbes, RECLAIM_IDLE_UTILIZATION, RECLAIM_INTERVAL_MS, RECLAIM_SLACK_BYTES, startMemoryReclaimer } from '../../src/daemon/memory-reclaim.js';

const MB = 1024 * 1024;

/** A scripted heap: `collect` takes the heap in use down to `live`; what V8 holds (`total`) the test sets. */
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
  it('after a flood, on an idle loop: a collection at the next check and one follow-up for the emptied pages — none while the loop is busy', () => {
    const { heap, tick, r } = reclaimer({ total: 30 * MB, used: 20 * MB });
    // The flood: the heap grows, the loop is busy — V8's own collections run there; ours does not.
    heap.state.total = 120 * MB;
    heap.state.used = 90 * MB;
    heap.state.utilization = 0.9;
    tick();
    expect(heap.state.collected).toBe(0);
    // Quiet again: the garbage goes (used back to 20 MB) …
    heap.state.utilization = 0.01;
    tick();
    expect(heap.state.collected).toBe(1);
    // … and V8 still holds 120 MB: one more, which gives the pages back.
    tick();
    expect(heap.state.collected).toBe(2);
    expect(r.collections).toBe(2);
  });

  it('a heap V8 cannot give back (fragmented: 120 MB held, 20 MB live) is not collected over and over at rest', () => {
    const { heap, tick } = reclaimer({ total: 30 * MB, used: 20 * MB });
    heap.state.total = 120 * MB;
    heap.state.used = 90 * MB;
    for (let i = 0; i < 10; i++) tick();
    expect(heap.state.collected).toBe(2);
  });

  it('what the last collection left in use is the new baseline: the next collection comes only when the heap in use grows past it by the slack', () => {
    const { heap, tick } = reclaimer({ total: 120 * MB, used: 90 * MB });
    heap.state.live = 19 * MB;
    // At start 90 MB is the baseline (nothing grown): nothing to do.
    tick();
    expect(heap.state.collected).toBe(0);
    heap.state.used = 110 * MB;
    tick(); // grown by 20 MB: collected, live 19 MB
    tick(); // the follow-up (120 MB held)
    expect(heap.state.collected).toBe(2);
    heap.state.used = 19 * MB + RECLAIM_SLACK_BYTES; // grown by exactly the slack since the last collection
    tick();
    expect(heap.state.collected).toBe(2);
    heap.state.used = 19 * MB + RECLAIM_SLACK_BYTES + 1;
    tick();
    expect(heap.state.collected).toBe(3);
  });

  it(`boundaries: growth of exactly ${RECLAIM_SLACK_BYTES / MB} MB is left alone, one byte more is collected; utilisation exactly ${RECLAIM_IDLE_UTILIZATION} is not idle`, () => {
    const atSlack = reclaimer({ total: 100 * MB, used: 24 * MB });
    atSlack.heap.state.used = 40 * MB;
    atSlack.tick();
    expect(atSlack.heap.state.collected).toBe(0);
    atSlack.heap.state.used = 40 * MB + 1;
    atSlack.tick();
    expect(atSlack.heap.state.collected).toBe(1);

    const busyEnough = reclaimer({ total: 100 * MB, used: 20 * MB });
    busyEnough.heap.state.used = 80 * MB;
    busyEnough.heap.state.utilization = RECLAIM_IDLE_UTILIZATION;
    busyEnough.tick();
    expect(busyEnough.heap.state.collected).toBe(0);
    busyEnough.heap.state.utilization = RECLAIM_IDLE_UTILIZATION - 0.001;
    busyEnough.tick();
    expect(busyEnough.heap.state.collected).toBe(1);
  });

  it('checks once per interval, not before; stopped, never again', () => {
    const { heap, clock, r } = reclaimer({ total: 100 * MB, used: 20 * MB });
    heap.state.used = 80 * MB;
    clock.advance(RECLAIM_INTERVAL_MS - 1);
    expect(heap.state.collected).toBe(0);
    clock.advance(1);
    expect(heap.state.collected).toBe(1);
    r.stop();
    heap.state.used = 500 * MB;
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
