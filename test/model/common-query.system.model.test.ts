/**
 * Model-based test of the common query plugin THROUGH THE WHOLE SYSTEM: OVOS-COMMON-QUERY-1 §5 (early start,
 * cache keying and eviction), §6.2/§6.3 (poll, claim, early close), §7.2 (collection window sized from latency_ms,
 * early termination, hard ceiling), §8 (minimum confidence, fast win, selection), §9 (Match or None → fallback),
 * §10 (the handler speaks the answer), and OVOS-PIPELINE-1 §6 (exactly one ovos.utterance.handled per utterance).
 *
 * WHY. Our scripted skills used to answer instantly and declare generous latencies, the model suites drove the bare
 * machine with recorders, and the model encoded our reading instead of the text: a skill declaring latency_ms 0 or
 * 20 whose answer came a bit later was dropped because the window was exactly latency_ms. Here:
 *  - THE MODEL is abstract and written from the spec's words and the rules documented in the header of
 *    machines/common-query/common-query.machine.ts (the choices the spec leaves open) — never from the code. It is an
 *    XState machine without `after` (createTestModel rejects a machine with delayed transitions): time is an
 *    explicit TICK event that moves the clock to the next boundary value (T−1, T, T+1) of: the claim bound (125 ms),
 *    the poll ceiling (500 ms), the initial collection window (the declared latency_ms + the 50 ms transport
 *    allowance — latency_ms a model PARAMETER the real reply time may exceed: 0, 20; 3000 when omitted), the
 *    settle (one round trip after the first surviving answer) and the collection ceiling (5000 ms after the
 *    requests).
 *    The model's state is abstract: phase (idle / polling / collecting / decided), what each skill said (pong, reply,
 *    connection), the time as one of those boundary values, and the outcome the RULES give (who wins, or None →
 *    the catch-all fallback speaks).
 *  - THE SYSTEM UNDER TEST is everything: createHarness (orchestrator + supervisor + fallback and common-query
 *    plugins) on a LocalBus and a ManualClock, with the default pipeline
 *    ['fallback_high', 'common_query', 'fallback_medium', 'fallback_low'] and a catch-all fallback skill (priority
 *    100, always willing), so "no answer" is visible as the catch-all speaking. Skills are puppets
 *    (test/support/system-replay.ts): they pong and respond, derived via reply, exactly when the model says.
 *  - AT EVERY STEP the replay compares what an observer sees on the wire (times in ms since the question): the
 *    ovos.common_query.ping, which `<skill>:common_query` requests went out and when, ovos.intent.matched,
 *    ovos.utterance.speak, and ovos.utterance.handled — EXACTLY ONE per utterance on every path, also when a skill's
 *    connection closes mid-contest; then it runs the clock on to be sure nothing more happens.
 *
 * TIME SEMANTICS (model and replay agree): a deadline at T fires when the clock reaches T, before anything a skill
 * sends at T (a skill's message needs a bus round trip; a zero-delay timer does not). So "a reply at T" arrives just
 * after the deadline T: a pong at the claim bound is too late, a response at the ceiling is too late, and a
 * response at the initial window's end arrives after the window has passed.
 *
 * THE RULES the model applies (spec text + the machine header's documented choices):
 *  §6.3 poll — closes at the first of: (1) a claim is in hand and every skill on the plugin's roster (every skill
 *       that has ever ponged, a snapshot taken when the contest starts) has answered this poll, true or false, or is
 *       gone; (2) the claim bound, 125 ms — unless a skill known to answer every poll (it declined the last
 *       PROMOTE_AFTER polls) is outstanding: then it is waited for, and the poll closes when the last such skill
 *       answers or is gone; (3) the ceiling, 500 ms. A pong before the close counts. No claimant, or every claimant
 *       gone → None at once (§9).
 *  gone — a closed connection takes its skills off the roster; a running contest stops waiting for them: heard from
 *       in the poll (rules 1 and 2 re-checked at once), declining in collection (§7.2, checked at once).
 *  §7.1 requests to every claimant at the instant the poll closes, in claim order.
 *  §7.2 initial window W = the largest claimant latency_ms + the bus between skill and plugin: the time its pong
 *       took after the ping, at least 50 ms (omitted → 3000), clamped to the ceiling. The collection
 *       closes at the first of: every claimant responded or is gone (a response without answer counts); a fast win
 *       (§8 step 3: conf ≥ 0.9 and ≥ min); W has passed and a surviving answer (§8 steps 1–2: answer with conf ≥ 0.5)
 *       is in hand and one round trip (the largest claimant pong delay, at least 50 ms) has passed since the first
 *       one arrived (our choice, src/plugins/README.md: answers produced together are heard together); the ceiling, 5000 ms
 *       after the requests. So an answer arriving before the ceiling is never lost while no other survivor is in
 *       hand, nor one arriving within a round trip of the first.
 *  §8   winner: the fast-win survivor, else the highest-conf survivor (earlier arrival first); none → None (§9) →
 *       fallback_medium, fallback_low → the catch-all speaks. A Match → ovos.intent.matched (common_query) and the
 *       handler speaks slots.answer (§10). Either way one ovos.utterance.handled, at the decision instant.
 *  §5   early start: the ping goes out when the utterance arrives; the cache is keyed by (session, utterance) and the
 *       utterance_id; match consumes it; a new utterance in the session evicts it — the match then runs its own
 *       contest (a new ping) at match time.
 *
 * PARAMETER SETS (describe blocks) and the paths each model generates (shortest paths to every model state, each
 * extended by TICKs until the model has decided, duplicates removed; counted by the first test of each block):
 *   (a) one skill, fresh roster, latency_ms 0 ................................................ 45 paths
 *       one skill, fresh roster, latency_ms 20 ............................................... 45 paths
 *   (b) two skills, the second answers later with higher conf or never; latency_ms 0 + 20 ..... 272 paths
 *       latency_ms 20 + omitted (initial window 3000) ....................................... 272 paths
 *   (c) roster learnt by a warm-up question; a skill that sends can_answer:false ............. 1352 paths
 *       (responses only at the instant of the request: collection timing is (a) and (b)'s subject)
 *   (d) the same text asked twice in one session, early start behind fallback_high holding its pong
 *       200 ms .................................................................................. 10 paths
 *       100 ms .................................................................................. 10 paths
 *   (e) a skill on its own connection that closes at any point ............................... 1826 paths
 * Total 3832 paths; the file runs in about 25 s on 2 cores (npx vitest run test/model/common-query.system.model.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { assign, setup, transition, type AnyMachineSnapshot, type AnyStateMachine, type EventObject, type MachineContext } from 'xstate';
import { createTestModel } from 'xstate/graph';
import { utteranceIdOf } from '../../src/bus/message.js';
import { PROMOTE_AFTER } from '../../src/plugins/common-query/common-query.plugin.js';
import { createHarness, fallbackSkill, type Harness } from '../support/harness.js';
import { driveClock, holdingFallbackSkill, puppetCqSkill, wireLog, type ClockDriver, type PuppetCqSkill, type Timed } from '../support/system-replay.js';
import { sampled } from '../support/model-sample.js';

// ---- Appendix A values and the documented bounds (config defaults) ---------------------------------------------

const CLAIM_BOUND = 125; // Appendix A pong bound 100 ms + transport allowance (config pollClaimBoundMs)
const POLL_CEILING = 500; // Appendix A poll-window ceiling
const INITIAL_WINDOW = 3_000; // Appendix A collection-window initial (no latency_ms)
const ALLOWANCE = 50; // transport allowance added to a declared latency_ms (config collectionAllowanceMs)
const CEILING = 5_000; // Appendix A collection-window ceiling
const MIN_CONF = 0.5; // Appendix A minimum self-confidence
const FAST_WIN = 0.9; // Appendix A fast-win threshold

const QUESTION = 'what is the capital of france';
const WARM_UP = 'who invented electricity';
const CATCH_ALL = 'catch-all';
const CATCH_ALL_SPEAKS = 'catch-all says hi'; // test/support/harness.ts fallbackSkill
const SPEC = 'OVOS-COMMON-QUERY-1';

const answerText = (skill: string, conf: number): string => `${skill}: Paris (${conf})`;

// ---- The single-question model (parameter sets a, b, c, e) -------------------------------------------------------

interface Reply {
  /** null: a response without `answer` (§7.1 "cannot produce an answer after all"). */
  readonly conf: number | null;
}

interface SkillSpec {
  readonly id: string;
  /** `latency_ms` in its pongs; omitted when undefined. */
  readonly latencyMs?: number;
  /** What the warm-up question taught the roster: not seen / claimed (known) / said can_answer:false (answering). */
  readonly roster: 'unknown' | 'known' | 'answering';
  /** The `can_answer` values it may send in the modelled poll (never pong = silent). */
  readonly pongs: readonly boolean[];
  /** Pong only at the instant of the ping (keeps path counts down where pong timing is not the point). */
  readonly pongAtOnceOnly?: boolean;
  /** The responses it may send (conf). */
  readonly replies: readonly Reply[];
  /** Respond only at the instant of the request (keeps path counts down where response timing is not the point). */
  readonly respondAtOnceOnly?: boolean;
  /** Publishes over its own connection, which the model may close (parameter set e). */
  readonly connection?: string;
}

interface ModelSpec {
  readonly key: string;
  readonly title: string;
  readonly skills: readonly SkillSpec[];
  /** The model starts before the question (phase idle): a connection may close before it is asked. */
  readonly idleFirst: boolean;
  /** One late action per path (a pong after the poll closed, a response after the decision): changes nothing. */
  readonly late: boolean;
}

type Phase = 'idle' | 'polling' | 'collecting' | 'decided';
type Cause = 'no_claimant' | 'all_answered' | 'fast_win' | 'window' | 'ceiling';

interface SkillState {
  readonly pong: boolean | null;
  /** When it ponged (ms since the question): pong timing is part of the state, so every boundary is a path. */
  readonly pongAt: number | null;
  readonly conf: number | null | undefined; // undefined: no response yet; null: a response without answer
  readonly closed: boolean;
}

interface Ctx {
  /** ms since the question was asked. */
  readonly now: number;
  readonly phase: Phase;
  /** The live roster, and which of it answers every poll. */
  readonly roster: readonly string[];
  readonly answeringRoster: readonly string[];
  /** The roster snapshot the contest started with. */
  readonly known: readonly string[];
  readonly answering: readonly string[];
  readonly skills: Readonly<Record<string, SkillState>>;
  /** In claim order. */
  readonly claimants: readonly string[];
  /** In arrival order, with their times. */
  readonly responses: ReadonlyArray<{ readonly skill: string; readonly conf: number | null; readonly at: number }>;
  readonly requestsAt: number | null;
  readonly decidedAt: number | null;
  readonly cause: Cause | null;
  readonly winner: string | null;
  readonly late: string | null;
}

type ModelEvent =
  | { readonly type: 'ASK' }
  | { readonly type: 'PONG'; readonly skill: string; readonly canAnswer: boolean }
  | { readonly type: 'RESPOND'; readonly skill: string; readonly conf: number | null }
  | { readonly type: 'CLOSE'; readonly skill: string }
  | { readonly type: 'TICK'; readonly at: number; readonly mark: string }
  | { readonly type: 'LATE_PONG'; readonly skill: string }
  | { readonly type: 'LATE_RESPONSE'; readonly skill: string };

const EVENT_TYPES = ['ASK', 'PONG', 'RESPOND', 'CLOSE', 'TICK', 'LATE_PONG', 'LATE_RESPONSE'] as const;
const PHASES: readonly Phase[] = ['idle', 'polling', 'collecting', 'decided'];

const survives = (conf: number | null): conf is number => conf !== null && conf >= MIN_CONF; // §8 step 1
const fastWins = (conf: number | null): boolean => survives(conf) && conf >= FAST_WIN; // §8 step 3

/** §8 steps 3–4: the fast-win survivor, else the highest conf; earlier arrival breaks ties. */
function selectWinner(responses: Ctx['responses']): string | null {
  const kept = responses.filter((r) => survives(r.conf));
  const fast = kept.filter((r) => fastWins(r.conf));
  let best: Ctx['responses'][number] | null = null;
  for (const r of fast.length > 0 ? fast : kept) if (best === null || (r.conf ?? 0) > (best.conf ?? 0)) best = r;
  return best?.skill ?? null;
}

const ponged = (c: Ctx) => (skill: string): boolean => c.skills[skill]?.pong !== null && c.skills[skill]?.pong !== undefined;
/** Heard from in this poll, or gone (its connection closed): nobody waits for it any more. */
const heard = (c: Ctx) => (skill: string): boolean => ponged(c)(skill) || c.skills[skill]?.closed === true;
/** A claimant that has responded, or is gone (counts as declining, §7.2). */
const settled = (c: Ctx) => (skill: string): boolean => c.skills[skill]?.conf !== undefined || c.skills[skill]?.closed === true;
/** §6.3 rule 1: a claim in hand and every skill known when the contest started heard from. */
const rule1 = (c: Ctx): boolean => c.claimants.length > 0 && c.known.length > 0 && c.known.every(heard(c));
/** §6.3 rule 2, past the claim bound: nobody known to answer every poll is outstanding. */
const rule2 = (c: Ctx): boolean => c.now >= CLAIM_BOUND && c.answering.every(heard(c));

/**
 * §7.2: the largest claimant latency_ms + the bus's round trip to it — how long its pong took after the ping (sent
 * as the question arrives), at least the transport allowance — (omitted → the fixed initial window), clamped to the
 * ceiling.
 */
function windowMs(spec: ModelSpec, c: Ctx): number {
  let window = 0;
  for (const skill of c.claimants) {
    const declared = spec.skills.find((s) => s.id === skill)?.latencyMs;
    const roundTrip = Math.max(ALLOWANCE, c.skills[skill]?.pongAt ?? 0);
    window = Math.max(window, declared === undefined ? INITIAL_WINDOW : declared + roundTrip);
  }
  return Math.min(window, CEILING);
}

/**
 * §7.2 settle (our choice, src/plugins/README.md): the window stays open one round trip after the first surviving answer — the
 * largest claimant pong delay (ms after the ping), at least the transport allowance. Null while no survivor is in hand.
 */
function settleAt(c: Ctx): number | null {
  const first = c.responses.find((r) => survives(r.conf));
  if (first === undefined) return null;
  let roundTrip = ALLOWANCE;
  for (const skill of c.claimants) roundTrip = Math.max(roundTrip, c.skills[skill]?.pongAt ?? 0);
  return first.at + roundTrip;
}

/** §7.2: the window closes once W has passed and the round trip since the first survivor has run out. */
function windowCloses(spec: ModelSpec, c: Ctx): boolean {
  const settle = settleAt(c);
  return c.requestsAt !== null && settle !== null && c.now >= c.requestsAt + windowMs(spec, c) && c.now >= settle;
}

/** The next boundary value (T−1, T, T+1 of each bound) strictly after now, or null when nothing is pending. */
function nextTick(spec: ModelSpec, c: Ctx): { readonly at: number; readonly mark: string } | null {
  const marks: Array<[number, string]> = [];
  const around = (at: number, name: string): void => {
    marks.push([at - 1, `${name}−1`], [at, name], [at + 1, `${name}+1`]);
  };
  if (c.phase === 'polling') {
    around(CLAIM_BOUND, 'claim bound');
    marks.push([POLL_CEILING - 1, 'poll ceiling−1'], [POLL_CEILING, 'poll ceiling']);
  } else if (c.phase === 'collecting' && c.requestsAt !== null) {
    around(c.requestsAt + windowMs(spec, c), 'window');
    const settle = settleAt(c);
    if (settle !== null) around(settle, 'settle');
    marks.push([c.requestsAt + CEILING - 1, 'ceiling−1'], [c.requestsAt + CEILING, 'ceiling']);
  } else {
    return null;
  }
  const ahead = marks.filter(([at]) => at > c.now);
  if (ahead.length === 0) return null;
  const at = Math.min(...ahead.map(([t]) => t));
  return { at, mark: ahead.filter(([t]) => t === at).map(([, m]) => m).join('=') };
}

function decide(c: Ctx, at: number, cause: Cause): Ctx {
  return { ...c, phase: 'decided', decidedAt: at, cause, winner: selectWinner(c.responses) };
}

/** §6.3 close → §7.1 requests to every claimant now, or (§9) None at once without a claimant (or with every claimant gone). */
function closePoll(c: Ctx, at: number): Ctx {
  if (c.claimants.length === 0) return decide(c, at, 'no_claimant');
  if (c.claimants.every((s) => c.skills[s]?.closed === true)) return decide(c, at, 'all_answered');
  return { ...c, phase: 'collecting', requestsAt: at };
}

function withSkill(c: Ctx, skill: string, patch: Partial<SkillState>): Ctx['skills'] {
  const current = c.skills[skill];
  if (current === undefined) throw new Error(`model: unknown skill ${skill}`);
  return { ...c.skills, [skill]: { ...current, ...patch } };
}

/** The model's transition function: the next context, or null when the event is not possible here. */
function nextContext(spec: ModelSpec, c: Ctx, e: ModelEvent): Ctx | null {
  const skillSpec = 'skill' in e ? spec.skills.find((s) => s.id === e.skill) : undefined;
  const state = 'skill' in e ? c.skills[e.skill] : undefined;
  switch (e.type) {
    case 'ASK':
      // The contest starts with the roster as it is now.
      return c.phase === 'idle' ? { ...c, phase: 'polling', known: c.roster, answering: c.answeringRoster } : null;
    case 'CLOSE': {
      if (skillSpec?.connection === undefined || state === undefined || state.closed) return null;
      const skills = withSkill(c, e.skill, { closed: true });
      // A closed connection takes its skills off the roster, and a running contest stops waiting for them: in the
      // poll it is heard from (rules 1 and 2 re-checked), in collection a claimant counts as declining (§7.2).
      const roster = c.roster.filter((s) => s !== e.skill);
      const answeringRoster = c.answeringRoster.filter((s) => s !== e.skill);
      const n: Ctx = { ...c, skills, roster, answeringRoster };
      if (c.phase === 'polling' && (rule1(n) || rule2(n))) return closePoll(n, n.now);
      if (c.phase === 'collecting' && c.claimants.includes(e.skill) && state.conf === undefined && n.claimants.every(settled(n))) return decide(n, n.now, 'all_answered');
      return n;
    }
    case 'PONG': {
      if (c.phase !== 'polling' || skillSpec === undefined || state === undefined || state.closed || state.pong !== null) return null;
      if (!skillSpec.pongs.includes(e.canAnswer) || (skillSpec.pongAtOnceOnly === true && c.now !== 0)) return null;
      const n: Ctx = { ...c, skills: withSkill(c, e.skill, { pong: e.canAnswer, pongAt: c.now }), claimants: e.canAnswer ? [...c.claimants, e.skill] : c.claimants };
      // §6.3 rule 1: a claim in hand and nobody the plugin knows of is left to hear from.
      if (rule1(n)) return closePoll(n, n.now);
      // §6.3 rule 2, past the claim bound: the last skill known to answer every poll has answered.
      if (rule2(n)) return closePoll(n, n.now);
      return n;
    }
    case 'RESPOND': {
      if (c.phase !== 'collecting' || skillSpec === undefined || state === undefined || state.closed || state.conf !== undefined) return null;
      if (!c.claimants.includes(e.skill) || !skillSpec.replies.some((r) => r.conf === e.conf)) return null;
      if (skillSpec.respondAtOnceOnly === true && c.now !== c.requestsAt) return null;
      const n: Ctx = { ...c, skills: withSkill(c, e.skill, { conf: e.conf }), responses: [...c.responses, { skill: e.skill, conf: e.conf, at: c.now }] };
      if (fastWins(e.conf)) return decide(n, n.now, 'fast_win'); // §8 step 3
      if (n.claimants.every(settled(n))) return decide(n, n.now, 'all_answered'); // §7.2
      // §7.2: a first survivor starts its round trip now, so an answer never closes the window on its own arrival.
      return n;
    }
    case 'TICK': {
      const tick = nextTick(spec, c);
      if (tick === null || tick.at !== e.at) return null;
      const n: Ctx = { ...c, now: e.at };
      if (c.phase === 'polling') {
        if (e.at === CLAIM_BOUND && rule2(n)) return closePoll(n, e.at); // §6.3 rule 2
        if (e.at === POLL_CEILING) return closePoll(n, e.at); // §6.3 rule 3
        return n;
      }
      const r = c.requestsAt ?? 0;
      if (e.at === r + CEILING) return decide(n, e.at, 'ceiling'); // §7.2 hard ceiling
      if (windowCloses(spec, n)) return decide(n, e.at, 'window'); // §7.2: the later of W and the settle
      return n;
    }
    case 'LATE_PONG':
      // A claim after the poll closed: treated as not claiming (§6.2) — nothing changes.
      if (!spec.late || c.late !== null || skillSpec === undefined || state === undefined) return null;
      if ((c.phase !== 'collecting' && c.phase !== 'decided') || state.pong !== null || state.closed || !skillSpec.pongs.includes(true)) return null;
      return { ...c, late: `${e.skill} pong` };
    case 'LATE_RESPONSE':
      // A response after the decision: the utterance is over — nothing changes (PIPELINE-1 §4.4, one handled).
      if (!spec.late || c.late !== null || c.phase !== 'decided' || state === undefined) return null;
      if (!c.claimants.includes(e.skill) || state.conf !== undefined || state.closed) return null;
      return { ...c, late: `${e.skill} response` };
  }
}

function initialContext(spec: ModelSpec): Ctx {
  const roster = spec.skills.filter((s) => s.roster !== 'unknown').map((s) => s.id);
  const answeringRoster = spec.skills.filter((s) => s.roster === 'answering').map((s) => s.id);
  return {
    now: 0,
    phase: spec.idleFirst ? 'idle' : 'polling',
    roster,
    answeringRoster,
    known: spec.idleFirst ? [] : roster,
    answering: spec.idleFirst ? [] : answeringRoster,
    skills: Object.fromEntries(spec.skills.map((s) => [s.id, { pong: null, pongAt: null, conf: undefined, closed: false }])),
    claimants: [],
    responses: [],
    requestsAt: null,
    decidedAt: null,
    cause: null,
    winner: null,
    late: null,
  };
}

function buildModel(spec: ModelSpec) {
  const step = (context: Ctx, event: ModelEvent): Ctx | null => nextContext(spec, context, event);
  const into = (phase: Phase) => ({
    guard: ({ context, event }: { context: Ctx; event: ModelEvent }) => step(context, event)?.phase === phase,
    target: phase,
    actions: assign(({ context, event }: { context: Ctx; event: ModelEvent }) => step(context, event) ?? context),
  });
  const on = Object.fromEntries(EVENT_TYPES.map((type) => [type, PHASES.map(into)]));
  return setup({ types: { context: {} as Ctx, events: {} as ModelEvent } }).createMachine({
    id: `commonQuerySystem_${spec.key}`,
    context: initialContext(spec),
    initial: spec.idleFirst ? 'idle' : 'polling',
    states: { idle: { on }, polling: { on }, collecting: { on }, decided: { on } },
  });
}

/** Every event the model could take in a state; `filterEvents` keeps the possible ones. */
function candidateEvents(spec: ModelSpec, c: Ctx): ModelEvent[] {
  const events: ModelEvent[] = [{ type: 'ASK' }];
  for (const skill of spec.skills) {
    for (const canAnswer of skill.pongs) events.push({ type: 'PONG', skill: skill.id, canAnswer });
    for (const reply of skill.replies) events.push({ type: 'RESPOND', skill: skill.id, conf: reply.conf });
    if (skill.connection !== undefined) events.push({ type: 'CLOSE', skill: skill.id });
    if (spec.late) events.push({ type: 'LATE_PONG', skill: skill.id }, { type: 'LATE_RESPONSE', skill: skill.id });
  }
  const tick = nextTick(spec, c);
  if (tick !== null) events.push({ type: 'TICK', ...tick });
  return events;
}

interface ModelPath {
  readonly events: readonly ModelEvent[];
  /** states[0]: the initial state; states[i + 1]: after events[i]. */
  readonly states: readonly Ctx[];
}

/**
 * Shortest paths to every state of `machine`, each run on by `drain` (the next event that time or the script brings,
 * null when none is left) to its end; duplicates removed. Both models of this file are generated this way.
 */
function runOnPaths<TContext extends MachineContext, TEvent extends EventObject>(
  machine: AnyStateMachine,
  events: (context: TContext) => TEvent[],
  drain: (context: TContext) => TEvent | null,
): Array<{ readonly events: readonly TEvent[]; readonly states: readonly TContext[] }> {
  const model = createTestModel(machine, {
    events: (snapshot) => events((snapshot as { context: TContext }).context) as never,
    filterEvents: (snapshot, event) => snapshot.can(event),
  });
  const seen = new Set<string>();
  const paths: Array<{ events: TEvent[]; states: TContext[] }> = [];
  for (const path of model.getShortestPaths()) {
    const steps = path.steps.filter((s) => (s.event.type as string) !== 'xstate.init');
    const pathEvents = steps.map((s) => s.event as TEvent);
    const states = [path.steps[0]!.state.context as TContext, ...steps.map((s) => s.state.context as TContext)];
    let snapshot: AnyMachineSnapshot = path.state;
    for (let event = drain(snapshot.context as TContext); event !== null; event = drain(snapshot.context as TContext)) {
      snapshot = transition(machine, snapshot, event)[0];
      pathEvents.push(event);
      states.push(snapshot.context as TContext);
    }
    const key = JSON.stringify(pathEvents);
    if (seen.has(key)) continue;
    seen.add(key);
    paths.push({ events: pathEvents, states });
  }
  return paths;
}

/** Shortest paths to every model state, each run on by TICKs until the model has decided. */
function generatePaths(spec: ModelSpec): ModelPath[] {
  const paths = runOnPaths<Ctx, ModelEvent>(
    buildModel(spec),
    (context) => candidateEvents(spec, context),
    (context) => {
      if (context.phase === 'idle') return { type: 'ASK' };
      const tick = nextTick(spec, context);
      return tick === null ? null : { type: 'TICK', ...tick };
    },
  );
  for (const path of paths) if (path.states.at(-1)!.phase !== 'decided') throw new Error(`model ${spec.key}: a path that never decides`);
  return paths;
}

// ---- What the model says an observer sees --------------------------------------------------------------------

interface Observed {
  readonly pings: readonly number[];
  readonly requests: readonly string[];
  readonly matched: readonly string[];
  readonly spoken: readonly string[];
  readonly handled: readonly number[];
  readonly unmatched: number;
}

function expectedOf(c: Ctx): Observed {
  const winnerConf = c.winner === null ? null : c.responses.find((r) => r.skill === c.winner)?.conf ?? null;
  const decided = c.decidedAt;
  return {
    pings: c.phase === 'idle' ? [] : [0],
    requests: c.requestsAt === null ? [] : c.claimants.map((skill) => `${skill}@${c.requestsAt}`),
    matched: decided === null ? [] : [c.winner === null ? `${CATCH_ALL}/fallback@${decided}` : `common_query/common_query "${answerText(c.winner, winnerConf ?? 0)}"@${decided}`],
    spoken: decided === null ? [] : [`${c.winner === null ? CATCH_ALL_SPEAKS : answerText(c.winner, winnerConf ?? 0)}@${decided}`],
    handled: decided === null ? [] : [decided],
    unmatched: 0,
  };
}

/** What the wire shows for one utterance_id, times relative to t0. */
function observe(wire: readonly Timed[], utteranceId: string, t0: number, skills: readonly string[]): Observed {
  const mine = wire.filter((w) => utteranceIdOf(w.message) === utteranceId);
  const of = (type: string): Timed[] => mine.filter((w) => w.message.type === type);
  const at = (w: Timed): number => w.at - t0;
  return {
    pings: of('ovos.common_query.ping').map(at),
    requests: mine.filter((w) => skills.some((s) => w.message.type === `${s}:common_query`)).map((w) => `${w.message.type.slice(0, -':common_query'.length)}@${at(w)}`),
    matched: of('ovos.intent.matched').map((w) => {
      const d = w.message.data;
      const slots = d['slots'];
      const answer = typeof slots === 'object' && slots !== null && !Array.isArray(slots) ? slots['answer'] : undefined;
      return `${String(d['skill_id'])}/${String(d['intent_name'])}${answer === undefined ? '' : ` "${String(answer)}"`}@${at(w)}`;
    }),
    spoken: of('ovos.utterance.speak').map((w) => `${String(w.message.data['utterance'])}@${at(w)}`),
    handled: of('ovos.utterance.handled').map(at),
    unmatched: of('ovos.intent.unmatched').length,
  };
}

// ---- Describing paths and citing clauses ---------------------------------------------------------------------

function formatEvent(e: ModelEvent, atTime: number): string {
  switch (e.type) {
    case 'ASK':
      return `ask@${atTime}`;
    case 'PONG':
      return `${e.skill} pong can_answer:${String(e.canAnswer)}@${atTime}`;
    case 'RESPOND':
      return `${e.skill} ${e.conf === null ? 'responds without answer' : `answers conf ${e.conf}`}@${atTime}`;
    case 'CLOSE':
      return `${e.skill} connection closes@${atTime}`;
    case 'TICK':
      return `tick ${e.mark}@${e.at}`;
    case 'LATE_PONG':
      return `${e.skill} late pong@${atTime}`;
    case 'LATE_RESPONSE':
      return `${e.skill} late response@${atTime}`;
  }
}

const CLAUSES: Readonly<Record<Cause, string>> = {
  no_claimant: '§6.3 + §9 (poll closed without a claimant → None → fallback)',
  all_answered: '§7.2 (every claimant responded)',
  fast_win: '§8 step 3 (fast win)',
  window: '§7.2 (initial window passed, and a round trip since the first survivor)',
  ceiling: '§7.2 (collection ceiling)',
};

function describePath(path: ModelPath): string {
  const final = path.states.at(-1)!;
  const steps = path.events.map((e, i) => formatEvent(e, path.states[i + 1]!.now));
  const outcome = final.winner === null ? `${CATCH_ALL} speaks@${final.decidedAt}` : `${final.winner} answers@${final.decidedAt}`;
  return `${SPEC} ${CLAUSES[final.cause ?? 'ceiling']}: ${steps.join(' → ') || '(nothing)'} ⇒ ${outcome}`;
}

// ---- Replaying a path against the whole system ---------------------------------------------------------------

interface System {
  readonly h: Harness;
  readonly clock: ClockDriver;
  readonly wire: Timed[];
}

async function startSystem(): Promise<System> {
  const h = createHarness(); // DEFAULT_CONFIG: pipeline ['fallback_high', 'common_query', 'fallback_medium', 'fallback_low']
  expect(h.system.config.pipeline).toEqual(['fallback_high', 'common_query', 'fallback_medium', 'fallback_low']);
  const clock = driveClock(h);
  const wire = wireLog(h);
  fallbackSkill(h, CATCH_ALL, 100); // fallback_low, always willing
  await clock.flush();
  return { h, clock, wire };
}

/**
 * Warm-up questions so the roster learns the skills: known ones claim and answer, answering ones decline — the first
 * puts them on the roster, the next PROMOTE_AFTER make the decliners "known to answer every poll".
 */
async function warmUp(system: System, spec: ModelSpec, puppets: ReadonlyMap<string, PuppetCqSkill>): Promise<void> {
  const { h, clock } = system;
  for (const skill of spec.skills) {
    const puppet = puppets.get(skill.id)!;
    if (skill.roster === 'known') puppet.auto = { pong: true, answer: { answer: 'warm-up answer', conf: 0.7, afterMs: 0 } };
    if (skill.roster === 'answering') puppet.auto = { pong: false };
  }
  for (let i = 0; i <= PROMOTE_AFTER; i++) {
    h.utter(WARM_UP, { utteranceId: `warm-up-${i}` });
    await clock.advanceTo(clock.now() + POLL_CEILING + CEILING + 1_000);
    expect(system.wire.filter((w) => w.message.type === 'ovos.utterance.handled' && utteranceIdOf(w.message) === `warm-up-${i}`), 'warm-up handled').toHaveLength(1);
  }
  for (const puppet of puppets.values()) puppet.auto = null;
  const expected = spec.skills.filter((s) => s.roster !== 'unknown').map((s) => ({ skill_id: s.id, answersEveryPoll: s.roster === 'answering' }));
  expect([...h.system.commonQuery.roster()].sort((a, b) => a.skill_id.localeCompare(b.skill_id)), 'roster after the warm-up').toEqual(
    expected.sort((a, b) => a.skill_id.localeCompare(b.skill_id)),
  );
}

async function replay(spec: ModelSpec, path: ModelPath): Promise<void> {
  const system = await startSystem();
  const { h, clock, wire } = system;
  const puppets = new Map(
    spec.skills.map((s) => [s.id, puppetCqSkill(h, s.id, { ...(s.latencyMs === undefined ? {} : { latencyMs: s.latencyMs }), ...(s.connection === undefined ? {} : { connection: s.connection }) })]),
  );
  await clock.flush();
  if (spec.skills.some((s) => s.roster !== 'unknown')) await warmUp(system, spec, puppets);
  const t0 = clock.now();
  const skillIds = spec.skills.map((s) => s.id);
  const ask = async (): Promise<void> => {
    h.utter(QUESTION, { utteranceId: 'q1' });
    await clock.flush();
  };
  const agree = (c: Ctx, where: string): void => {
    expect(clock.now() - t0, `${where}: clock`).toBe(c.now);
    expect(observe(wire, 'q1', t0, skillIds), where).toEqual(expectedOf(c));
  };
  const puppet = (skill: string): PuppetCqSkill => puppets.get(skill)!;
  const connectionOf = (skill: string): string => spec.skills.find((s) => s.id === skill)?.connection ?? '';

  if (!spec.idleFirst) await ask();
  agree(path.states[0]!, 'at the start');
  for (const [i, event] of path.events.entries()) {
    switch (event.type) {
      case 'ASK':
        await ask();
        break;
      case 'PONG':
        puppet(event.skill).pong(event.canAnswer, { utteranceId: 'q1' });
        break;
      case 'RESPOND':
        puppet(event.skill).respond(event.conf === null ? null : answerText(event.skill, event.conf), event.conf ?? 0, { utteranceId: 'q1' });
        break;
      case 'CLOSE':
        h.bus.closeConnection(connectionOf(event.skill));
        break;
      case 'TICK':
        await clock.advanceTo(t0 + event.at);
        break;
      case 'LATE_PONG':
        puppet(event.skill).pong(true, { utteranceId: 'q1' });
        break;
      case 'LATE_RESPONSE':
        // The most tempting late answer there is: a fast win.
        puppet(event.skill).respond(answerText(event.skill, 0.95), 0.95, { utteranceId: 'q1' });
        break;
    }
    await clock.flush();
    agree(path.states[i + 1]!, `after step ${i + 1} (${formatEvent(event, path.states[i + 1]!.now)})`);
  }
  // Nothing more may happen: no second answer, no second handled, whatever is still scheduled.
  const final = path.states.at(-1)!;
  await clock.advanceTo(t0 + POLL_CEILING + CEILING + 2_000);
  expect(observe(wire, 'q1', t0, skillIds), 'long after the end').toEqual(expectedOf(final));
  expect(h.of('ovos.utterance.handled'), 'one handled per utterance').toHaveLength(h.of('ovos.utterance.handle').length);
  expect(h.system.supervisor.size, 'no live contest left').toBe(0);
  h.system.close();
}

// ---- Parameter sets ------------------------------------------------------------------------------------------

const CONF_07: Reply = { conf: 0.7 };
const CONF_03: Reply = { conf: 0.3 };
const FAST_095: Reply = { conf: 0.95 };
const NO_ANSWER: Reply = { conf: null };

const oneSkill = (latencyMs: number): ModelSpec => ({
  key: `a_latency_${latencyMs}`,
  title: `(a) one skill declaring latency_ms ${latencyMs}, fresh roster`,
  skills: [{ id: 'wiki', latencyMs, roster: 'unknown', pongs: [true, false], replies: [CONF_07, CONF_03, FAST_095, NO_ANSWER] }],
  idleFirst: false,
  late: true,
});

const twoSkills = (firstLatencyMs: number, secondLatencyMs: number | undefined): ModelSpec => ({
  key: `b_${firstLatencyMs}_${secondLatencyMs ?? 'omitted'}`,
  title: `(b) two skills: wiki latency_ms ${firstLatencyMs}, encyclopedia latency_ms ${secondLatencyMs ?? 'omitted'} answering later with higher conf, or never`,
  skills: [
    { id: 'wiki', latencyMs: firstLatencyMs, roster: 'unknown', pongs: [true], pongAtOnceOnly: true, replies: [CONF_07, NO_ANSWER] },
    { id: 'encyclopedia', ...(secondLatencyMs === undefined ? {} : { latencyMs: secondLatencyMs }), roster: 'unknown', pongs: [true], pongAtOnceOnly: true, replies: [{ conf: 0.8 }, FAST_095] },
  ],
  idleFirst: false,
  late: true,
});

const ROSTER_LEARNT: ModelSpec = {
  key: 'c_roster',
  title: '(c) roster learnt: wiki claimed in the warm-up, calculator said can_answer:false, newcomer never seen',
  skills: [
    { id: 'wiki', latencyMs: 20, roster: 'known', pongs: [true, false], replies: [CONF_07, NO_ANSWER], respondAtOnceOnly: true },
    { id: 'calculator', latencyMs: 0, roster: 'answering', pongs: [false, true], replies: [{ conf: 0.6 }], respondAtOnceOnly: true },
    { id: 'newcomer', latencyMs: 20, roster: 'unknown', pongs: [true], pongAtOnceOnly: true, replies: [{ conf: 0.8 }], respondAtOnceOnly: true },
  ],
  idleFirst: false,
  late: false,
};

const CONNECTION_CLOSES: ModelSpec = {
  key: 'e_connection',
  title: '(e) remote (on conn-x, said can_answer:false in the warm-up) and wiki (claimed in the warm-up); conn-x closes at any point',
  skills: [
    { id: 'remote', latencyMs: 0, roster: 'answering', pongs: [true, false], replies: [CONF_07], connection: 'conn-x' },
    { id: 'wiki', latencyMs: 20, roster: 'known', pongs: [true], replies: [{ conf: 0.6 }] },
  ],
  idleFirst: true,
  late: false,
};

function modelSuite(spec: ModelSpec, anchors: (paths: readonly ModelPath[]) => void): void {
  const paths = generatePaths(spec);
  describe(spec.title, () => {
    it(`${SPEC} model ${spec.key}: ${paths.length} paths, every outcome reached`, () => {
      expect(paths.length).toBeGreaterThan(10);
      anchors(paths);
    });
    for (const path of sampled(paths)) {
      it(describePath(path), async () => {
        await replay(spec, path);
      });
    }
  });
}

const finals = (paths: readonly ModelPath[]): Ctx[] => paths.map((p) => p.states.at(-1)!);
const causes = (paths: readonly ModelPath[]): Set<Cause | null> => new Set(finals(paths).map((c) => c.cause));
/** Anchors computed by hand from the rule text: they guard the model itself. */
const reaches = (paths: readonly ModelPath[], predicate: (c: Ctx) => boolean, what: string): void => {
  expect(finals(paths).some(predicate), what).toBe(true);
};

describe(`${SPEC} §6–§9 through the whole system (orchestrator, supervisor, plugins, bus, clock)`, () => {
  describe(`${SPEC} §7.2 (a) one skill: latency_ms is the INITIAL window, an answer before the ceiling is never lost`, () => {
    for (const latency of [0, 20]) {
      modelSuite(oneSkill(latency), (paths) => {
        expect(causes(paths)).toEqual(new Set(['no_claimant', 'all_answered', 'fast_win', 'ceiling']));
        // The regression: an answer after latency_ms (window+1) and just before the ceiling is spoken.
        reaches(paths, (c) => c.winner === 'wiki' && c.decidedAt === CLAIM_BOUND + latency + ALLOWANCE + 1, 'answer at window+1 wins');
        reaches(paths, (c) => c.winner === 'wiki' && c.decidedAt === CLAIM_BOUND + CEILING - 1, 'answer at ceiling−1 wins');
        reaches(paths, (c) => c.cause === 'ceiling' && c.late === 'wiki response', 'answer at the ceiling is too late');
        reaches(paths, (c) => c.cause === 'no_claimant' && c.late === 'wiki pong' && c.decidedAt === CLAIM_BOUND, 'pong at the claim bound is too late');
      });
    }
  });

  describe(`${SPEC} §7.2 + §8 (b) two skills: the second answers later with higher conf, or never`, () => {
    for (const [first, second] of [[0, 20], [20, undefined]] as const) {
      const w = second === undefined ? INITIAL_WINDOW : second + ALLOWANCE;
      modelSuite(twoSkills(first, second), (paths) => {
        expect(causes(paths)).toEqual(new Set(['no_claimant', 'all_answered', 'fast_win', 'window', 'ceiling']));
        const r = CLAIM_BOUND;
        reaches(paths, (c) => c.winner === 'encyclopedia' && c.cause === 'all_answered' && c.decidedAt === r + w - 1, 'higher conf at W−1 wins');
        reaches(paths, (c) => c.winner === 'wiki' && c.cause === 'window' && c.decidedAt === r + w, 'wiki in hand at W wins');
        // The settle: wiki's answer past W keeps the window open one round trip (pongs at once: the 50 ms allowance).
        reaches(paths, (c) => c.winner === 'wiki' && c.cause === 'window' && c.decidedAt === r + w + 1 + ALLOWANCE, 'wiki at W+1 wins one round trip later');
        reaches(paths, (c) => c.winner === 'encyclopedia' && c.cause === 'all_answered' && c.decidedAt === r + w + ALLOWANCE, 'higher conf a round trip − 1 after wiki at W+1 wins');
        // A survivor at ceiling−1 with wiki silent: its round trip runs past the ceiling, which closes it — it wins.
        reaches(paths, (c) => c.winner === 'encyclopedia' && c.cause === 'ceiling' && c.decidedAt === r + CEILING && c.responses.length === 1, 'a late survivor with wiki silent wins at the ceiling');
        reaches(paths, (c) => c.winner === null && c.cause === 'ceiling', 'no survivor by the ceiling → fallback');
      });
    }
  });

  describe(`${SPEC} §6.3 (c) roster learnt: the poll closes as soon as every known skill answered`, () => {
    modelSuite(ROSTER_LEARNT, (paths) => {
      expect(causes(paths)).toEqual(new Set(['no_claimant', 'all_answered', 'fast_win', 'window', 'ceiling'].filter((c) => c !== 'fast_win')));
      reaches(paths, (c) => c.requestsAt === 0 && c.claimants.includes('wiki'), 'every known skill answered at once → requests at 0');
      reaches(paths, (c) => c.requestsAt === CLAIM_BOUND + 1, 'calculator outstanding past the claim bound → waited for');
      reaches(paths, (c) => c.requestsAt === POLL_CEILING, 'calculator silent → the poll ceiling');
      reaches(paths, (c) => c.requestsAt === CLAIM_BOUND && c.skills['calculator']?.pong === false, 'calculator in, wiki silent → the claim bound');
    });
  });

  describe(`${SPEC} §5 + PIPELINE-1 §6 (d) the same text asked twice in one session, early start behind fallback_high`, () => {
    for (const holdMs of [200, 100]) twiceSuite(holdMs);
  });

  describe(`${SPEC} §6.3 + §7.2 + PIPELINE-1 §6 (e) a skill whose connection closes at any point`, () => {
    modelSuite(CONNECTION_CLOSES, (paths) => {
      expect(causes(paths)).toEqual(new Set(['no_claimant', 'all_answered', 'window', 'ceiling']));
      reaches(paths, (c) => c.skills['remote']?.closed === true && c.known.length === 1 && c.requestsAt === 0, 'closed before the question: off the roster, the poll closes on wiki alone');
      reaches(paths, (c) => c.skills['remote']?.closed === true && c.skills['remote']?.pong === null && c.known.length === 2 && c.requestsAt !== null && c.requestsAt < CLAIM_BOUND && c.requestsAt > 0, 'closed mid-poll after wiki claimed: no longer waited for, the poll closes at the close');
      reaches(paths, (c) => c.skills['remote']?.closed === true && c.skills['remote']?.pong === true && c.cause === 'all_answered' && c.decidedAt !== null && c.decidedAt < CEILING, 'claimed, then closed: counts as declining at once, not at the ceiling');
    });
  });
});

// ---- (d) the same question twice in one session ----------------------------------------------------------------

/**
 * Model (d). Scripted skills: `wiki` pongs can_answer:true with latency_ms 0 at once to every ping, and answers
 * conf 0.7 RESPONSE_MS after every request (a bit later than it declared); `holder` is a fallback_high skill
 * (priority 10) that holds every pong HOLD ms, then declines. The model's events: ASK_AGAIN (the second utterance,
 * same text, same session, at the current time) and TICK (next boundary: T−1, T, T+1 of the first utterance's claim
 * bound, answer and hold; then every time the rules schedule something). Rules (§5, §6.3, §7.2, PIPELINE-1 §6):
 *  U1 at 0: early start → ping at 0; the roster is empty so the poll closes at the claim bound → request at 125,
 *     answer at 125+R → the contest is done. The pipeline reaches common_query when holder declines at HOLD; match
 *     takes the cache entry (same text, same utterance_id). Spoken at max(HOLD, 125+R).
 *     If U2 arrives before HOLD (before match consumed the entry), U1's entry is evicted (§5.2 "evicted
 *     unconditionally when a new utterance arrives") and its contest stopped: U1's match runs its own contest at
 *     HOLD — a second ping for U1 at HOLD; wiki is on the roster by now so the poll closes when it answers (at
 *     once): request at HOLD, spoken at HOLD+R. The early request at 125 went out only if U2 came at or after 125.
 *  U2 at t2: ping at t2; wiki known → poll closes at once → request at t2, answer t2+R; match at t2+HOLD joins it.
 *     Spoken at t2 + max(HOLD, R).
 * Each utterance: one ovos.intent.matched (common_query), one speak, EXACTLY ONE handled; no reply is ever dropped as
 * ambiguous_correlation; the catch-all never speaks.
 */
const RESPONSE_MS = 30;

interface TwiceCtx {
  readonly now: number;
  readonly askedAgainAt: number | null;
}

type TwiceEvent = { readonly type: 'ASK_AGAIN' } | { readonly type: 'TICK'; readonly at: number; readonly mark: string };

interface UtteranceTimeline {
  readonly pings: readonly number[];
  readonly requests: readonly number[];
  readonly spokenAt: number;
}

function twiceTimeline(hold: number, t2: number | null): { readonly u1: UtteranceTimeline; readonly u2: UtteranceTimeline | null } {
  const evicted = t2 !== null && t2 < hold;
  const earlyRequestSent = !evicted || (t2 !== null && t2 >= CLAIM_BOUND);
  const u1: UtteranceTimeline = evicted
    ? { pings: [0, hold], requests: [...(earlyRequestSent ? [CLAIM_BOUND] : []), hold], spokenAt: hold + RESPONSE_MS }
    : { pings: [0], requests: [CLAIM_BOUND], spokenAt: Math.max(hold, CLAIM_BOUND + RESPONSE_MS) };
  const u2: UtteranceTimeline | null = t2 === null ? null : { pings: [t2], requests: [t2], spokenAt: t2 + Math.max(hold, RESPONSE_MS) };
  return { u1, u2 };
}

function twiceNextTick(hold: number, c: TwiceCtx): { readonly at: number; readonly mark: string } | null {
  const marks: Array<[number, string]> = [];
  const around = (at: number, name: string): void => {
    marks.push([at - 1, `${name}−1`], [at, name], [at + 1, `${name}+1`]);
  };
  if (c.askedAgainAt === null) {
    around(CLAIM_BOUND, 'U1 claim bound');
    around(CLAIM_BOUND + RESPONSE_MS, 'U1 early answer');
    around(hold, 'U1 hold');
  } else {
    const { u1, u2 } = twiceTimeline(hold, c.askedAgainAt);
    for (const u of [u1, u2]) {
      if (u === null) continue;
      for (const at of [...u.pings, ...u.requests, u.spokenAt]) marks.push([at, 'scheduled']);
    }
    for (const at of [c.askedAgainAt + RESPONSE_MS, c.askedAgainAt + hold]) marks.push([at, 'scheduled']);
  }
  const ahead = marks.filter(([at]) => at > c.now);
  if (ahead.length === 0) return null;
  const at = Math.min(...ahead.map(([t]) => t));
  return { at, mark: [...new Set(ahead.filter(([t]) => t === at).map(([, m]) => m))].join('=') };
}

function buildTwiceModel(hold: number) {
  // createTestModel also offers a bare { type: 'TICK' } (derived from the machine): it is not a tick to anywhere.
  const ticksTo = (context: TwiceCtx, event: TwiceEvent): boolean =>
    event.type === 'TICK' && typeof event.at === 'number' && twiceNextTick(hold, context)?.at === event.at;
  return setup({ types: { context: {} as TwiceCtx, events: {} as TwiceEvent } }).createMachine({
    id: `askedTwice_${hold}`,
    context: { now: 0, askedAgainAt: null },
    initial: 'once',
    states: {
      once: {
        on: {
          ASK_AGAIN: { target: 'twice', actions: assign(({ context }) => ({ askedAgainAt: context.now })) },
          TICK: { guard: ({ context, event }) => ticksTo(context, event), actions: assign({ now: ({ event }) => event.at }) },
        },
      },
      twice: {
        on: {
          TICK: { guard: ({ context, event }) => ticksTo(context, event), actions: assign({ now: ({ event }) => event.at }) },
        },
      },
    },
  });
}

interface TwicePath {
  readonly events: readonly TwiceEvent[];
  readonly states: readonly TwiceCtx[];
}

function generateTwicePaths(hold: number): TwicePath[] {
  const tickOf = (context: TwiceCtx): TwiceEvent | null => {
    const tick = twiceNextTick(hold, context);
    return tick === null ? null : { type: 'TICK', ...tick };
  };
  return runOnPaths<TwiceCtx, TwiceEvent>(
    buildTwiceModel(hold),
    (context) => [{ type: 'ASK_AGAIN' }, ...[tickOf(context)].filter((e): e is TwiceEvent => e !== null)],
    (context) => (context.askedAgainAt === null ? { type: 'ASK_AGAIN' } : tickOf(context)),
  );
}

interface TwiceObserved {
  readonly pings: readonly number[];
  readonly requests: readonly number[];
  readonly matched: readonly string[];
  readonly spoken: readonly string[];
  readonly handled: readonly number[];
}

const WIKI_ANSWER = answerText('wiki', 0.7);

function twiceExpected(hold: number, c: TwiceCtx): { readonly u1: TwiceObserved; readonly u2: TwiceObserved } {
  const { u1, u2 } = twiceTimeline(hold, c.askedAgainAt);
  const upTo = (u: UtteranceTimeline | null): TwiceObserved => {
    if (u === null) return { pings: [], requests: [], matched: [], spoken: [], handled: [] };
    const spoken = u.spokenAt <= c.now;
    return {
      pings: u.pings.filter((t) => t <= c.now),
      requests: u.requests.filter((t) => t <= c.now),
      matched: spoken ? [`common_query/common_query "${WIKI_ANSWER}"@${u.spokenAt}`] : [],
      spoken: spoken ? [`${WIKI_ANSWER}@${u.spokenAt}`] : [],
      handled: spoken ? [u.spokenAt] : [],
    };
  };
  return { u1: upTo(u1), u2: upTo(u2) };
}

function describeTwice(hold: number, path: TwicePath): string {
  const final = path.states.at(-1)!;
  const t2 = final.askedAgainAt ?? 0;
  const { u1, u2 } = twiceTimeline(hold, t2);
  const evicted = t2 < hold;
  return `${SPEC} §5.2 (${evicted ? 'U2 evicts U1’s unconsumed entry: U1 re-runs at match' : 'U1 already matched: both contests live side by side'}): holder holds ${hold} ms, U2 asked@${t2} ⇒ U1 spoken@${u1.spokenAt}, U2 spoken@${u2?.spokenAt ?? '?'}, one handled each`;
}

async function replayTwice(hold: number, path: TwicePath): Promise<void> {
  const system = await startSystem();
  const { h, clock, wire } = system;
  holdingFallbackSkill(h, 'holder', 10, hold); // fallback_high
  const wiki = puppetCqSkill(h, 'wiki', { latencyMs: 0 });
  wiki.auto = { pong: true, answer: { answer: WIKI_ANSWER, conf: 0.7, afterMs: RESPONSE_MS } };
  await clock.flush();
  const t0 = clock.now();
  const observeTwice = (id: string): TwiceObserved => {
    const o = observe(wire, id, t0, ['wiki']);
    return { pings: o.pings, requests: o.requests.map((r) => Number(r.slice('wiki@'.length))), matched: o.matched, spoken: o.spoken, handled: o.handled };
  };
  const agree = (c: TwiceCtx, where: string): void => {
    expect(clock.now() - t0, `${where}: clock`).toBe(c.now);
    const expected = twiceExpected(hold, c);
    expect(observeTwice('u1'), `${where}: first utterance`).toEqual(expected.u1);
    expect(observeTwice('u2'), `${where}: second utterance`).toEqual(expected.u2);
    expect(h.logs.filter((l) => l['reason'] === 'ambiguous_correlation'), `${where}: ambiguous_correlation drops`).toEqual([]);
    expect(h.of('ovos.intent.unmatched'), `${where}: unmatched`).toEqual([]);
  };
  h.utter(QUESTION, { utteranceId: 'u1' });
  await clock.flush();
  agree(path.states[0]!, 'at the start');
  for (const [i, event] of path.events.entries()) {
    if (event.type === 'ASK_AGAIN') h.utter(QUESTION, { utteranceId: 'u2' });
    else await clock.advanceTo(t0 + event.at);
    await clock.flush();
    agree(path.states[i + 1]!, `after step ${i + 1} (${event.type === 'TICK' ? `tick ${event.mark}@${event.at}` : `ask again@${path.states[i + 1]!.now}`})`);
  }
  const final = path.states.at(-1)!;
  await clock.advanceTo(t0 + POLL_CEILING + CEILING + 2_000);
  const expected = twiceExpected(hold, { ...final, now: POLL_CEILING + CEILING + 2_000 });
  expect(observeTwice('u1'), 'long after: first utterance').toEqual(expected.u1);
  expect(observeTwice('u2'), 'long after: second utterance').toEqual(expected.u2);
  expect(h.of('ovos.utterance.handled'), 'exactly one handled per utterance').toHaveLength(2);
  expect(h.system.supervisor.size, 'no live contest left').toBe(0);
  h.system.close();
}

function twiceSuite(hold: number): void {
  const paths = generateTwicePaths(hold);
  describe(`holder holds its fallback pong ${hold} ms`, () => {
    it(`${SPEC} model d_hold_${hold}: ${paths.length} paths, eviction and side-by-side both reached`, () => {
      const asked = paths.map((p) => p.states.at(-1)!.askedAgainAt ?? -1);
      expect(asked.some((t2) => t2 < hold)).toBe(true);
      expect(asked.some((t2) => t2 >= hold)).toBe(true);
      expect(asked).toContain(0);
      expect(asked).toContain(hold - 1);
      expect(asked).toContain(hold);
    });
    for (const path of sampled(paths)) {
      it(describeTwice(hold, path), async () => {
        await replayTwice(hold, path);
      });
    }
  });
}

