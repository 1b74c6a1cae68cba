/**
 * What a daemon reads from NATS is untrusted input, as a bus frame is (src/cluster/README.md, "Who can join"): on a
 * real nats-server that requires authentication, a client without credentials cannot publish at all, and a client
 * with them (a faulty daemon) that floods every subject of the cluster and both JetStream buckets with malformed and
 * forged values crashes nothing: each is dropped with a reason and counted, the warnings are bounded, and every
 * utterance after it ends with exactly one ovos.utterance.handled (OVOS-PIPELINE-1 §6) and the winner the pool order
 * gives (OVOS-FALLBACK-1 §6.2), on the clients of every daemon, one that joined after it included.
 */
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { connect } from '@nats-io/transport-node';
import { Kvm } from '@nats-io/kv';
import {
  BREAKER_SUBJECT,
  busSubject,
  CONNECTION_SUBJECT,
  ENDS_SUBJECT,
  envelope,
  NODE_SUBJECT,
  PARTITION_BUCKET,
  PARTITION_SUBJECT,
  RESEND_SUBJECT,
  RESENT_PREFIX,
  STATE_BUCKET,
  SYNC_SUBJECT,
  SYNCED_SUBJECT,
} from '../../src/cluster/subjects.js';
import { startDaemon, type Daemon } from '../../src/daemon/daemon.js';
import { natsServerAbsent, startNatsServerWith } from '../support/nats-server.js';
import { specWordSkill, workshopWordSkill } from '../support/word-skills.js';
import { Probe, captureLogs, configWith } from './probe.js';
import type { Logger } from '../../src/log/logger.js';
import { seededRandom } from '../support/random.js';

const absent = natsServerAbsent();
if (absent !== undefined) console.warn(absent);

const PARTITIONS = 8;
const PASSWORD = 'fuzz-suite-daemons-password-9184';
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
}, 30_000);

/** Values of every JSON shape, and some that are not JSON at all, biased to the fields the cluster's notes carry. */
function garbage(next: () => number, depth = 0): unknown {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
  const scalars: unknown[] = [null, true, false, 0, -1, 1.5, 1e308, -0, 2 ** 53, 'x', '', ' ', '/', 'node-a', 'node-a/1@x', '\u202e', 'a'.repeat(5_000), '__proto__', 'constructor'];
  if (depth > 3 || next() < 0.4) return pick(scalars);
  if (next() < 0.3) return Array.from({ length: Math.floor(next() * 5) }, () => garbage(next, depth + 1));
  const keys = ['node', 'boot', 'seq', 'leaving', 'ends', 'sync', 'kind', 'partition', 'frame', 'utterance_id', 'to', 'from', 'through', 'by', 'entries', 'connection', 'closed', 'late', 'type', 'skill_id', 'at', 'for_ms', 'round', 'ask', 'owner', 'epoch', '__proto__', 'message'];
  const object: Record<string, unknown> = {};
  for (let i = Math.floor(next() * 6); i > 0; i--) object[pick(keys)] = garbage(next, depth + 1);
  if (next() < 0.3) object['kind'] = pick(['taken', 'released', 'takenOver', 'orphans', 'other']);
  if (next() < 0.3) object['type'] = pick(['suspended', 'resumed', 'other']);
  return object;
}

/** A payload: JSON of `garbage`, broken JSON, bytes, or nesting deeper than a parser's stack. */
function payload(next: () => number): Buffer {
  const r = next();
  if (r < 0.7) return Buffer.from(JSON.stringify(garbage(next)) ?? 'null');
  if (r < 0.8) return Buffer.from('{"node":');
  if (r < 0.9) return Buffer.from(Array.from({ length: 64 }, () => Math.floor(next() * 256)));
  return Buffer.from(`${'['.repeat(20_000)}${']'.repeat(20_000)}`);
}

describe.skipIf(absent !== undefined)('untrusted input from NATS (src/cluster/README.md "Who can join")', () => {
  it('PIPELINE-1 §6, FALLBACK-1 §6.2: no credentials, no publishing; a credentialed flood of malformed and forged cluster messages and bucket values crashes nothing, is counted and bounded in the logs, and every utterance after it is answered once, right, on every daemon (one that joins after it replays the garbage)', async () => {
    const server = await startNatsServerWith((port, dir) => `listen: "127.0.0.1:${port}"\njetstream { store_dir: ${JSON.stringify(dir)} }\nauthorization { user: "daemon", password: "${PASSWORD}" }\n`);
    cleanups.push(() => server.stop());
    const passwordFile = join(mkdtempSync(join(tmpdir(), 'ovos-contests-fuzz-')), 'password');
    writeFileSync(passwordFile, PASSWORD);
    chmodSync(passwordFile, 0o600);
    const logs = [captureLogs('info'), captureLogs('info')];
    const daemons: Daemon[] = [];
    const start = async (node: string, logger: Logger): Promise<Daemon> => {
      const config = configWith({ bus: { port: 0 }, exampleSkills: false, log: { level: 'silent' }, inspector: { enabled: false }, cluster: { partitions: PARTITIONS, heartbeatMs: 100, deadAfterMs: 1_500, nats: server.url, nodeId: node, user: 'daemon', passwordFile }, fallback: { pingTimeoutMs: 10_000 } });
      const daemon = await startDaemon(config, logger);
      cleanups.push(() => daemon.close());
      daemons.push(daemon);
      return daemon;
    };
    const a = await start('node-a', logs[0]!.logger);
    const b = await start('node-b', logs[1]!.logger);
    await expect.poll(() => a.cluster!.view().owned.length > 0 && b.cluster!.view().owned.length > 0, { timeout: 10_000 }).toBe(true);

    // Without credentials nothing reaches the cluster's subjects: the connection itself is refused.
    await expect(connect({ servers: server.url, reconnect: false })).rejects.toThrow(/authorization/i);

    // A client with the daemons' credentials publishes garbage on every subject and into both buckets.
    const nc = await connect({ servers: server.url, user: 'daemon', pass: PASSWORD });
    cleanups.push(() => nc.close());
    const kvm = new Kvm(nc);
    const state = await kvm.open(STATE_BUCKET);
    const table = await kvm.open(PARTITION_BUCKET);
    const next = seededRandom(20261208);
    const plain = [NODE_SUBJECT, RESEND_SUBJECT, `${RESENT_PREFIX}.node-a`, `${RESENT_PREFIX}.node-b`];
    const enveloped = [PARTITION_SUBJECT, CONNECTION_SUBJECT, BREAKER_SUBJECT, SYNC_SUBJECT, SYNCED_SUBJECT, ENDS_SUBJECT, busSubject('ovos.utterance.handle'), busSubject('ovos.skills.fallback.register'), busSubject('mycroft.skill.handler.complete')];
    let published = 0;
    for (let i = 0; i < 3_000; i++) {
      const data = payload(next);
      if (next() < 0.3) nc.publish(plain[Math.floor(next() * plain.length)]!, data);
      else {
        // A fuzzer of its own name (a forged name with a valid shape is a daemon's word: only daemons hold the credentials).
        const node = next() < 0.8 ? `fuzz-${Math.floor(next() * 4)}` : ['', 'a b', 'x'.repeat(100), 'node-a\n'][Math.floor(next() * 4)]!;
        const partition = next() < 0.7 ? Math.floor(next() * PARTITIONS) : next() < 0.5 ? undefined : 1e9;
        nc.publish(enveloped[Math.floor(next() * enveloped.length)]!, next() < 0.9 ? envelope(node || 'fuzz-x', 'fuzzboot', i + 1, next() < 0.5 ? undefined : `${node}/1`, partition, data) : data);
      }
      published++;
      if (i % 100 === 0) {
        const token = Buffer.from(`fuzz-${i}`).toString('base64url');
        await state.put(['r', token, token].join('.'), payload(next)).catch(() => {});
        await state.put(`c.${token}`, payload(next)).catch(() => {});
        await state.put(`s.${token}`, payload(next)).catch(() => {});
        await state.put(`z.${token}`, payload(next)).catch(() => {});
        await table.put(`p.${PARTITIONS + (i % 3)}`, payload(next)).catch(() => {});
        await table.put('p.x', payload(next)).catch(() => {});
        await nc.flush();
      }
    }
    await nc.flush();
    // Both still read what comes, and have counted what they dropped.
    await expect.poll(() => a.cluster!.view().invalid > 100 && b.cluster!.view().invalid > 100, { timeout: 15_000 }).toBe(true);

    // A daemon that joins now replays the state bucket, garbage and all: it joins, and counts what it dropped.
    logs.push(captureLogs('info'));
    const c = await start('node-c', logs[2]!.logger);
    await expect.poll(() => c.cluster!.view().owned.length > 0 && c.cluster!.view().invalid > 0, { timeout: 15_000 }).toBe(true);

    // The contests go on as if nothing had been said: skills on A, users on every daemon.
    await specWordSkill(await Probe.connect(a.url), 'a.spec', 10, 'alpha');
    await workshopWordSkill(await Probe.connect(a.url), 'b.workshop', 20, 'beta');
    await expect.poll(() => daemons.map((d) => [...d.system.fallback.registry.availableFor('default').keys()].sort().join()), { timeout: 10_000 }).toEqual(daemons.map(() => 'a.spec,b.workshop'));
    const users = [await Probe.connect(a.url), await Probe.connect(b.url), await Probe.connect(c.url)];
    cleanups.push(async () => {
      for (const user of users) await user.close();
    });
    await expect.poll(() => a.cluster!.view().connectionsElsewhere > 0 && b.cluster!.view().connectionsElsewhere > 0, { timeout: 5_000 }).toBe(true);
    const texts: Array<[string, string | undefined]> = [['alpha one', 'a.spec'], ['beta two', 'b.workshop'], ['gamma', undefined]];
    const sent: Array<{ id: string; winner: string | undefined }> = [];
    for (let s = 0; s < 20; s++) {
      for (const [u, [text, winner]] of texts.entries()) {
        const id = `fuzz-s${s}-u${u}`;
        sent.push({ id, winner });
        users[s % 3]!.utter(text, { utteranceId: id, session: { session_id: `fuzz-s${s}` }, lang: 'en-US' });
      }
    }
    for (const user of users) {
      await Promise.all(sent.map(({ id }) => user.handled(id, 15_000)));
      await user.barrier();
      const wrong = sent.filter(({ id, winner }) => {
        const messages = user.of(id);
        const matched = messages.filter((m) => m.type === 'ovos.intent.matched').map((m) => m.data['skill_id']);
        return messages.filter((m) => m.type === 'ovos.utterance.handled').length !== 1 || (winner === undefined ? matched.length !== 0 : matched.length !== 1 || matched[0] !== winner);
      });
      expect(wrong.map(({ id }) => `${id}: ${JSON.stringify(user.of(id).map((m) => m.type))}`)).toEqual([]);
    }
    // The warnings are bounded: one per subject, publisher and reason within the minute, not one per message.
    for (const log of logs) {
      const dropped = log.lines.items.filter((line) => String(line.reason ?? '').startsWith('cluster_') && String(line.reason).endsWith('_invalid'));
      expect(dropped.length).toBeGreaterThan(0);
      expect(dropped.length).toBeLessThan(published / 10);
    }
  }, 120_000);
});
