/**
 * The OVOS bus on NATS subjects, and which daemon a session's contests run on (src/cluster/README.md, "Subjects"
 * and "Partitions").
 */
import { describe, expect, it } from 'vitest';
import { busSubject, envelope, openEnvelope, partitionOf, preferredOwner, stateKey, topicOf } from '../../src/cluster/subjects.js';

/** A NATS subject token may not be empty nor hold whitespace, `*` or `>` (the NATS subject rules). */
const validSubject = (subject: string): boolean => subject.split('.').every((token) => token !== '' && !/[\s*>]/.test(token));

describe('bus topics as NATS subjects', () => {
  it('keeps OVOS topics readable: dots stay token separators, ":" stays', () => {
    expect(busSubject('ovos.skills.fallback.ping')).toBe('ovos.bus.ovos.skills.fallback.ping');
    expect(busSubject('recognizer_loop:utterance')).toBe('ovos.bus.recognizer_loop:utterance');
    expect(busSubject('hello-world.openvoiceos:fallback')).toBe('ovos.bus.hello-world.openvoiceos:fallback');
  });

  it('escapes what NATS reserves — wildcards, whitespace, empty tokens — and "%" itself, and reads every topic back', () => {
    const topics = ['a.*.b', 'a.>', 'two words', 'tab\there', '.leading', 'trailing.', 'double..dot', '100%', 'ünïcode.skill', '', '.', '%41'];
    for (const topic of topics) {
      const subject = busSubject(topic);
      expect(validSubject(subject), subject).toBe(true);
      expect(topicOf(subject)).toBe(topic);
    }
    expect(busSubject('a.*.b')).toBe('ovos.bus.a.%2A.b');
    expect(busSubject('double..dot')).toBe('ovos.bus.double.%.dot');
    expect(topicOf('ovos.contests.node')).toBeUndefined();
  });
});

describe('the envelope a frame travels in', () => {
  it('carries the relaying daemon, its run, its sequence number, the client connection and the partition, and the frame byte for byte', () => {
    const frame = Buffer.from('{"type":"a b","data":{"x":"line\\nbreak"},"context":{}}', 'utf8');
    const opened = openEnvelope(envelope('w0-abc123', '9f3e', 42, 'w0-abc123/7@127.0.0.1:5555', 17, frame));
    expect(opened).toEqual({ node: 'w0-abc123', boot: '9f3e', seq: 42, connection: 'w0-abc123/7@127.0.0.1:5555', partition: 17, frame });
    expect(openEnvelope(envelope('n', 'b', 1, undefined, undefined, frame))).toEqual({ node: 'n', boot: 'b', seq: 1, connection: undefined, partition: undefined, frame });
  });

  it('is refused from anyone who does not write one: a bare frame, a missing field, no newline', () => {
    for (const text of ['{"type":"x","data":{},"context":{}}', 'n 1 -\n{}', 'n x - -\n{}', 'n 1 - x\n{}', 'n b 1 - - extra\n{}', 'n b x - -\n{}', 'n  1 - -\n{}', ' 1 - -\n{}', 'n 1 - -', 'n 7 n/1@127.0.0.1:1 -\n{}']) {
      expect(openEnvelope(Buffer.from(text)), text).toBeUndefined();
    }
  });
});

describe('partitions', () => {
  it('a session is always in the same partition: FNV-1a 32 of its id, as NATS subject mapping partition() hashes', () => {
    // FNV-1a 32 reference values: "" → 0x811c9dc5, "a" → 0xe40c292c, "foobar" → 0xbf9cf968.
    expect(partitionOf('', 2 ** 32 - 1)).toBe(0x811c9dc5 % (2 ** 32 - 1));
    expect(partitionOf('a', 2 ** 32 - 1)).toBe(0xe40c292c % (2 ** 32 - 1));
    expect(partitionOf('foobar', 1000)).toBe(0xbf9cf968 % 1000);
    expect(partitionOf('living-room', 32)).toBe(partitionOf('living-room', 32));
  });

  it('spreads sessions over every partition', () => {
    const counts = new Array<number>(32).fill(0);
    for (let i = 0; i < 32_000; i++) counts[partitionOf(`session-${i}`, 32)]! += 1;
    expect(Math.min(...counts)).toBeGreaterThan(800);
    expect(Math.max(...counts)).toBeLessThan(1_200);
  });

  it('every daemon computes the same owner; a daemon joining takes only partitions that become its own, one leaving gives only its own away', () => {
    const partitions = [...Array(64).keys()];
    const two = ['node-a', 'node-b'];
    const three = ['node-a', 'node-b', 'node-c'];
    const before = partitions.map((p) => preferredOwner(p, two));
    expect(partitions.map((p) => preferredOwner(p, [...two].reverse()))).toEqual(before);
    const after = partitions.map((p) => preferredOwner(p, three));
    const moved = partitions.filter((p) => before[p] !== after[p]);
    // Only to the newcomer, and about a third of them.
    expect(moved.every((p) => after[p] === 'node-c')).toBe(true);
    expect(moved.length).toBeGreaterThan(10);
    expect(moved.length).toBeLessThan(35);
    // node-b leaves: only its partitions move.
    const without = partitions.map((p) => preferredOwner(p, ['node-a', 'node-c']));
    expect(partitions.filter((p) => without[p] !== after[p]).every((p) => after[p] === 'node-b')).toBe(true);
    expect(preferredOwner(0, [])).toBeUndefined();
  });
});

describe('the keys of the state bucket', () => {
  /** What a JetStream KV key may hold (the client's `validateKey`): tokens of letters, digits, "-", "_", "/", "=", dot-separated. */
  const validKey = (key: string): boolean => /^[-/=.\w]+$/.test(key) && !key.startsWith('.') && !key.endsWith('.') && !key.includes('..');

  it('are valid KV keys for any session, skill or connection id — dots, spaces, wildcards, unicode, empty — and distinct for distinct ids', () => {
    const ids = ['default', 'hello-world.openvoiceos', 'two words', 'a.*.>', 'ünïcode', '', '.', 'w0-ab12/7@127.0.0.1:5555'];
    const keys = new Set<string>();
    for (const id of ids) {
      for (const key of [stateKey.registration(id, id), stateKey.registration('default', id), stateKey.connection(id), stateKey.suspension(id)]) {
        expect(validKey(key), key).toBe(true);
        keys.add(key);
      }
    }
    // Every id gives its own keys (the registration of "default" by "default" is counted once).
    expect(keys.size).toBe(ids.length * 4 - 1);
    expect(stateKey.registration('a', 'b.c')).not.toBe(stateKey.registration('a.b', 'c'));
  });

  it('stay short for ids of any length (a key is a subject; NATS takes 4 KB lines): a long id is keyed by its hash, two long ids apart', () => {
    const long = 'x'.repeat(5_000);
    const key = stateKey.registration(long, long);
    expect(validKey(key)).toBe(true);
    expect(key.length).toBeLessThan(120);
    expect(stateKey.registration(long, `${long}y`)).not.toBe(key);
    // At the bound, still the id itself (base64url: readable back).
    const at = 'y'.repeat(96);
    expect(Buffer.from(stateKey.suspension(at).slice(2), 'base64url').toString('utf8')).toBe(at);
    expect(stateKey.suspension(`${at}y`).startsWith('s.=')).toBe(true);
  });
});
