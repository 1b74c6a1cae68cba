/**
 * Benchmark — what the live inspector costs the daemon. The real daemon (`startDaemon`) with 3 fallback skills in a
 * child process (the third willing) and a driver client, run three ways, alternating, twice each:
 *   off       `--no-inspector`: no recorder, no inspection hook, no page server
 *   on        the default (`npm start`): recording every contest into the ring, no page connected
 *   on + page a page connected to /feed (a websocket client reading every frame, as the browser's socket would;
 *             the browser's own rendering runs in another process and is not the daemon's cost)
 * The inspector should cost nothing measurable while no page is connected: compare `off` with `on`.
 * Beside them, two figures of the recorder alone: its CPU time per ordinary message, and what 200 frames of 9 MiB
 * carrying an utterance's ids leave on the heap (the recorder keeps clipped copies within its byte budget).
 */
import { WebSocket } from 'ws';
import type { AnyActorRef } from 'xstate';
import { createMessage, type Message } from '../../src/bus/message.js';
import { runLoad, type LoadResult } from './load-driver.js';
import { loadColumns, loadRow, type Cell, type Section } from './report.js';
import { systemClock } from '../../src/clock/clock.js';
import { InspectorRecorder } from '../../src/inspect/recorder.js';
import { collectGarbage, fallbackConfig, fallbackPlan, heapUsed, isFallbackDispatch, settle, startDaemonRig, startInProcess } from './rig.js';
import { formatBytes, median } from './stats.js';

const CONCURRENCY = 100;
const TOTAL = 3_000;
const SEQUENTIAL = 400;
const WARMUP = 300;
const ROUNDS = 3;
const IN_PROCESS_TOTAL = 10_000;
const IN_PROCESS_ROUNDS = 5;
const COST_UTTERANCES = 2_000;
const COST_MESSAGES = 20;
const COST_ROUNDS = 7;
const HUGE_MESSAGES = 200;
const HUGE_BYTES = 9 * 1024 * 1024;
/** What 200 huge messages may leave behind on the heap once collected: the recorder's budget and change. */
const HUGE_GROWTH_LIMIT = 48 * 1024 * 1024;
const MARKS = { dispatch: (m: { type: string }) => isFallbackDispatch(m.type) };

type Mode = 'off' | 'on' | 'on + page';

interface Run {
  readonly concurrent: LoadResult;
  readonly sequential: LoadResult;
  readonly feedFrames: number;
  readonly feedBytes: number;
}

async function run(mode: Mode): Promise<Run> {
  const base = fallbackConfig();
  const config = { ...base, exampleSkills: false, inspector: { ...base.inspector, enabled: mode !== 'off' } };
  const rig = await startDaemonRig(config, { fallback: fallbackPlan(3) });
  let page: WebSocket | undefined;
  let feedFrames = 0;
  let feedBytes = 0;
  try {
    if (mode === 'on + page') {
      const url = `${rig.daemon.inspector!.url.replace('http', 'ws')}feed`;
      const ws = new WebSocket(url);
      page = ws;
      ws.on('message', (data: Buffer) => {
        feedFrames++;
        feedBytes += data.length;
      });
      await new Promise<void>((resolve, reject) => ws.once('open', () => resolve()).once('error', reject));
    }
    const load = (runId: string, concurrency: number, total: number) =>
      runLoad({ bus: rig.driver, total, concurrency, utterance: 'tell me something nobody else can', runId, marks: MARKS, timeoutMs: 120_000 });
    await load('warmup', CONCURRENCY, WARMUP);
    await collectGarbage();
    const concurrent = await load('concurrent', CONCURRENCY, TOTAL);
    await collectGarbage();
    const sequential = await load('sequential', 1, SEQUENTIAL);
    return { concurrent, sequential, feedFrames, feedBytes };
  } finally {
    page?.close();
    await rig.close();
  }
}

/** In process (LocalBus, no sockets): the recorder's own cost, with nothing else to hide it. */
async function inProcess(recording: boolean): Promise<LoadResult> {
  const config = fallbackConfig();
  const rig = await startInProcess(config, fallbackPlan(3), recording ? { recorder: new InspectorRecorder({ clock: systemClock }) } : {});
  try {
    const load = (runId: string, total: number) =>
      runLoad({ bus: rig.bus, total, concurrency: CONCURRENCY, utterance: 'tell me something nobody else can', runId, marks: MARKS, timeoutMs: 120_000 });
    await load('warmup', 1_000);
    await collectGarbage();
    return await load('in-process', IN_PROCESS_TOTAL);
  } finally {
    rig.close();
  }
}

/** A contest actor as the recorder reads one when no page watches: its id, its machine, its final snapshot. */
function quietActor(id: string): AnyActorRef {
  return { id, logic: { id: 'fallback' }, getSnapshot: () => ({ value: 'matched' }), system: { inspect: () => ({ unsubscribe() {} }) } } as unknown as AnyActorRef;
}

/**
 * The recorder alone, fed through its public interface: one fallback contest and 20 ordinary messages (~300 bytes
 * of JSON each: a ping, a pong, a dispatch, …) per utterance, 2,000 utterances through the default ring. Messages are
 * built and garbage collected before the clock starts; the figure (the median round, after one to warm up) is the CPU time
 * (this process's, so other load on the machine counts less) recording takes per message, contest bookkeeping included.
 */
async function recordingCost(): Promise<number> {
  const rounds: number[] = [];
  for (let round = 0; round <= COST_ROUNDS; round++) {
    const recorder = new InspectorRecorder({ clock: systemClock });
    const utterances = Array.from({ length: COST_UTTERANCES }, (_, u) => {
      const sessionId = `cost-s${u % 100}`;
      const utteranceId = `cost-r${round}-u${u}`;
      const contestId = `c${round}-${u}`;
      const messages: Message[] = Array.from({ length: COST_MESSAGES }, (_, i) => {
        const skillId = `fb-${(i % 3) * 10 + 10}`;
        return createMessage(
          i % 2 === 0 ? `${skillId}.fallback.ping` : `${skillId}.fallback.pong`,
          { skill_id: skillId, can_handle: i % 4 === 1, utterance: 'tell me something nobody else can', lang: 'en-US' },
          { source: 'skills', destination: 'fallback', session: { session_id: sessionId, lang: 'en-US', pipeline: ['fallback_high', 'common_query'] }, utterance_id: utteranceId, contest_id: contestId, skill_id: skillId },
        );
      });
      const info = { id: contestId, kind: 'fallback', label: 'fallback_high', sessionId, utteranceId };
      return { info, actor: quietActor(contestId), messages };
    });
    await collectGarbage();
    const started = process.cpuUsage();
    for (const { info, actor, messages } of utterances) {
      recorder.contestStarted(info, actor, {});
      for (const message of messages) recorder.onMessage(message);
      recorder.contestEnded(info, { status: 'done', output: {} });
    }
    const used = process.cpuUsage(started);
    if (round > 0) rounds.push(((used.user + used.system) * 1e3) / (COST_UTTERANCES * COST_MESSAGES));
  }
  return median(rounds);
}

/** A frame of about `bytes` carrying an utterance's ids, parsed as the bus parses one (every string fresh). */
function hugeFrame(index: number, bytes: number, sessionId: string, utteranceId: string): Message {
  const payload = Buffer.alloc(bytes, String.fromCharCode(97 + (index % 26))).toString('latin1');
  const frame = `{"type":"flood.skill.fallback.pong","data":{"skill_id":"flood.skill","can_handle":true,"payload":"${payload}"},"context":{"session":{"session_id":"${sessionId}"},"utterance_id":"${utteranceId}"}}`;
  return JSON.parse(frame) as Message;
}

/**
 * 200 frames of 9 MiB carrying a finished utterance's ids, through the in-process system with the recorder wired as
 * the daemon wires it (the bus hands each to the recorder; the supervisor drops it, and the recorder records the
 * drop too), one at a time. Heap after a full collection, before and after: what the recorder kept of them.
 */
async function hugeMessages(): Promise<{ readonly growth: number; readonly accounted: number; readonly stateBytes: number }> {
  const recorder = new InspectorRecorder({ clock: systemClock });
  const rig = await startInProcess(fallbackConfig(), fallbackPlan(3), { recorder });
  try {
    await runLoad({ bus: rig.bus, total: 1, concurrency: 1, utterance: 'tell me something nobody else can', runId: 'flood', marks: MARKS, timeoutMs: 10_000 });
    await collectGarbage();
    const before = heapUsed();
    for (let i = 0; i < HUGE_MESSAGES; i++) {
      rig.bus.publish(hugeFrame(i, HUGE_BYTES, 'flood-s0', 'flood-u0'));
      await settle();
    }
    await collectGarbage();
    const growth = heapUsed() - before;
    const stateBytes = JSON.stringify({ utterances: recorder.utterances(), decisions: recorder.decisions(), strays: recorder.strays() }).length;
    return { growth, accounted: recorder.bytes, stateBytes };
  } finally {
    rig.close();
  }
}

export async function benchInspector(): Promise<Section> {
  const costNs = await recordingCost();
  const huge = await hugeMessages();
  const local = { off: [] as LoadResult[], recording: [] as LoadResult[] };
  for (let round = 0; round < IN_PROCESS_ROUNDS; round++) {
    local.off.push(await inProcess(false));
    local.recording.push(await inProcess(true));
  }
  const modes: Mode[] = ['off', 'on', 'on + page'];
  const runs = new Map<Mode, Run[]>(modes.map((m) => [m, []]));
  for (let round = 0; round < ROUNDS; round++) for (const mode of modes) runs.get(mode)!.push(await run(mode));
  const marks = ['dispatch', 'handled'];
  const rows: Array<Record<string, Cell>> = [];
  const medianOf = (results: readonly LoadResult[]): LoadResult => [...results].sort((a, b) => a.perSecond - b.perSecond)[Math.floor((results.length - 1) / 2)]!;
  for (const [mode, results] of Object.entries(local)) {
    rows.push(loadRow(`in process (LocalBus), recorder ${mode}`, CONCURRENCY, medianOf(results), marks, { rounds: results.map((r) => r.perSecond.toFixed(0)).join(' / '), feed: '—' }));
  }
  for (const mode of modes) {
    const all = runs.get(mode)!;
    // The round with the median throughput stands for the mode; every round's figure is kept beside it.
    const pick = (key: 'concurrent' | 'sequential'): LoadResult => {
      const sorted = [...all].sort((a, b) => a[key].perSecond - b[key].perSecond);
      return sorted[Math.floor((sorted.length - 1) / 2)]![key];
    };
    const feed = all.at(-1)!;
    const extra = { rounds: all.map((r) => r.concurrent.perSecond.toFixed(0)).join(' / '), feed: mode === 'on + page' ? `${feed.feedFrames} frames, ${(feed.feedBytes / 1024 / 1024).toFixed(1)} MiB` : '—' };
    rows.push(loadRow(`inspector ${mode}, ${CONCURRENCY} in flight`, CONCURRENCY, pick('concurrent'), marks, extra));
    rows.push(loadRow(`inspector ${mode}, one at a time`, 1, pick('sequential'), marks, { rounds: all.map((r) => r.sequential.perSecond.toFixed(0)).join(' / '), feed: '' }));
  }
  const perSecond = (mode: Mode): number => median(runs.get(mode)!.map((r) => r.concurrent.perSecond));
  const missed = [...runs.values()].flat().reduce((n, r) => n + (r.concurrent.missed['dispatch'] ?? 0) + (r.sequential.missed['dispatch'] ?? 0), 0);
  return {
    id: 'inspector',
    title: 'Inspector cost: the daemon with the live inspector off, on with no page, and on with a page connected (3 fallback skills in a child process)',
    params: {
      concurrency: CONCURRENCY,
      total: TOTAL,
      sequential: SEQUENTIAL,
      warmup: WARMUP,
      rounds: ROUNDS,
      skills: fallbackPlan(3),
      recordingCost: { utterances: COST_UTTERANCES, messagesPerUtterance: COST_MESSAGES, rounds: COST_ROUNDS },
      hugeMessages: { count: HUGE_MESSAGES, bytes: HUGE_BYTES },
    },
    columns: [...loadColumns([['dispatch', 'dispatch'], ['handled', 'handled']]), { key: 'rounds', header: 'contests/s per round', unit: 'text' }, { key: 'feed', header: 'feed', unit: 'text' }],
    rows,
    notes: [
      `in process, median of ${IN_PROCESS_ROUNDS} rounds: recorder off ${medianOf(local.off).perSecond.toFixed(0)}/s, recording ${medianOf(local.recording).perSecond.toFixed(0)}/s (${((medianOf(local.recording).perSecond / medianOf(local.off).perSecond - 1) * 100).toFixed(1)} %)`,
      `throughput, median of ${ROUNDS} rounds: off ${perSecond('off').toFixed(0)}/s, on ${perSecond('on').toFixed(0)}/s (${((perSecond('on') / perSecond('off') - 1) * 100).toFixed(1)} %), on + page ${perSecond('on + page').toFixed(0)}/s (${((perSecond('on + page') / perSecond('off') - 1) * 100).toFixed(1)} %)`,
      'modes alternate (off, on, on + page, off, …) so drift in the machine is shared; each run is a fresh daemon',
      `the recorder alone: ${costNs.toFixed(0)} ns of CPU per ordinary message recorded (${COST_MESSAGES} of ~300 bytes per contest, ${COST_UTTERANCES} contests, median of ${COST_ROUNDS} rounds)`,
      `${HUGE_MESSAGES} frames of ${formatBytes(HUGE_BYTES)} carrying a finished utterance's ids, in process: heap ${formatBytes(huge.growth)} after a full collection; the recorder accounts ${formatBytes(huge.accounted)}; the page's state is ${formatBytes(huge.stateBytes)} of JSON`,
    ],
    checks: [
      { name: 'every utterance dispatched to the willing skill', ok: missed === 0, detail: `missed ${missed}` },
      { name: `${HUGE_MESSAGES} huge frames leave under ${formatBytes(HUGE_GROWTH_LIMIT)} on the heap`, ok: huge.growth < HUGE_GROWTH_LIMIT, detail: `heap ${formatBytes(huge.growth)}` },
    ],
  };
}
