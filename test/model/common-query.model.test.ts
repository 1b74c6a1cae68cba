/**
 * Model-based test of the common-query contest, OVOS-COMMON-QUERY-1 §6.3 (poll window, early close), §7.2
 * (collection window sized from latency_ms, clamped, early termination) and §8 step 3 (fast win against the live
 * policy), with the rules this project chose where the spec leaves a choice (README "Decisions the specs leave to us").
 *
 * THE MODEL is written from the spec and the README rule, not from machines/common-query/common-query.machine.ts.
 * `createTestModel` rejects `after`, so time is an explicit event here (ENGINEERING-NOTES "Time in tests"); the system
 * under test is the real `commonQueryMachine` actor on a `ManualClock`, with `sendPing` / `sendRequests` recorders.
 *
 *   parameters  pollWindowMs P = 500, pollQuietMs Q = 20, collectionInitialMs I = 3000, collectionCeilingMs C = 5000,
 *               policy minConfidence 0.5, fastWinConfidence 0.9. Two skills that may claim: X and Y.
 *   rule        poll: closes Q after the most recent claim, or at the ceiling P, whichever is first; no claim → it runs
 *               to P and the contest ends with no claimant. Requests go to every claimant at the instant the poll
 *               closes. Collection window W = max over claimants of latency_ms (missing → I), clamped to C; it ends at
 *               requests + W, or at once when every claimant responded (a decline counts), or on a fast win: a
 *               response with conf ≥ 0.9 (and ≥ 0.5, not blacklisted) once the live policy is known — when the
 *               response arrives, or at JOIN if it arrived before. A response that is both the last one outstanding
 *               and a fast win is labelled fast_win (the model's naming choice: §8 step 3 "stop waiting and select").
 *   configs     A  policy known from the start; X claims with latency_ms 200, Y without latency_ms (→ I = 3000);
 *                  full poll: claims at 0, at the quiet deadline - 1 and at the ceiling - 1.
 *               B  policy known from the start, Y blacklisted; X latency_ms 200, Y latency_ms 9000 (clamped to C).
 *               C  early start: policy null until JOIN (§5.1); X latency_ms 200, Y without latency_ms.
 *               D  A's policy and latencies, plus the unsolicited events STRAY_RESPONSE and LATE_PONG.
 *               B, C and D claim only at 0 (the poll rule does not depend on the policy; A covers its boundaries); D
 *               also has no window-end-1 tick (A, B, C cover it); only D has unsolicited events. Each split keeps the
 *               path count, and the run, small.
 *   states      polling | collecting | done (final); context: now (ms since start), claimants (in claim order),
 *               lastClaimAt, requests ({at, to} or null), responses, joined, strays (unsolicited events, per phase),
 *               closedBy, doneAt.
 *   events      X_CLAIMS / Y_CLAIMS                     pong can_answer: true during the poll (a new claimant)
 *               {X,Y}_ANSWERS_CONF_0_7 / _FAST_0_95 / _DECLINES   response of a pending claimant during collection
 *               TICK_TO_QUIET[_MINUS_1], TICK_TO_CEILING[_MINUS_1]   advance to the poll's next deadline (or 1 ms
 *                                                        before it); QUIET when the quiet deadline comes first
 *               TICK_TO_WINDOW_END[_MINUS_1]            advance to the collection deadline (or 1 ms before it)
 *               STRAY_RESPONSE {skill}                  a conf-0.95 response nobody asked for: during the poll from
 *                                                        a claimant (not requested yet), during collection from a
 *                                                        non-claimant — must change nothing
 *               LATE_PONG {skill}                       a claim after the poll closed — must change nothing
 *               JOIN                                    (config C) `match` joins with the live policy
 *               Claims and responses are enabled only where they are new (a skill claims once, a claimant responds once).
 *
 * BOUNDARY VALUES: ticks are relative to the model's own next deadline, so T-1 and T are reached for the quiet deadline
 * (e.g. X claims at 0, Y at 19 → the poll closes at 39, not 20), for the ceiling (X claims at 499 → closes at 500, not
 * 519) and for the collection window (responses at W-1 still count; at W the window has closed). No tick ever jumps
 * over a deadline.
 *
 * "CHANGE NOTHING" EVENTS: the model records an unsolicited event in `strays` (at most one per phase; the record is
 * kept to the end), so such an event leads to a distinct model state and later events still follow it (e.g. a late
 * pong from a non-claimant, then the window end: no request to it, the same deadline; a 0.95 response from X during the
 * poll, then X's real answer after the request: it is X's response, not a duplicate). Paths are
 * shortest paths to every model state; events the model does not enable (`snapshot.can(event)` is false) are filtered
 * out, so no path contains a no-op the model did not mean.
 *
 * At every model state the SUT must agree: clock time, the pings (one, at 0), the requests (none, or one batch at the
 * poll close to exactly the claimants, in claim order), done-ness and the time it finished, the output (closedBy,
 * claimants with latency_ms, responses' skill_id / answer / conf in arrival order) and the pending timers (≥ 1 while
 * active — some deadline is always ahead; 0 once done).
 */
import { describe, expect, it } from 'vitest';
import { and, assign, createActor, setup, type SnapshotFrom } from 'xstate';
import { createTestModel } from 'xstate/graph';
import {
  commonQueryMachine,
  type Claimant,
  type ClosedBy,
  type CommonQueryEvent,
  type CommonQueryOutput,
} from '../../machines/common-query/common-query.machine.js';
import { createMessage } from '../../src/bus/message.js';
import { ManualClock } from '../../src/clock/manual-clock.js';
import type { SelectionPolicy } from '../../src/plugins/common-query/selection.js';

const P = 500;
const Q = 20;
const I = 3_000;
const C = 5_000;
const MIN_CONF = 0.5;
const FAST_WIN = 0.9;
const T0 = 1_700_000_000_000;
const CLAUSE = 'OVOS-COMMON-QUERY-1 §6.3/§7.2/§8 model';
const UTTERANCE = 'what is the capital of france';

const SKILLS = ['X', 'Y'] as const;
type Skill = (typeof SKILLS)[number];

type ResponseKind = 'CONF_0_7' | 'FAST_0_95' | 'DECLINES';
const RESPONSE_KINDS: readonly ResponseKind[] = ['CONF_0_7', 'FAST_0_95', 'DECLINES'];
const CONF: Readonly<Record<ResponseKind, number | null>> = { CONF_0_7: 0.7, FAST_0_95: 0.95, DECLINES: null };
const answerOf = (skill: Skill): string => `${skill}: Paris is the capital of France.`;

interface ModelConfig {
  readonly id: 'A' | 'B' | 'C' | 'D';
  readonly title: string;
  readonly latency: Readonly<Record<Skill, number | undefined>>;
  /** true: `match` started the contest with the live policy; false: early start, the policy arrives with JOIN. */
  readonly policyFromStart: boolean;
  readonly blacklisted: readonly Skill[];
  /** Where the T-1 ticks apply: 'poll+window' (claims also at quiet deadline - 1 and ceiling - 1, responses at
   *  window end - 1), 'window' (claims only at 0), 'none' (claims at 0, responses at the request instant). */
  readonly minus1: 'poll+window' | 'window' | 'none';
  /** Unsolicited events (STRAY_RESPONSE, LATE_PONG) are part of this config's event set. */
  readonly strays: boolean;
}

const CONFIGS: readonly ModelConfig[] = [
  {
    id: 'A',
    title: 'policy known, X latency 200, Y no latency_ms',
    latency: { X: 200, Y: undefined },
    policyFromStart: true,
    blacklisted: [],
    minus1: 'poll+window',
    strays: false,
  },
  {
    id: 'B',
    title: 'policy known, Y blacklisted, X latency 200, Y latency 9000',
    latency: { X: 200, Y: 9_000 },
    policyFromStart: true,
    blacklisted: ['Y'],
    minus1: 'window',
    strays: false,
  },
  {
    id: 'C',
    title: 'early start (policy null until JOIN), X latency 200, Y no latency_ms',
    latency: { X: 200, Y: undefined },
    policyFromStart: false,
    blacklisted: [],
    minus1: 'window',
    strays: false,
  },
  {
    id: 'D',
    title: 'policy known, X latency 200, Y no latency_ms, unsolicited events',
    latency: { X: 200, Y: undefined },
    policyFromStart: true,
    blacklisted: [],
    minus1: 'none',
    strays: true,
  },
];

const policyOf = (config: ModelConfig): SelectionPolicy => ({
  minConfidence: MIN_CONF,
  fastWinConfidence: FAST_WIN,
  blacklistedSkills: [...config.blacklisted],
});

interface ModelClaimant {
  readonly skill: Skill;
  readonly latency_ms: number | null;
}

interface ModelResponse {
  readonly skill: Skill;
  readonly kind: ResponseKind;
  readonly at: number;
}

interface ModelContext {
  /** Model clock, ms since the contest started. */
  readonly now: number;
  /** In claim order (§6.2). */
  readonly claimants: readonly ModelClaimant[];
  readonly lastClaimAt: number | null;
  /** The one request batch (§7.1): when and to whom, or null before the poll closed. */
  readonly requests: { readonly at: number; readonly to: readonly Skill[] } | null;
  /** In arrival order. */
  readonly responses: readonly ModelResponse[];
  /** The live policy is known (§5.1). */
  readonly joined: boolean;
  /** Unsolicited events so far, at most one per phase (keys like `poll:STRAY_RESPONSE:X`). */
  readonly strays: readonly string[];
  readonly closedBy: ClosedBy | null;
  readonly doneAt: number | null;
}

type ClaimType = `${Skill}_CLAIMS`;
type AnswerType = `${Skill}_ANSWERS_${Exclude<ResponseKind, 'DECLINES'>}` | `${Skill}_DECLINES`;
type PollTickType = 'TICK_TO_QUIET_MINUS_1' | 'TICK_TO_QUIET' | 'TICK_TO_CEILING_MINUS_1' | 'TICK_TO_CEILING';
type WindowTickType = 'TICK_TO_WINDOW_END_MINUS_1' | 'TICK_TO_WINDOW_END';

type ModelEvent =
  | { readonly type: ClaimType }
  | { readonly type: AnswerType }
  | { readonly type: PollTickType | WindowTickType; readonly ms: number }
  | { readonly type: 'STRAY_RESPONSE'; readonly skill: Skill }
  | { readonly type: 'LATE_PONG'; readonly skill: Skill }
  | { readonly type: 'JOIN' };

const ALL_EVENT_TYPES: readonly string[] = [
  'X_CLAIMS',
  'Y_CLAIMS',
  ...SKILLS.flatMap((s) => [`${s}_ANSWERS_CONF_0_7`, `${s}_ANSWERS_FAST_0_95`, `${s}_DECLINES`]),
  'TICK_TO_QUIET_MINUS_1',
  'TICK_TO_QUIET',
  'TICK_TO_CEILING_MINUS_1',
  'TICK_TO_CEILING',
  'TICK_TO_WINDOW_END_MINUS_1',
  'TICK_TO_WINDOW_END',
  'STRAY_RESPONSE',
  'LATE_PONG',
  'JOIN',
];

const answerType = (skill: Skill, kind: ResponseKind): AnswerType =>
  kind === 'DECLINES' ? `${skill}_DECLINES` : `${skill}_ANSWERS_${kind}`;

/** The skill and kind of a claimant response event, or null for any other event. */
function responseOf(event: ModelEvent): { readonly skill: Skill; readonly kind: ResponseKind } | null {
  for (const skill of SKILLS) {
    for (const kind of RESPONSE_KINDS) if (event.type === answerType(skill, kind)) return { skill, kind };
  }
  return null;
}

function claimOf(event: ModelEvent): Skill | null {
  return SKILLS.find((skill) => event.type === `${skill}_CLAIMS`) ?? null;
}

// ---- The rule, from the spec and the README (not from the implementation) -------------------------------------

/** §6.3 + README: the poll closes Q after the most recent claim, or at the ceiling P, whichever comes first. */
const pollDeadline = (c: ModelContext): number => (c.lastClaimAt === null ? P : Math.min(P, c.lastClaimAt + Q));
/** Which deadline that is: the quiet one only when it comes strictly before the ceiling. */
const pollDeadlineKind = (c: ModelContext): 'QUIET' | 'CEILING' =>
  c.lastClaimAt !== null && c.lastClaimAt + Q < P ? 'QUIET' : 'CEILING';
/** §7.2 + README: the largest latency_ms (missing → I), clamped to C. */
const collectionWindow = (claimants: readonly ModelClaimant[]): number =>
  Math.min(C, Math.max(...claimants.map((c) => c.latency_ms ?? I)));
const windowEnd = (c: ModelContext): number => {
  if (c.requests === null) throw new Error('model: no window before the requests');
  return c.requests.at + collectionWindow(c.claimants);
};
const nextDeadline = (c: ModelContext): number => (c.requests === null ? pollDeadline(c) : windowEnd(c));

/** The target time of a tick event from state c, or null when the tick does not apply there. */
function tickTarget(c: ModelContext, type: string): number | null {
  if (c.requests === null) {
    const kind = pollDeadlineKind(c);
    if (type === `TICK_TO_${kind}`) return pollDeadline(c);
    if (type === `TICK_TO_${kind}_MINUS_1`) return pollDeadline(c) - 1;
    return null;
  }
  if (type === 'TICK_TO_WINDOW_END') return windowEnd(c);
  if (type === 'TICK_TO_WINDOW_END_MINUS_1') return windowEnd(c) - 1;
  return null;
}

const phaseOf = (c: ModelContext): 'poll' | 'collection' => (c.requests === null ? 'poll' : 'collection');
/** At most one unsolicited event per phase (it stays recorded, so what follows it is explored too). */
const noStrayThisPhase = (c: ModelContext): boolean => !c.strays.some((key) => key.startsWith(`${phaseOf(c)}:`));

function buildModel(config: ModelConfig) {
  /** §8 steps 1–3 under the live policy: answer present, conf ≥ min, not blacklisted, conf ≥ fast-win threshold. */
  const isFastWin = (r: { readonly skill: Skill; readonly kind: ResponseKind }): boolean => {
    const conf = CONF[r.kind];
    return conf !== null && conf >= MIN_CONF && !config.blacklisted.includes(r.skill) && conf >= FAST_WIN;
  };

  return setup({
    types: { context: {} as ModelContext, events: {} as ModelEvent },
    guards: {
      newClaimant: ({ context, event }) => {
        const skill = claimOf(event);
        return skill !== null && !context.claimants.some((c) => c.skill === skill);
      },
      hasClaimants: ({ context }) => context.claimants.length > 0,
      /** A tick to (or to 1 ms before) the next deadline, strictly forward in time. */
      tickApplies: ({ context, event }) => {
        if (!('ms' in event)) return false;
        const target = tickTarget(context, event.type);
        const minus1 = config.minus1 === 'poll+window' || (config.minus1 === 'window' && context.requests !== null);
        if (event.type.endsWith('_MINUS_1') && !minus1) return false;
        return target !== null && target > context.now && event.ms === target - context.now;
      },
      pendingClaimant: ({ context, event }) => {
        const r = responseOf(event);
        return (
          r !== null &&
          context.claimants.some((c) => c.skill === r.skill) &&
          !context.responses.some((x) => x.skill === r.skill)
        );
      },
      respIsFastWin: ({ context, event }) => {
        const r = responseOf(event);
        return r !== null && context.joined && isFastWin(r);
      },
      respCompletes: ({ context }) => context.responses.length + 1 === context.claimants.length,
      notJoined: ({ context }) => !context.joined,
      fastWinAlreadyIn: ({ context }) => context.responses.some(isFastWin),
      /** During the poll: a claimant answering before it was asked; during collection: a non-claimant's response. */
      newStrayResponse: ({ context, event }) =>
        event.type === 'STRAY_RESPONSE' &&
        config.strays &&
        noStrayThisPhase(context) &&
        context.claimants.some((c) => c.skill === event.skill) === (context.requests === null),
      newLatePong: ({ context, event }) =>
        event.type === 'LATE_PONG' && config.strays && noStrayThisPhase(context),
    },
    actions: {
      claim: assign(({ context, event }) => {
        const skill = claimOf(event);
        if (skill === null) throw new Error('model: claim without a skill');
        return {
          claimants: [...context.claimants, { skill, latency_ms: config.latency[skill] ?? null }],
          lastClaimAt: context.now,
        };
      }),
      advance: assign(({ context, event }) => ({ now: context.now + ('ms' in event ? event.ms : 0) })),
      /** §7.1: one batch, to every claimant, at the instant the poll closes. */
      sendRequests: assign(({ context }) => ({
        requests: { at: context.now, to: context.claimants.map((c) => c.skill) },
      })),
      respond: assign(({ context, event }) => {
        const r = responseOf(event);
        if (r === null) throw new Error('model: respond without a response');
        return { responses: [...context.responses, { ...r, at: context.now }] };
      }),
      join: assign({ joined: true }),
      close: assign(({ context }, params: { by: ClosedBy }) => ({ closedBy: params.by, doneAt: context.now })),
      recordStray: assign(({ context, event }) => ({
        strays: 'skill' in event ? [...context.strays, `${phaseOf(context)}:${event.type}:${event.skill}`] : context.strays,
      })),
    },
  }).createMachine({
    id: `commonQuerySpec${config.id}`,
    context: {
      now: 0,
      claimants: [],
      lastClaimAt: null,
      requests: null,
      responses: [],
      joined: config.policyFromStart,
      strays: [],
      closedBy: null,
      doneAt: null,
    },
    initial: 'polling',
    states: {
      polling: {
        on: {
          X_CLAIMS: { guard: 'newClaimant', actions: 'claim' },
          Y_CLAIMS: { guard: 'newClaimant', actions: 'claim' },
          TICK_TO_QUIET_MINUS_1: { guard: 'tickApplies', actions: 'advance' },
          TICK_TO_CEILING_MINUS_1: { guard: 'tickApplies', actions: 'advance' },
          TICK_TO_QUIET: { guard: and(['tickApplies', 'hasClaimants']), target: 'collecting', actions: ['advance', 'sendRequests'] },
          TICK_TO_CEILING: [
            { guard: and(['tickApplies', 'hasClaimants']), target: 'collecting', actions: ['advance', 'sendRequests'] },
            { guard: 'tickApplies', target: 'done', actions: ['advance', { type: 'close', params: { by: 'no_claimant' } }] },
          ],
          STRAY_RESPONSE: { guard: 'newStrayResponse', actions: 'recordStray' },
          JOIN: { guard: 'notJoined', actions: 'join' },
        },
      },
      collecting: {
        on: {
          ...Object.fromEntries(
            SKILLS.flatMap((skill) =>
              RESPONSE_KINDS.map((kind) => [
                answerType(skill, kind),
                [
                  {
                    guard: and(['pendingClaimant', 'respIsFastWin']),
                    target: 'done',
                    actions: ['respond', { type: 'close', params: { by: 'fast_win' } }],
                  },
                  {
                    guard: and(['pendingClaimant', 'respCompletes']),
                    target: 'done',
                    actions: ['respond', { type: 'close', params: { by: 'all_answered' } }],
                  },
                  { guard: 'pendingClaimant', actions: 'respond' },
                ],
              ]),
            ),
          ),
          TICK_TO_WINDOW_END_MINUS_1: { guard: 'tickApplies', actions: 'advance' },
          TICK_TO_WINDOW_END: { guard: 'tickApplies', target: 'done', actions: ['advance', { type: 'close', params: { by: 'window' } }] },
          STRAY_RESPONSE: { guard: 'newStrayResponse', actions: 'recordStray' },
          LATE_PONG: { guard: 'newLatePong', actions: 'recordStray' },
          JOIN: [
            { guard: and(['notJoined', 'fastWinAlreadyIn']), target: 'done', actions: ['join', { type: 'close', params: { by: 'fast_win' } }] },
            { guard: 'notJoined', actions: 'join' },
          ],
        },
      },
      done: { type: 'final' },
    },
  });
}

type Model = ReturnType<typeof buildModel>;
type ModelSnapshot = SnapshotFrom<Model>;

/** The concrete events of one model state (payloads filled in from the model's own deadlines). */
function eventsOf(snapshot: ModelSnapshot): ModelEvent[] {
  if (snapshot.status !== 'active') return [];
  const c = snapshot.context;
  const deadline = nextDeadline(c);
  const ticks: ModelEvent[] =
    c.requests === null
      ? [
          { type: `TICK_TO_${pollDeadlineKind(c)}_MINUS_1`, ms: deadline - 1 - c.now },
          { type: `TICK_TO_${pollDeadlineKind(c)}`, ms: deadline - c.now },
        ]
      : [
          { type: 'TICK_TO_WINDOW_END_MINUS_1', ms: deadline - 1 - c.now },
          { type: 'TICK_TO_WINDOW_END', ms: deadline - c.now },
        ];
  return [
    ...SKILLS.map((skill): ModelEvent => ({ type: `${skill}_CLAIMS` })),
    ...SKILLS.flatMap((skill) => RESPONSE_KINDS.map((kind): ModelEvent => ({ type: answerType(skill, kind) }))),
    ...ticks,
    ...SKILLS.map((skill): ModelEvent => ({ type: 'STRAY_RESPONSE', skill })),
    ...SKILLS.map((skill): ModelEvent => ({ type: 'LATE_PONG', skill })),
    { type: 'JOIN' },
  ];
}

interface ConfigPaths {
  readonly config: ModelConfig;
  readonly paths: ReadonlyArray<{
    readonly state: ModelSnapshot;
    readonly steps: ReadonlyArray<{ readonly state: ModelSnapshot; readonly event: { readonly type: string } }>;
  }>;
}

const generated: readonly ConfigPaths[] = CONFIGS.map((config) => {
  const testModel = createTestModel(buildModel(config), {
    events: eventsOf,
    filterEvents: (snapshot, event) => snapshot.can(event),
  });
  return { config, paths: testModel.getShortestPaths() };
});

// ---- The system under test ---------------------------------------------------------------------------------------

const ORIGIN = createMessage('ovos.utterance.handle', { utterances: [UTTERANCE] }, { session: { session_id: 's1' }, utterance_id: 'u1' });

interface Summary {
  readonly closedBy: ClosedBy;
  readonly claimants: ReadonlyArray<{ readonly skill_id: string; readonly latency_ms?: number }>;
  readonly responses: ReadonlyArray<{ readonly skill_id: string; readonly answer: string | null; readonly conf: number | null }>;
}

const summarize = (output: CommonQueryOutput): Summary => ({
  closedBy: output.closedBy,
  claimants: output.claimants.map((c) => (c.latency_ms === undefined ? { skill_id: c.skill_id } : { skill_id: c.skill_id, latency_ms: c.latency_ms })),
  responses: output.responses.map((r) => ({ skill_id: r.skill_id, answer: r.answer ?? null, conf: r.conf ?? null })),
});

const expectedSummary = (c: ModelContext): Summary => {
  if (c.closedBy === null) throw new Error('model: no closedBy in a final state');
  return {
    closedBy: c.closedBy,
    claimants: c.claimants.map((cl) => (cl.latency_ms === null ? { skill_id: cl.skill } : { skill_id: cl.skill, latency_ms: cl.latency_ms })),
    responses: c.responses.map((r) => ({
      skill_id: r.skill,
      answer: r.kind === 'DECLINES' ? null : answerOf(r.skill),
      conf: CONF[r.kind],
    })),
  };
};

/** Run one model path against the real actor, asserting agreement at every model state. */
function runPath(config: ModelConfig, steps: ConfigPaths['paths'][number]['steps']): void {
  const clock = new ManualClock(T0);
  const pings: number[] = [];
  const requests: Array<{ at: number; to: string[] }> = [];
  const errors: unknown[] = [];
  let doneAt: number | null = null;
  const sut = createActor(
    commonQueryMachine.provide({
      actions: {
        sendPing: () => {
          pings.push(clock.now() - T0);
        },
        sendRequests: ({ context }: { context: { readonly claimants: readonly Claimant[] } }) => {
          requests.push({ at: clock.now() - T0, to: context.claimants.map((c) => c.skill_id) });
        },
      },
    }),
    {
      clock,
      input: {
        origin: ORIGIN,
        utterance: UTTERANCE,
        lang: 'en-US',
        pollWindowMs: P,
        pollQuietMs: Q,
        collectionInitialMs: I,
        collectionCeilingMs: C,
        policy: config.policyFromStart ? policyOf(config) : null,
      },
    },
  );
  sut.subscribe({
    complete: () => {
      doneAt = clock.now() - T0;
    },
    error: (error) => errors.push(error),
  });
  sut.start();

  const send = (event: CommonQueryEvent): void => sut.send(event);
  const pong = (skill: Skill): void => {
    const latency = config.latency[skill];
    send(latency === undefined ? { type: 'PONG', skill_id: skill, can_answer: true } : { type: 'PONG', skill_id: skill, can_answer: true, latency_ms: latency });
  };
  const respond = (skill: Skill, kind: ResponseKind): void => {
    const conf = CONF[kind];
    const base = { type: 'RESPONSE' as const, skill_id: skill, receivedAt: clock.now() };
    send(conf === null ? base : { ...base, answer: answerOf(skill), conf });
  };

  const apply = (event: ModelEvent): void => {
    const claim = claimOf(event);
    if (claim !== null) return pong(claim);
    const response = responseOf(event);
    if (response !== null) return respond(response.skill, response.kind);
    switch (event.type) {
      case 'TICK_TO_QUIET_MINUS_1':
      case 'TICK_TO_QUIET':
      case 'TICK_TO_CEILING_MINUS_1':
      case 'TICK_TO_CEILING':
      case 'TICK_TO_WINDOW_END_MINUS_1':
      case 'TICK_TO_WINDOW_END':
        return clock.advance(event.ms);
      case 'STRAY_RESPONSE':
        return respond(event.skill, 'FAST_0_95');
      case 'LATE_PONG':
        return pong(event.skill);
      case 'JOIN':
        return send({ type: 'JOIN', policy: policyOf(config) });
      default:
        throw new Error(`runPath: unmapped model event ${event.type}`);
    }
  };

  const agree = (model: ModelSnapshot, where: string): void => {
    const c = model.context;
    const snapshot = sut.getSnapshot();
    expect(errors, `${where}: actor errors`).toEqual([]);
    expect(clock.now() - T0, `${where}: clock`).toBe(c.now);
    expect(pings, `${where}: pings (ms since start)`).toEqual([0]);
    expect(requests, `${where}: requests (time, claimants)`).toEqual(c.requests === null ? [] : [{ at: c.requests.at, to: [...c.requests.to] }]);
    if (model.status === 'done') {
      expect(snapshot.status, `${where}: status`).toBe('done');
      expect(doneAt, `${where}: finished at`).toBe(c.doneAt);
      expect(snapshot.output === undefined ? undefined : summarize(snapshot.output), `${where}: output`).toEqual(expectedSummary(c));
      expect(clock.pending, `${where}: pending timers once done`).toBe(0);
    } else {
      expect(snapshot.status, `${where}: status`).toBe('active');
      expect(doneAt, `${where}: finished at`).toBeNull();
      expect(clock.pending, `${where}: pending timers while ${String(model.value)}`).toBeGreaterThan(0);
    }
  };

  steps.forEach((step, i) => {
    // alterPath puts the initial state first, with the synthetic `xstate.init` event.
    if (i > 0) apply(step.event as ModelEvent);
    agree(step.state, i === 0 ? 'initial state' : `after step ${i} (${step.event.type})`);
  });
  sut.stop();
}

// ---- Descriptions and the coverage check -------------------------------------------------------------------------

const formatEvent = (event: { readonly type: string }): string => {
  const e = event as ModelEvent;
  if ('skill' in e) return `${e.type}(${e.skill})`;
  if ('ms' in e) return `${e.type}(+${e.ms})`;
  return e.type;
};

const outcomeOf = (snapshot: ModelSnapshot): string =>
  snapshot.status === 'done' ? `done ${snapshot.context.closedBy ?? '?'} at ${snapshot.context.doneAt ?? '?'}` : `${String(snapshot.value)} at ${snapshot.context.now}`;

const describePath = (config: ModelConfig, path: ConfigPaths['paths'][number]): string => {
  const events = path.steps.slice(1).map((s) => `${formatEvent(s.event)}@${s.state.context.now}`);
  return `[${config.id}: ${config.title}] ${events.length === 0 ? '(start)' : events.join(' → ')} ⇒ ${outcomeOf(path.state)}`;
};

const allPaths = generated.flatMap(({ config, paths }) => paths.map((path) => ({ config, path })));
const finalContexts = allPaths.map(({ path }) => path.state);

describe(CLAUSE, () => {
  it(`${CLAUSE}: path generation yields more than 20 paths and covers every outcome and event`, () => {
    expect(allPaths.length).toBeGreaterThan(20);
    const outcomes = new Set(finalContexts.filter((s) => s.status === 'done').map((s) => s.context.closedBy));
    expect(outcomes).toEqual(new Set(['no_claimant', 'all_answered', 'fast_win', 'window']));
    for (const { config, paths } of generated) {
      const perConfig = new Set(paths.map((p) => p.state.context.closedBy).filter((x) => x !== null));
      expect(perConfig, `closedBy outcomes of config ${config.id}`).toEqual(new Set(['no_claimant', 'all_answered', 'fast_win', 'window']));
    }
    const eventTypes = new Set(allPaths.flatMap(({ path }) => path.steps.slice(1).map((s) => s.event.type)));
    expect(eventTypes).toEqual(new Set(ALL_EVENT_TYPES));

    // Anchors, computed by hand from P, Q, I, C (they guard the model itself):
    const done = allPaths.filter(({ path }) => path.state.status === 'done').map(({ config, path }) => ({ id: config.id, c: path.state.context }));
    // The quiet period restarts: X at 0, Y at Q-1 → requests at 2Q-1 = 39.
    expect(done.some(({ c }) => c.requests?.at === 2 * Q - 1 && c.requests.to.length === 2)).toBe(true);
    // The ceiling cuts the quiet period: a claim at P-1 → requests at P (not P-1+Q).
    expect(done.some(({ c }) => c.requests?.at === P && c.lastClaimAt === P - 1)).toBe(true);
    // No claim: the poll runs to its ceiling.
    expect(done.filter(({ c }) => c.closedBy === 'no_claimant').every(({ c }) => c.doneAt === P)).toBe(true);
    // Windows: X alone 200; Y without latency_ms I; Y with 9000 clamped to C.
    const windows = new Set(done.filter(({ c }) => c.closedBy === 'window').map(({ id, c }) => `${id}:${c.requests?.to.join('+') ?? ''}:${(c.doneAt ?? 0) - (c.requests?.at ?? 0)}`));
    for (const w of ['A:X:200', 'A:Y:3000', 'A:X+Y:3000', 'B:Y:5000', 'B:X+Y:5000', 'C:Y:3000']) expect(windows, w).toContain(w);
    // Y is blacklisted in B: its 0.95 never fast-wins. Before JOIN in C nothing fast-wins.
    expect(done.some(({ id, c }) => id === 'B' && c.closedBy === 'fast_win' && c.responses.at(-1)?.skill === 'Y')).toBe(false);
    expect(done.some(({ id, c }) => id === 'C' && c.closedBy === 'fast_win' && !c.joined)).toBe(false);
    expect(done.some(({ id, c }) => id === 'C' && c.closedBy === 'all_answered' && c.responses.some((r) => r.kind === 'FAST_0_95'))).toBe(true);
    // Unsolicited events are followed by more events, not only path ends: X's own answer after its unasked response
    // during the poll; the window end after a late pong.
    const sequences = allPaths.map(({ path }) => path.steps.slice(1).map((s) => formatEvent(s.event)).join(' '));
    expect(sequences.some((q) => /STRAY_RESPONSE\(X\).* X_ANSWERS_/.test(q))).toBe(true);
    expect(sequences.some((q) => /LATE_PONG\(Y\).* TICK_TO_WINDOW_END\(/.test(q))).toBe(true);
  });

  for (const { config, path } of allPaths) {
    it(`${CLAUSE}: ${describePath(config, path)}`, () => {
      runPath(config, path.steps);
    });
  }
});
