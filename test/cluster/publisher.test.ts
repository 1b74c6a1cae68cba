/**
 * What a daemon publishes on NATS (src/cluster/publisher.ts; src/cluster/README.md "Subjects", "Redelivery"): numbered
 * in order, kept for redelivery, handed to the NATS client once a turn after its I/O, never over NATS's max_payload;
 * the ends kept here go as one digest per turn, numbered after what was published before them.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock/manual-clock.js';
import { Publisher } from '../../src/cluster/publisher.js';
import { SentRing } from '../../src/cluster/redelivery.js';
import { ENDS_SUBJECT, openEnvelope } from '../../src/cluster/subjects.js';
import { silentLogger } from '../../src/log/logger.js';

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

function publisher(maxPayload = 4096) {
  const sent: Array<{ subject: string; seq: number; frame: string; connection: string | undefined; partition: number | undefined }> = [];
  const handed: number[] = [];
  const ring = new SentRing({ clock: new ManualClock(), keepMs: 60_000, maxBytes: 1 << 20, againMs: 100 });
  const p = new Publisher({
    node: 'n1',
    boot: 'b1',
    logger: silentLogger(),
    ring,
    maxPayload: () => maxPayload,
    publish: (subject, data) => {
      const opened = openEnvelope(data)!;
      sent.push({ subject, seq: opened.seq, frame: opened.frame.toString('utf8'), connection: opened.connection, partition: opened.partition });
    },
    closing: () => false,
    handed: (through) => handed.push(through),
  });
  return { p, sent, handed, ring };
}

describe('cluster publisher', () => {
  it('numbers what it publishes in order and hands a turn\'s messages to NATS together, after the turn', async () => {
    const t = publisher();
    expect(t.p.publish('ovos.bus.a', 'c1', 3, bytes('{"a":1}'))).toBe(1);
    expect(t.p.publish('ovos.bus.b', undefined, undefined, bytes('{"b":1}'))).toBe(2);
    expect(t.sent).toEqual([]);
    await turn();
    expect(t.sent).toEqual([
      { subject: 'ovos.bus.a', seq: 1, frame: '{"a":1}', connection: 'c1', partition: 3 },
      { subject: 'ovos.bus.b', seq: 2, frame: '{"b":1}', connection: undefined, partition: undefined },
    ]);
    expect(t.handed).toEqual([2]);
    // Kept for redelivery.
    expect(t.ring.resend(1, 2).map((m) => m.subject)).toEqual(['ovos.bus.a', 'ovos.bus.b']);
  });

  it('a message larger than NATS takes is neither published nor numbered', async () => {
    const t = publisher(256);
    expect(t.p.publish('ovos.bus.big', undefined, undefined, bytes('x'.repeat(300)))).toBeUndefined();
    expect(t.p.publish('ovos.bus.small', undefined, undefined, bytes('{}'))).toBe(1);
    await turn();
    expect(t.sent.map((m) => m.seq)).toEqual([1]);
  });

  it('ends kept in a turn go as one digest numbered after what was published before them; the number is said in advance', async () => {
    const t = publisher();
    t.p.publish('ovos.bus.a', undefined, undefined, bytes('{}'));
    expect(t.p.digestEnd('["matched","u1",3]')).toBe(2);
    expect(t.p.digestEnd('["handled","u1",3]')).toBe(2);
    await turn();
    expect(t.sent.map((m) => [m.subject, m.seq, m.frame])).toEqual([
      ['ovos.bus.a', 1, '{}'],
      [ENDS_SUBJECT, 2, '[["matched","u1",3],["handled","u1",3]]'],
    ]);
    expect(t.handed).toEqual([2]);
  });

  it('a digest is never over max_payload: one that would be goes first; an end that alone would not fit is refused', async () => {
    const t = publisher(1024 + 64);
    const item = (i: number): string => `["handled","${String(i).padStart(20, '0')}",1]`;
    for (let i = 0; i < 3; i++) expect(t.p.digestEnd(item(i))).toBeDefined();
    await turn();
    expect(t.sent.length).toBeGreaterThan(1);
    for (const m of t.sent) expect(m.frame.length).toBeLessThanOrEqual(64);
    expect(t.p.digestEnd(`["handled","${'u'.repeat(100)}",1]`)).toBeUndefined();
  });
});
