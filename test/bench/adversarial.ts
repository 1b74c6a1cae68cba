/**
 * Benchmark 9 — adversarial skills, the way users run them (`npm run bench -- adversarial`): the daemon as `npm start`
 * runs it (`startDaemonProcess`), two skill processes over real sockets (`adversarial-skills-process.ts`: spec skills
 * answering early, over their declared latency and never, one whose socket dies mid-collection; ovos-workshop skills
 * on one bus client that leave the handled to the core and whose socket drops every 20th request without registering
 * again), and two front ends in this process asking at the same time — the same question twice at once in one
 * session, a command, several sessions. Not a speed figure: it counts what a user would notice — an utterance never
 * handled (lost) or handled twice (doubled), who answered, and how long the handled of a legacy-handled utterance
 * came after the skill's end (the grace for a skill that sends its own). Then, when nats-server is installed, the same
 * trial across two daemons of a cluster (src/cluster/): the skills of each dialect on one daemon, their users on the other.
 */
import { fork, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { WebSocket } from 'ws';
import { DEFAULT_CONFIG } from '../../src/config/defaults.js';
import { freePort, startDaemonProcess, type DaemonProcess } from './mixed-load.js';
import type { Cell, Section } from './report.js';
import { summarize } from './stats.js';

interface Plan {
  readonly name: string;
  readonly prefix: string;
  readonly sessions: readonly string[];
  readonly rounds: number;
  readonly gapMs: number;
  /** Per session and round, in this order, all at once: [key, utterance]. */
  readonly utterances: ReadonlyArray<readonly [string, string]>;
}

interface Outcome {
  readonly plan: Plan;
  readonly utterances: number;
  readonly lost: number;
  readonly doubled: number;
  /** "question → cq.wiki": how many. */
  readonly who: Readonly<Record<string, number>>;
  /** ms from a legacy skill's end (its .response / handler.complete) to the handled, per utterance that had one. */
  readonly afterEnd: readonly number[];
}

const GRACE_MS = 3_000;
/** The daemon's fallback ping timeout (it runs with the defaults). */
const PING_TIMEOUT_MS = DEFAULT_CONFIG.fallback.pingTimeoutMs;
const PLANS: readonly Plan[] = [
  {
    name: 'spec skills: the same question twice at once and a command, 2 sessions',
    prefix: 'spec',
    sessions: ['kitchen', 'car'],
    rounds: 20,
    gapMs: 500,
    utterances: [
      ['q1', 'what is the speed of light'],
      ['q2', 'what is the speed of light'],
      ['c', 'do a barrel roll'],
    ],
  },
  {
    name: 'legacy skills (reconnecting): a command and a question, 4 sessions',
    prefix: 'legacy',
    sessions: ['den', 'porch', 'hall', 'attic'],
    rounds: 30,
    gapMs: 300,
    utterances: [
      ['c', 'do a barrel roll'],
      ['q', 'what is the speed of light'],
    ],
  },
];

/** A websocket client of the daemon, once open. */
async function openSocket(url: string): Promise<WebSocket> {
  const socket = new WebSocket(url);
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  return socket;
}

async function drive(url: string, plan: Plan): Promise<Outcome> {
  const socket = await openSocket(url);
  const handled = new Map<string, number>();
  const matched = new Map<string, string>();
  const ended = new Map<string, number>();
  const afterEnd: number[] = [];
  socket.on('message', (raw) => {
    const m = JSON.parse(String(raw)) as { type: string; data: Record<string, unknown>; context: Record<string, unknown> };
    const id = m.context['utterance_id'];
    if (typeof id !== 'string' || !id.startsWith(`${plan.prefix}-`)) return;
    if (m.type === 'ovos.utterance.handled') {
      handled.set(id, (handled.get(id) ?? 0) + 1);
      const end = ended.get(id);
      if (end !== undefined) afterEnd.push(performance.now() - end);
    }
    if (m.type === 'ovos.skills.fallback.wk.roll.response' || (m.type === 'mycroft.skill.handler.complete' && m.context['skill_id'] === 'cq.wiki')) ended.set(id, performance.now());
    if (m.type === 'ovos.intent.matched' && typeof m.data['skill_id'] === 'string') matched.set(id, m.data['skill_id']);
  });
  const ids: Array<{ id: string; key: string }> = [];
  for (let round = 0; round < plan.rounds; round++) {
    for (const session of plan.sessions) {
      for (const [key, text] of plan.utterances) {
        const id = `${plan.prefix}-${session}-${round}-${key}`;
        ids.push({ id, key });
        socket.send(JSON.stringify({ type: 'ovos.utterance.handle', data: { utterances: [text] }, context: { session: { session_id: session }, utterance_id: id } }));
      }
    }
    await new Promise((resolve) => setTimeout(resolve, plan.gapMs));
  }
  await new Promise((resolve) => setTimeout(resolve, GRACE_MS));
  socket.close();
  const who: Record<string, number> = {};
  for (const { id, key } of ids) {
    const label = `${key.startsWith('c') ? 'command' : 'question'} → ${matched.get(id) ?? 'nobody'}`;
    who[label] = (who[label] ?? 0) + 1;
  }
  return {
    plan,
    utterances: ids.length,
    lost: ids.filter(({ id }) => !handled.has(id)).length,
    doubled: ids.filter(({ id }) => (handled.get(id) ?? 0) > 1).length,
    who,
    afterEnd,
  };
}

/**
 * A legacy skill that crashed, then short-lived clients (`npm run say`, a script) between utterances from a front end
 * connected all along (`front`, open since before any skill: a connection that opens later, and stays, may be a
 * legacy skill's reconnect, and a dead one then costs its ping timeout until the circuit breaker suspends it). Each
 * short-lived connection brings the skill back to the pools (it may be its bus client reconnecting); once it has
 * closed, no utterance may wait the skill's ping timeout. Counts the utterances that did (and the lost).
 */
async function deadLegacySkill(url: string, registered: () => number, front: WebSocket): Promise<{ utterances: number; lost: number; waited: number; ms: number[] }> {
  const before = registered();
  const child: ChildProcess = fork(new URL('./adversarial-skills-process.js', import.meta.url), [url, 'dead'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  await new Promise((resolve) => child.once('message', resolve));
  const deadline = Date.now() + 10_000;
  while (registered() === before && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  child.kill('SIGKILL');
  await new Promise((resolve) => child.once('exit', resolve));
  const waiting = new Map<string, () => void>();
  front.on('message', (raw) => {
    const m = JSON.parse(String(raw)) as { type: string; context: Record<string, unknown> };
    if (m.type === 'ovos.utterance.handled' && typeof m.context['utterance_id'] === 'string') waiting.get(m.context['utterance_id'])?.();
  });
  const ms: number[] = [];
  let lost = 0;
  const ROUNDS = 10;
  for (let round = 0; round < ROUNDS; round++) {
    const brief = await openSocket(url); // opens, and goes: it was not the skill's bus client
    brief.close();
    await new Promise((resolve) => brief.once('close', resolve));
    await new Promise((resolve) => setTimeout(resolve, 20));
    const id = `dead-${round}`;
    const started = performance.now();
    const handled = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 10_000);
      waiting.set(id, () => {
        clearTimeout(timer);
        resolve(true);
      });
      front.send(JSON.stringify({ type: 'ovos.utterance.handle', data: { utterances: ['do a cartwheel'] }, context: { session: { session_id: 'study' }, utterance_id: id } }));
    });
    if (handled) ms.push(performance.now() - started);
    else lost += 1;
  }
  return { utterances: ROUNDS, lost, waited: ms.filter((t) => t >= PING_TIMEOUT_MS * 0.8).length, ms };
}

function startSkills(url: string, cast: 'spec' | 'legacy'): Promise<{ stop(): Promise<number> }> {
  const child: ChildProcess = fork(new URL('./adversarial-skills-process.js', import.meta.url), [url, cast], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${cast} skills exited early (code ${code})`)));
    child.once('message', () =>
      resolve({
        stop: () =>
          new Promise<number>((done) => {
            child.removeAllListeners('exit');
            child.once('message', (m: { reconnects?: number }) => done(m.reconnects ?? 0));
            child.once('exit', () => done(-1));
            child.send({ type: 'stop' });
          }),
      }),
    );
  });
}

/** One setup's trial: the skills and the two front ends, at once, on the daemons given (one, or two of a cluster). */
async function trial(urls: { readonly spec: string; readonly legacy: string; readonly users: readonly [string, string] }, registered: () => number): Promise<{ outcomes: Outcome[]; specReconnects: number; legacyReconnects: number }> {
  const skills: Array<{ stop(): Promise<number> }> = [];
  try {
    skills.push(await startSkills(urls.spec, 'spec'), await startSkills(urls.legacy, 'legacy'));
    const deadline = Date.now() + 10_000;
    while (registered() < 3 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    const outcomes = await Promise.all(PLANS.map((plan, i) => drive(urls.users[i % 2]!, plan)));
    const [specReconnects = 0, legacyReconnects = 0] = await Promise.all(skills.splice(0).map((s) => s.stop()));
    return { outcomes, specReconnects, legacyReconnects };
  } finally {
    await Promise.all(skills.map((s) => s.stop()));
  }
}

function rowsOf(outcomes: readonly Outcome[], setup: string): Array<Record<string, Cell>> {
  return outcomes.map((o) => ({
    run: `${setup}: ${o.plan.name}`,
    utterances: o.utterances,
    lost: o.lost,
    doubled: o.doubled,
    who: Object.entries(o.who)
      .map(([label, n]) => `${label} ${n}`)
      .join('; '),
    gapP50: o.afterEnd.length === 0 ? null : summarize(o.afterEnd).p50,
    gapOver500: o.afterEnd.filter((ms) => ms > 500).length,
  }));
}

/**
 * The same trial across two daemons of a cluster on one nats-server (JetStream), each started as `npm start -- --nats`
 * does: the spec skills on the second daemon, the ovos-workshop skills on the first, each front end on the daemon its
 * plan's skills are not on. Undefined when nats-server is not installed.
 */
async function clusterTrial(): Promise<{ outcomes: Outcome[]; specReconnects: number; legacyReconnects: number; graces: readonly number[] } | undefined> {
  if (spawnSync('nats-server', ['--version']).status !== 0) return undefined;
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'ovos-bench-nats-'));
  const nats = spawn('nats-server', ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', dir], { stdio: ['ignore', 'ignore', 'pipe'] });
  const daemons: DaemonProcess[] = [];
  try {
    let output = '';
    nats.stderr?.setEncoding('utf8').on('data', (chunk: string) => (output = (output + chunk).slice(-10_000)));
    const deadline = Date.now() + 10_000;
    while (!output.includes('Server is ready')) {
      if (Date.now() > deadline) throw new Error('nats-server not ready after 10 s');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const url = `nats://127.0.0.1:${port}`;
    daemons.push(await startDaemonProcess({ nats: url }), await startDaemonProcess({ nats: url }));
    const [a, b] = daemons as [DaemonProcess, DaemonProcess];
    const run = await trial({ spec: b.url, legacy: a.url, users: [a.url, b.url] }, () => Math.min(a.registered(), b.registered()));
    return { ...run, graces: daemons.map((d) => d.logged('skill_leaves_handled')) };
  } finally {
    for (const daemon of daemons) await daemon.stop();
    // Waited for: its process and stderr pipe are closed before the report (nothing left open).
    const exited = nats.exitCode === null && nats.signalCode === null ? once(nats, 'exit') : Promise.resolve();
    nats.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function benchAdversarial(): Promise<Section> {
  const daemon = await startDaemonProcess();
  const front = await openSocket(daemon.url);
  try {
    const { outcomes, specReconnects, legacyReconnects } = await trial({ spec: daemon.url, legacy: daemon.url, users: [daemon.url, daemon.url] }, () => daemon.registered());
    const graces = daemon.logged('skill_leaves_handled');
    const dead = await deadLegacySkill(daemon.url, () => daemon.registered(), front);
    const cluster = await clusterTrial();
    const all = [...outcomes, ...(cluster?.outcomes ?? [])];
    const rows = [...rowsOf(outcomes, 'one daemon'), ...rowsOf(cluster?.outcomes ?? [], 'two daemons on NATS')];
    const lost = all.reduce((n, o) => n + o.lost, 0);
    const doubled = all.reduce((n, o) => n + o.doubled, 0);
    return {
      id: 'adversarial',
      title: '9. Adversarial skills over real sockets (daemon, two skill processes, two front ends at once; then the same across two daemons on NATS)',
      params: { plans: PLANS, graceMs: GRACE_MS },
      columns: [
        { key: 'run', header: 'front end', unit: 'text' },
        { key: 'utterances', header: 'utterances', unit: 'count' },
        { key: 'lost', header: 'lost', unit: 'count' },
        { key: 'doubled', header: 'doubled', unit: 'count' },
        { key: 'who', header: 'who answered', unit: 'text' },
        { key: 'gapP50', header: 'handled after a legacy skill ended, p50', unit: 'ms' },
        { key: 'gapOver500', header: '… over 500 ms', unit: 'count' },
      ],
      rows,
      notes: [
        `one daemon: the spec skills' crashy connection reconnected ${specReconnects} times, the legacy bus client ${legacyReconnects} times; the pipeline waited out the grace for the legacy skills' handled ${graces} times`,
        cluster === undefined
          ? 'two daemons on NATS: not run (nats-server is not installed; Debian: apt install nats-server)'
          : `two daemons on NATS (the spec skills on the second, the legacy skills on the first, each front end on the daemon its skills are not on): the spec skills' connection reconnected ${cluster.specReconnects} times, the legacy bus client ${cluster.legacyReconnects} times; the grace waited out ${cluster.graces.join(' and ')} times`,
        `daemon log lines at warn or above: ${daemon.warnings()} (ping timeouts would be among them: the silent fallback skill, at 90, is only asked when nothing before it answers)`,
        'lost = never handled; doubled = more than one ovos.utterance.handled; a question nobody answered ends with the fallback or unmatched, which is not lost',
        'a legacy skill that leaves the handled to the core costs the 2 s grace once, then none; a grace during which its socket dropped within 100 ms of its .response (or while the bus held it back) teaches nothing',
        `then a legacy fallback skill (priority 20) registered and was killed (SIGKILL), and ${dead.utterances} times a short-lived client connected and left before a command: handled after ${dead.ms.map((t) => t.toFixed(0)).join(', ')} ms; ${dead.waited} waited the ${PING_TIMEOUT_MS} ms ping timeout, ${dead.lost} lost`,
      ],
      checks: [
        { name: 'no utterance lost', ok: lost === 0, detail: `lost ${lost}` },
        { name: 'no utterance handled twice', ok: doubled === 0, detail: `doubled ${doubled}` },
        { name: 'a crashed legacy skill costs no ping timeout once the short-lived client that brought it back has left', ok: dead.waited === 0 && dead.lost === 0, detail: `waited ${dead.waited}, lost ${dead.lost} of ${dead.utterances}` },
      ],
    };
  } finally {
    front.close();
    await daemon.stop();
  }
}
