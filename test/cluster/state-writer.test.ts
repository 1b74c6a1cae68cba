/**
 * What a daemon writes to the state bucket (src/cluster/state-writer.ts; src/cluster/README.md "Registrations and
 * liveness"): each key's latest value, in the order of the changes; what NATS does not take is written again after the
 * retry delay, before newer changes unless the same key changed again. A bucket stand-in that records the writes and
 * refuses while told to; ManualClock for the retry.
 */
import type { JetStreamManager } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock/manual-clock.js';
import { StateWriter } from '../../src/cluster/state-writer.js';
import { silentLogger } from '../../src/log/logger.js';

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);
const settle = async (): Promise<void> => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

function writer() {
  const clock = new ManualClock();
  const writes: string[] = [];
  const bucket = { down: false };
  const state = {
    put: async (key: string, value: Uint8Array): Promise<number> => {
      if (bucket.down) throw new Error('no responders');
      writes.push(`${key}=${new TextDecoder().decode(value)}`);
      return writes.length;
    },
    purge: async (key: string): Promise<void> => {
      if (bucket.down) throw new Error('no responders');
      writes.push(`${key}=∅`);
    },
  } as unknown as KV;
  const w = new StateWriter({ state, jsm: {} as JetStreamManager, clock, logger: silentLogger(), retryMs: 500 });
  return { w, clock, writes, bucket };
}

describe('cluster state writer', () => {
  it('writes the changes in order — the first at once, those made meanwhile as one batch, each key\'s latest only — a removal as a purge', async () => {
    const t = writer();
    t.w.write('a', bytes('1'));
    t.w.write('b', bytes('1'));
    t.w.write('b', bytes('2'));
    t.w.write('a', bytes('2'));
    t.w.write('c', null);
    await settle();
    expect(t.writes).toEqual(['a=1', 'b=2', 'a=2', 'c=∅']);
  });

  it('what NATS refused is written again after the retry delay, before newer changes unless the same key changed again', async () => {
    const t = writer();
    t.bucket.down = true;
    t.w.write('a', bytes('1'));
    t.w.write('b', bytes('1'));
    await settle();
    expect(t.writes).toEqual([]);
    t.w.write('c', bytes('1'));
    t.w.write('b', bytes('2'));
    t.bucket.down = false;
    t.clock.advance(499);
    await settle();
    expect(t.writes).toEqual([]);
    t.clock.advance(1);
    await settle();
    expect(t.writes).toEqual(['a=1', 'c=1', 'b=2']);
  });

  it('close waits for what is being written at most its bound, then writes nothing more', async () => {
    const t = writer();
    t.bucket.down = true;
    t.w.write('a', bytes('1'));
    await settle();
    const closed = t.w.close(2_000);
    t.clock.advance(2_000);
    await closed;
    t.bucket.down = false;
    t.clock.advance(10_000);
    await settle();
    expect(t.writes).toEqual([]);
  });
});
