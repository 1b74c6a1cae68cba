/**
 * Every entrance bounded, tried the way an attacker on the same machine would: `npm start` in a process of its own
 * (its own state folder), the attacks over real sockets, and what each may cost asserted where a user would feel it —
 * the daemon's resident memory, the bytes it logs, the size of the file it writes, the connections it accepts — and
 * that the assistant still answers afterwards. The bounds live in src/bus/ws-server.ts (connections), src/stage-service/
 * endpoint.ts (the stage link), src/plugins/fallback/registry.ts and registry-store.ts (registrations and their file),
 * src/log/ (log volume) and src/config/ (configuration files); README "Safety" gives their figures under load
 * (`npm run bench -- attacks`).
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { reply } from '../../src/bus/message.js';
import { Probe, freePort } from './probe.js';
import { connectionFlood, get, longIdFlood, open, registryFlood, slowLinkReader, stageRequest } from '../support/attacks.js';
import { ROOT, killGroup, npmStart, watchOutput, type Spawned } from './spawn-daemon.js';

const SLOW_MS = 180_000;
const MB = 1024 * 1024;

interface Running {
  readonly spawned: Spawned;
  readonly url: string;
  readonly port: number;
  readonly stateHome: string;
  /** The daemon's resident memory now, bytes. */
  readonly rss: () => number;
  /** Bytes of log lines the daemon has written since it listened. */
  readonly logBytes: () => number;
  /** With NODE_OPTIONS=--trace-gc: the heap in use after each full (mark-compact) collection so far, bytes. */
  readonly liveAfterGc: () => number[];
  /** Lines since it listened, parsed (a line that is not JSON is kept as its text in `msg`). */
  readonly lines: () => Array<Record<string, unknown>>;
  /** The `url` of its first log line whose msg starts with `msg`. */
  readonly urlOf: (msg: string) => string;
}

const running: Spawned[] = [];
afterEach(async () => {
  for (const spawned of running.splice(0)) await killGroup(spawned);
}, SLOW_MS);

function rssOf(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmRSS:'));
  return Number(/(\d+)/.exec(line ?? '')?.[1] ?? 0) * 1024;
}

const parse = (line: string): Record<string, unknown> => {
  try {
    return JSON.parse(line) as Record<string, unknown>;
  } catch {
    return { msg: line };
  }
};

/**
 * `npm start -- args` with a state folder of its own; `traceGc`: the daemon `npm start` runs, run by node with
 * --trace-gc (which NODE_OPTIONS may not carry), after `npm start`'s build step.
 */
async function start(args: readonly string[] = [], stateHome = mkdtempSync(join(tmpdir(), 'ovos-attack-state-')), port?: number, traceGc = false): Promise<Running> {
  const busPort = port ?? (await freePort());
  const argv = ['--port', String(busPort), '--no-example-skills', '--inspector-port', '0', ...args];
  let spawned: Spawned;
  if (traceGc) {
    execFileSync('node', ['src/cli/build.mjs'], { cwd: ROOT });
    const child = spawn('node', ['--max-semi-space-size=64', '--trace-gc', 'dist/src/daemon/main.js', ...argv], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1', XDG_STATE_HOME: stateHome } });
    spawned = { child, exited: new Promise((resolve) => child.once('exit', (code) => resolve(code))), ...watchOutput(child) };
  } else spawned = npmStart(argv, stateHome);
  running.push(spawned);
  await Promise.race([
    spawned.printed('"msg":"pipeline ready"'),
    spawned.exited.then((code) => {
      throw new Error(`npm start exited (${String(code)}): ${spawned.output()}`);
    }),
  ]);
  const pid = Number(/"pid":(\d+)/.exec(spawned.output())?.[1]);
  const text = (): string => spawned.output().slice(spawned.output().indexOf('{'));
  const lines = (): Array<Record<string, unknown>> => text().split('\n').filter((l) => l !== '').map(parse);
  const logText = (): string => spawned.output().split('\n').filter((l) => l.startsWith('{')).join('\n');
  const base = Buffer.byteLength(logText());
  return {
    spawned,
    url: `ws://127.0.0.1:${busPort}/core`,
    port: busPort,
    stateHome,
    rss: () => rssOf(pid),
    logBytes: () => Buffer.byteLength(logText()) - base,
    liveAfterGc: () => [...spawned.output().matchAll(/Mark-Compact [\d.]+ \([\d.]+\) -> ([\d.]+) \(/g)].map((m) => Number(m[1]) * MB),
    lines,
    urlOf: (msg) => {
      const url = lines().find((l) => typeof l['msg'] === 'string' && l['msg'].startsWith(msg))?.['url'];
      if (typeof url !== 'string') throw new Error(`no "${msg}" line: ${spawned.output()}`);
      return url;
    },
  };
}

/** An ovos-workshop FallbackSkill's connection: registers once (as the workshop does, at its start), answers broadcast pings and its requests. */
async function workshopSkill(url: string, skillId: string, register: boolean): Promise<Probe> {
  const probe = await Probe.connect(url);
  probe.frames.subscribe(({ message }) => {
    if (message?.type === 'ovos.skills.fallback.ping') probe.send(reply(message, 'ovos.skills.fallback.pong', { skill_id: skillId, can_handle: true }));
    if (message?.type === `ovos.skills.fallback.${skillId}.request`) {
      probe.send({ ...message, type: 'speak', data: { utterance: `${skillId} here` } });
      probe.send({ ...message, type: `ovos.skills.fallback.${skillId}.response`, data: { result: true, fallback_handler: 'X.handle_fallback' } });
    }
  });
  if (register) probe.send({ type: 'ovos.skills.fallback.register', data: { skill_id: skillId, priority: 10 }, context: {} });
  return probe;
}

/** Ask `question` in session default and return who answered (the skill of ovos.intent.matched, or null). */
async function answeredBy(probe: Probe, question: string): Promise<string | null> {
  const id = randomUUID();
  probe.utter(question, { utteranceId: id, session: { session_id: 'default' }, lang: 'en-US' });
  await probe.handled(id);
  const matched = probe.of(id).find((m) => m.type === 'ovos.intent.matched');
  return matched === undefined ? null : String(matched.data['skill_id'] ?? matched.context['skill_id'] ?? null);
}

/** Once a connection to `url` is accepted again (after a flood's closes reach the daemon; 10 s guard). */
async function accepted(url: string, headers: Record<string, string> = {}): Promise<void> {
  await expect
    .poll(
      async () => {
        try {
          (await open(url, headers)).close();
          return true;
        } catch {
          return false;
        }
      },
      { timeout: 10_000, interval: 50 },
    )
    .toBe(true);
}

const warnLines = (lines: ReadonlyArray<Record<string, unknown>>): Array<Record<string, unknown>> => lines.filter((l) => typeof l['level'] === 'number' && l['level'] >= 40);

describe('entrances bounded against a local attacker (npm start, real sockets)', () => {
  it('FALLBACK-1 §3.4 registry bounds: a flood inside every count bound (12 connections, 32 skills in hundreds of sessions, 256-character ids) — memory, log and file bounded, the inspector state under 1 MB, and the workshop skill that registered first answers after a restart', async () => {
    const first = await start([], undefined, undefined, true);
    const workshop = await workshopSkill(first.url, 'workshop.first', true);
    expect(await answeredBy(workshop, 'nobody knows this')).toBe('workshop.first');

    const rssBefore = first.rss();
    const logBefore = first.logBytes();
    let rssPeak = rssBefore;
    const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, first.rss())), 100);
    await registryFlood(first.url);
    clearInterval(sampler);
    const logged = first.logBytes() - logBefore;

    // The inspector's state and a page's first message are bounded whatever the registry holds.
    const state = await get(`${first.urlOf('inspector page')}api/state`);
    expect(state.status).toBe(200);
    expect(state.bytes).toBeLessThan(1 * MB);
    // The registry holds at most 1,001 sessions × 64 skills of ≤ 640 bytes each (about 41 MB of ids). What the daemon
    // keeps — its heap after a full collection — stays within a few times that; its resident memory also holds the
    // garbage V8 has not collected yet (it lets the heap grow before a full collection), bounded too.
    const live = first.liveAfterGc();
    expect(live.length).toBeGreaterThan(0);
    expect(Math.max(...live)).toBeLessThan(160 * MB);
    expect(rssPeak - rssBefore).toBeLessThan(640 * MB);
    // ~90,000 registrations: every accepted one would be a line of ~600 bytes (54 MB); 64 a minute per connection.
    expect(logged).toBeLessThan(1 * MB);
    expect(warnLines(first.lines()).filter((l) => l['reason'] === 'log_lines_dropped')).toEqual([]);

    await workshop.close();
    await killGroup(first.spawned);
    const file = join(first.stateHome, 'ovos-contests', `fallback-registry-127.0.0.1-${first.port}-core.json`);
    // Never larger than a start reads back (32 MiB), and the skill heard first is the first entry.
    expect(statSync(file).size).toBeLessThanOrEqual(32 * MB);
    expect(readFileSync(file, 'utf8').split('\n')[1]).toContain('"skill_id":"workshop.first"');

    // The workshop skill never registers again; after a restart it is still asked, and answers.
    const second = await start([], first.stateHome, first.port);
    const back = await workshopSkill(second.url, 'workshop.first', false);
    expect(await answeredBy(back, 'nobody knows this either')).toBe('workshop.first');
    expect(warnLines(second.lines()).map((l) => l['reason'])).not.toContain('registry_file_too_large');
    await back.close();
  }, SLOW_MS);

  it('log volume is the daemon\'s, not the sender\'s: 200 registrations with 100 kB ids and 5,000 refused registrations with distinct ids log a few lines, not megabytes', async () => {
    const daemon = await start();
    const before = daemon.logBytes();
    await longIdFlood(daemon.url);
    const logged = daemon.logBytes() - before;
    // Refused (skill_id_too_long), warned once a minute per sender and reason, each id clipped in the line.
    expect(logged).toBeLessThan(16 * 1024);
    const refusals = warnLines(daemon.lines()).filter((l) => l['reason'] === 'skill_id_too_long');
    expect(refusals.length).toBeGreaterThanOrEqual(1);
    expect(refusals.length).toBeLessThanOrEqual(2);
    const probe = await workshopSkill(daemon.url, 'still.here', true);
    expect(await answeredBy(probe, 'is anyone there')).toBe('still.here');
    await probe.close();
  }, SLOW_MS);

  it('connections: 700 opened at once get at most bus.maxConnections (512), the rest refused at the upgrade; the daemon\'s memory stays bounded and a skill still answers', async () => {
    const daemon = await start();
    const rssBefore = daemon.rss();
    let rssPeak = rssBefore;
    const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, daemon.rss())), 100);
    const flood = await connectionFlood(daemon.url, 700);
    clearInterval(sampler);
    expect(flood.opened).toBeLessThanOrEqual(512);
    expect(flood.opened).toBeGreaterThan(400);
    expect(Object.keys(flood.refused)).toEqual(['HTTP 503']);
    expect(rssPeak - rssBefore).toBeLessThan(128 * MB);
    await accepted(daemon.url); // the closes have reached the daemon
    const probe = await workshopSkill(daemon.url, 'still.here', true);
    expect(await answeredBy(probe, 'is anyone there')).toBe('still.here');
    await probe.close();
  }, SLOW_MS);

  it('Protocol §8 stage link: without the token refused (401); 100 links opened with it get 8; a link that sends 40 MB of requests and never reads is paused then closed, the daemon\'s memory bounded', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ovos-attack-config-'));
    const config = join(dir, 'config.json');
    writeFileSync(config, JSON.stringify({ orchestrator: { takesUtterances: false, stagePort: 0 } }));
    const daemon = await start(['--config', config]);
    const url = daemon.urlOf('stage requests also answered');
    const token = readFileSync(join(daemon.stateHome, 'ovos-contests', 'stage-link-token'), 'utf8').trim();
    const authorization = { authorization: `Bearer ${token}` };

    await expect(open(url)).rejects.toThrow('HTTP 401');
    await expect(open(url, { authorization: `Bearer ${token.slice(0, -1)}x` })).rejects.toThrow('HTTP 401');

    const links = await connectionFlood(url, 100, authorization);
    expect(links.opened).toBe(8);
    await accepted(url, authorization); // the closes have reached the daemon

    const rssBefore = daemon.rss();
    let rssPeak = rssBefore;
    const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, daemon.rss())), 100);
    const slow = await slowLinkReader(url, authorization);
    clearInterval(sampler);
    expect(slow.closed).toBe(true);
    expect(rssPeak - rssBefore).toBeLessThan(128 * MB);
    const reasons = warnLines(daemon.lines()).map((l) => l['reason']);
    expect(reasons).toContain('stage_link_unauthorized');
    expect(reasons).toContain('stage_link_too_many_links');
    expect(reasons).toContain('stage_link_slow_reader');
    // After all that, a link that reads is served.
    const good = await open(url, authorization);
    const answered = new Promise<string>((resolve) => good.once('message', (data) => resolve(String(data))));
    good.send(stageRequest('after', 'unknown_stage_here'));
    expect(await answered).toContain('"request_id":"after"');
    good.close();
  }, SLOW_MS);

  it('HTTP endpoints answer loopback names only: /metrics and /api/state with a foreign Host refused, /api/state from a cross-site page refused', async () => {
    const daemon = await start(['--metrics-port', '0']);
    const metrics = daemon.urlOf('Prometheus metrics');
    const inspector = daemon.urlOf('inspector page');
    expect((await get(metrics)).status).toBe(200);
    expect((await get(metrics, { host: 'attacker.example' })).status).toBe(403);
    expect((await get(`${inspector}api/state`, { host: 'attacker.example:80' })).status).toBe(403);
    expect((await get(`${inspector}api/state`, { 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await get(`${inspector}api/state`, { origin: 'http://attacker.example' })).status).toBe(403);
  }, SLOW_MS);

  it('a configuration file of any shape is one line and exit 2: 20,000 levels deep, a FIFO', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ovos-attack-config-'));
    const deep = join(dir, 'deep.json');
    writeFileSync(deep, `${'{"a":'.repeat(20_000)}1${'}'.repeat(20_000)}`);
    const fifo = join(dir, 'fifo.json');
    execFileSync('mkfifo', [fifo]);
    for (const file of [deep, fifo]) {
      const bad = npmStart(['--config', file, '--port', '0', '--no-example-skills'], mkdtempSync(join(tmpdir(), 'ovos-attack-state-')));
      running.push(bad);
      expect(await bad.exited).toBe(2);
      const errors = bad.output().split('\n').filter((l) => l.startsWith('config error'));
      expect(errors).toHaveLength(1);
      expect(bad.output()).not.toMatch(/RangeError|\n\s+at /);
    }
  }, SLOW_MS);
});
