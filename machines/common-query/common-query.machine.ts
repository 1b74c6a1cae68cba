/**
 * The common-query contest, OVOS-COMMON-QUERY-1 §6–§8: one actor per (session_id, utterance).
 *
 *   polling ──(pollWindow ceiling | pollQuiet after the latest claim)──▶ closing ──▶ collecting ──▶ done
 *                                                                          └─(no claimant)────────────▶ done
 *
 * - Poll (§6): `sendPing` broadcasts `ovos.common_query.ping`. Claims (`can_answer: true`) are collected until the
 *   poll-window ceiling (`pollWindow`, Appendix A 500 ms) or, early close (§6.3), until `pollQuiet` has passed
 *   since the most recent claim with no further claim. A claimant honouring the skill-side pong bound answers
 *   within a few ms of the others; the quiet period is how long one more is still worth waiting for.
 * - Collection (§7): `sendRequests` asks every claimant in parallel. The window (`collectionWindow`) is the
 *   largest claimant `latency_ms` (a claimant without one counts as the initial window), clamped to the ceiling:
 *   no skill can extend it past the ceiling (§7.2). It closes at once when every claimant has responded (a response
 *   without `answer` counts), or on a fast win (§8 step 3).
 * - Fast win is judged against the LIVE session (§5.1): only once `match` has joined with its policy. Before that
 *   (early start) collection keeps going, so an upstream stage that blacklists the fast winner still takes effect.
 *
 * The output is the raw material only (§5.1): claimants and responses. Filtering and selection run in `match`.
 */
import { and, assign, emit, setup } from 'xstate';
import type { Message } from '../../src/bus/message.js';
import { fastWinner, type CandidateResponse, type SelectionPolicy } from '../../src/plugins/common-query/selection.js';

export interface CommonQueryInput {
  readonly origin: Message;
  readonly utterance: string;
  readonly lang: string;
  readonly pollWindowMs: number;
  readonly pollQuietMs: number;
  readonly collectionInitialMs: number;
  readonly collectionCeilingMs: number;
  /** The live policy when `match` started the contest itself; null for an early start (joined later). */
  readonly policy: SelectionPolicy | null;
}

export interface Claimant {
  readonly skill_id: string;
  readonly latency_ms?: number;
}

export type ClosedBy = 'no_claimant' | 'all_answered' | 'fast_win' | 'window';

export interface CommonQueryContext extends CommonQueryInput {
  readonly claimants: readonly Claimant[];
  readonly responses: readonly CandidateResponse[];
  readonly closedBy: ClosedBy | null;
}

export type CommonQueryEvent =
  | { readonly type: 'PONG'; readonly skill_id: string; readonly can_answer: boolean; readonly latency_ms?: number }
  | { readonly type: 'RESPONSE'; readonly skill_id: string; readonly answer?: string; readonly conf?: number; readonly receivedAt: number }
  | { readonly type: 'JOIN'; readonly policy: SelectionPolicy };

export type CommonQueryEmitted =
  | { readonly type: 'pong.ignored'; readonly skill_id: string; readonly reason: 'duplicate' | 'poll_closed' | 'not_claiming' }
  | { readonly type: 'response.ignored'; readonly skill_id: string; readonly reason: 'not_a_claimant' | 'duplicate' | 'collection_closed' | 'not_requested_yet' };

export interface CommonQueryOutput {
  readonly utterance: string;
  readonly lang: string;
  readonly claimants: readonly Claimant[];
  readonly responses: readonly CandidateResponse[];
  readonly closedBy: ClosedBy;
}

/** §7.2: the largest claimant estimate (missing → the initial window), clamped to [0, ceiling]. */
export function collectionWindowMs(context: Pick<CommonQueryContext, 'claimants' | 'collectionInitialMs' | 'collectionCeilingMs'>): number {
  let window = 0;
  for (const claimant of context.claimants) window = Math.max(window, claimant.latency_ms ?? context.collectionInitialMs);
  return Math.min(Math.max(window, 0), context.collectionCeilingMs);
}

type Response = Extract<CommonQueryEvent, { type: 'RESPONSE' }>;
const asCandidate = (event: Response, order: number): CandidateResponse => {
  const base = { skill_id: event.skill_id, receivedAt: event.receivedAt, order };
  if (event.answer === undefined) return base;
  return event.conf === undefined ? { ...base, answer: event.answer } : { ...base, answer: event.answer, conf: event.conf };
};

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
    sendPing: (_args: { context: CommonQueryContext }) => {},
    /** Provided: `<skill_id>:common_query {utterance}` to every claimant (§7.1). */
    sendRequests: (_args: { context: CommonQueryContext }) => {},
    addClaimant: assign({
      claimants: ({ context, event }) => {
        if (event.type !== 'PONG') return context.claimants;
        const claimant: Claimant = event.latency_ms === undefined ? { skill_id: event.skill_id } : { skill_id: event.skill_id, latency_ms: event.latency_ms };
        return [...context.claimants, claimant];
      },
    }),
    addResponse: assign({
      responses: ({ context, event }) =>
        event.type === 'RESPONSE' ? [...context.responses, asCandidate(event, context.responses.length)] : context.responses,
    }),
    join: assign({ policy: ({ context, event }) => (event.type === 'JOIN' ? event.policy : context.policy) }),
    closeBy: assign({ closedBy: (_, params: { by: ClosedBy }) => params.by }),
    reportPongIgnored: emit((_, params: { skill_id: string; reason: 'duplicate' | 'poll_closed' | 'not_claiming' }) => ({
      type: 'pong.ignored' as const,
      ...params,
    })),
    reportResponseIgnored: emit(({ context, event }) => {
      const skillId = event.type === 'RESPONSE' ? event.skill_id : '';
      const claimant = context.claimants.some((c) => c.skill_id === skillId);
      const answered = context.responses.some((r) => r.skill_id === skillId);
      return {
        type: 'response.ignored' as const,
        skill_id: skillId,
        reason: !claimant ? ('not_a_claimant' as const) : answered ? ('duplicate' as const) : ('collection_closed' as const),
      };
    }),
  },
  guards: {
    claims: ({ event }) => event.type === 'PONG' && event.can_answer,
    alreadyClaimed: ({ context, event }) => event.type === 'PONG' && context.claimants.some((c) => c.skill_id === event.skill_id),
    hasClaimants: ({ context }) => context.claimants.length > 0,
    pendingClaimant: ({ context, event }) =>
      event.type === 'RESPONSE' &&
      context.claimants.some((c) => c.skill_id === event.skill_id) &&
      !context.responses.some((r) => r.skill_id === event.skill_id),
    /** This response is the last one outstanding. */
    completes: ({ context }) => context.responses.length + 1 === context.claimants.length,
    /** This response is a fast win under the live policy (§8 step 3). */
    fastWinWith: ({ context, event }) =>
      event.type === 'RESPONSE' && context.policy !== null && fastWinner([asCandidate(event, context.responses.length)], context.policy) !== null,
    /** A response already in is a fast win under the policy `match` just joined with. */
    fastWinOnJoin: ({ context, event }) => event.type === 'JOIN' && fastWinner(context.responses, event.policy) !== null,
  },
  delays: {
    pollWindow: ({ context }) => context.pollWindowMs,
    pollQuiet: ({ context }) => context.pollQuietMs,
    collectionWindow: ({ context }) => collectionWindowMs(context),
  },
}).createMachine({
  id: 'commonQuery',
  context: ({ input }) => ({ ...input, claimants: [], responses: [], closedBy: null }),
  initial: 'polling',
  on: {
    JOIN: { actions: 'join' },
    PONG: {
      actions: { type: 'reportPongIgnored', params: ({ event }) => ({ skill_id: event.skill_id, reason: 'poll_closed' as const }) },
    },
    RESPONSE: { actions: 'reportResponseIgnored' },
  },
  states: {
    polling: {
      entry: 'sendPing',
      after: { pollWindow: { target: 'closingPoll' } },
      on: {
        RESPONSE: {
          actions: emit(({ event }) => ({ type: 'response.ignored' as const, skill_id: event.skill_id, reason: 'not_requested_yet' as const })),
        },
      },
      initial: 'waiting',
      states: {
        waiting: {
          on: {
            PONG: [
              { guard: 'claims', target: 'claimed', actions: 'addClaimant' },
              { actions: { type: 'reportPongIgnored', params: ({ event }) => ({ skill_id: event.skill_id, reason: 'not_claiming' as const }) } },
            ],
          },
        },
        claimed: {
          // §6.3 early close: each new claim restarts the quiet period (a self re-entry of this child only).
          after: { pollQuiet: { target: '#commonQuery.closingPoll' } },
          on: {
            PONG: [
              { guard: 'alreadyClaimed', actions: { type: 'reportPongIgnored', params: ({ event }) => ({ skill_id: event.skill_id, reason: 'duplicate' as const }) } },
              { guard: 'claims', target: 'claimed', reenter: true, actions: 'addClaimant' },
              { actions: { type: 'reportPongIgnored', params: ({ event }) => ({ skill_id: event.skill_id, reason: 'not_claiming' as const }) } },
            ],
          },
        },
      },
    },
    closingPoll: {
      always: [
        { guard: 'hasClaimants', target: 'collecting' },
        { target: 'done', actions: { type: 'closeBy', params: { by: 'no_claimant' } } },
      ],
    },
    collecting: {
      entry: 'sendRequests',
      after: { collectionWindow: { target: 'done', actions: { type: 'closeBy', params: { by: 'window' } } } },
      on: {
        RESPONSE: [
          { guard: and(['pendingClaimant', 'fastWinWith']), target: 'done', actions: ['addResponse', { type: 'closeBy', params: { by: 'fast_win' } }] },
          { guard: and(['pendingClaimant', 'completes']), target: 'done', actions: ['addResponse', { type: 'closeBy', params: { by: 'all_answered' } }] },
          { guard: 'pendingClaimant', actions: 'addResponse' },
          { actions: 'reportResponseIgnored' },
        ],
        JOIN: [
          { guard: 'fastWinOnJoin', target: 'done', actions: ['join', { type: 'closeBy', params: { by: 'fast_win' } }] },
          { actions: 'join' },
        ],
      },
    },
    done: { type: 'final' },
  },
  output: ({ context }) => ({
    utterance: context.utterance,
    lang: context.lang,
    claimants: context.claimants,
    responses: context.responses,
    closedBy: context.closedBy ?? 'window',
  }),
});
