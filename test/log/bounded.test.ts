/**
 * Untrusted text in log lines is bounded: a 100 KB topic or a 30 MB payload costs a log line of a few hundred
 * characters (and the time to read those), never the whole thing.
 */
import { describe, expect, it } from 'vitest';
import { boundedJson, clip } from '../../src/log/logger.js';
import { createHarness } from '../support/harness.js';
import { createMessage } from '../../src/bus/message.js';

describe('bounded log values', () => {
  it('clip keeps short text and says how much it cut from long text', () => {
    expect(clip('short')).toBe('short');
    expect(clip('x'.repeat(250))).toBe(`${'x'.repeat(200)}…(+50 chars)`);
  });

  it('boundedJson: small payloads verbatim; a huge one stops at the budget, wide or deep', () => {
    expect(boundedJson({ a: [1, 'two', null, true], b: { c: 'd' } })).toBe('{"a":[1,"two",null,true],"b":{"c":"d"}}');
    const wide = boundedJson({ big: 'y'.repeat(30_000_000), other: 1 });
    expect(wide.length).toBeLessThanOrEqual(500 + '…(truncated)'.length);
    expect(wide.endsWith('…(truncated)')).toBe(true);
    let deep: unknown = 'bottom';
    for (let i = 0; i < 50_000; i++) deep = [deep];
    expect(boundedJson(deep).length).toBeLessThan(520);
    const many = boundedJson(Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, i])));
    expect(many.length).toBeLessThanOrEqual(512);
  });

  it('a dropped message with a 100 KB topic and payload is logged with both clipped', async () => {
    const h = createHarness();
    const topic = `${'t'.repeat(100_000)}.fallback.pong`;
    h.bus.publish(createMessage(topic, { skill_id: 's'.repeat(100_000), can_handle: true, junk: 'j'.repeat(100_000) }, { session: { session_id: 'x' } }));
    await h.settle();
    const line = h.logs.find((l) => l['msg'] === 'message dropped');
    expect(line).toBeDefined();
    expect(JSON.stringify(line).length).toBeLessThan(2_000);
  });
});
