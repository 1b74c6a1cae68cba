/**
 * One utterance lifecycle, OVOS-PIPELINE-1 §6: call `match` on each stage of the effective pipeline in order,
 * each bounded by the named delay `matchTimeout` (§4.4 — a result arriving later is ignored for good: leaving the
 * state stops the invoked match and aborts its contest); the first surviving Match wins; then dispatch and the
 * handler trio (§7, §8) bounded by `handlerTimeout`; then exactly one `ovos.utterance.handled`.
 *
 * A stage whose plugin says, at its turn, that `match` would return None at once (`stageDeclines`: an empty fallback
 * pool, OVOS-FALLBACK-1 §5; a question gate that rejects, OVOS-COMMON-QUERY-1 §4.1) is passed over in `nextStage`
 * without invoking it: the outcome §6 gives a stage that returns None, without the cost of an actor and a timer.
 * The walk starts on `BEGIN`, which the orchestrator sends once everything published before the utterance reached
 * it has been delivered (one microtask after the actor starts): the first stages' pools are read then, not while the
 * utterance is still being delivered. A bare actor of this machine waits for it.
 *
 * Effects (bus messages) and the match/handler actors are provided by the orchestrator.
 */
import { and, assign, emit, fromPromise, not, setup } from 'xstate';
import type { Message } from '../../src/bus/message.js';
import type { SessionView } from '../../src/bus/session.js';
import { eventOf } from '../event-of.js';
import { rejectionOf, type Match } from '../../src/pipeline/plugin.js';

/** The utterance as the orchestrator accepted it: stamped entry message, candidates, resolved lang, session. */
export interface UtteranceRequest {
  readonly entry: Message;
  readonly utterances: readonly string[];
  readonly lang: string;
  readonly session: SessionView;
}

/** Why the orchestrator's re-check refused a Match (OVOS-PIPELINE-1 §4.1, §5). */
export type MatchRejection = NonNullable<ReturnType<typeof rejectionOf>>;

export interface UtteranceInput {
  readonly request: UtteranceRequest;
  /** The effective pipeline: loaded, not blacklisted, in preference order (§5). */
  readonly stages: readonly string[];
  /**
   * Stages whose plugin can run a handler in-process (common query): it does for a Match naming the stage itself
   * (§7.3 reserved intent_name); a Match naming a bus skill is dispatched to it (see `handlesInProcess`).
   */
  readonly inProcessHandlers: readonly string[];
  readonly matchTimeoutMs: number;
  readonly handlerTimeoutMs: number;
}

/** The matched stage runs the handler itself: it has one and the Match names the stage (not a bus skill). */
export function handlesInProcess(context: Pick<UtteranceContext, 'matchedStage' | 'match' | 'inProcessHandlers'>): boolean {
  const stage = context.matchedStage;
  return stage !== null && context.inProcessHandlers.includes(stage) && context.match?.skill_id === stage;
}

export type UtteranceOutcome = 'completed' | 'handler_error' | 'handler_timeout' | 'unmatched';

export interface UtteranceContext extends UtteranceInput {
  readonly outcome: UtteranceOutcome | null;
  readonly index: number;
  readonly match: Match | null;
  readonly matchedStage: string | null;
  /** The dispatch message, once sent: the handler trio is derived from it (PIPELINE-1 §8). */
  readonly dispatched: Message | null;
  readonly declined: ReadonlyArray<{ readonly stage: string; readonly why: 'no_match' | 'timeout' | 'error' | 'rejected' }>;
}

/**
 * BEGIN: start the walk through the stages (see above).
 * HANDLER_DONE: a completion signal from a bus skill; only the dispatched skill's counts.
 * SKILL_GONE: the skill can no longer be reached (its bus connection closed); while its handler is awaited, the
 * handler ends at once with an error (no 30 s of silence for a skill that died).
 */
export type UtteranceEvent =
  | { readonly type: 'BEGIN' }
  | {
      readonly type: 'HANDLER_DONE';
      readonly skill_id: string;
      readonly ok: boolean;
      readonly exception?: string;
    }
  | { readonly type: 'SKILL_GONE'; readonly skill_id: string };

export type UtteranceEmitted =
  | { readonly type: 'handler_done.ignored'; readonly skill_id: string; readonly reason: 'not_awaited' }
  | { readonly type: 'match.rejected'; readonly stage: string; readonly skill_id: string; readonly reason: MatchRejection };

export type UtteranceOutput = {
  readonly outcome: UtteranceOutcome;
  readonly match: Match | null;
  readonly stage: string | null;
};

/** The stage whose turn it is. */
export const stageOf = (context: Pick<UtteranceContext, 'stages' | 'index'>): string => context.stages[context.index] ?? '';

export const utteranceMachine = setup({
  types: {
    input: {} as UtteranceInput,
    context: {} as UtteranceContext,
    events: {} as UtteranceEvent,
    emitted: {} as UtteranceEmitted,
    output: {} as UtteranceOutput,
  },
  actors: {
    /** Provided: `match` of the stage named by `pipelineId`. */
    matchStage: fromPromise<Match | null, { pipelineId: string; request: UtteranceRequest }>(async () => null),
    /** Provided: the in-process handler of the matched stage. */
    runHandler: fromPromise<void, { pipelineId: string; match: Match; dispatched: Message }>(async () => {}),
  },
  actions: {
    /** Provided (an assign): build the dispatch message for the accepted Match (PIPELINE-1 §7). */
    prepareDispatch: assign({ dispatched: ({ context }: { context: UtteranceContext }) => context.dispatched }),
    /** Provided: ovos.intent.matched, the dispatch, ovos.intent.handler.start. */
    dispatch: (_args: { context: UtteranceContext }) => {},
    /** Provided: ovos.intent.handler.complete. */
    handlerComplete: (_args: { context: UtteranceContext }) => {},
    /** Provided: ovos.intent.handler.error. */
    handlerError: (_args: { context: UtteranceContext }, _params: { exception: string }) => {},
    /** Provided: ovos.intent.unmatched. */
    unmatched: (_args: { context: UtteranceContext }) => {},
    /** Provided: ovos.utterance.handled, exactly once. */
    handled: (_args: { context: UtteranceContext }) => {},
    reportRejected: emit(({ context }, params: { match: Match | null }) => ({
      type: 'match.rejected' as const,
      stage: stageOf(context),
      skill_id: typeof params.match?.skill_id === 'string' ? params.match.skill_id : '',
      reason: rejectionOf(params.match, context.request.session) ?? 'malformed_match',
    })),
    decline: assign({
      declined: ({ context }, params: { why: 'no_match' | 'timeout' | 'error' | 'rejected' }) => [
        ...context.declined,
        { stage: stageOf(context), why: params.why },
      ],
    }),
    reportIgnored: emit(({ event }) => ({ type: 'handler_done.ignored' as const, skill_id: eventOf(event, 'HANDLER_DONE').skill_id, reason: 'not_awaited' as const })),
    advance: assign({ index: ({ context }) => context.index + 1 }),
    settle: assign({ outcome: (_, params: { outcome: UtteranceOutcome }) => params.outcome }),
    acceptMatch: assign({
      match: (_, params: { match: Match }) => params.match,
      matchedStage: ({ context }) => stageOf(context),
    }),
  },
  guards: {
    /** The orchestrator's re-check of every Match against the live session (§4.1 well-formed, §5 denylists). */
    acceptable: ({ context }, params: { match: Match | null }) => params.match !== null && rejectionOf(params.match, context.request.session) === null,
    isMatch: (_args, params: { match: Match | null }) => params.match !== null,
    hasNext: ({ context }) => context.index + 1 < context.stages.length,
    noStages: ({ context }) => context.stages.length === 0,
    fromDispatchedSkill: ({ context, event }) => eventOf(event, ['HANDLER_DONE', 'SKILL_GONE']).skill_id === context.match?.skill_id,
    handlerOk: ({ event }) => eventOf(event, 'HANDLER_DONE').ok,
    inProcess: ({ context }) => handlesInProcess(context),
    /** Provided: the stage at `index` (`stageOf`) would return None at once for `request`, so it need not be invoked. */
    stageDeclines: (_args: { context: UtteranceContext }) => false,
  },
  delays: {
    matchTimeout: ({ context }) => context.matchTimeoutMs,
    handlerTimeout: ({ context }) => context.handlerTimeoutMs,
  },
}).createMachine({
  id: 'utterance',
  context: ({ input }) => ({ ...input, outcome: null, index: 0, match: null, matchedStage: null, dispatched: null, declined: [] }),
  initial: 'start',
  // A completion signal outside `handling.awaitingSkill` (still matching, or from another skill) is reported; a
  // skill gone while nothing of it is awaited changes nothing.
  on: { HANDLER_DONE: { actions: 'reportIgnored' } },
  states: {
    start: {
      on: { BEGIN: 'nextStage' },
    },
    // The stage at `index` is asked, unless it declines at once: then it is recorded as declining and passed over.
    nextStage: {
      always: [
        { guard: 'noStages', target: 'unmatched' },
        { guard: not('stageDeclines'), target: 'matching' },
        { guard: 'hasNext', target: 'nextStage', reenter: true, actions: [{ type: 'decline', params: { why: 'no_match' } }, 'advance'] },
        { target: 'unmatched', actions: { type: 'decline', params: { why: 'no_match' } } },
      ],
    },
    matching: {
      invoke: {
        src: 'matchStage',
        input: ({ context }) => ({ pipelineId: stageOf(context), request: context.request }),
        onDone: [
          {
            guard: { type: 'acceptable', params: ({ event }) => ({ match: event.output }) },
            target: 'handling',
            actions: { type: 'acceptMatch', params: ({ event }) => ({ match: event.output! }) },
          },
          {
            guard: { type: 'isMatch', params: ({ event }) => ({ match: event.output }) },
            target: 'rejected',
            actions: [
              { type: 'reportRejected', params: ({ event }) => ({ match: event.output }) },
              { type: 'decline', params: { why: 'rejected' } },
            ],
          },
          { guard: 'hasNext', target: 'nextStage', actions: [{ type: 'decline', params: { why: 'no_match' } }, 'advance'] },
          { target: 'unmatched', actions: { type: 'decline', params: { why: 'no_match' } } },
        ],
        // PIPELINE-1 §6: a plugin that throws counts as declining.
        onError: [
          { guard: 'hasNext', target: 'nextStage', actions: [{ type: 'decline', params: { why: 'error' } }, 'advance'] },
          { target: 'unmatched', actions: { type: 'decline', params: { why: 'error' } } },
        ],
      },
      after: {
        matchTimeout: [
          { guard: 'hasNext', target: 'nextStage', actions: [{ type: 'decline', params: { why: 'timeout' } }, 'advance'] },
          { target: 'unmatched', actions: { type: 'decline', params: { why: 'timeout' } } },
        ],
      },
    },
    rejected: {
      always: [{ guard: 'hasNext', target: 'nextStage', actions: 'advance' }, { target: 'unmatched' }],
    },
    handling: {
      entry: ['prepareDispatch', 'dispatch'],
      initial: 'choose',
      states: {
        choose: {
          always: [{ guard: 'inProcess', target: 'inProcess' }, { target: 'awaitingSkill' }],
        },
        inProcess: {
          invoke: {
            src: 'runHandler',
            input: ({ context }) => ({ pipelineId: context.matchedStage ?? '', match: context.match!, dispatched: context.dispatched! }),
            onDone: { target: '#utterance.completed', actions: 'handlerComplete' },
            onError: {
              target: '#utterance.failed',
              actions: { type: 'handlerError', params: ({ event }) => ({ exception: String(event.error) }) },
            },
          },
        },
        awaitingSkill: {
          on: {
            SKILL_GONE: {
              guard: 'fromDispatchedSkill',
              target: '#utterance.failed',
              actions: {
                type: 'handlerError',
                params: ({ event }) => ({ exception: `SkillDisconnected: the bus connection of ${event.skill_id} closed before its handler completed` }),
              },
            },
            HANDLER_DONE: [
              { guard: and(['fromDispatchedSkill', 'handlerOk']), target: '#utterance.completed', actions: 'handlerComplete' },
              {
                guard: 'fromDispatchedSkill',
                target: '#utterance.failed',
                actions: { type: 'handlerError', params: ({ event }) => ({ exception: event.exception ?? 'handler failed' }) },
              },
              { actions: 'reportIgnored' },
            ],
          },
        },
      },
      after: {
        handlerTimeout: {
          target: 'timedOut',
          actions: {
            type: 'handlerError',
            params: ({ context }) => ({ exception: `TimeoutError: handler did not complete within ${context.handlerTimeoutMs} ms` }),
          },
        },
      },
    },
    completed: { type: 'final', entry: [{ type: 'settle', params: { outcome: 'completed' } }, 'handled'] },
    failed: { type: 'final', entry: [{ type: 'settle', params: { outcome: 'handler_error' } }, 'handled'] },
    timedOut: { type: 'final', entry: [{ type: 'settle', params: { outcome: 'handler_timeout' } }, 'handled'] },
    unmatched: { type: 'final', entry: [{ type: 'settle', params: { outcome: 'unmatched' } }, 'unmatched', 'handled'] },
  },
  output: ({ context }) => ({ outcome: context.outcome ?? 'unmatched', match: context.match, stage: context.matchedStage }),
});
