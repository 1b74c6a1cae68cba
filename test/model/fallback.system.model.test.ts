/**
 * Model-based test of the fallback stages through the WHOLE system (orchestrator + supervisor + plugins on a
 * LocalBus and a ManualClock, test/support/harness.ts), against abstract models written from the spec text:
 * OVOS-FALLBACK-1 §5 (pool), §6.1 (sequential per-skill query, a silent skill is can_handle: false after the ping
 * timeout), §6.2 (first willing skill wins, exhausted pool → None), §7 (dispatch <skill_id>:fallback); and
 * OVOS-PIPELINE-1 §4.4 (match bound: a timed-out match is closed for good), §6 (lifecycle; EXACTLY ONE
 * ovos.utterance.handled per utterance on every path), §8 (handler trio, handler timeout). Plus the project rules
 * being implemented alongside (a skill whose connection closes is gone: never pinged again, the awaited one is passed
 * over at once, a dispatched one ends its handler at once with ovos.intent.handler.error; the circuit breaker).
 *
 * It replaces fallback.model.test.ts, which drove the bare contest machine with a recorder and let real bugs through:
 * here each path is replayed on the bus and what a bus user would see is asserted, at every step.
 *
 * WHY AN ABSTRACT MODEL: `createTestModel` (xstate/graph) rejects machines with `after`, so time is an explicit
 * event here; a machine tested against itself proves nothing anyway. Each model
 * is a small router machine whose states name the phase of the lifecycle (matching, handling, one state per outcome)
 * and whose transitions are computed by the pure spec functions below, each citing the clause it encodes. Every
 * expectation — which skill is pinged next and when, the dispatched skill, unmatched, the trio, handled — is computed
 * by the model, never read from the system.
 *
 *   time     events carry no times; the model computes where each tick goes, relative to its own next deadline (the
 *            earliest of the ping timeout T, the stage's match bound M, the handler timeout H):
 *            TICK_TO_DEADLINE_MINUS_1 (T-1: the awaited skill still counts), TICK_TO_DEADLINE (T: the deadline fires),
 *            TICK_PAST_DEADLINE (T+1: one ms after a deadline fired, so a late pong is tried at T and at T+1). No tick
 *            jumps over a deadline. The harness advances the ManualClock 1 ms at a time (`h.advance`).
 *   stimuli  each skill is played by the test over its own connection (`conn-<skill>`, test/support/fallback-wire.ts),
 *            every pong derived by `reply` from a ping: its own (willing / decline); its own after its timeout or its
 *            stage's cut (LATE_PONG, willing — from the most recent skill that never answered; in P3 also after the
 *            utterance was handled); or, from a skill not asked yet, the ping the awaited skill received (UNASKED_PONG,
 *            willing — from the next skill ahead, so it names the live contest). At most one stray pong per path.
 *            CLOSE closes a skill's connection: the awaited skill, the dispatched skill, or (at most one per path) a
 *            skill not asked yet, in the same pool or a later stage.
 *   checks   after every step: the clock; each session's timeline (every <skill>.fallback.ping with its time and
 *            payload {utterances, lang}, <skill>:fallback, ovos.intent.matched with intent_name and pipeline_id, the
 *            trio with skill_id / intent_name / exception, ovos.intent.unmatched, ovos.utterance.handled — each with the
 *            ordinal of its utterance_id) equals the model's, in order: so exactly one handled per utterance, never
 *            early; once every utterance is handled, no live contest and no pending timer is left.
 *
 * MODEL 1 — one utterance, session s1, pipeline [fallback_high, fallback_medium, fallback_low] with FALLBACK-1 §8.2's
 * example ranges (high [0,49], medium [50,74], low [75,100]). Parameter sets (skill → registered priority):
 *   P1 spread      A:10 (high) B:60 (medium) C:80 (low)  T=100 M=10000 H=250 — every hand-over crosses a stage; a
 *                  closed skill ahead is gone from a later stage's pool (registry).
 *   P2 one stage   A:10 B:20 C:30 (all high)             T=100 M=10000 H=250 — a closed skill ahead in the SAME pool
 *                  (the contest skips it).
 *   P3 match bound A:10 B:20 C:30 (all high)             T=100 M=150   H=250 — pool × T = 300 > M: the stage is cut at
 *                  its stage bound 145, 5 ms before M (A silent → B cut, C never asked; A declines → C cut); a pong after
 *                  the cut is ignored for good.
 *   Plus one named scenario each: every skill silent (A, B, C pinged at 0, T, 2T; unmatched at 3T — or the cut).
 * MODEL 2 — up to 4 utterances in one session: S:10 (high; silent unless it declines), D:20 (high; declines at once),
 *   W:80 (low; willing, completes at once); T=100. Breaker rule: 3 consecutive ping timeouts (any pong resets the
 *   count) leave S out of pools for 30 s of clock (at 30 s - 1 still out, at 30 s probed again). CLOSE of S or D
 *   between utterances: never pinged again, so the next skill is pinged at the utterance's own instant (no timeout).
 * MODEL 3 — two sessions at once (s1, s2, both at t=0, same text) with the same skills A:10 (high) and B:80 (low),
 *   T=100, H=250: each pong / completion is derived from its own session's message; time is shared; each session must
 *   see exactly its own model timeline.
 *
 * PATHS: shortest paths to every ABSTRACT model state (phase/outcome, the skill in focus, how the previous skill
 * ended, the late-pong candidate, who is gone, strays sent, the next deadline's kind and the clock's position against
 * it — not exact times), paths that are a prefix of another dropped (every step is checked, so a prefix adds
 * nothing); each path's events are then replayed through the model from the start, so its expectations are the
 * model's own for exactly that history. Counts (asserted by the first test of each block, PATH_COUNTS):
 *   model 1 P1 300, P2 300, P3 311; model 2 44; model 3 168 — 1123 paths, ~8 s for the file on 2 cores.
 *
 * TEETH (run by hand, each a temporary edit of machines/fallback/fallback.machine.ts, restored after): a decline ends
 * the contest; GONE of the awaited skill ignored; GONE of a skill ahead ignored; any pong taken as the awaited one's;
 * a willing pong from any skill wins; ping timeout T+1; a timeout ends the contest; hasNext / advance ignoring gone
 * skills; GONE of another skill ending the contest — each fails between 23 and 647 paths.
 */
import { describe, expect, it } from 'vitest';
import { assign, setup, type AnyStateMachine, type EventObject, type MachineContext } from 'xstate';
import { createTestModel } from 'xstate/graph';
import { createHarness, withConfig, type Harness } from '../support/harness.js';
import { ScriptedSkill, stampWire, timeline, type ScriptedSkillOptions, type Stamped } from '../support/fallback-wire.js';
import { sampled } from '../support/model-sample.js';

// ---------------------------------------------------------------------------------------------------------------
// The spec, as pure functions (no reference to the implementation).
// ---------------------------------------------------------------------------------------------------------------

const PIPELINE = ['fallback_high', 'fallback_medium', 'fallback_low'] as const;
/** OVOS-FALLBACK-1 §8.2 example (= the §3.3 tiers): each stage's inclusive priority range. */
const RANGES: ReadonlyArray<readonly [number, number]> = [
  [0, 49],
  [50, 74],
  [75, 100],
];
const LANG = 'en-US';
/** Breaker rule (project, brief): consecutive timeouts that suspend, and for how long (clock). */
const SUSPEND_AFTER = 3;
const SUSPEND_MS = 30_000;
const MAX_STRAYS = 1;
const PATH_COUNTS = { P1: 300, P2: 300, P3: 311, M2: 44, M3: 168 } as const;

interface World {
  readonly name: string;
  /** skill_id → registered priority (§3.1). Distinct priorities, so §5's order needs no tie-break. */
  readonly skills: Readonly<Record<string, number>>;
  /** FALLBACK-1 §6.1 per-skill ping timeout. */
  readonly T: number;
  /** PIPELINE-1 §4.4 match bound, per stage. */
  readonly M: number;
  /** PIPELINE-1 §8 handler timeout. */
  readonly H: number;
}

type Status = 'unasked' | 'awaiting' | 'willing' | 'declined' | 'timeout' | 'cut' | 'gone';
type Outcome = 'unmatched' | 'completed' | 'failed' | 'timedOut' | 'disconnected';
type Why = 'timeout' | 'skill' | 'disconnected';

/** One expected message of the session timeline (see test/support/fallback-wire.ts `timeline`). */
interface Expected {
  readonly at: number;
  readonly type: string;
  readonly u: number;
  readonly skill_id?: string;
  readonly intent_name?: string;
  readonly pipeline_id?: string;
  readonly exception?: Why;
  readonly utterances?: readonly string[];
  readonly lang?: string;
}

/** One utterance lifecycle as the spec describes it. */
interface Utt {
  /** Ordinal of the utterance in its session (1, 2, …). */
  readonly u: number;
  readonly text: string;
  /** ms since the test's t0. */
  readonly now: number;
  readonly phase: 'matching' | 'handling' | 'done';
  readonly outcome: Outcome | null;
  /** Index into PIPELINE of the stage matching now. */
  readonly stage: number;
  readonly stageAt: number;
  /** The stage's effective pool, built when its match began (§5). */
  readonly pool: readonly string[];
  readonly idx: number;
  readonly pingAt: number;
  readonly status: Readonly<Record<string, Status>>;
  /** Skills whose connection closed: unregistered, never pinged again. */
  readonly gone: readonly string[];
  /** Skills left out of every pool of this utterance (the breaker, model 2). */
  readonly excluded: readonly string[];
  readonly dispatched: string | null;
  readonly dispatchAt: number;
  /** The whole session timeline so far (earlier utterances included). */
  readonly wire: readonly Expected[];
  /** A deadline fired at this instant (enables TICK_PAST_DEADLINE). */
  readonly crossedAt: number | null;
  /** Stray pongs sent (they change nothing on the wire; recorded so the model state differs). */
  readonly strays: readonly string[];
  /** Skills pinged so far, in order. */
  readonly asked: readonly string[];
}

const awaitedOf = (u: Utt): string | null => (u.phase === 'matching' ? (u.pool[u.idx] ?? null) : null);

function entry(u: Utt, type: string, extra: Omit<Expected, 'at' | 'u' | 'type'> = {}): Expected {
  return { at: u.now, type, u: u.u, ...extra };
}

/** FALLBACK-1 §5 steps 1–4 (no session preference or denylist here): registered, in range, by priority ascending. */
function poolOf(w: World, u: Utt, stage: number): string[] {
  const [min, max] = RANGES[stage]!;
  return Object.entries(w.skills)
    .filter(([id, priority]) => priority >= min && priority <= max && !u.gone.includes(id) && !u.excluded.includes(id))
    .sort((a, b) => a[1] - b[1])
    .map(([id]) => id);
}

/** FALLBACK-1 §6.1: `<skill>.fallback.ping` {utterances, lang} to the skill at `idx`, now. */
function ping(u: Utt): Utt {
  const skill = u.pool[u.idx]!;
  return {
    ...u,
    pingAt: u.now,
    asked: [...u.asked, skill],
    status: { ...u.status, [skill]: 'awaiting' },
    wire: [...u.wire, entry(u, `${skill}.fallback.ping`, { utterances: [u.text], lang: LANG })],
  };
}

/** PIPELINE-1 §6: ends the lifecycle: the given messages, then EXACTLY ONE ovos.utterance.handled. */
function end(u: Utt, outcome: Outcome, messages: ReadonlyArray<Omit<Expected, 'at' | 'u'>>): Utt {
  return {
    ...u,
    phase: 'done',
    outcome,
    wire: [...u.wire, ...messages.map((m) => ({ at: u.now, u: u.u, ...m })), entry(u, 'ovos.utterance.handled')],
  };
}

/**
 * PIPELINE-1 §6: the stages from `from` on, in order. FALLBACK-1 §5: an empty pool returns None at once, so the next
 * stage begins in the same instant; no stage left → ovos.intent.unmatched then handled (PIPELINE-1 §6, §9.4).
 */
function enterStage(w: World, u: Utt, from: number): Utt {
  for (let stage = from; stage < PIPELINE.length; stage++) {
    const pool = poolOf(w, u, stage);
    if (pool.length > 0) return ping({ ...u, stage, stageAt: u.now, pool, idx: 0 });
  }
  return end({ ...u, stage: PIPELINE.length, pool: [], idx: 0 }, 'unmatched', [{ type: 'ovos.intent.unmatched' }]);
}

/** FALLBACK-1 §6.1: the awaited skill is done with; the next one in pool order, skipping gone ones; none → §6.2 None. */
function nextSkill(w: World, u: Utt): Utt {
  let idx = u.idx + 1;
  while (idx < u.pool.length && u.gone.includes(u.pool[idx]!)) idx++;
  return idx < u.pool.length ? ping({ ...u, idx }) : enterStage(w, u, u.stage + 1);
}

const settleAwaited = (u: Utt, status: Status): Utt => ({ ...u, status: { ...u.status, [awaitedOf(u)!]: status } });

/** FALLBACK-1 §6.2/§6.3/§7, PIPELINE-1 §6–§8: matched (intent "fallback", the stage's pipeline_id), dispatch, start. */
function dispatch(u: Utt): Utt {
  const skill = awaitedOf(u)!;
  const next = settleAwaited(u, 'willing');
  return {
    ...next,
    phase: 'handling',
    dispatched: skill,
    dispatchAt: u.now,
    wire: [
      ...u.wire,
      entry(u, 'ovos.intent.matched', { skill_id: skill, intent_name: 'fallback', pipeline_id: PIPELINE[u.stage]! }),
      entry(u, `${skill}:fallback`),
      entry(u, 'ovos.intent.handler.start', { skill_id: skill, intent_name: 'fallback' }),
    ],
  };
}

/** PIPELINE-1 §8: exactly one of complete / error (skill error, timeout, skill disconnected), then handled. */
function handlerEnd(u: Utt, outcome: Exclude<Outcome, 'unmatched'>): Utt {
  const who = { skill_id: u.dispatched!, intent_name: 'fallback' };
  if (outcome === 'completed') return end(u, outcome, [{ type: 'ovos.intent.handler.complete', ...who }]);
  const exception: Why = outcome === 'failed' ? 'skill' : outcome === 'timedOut' ? 'timeout' : 'disconnected';
  return end(u, outcome, [{ type: 'ovos.intent.handler.error', ...who, exception }]);
}

/**
 * Project decision (src/plugins/README.md "The match bound never throws a yes away"; PIPELINE-1 §4.4 leaves the bound's value to the
 * deployment): a fallback stage decides 5 ms before the match bound M, at most a tenth of M, so its result still counts.
 */
function stageBound(w: World, u: Utt): number {
  return u.stageAt + w.M - Math.min(5, Math.floor(w.M / 10));
}

/** The next instant something happens by itself: ping timeout or stage bound (matching), handler timeout. */
function deadlineOf(w: World, u: Utt): number | null {
  if (u.phase === 'matching') {
    const pingDeadline = u.pingAt + w.T;
    const matchDeadline = stageBound(w, u);
    if (pingDeadline === matchDeadline) throw new Error(`model ${w.name}: ping timeout and match bound tie at ${pingDeadline}`);
    return Math.min(pingDeadline, matchDeadline);
  }
  if (u.phase === 'handling') return u.dispatchAt + w.H;
  return null;
}

/**
 * The abstract state of an utterance that paths are generated over: the phase and outcome, the skill in focus (awaited
 * or dispatched), how the skill asked before it ended, the most recent skill that never answered (a late-pong
 * candidate), who is gone, the strays sent, which deadline is next and where the clock stands against it. Not the
 * exact times nor the whole history: those are still computed and checked on every path; the abstraction only
 * decides which paths are generated.
 */
function keyOfUtt(w: World, u: Utt): unknown {
  const deadline = deadlineOf(w, u);
  const next =
    u.phase === 'handling' ? 'handler' : u.phase === 'matching' ? (deadline === stageBound(w, u) ? 'match_bound' : 'ping_timeout') : 'none';
  const position =
    deadline === null ? 'done'
    : u.now === deadline - 1 ? 'deadline-1'
    : u.crossedAt === u.now ? 'at_crossing'
    : u.now === (u.phase === 'handling' ? u.dispatchAt : u.pingAt) ? 'just_started'
    : 'later';
  const focus = u.phase === 'matching' ? awaitedOf(u) : u.dispatched;
  const previous = u.phase === 'done' ? u.asked[u.asked.length - 1] : u.asked[u.asked.length - 2];
  const strays = u.strays.map((stray) => stray.split(' ')[0]);
  return [u.phase, u.outcome, focus, previous === undefined ? null : u.status[previous], lastUnanswered(u) ?? null, [...u.gone].sort(), strays, next, position];
}

/** Time passes to `to` (never beyond the next deadline); at the deadline, what the spec says fires. */
function tick(w: World, u: Utt, to: number): Utt {
  const deadline = deadlineOf(w, u);
  if (deadline === null) return { ...u, now: to };
  if (to > deadline) throw new Error(`model ${w.name}: a tick to ${to} jumps over the deadline ${deadline}`);
  if (to < deadline) return { ...u, now: to, crossedAt: null };
  const at: Utt = { ...u, now: to, crossedAt: to };
  // PIPELINE-1 §8 (MAY bound the handler): error with a timeout exception, then handled.
  if (u.phase === 'handling') return handlerEnd(at, 'timedOut');
  // PIPELINE-1 §4.4: the stage's match is closed for good (it decides at its stage bound, with nobody's yes in hand:
  // these skills are asked one at a time); the next stage begins now.
  if (deadline === stageBound(w, u)) return enterStage(w, settleAwaited(at, 'cut'), u.stage + 1);
  // FALLBACK-1 §6.1: no reply within the timeout = can_handle: false, skipped.
  return nextSkill(w, settleAwaited(at, 'timeout'));
}

function startUtterance(
  w: World,
  options: { u: number; text: string; now: number; gone?: readonly string[]; excluded?: readonly string[]; wire?: readonly Expected[] },
): Utt {
  const u: Utt = {
    u: options.u,
    text: options.text,
    now: options.now,
    phase: 'matching',
    outcome: null,
    stage: 0,
    stageAt: options.now,
    pool: [],
    idx: 0,
    pingAt: options.now,
    status: Object.fromEntries(Object.keys(w.skills).map((id) => [id, 'unasked' as Status])),
    gone: options.gone ?? [],
    excluded: options.excluded ?? [],
    dispatched: null,
    dispatchAt: 0,
    wire: options.wire ?? [],
    crossedAt: null,
    strays: [],
    asked: [],
  };
  return enterStage(w, u, 0);
}

// ---------------------------------------------------------------------------------------------------------------
// Events of one utterance, and one step. Events carry no times: the model computes where a tick goes.
// ---------------------------------------------------------------------------------------------------------------

type TickType = 'TICK_TO_DEADLINE_MINUS_1' | 'TICK_TO_DEADLINE' | 'TICK_PAST_DEADLINE';

type UttEvent =
  | { readonly type: 'PONG_WILLING'; readonly skill: string }
  | { readonly type: 'PONG_DECLINE'; readonly skill: string }
  | { readonly type: 'LATE_PONG'; readonly skill: string }
  | { readonly type: 'UNASKED_PONG'; readonly skill: string }
  | { readonly type: 'CLOSE'; readonly skill: string }
  | { readonly type: 'HANDLER_COMPLETE'; readonly skill: string }
  | { readonly type: 'HANDLER_ERROR'; readonly skill: string }
  | { readonly type: TickType };

const TICKS: readonly string[] = ['TICK_TO_DEADLINE_MINUS_1', 'TICK_TO_DEADLINE', 'TICK_PAST_DEADLINE'];
const isTick = (event: EventObject): event is { readonly type: TickType } => TICKS.includes(event.type);
const skillOf = (event: EventObject): string | undefined => ('skill' in event && typeof event.skill === 'string' ? event.skill : undefined);

/** Where a tick of this type goes from here (never beyond the next deadline), or null when it is not enabled. */
function tickTarget(w: World, u: Utt, type: TickType): number | null {
  const deadline = deadlineOf(w, u);
  if (deadline === null) return null;
  if (type === 'TICK_TO_DEADLINE_MINUS_1') return deadline - 1 > u.now ? deadline - 1 : null;
  if (type === 'TICK_TO_DEADLINE') return u.now === deadline - 1 ? deadline : null;
  return u.crossedAt === u.now && u.now + 1 < deadline - 1 ? u.now + 1 : null;
}

/** The most recently asked skill that never answered (timed out, or cut by the match bound) and is still connected. */
const lastUnanswered = (u: Utt): string | undefined =>
  [...u.asked].reverse().find((id) => (u.status[id] === 'timeout' || u.status[id] === 'cut') && !u.gone.includes(id));

/** Skills not asked yet and still connected, in asking order (priority: stages are ordered by range). */
const ahead = (w: World, u: Utt): string[] =>
  Object.entries(w.skills)
    .filter(([id]) => u.status[id] === 'unasked' && !u.gone.includes(id) && id !== awaitedOf(u))
    .sort((a, b) => a[1] - b[1])
    .map(([id]) => id);

/** One event on one utterance: the next model state, or null when the model does not enable the event there. */
function stepUtt(w: World, u: Utt, event: UttEvent): Utt | null {
  const skill = skillOf(event);
  if (u.phase === 'done') {
    // PIPELINE-1 §4.4: a pong for a match that the bound closed, arriving after the utterance was handled: ignored.
    if (event.type !== 'LATE_PONG' || skill === undefined || u.strays.length >= MAX_STRAYS || u.status[skill] !== 'cut' || u.gone.includes(skill)) return null;
    return { ...u, strays: [...u.strays, `late ${skill}`] };
  }
  const awaited = awaitedOf(u);
  if (isTick(event)) {
    const to = tickTarget(w, u, event.type);
    return to === null ? null : tick(w, u, to);
  }
  switch (event.type) {
    case 'PONG_WILLING':
      return skill !== undefined && skill === awaited ? dispatch(u) : null;
    case 'PONG_DECLINE':
      return skill !== undefined && skill === awaited ? nextSkill(w, settleAwaited(u, 'declined')) : null;
    case 'LATE_PONG': {
      // A pong after the skill's timeout, or after its stage was cut: changes nothing (FALLBACK-1 §6.1, PIPELINE-1 §4.4).
      if (skill === undefined || u.gone.includes(skill) || u.strays.length >= MAX_STRAYS) return null;
      const status = u.status[skill];
      return status === 'timeout' || status === 'cut' ? { ...u, strays: [...u.strays, `late ${skill}`] } : null;
    }
    case 'UNASKED_PONG':
      // A pong from a skill nobody asked (yet): §6.1 waits for the awaited skill's reply only; the skill is asked in turn.
      if (skill === undefined || awaited === null || skill === awaited || u.gone.includes(skill)) return null;
      if (u.status[skill] !== 'unasked' || u.strays.length >= MAX_STRAYS) return null;
      return { ...u, strays: [...u.strays, `unasked ${skill}`] };
    case 'CLOSE': {
      if (skill === undefined || u.gone.includes(skill)) return null;
      const gone = { ...u, gone: [...u.gone, skill] };
      // Rule: the awaited skill's connection closed → the contest moves to the next skill at once.
      if (skill === awaited) return nextSkill(w, settleAwaited(gone, 'gone'));
      // Rule: a skill not asked yet is unregistered: skipped in this pool, absent from later pools.
      if (u.phase === 'matching' && u.status[skill] === 'unasked') return gone;
      // Rule: the dispatched skill's connection closed → handler.error (skill disconnected), then handled, at once.
      if (u.phase === 'handling' && skill === u.dispatched) return handlerEnd(gone, 'disconnected');
      return null;
    }
    case 'HANDLER_COMPLETE':
      return u.phase === 'handling' && skill === u.dispatched ? handlerEnd(u, 'completed') : null;
    case 'HANDLER_ERROR':
      return u.phase === 'handling' && skill === u.dispatched ? handlerEnd(u, 'failed') : null;
  }
}

/** Which stimuli a parameter set explores (keeps the number of paths, and the run, small). */
interface Stimuli {
  /** LATE_PONG (the most recent skill that never answered) and UNASKED_PONG (the next skill ahead); ≤ MAX_STRAYS. */
  readonly strays: boolean;
  /** CLOSE of the awaited skill and of the dispatched skill. */
  readonly closeAwaited: boolean;
  /** CLOSE of a skill not asked yet: at most this many per path. */
  readonly closesAhead: number;
  readonly pastDeadline: boolean;
}

/** Candidate events of one utterance (the model's guards keep those it enables). */
function uttEvents(w: World, u: Utt, stimuli: Stimuli): UttEvent[] {
  const events: UttEvent[] = [];
  const late = lastUnanswered(u);
  if (u.phase === 'done') return stimuli.strays && late !== undefined ? [{ type: 'LATE_PONG', skill: late }] : [];
  const awaited = awaitedOf(u);
  if (awaited !== null) {
    events.push({ type: 'PONG_WILLING', skill: awaited }, { type: 'PONG_DECLINE', skill: awaited });
    if (stimuli.closeAwaited) events.push({ type: 'CLOSE', skill: awaited });
  }
  if (u.dispatched !== null) {
    events.push({ type: 'HANDLER_COMPLETE', skill: u.dispatched }, { type: 'HANDLER_ERROR', skill: u.dispatched });
    if (stimuli.closeAwaited) events.push({ type: 'CLOSE', skill: u.dispatched });
  }
  const closedAhead = u.gone.filter((id) => u.status[id] === 'unasked').length;
  if (u.phase === 'matching' && closedAhead < stimuli.closesAhead) for (const id of ahead(w, u)) events.push({ type: 'CLOSE', skill: id });
  if (stimuli.strays) {
    if (late !== undefined) events.push({ type: 'LATE_PONG', skill: late });
    const next = ahead(w, u)[0];
    if (awaited !== null && next !== undefined) events.push({ type: 'UNASKED_PONG', skill: next });
  }
  events.push({ type: 'TICK_TO_DEADLINE_MINUS_1' }, { type: 'TICK_TO_DEADLINE' });
  if (stimuli.pastDeadline) events.push({ type: 'TICK_PAST_DEADLINE' });
  return events;
}

// ---------------------------------------------------------------------------------------------------------------
// A router machine over the spec functions (named states, transitions computed by `step`), and its paths.
// ---------------------------------------------------------------------------------------------------------------

function routerModel<TContext extends MachineContext, TEvent extends EventObject>(
  id: string,
  context: TContext,
  step: (context: TContext, event: TEvent) => TContext | null,
  stateOf: (context: TContext) => string,
  states: Readonly<Record<string, readonly TEvent['type'][]>>,
): AnyStateMachine {
  const targets = Object.keys(states);
  const transitions = () =>
    targets.map((target) => ({
      guard: ({ context: c, event }: { context: TContext; event: TEvent }) => {
        const next = step(c, event);
        return next !== null && stateOf(next) === target;
      },
      target: `#${id}.${target}`,
      actions: assign(({ context: c, event }: { context: TContext; event: TEvent }) => step(c, event)!),
    }));
  const stateConfigs = Object.fromEntries(
    Object.entries(states).map(([name, types]) => [name, { on: Object.fromEntries(types.map((type) => [type, transitions()])) }]),
  );
  return setup({ types: { context: {} as TContext, events: {} as TEvent } }).createMachine({
    id,
    context,
    initial: stateOf(context),
    states: stateConfigs as never,
  }) as unknown as AnyStateMachine;
}

/** A model path replayed from the initial state: `states[i]` is the model state after `events[i - 1]`. */
interface ModelPath<TContext, TEvent> {
  readonly events: readonly TEvent[];
  readonly states: readonly TContext[];
}

/**
 * Shortest paths to every ABSTRACT model state (`abstractKey`), paths that are a prefix of another dropped (every step
 * of a path is checked, so a prefix adds nothing). Generation walks one representative per abstract state; each path's
 * events are then replayed from the initial state through `step`, so every expectation along a path is the model's
 * own for exactly that history. A path the replay rejects would be a model error: counted in `unreplayable`.
 * `scenarios`: named event sequences added as they are (the abstraction does not promise to keep a particular history).
 */
function pathsOf<TContext extends MachineContext, TEvent extends EventObject>(
  machine: AnyStateMachine,
  initial: TContext,
  step: (context: TContext, event: TEvent) => TContext | null,
  events: (context: TContext) => TEvent[],
  abstractKey: (context: TContext) => unknown,
  scenarios: ReadonlyArray<readonly TEvent[]> = [],
): { readonly paths: Array<ModelPath<TContext, TEvent>>; readonly unreplayable: number } {
  const model = createTestModel(machine, {
    events: (snapshot) => events((snapshot as { context: TContext }).context) as never,
    filterEvents: (snapshot, event) => snapshot.can(event),
    serializeState: (snapshot) => JSON.stringify([snapshot.value, abstractKey((snapshot as { context: TContext }).context)]),
  });
  const paths: Array<ModelPath<TContext, TEvent>> = [];
  let unreplayable = 0;
  const generated = model.getShortestPaths().map((path) => path.steps.slice(1).map((s) => s.event as TEvent));
  for (const pathEvents of [...generated, ...scenarios]) {
    const states: TContext[] = [initial];
    for (const event of pathEvents) {
      const next = step(states[states.length - 1]!, event);
      if (next === null) break;
      states.push(next);
    }
    if (states.length === pathEvents.length + 1) paths.push({ events: pathEvents, states });
    else unreplayable++;
  }
  return { paths, unreplayable };
}

// ---------------------------------------------------------------------------------------------------------------
// Driving the whole system.
// ---------------------------------------------------------------------------------------------------------------

function configFor(w: World) {
  return withConfig((config) => ({
    ...config,
    pipeline: [...PIPELINE],
    orchestrator: { ...config.orchestrator, matchTimeoutMs: w.M, handlerTimeoutMs: w.H },
    fallback: { ...config.fallback, stages: { fallback_high: RANGES[0]!, fallback_medium: RANGES[1]!, fallback_low: RANGES[2]! }, pingTimeoutMs: w.T, suspendAfterTimeouts: SUSPEND_AFTER, suspendMs: SUSPEND_MS },
  }));
}

/** The model's expectation as the matcher for `timeline()`. */
function expectedTimeline(wire: readonly Expected[]): unknown[] {
  return wire.map(({ exception, utterances, ...rest }) => ({
    ...rest,
    ...(utterances === undefined ? {} : { utterances: [...utterances] }),
    ...(exception === undefined
      ? {}
      : {
          exception:
            exception === 'timeout'
              ? expect.stringMatching(/timeout/i)
              : exception === 'skill'
                ? 'boom'
                : expect.stringMatching(/disconnect|connection|closed|gone/i),
        }),
  }));
}

interface Rig {
  readonly h: Harness;
  readonly stamped: Stamped[];
  readonly skills: ReadonlyMap<string, ScriptedSkill>;
  /** ms since the first utterance (t0). */
  readonly now: () => number;
}

type Auto = Pick<ScriptedSkillOptions, 'autoPong' | 'autoHandle'>;

async function rig(w: World, auto: Readonly<Record<string, Auto>> = {}): Promise<Rig> {
  const h = createHarness(configFor(w));
  const t0 = h.clock.now();
  const stamped = stampWire(h, () => t0);
  const skills = new Map(Object.entries(w.skills).map(([id, priority]) => [id, new ScriptedSkill(h, id, { priority, ...auto[id] })]));
  await h.settle();
  return { h, stamped, skills, now: () => h.clock.now() - t0 };
}

const skillIn = (r: Rig, id: string): ScriptedSkill => {
  const skill = r.skills.get(id);
  if (skill === undefined) throw new Error(`no skill ${id}`);
  return skill;
};

/** Play one utterance event on the bus in `session`; `before` / `after` are the model states around it. */
async function playUtt(r: Rig, session: string, before: Utt, after: Utt, event: UttEvent): Promise<void> {
  if (isTick(event)) {
    await r.h.advance(after.now - before.now);
    await r.h.settle();
    return;
  }
  const skill = skillIn(r, event.skill);
  switch (event.type) {
    case 'PONG_WILLING':
    case 'PONG_DECLINE':
      skill.pong(skill.lastPing(session), event.type === 'PONG_WILLING');
      break;
    case 'LATE_PONG':
      skill.pong(skill.lastPing(session), true);
      break;
    case 'UNASKED_PONG':
      // Derived from the ping the awaited skill received: it names the live contest.
      skill.pong(skillIn(r, awaitedOf(before)!).lastPing(session), true);
      break;
    case 'CLOSE':
      skill.close();
      break;
    case 'HANDLER_COMPLETE':
      skill.complete(skill.lastDispatch(session));
      break;
    case 'HANDLER_ERROR':
      skill.fail(skill.lastDispatch(session));
      break;
  }
  await r.h.settle();
}

/** The system agrees with the model: clock, each session's timeline, and nothing left running once all are handled. */
function agree(r: Rig, where: string, now: number, sessions: ReadonlyArray<{ readonly id: string; readonly wire: readonly Expected[] }>, idle: boolean): void {
  expect(r.now(), `${where}: clock (ms since t0)`).toBe(now);
  for (const session of sessions) {
    expect(timeline(r.stamped, session.id), `${where}: wire of session ${session.id}`).toEqual(expectedTimeline(session.wire));
  }
  if (idle) {
    expect(r.h.system.supervisor.size, `${where}: live contests once every utterance is handled`).toBe(0);
    expect(r.h.clock.pending, `${where}: pending timers once every utterance is handled`).toBe(0);
  }
}

function label(event: EventObject, before: { readonly now: number }, after: { readonly now: number }): string {
  const session = 'session' in event && typeof event.session === 'string' ? `${event.session}: ` : '';
  const skill = skillOf(event);
  const texts: Readonly<Record<string, string>> = {
    PONG_WILLING: `${skill} willing`,
    PONG_DECLINE: `${skill} declines`,
    LATE_PONG: `late pong ${skill}`,
    UNASKED_PONG: `unasked pong ${skill}`,
    CLOSE: `${skill} closes`,
    HANDLER_COMPLETE: `${skill} completes`,
    HANDLER_ERROR: `${skill} errors`,
    TICK_TO_DEADLINE_MINUS_1: `t=${after.now} (deadline-1)`,
    TICK_TO_DEADLINE: `t=${after.now} (deadline)`,
    TICK_PAST_DEADLINE: `t=${after.now} (deadline+1)`,
    UTTER: `utterance at t=${before.now}`,
    S_DECLINES: 'S declines',
    S_TIMES_OUT: `t=${after.now} (S times out)`,
    WAIT_TO_RESUME_MINUS_1: `t=${after.now} (resume-1)`,
    WAIT_TO_RESUME: `t=${after.now} (resume)`,
  };
  return session + (texts[event.type] ?? event.type);
}

const describePath = <C extends { readonly now: number }>(path: ModelPath<C, EventObject>): string =>
  path.events.map((event, i) => label(event, path.states[i]!, path.states[i + 1]!)).join(' → ') || '(utterance in)';

// ---------------------------------------------------------------------------------------------------------------
// MODEL 1 — one utterance.
// ---------------------------------------------------------------------------------------------------------------

const STIMULI_ALL: Stimuli = { strays: true, closeAwaited: true, closesAhead: 1, pastDeadline: true };
const P1: World = { name: 'P1 spread', skills: { A: 10, B: 60, C: 80 }, T: 100, M: 10_000, H: 250 };
const P2: World = { name: 'P2 one stage', skills: { A: 10, B: 20, C: 30 }, T: 100, M: 10_000, H: 250 };
const P3: World = { name: 'P3 match bound', skills: { A: 10, B: 20, C: 30 }, T: 100, M: 150, H: 250 };
const TEXT = 'how tall is the eiffel tower';

const OUTCOME_EVENTS = ['LATE_PONG'] as const;
const UTT_STATES = {
  matching: ['PONG_WILLING', 'PONG_DECLINE', 'LATE_PONG', 'UNASKED_PONG', 'CLOSE', 'TICK_TO_DEADLINE_MINUS_1', 'TICK_TO_DEADLINE', 'TICK_PAST_DEADLINE'],
  handling: ['HANDLER_COMPLETE', 'HANDLER_ERROR', 'LATE_PONG', 'CLOSE', 'TICK_TO_DEADLINE_MINUS_1', 'TICK_TO_DEADLINE', 'TICK_PAST_DEADLINE'],
  unmatched: OUTCOME_EVENTS,
  completed: OUTCOME_EVENTS,
  failed: OUTCOME_EVENTS,
  timedOut: OUTCOME_EVENTS,
  disconnected: OUTCOME_EVENTS,
} as const satisfies Record<string, readonly UttEvent['type'][]>;

const uttState = (u: Utt): string => (u.phase === 'done' ? u.outcome! : u.phase);

function model1(w: World, stimuli: Stimuli) {
  const initial = startUtterance(w, { u: 1, text: TEXT, now: 0 });
  const step = (u: Utt, e: UttEvent): Utt | null => stepUtt(w, u, e);
  const machine = routerModel<Utt, UttEvent>('model1', initial, step, uttState, UTT_STATES);
  // Named scenario: every skill stays silent (ticks only) — A, B, C at 0, T, 2T and unmatched at 3T, or the stage cut.
  const silent: UttEvent[] = [];
  for (let u: Utt | null = initial; u !== null && u.phase !== 'done'; ) {
    const type = tickTarget(w, u, 'TICK_TO_DEADLINE_MINUS_1') !== null ? 'TICK_TO_DEADLINE_MINUS_1' : 'TICK_TO_DEADLINE';
    silent.push({ type });
    u = step(u, { type });
  }
  return pathsOf<Utt, UttEvent>(machine, initial, step, (u) => uttEvents(w, u, stimuli), (u) => keyOfUtt(w, u), [silent]);
}

async function runModel1(w: World, path: ModelPath<Utt, UttEvent>): Promise<void> {
  const r = await rig(w);
  r.h.utter(TEXT, { session: { session_id: 's1' } });
  await r.h.settle();
  for (const [i, u] of path.states.entries()) {
    const event = path.events[i - 1];
    if (event !== undefined) await playUtt(r, 's1', path.states[i - 1]!, u, event);
    const where = event === undefined ? 'utterance in' : `after step ${i} (${label(event, path.states[i - 1]!, u)})`;
    agree(r, where, u.now, [{ id: 's1', wire: u.wire }], u.phase === 'done');
  }
  r.h.system.close();
}

/** The clauses a path exercises, for its test name. */
function clausesOf(path: ModelPath<Utt, UttEvent>): string {
  const end = path.states[path.states.length - 1]!;
  const clauses = ['OVOS-FALLBACK-1 §6.1/§6.2'];
  if (Object.values(end.status).includes('cut')) clauses.push('OVOS-PIPELINE-1 §4.4');
  if (end.outcome === 'unmatched') clauses.push('OVOS-PIPELINE-1 §6 unmatched');
  if (end.dispatched !== null) clauses.push('OVOS-FALLBACK-1 §7 / OVOS-PIPELINE-1 §8 trio');
  if (path.events.some((e) => e.type === 'CLOSE')) clauses.push('closed connection');
  if (end.phase === 'done') clauses.push('OVOS-PIPELINE-1 §6 exactly one handled');
  return clauses.join(', ');
}

const MODEL1: ReadonlyArray<readonly [keyof typeof PATH_COUNTS, World, Stimuli]> = [
  ['P1', P1, STIMULI_ALL],
  ['P2', P2, STIMULI_ALL],
  ['P3', P3, STIMULI_ALL],
];

for (const [key, w, stimuli] of MODEL1) {
  describe(`OVOS-FALLBACK-1 §5–§7 with OVOS-PIPELINE-1 §4.4/§6/§8, whole system, model 1 ${w.name} (${JSON.stringify(w.skills)}, T=${w.T}, M=${w.M}, H=${w.H})`, () => {
    const { paths, unreplayable } = model1(w, stimuli);
    const finals = paths.map((p) => p.states[p.states.length - 1]!);

    it(`OVOS-FALLBACK-1 §6 model 1 ${w.name}: ${PATH_COUNTS[key]} paths, every outcome and event reached`, () => {
      expect(unreplayable, 'paths the model itself cannot replay').toBe(0);
      expect(paths).toHaveLength(PATH_COUNTS[key]);
      const outcomes = new Set(finals.map((u) => u.outcome ?? u.phase));
      expect(outcomes).toEqual(new Set(['unmatched', 'completed', 'failed', 'timedOut', 'disconnected', 'matching', 'handling']));
      const events = new Set(paths.flatMap((p) => p.events.map((e) => e.type)));
      expect(events).toEqual(new Set([...UTT_STATES.matching, ...UTT_STATES.handling]));
      expect(new Set(finals.map((u) => u.dispatched))).toEqual(new Set([null, ...Object.keys(w.skills)]));
      if (w.M < 3 * w.T) {
        // The bound cuts the stage: some path ends unmatched at its stage bound with C never asked, and a late pong after it.
        expect(finals.some((u) => u.outcome === 'unmatched' && u.now === w.M - Math.min(5, Math.floor(w.M / 10)) && u.status['C'] === 'unasked')).toBe(true);
        expect(finals.some((u) => u.phase === 'done' && u.strays.length > 0 && Object.values(u.status).includes('cut'))).toBe(true);
      } else {
        // The all-silent chain: A, B, C pinged at 0, T, 2T; unmatched at 3T.
        const chain = finals.find((u) => u.outcome === 'unmatched' && Object.values(u.status).every((s) => s === 'timeout'));
        expect(chain?.wire.filter((e) => e.type.endsWith('.fallback.ping')).map((e) => [e.type, e.at])).toEqual([
          ['A.fallback.ping', 0],
          ['B.fallback.ping', w.T],
          ['C.fallback.ping', 2 * w.T],
        ]);
      }
    });

    for (const path of sampled(paths)) {
      const end = path.states[path.states.length - 1]!;
      it(`${clausesOf(path)} — ${w.name}: ${describePath(path)} ⇒ ${end.outcome ?? end.phase}`, () => runModel1(w, path));
    }
  });
}

// ---------------------------------------------------------------------------------------------------------------
// MODEL 2 — several utterances in one session: the breaker and connections closing between utterances.
// ---------------------------------------------------------------------------------------------------------------

const W2: World = { name: 'model 2', skills: { S: 10, D: 20, W: 80 }, T: 100, M: 10_000, H: 250 };
const MAX_UTTERANCES = 4;

interface Session2 {
  readonly now: number;
  /** Utterances begun so far. */
  readonly n: number;
  /** The utterance in flight (only while S is awaited: D and W answer at once), else null. */
  readonly utt: Utt | null;
  readonly wire: readonly Expected[];
  /** Breaker for S: consecutive ping timeouts, and the end of its suspension (null: not suspended). */
  readonly sTimeouts: number;
  readonly sUntil: number | null;
  readonly gone: readonly string[];
}

type M2Event =
  | { readonly type: 'UTTER' }
  | { readonly type: 'S_DECLINES' }
  | { readonly type: 'S_TIMES_OUT' }
  | { readonly type: 'CLOSE'; readonly skill: string }
  | { readonly type: 'WAIT_TO_RESUME_MINUS_1' }
  | { readonly type: 'WAIT_TO_RESUME' };

/** D declines and W is willing and completes, each at once (their scripted behaviour). */
function autoplay(u: Utt): Utt {
  let next = u;
  for (;;) {
    const awaited = awaitedOf(next);
    if (awaited === 'D') next = stepUtt(W2, next, { type: 'PONG_DECLINE', skill: 'D' })!;
    else if (awaited === 'W') next = stepUtt(W2, next, { type: 'PONG_WILLING', skill: 'W' })!;
    else if (next.phase === 'handling' && next.dispatched === 'W') next = stepUtt(W2, next, { type: 'HANDLER_COMPLETE', skill: 'W' })!;
    else return next;
  }
}

/** Breaker rule: S is out of every pool while the clock is before the end of its suspension. */
const sSuspended = (s: Session2): boolean => s.sUntil !== null && s.now < s.sUntil;

/** After S's turn: the rest of the utterance, and the breaker's update. */
function afterS(s: Session2, utt: Utt, answered: boolean): Session2 {
  const played = autoplay(utt);
  const base = { ...s, now: played.now, wire: played.wire, utt: played.phase === 'done' ? null : played };
  // Any pong shows S alive: the count restarts (and a suspension that had elapsed is over).
  if (answered) return { ...base, sTimeouts: 0, sUntil: null };
  const sTimeouts = s.sTimeouts + 1;
  // A probe after the suspension that times out suspends again at once (breaker.ts: for twice as long — not observed
  // within MAX_UTTERANCES); otherwise SUSPEND_AFTER consecutive timeouts suspend for SUSPEND_MS.
  if (s.sUntil !== null) return { ...base, sTimeouts, sUntil: utt.now + 2 * SUSPEND_MS };
  return { ...base, sTimeouts, sUntil: sTimeouts >= SUSPEND_AFTER ? utt.now + SUSPEND_MS : null };
}

function step2(s: Session2, event: M2Event): Session2 | null {
  const idle = s.utt === null;
  switch (event.type) {
    case 'UTTER': {
      if (!idle || s.n >= MAX_UTTERANCES) return null;
      const n = s.n + 1;
      const utt = startUtterance(W2, { u: n, text: `utterance ${n}`, now: s.now, gone: s.gone, excluded: sSuspended(s) ? ['S'] : [], wire: s.wire });
      const played = autoplay(utt);
      return { ...s, n, wire: played.wire, utt: played.phase === 'done' ? null : played };
    }
    case 'S_DECLINES':
      if (s.utt === null || awaitedOf(s.utt) !== 'S') return null;
      return afterS(s, stepUtt(W2, s.utt, { type: 'PONG_DECLINE', skill: 'S' })!, true);
    case 'S_TIMES_OUT': {
      if (s.utt === null || awaitedOf(s.utt) !== 'S') return null;
      return afterS(s, tick(W2, s.utt, deadlineOf(W2, s.utt)!), false);
    }
    case 'CLOSE':
      if (!idle || s.gone.includes(event.skill) || !['S', 'D'].includes(event.skill)) return null;
      return { ...s, gone: [...s.gone, event.skill] };
    case 'WAIT_TO_RESUME_MINUS_1':
      return idle && !s.gone.includes('S') && sSuspended(s) && s.now < s.sUntil! - 1 ? { ...s, now: s.sUntil! - 1 } : null;
    case 'WAIT_TO_RESUME':
      return idle && !s.gone.includes('S') && sSuspended(s) && s.now === s.sUntil! - 1 ? { ...s, now: s.sUntil! } : null;
  }
}

function events2(s: Session2): M2Event[] {
  if (s.utt !== null) return [{ type: 'S_DECLINES' }, { type: 'S_TIMES_OUT' }];
  return [{ type: 'UTTER' }, { type: 'CLOSE', skill: 'S' }, { type: 'CLOSE', skill: 'D' }, { type: 'WAIT_TO_RESUME_MINUS_1' }, { type: 'WAIT_TO_RESUME' }];
}

const state2 = (s: Session2): string => (s.utt !== null ? 'awaitingS' : s.n >= MAX_UTTERANCES ? 'finished' : 'idle');

function model2() {
  const initial: Session2 = { now: 0, n: 0, utt: null, wire: [], sTimeouts: 0, sUntil: null, gone: [] };
  const machine = routerModel<Session2, M2Event>('model2', initial, step2, state2, {
    idle: ['UTTER', 'CLOSE', 'WAIT_TO_RESUME_MINUS_1', 'WAIT_TO_RESUME'],
    awaitingS: ['S_DECLINES', 'S_TIMES_OUT'],
    finished: [],
  });
  // Abstract state: everything but the exact clock and the expected wire (both still checked on every path).
  const key = (s: Session2) => [s.n, s.utt === null ? null : keyOfUtt(W2, s.utt), s.sTimeouts, s.sUntil === null ? 'closed' : sSuspended(s) ? (s.now === s.sUntil - 1 ? 'open, resume-1' : 'open') : 'elapsed', s.gone];
  return pathsOf<Session2, M2Event>(machine, initial, step2, events2, key);
}

describe('OVOS-FALLBACK-1 §6.1 (silent = can_handle false) across utterances: circuit breaker and closed connections, whole system, model 2', () => {
  const { paths, unreplayable } = model2();
  const finals = paths.map((p) => p.states[p.states.length - 1]!);

  it(`OVOS-FALLBACK-1 §6.1 model 2: ${PATH_COUNTS.M2} paths; suspension, probe and closes all reached`, () => {
    expect(unreplayable, 'paths the model itself cannot replay').toBe(0);
    expect(paths).toHaveLength(PATH_COUNTS.M2);
    const sPingsOf = (s: Session2): string => s.wire.filter((e) => e.type === 'S.fallback.ping').map((e) => e.u).join();
    // The 4th utterance does not ping S after 3 timeouts … and, once the suspension has elapsed, S is probed again.
    expect(finals.some((s) => s.n === 4 && sPingsOf(s) === '1,2,3')).toBe(true);
    expect(finals.some((s) => s.n === 4 && sPingsOf(s) === '1,2,3,4')).toBe(true);
    // A closed S is never pinged again: the next skill is pinged at the utterance's own instant.
    expect(finals.some((s) => s.gone.includes('S') && s.n === 4)).toBe(true);
    expect(new Set(paths.flatMap((p) => p.events.map((e) => e.type)))).toEqual(
      new Set(['UTTER', 'S_DECLINES', 'S_TIMES_OUT', 'CLOSE', 'WAIT_TO_RESUME_MINUS_1', 'WAIT_TO_RESUME']),
    );
  });

  for (const path of sampled(paths)) {
    const end = path.states[path.states.length - 1]!;
    const clauses = ['OVOS-FALLBACK-1 §6.1 breaker'];
    if (path.events.some((e) => e.type === 'CLOSE')) clauses.push('closed connection');
    clauses.push('OVOS-PIPELINE-1 §6 exactly one handled per utterance');
    it(`${clauses.join(', ')} — ${describePath(path)} (${end.n} utterances)`, async () => {
      const r = await rig(W2, { D: { autoPong: () => false }, W: { autoPong: () => true, autoHandle: () => 'complete' } });
      for (const [i, s] of path.states.entries()) {
        const event = path.events[i - 1];
        const before = path.states[i - 1] ?? s;
        if (event !== undefined) {
          switch (event.type) {
            case 'UTTER':
              r.h.utter(`utterance ${s.n}`, { session: { session_id: 's1' } });
              break;
            case 'S_DECLINES':
              skillIn(r, 'S').pong(skillIn(r, 'S').lastPing('s1'), false);
              break;
            case 'S_TIMES_OUT':
              await r.h.advance(s.now - before.now);
              break;
            case 'CLOSE':
              skillIn(r, event.skill).close();
              break;
            case 'WAIT_TO_RESUME_MINUS_1':
            case 'WAIT_TO_RESUME':
              // Idle: no timer can be due (checked), so the clock jumps instead of stepping 30 s 1 ms at a time.
              expect(r.h.clock.pending, 'pending timers while idle').toBe(0);
              r.h.clock.advance(s.now - before.now);
              break;
          }
          await r.h.settle();
        }
        agree(r, event === undefined ? 'start' : `after step ${i} (${label(event, before, s)})`, s.now, [{ id: 's1', wire: s.wire }], s.utt === null);
      }
      r.h.system.close();
    });
  }
});

// ---------------------------------------------------------------------------------------------------------------
// MODEL 3 — two sessions at once with the same skills.
// ---------------------------------------------------------------------------------------------------------------

const W3: World = { name: 'model 3', skills: { A: 10, B: 80 }, T: 100, M: 10_000, H: 250 };
const SESSIONS = ['s1', 's2'] as const;
type SessionId = (typeof SESSIONS)[number];
const TEXT3 = 'what is a fallback';

interface Two {
  readonly now: number;
  readonly s1: Utt;
  readonly s2: Utt;
}

type M3Event =
  | { readonly type: 'PONG_WILLING' | 'PONG_DECLINE' | 'HANDLER_COMPLETE'; readonly session: SessionId; readonly skill: string }
  | { readonly type: 'TICK_TO_DEADLINE_MINUS_1' | 'TICK_TO_DEADLINE' };

/** The shared clock's next deadline: the earliest of both sessions'. */
function deadline3(t: Two): number | null {
  const deadlines = SESSIONS.map((id) => deadlineOf(W3, t[id])).filter((d): d is number => d !== null);
  return deadlines.length === 0 ? null : Math.min(...deadlines);
}

function step3(t: Two, event: M3Event): Two | null {
  if (event.type === 'TICK_TO_DEADLINE_MINUS_1' || event.type === 'TICK_TO_DEADLINE') {
    const deadline = deadline3(t);
    if (deadline === null) return null;
    const to = event.type === 'TICK_TO_DEADLINE_MINUS_1' ? (deadline - 1 > t.now ? deadline - 1 : null) : t.now === deadline - 1 ? deadline : null;
    return to === null ? null : { now: to, s1: tick(W3, t.s1, to), s2: tick(W3, t.s2, to) };
  }
  if (!('session' in event) || !SESSIONS.includes(event.session)) return null;
  const next = stepUtt(W3, t[event.session], { type: event.type, skill: event.skill });
  return next === null ? null : { ...t, [event.session]: next };
}

function events3(t: Two): M3Event[] {
  const events: M3Event[] = [];
  for (const session of SESSIONS) {
    const u = t[session];
    const awaited = awaitedOf(u);
    if (awaited !== null) events.push({ type: 'PONG_WILLING', session, skill: awaited }, { type: 'PONG_DECLINE', session, skill: awaited });
    if (u.phase === 'handling') events.push({ type: 'HANDLER_COMPLETE', session, skill: u.dispatched! });
  }
  events.push({ type: 'TICK_TO_DEADLINE_MINUS_1' }, { type: 'TICK_TO_DEADLINE' });
  return events;
}

function model3() {
  const initial: Two = {
    now: 0,
    s1: startUtterance(W3, { u: 1, text: TEXT3, now: 0 }),
    s2: startUtterance(W3, { u: 1, text: TEXT3, now: 0 }),
  };
  const machine = routerModel<Two, M3Event>('model3', initial, step3, (t) => (t.s1.phase === 'done' && t.s2.phase === 'done' ? 'done' : 'running'), {
    running: ['PONG_WILLING', 'PONG_DECLINE', 'HANDLER_COMPLETE', 'TICK_TO_DEADLINE_MINUS_1', 'TICK_TO_DEADLINE'],
    done: [],
  });
  // Abstract state: each session's, and which session's deadline comes first.
  const key = (t: Two) => [keyOfUtt(W3, t.s1), keyOfUtt(W3, t.s2), Math.sign((deadlineOf(W3, t.s1) ?? Infinity) - (deadlineOf(W3, t.s2) ?? Infinity))];
  return pathsOf<Two, M3Event>(machine, initial, step3, events3, key);
}

describe('OVOS-FALLBACK-1 §6.1 / OVOS-MSG-1 §5: two sessions at once with the same skills, pongs never cross sessions, whole system, model 3', () => {
  const { paths, unreplayable } = model3();

  it(`OVOS-FALLBACK-1 §6.1 model 3: ${PATH_COUNTS.M3} paths; both sessions reach every outcome`, () => {
    expect(unreplayable, 'paths the model itself cannot replay').toBe(0);
    expect(paths).toHaveLength(PATH_COUNTS.M3);
    const finals = paths.map((p) => p.states[p.states.length - 1]!);
    for (const session of SESSIONS) {
      expect(new Set(finals.map((t) => t[session].outcome))).toEqual(new Set([null, 'unmatched', 'completed', 'timedOut']));
    }
    // The two sessions end with different skills on some path (one dispatches A, the other B).
    expect(finals.some((t) => t.s1.dispatched !== null && t.s2.dispatched !== null && t.s1.dispatched !== t.s2.dispatched)).toBe(true);
  });

  for (const path of sampled(paths)) {
    const end = path.states[path.states.length - 1]!;
    const name = `OVOS-FALLBACK-1 §6.1/§6.2 per session, OVOS-PIPELINE-1 §6 exactly one handled each — ${describePath(path)} ⇒ s1 ${end.s1.outcome ?? end.s1.phase}, s2 ${end.s2.outcome ?? end.s2.phase}`;
    it(name, async () => {
      const r = await rig(W3);
      // Both utterances at once: same text, same skills, different sessions.
      for (const session of SESSIONS) r.h.utter(TEXT3, { session: { session_id: session } });
      await r.h.settle();
      for (const [i, t] of path.states.entries()) {
        const event = path.events[i - 1];
        const before = path.states[i - 1] ?? t;
        if (event !== undefined) {
          if (!('session' in event)) {
            await r.h.advance(t.now - before.now);
            await r.h.settle();
          } else {
            // Each pong / completion derived from the message its own session received.
            await playUtt(r, event.session, before[event.session], t[event.session], { type: event.type, skill: event.skill });
          }
        }
        const idle = t.s1.phase === 'done' && t.s2.phase === 'done';
        const where = event === undefined ? 'both utterances in' : `after step ${i} (${label(event, before, t)})`;
        agree(r, where, t.now, SESSIONS.map((id) => ({ id, wire: t[id].wire })), idle);
      }
      r.h.system.close();
    });
  }
});
