/**
 * `npm start -- --workers N` as a user runs it (src/daemon/workers.ts): nats-server started by the daemon itself,
 * N daemon processes behind one bus port, a worker that dies replaced, a graceful stop of everything. Counted for
 * every utterance: exactly one ovos.utterance.handled (OVOS-PIPELINE-1 §6) and the winner of the pool order
 * (OVOS-FALLBACK-1 §6.2).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { connect as natsConnect } from '@nats-io/transport-node';
import { WORKERS_NATS_USER } from '../../src/daemon/workers.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DAEMON_NODE_FLAGS } from '../../src/daemon/node-flags.js';
import { natsServerAbsent } from '../support/nats-server.js';
import { specWordSkill, workshopWordSkill } from '../support/word-skills.js';
import { Probe, freePort } from './probe.js';
import { killGroup, npmStart, type Spawned } from './spawn-daemon.js';

const absent = natsServerAbsent();

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
}, 30_000);

/** Lines of the daemons' JSON log that say `msg`. */
function lines(spawned: Spawned, msg: string): Array<Record<string, unknown>> {
  return spawned
    .output()
    .split('\n')
    .filter((line) => line.includes(`"msg":"${msg}`))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

const READY = 'OVOS bus listening, one daemon of a cluster on NATS';
const OWNED = 'cluster: partitions owned here';

/** Every running worker has said what it owns with all of them as members. */
function settled(spawned: Spawned, workers: readonly string[]): boolean {
  const last = new Map<string, Record<string, unknown>>();
  for (const line of lines(spawned, OWNED)) last.set(String(line['node']), line);
  return workers.every((node) => JSON.stringify(last.get(node)?.['members']) === JSON.stringify([...workers].sort()) && (last.get(node)?.['owned'] as unknown[]).length > 0);
}

const ready = (spawned: Spawned): Array<Record<string, unknown>> => lines(spawned, READY);

async function connect(url: string): Promise<Probe> {
  const probe = await Probe.connect(url);
  cleanups.push(() => probe.close());
  return probe;
}

describe.skipIf(absent !== undefined)('npm start -- --workers N (src/cluster/README.md)', () => {
  it('PIPELINE-1 §6, FALLBACK-1 §6.2: two workers behind one port on their own nats-server, which admits them alone; a worker SIGKILLed is replaced and takes its share again; every utterance after ends once, with the right winner; SIGTERM stops the workers and nats-server', async () => {
    const port = await freePort();
    const stateHome = mkdtempSync(join(tmpdir(), 'ovos-contests-workers-'));
    // The workers, the skills, this test and its users share two cores: a burst of 160 utterances holds a pong longer
    // than ovos-core's 0.5 s per-skill bound, which would count a willing skill out. The bound is tested elsewhere.
    const config = join(stateHome, 'config.json');
    writeFileSync(config, JSON.stringify({ fallback: { pingTimeoutMs: 10_000 } }));
    const spawned = npmStart(['--workers', '2', '--port', String(port), '--no-example-skills', '--inspector-port', '0', '--config', config], stateHome);
    cleanups.push(() => killGroup(spawned));
    await spawned.until((output) => ready(spawned).length === 2 && output.includes(OWNED));
    const first = ready(spawned).map((line) => String(line['node']));
    await spawned.until(() => settled(spawned, first));

    // Worker 1 dies (as a crash would); the primary starts another in its place, which takes a share again.
    const victim = ready(spawned).find((line) => String(line['node']).startsWith('w1-'))!;
    process.kill(Number(victim['pid']), 'SIGKILL');
    await spawned.until((output) => output.includes('a worker exited') && ready(spawned).length === 3);
    const now = [String(ready(spawned).find((line) => String(line['node']).startsWith('w0-'))!['node']), String(ready(spawned)[2]!['node'])];
    await spawned.until(() => settled(spawned, now));
    // Every worker, the replacement too, runs with the daemon's V8 flags (src/daemon/node-flags.ts): on its command
    // line or in its NODE_OPTIONS.
    for (const line of ready(spawned).filter((l) => now.includes(String(l['node'])))) {
      const pid = Number(line['pid']);
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      const options = (readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').find((entry) => entry.startsWith('NODE_OPTIONS=')) ?? '').slice('NODE_OPTIONS='.length).split(/\s+/);
      expect(DAEMON_NODE_FLAGS.filter((flag) => !argv.includes(flag) && !options.includes(flag))).toEqual([]);
    }

    // Its nats-server admits the workers alone (src/cluster/README.md "Who can join"): credentials of this start, in
    // files only this user reads; a NATS client without them is refused, and no secret is on a command line.
    const started = lines(spawned, 'nats-server started for the workers')[0]!;
    const natsUrl = String(started['nats']);
    const natsDir = join(stateHome, 'ovos-contests', 'nats');
    const credentials = String(started['credentials']);
    expect(credentials.startsWith(join(natsDir, 'run-'))).toBe(true);
    for (const folder of [natsDir, credentials]) expect(statSync(folder).mode & 0o777).toBe(0o700);
    for (const name of ['server.conf', 'workers-password']) expect(statSync(join(credentials, name)).mode & 0o777).toBe(0o600);
    await expect(natsConnect({ servers: natsUrl, reconnect: false })).rejects.toThrow(/authorization/i);
    await expect(natsConnect({ servers: natsUrl, reconnect: false, user: WORKERS_NATS_USER, pass: 'guessed' })).rejects.toThrow(/authorization/i);
    const password = readFileSync(join(credentials, 'workers-password'), 'utf8').trim();
    const admitted = await natsConnect({ servers: natsUrl, reconnect: false, user: WORKERS_NATS_USER, pass: password });
    await admitted.close();
    for (const pid of spawnSync('pgrep', ['-f', natsDir], { encoding: 'utf8' }).stdout.trim().split('\n').concat(ready(spawned).filter((line) => now.includes(String(line['node']))).map((line) => String(line['pid'])))) {
      expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8')).not.toContain(password);
    }
    expect(spawned.output()).not.toContain(password);

    const url = `ws://127.0.0.1:${port}/core`;
    await specWordSkill(await connect(url), 'a.spec', 10, 'alpha');
    await workshopWordSkill(await connect(url), 'b.workshop', 20, 'beta');
    // Each worker has applied both registrations (whichever worker each skill connected to).
    await spawned.until((output) => (output.match(/"skill_id":"b.workshop","priority":20/g) ?? []).length >= 2 && (output.match(/"skill_id":"a.spec","priority":10/g) ?? []).length >= 2);

    const users = [await connect(url), await connect(url)];
    const texts: Array<[string, string | undefined]> = [['alpha one', 'a.spec'], ['beta two', 'b.workshop'], ['alpha beta', 'a.spec'], ['gamma', undefined]];
    const sent: Array<{ id: string; winner: string | undefined }> = [];
    for (let s = 0; s < 40; s++) {
      for (const [i, [text, winner]] of texts.entries()) {
        const id = `w-s${s}-u${i}`;
        sent.push({ id, winner });
        users[s % 2]!.utter(text, { utteranceId: id, session: { session_id: `w-s${s}` }, lang: 'en-US' });
      }
    }
    await Promise.all(sent.map(({ id }) => users[0]!.handled(id)));
    await users[0]!.barrier();
    const wrong = sent.filter(({ id, winner }) => {
      const messages = users[0]!.of(id);
      const matched = messages.filter((m) => m.type === 'ovos.intent.matched').map((m) => m.data['skill_id']);
      return messages.filter((m) => m.type === 'ovos.utterance.handled').length !== 1 || (winner === undefined ? matched.length !== 0 : matched.length !== 1 || matched[0] !== winner);
    });
    expect(wrong.map(({ id }) => `${id}: ${JSON.stringify(users[0]!.typesOf(id))}`)).toEqual([]);

    // A graceful stop: every worker, then the nats-server the daemon started (its folder is this test's own).
    spawned.child.kill('SIGTERM');
    expect(await spawned.exited).toBe(0);
    expect(spawnSync('pgrep', ['-f', join(stateHome, 'ovos-contests', 'nats')]).status).toBe(1);
    // This start's credentials are gone with it.
    expect(existsSync(credentials)).toBe(false);
  }, 120_000);

  it('without nats-server, --workers says in one line how to get it', async () => {
    const spawned = npmStart(['--workers', '2', '--port', '0'], undefined, { OVOS_CONTESTS_NATS_SERVER: join(tmpdir(), 'no-such-nats-server') });
    cleanups.push(() => killGroup(spawned));
    const result = { code: await spawned.exited, stderr: spawned.output() };
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split('\n').filter((line) => line.includes('nats-server'))).toHaveLength(1);
    expect(result.stderr).toContain('apt install nats-server');
  }, 60_000);
});
