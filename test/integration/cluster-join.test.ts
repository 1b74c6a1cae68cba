/**
 * A cluster that stays whole while daemons come and go (src/cluster/README.md, "Registrations and liveness"): a
 * daemon that is joining — its bus answers before its first heartbeat is heard — keeps its connections on every
 * other daemon, so a skill that connects to it at that moment (a skill restarted with its daemon) is asked from the
 * first utterance on. Over real sockets and a real nats-server; counted for every utterance: exactly one
 * ovos.utterance.handled (OVOS-PIPELINE-1 §6) and the willing skill as the winner (OVOS-FALLBACK-1 §6.2).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startDaemon, type Daemon } from '../../src/daemon/daemon.js';
import { silentLogger } from '../../src/log/logger.js';
import { natsServerAbsent, startNatsServer } from '../support/nats-server.js';
import { specWordSkill } from '../support/word-skills.js';
import { Probe, captureLogs, configWith, freePort } from './probe.js';

const absent = natsServerAbsent();
if (absent !== undefined) console.warn(absent);

const CLUSTER = { partitions: 8, heartbeatMs: 100, deadAfterMs: 1_500 };
const TRIALS = 20;

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
}, 30_000);

function configOf(nats: string, nodeId: string, port = 0) {
  return configWith({ bus: { port }, exampleSkills: false, log: { level: 'silent' }, inspector: { enabled: false }, cluster: { ...CLUSTER, nats, nodeId }, fallback: { pingTimeoutMs: 10_000 } });
}

/** A websocket to `url` as soon as it answers (a skill process retrying while its daemon starts). */
async function connectAsItAnswers(url: string): Promise<Probe> {
  for (;;) {
    try {
      return await Probe.connect(url, 1_000);
    } catch {
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }
}

describe.skipIf(absent !== undefined)('a daemon joining keeps its connections (src/cluster/README.md)', () => {
  it(`PIPELINE-1 §6, FALLBACK-1 §6.2: a skill that connects to a daemon as its bus answers is asked by the other daemon from its first utterance (${TRIALS} trials, 0 unmatched, none of its connections closed)`, async () => {
    const server = await startNatsServer();
    cleanups.push(() => server.stop());
    const logsA = captureLogs('info');
    const a = await startDaemon(configOf(server.url, 'node-a'), logsA.logger);
    cleanups.push(() => a.close());
    const user = await Probe.connect(a.url);
    cleanups.push(() => user.close());
    const wrong: string[] = [];
    for (let trial = 0; trial < TRIALS; trial++) {
      const node = `node-b${trial}`;
      const port = await freePort();
      const starting = startDaemon(configOf(server.url, node, port), silentLogger());
      // The skill connects the moment B's bus answers, before B has joined, and registers.
      const skill = await specWordSkill(await connectAsItAnswers(`ws://127.0.0.1:${port}/core`), 'j.spec', 10, 'juliet');
      const b: Daemon = await starting;
      // A has heard B's heartbeat: B is a member (before the fix, A had closed B's connections by then).
      await expect.poll(() => a.cluster!.view().members.includes(node), { timeout: 10_000 }).toBe(true);
      const closedEarly = logsA.lines.items.filter((line) => line.msg === 'skill connection closed' && String(line['connection']).startsWith(`${node}/`));
      if (closedEarly.length > 0) wrong.push(`${node}: its skill's connection closed on node-a while it joined`);
      const ids: string[] = [];
      for (let u = 0; u < 10; u++) {
        const id = `join-${trial}-${u}`;
        ids.push(id);
        user.utter(`juliet ${u}`, { utteranceId: id, session: { session_id: `join-${trial}-s${u}` }, lang: 'en-US' });
      }
      await Promise.all(ids.map((id) => user.handled(id, 15_000)));
      await user.barrier();
      for (const id of ids) {
        const messages = user.of(id);
        const matched = messages.filter((m) => m.type === 'ovos.intent.matched').map((m) => m.data['skill_id']);
        const handled = messages.filter((m) => m.type === 'ovos.utterance.handled').length;
        if (handled !== 1 || matched.length !== 1 || matched[0] !== 'j.spec') wrong.push(`${id}: handled ${handled}, matched ${JSON.stringify(matched)}`);
      }
      await skill.close();
      await b.close();
    }
    expect(wrong).toEqual([]);
  }, 300_000);
});
