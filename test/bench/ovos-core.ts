/**
 * ovos-core side by side (`npm run bench -- ovos-core`; needs the OVOS peer, test/integration/ovos-peer/README.md, and is
 * skipped with a note without it). The same real programs five ways: ovos-core 2.1.1's intent service with its own
 * fallback and common-query plugins, or with ours (src/ovos-plugin, pip-installed, and the daemon as stage service),
 * each on the stock ovos-messagebus 0.0.10 or on our daemon's embedded bus serving ovos-core and the skills in its
 * place (for ovos-core's own stages the daemon is only the bus: `orchestrator.takesUtterances` and
 * `commonQuery.earlyStart` off, so it asks no skill anything). Our plugin sends its requests on its direct link to the
 * daemon (Protocol §8, the default); on ovos-messagebus also once on the bus (`daemon_url` null), to show what the
 * link saves there. The time inside the stages is what ovos-core spends in their match_* calls (core.py
 * --time-stages); the checks compare its p50 with ovos-core's own stages on ovos-messagebus.
 *
 * The same unmodified ovos-workshop skills in another Python process each time: fallbacks at 3 (willing for "zebra"),
 * 20 and 50 (both willing for "barrel"), 95 (willing for all); common-query skills answering "light" questions at
 * confidence 0.9 and 0.6; a padacioso intent. Three workloads of 100 utterances: one session, one utterance at a
 * time (the plain speed of each stage); two sessions at once, 50 rounds of one utterance each (each session's one
 * after another); and the same with a hung skill — a second process with a fallback at 10 and a common-query skill
 * (neither would take these utterances, but each must be heard out), SIGSTOPped after the warm-up (its socket stays
 * open, it never answers again).
 *
 * The four kinds of utterance in turn — "zebra crossing" (fallback high: fb.high), "what is the speed of light" (common query:
 * cq.light), "do a barrel roll" (fallback medium: fb.first, the first willing in pool order), "blorf the zint"
 * (fallback low: fb.low). Decision time is from the `recognizer_loop:utterance` sent to ovos-core's dispatch of the
 * winner (`ovos.skills.fallback.<id>.request`, `question:action.<id>`) on the driver's socket: everything a user
 * waits for before the answer starts, with the pipeline stages ahead of the deciding one included. A wrong decision
 * is another winner, no dispatch, or other than exactly one `speak` and one `ovos.utterance.handled`.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { WebSocket } from 'ws';
import {
  CONTESTS_PIPELINE,
  OVOS_CORE_PIPELINE,
  installPipelinePlugin,
  mycroftHome,
  ovosCoreAbsent,
  startCore,
  startMessagebus,
  startSkills,
  stageCalls,
  type SkillPlan,
} from '../support/ovos-peer.js';
import { freePort, spawnDaemon, until, type DaemonProcess } from './readme-daemon.js';
import type { Check, Section } from './report.js';
import { round, summarize } from './stats.js';

const DAEMON_MAIN = process.env['BENCH_DAEMON_MAIN'] ?? fileURLToPath(new URL('../../src/daemon/main.js', import.meta.url));
/** 50 (100 utterances a run); BENCH_OVOS_CORE_ROUNDS for a quick look. */
const ROUNDS = Number(process.env['BENCH_OVOS_CORE_ROUNDS'] ?? 50);
/** BENCH_OVOS_CORE_ONLY=<word> runs the setups whose label or workload holds it. */
const ONLY = process.env['BENCH_OVOS_CORE_ONLY'];

const LIVE: SkillPlan = {
  fallbacks: [
    { skill_id: 'fb.high', priority: 3, words: ['zebra'] },
    { skill_id: 'fb.first', priority: 20, words: ['barrel'] },
    { skill_id: 'fb.second', priority: 50, words: ['barrel'] },
    { skill_id: 'fb.low', priority: 95 },
  ],
  common_query: [
    { skill_id: 'cq.light', answers: { light: 'about 300000 kilometres per second' }, conf: 0.9 },
    { skill_id: 'cq.guess', answers: { light: 'fast, I think' }, conf: 0.6 },
  ],
  intent: true,
};
const SILENT: SkillPlan = {
  fallbacks: [{ skill_id: 'fb.silent', priority: 10, words: ['hush'] }],
  common_query: [{ skill_id: 'cq.silent', answers: { hush: 'hush' }, conf: 0.95 }],
};

const KINDS = [
  { stage: 'fallback high', utterance: 'zebra crossing', dispatch: 'ovos.skills.fallback.fb.high.request' },
  { stage: 'common query', utterance: 'what is the speed of light', dispatch: 'question:action.cq.light' },
  { stage: 'fallback medium', utterance: 'do a barrel roll', dispatch: 'ovos.skills.fallback.fb.first.request' },
  { stage: 'fallback low', utterance: 'blorf the zint', dispatch: 'ovos.skills.fallback.fb.low.request' },
] as const;
type Stage = (typeof KINDS)[number]['stage'];

const WORKLOADS = ['one session', 'two sessions', 'two sessions, a hung skill'] as const;
type Workload = (typeof WORKLOADS)[number];

interface Setup {
  readonly bus: 'ovos-messagebus' | 'ours';
  readonly stages: 'ovos-core' | 'ours';
  /** Our plugin's requests on its direct link to the daemon (the default), or on the bus (`daemon_url` null). */
  readonly link: boolean;
  readonly workload: Workload;
}

interface Frame {
  readonly at: number;
  readonly type: string;
  readonly data: Record<string, unknown>;
  readonly utteranceId: string | undefined;
}

/** A bus client seeing every frame, as an OVOS front end does. */
class Driver {
  readonly frames: Frame[] = [];
  readonly #waiters: Array<{ test: (f: Frame) => boolean; resolve: () => void }> = [];
  private constructor(readonly socket: WebSocket) {
    socket.on('message', (raw) => {
      let parsed: { type?: unknown; data?: unknown; context?: { utterance_id?: unknown } };
      try {
        parsed = JSON.parse(String(raw)) as typeof parsed;
      } catch {
        return;
      }
      if (typeof parsed.type !== 'string') return;
      const id = parsed.context?.utterance_id;
      const frame: Frame = { at: performance.now(), type: parsed.type, data: (parsed.data ?? {}) as Record<string, unknown>, utteranceId: typeof id === 'string' ? id : undefined };
      this.frames.push(frame);
      for (const waiter of this.#waiters.filter((w) => w.test(frame))) {
        this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    });
  }

  static async connect(url: string): Promise<Driver> {
    const socket = new WebSocket(url);
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    return new Driver(socket);
  }

  wait(test: (f: Frame) => boolean, what: string, ms = 30_000): Promise<void> {
    if (this.frames.some(test)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`benchmark: ${what} not seen within ${ms} ms`)), ms);
      this.#waiters.push({ test, resolve: () => (clearTimeout(timer), resolve()) });
    });
  }

  send(type: string, data: Record<string, unknown>, context: Record<string, unknown>): void {
    this.socket.send(JSON.stringify({ type, data, context }));
  }

  /** One more round trip through the bus: what was sent before it has arrived. */
  async barrier(): Promise<void> {
    const id = `barrier-${performance.now()}-${Math.random()}`;
    this.send('bench.barrier', { id }, {});
    await this.wait((f) => f.type === 'bench.barrier' && f.data['id'] === id, 'the barrier');
  }

  close(): void {
    this.socket.close();
  }
}

interface Outcome {
  readonly stage: Stage;
  readonly utteranceId: string;
  /** Utterance sent to the winner's dispatch seen; null without one. */
  readonly ms: number | null;
  readonly wrong: string | null;
}

/** The fallback and common-query plugins, ovos-core's and ours: the stages compared. */
const COMPARED = new Set(['ovos-fallback-pipeline-plugin', 'ovos-common-query-pipeline-plugin', 'ovos-contests-fallback-pipeline-plugin', 'ovos-contests-common-query-pipeline-plugin']);

let sequence = 0;
async function ask(driver: Driver, sessionId: string, kind: (typeof KINDS)[number]): Promise<Outcome> {
  const utteranceId = `bench-${++sequence}`;
  const t0 = performance.now();
  driver.send('recognizer_loop:utterance', { utterances: [kind.utterance], lang: 'en-US' }, { session: { session_id: sessionId, lang: 'en-US' }, utterance_id: utteranceId, source: 'bench', destination: 'skills' });
  const mine = (f: Frame): boolean => f.utteranceId === utteranceId;
  await driver.wait((f) => mine(f) && f.type === 'ovos.utterance.handled', `the handled of ${kind.utterance}`);
  await driver.barrier();
  const frames = driver.frames.filter(mine);
  const dispatches = frames.filter((f) => /^ovos\.skills\.fallback\.[^.]+(\.[^.]+)*\.request$/.test(f.type) || f.type.startsWith('question:action'));
  const handled = frames.filter((f) => f.type === 'ovos.utterance.handled').length;
  const spoken = frames.filter((f) => f.type === 'speak').length;
  const first = dispatches[0];
  const wrong =
    first === undefined ? 'no dispatch'
    : first.type !== kind.dispatch ? `dispatched ${first.type}`
    : dispatches.length !== 1 ? `${dispatches.length} dispatches`
    : handled !== 1 ? `${handled} handled`
    : spoken !== 1 ? `${spoken} speak`
    : null;
  return { stage: kind.stage, utteranceId, ms: first === undefined ? null : first.at - t0, wrong };
}

/** The daemon from dist with a config file of its own and a state directory of its own (never a user's). */
function startDaemon(args: readonly string[], config: Record<string, unknown>): DaemonProcess {
  const dir = mkdtempSync(join(tmpdir(), 'ovos-contests-bench-'));
  const file = join(dir, 'config.json');
  writeFileSync(file, JSON.stringify(config));
  return spawnDaemon(DAEMON_MAIN, [...args, '--config', file, '--no-example-skills', '--inspector-port', '0'], dir, 10_000);
}

async function run(setup: Setup, sitePackages: string): Promise<{ outcomes: Outcome[]; stageMs: Map<string, number>; wallMs: number }> {
  const stops: Array<() => Promise<void>> = [];
  const keep = <T extends { stop: () => Promise<void> }>(p: T): T => (stops.push(() => p.stop()), p);
  try {
    const port = await freePort();
    const ours = setup.stages === 'ours';
    const stagePort = await freePort();
    const daemonUrl = setup.link ? `ws://127.0.0.1:${stagePort}/contests` : null;
    // The stage link's token: made by the daemon there, read by the plugin (Protocol §8).
    const stageTokenFile = join(mkdtempSync(join(tmpdir(), 'ovos-contests-bench-token-')), 'stage-link-token');
    const { home, file } = mycroftHome({
      websocket: { host: '127.0.0.1', port },
      intents: {
        pipeline: ours ? CONTESTS_PIPELINE : OVOS_CORE_PIPELINE,
        'ovos-contests-fallback-pipeline-plugin': { daemon_url: daemonUrl, token_file: stageTokenFile },
        'ovos-contests-common-query-pipeline-plugin': { daemon_url: daemonUrl, token_file: stageTokenFile },
      },
    });
    let daemon: DaemonProcess | undefined;
    if (setup.bus === 'ours') {
      // The daemon is the bus; for ovos-core's own stages it is only the bus.
      daemon = keep(startDaemon(['--port', String(port), '--no-mycroft-conf'], { orchestrator: { takesUtterances: false, stagePort, stageTokenFile }, ...(ours ? {} : { commonQuery: { earlyStart: false } }) }));
      const started = daemon;
      await until(() => started.lines.some((l) => l['msg'] === 'OVOS bus listening'), 'our bus listening');
    } else {
      keep(await startMessagebus(port));
    }
    const core = keep(await startCore(port, home, ours ? sitePackages : null, true));
    if (ours && setup.bus === 'ovos-messagebus') {
      daemon = keep(startDaemon(['--mycroft-conf', file], { orchestrator: { stagePort, stageTokenFile } }));
      const started = daemon;
      await until(() => started.lines.some((l) => l['msg'] === 'bus connected'), 'the daemon joined ovos-messagebus');
    }
    keep(await startSkills(port, LIVE));
    const silent = setup.workload === 'two sessions, a hung skill' ? keep(await startSkills(port, SILENT)) : undefined;
    if (ours && setup.link) {
      const linked = daemon;
      await until(() => linked?.lines.some((l) => l['reason'] === 'stage_link_open') === true, 'the plugin linked to the daemon');
    }
    const driver = await Driver.connect(`ws://127.0.0.1:${port}/core`);
    stops.push(async () => driver.close());
    // Warm-up, every skill alive: each kind once, until ovos-core (and the daemon) know every skill.
    for (const kind of KINDS) {
      const deadline = performance.now() + 30_000;
      for (let outcome = await ask(driver, 'warm-up', kind); outcome.wrong !== null; outcome = await ask(driver, 'warm-up', kind)) {
        if (performance.now() > deadline) throw new Error(`benchmark: warm-up "${kind.utterance}" never decided right (${setup.bus}, ${setup.stages}): ${outcome.wrong}`);
      }
    }
    if (silent !== undefined) {
      await driver.barrier();
      silent.child.kill('SIGSTOP');
    }
    const outcomes: Outcome[] = [];
    const t0 = performance.now();
    if (setup.workload === 'one session') {
      for (let i = 0; i < ROUNDS * 2; i++) outcomes.push(await ask(driver, 'bench-a', KINDS[i % 4]!));
    } else {
      for (let i = 0; i < ROUNDS; i++) {
        const pair = await Promise.all([ask(driver, 'bench-a', KINDS[i % 4]!), ask(driver, 'bench-b', KINDS[(i + 2) % 4]!)]);
        outcomes.push(...pair);
      }
    }
    const wallMs = performance.now() - t0;
    // Time inside the compared stages, per utterance: every fallback and common-query match_* ovos-core called.
    const stageMs = new Map<string, number>();
    for (const call of stageCalls(core)) if (COMPARED.has(call.plugin)) stageMs.set(call.utteranceId, (stageMs.get(call.utteranceId) ?? 0) + call.ms);
    return { outcomes, stageMs, wallMs };
  } finally {
    for (const stop of stops.splice(0).reverse()) await stop().catch(() => undefined);
  }
}

const SETUPS: readonly Setup[] = WORKLOADS.flatMap((workload) =>
  (
    [
      ['ovos-messagebus', 'ovos-core', false],
      ['ovos-messagebus', 'ours', true],
      ['ovos-messagebus', 'ours', false],
      ['ours', 'ovos-core', false],
      ['ours', 'ours', true],
    ] as const
  ).map(([bus, stages, link]) => ({ bus, stages, link, workload })),
);

const label = (s: Setup): string =>
  `${s.stages === 'ours' ? 'our stages' : "ovos-core's stages"} on ${s.bus === 'ours' ? 'our bus' : 'ovos-messagebus'}${s.stages === 'ours' && !s.link ? ', requests on the bus' : ''}`;

export async function benchOvosCore(): Promise<Section> {
  const base = {
    id: 'ovos-core',
    title: 'ovos-core 2.1.1 side by side: its own fallback and common-query stages against ours, on ovos-messagebus and on our bus',
    params: { workloads: WORKLOADS, utterancesPerRun: ROUNDS * 2, live: LIVE, silent: SILENT, kinds: KINDS },
    columns: [
      { key: 'workload', header: 'workload', unit: 'text' },
      { key: 'setup', header: 'setup', unit: 'text' },
      { key: 'stage', header: 'deciding stage', unit: 'text' },
      { key: 'n', header: 'n', unit: 'count' },
      { key: 'stagesP50', header: 'in the stages p50', unit: 'ms' },
      { key: 'stagesP99', header: 'p99', unit: 'ms' },
      { key: 'vsCore', header: 'p50 vs ovos-core on ovos-messagebus', unit: 'text' },
      { key: 'e2eP50', header: 'utterance to dispatch p50', unit: 'ms' },
      { key: 'e2eP99', header: 'p99', unit: 'ms' },
      { key: 'wrong', header: 'wrong', unit: 'count' },
    ],
  } as const;
  const absent = ovosCoreAbsent();
  if (absent !== undefined) {
    return { ...base, rows: [], checks: [], notes: [`skipped: ${absent}`] };
  }
  const sitePackages = installPipelinePlugin();
  const rows: Array<Record<string, string | number | null>> = [];
  const checks: Check[] = [];
  const notes: string[] = [];
  const baseline = new Map<string, number>();
  for (const setup of SETUPS.filter((s) => ONLY === undefined || `${s.workload}, ${label(s)}`.includes(ONLY) || (s.bus === 'ovos-messagebus' && s.stages === 'ovos-core'))) {
    const { outcomes, stageMs, wallMs } = await run(setup, sitePackages);
    notes.push(`${setup.workload}, ${label(setup)}: ${ROUNDS * 2} utterances in ${(wallMs / 1000).toFixed(1)} s`);
    for (const { stage } of KINDS) {
      const of = outcomes.filter((o) => o.stage === stage);
      const e2e = summarize(of.flatMap((o) => (o.ms === null ? [] : [o.ms])));
      const inStages = summarize(of.map((o) => stageMs.get(o.utteranceId) ?? 0));
      const wrong = of.filter((o) => o.wrong !== null);
      const key = `${setup.workload}\u0000${stage}`;
      if (setup.bus === 'ovos-messagebus' && setup.stages === 'ovos-core') baseline.set(key, inStages.p50);
      const core = baseline.get(key);
      const ratio = core === undefined ? null : inStages.p50 / core;
      rows.push({
        workload: setup.workload,
        setup: label(setup),
        stage,
        n: of.length,
        stagesP50: round(inStages.p50, 1),
        stagesP99: round(inStages.p99, 1),
        vsCore: ratio === null ? '' : Math.abs(ratio - 1) < 0.005 ? '—' : ratio > 1 ? `${ratio.toFixed(2)}× slower` : `${(1 / ratio).toFixed(1)}× faster`,
        e2eP50: round(e2e.p50, 1),
        e2eP99: round(e2e.p99, 1),
        wrong: wrong.length,
      });
      const reasons = new Map<string, number>();
      for (const o of wrong) reasons.set(o.wrong ?? '', (reasons.get(o.wrong ?? '') ?? 0) + 1);
      const detail = wrong.length === 0 ? `${of.length} right` : [...reasons].map(([why, n]) => `${n} × ${why}`).join('; ');
      // Our targets are checked; what ovos-core's own stages get wrong is a finding, noted.
      if (setup.stages === 'ours') checks.push({ name: `${setup.workload}, ${label(setup)}, ${stage}: 0 wrong decisions`, ok: wrong.length === 0, detail });
      else if (wrong.length > 0) notes.push(`${setup.workload}, ${label(setup)}, ${stage}: ${wrong.length} of ${of.length} wrong — ${detail}`);
      if (setup.stages === 'ours' && setup.link && ratio !== null) {
        const target = setup.bus === 'ovos-messagebus' ? 1.2 : 0.2;
        checks.push({
          name: `${setup.workload}, ${label(setup)}, ${stage}: time in the stages, p50 ${setup.bus === 'ovos-messagebus' ? 'within 1.2× of' : 'at least 5× below'} ovos-core's on ovos-messagebus`,
          ok: ratio <= target,
          detail: `${round(inStages.p50, 1)} ms against ${round(core ?? 0, 1)} ms (${ratio.toFixed(2)}×)`,
        });
      }
    }
  }
  return { ...base, rows, checks, notes };
}
