/**
 * Benchmark 10 — what a restart remembers, the way a user meets it (`npm run bench -- restart`): the daemon from the
 * README (`npm start`'s `node --max-semi-space-size=64 dist/src/daemon/main.js`, example skills on: the "I don't know"
 * catch-all at priority 100), with a state directory of its own (`XDG_STATE_HOME`, a temporary folder: no user's
 * daemon is touched, no earlier run counts), on a fixed port.
 *
 *  1. Five spec fallback skills in another process register (priorities 10–50) and leave for good (SIGKILL: nobody
 *     deregisters). The daemon is stopped (SIGTERM) and started again on the same port and state; a front end sends
 *     three commands one at a time. Each should reach the catch-all at once — none of the five is waited for.
 *  2. A second daemon of the same user on another port (same state directory) is asked one command: it restores none
 *     of the first one's skills (its own registry file) and pings none of them.
 *  3. Two ovos-workshop skills on one bus client register and leave for good; the daemon restarts twice; three
 *     commands after each start. Each costs at most one ping timeout in total (it is maybe back when the front end's
 *     connection opens, misses its ping, and is dormant from then on, across restarts too) — and the two together
 *     one: both are asked by one broadcast, whose ping timeout they share.
 *
 * Time is from the command sent to its `ovos.utterance.handled` on the front end's socket.
 */
import { fork } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { WebSocket } from 'ws';
import { DEFAULT_CONFIG } from '../../src/config/defaults.js';
import { dontKnowSkill } from '../../src/skills/example-skills.js';
import { LEGACY_LEAVERS, SPEC_LEAVERS } from './leaving-skills-process.js';
import { freePort, startReadmeDaemon as startDaemon, until, type ReadmeDaemon as Daemon } from './readme-daemon.js';
import type { Section } from './report.js';

const PING_TIMEOUT_MS = DEFAULT_CONFIG.fallback.pingTimeoutMs;
const TARGET_MS = 200;
const COMMAND = 'do a barrel roll';

/** Skills that register over real sockets in another process and are then killed (SIGKILL). */
async function registerAndLeave(daemon: Daemon, cast: 'spec' | 'legacy', skills: readonly string[]): Promise<void> {
  const child = fork(new URL('./leaving-skills-process.js', import.meta.url), [daemon.url, cast], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  await new Promise((resolve) => child.once('message', resolve));
  const registered = (): number => daemon.lines.filter((l) => l['msg'] === 'fallback skill registered' && skills.includes(String(l['skill_id']))).length;
  await until(() => registered() === skills.length, `${cast} skills registered`);
  child.kill('SIGKILL');
  await new Promise((resolve) => child.once('exit', resolve));
}

interface Commands {
  readonly ms: number[];
  readonly winners: string[];
  /** Pings (spec or the legacy broadcast) seen on the bus while they ran, by topic. */
  readonly pings: string[];
}

/** `n` commands one at a time from a front end connected now. */
async function commands(url: string, n: number, prefix: string): Promise<Commands> {
  const socket = new WebSocket(url);
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  const ms: number[] = [];
  const winners: string[] = [];
  const pings: string[] = [];
  let waiting: { id: string; sent: number; resolve: () => void } | undefined;
  socket.on('message', (raw) => {
    const m = JSON.parse(String(raw)) as { type: string; data: Record<string, unknown>; context: Record<string, unknown> };
    if (m.type.endsWith('.fallback.ping')) pings.push(m.type);
    if (waiting === undefined || m.context['utterance_id'] !== waiting.id) return;
    if (m.type === 'ovos.intent.matched') winners.push(String(m.data['skill_id']));
    if (m.type === 'ovos.utterance.handled') {
      ms.push(performance.now() - waiting.sent);
      waiting.resolve();
    }
  });
  for (let i = 0; i < n; i++) {
    const id = `${prefix}-${i}`;
    await new Promise<void>((resolve) => {
      waiting = { id, sent: performance.now(), resolve };
      socket.send(JSON.stringify({ type: 'ovos.utterance.handle', data: { utterances: [COMMAND] }, context: { session: { session_id: prefix }, utterance_id: id } }));
    });
  }
  socket.close();
  return { ms, winners, pings };
}

const restored = (daemon: Daemon): Record<string, unknown> | undefined => daemon.lines.find((l) => l['reason'] === 'registry_restored');
const fmt = (ms: readonly number[]): string => ms.map((t) => t.toFixed(0)).join(', ');
const broadcasts = (c: Commands): number => c.pings.filter((topic) => topic === 'ovos.skills.fallback.ping').length;
const leaverPings = (c: Commands, skills: readonly string[]): number => c.pings.filter((topic) => skills.some((skill) => topic === `${skill}.fallback.ping`)).length;

export async function benchRestartMemory(): Promise<Section> {
  const state = mkdtempSync(join(tmpdir(), 'ovos-bench-restart-'));
  const [portA, portB, portC] = [await freePort(), await freePort(), await freePort()];
  const running: Daemon[] = [];
  const start = async (port: number): Promise<Daemon> => {
    const daemon = await startDaemon(port, state);
    running.push(daemon);
    return daemon;
  };
  const stop = async (daemon: Daemon): Promise<void> => {
    await daemon.stop();
    running.splice(running.indexOf(daemon), 1);
  };
  try {
    // 1. Five spec skills leave for good; restart; three commands.
    const first = await start(portA);
    await registerAndLeave(first, 'spec', SPEC_LEAVERS);
    await stop(first);
    const again = await start(portA);
    const afterRestart = await commands(again.url, 3, 'after-restart');
    const againRestored = restored(again);

    // 2. A second daemon of the same user on another port: its own registry, none of the first one's skills.
    const second = await start(portB);
    const onSecond = await commands(second.url, 1, 'second-daemon');
    const secondRestored = restored(second);
    await stop(second);
    await stop(again);

    // 3. Two workshop skills leave for good; two restarts; three commands after each start.
    const legacyFirst = await start(portC);
    await registerAndLeave(legacyFirst, 'legacy', LEGACY_LEAVERS);
    await stop(legacyFirst);
    const legacyRuns: Commands[] = [];
    let timeouts = 0;
    for (let restart = 0; restart < 3; restart++) {
      const daemon = await start(portC);
      legacyRuns.push(await commands(daemon.url, 3, `legacy-${restart}`));
      timeouts += daemon.lines.filter((l) => l['reason'] === 'ping_timeout').length;
      await stop(daemon);
    }
    const files = readdirSync(join(state, 'ovos-contests')).filter((f) => f.endsWith('.json')).sort();

    const catchAll = dontKnowSkill.skillId;
    const specOk = afterRestart.ms.every((t) => t <= TARGET_MS) && afterRestart.winners.every((w) => w === catchAll) && leaverPings(afterRestart, SPEC_LEAVERS) === 0;
    const legacyMs = legacyRuns.flatMap((r) => r.ms);
    return {
      id: 'restart',
      title: '10. What a restart remembers (the README daemon over real sockets, skills in another process)',
      params: { command: COMMAND, targetMs: TARGET_MS, pingTimeoutMs: PING_TIMEOUT_MS, specLeavers: SPEC_LEAVERS, legacyLeavers: LEGACY_LEAVERS },
      columns: [
        { key: 'run', header: 'run', unit: 'text' },
        { key: 'ms', header: 'command → handled (ms, each)', unit: 'text' },
        { key: 'winners', header: 'answered by', unit: 'text' },
        { key: 'pings', header: 'pings to the spec skills gone', unit: 'count' },
        { key: 'broadcasts', header: 'broadcast pings', unit: 'count' },
      ],
      rows: [
        { run: 'five spec skills gone for good, after a restart: 3 commands', ms: fmt(afterRestart.ms), winners: [...new Set(afterRestart.winners)].join(', '), pings: leaverPings(afterRestart, SPEC_LEAVERS), broadcasts: broadcasts(afterRestart) },
        { run: 'a second daemon on another port, same user: 1 command', ms: fmt(onSecond.ms), winners: [...new Set(onSecond.winners)].join(', '), pings: leaverPings(onSecond, SPEC_LEAVERS), broadcasts: broadcasts(onSecond) },
        ...legacyRuns.map((r, i) => ({ run: `two workshop skills gone for good, start ${i + 1}: 3 commands`, ms: fmt(r.ms), winners: [...new Set(r.winners)].join(', '), pings: leaverPings(r, SPEC_LEAVERS), broadcasts: broadcasts(r) })),
      ],
      notes: [
        `restart: registry_restored ${JSON.stringify({ restored: againRestored?.['restored'], dormant: againRestored?.['dormant'], file: againRestored?.['file'] })}`,
        `second daemon: registry_restored ${JSON.stringify({ restored: secondRestored?.['restored'], file: secondRestored?.['file'] })}`,
        `registry files in the state directory: ${files.join(', ')}`,
        `workshop skills: ${timeouts} ping timeouts in the daemon logs over 3 starts and 9 commands (at most one per skill: ${LEGACY_LEAVERS.length})`,
        'broadcast pings: each command carries the utterance\'s one broadcast: the first of start 1 asks the two skills maybe back; from then on they are dormant, and the broadcast is a probe (which a live skill would answer) within a minute of one going dormant or of the start, then once a minute',
      ],
      checks: [
        { name: `after a restart, each command reaches the catch-all in ≤ ${TARGET_MS} ms, with no ping to a skill gone`, ok: specOk, detail: `${fmt(afterRestart.ms)} ms; ${afterRestart.winners.join(', ')}` },
        { name: 'a second daemon on another port restores and pings none of the first one\'s skills', ok: secondRestored?.['restored'] === 0 && leaverPings(onSecond, SPEC_LEAVERS) === 0 && onSecond.winners[0] === catchAll, detail: `restored ${String(secondRestored?.['restored'])}, pings ${leaverPings(onSecond, SPEC_LEAVERS)}` },
        { name: 'a workshop skill gone for good costs at most one ping timeout in total', ok: timeouts <= LEGACY_LEAVERS.length && legacyMs.slice(1).every((t) => t <= TARGET_MS), detail: `${timeouts} timeouts; ${fmt(legacyMs)} ms` },
      ],
    };
  } finally {
    await Promise.all(running.map((d) => d.stop()));
    rmSync(state, { recursive: true, force: true });
  }
}
