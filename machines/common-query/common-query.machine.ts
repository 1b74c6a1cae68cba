/**
 * The common-query contest, OVOS-COMMON-QUERY-1 §6–§8: one actor per contest run.
 *
 *   polling ──(every known skill answered | claim bound | ceiling)──▶ closingPoll ──▶ collecting ──▶ done
 *     (open → pastClaimBound; cold, the roster untrusted: → spreading from the first claim)
 *                                                                          └─(no claimant)──────────▶ done
 *
 * Poll (§6): `sendPing` broadcasts `ovos.common_query.ping`. The poll closes at the first of (§6.3 early close):
 *  1. a claim is in hand and every skill on the plugin's roster (`knownSkills`: every skill that has ever ponged)
 *     has answered this poll, `can_answer` true or false — nobody the plugin knows of is left to hear from. Without
 *     a claim in hand rule 1 waits for (2): a skill that follows §6.2 ("SHOULD stay silent") is on no roster until
 *     it first claims, and its claim within the bound must not be lost to a poll closed on everyone else's `false`.
 *     When no such skill can exist (`rosterComplete`: only the legacy dialect, whose skills announce themselves), every
 *     known skill having answered closes the poll with or without a claim;
 *  2. the claim bound `pollClaimBound` (Appendix A's 100 ms skill-side pong bound plus a transport allowance):
 *     a skill that honours the pong bound has answered by then, so silence means "no" — unless the poll is not
 *     settled (`pastClaimBound` then waits until it is, or until (3)):
 *     - a skill known to answer every poll (`answeringSkills`: it has said `can_answer: false` before, or claims
 *       late) is still outstanding: load on the bus never turns its late claim into a lost answer;
 *     - in a cold start (`awaitFirstClaim`: the plugin has just started and its roster cannot be trusted yet), no
 *       live claim is in hand (and rule 1 does not hold): the first claim is waited for, so a claim late for the
 *       claim bound is not lost to the cold start;
 *     In a cold start while skills the roster does not know yet can claim (`coldIncomplete`), the first live claim
 *     opens `spreading`: the poll closes one claim bound after it (so never before the claim bound), as above, and
 *     not at rule 1 before that — claims answering the same ping come within the pong bound of each other, however
 *     slow the bus is for all of them, and every known skill having answered does not mean the last claim is in;
 *  3. the poll-window ceiling `pollWindow` (Appendix A 500 ms). What is in hand then are the claimants (§6.2).
 * So a claim within the claim bound is never lost while no other claim is in hand; with one in hand, a skill unknown
 * to the plugin that claims after every known skill has answered is heard from its next question on.
 * A skill whose connection closes (`GONE`) is not waited for any more: it counts as having answered the poll, and as
 * having responded without an answer if it was a claimant.
 *
 * A claim may be `unasked` (the legacy dialect's `searching: true`: the question was the request, the answer follows
 * by itself): such a claimant is sent no request, and its answer is kept even when it comes before the poll closes —
 * if every claimant has then answered, the contest ends as the poll closes; a fast win ends it at once — at the answer
 * when `match` has joined, else when it joins (`fastWinner` judges each answer alone, so no fast win is ever found
 * only at the poll's close). The round
 * trip after such an answer (the settle, below) counts from the poll's close, when the other claimants are asked —
 * the machine reads no clock, and only `match` joining tells it the time (then it counts from the answer's arrival).
 *
 * Collection (§7): `sendRequests` asks every claimant (but the unasked) in parallel. §7.2 sizes the *initial* window from the
 * claimants' `latency_ms` (`collectionWindow`: the largest `latency_ms` plus the bus between that skill and us — the
 * time its pong took to reach us in this very poll, `after_ms`, and at least `collectionAllowanceMs` —, a claimant
 * without `latency_ms` counting as the fixed initial window, clamped to the ceiling); a claimant is treated as
 * declining only when it has not answered by the ceiling. So the window closes at the first of:
 *  - every claimant has responded (a response without `answer` counts) or is gone — `all_answered`;
 *  - a fast win under the live policy (§8 step 3) — `fast_win`;
 *  - the initial window has passed *and* one round trip has passed since the first surviving answer (§8 steps 1–2
 *    under the live policy) arrived — `window`. The round trip (`settle`) is the largest of the claimants' pong
 *    delays in this poll, at least `collectionAllowanceMs`: answers produced together reach the plugin within about
 *    one round trip of each other, however loaded the bus;
 *  - the hard ceiling `collectionCeiling` (Appendix A 5 s) — `ceiling`.
 * The two regions of `collecting` are those two clocks: `window` (the initial window, then passed) and `answers`
 * (no survivor yet, then one round trip settling, then settled); the window closes when both have run out.
 * An answer arriving before the ceiling is therefore never lost while no other surviving answer is in hand, and
 * claimants that all answer within their declared latency (plus the bus's round trip) are all heard: the first of
 * three skills declaring `latency_ms: 0` does not close the window on the other two, 1 ms behind it — nor, on a bus
 * so loaded that a round trip takes 200 ms, 150 ms behind it; nor does a first answer past the window close it on
 * the better one a round trip behind it. The extra wait is spent only when a claimant is silent past its estimate.
 *
 * Survival and fast win are judged against the LIVE session only (§5.1): once `match` has joined with its policy.
 * Before that (early start) collection keeps going, so an upstream stage that blacklists a skill still takes effect.
 *
 * The output is the raw material only (§5.1): claimants, responses, who answered the poll. Selection runs in
 * `match`.
 */
import { and, assign, emit, or, setup, stateIn } from 'xstate';
import type { JsonObject, Message } from '../../src/bus/message.js';
import { eventOf } from '../event-of.js';
import { fastWinner, survivors, type CandidateResponse, type SelectionPolicy } from './selection.js';

export interface CommonQueryInput {
  readonly origin: Message;
  readonly utterance: string;
  readonly lang: string;
  /** Appendix A poll-window ceiling. */
  readonly pollWindowMs: number;
  /** Early close with no one known outstanding: the pong bound plus a transport allowance (≤ pollWindowMs). */
  readonly pollClaimBoundMs: number;
  readonly collectionInitialMs: number;
  /**
   * The least added to a claimant's declared `latency_ms`: its answer reaches the plugin a bus round trip (and, under
   * load, an event-loop turn or two) after the skill has produced it in `latency_ms`. When the claimant's pong took
   * longer to reach us (`after_ms`: a loaded bus), that is added instead.
   */
  readonly collectionAllowanceMs: number;
  readonly collectionCeilingMs: number;
  /** The roster when the contest started: every skill known to take part in common query. */
  readonly knownSkills: readonly string[];
  /**
   * Of those, the skills worth waiting for past the claim bound: known to answer every poll (true or false), or to
   * claim late (`AWAIT` adds one learnt while this poll runs).
   */
  readonly answeringSkills: readonly string[];
  /**
   * No skill can claim without being on the roster first (only the legacy dialect is spoken: its skills announce
   * themselves before they are asked), so rule 1 needs no claim in hand. Default false.
   */
  readonly rosterComplete?: boolean;
  /**
   * The cold start: past the claim bound with no live claim in hand (and nobody known outstanding), wait for the first
   * claim up to the ceiling instead of closing. Default false.
   */
  readonly awaitFirstClaim?: boolean;
  /** The live policy when `match` started the contest itself; null for an early start (joined later). */
  readonly policy: SelectionPolicy | null;
}

export interface Claimant {
  readonly skill_id: string;
  readonly latency_ms?: number;
  /** How long after the ping its pong reached the plugin: the bus's round trip to this skill right now. */
  readonly pong_after_ms?: number;
  /** Its claim is also the request: its answer follows without `<skill_id>:common_query` (the legacy question). */
  readonly unasked?: true;
}

export type ClosedBy = 'no_claimant' | 'all_answered' | 'fast_win' | 'window' | 'ceiling';

export interface CommonQueryContext extends CommonQueryInput {
  readonly claimants: readonly Claimant[];
  /** Every skill that answered the poll in time, true or false. */
  readonly polled: readonly string[];
  /** Skills reported gone during this contest. */
  readonly gone: readonly string[];
  readonly responses: readonly CandidateResponse[];
  readonly closedBy: ClosedBy | null;
  /**
   * Set when `match` joins with survivors already in hand: what is left of the round trip since the first of them
   * arrived (`settle`). Null: the round trip runs in full from when the first survivor is known.
   */
  readonly settleMs: number | null;
}

export type CommonQueryEvent =
  /** `after_ms`: how long after the ping this pong reached the plugin (the plugin's clock; absent: not measured). */
  | { readonly type: 'PONG'; readonly skill_id: string; readonly can_answer: boolean; readonly latency_ms?: number; readonly after_ms?: number; readonly unasked?: true }
  /** `reply`: opaque to the contest, kept with the response (the legacy dialect hands a winner its own reply back). */
  | { readonly type: 'RESPONSE'; readonly skill_id: string; readonly answer?: string; readonly conf?: number; readonly receivedAt: number; readonly reply?: JsonObject }
  /** `at`: when `match` joined (the plugin's clock, as `receivedAt`): the survivors in hand may have come before it. */
  | { readonly type: 'JOIN'; readonly policy: SelectionPolicy; readonly at: number }
  /** The skill can no longer be reached (its connection closed): stop waiting for it. */
  | { readonly type: 'GONE'; readonly skill_id: string }
  /** The plugin learnt, while this poll runs, that the skill claims late (§6.3): wait for it past the claim bound too. */
  | { readonly type: 'AWAIT'; readonly skill_id: string };

export type CommonQueryEmitted =
  | { readonly type: 'pong.ignored'; readonly skill_id: string; readonly reason: 'duplicate' | 'poll_closed' }
  | { readonly type: 'response.ignored'; readonly skill_id: string; readonly reason: 'not_a_claimant' | 'duplicate' | 'collection_closed' | 'not_requested_yet' };

export interface CommonQueryOutput {
  readonly utterance: string;
  readonly lang: string;
  readonly claimants: readonly Claimant[];
  /** The skills this poll waited for past the claim bound (`answeringSkills`, with those `AWAIT` added). */
  readonly waited: readonly string[];
  readonly polled: readonly string[];
  readonly responses: readonly CandidateResponse[];
  readonly closedBy: ClosedBy;
}

/**
 * §7.2: the initial window — the largest claimant estimate, in [0, ceiling]. A claimant's estimate is its declared
 * `latency_ms` (the skill's own time to produce the answer, §6.2) plus the bus's round trip, since the plugin sees
 * the answer only after the bus has carried request and response: the time its pong took to reach us in this poll,
 * and at least the transport allowance. A claimant without `latency_ms` counts as the fixed initial window.
 */
export function collectionWindowMs(
  context: Pick<CommonQueryContext, 'claimants' | 'collectionInitialMs' | 'collectionAllowanceMs' | 'collectionCeilingMs'>,
): number {
  let window = 0;
  for (const claimant of context.claimants) {
    window = Math.max(window, claimant.latency_ms === undefined ? context.collectionInitialMs : claimant.latency_ms + roundTripTo(context, claimant));
  }
  return Math.min(Math.max(window, 0), context.collectionCeilingMs);
}

/**
 * §7.2 (our choice, src/plugins/README.md): the bus's round trip to the claimants right now — the largest of their pong delays in
 * this poll, at least the transport allowance. After the first surviving answer the window stays open this long:
 * answers produced together reach the plugin within about one round trip of each other.
 */
export function settleMs(context: Pick<CommonQueryContext, 'claimants' | 'collectionAllowanceMs'>): number {
  let roundTrip = context.collectionAllowanceMs;
  for (const claimant of context.claimants) roundTrip = Math.max(roundTrip, roundTripTo(context, claimant));
  return roundTrip;
}

/** The bus's round trip to one claimant: its pong's delay in this poll, at least the transport allowance. */
function roundTripTo(context: Pick<CommonQueryContext, 'collectionAllowanceMs'>, claimant: Claimant): number {
  return Math.max(context.collectionAllowanceMs, claimant.pong_after_ms ?? 0);
}

/** What is left of the round trip once the first survivor is known: what JOIN left of it, else all of it. */
const settleDelay = (context: CommonQueryContext): number => context.settleMs ?? settleMs(context);

type Response = Extract<CommonQueryEvent, { type: 'RESPONSE' }>;
const asCandidate = (event: Response, order: number): CandidateResponse => {
  const base = { skill_id: event.skill_id, receivedAt: event.receivedAt, order, ...(event.reply === undefined ? {} : { reply: event.reply }) };
  if (event.answer === undefined) return base;
  return event.conf === undefined ? { ...base, answer: event.answer } : { ...base, answer: event.answer, conf: event.conf };
};

const responded = (context: CommonQueryContext, skillId: string): boolean => context.responses.some((r) => r.skill_id === skillId);
/** Every one of `skills` answered the poll (in `polled`) or is gone. */
const heardAll = (context: CommonQueryContext, polled: readonly string[], skills: readonly string[]): boolean =>
  skills.every((skill) => polled.includes(skill) || context.gone.includes(skill));
/** Every claimant responded or is gone, `extra` (a responding or gone skill) counted too. */
const claimantsSettled = (context: CommonQueryContext, extra: string): boolean =>
  context.claimants.every((c) => c.skill_id === extra || responded(context, c.skill_id) || context.gone.includes(c.skill_id));
/** Claims in hand from skills not gone: a gone claimant's claim will never be answered. */
const liveClaims = (context: CommonQueryContext): number => context.claimants.filter((c) => !context.gone.includes(c.skill_id)).length;
const withGone = (context: CommonQueryContext, skillId: string): CommonQueryContext => ({ ...context, gone: [...context.gone, skillId] });
/** The context as this pong would leave it (for the guards that judge the poll with it). */
const withPong = (context: CommonQueryContext, pong: Extract<CommonQueryEvent, { type: 'PONG' }>): CommonQueryContext => ({
  ...context,
  polled: [...context.polled, pong.skill_id],
  claimants: pong.can_answer ? [...context.claimants, { skill_id: pong.skill_id }] : context.claimants,
});
const isClaimant = (context: CommonQueryContext, skillId: string): boolean => context.claimants.some((c) => c.skill_id === skillId);
/** Rule 1: a live claim in hand (or the roster complete) and every skill on the roster heard from or gone. */
const rule1 = (context: CommonQueryContext): boolean =>
  (liveClaims(context) > 0 || context.rosterComplete === true) && context.knownSkills.length > 0 && heardAll(context, context.polled, context.knownSkills);
/**
 * The cold start while the roster can be incomplete (the spec dialect is on): any skill may be one the roster does not
 * know yet, so "every known skill has answered" does not tell that the last claim is in — the poll stays open one
 * claim bound past its first live claim (`spreading`).
 */
const coldIncomplete = (context: CommonQueryContext): boolean => context.awaitFirstClaim === true && context.rosterComplete !== true;
/**
 * Nobody the poll still waits for past the claim bound: every skill known to answer every poll has answered or is
 * gone, and — in a cold start — a live claim is in hand or rule 1 holds.
 */
const settled = (context: CommonQueryContext): boolean =>
  heardAll(context, context.polled, context.answeringSkills) && (context.awaitFirstClaim !== true || liveClaims(context) > 0 || rule1(context));

export const commonQueryMachine = setup({
  types: {
    input: {} as CommonQueryInput,
    context: {} as CommonQueryContext,
    events: {} as CommonQueryEvent,
    emitted: {} as CommonQueryEmitted,
    output: {} as CommonQueryOutput,
  },
  actions: {
    /** Provided: broadcast `ovos.common_query.ping {utterance}` (§6.1). */
    sendPing: (_args: { context: CommonQueryContext }) => {
      throw new Error('not provided: sendPing');
    },
    /** Provided: `<skill_id>:common_query {utterance}` to every claimant but the unasked (§7.1). */
    sendRequests: (_args: { context: CommonQueryContext }) => {
      throw new Error('not provided: sendRequests');
    },
    recordPong: assign(({ context, event: received }) => {
      const event = eventOf(received, 'PONG');
      const polled = [...context.polled, event.skill_id];
      if (!event.can_answer) return { polled };
      const claimant: Claimant = {
        skill_id: event.skill_id,
        ...(event.latency_ms === undefined ? {} : { latency_ms: event.latency_ms }),
        ...(event.after_ms === undefined ? {} : { pong_after_ms: event.after_ms }),
        ...(event.unasked === true ? { unasked: true as const } : {}),
      };
      return { polled, claimants: [...context.claimants, claimant] };
    }),
    addResponse: assign({
      responses: ({ context, event }) => [...context.responses, asCandidate(eventOf(event, 'RESPONSE'), context.responses.length)],
    }),
    join: assign({ policy: ({ event }) => eventOf(event, 'JOIN').policy }),
    /** `match` joined during collection: survivors already in hand started their round trip when they arrived. */
    joinCollecting: assign(({ context, event: received }) => {
      const event = eventOf(received, 'JOIN');
      // Responses are in arrival order, and so are the survivors (`order` is the index): the first is the earliest.
      const first = survivors(context.responses, event.policy)[0];
      const arrivedAt = first === undefined ? undefined : context.responses[first.order]?.receivedAt;
      return { policy: event.policy, settleMs: arrivedAt === undefined ? null : Math.max(0, arrivedAt + settleMs(context) - event.at) };
    }),
    markGone: assign({ gone: ({ context, event }) => [...context.gone, eventOf(event, 'GONE').skill_id] }),
    addAnswering: assign({
      answeringSkills: ({ context, event }) => {
        const skillId = eventOf(event, 'AWAIT').skill_id;
        return context.answeringSkills.includes(skillId) ? context.answeringSkills : [...context.answeringSkills, skillId];
      },
    }),
    closeBy: assign({ closedBy: (_, params: { by: ClosedBy }) => params.by }),
    reportPongIgnored: emit(({ context, event }) => {
      const skillId = eventOf(event, 'PONG').skill_id;
      return { type: 'pong.ignored' as const, skill_id: skillId, reason: context.polled.includes(skillId) ? ('duplicate' as const) : ('poll_closed' as const) };
    }),
    reportResponseIgnored: emit(({ context, event }) => {
      const skillId = eventOf(event, 'RESPONSE').skill_id;
      const claimant = isClaimant(context, skillId);
      return {
        type: 'response.ignored' as const,
        skill_id: skillId,
        reason: !claimant ? ('not_a_claimant' as const) : responded(context, skillId) ? ('duplicate' as const) : ('collection_closed' as const),
      };
    }),
  },
  guards: {
    firstPong: ({ context, event }) => !context.polled.includes(eventOf(event, 'PONG').skill_id),
    /** In a cold start whose roster can be incomplete, this pong (a first one) is the first live claim: it opens the spread (`spreading`). */
    opensSpread: ({ context, event }) => {
      const pong = eventOf(event, 'PONG');
      return pong.can_answer && coldIncomplete(context) && liveClaims(context) === 0 && !context.gone.includes(pong.skill_id);
    },
    /**
     * With this pong, a claim is in hand (or the roster is complete) and every skill on it has answered or is gone
     * (rule 1) — not while the poll spreads in a cold start (the roster may not know every skill yet).
     */
    lastKnown: ({ context, event }) => !coldIncomplete(context) && rule1(withPong(context, eventOf(event, 'PONG'))),
    /** The poll may close at the claim bound (rule 2): nobody it still waits for (`settled`). */
    settledAtBound: ({ context }) => settled(context),
    /** Past the claim bound, with this pong the poll has nobody left to wait for. */
    settlesWithPong: ({ context, event }) => settled(withPong(context, eventOf(event, 'PONG'))),
    /** Past the claim bound, with this skill gone the poll has nobody left to wait for. */
    settlesWithGone: ({ context, event }) => settled(withGone(context, eventOf(event, 'GONE').skill_id)),
    /** With this skill gone, rule 1 holds: a claim in hand, every known skill heard or gone. */
    goneKnownHeard: ({ context, event }) => rule1(withGone(context, eventOf(event, 'GONE').skill_id)),
    /**
     * With this skill gone every claimant has responded or is gone. (While collecting, some claimant is outstanding:
     * so this holds only for the GONE of the last outstanding one.)
     */
    goneCompletes: ({ context, event }) => claimantsSettled(context, eventOf(event, 'GONE').skill_id),
    hasClaimants: ({ context }) => context.claimants.length > 0,
    /** Every claimant has already responded or gone (an unasked answer can come in during the poll). */
    claimantsAllSettled: ({ context }) => context.claimants.length > 0 && context.claimants.every((c) => responded(context, c.skill_id) || context.gone.includes(c.skill_id)),
    /** A claimant whose answer follows unasked, not yet heard from: its response during the poll is kept. */
    pendingUnasked: ({ context, event: received }) => {
      const event = eventOf(received, 'RESPONSE');
      return context.claimants.some((c) => c.skill_id === event.skill_id && c.unasked === true) && !responded(context, event.skill_id);
    },
    pendingClaimant: ({ context, event }) => {
      const skillId = eventOf(event, 'RESPONSE').skill_id;
      return isClaimant(context, skillId) && !responded(context, skillId);
    },
    /** This response is the last one outstanding (a gone claimant is not outstanding). */
    completes: ({ context, event }) => claimantsSettled(context, eventOf(event, 'RESPONSE').skill_id),
    /** This response is a fast win under the live policy (§8 step 3). */
    fastWinWith: ({ context, event }) =>
      context.policy !== null && fastWinner([asCandidate(eventOf(event, 'RESPONSE'), context.responses.length)], context.policy) !== null,
    /** A response already in is a fast win under the policy `match` just joined with. */
    fastWinOnJoin: ({ context, event }) => fastWinner(context.responses, eventOf(event, 'JOIN').policy) !== null,
    /** A surviving answer (§8 steps 1–2, live policy) is in hand. */
    survivorInHand: ({ context }) => context.policy !== null && survivors(context.responses, context.policy).length > 0,
    /** The other clock of the collection window has run out too (the `window` and `answers` regions). */
    windowPassed: stateIn('#commonQuery.collecting.window.passed'),
    roundTripRun: ({ context }) => settleDelay(context) <= 0,
    settled: stateIn('#commonQuery.collecting.answers.settled'),
  },
  delays: {
    pollWindow: ({ context }) => context.pollWindowMs,
    pollClaimBound: ({ context }) => Math.min(context.pollClaimBoundMs, context.pollWindowMs),
    collectionWindow: ({ context }) => collectionWindowMs(context),
    collectionCeiling: ({ context }) => context.collectionCeilingMs,
    settle: ({ context }) => settleDelay(context),
  },
}).createMachine({
  id: 'commonQuery',
  context: ({ input }) => ({ ...input, claimants: [], polled: [], gone: [], responses: [], closedBy: null, settleMs: null }),
  initial: 'polling',
  on: {
    JOIN: { actions: 'join' },
    GONE: { actions: 'markGone' },
    AWAIT: { actions: 'addAnswering' },
    PONG: { actions: 'reportPongIgnored' },
    RESPONSE: { actions: 'reportResponseIgnored' },
  },
  states: {
    polling: {
      entry: 'sendPing',
      after: { pollWindow: { target: 'closingPoll' } },
      on: {
        PONG: [
          { guard: and(['firstPong', 'lastKnown']), target: 'closingPoll', actions: 'recordPong' },
          { guard: and(['firstPong', 'opensSpread']), target: '.spreading', actions: 'recordPong' },
          { guard: 'firstPong', actions: 'recordPong' },
          { actions: 'reportPongIgnored' },
        ],
        // §8 step 3 under the live session: `match` joining with a fast win already in hand (an unasked answer kept
        // during the poll) ends the contest at once, as it does during the collection.
        JOIN: [{ guard: 'fastWinOnJoin', target: 'done', actions: ['join', { type: 'closeBy', params: { by: 'fast_win' } }] }, { actions: 'join' }],
        // An unasked claimant's answer may come before the poll closes: kept (a fast win ends the contest, §8 step 3).
        RESPONSE: [
          { guard: and(['pendingUnasked', 'fastWinWith']), target: 'done', actions: ['addResponse', { type: 'closeBy', params: { by: 'fast_win' } }] },
          { guard: 'pendingUnasked', actions: 'addResponse' },
          { actions: emit(({ event }) => ({ type: 'response.ignored' as const, skill_id: event.skill_id, reason: 'not_requested_yet' as const })) },
        ],
      },
      initial: 'open',
      states: {
        open: {
          after: {
            pollClaimBound: [{ guard: 'settledAtBound', target: '#commonQuery.closingPoll' }, { target: 'pastClaimBound' }],
          },
          // A gone skill no longer holds the poll open (rule 1).
          on: {
            GONE: [{ guard: 'goneKnownHeard', target: '#commonQuery.closingPoll', actions: 'markGone' }, { actions: 'markGone' }],
          },
        },

        // Past the claim bound, until the poll is settled (a skill known to answer every poll has answered; in a cold
        // start, a first claim is in hand); the ceiling still applies.
        pastClaimBound: {
          on: {
            PONG: [
              { guard: and(['firstPong', 'opensSpread']), target: 'spreading', actions: 'recordPong' },
              { guard: and(['firstPong', 'settlesWithPong']), target: '#commonQuery.closingPoll', actions: 'recordPong' },
              { guard: 'firstPong', actions: 'recordPong' },
              { actions: 'reportPongIgnored' },
            ],
            GONE: [{ guard: or(['goneKnownHeard', 'settlesWithGone']), target: '#commonQuery.closingPoll', actions: 'markGone' }, { actions: 'markGone' }],
          },
        },

        // A cold start whose roster can be incomplete (`coldIncomplete`), from its first live claim: the other skills'
        // claims answering the same ping come within the pong bound of it, the bus being as slow for them as for the
        // first — so the poll stays open one claim bound (never closing before the claim bound itself, nor after the
        // ceiling), every known skill having answered or not (rule 1 waits while the roster is new). Then it
        // closes as at the claim bound: unless a skill learnt to claim late (AWAIT) is outstanding, or the claim's
        // skill has gone (no live claim: the poll waits on for one that can be answered).
        spreading: {
          after: {
            pollClaimBound: [{ guard: 'settledAtBound', target: '#commonQuery.closingPoll' }, { target: 'pastClaimBound' }],
          },
        },
      },
    },
    closingPoll: {
      always: [
        // Every claimant answered unasked during the poll, or went away before it could be asked: nothing to collect
        // (§7.2: a gone claimant counts as declining). (A fast win never waits for this: the poll ends at the RESPONSE
        // or JOIN that makes it, §8 step 3.)
        { guard: 'claimantsAllSettled', target: 'done', actions: { type: 'closeBy', params: { by: 'all_answered' } } },
        { guard: 'hasClaimants', target: 'collecting' },
        { target: 'done', actions: { type: 'closeBy', params: { by: 'no_claimant' } } },
      ],
    },
    collecting: {
      entry: 'sendRequests',
      after: { collectionCeiling: { target: 'done', actions: { type: 'closeBy', params: { by: 'ceiling' } } } },
      on: {
        // §7.2: a gone claimant counts as declining now, not at the ceiling.
        GONE: [
          { guard: 'goneCompletes', target: 'done', actions: ['markGone', { type: 'closeBy', params: { by: 'all_answered' } }] },
          { actions: 'markGone' },
        ],
        RESPONSE: [
          { guard: and(['pendingClaimant', 'fastWinWith']), target: 'done', actions: ['addResponse', { type: 'closeBy', params: { by: 'fast_win' } }] },
          { guard: and(['pendingClaimant', 'completes']), target: 'done', actions: ['addResponse', { type: 'closeBy', params: { by: 'all_answered' } }] },
          { guard: 'pendingClaimant', actions: 'addResponse' },
          { actions: 'reportResponseIgnored' },
        ],
        JOIN: [
          { guard: 'fastWinOnJoin', target: 'done', actions: ['join', { type: 'closeBy', params: { by: 'fast_win' } }] },
          { actions: 'joinCollecting' },
        ],
      },
      // §7.2: the window closes once the initial window has passed and one round trip has passed since the first
      // surviving answer arrived — whichever of the two clocks runs out last closes it.
      type: 'parallel',
      states: {
        window: {
          initial: 'initial',
          states: {
            initial: { after: { collectionWindow: 'passed' } },
            passed: { always: { guard: 'settled', target: '#commonQuery.done', actions: { type: 'closeBy', params: { by: 'window' } } } },
          },
        },
        answers: {
          initial: 'noSurvivor',
          states: {
            noSurvivor: {
              always: [
                // A survivor whose round trip has already run (it came long before `match` joined, or no round trip).
                { guard: and(['survivorInHand', 'roundTripRun']), target: 'settled' },
                { guard: 'survivorInHand', target: 'settling' },
              ],
            },
            settling: { after: { settle: 'settled' } },
            settled: { always: { guard: 'windowPassed', target: '#commonQuery.done', actions: { type: 'closeBy', params: { by: 'window' } } } },
          },
        },
      },
    },
    done: { type: 'final' },
  },
  output: ({ context }) => ({
    utterance: context.utterance,
    lang: context.lang,
    claimants: context.claimants,
    waited: context.answeringSkills,
    polled: context.polled,
    responses: context.responses,
    closedBy: context.closedBy ?? 'ceiling',
  }),
});
