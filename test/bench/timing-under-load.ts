/**
 * Benchmark 6 — timing guarantees of the daemon under its DEFAULT config (`daemonConfig()`: pipeline fallback_high,
 * common_query, fallback_medium, fallback_low; claim bound 125 ms, poll ceiling 500 ms, collection ceiling 5 s,
 * ping timeout 500 ms), over its real websocket bus (`startDaemon`), with every skill a `BusClient` in a child
 * process. Everything is observed from a driver client, as a voice front end sees it.
 *
 *  1. Lost and doubled common-query answers under load: bursts of 50, 200 and 400 questions at once (each its own
 *     session) — first one burst of 400 on the freshly started daemon (cold JIT), then, after ten questions one at
 *     a time, the bursts in increasing size (steady state). One common-query skill claims every question (declaring
 *     `latency_ms` 0, then 20) and answers after a random 2–40 ms (so many answers arrive after the declared
 *     latency); a willing fallback skill at priority 90 takes any question common query loses. Lost = the utterance did not end with the
 *     common_query match and that skill's answer spoken; doubled = more than one `ovos.utterance.handled`, speak or
 *     `ovos.intent.matched` for one utterance_id.
 *  2. Cost of common query for a question nobody claims, before a willing fallback skill at priority 60
 *     (fallback_medium): utterance → `<skill>:fallback`, one question at a time, when the only common-query skill
 *     says `can_answer: false`, and when it is silent (never pongs).
 *  3. Time to the next fallback skill when a skill's connection dies: the skill at priority 10 runs in its own child
 *     process, the next (willing, priority 20) in the shared one; the first process is SIGKILLed — by itself when
 *     pinged (mid-contest), or by the driver as the question is sent (just before it). Utterance → the next skill's
 *     dispatch; the reference is the next skill alone (the dead one already gone).
 */
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { pino } from 'pino';
import type { Bus } from '../../src/bus/bus.js';
import { createMessage, utteranceIdOf, type Message } from '../../src/bus/message.js';
import type { Logger } from '../../src/log/logger.js';
import { startRemoteSkills, type CommonQuerySkillPlan, type FallbackSkillPlan } from './remote-skills.js';
import type { Cell, Check, Section } from './report.js';
import { collectGarbage, daemonConfig, settle, startDaemonRig, waitForRegistrations, waitUntil, type DaemonRig } from './rig.js';
import { formatMs, summarize } from './stats.js';

const CONFIG = daemonConfig();
const HANDLED = 'ovos.utterance.handled';
const SPEAK = 'ovos.utterance.speak';
const MATCHED = 'ovos.intent.matched';
const CQ_DISPATCH = 'common_query:common_query';

// 1. Lost answers.
const QUESTION = 'what is the speed of light';
const CQ_SKILL = 'cq-answers';
const CQ_ANSWER = `answer from ${CQ_SKILL}`;
const ANSWER_DELAY_MS: readonly [number, number] = [2, 40];
const DECLARED_LATENCIES_MS = [0, 20] as const;
const BURSTS: ReadonlyArray<readonly [size: number, repeats: number]> = [
  [50, 4],
  [200, 3],
  [400, 3],
];
/** The first burst on a fresh daemon. */
const COLD_BURST = 400;
const CATCH_ALL = 'fb-catch-all-90';
const BURST_TIMEOUT_MS = 20_000;
/** After each level's bursts: for a duplicate handled or speak to show up. */
const GRACE_MS = 300;

// 2. Unclaimed question.
const UNCLAIMED = 'what is the airspeed velocity of an unladen swallow';
const MEDIUM_SKILL = 'fb-medium-60';
const SEQUENTIAL = 50;
const WARMUP = 5;
const UNCLAIMED_TARGET_MS = 150;

// 3. Dead connection.
const COMMAND = 'do a barrel roll';
const DYING_SKILL = 'fb-dying-10';
const NEXT_SKILL = 'fb-next-20';
const DEATHS = 15;

type Bounds = { readonly p50: number; readonly p99: number; readonly max: number; readonly n: number };

/** Everything one utterance caused on the bus, as the driver saw it (times in ms since it was published). */
interface Trace {
  readonly utteranceId: string;
  readonly sentAt: number;
  /** message type → when it was first seen. */
  readonly first: Map<string, number>;
  /** message type → how many times. */
  readonly count: Map<string, number>;
  readonly spoken: string[];
  /** `pipeline_id` of every `ovos.intent.matched`. */
  readonly matchedBy: string[];
  /** skill_id of every `ovos.common_query.pong` with `can_answer: true`. */
  readonly claimedBy: string[];
}

/** The driver's view: one subscription for the whole phase, so messages after `handled` (a double) still count. */
class Tracker {
  readonly #bus: Bus;
  readonly #traces = new Map<string, Trace>();
  readonly #waiting = new Map<string, () => void>();
  readonly #unsubscribe: () => void;

  constructor(bus: Bus) {
    this.#bus = bus;
    this.#unsubscribe = bus.subscribe((message) => this.#observe(message));
  }

  /** Publish one utterance in its own session; resolves at its first `ovos.utterance.handled` (never rejects). */
  ask(utterance: string, utteranceId: string, sessionId: string): { trace: Trace; handled: Promise<void> } {
    const trace: Trace = { utteranceId, sentAt: performance.now(), first: new Map(), count: new Map(), spoken: [], matchedBy: [], claimedBy: [] };
    this.#traces.set(utteranceId, trace);
    const handled = new Promise<void>((resolve) => this.#waiting.set(utteranceId, resolve));
    const context = { source: 'bench-driver', destination: 'orchestrator', session: { session_id: sessionId }, utterance_id: utteranceId };
    this.#bus.publish(createMessage('ovos.utterance.handle', { utterances: [utterance], lang: 'en-US' }, context));
    return { trace, handled };
  }

  #observe(message: Message): void {
    const utteranceId = utteranceIdOf(message);
    if (utteranceId === undefined) return;
    const trace = this.#traces.get(utteranceId);
    if (trace === undefined) return;
    const at = performance.now() - trace.sentAt;
    if (!trace.first.has(message.type)) trace.first.set(message.type, at);
    trace.count.set(message.type, (trace.count.get(message.type) ?? 0) + 1);
    if (message.type === SPEAK) trace.spoken.push(String(message.data['utterance']));
    else if (message.type === MATCHED) trace.matchedBy.push(String(message.data['pipeline_id']));
    else if (message.type === 'ovos.common_query.pong' && message.data['can_answer'] === true) trace.claimedBy.push(String(message.data['skill_id']));
    else if (message.type === HANDLED) {
      this.#waiting.get(utteranceId)?.();
      this.#waiting.delete(utteranceId);
    }
  }

  close(): void {
    this.#unsubscribe();
    for (const resolve of this.#waiting.values()) resolve();
    this.#waiting.clear();
  }
}

/** Resolves when every promise has, or after `ms` (the timer is always cleared). */
async function allWithin(promises: ReadonlyArray<Promise<void>>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([Promise.all(promises).then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function bounds(samples: readonly number[]): Bounds {
  const s = summarize(samples);
  return { p50: s.p50, p99: s.p99, max: s.max, n: s.n };
}

/** The daemon's log at its default level (info), not printed: only the `reason` and `closed_by` values are tallied. */
function tallyingLogger(): { logger: Logger; tally: Map<string, number> } {
  const tally = new Map<string, number>();
  const pattern = /"(reason|closed_by)":"([^"]+)"/g;
  const logger = pino(
    { level: CONFIG.log.level },
    {
      write: (line: string) => {
        for (const [, key, value] of line.matchAll(pattern)) tally.set(`${key}=${value}`, (tally.get(`${key}=${value}`) ?? 0) + 1);
      },
    },
  );
  return { logger, tally };
}

// ───────────────────────────── 1. lost and doubled common-query answers ─────────────────────────────

interface BurstLevel {
  readonly size: number;
  /** The first burst after the daemon started (one question before it): its JIT is still cold. */
  readonly cold: boolean;
  readonly questions: number;
  readonly lost: number;
  readonly lostHow: Record<string, number>;
  readonly doubled: number;
  readonly claimed: number;
  /** Answers the skill itself took longer than the declared latency_ms to send (request in → response out). */
  readonly lateAnswers: number;
  /** Requests the skill answered. */
  readonly answered: number;
  readonly speak: Bounds;
  readonly wallMs: number;
  /** This process (bus server + daemon + driver) during the level's bursts: event-loop delay max and utilization. */
  readonly loopDelayMaxMs: number;
  readonly loopUtilization: number;
  /** The daemon's log lines of this level, tallied by `reason` / `closed_by`. */
  readonly tally: Record<string, number>;
}

interface LostResult {
  readonly declaredMs: number;
  readonly levels: BurstLevel[];
}

/** Why an utterance did not end with the common-query answer, or null when it did. */
function lostHow(trace: Trace): string | null {
  if (!trace.count.has(HANDLED)) return 'never_handled';
  const byCq = trace.matchedBy.includes('common_query') && trace.count.has(CQ_DISPATCH) && trace.spoken.includes(CQ_ANSWER);
  if (byCq) return null;
  if (trace.count.has(`${CATCH_ALL}:fallback`)) return trace.claimedBy.includes(CQ_SKILL) ? 'fallback_after_claim' : 'fallback_unclaimed';
  if (trace.count.has('ovos.intent.unmatched')) return 'unmatched';
  if (trace.matchedBy.includes('common_query')) return 'cq_match_without_answer';
  return 'other';
}

const isDoubled = (trace: Trace): boolean => (trace.count.get(HANDLED) ?? 0) > 1 || trace.spoken.length > 1 || trace.matchedBy.length > 1;

/** `repeats` bursts of `size` questions published at once, each its own session; everything tallied over them. */
async function burstLevel(rig: DaemonRig, tracker: Tracker, tally: Map<string, number>, declaredMs: number, size: number, repeats: number, cold: boolean): Promise<BurstLevel> {
  tally.clear();
  await rig.skills.answerDelays(); // what came before is not this level's
  const traces: Trace[] = [];
  let wallMs = 0;
  let loopDelayMaxMs = 0;
  let busy = 0;
  let total = 0;
  for (let r = 0; r < repeats; r++) {
    await collectGarbage();
    const id = `lost${declaredMs}-${cold ? 'cold' : 'b'}${size}-${r}`;
    const lag = monitorEventLoopDelay({ resolution: 1 });
    lag.enable();
    const elu = performance.eventLoopUtilization();
    const started = performance.now();
    const asked = Array.from({ length: size }, (_, i) => tracker.ask(QUESTION, `${id}-u${i}`, `${id}-s${i}`));
    await allWithin(asked.map((a) => a.handled), BURST_TIMEOUT_MS);
    wallMs = Math.max(wallMs, performance.now() - started);
    const used = performance.eventLoopUtilization(elu);
    lag.disable();
    loopDelayMaxMs = Math.max(loopDelayMaxMs, lag.max / 1e6);
    busy += used.active;
    total += used.active + used.idle;
    traces.push(...asked.map((a) => a.trace));
  }
  await sleep(GRACE_MS); // late duplicates (a second handled or speak) would show up here
  const how: Record<string, number> = {};
  for (const trace of traces) {
    const reason = lostHow(trace);
    if (reason !== null) how[reason] = (how[reason] ?? 0) + 1;
  }
  const answerTimes = (await rig.skills.answerDelays())[CQ_SKILL] ?? [];
  return {
    size,
    cold,
    questions: traces.length,
    lost: Object.values(how).reduce((a, b) => a + b, 0),
    lostHow: how,
    doubled: traces.filter(isDoubled).length,
    claimed: traces.filter((t) => t.claimedBy.includes(CQ_SKILL)).length,
    answered: answerTimes.length,
    lateAnswers: answerTimes.filter((ms) => ms > declaredMs).length,
    speak: bounds(traces.flatMap((t) => (t.first.has(SPEAK) ? [t.first.get(SPEAK)!] : []))),
    wallMs,
    loopDelayMaxMs,
    loopUtilization: total === 0 ? 0 : busy / total,
    tally: Object.fromEntries(tally),
  };
}

async function lostAnswers(declaredMs: number): Promise<LostResult> {
  const { logger, tally } = tallyingLogger();
  const commonQuery: CommonQuerySkillPlan[] = [{ skillId: CQ_SKILL, latencyMs: declaredMs, conf: 0.8, answerDelayMs: ANSWER_DELAY_MS }];
  const fallback: FallbackSkillPlan[] = [{ skillId: CATCH_ALL, priority: 90, willing: true }];
  const rig = await startDaemonRig(CONFIG, { fallback, commonQuery }, logger);
  const tracker = new Tracker(rig.driver);
  try {
    const levels: BurstLevel[] = [];
    // A fresh daemon: one question (its roster learns the skill), then the largest burst at once — JIT still cold.
    await tracker.ask(QUESTION, `lost${declaredMs}-first`, `lost${declaredMs}-first`).handled;
    levels.push(await burstLevel(rig, tracker, tally, declaredMs, COLD_BURST, 1, true));
    // Then steady state: a few questions one at a time, and the bursts in increasing size.
    for (let i = 0; i < 10; i++) await tracker.ask(QUESTION, `lost${declaredMs}-warm-u${i}`, `lost${declaredMs}-warm-s${i}`).handled;
    for (const [size, repeats] of BURSTS) levels.push(await burstLevel(rig, tracker, tally, declaredMs, size, repeats, false));
    return { declaredMs, levels };
  } finally {
    tracker.close();
    await rig.close();
  }
}

// ───────────────────────────── 2. unclaimed question before a medium fallback skill ─────────────────────────────

interface UnclaimedResult {
  readonly label: string;
  readonly cq: readonly CommonQuerySkillPlan[];
  readonly dispatch: Bounds;
  readonly missed: number;
}

async function unclaimed(label: string, cq: readonly CommonQuerySkillPlan[]): Promise<UnclaimedResult> {
  const rig = await startDaemonRig(CONFIG, { fallback: [{ skillId: MEDIUM_SKILL, priority: 60, willing: true }], commonQuery: cq });
  const tracker = new Tracker(rig.driver);
  const dispatch = `${MEDIUM_SKILL}:fallback`;
  try {
    const id = `unclaimed-${label.replace(/\W+/g, '_')}`;
    for (let i = 0; i < WARMUP; i++) await tracker.ask(UNCLAIMED, `${id}-warm-u${i}`, `${id}-warm-s${i}`).handled;
    await collectGarbage();
    const samples: number[] = [];
    let missed = 0;
    for (let i = 0; i < SEQUENTIAL; i++) {
      const { trace, handled } = tracker.ask(UNCLAIMED, `${id}-u${i}`, `${id}-s${i}`);
      await allWithin([handled], 5_000);
      const at = trace.first.get(dispatch);
      if (at === undefined) missed++;
      else samples.push(at);
    }
    return { label, cq, dispatch: bounds(samples), missed };
  } finally {
    tracker.close();
    await rig.close();
  }
}

// ───────────────────────────── 3. a fallback skill's connection dies ─────────────────────────────

interface DeathRun extends Bounds {
  /** Runs in which the daemon pinged the dying skill (it was still in the pool). */
  readonly pinged: number;
  readonly missed: number;
  /** The dead skill's ping → the next skill's ping, as the driver saw them: what the death cost. */
  readonly moveOn: Bounds;
}

interface DeathResult {
  readonly reference: Bounds;
  readonly midContest: DeathRun;
  readonly beforeQuestion: DeathRun;
  /** Fork → registered, per dying skill process (what the run count is bounded by). */
  readonly spawnMs: Bounds;
}

async function deaths(): Promise<DeathResult> {
  const rig: DaemonRig = await startDaemonRig(CONFIG, { fallback: [{ skillId: NEXT_SKILL, priority: 20, willing: true }] });
  const tracker = new Tracker(rig.driver);
  const dispatch = `${NEXT_SKILL}:fallback`;
  const dyingPing = `${DYING_SKILL}.fallback.ping`;
  const registry = rig.system.fallback.registry;
  const spawnTimes: number[] = [];
  try {
    const reference: number[] = [];
    for (let i = 0; i < WARMUP + SEQUENTIAL; i++) {
      const { trace, handled } = tracker.ask(COMMAND, `ref-u${i}`, `ref-s${i}`);
      await allWithin([handled], 5_000);
      if (i >= WARMUP && trace.first.has(dispatch)) reference.push(trace.first.get(dispatch)!);
    }

    const nextPing = `${NEXT_SKILL}.fallback.ping`;
    const run = async (variant: 'mid' | 'before'): Promise<DeathRun> => {
      const samples: number[] = [];
      const moveOn: number[] = [];
      let pinged = 0;
      let missed = 0;
      for (let i = 0; i < DEATHS; i++) {
        const spawned = performance.now();
        const dying = await startRemoteSkills({ url: rig.daemon.url, fallback: [{ skillId: DYING_SKILL, priority: 10, willing: false, onPing: 'die' }], commonQuery: [] });
        await waitForRegistrations(rig.system, 2);
        spawnTimes.push(performance.now() - spawned);
        await settle();
        // 'before': killed by the driver, the question sent in the same tick — whichever the daemon sees first.
        if (variant === 'before') process.kill(dying.pid, 'SIGKILL');
        const { trace, handled } = tracker.ask(COMMAND, `${variant}-u${i}`, `${variant}-s${i}`);
        await allWithin([handled], 5_000);
        const at = trace.first.get(dispatch);
        if (at === undefined) missed++;
        else samples.push(at);
        if (trace.first.has(dyingPing)) pinged++;
        if (trace.first.has(dyingPing) && trace.first.has(nextPing)) moveOn.push(trace.first.get(nextPing)! - trace.first.get(dyingPing)!);
        await dying.stop(); // the process is dead either way: this waits for its exit
        await waitUntil(() => registry.availableFor('default').size === 1, 5_000, 'the dead skill deregistered');
      }
      return { ...bounds(samples), pinged, missed, moveOn: bounds(moveOn) };
    };
    const midContest = await run('mid');
    const beforeQuestion = await run('before');
    return { reference: bounds(reference), midContest, beforeQuestion, spawnMs: bounds(spawnTimes) };
  } finally {
    tracker.close();
    await rig.close();
  }
}

// ───────────────────────────── the section ─────────────────────────────

const pct = (part: number, whole: number): string => `${whole === 0 ? 0 : Math.round((part / whole) * 100)}%`;
const describe = (b: Bounds): string => `p50 ${formatMs(b.p50)} ms, p99 ${formatMs(b.p99)} ms, max ${formatMs(b.max)} ms (n=${b.n})`;

export async function benchTimingUnderLoad(): Promise<Section> {
  const lost: LostResult[] = [];
  for (const declared of DECLARED_LATENCIES_MS) lost.push(await lostAnswers(declared));
  const decline = await unclaimed('only CQ skill says can_answer:false', [{ skillId: 'cq-declines', latencyMs: 0, conf: 0, mode: 'decline' }]);
  const silent = await unclaimed('only CQ skill is silent (never pongs)', [{ skillId: 'cq-silent', latencyMs: 0, conf: 0, mode: 'silent' }]);
  const death = await deaths();
  const pingTimeoutMs = CONFIG.fallback.pingTimeoutMs;
  const claimBoundMs = CONFIG.commonQuery.pollClaimBoundMs;

  const rows: Array<Record<string, Cell>> = [];
  for (const result of lost) {
    for (const level of result.levels) {
      rows.push({
        scenario: `1. CQ answers, latency_ms ${result.declaredMs}, ${level.size} questions at once${level.cold ? ', first burst after start' : ''}`,
        n: level.questions,
        mark: 'utterance → speak',
        p50: level.speak.p50,
        p99: level.speak.p99,
        max: level.speak.max,
        lost: level.lost,
        doubled: level.doubled,
        detail: `${level.lateAnswers}/${level.answered} answers > ${result.declaredMs} ms`,
        target: '0 lost, 0 doubled',
        loopLag: `${formatMs(level.loopDelayMaxMs)} ms, ${(level.loopUtilization * 100).toFixed(0)}% busy`,
        lostHow: JSON.stringify(level.lostHow),
        claimed: level.claimed,
        burstWallMs: level.wallMs,
        daemonLog: JSON.stringify(level.tally),
      });
    }
  }
  for (const r of [decline, silent]) {
    rows.push({
      scenario: `2. unclaimed question, ${r.label}; fallback at 60`,
      n: r.dispatch.n,
      mark: 'utterance → fallback dispatch',
      p50: r.dispatch.p50,
      p99: r.dispatch.p99,
      max: r.dispatch.max,
      lost: r.missed,
      doubled: null,
      detail: null,
      target: `p99 ≤ ${UNCLAIMED_TARGET_MS} ms`,
    });
  }
  const deathRows: Array<[string, Bounds & Partial<DeathRun>, string]> = [
    ['3. reference: next skill (20) alone, the dead one already gone', death.reference, 'one round trip'],
    ['3. skill at 10 pinged, its process dies (SIGKILL) mid-contest', death.midContest, `max < ${pingTimeoutMs} ms`],
    ['3. skill at 10 killed (SIGKILL) as the question is sent', death.beforeQuestion, `max < ${pingTimeoutMs} ms`],
  ];
  for (const [scenario, b, target] of deathRows) {
    rows.push({
      scenario,
      n: b.n,
      mark: 'utterance → next skill dispatch',
      p50: b.p50,
      p99: b.p99,
      max: b.max,
      lost: b.missed ?? null,
      doubled: null,
      detail: b.pinged === undefined || b.moveOn === undefined ? null : `pinged ${b.pinged}/${DEATHS}; → next ping p50 ${formatMs(b.moveOn.p50)} ms`,
      target,
    });
  }

  const checks: Check[] = [];
  for (const result of lost) {
    const at = (l: BurstLevel): string => `${l.size}${l.cold ? ' (first burst)' : ''}`;
    const lostDetail = result.levels.map((l) => `${l.lost}/${l.questions} at ${at(l)}${l.lost > 0 ? ` ${JSON.stringify(l.lostHow)}` : ''}`).join(', ');
    checks.push({ name: `1. latency_ms ${result.declaredMs}: no common-query answer lost`, ok: result.levels.every((l) => l.lost === 0), detail: `lost ${lostDetail}` });
    checks.push({
      name: `1. latency_ms ${result.declaredMs}: no utterance handled, spoken or matched twice`,
      ok: result.levels.every((l) => l.doubled === 0),
      detail: `doubled ${result.levels.map((l) => `${l.doubled} at ${at(l)}`).join(', ')}`,
    });
    const late = result.levels.reduce((n, l) => n + l.lateAnswers, 0);
    const answered = result.levels.reduce((n, l) => n + l.answered, 0);
    checks.push({
      name: `1. latency_ms ${result.declaredMs}: premise — answers come after the declared latency`,
      ok: late > 0,
      detail: `${late}/${answered} (${pct(late, answered)}) sent by the skill more than ${result.declaredMs} ms after it got the request`,
    });
  }
  checks.push({
    name: `2a. unclaimed, CQ skill declines: p99 ≤ ${UNCLAIMED_TARGET_MS} ms`,
    ok: decline.missed === 0 && decline.dispatch.p99 <= UNCLAIMED_TARGET_MS,
    detail: `${describe(decline.dispatch)}, missed ${decline.missed}; the ${claimBoundMs} ms claim bound ${decline.dispatch.p50 < claimBoundMs ? 'not ' : ''}waited at p50`,
  });
  checks.push({
    name: `2b. unclaimed, CQ skill silent: p99 ≤ ${UNCLAIMED_TARGET_MS} ms`,
    ok: silent.missed === 0 && silent.dispatch.p99 <= UNCLAIMED_TARGET_MS,
    detail: `${describe(silent.dispatch)}, missed ${silent.missed}`,
  });
  checks.push({
    name: `3a. dead mid-contest: the next skill is asked without the ${pingTimeoutMs} ms ping-timeout wait (every run)`,
    ok: death.midContest.missed === 0 && death.midContest.pinged === DEATHS && death.midContest.max < pingTimeoutMs,
    detail: `${describe(death.midContest)}; pinged before dying ${death.midContest.pinged}/${DEATHS}; its ping → the next ping ${describe(death.midContest.moveOn)}; reference ${describe(death.reference)}`,
  });
  checks.push({
    name: `3b. killed as the question is sent: no ${pingTimeoutMs} ms ping-timeout wait (every run)`,
    ok: death.beforeQuestion.missed === 0 && death.beforeQuestion.max < pingTimeoutMs,
    detail: `${describe(death.beforeQuestion)}; dead skill still pinged in ${death.beforeQuestion.pinged}/${DEATHS}, its ping → the next ping ${describe(death.beforeQuestion.moveOn)}`,
  });

  return {
    id: 'timing-under-load',
    title: '6. Timing under load on the daemon\'s default config (real websocket bus; skills in child processes)',
    params: {
      config: {
        pipeline: CONFIG.pipeline,
        stages: CONFIG.fallback.stages,
        pingTimeoutMs,
        pollClaimBoundMs: claimBoundMs,
        pollWindowMs: CONFIG.commonQuery.pollWindowMs,
        collectionCeilingMs: CONFIG.commonQuery.collectionCeilingMs,
        logLevel: `${CONFIG.log.level} (lines tallied, not printed)`,
      },
      lost: {
        question: QUESTION,
        skill: { skillId: CQ_SKILL, conf: 0.8, answerDelayMs: ANSWER_DELAY_MS, declaredLatenciesMs: DECLARED_LATENCIES_MS },
        catchAll: { skillId: CATCH_ALL, priority: 90 },
        coldBurst: COLD_BURST,
        bursts: BURSTS,
        graceMs: GRACE_MS,
      },
      unclaimed: { question: UNCLAIMED, fallback: { skillId: MEDIUM_SKILL, priority: 60 }, sequential: SEQUENTIAL, warmup: WARMUP },
      deaths: { command: COMMAND, dying: { skillId: DYING_SKILL, priority: 10 }, next: { skillId: NEXT_SKILL, priority: 20 }, runs: DEATHS, spawnMs: death.spawnMs },
    },
    columns: [
      { key: 'scenario', header: 'scenario', unit: 'text' },
      { key: 'n', header: 'n', unit: 'count' },
      { key: 'mark', header: 'timed', unit: 'text' },
      { key: 'p50', header: 'p50 ms', unit: 'ms' },
      { key: 'p99', header: 'p99 ms', unit: 'ms' },
      { key: 'max', header: 'max ms', unit: 'ms' },
      { key: 'lost', header: 'lost', unit: 'count' },
      { key: 'doubled', header: 'doubled', unit: 'count' },
      { key: 'detail', header: 'detail', unit: 'text' },
      { key: 'target', header: 'target', unit: 'text' },
      { key: 'loopLag', header: 'daemon loop: max delay, busy', unit: 'text' },
    ],
    rows,
    notes: [
      'daemon = startDaemon(DEFAULT_CONFIG with port 0, no example skills); every skill a BusClient in a child process; timed from the driver client',
      `1: bursts of N questions published at once, each its own session (a fresh daemon per latency_ms: one question, a first burst of ${COLD_BURST}, ten questions one at a time, then the bursts by increasing size); one CQ skill claims every question and answers after ${ANSWER_DELAY_MS[0]}–${ANSWER_DELAY_MS[1]} ms; a willing fallback skill at 90 takes any question CQ loses. lost = not ended with the common_query match and that answer spoken; doubled = >1 handled, speak or intent.matched per utterance_id (counted ${GRACE_MS} ms past each level's last burst)`,
      '1: a lost claim shows in the daemon log (rows\' daemonLog in the JSON) as closed_by=no_claimant, then its pong dropped as no_live_contest',
      '1: "answers > N ms" = answers the skill itself sent more than the declared latency_ms after it got the request (they reach the daemon later still); "daemon loop" = this process (bus server, daemon, driver) during the bursts: max event-loop delay and share of time busy',
      `2: utterance → <skill>:fallback of a willing skill at priority 60, one at a time (${WARMUP} warm-up); a silent skill is invisible to the plugin, so (b) is also the cost with no CQ skill that ever ponged`,
      '2, 3: "lost" = runs that did not reach the expected dispatch',
      '3: the dying skill (priority 10) is a child process of its own, re-forked for every run; "mid-contest" = it SIGKILLs itself when pinged; "as the question is sent" = the driver SIGKILLs it and publishes the question in the same tick (the daemon may see either first)',
    ],
    checks,
  };
}
