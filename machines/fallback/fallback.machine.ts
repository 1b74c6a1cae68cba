/**
 * The fallback contest, OVOS-FALLBACK-1 §6: one actor per (session_id, utterance_id, stage).
 *
 * Skills are queried one at a time in pool order (§6.1). Each query arms the named delay `pingTimeout`; a pong from
 * the awaited skill with `can_handle: true` wins (§6.2), a decline or the timeout (treated as `can_handle: false`,
 * §6.1) moves to the next skill, an exhausted pool outputs `null`. A skill known to be unreachable (`GONE`: its
 * connection closed) cannot answer: if it is the awaited one, the contest moves on at once (no timeout to wait
 * out); if it is still ahead in the pool, it is skipped. A pong from any other skill — late (its timeout
 * already passed), duplicate (it already answered), or unsolicited (not asked yet, not in the pool) — changes
 * nothing and is reported with a reason.
 *
 * Skills asked by one broadcast (`broadcast`: the legacy dialect's single ping reaches every skill at once) are
 * asked when the contest starts; the order of decision is still the pool's: an answer from a broadcast skill ahead
 * in the pool is kept (`early`) and decides the moment its turn comes, and a broadcast skill that has not answered
 * by its turn is waited for like any other, `pingTimeout` from its turn. So the winner is always the first willing
 * skill in pool order, never the first to answer.
 *
 * No bus here: `sendPing` and `sendBroadcast` are provided from outside (the plugin derives the pings by `reply` /
 * `forward` of the utterance).
 */
import { and, assign, emit, enqueueActions, setup } from 'xstate';
import type { Message } from '../../src/bus/message.js';
import { eventOf } from '../event-of.js';

/** What every ping of this contest carries (§6.1): derived from `origin` with `{utterances, lang}`. */
export interface FallbackQuery {
  readonly origin: Message;
  readonly utterances: readonly string[];
  readonly lang: string;
  /** The stage's priority range, for a broadcast that names it (the legacy ping's `range`). */
  readonly range?: readonly [number, number];
}

export interface FallbackInput {
  readonly query: FallbackQuery;
  /** The effective pool, already ordered (§5). */
  readonly pool: readonly string[];
  readonly pingTimeoutMs: number;
  /** Skills of the pool asked together by one broadcast when the contest starts (none: every skill its own ping). */
  readonly broadcast?: readonly string[];
}

export type SkillOutcome = 'willing' | 'declined' | 'timeout' | 'gone';

export interface FallbackContext {
  readonly query: FallbackQuery;
  readonly pool: readonly string[];
  readonly pingTimeoutMs: number;
  /** Index into `pool` of the skill being asked. */
  readonly index: number;
  /** What each asked skill said, in asking order. */
  readonly outcomes: ReadonlyArray<{ readonly skill_id: string; readonly outcome: SkillOutcome }>;
  /** Skills reported unreachable during the contest: never asked. */
  readonly gone: readonly string[];
  /** Skills asked by the broadcast at the start. */
  readonly broadcast: readonly string[];
  /** Answers (can_handle) of broadcast skills received before their turn. */
  readonly early: Readonly<Record<string, boolean>>;
}

export type FallbackEvent =
  | { readonly type: 'PONG'; readonly skill_id: string; readonly can_handle: boolean }
  | { readonly type: 'GONE'; readonly skill_id: string };

export type FallbackEmitted =
  | { readonly type: 'ping.timeout'; readonly skill_id: string; readonly after_ms: number }
  | { readonly type: 'pong.ignored'; readonly skill_id: string; readonly reason: 'duplicate' | 'late' | 'not_awaited' | 'not_in_pool' };

/** The selected skill, or null when every skill declined or stayed silent (§6.2). */
export type FallbackOutput = { readonly skill_id: string } | null;

const current = (context: FallbackContext): string | undefined => context.pool[context.index];
/** The early answer of the skill whose turn it is, if it gave one. */
const earlyAnswer = (context: FallbackContext): boolean | undefined => {
  const skill = current(context);
  return skill !== undefined && Object.hasOwn(context.early, skill) ? context.early[skill] : undefined;
};

/** The index of the next skill to ask after `index`, skipping unreachable ones; `pool.length` when none is left. */
const nextIndex = (context: Pick<FallbackContext, 'pool' | 'gone'>, index: number): number => {
  let next = index + 1;
  while (next < context.pool.length && context.gone.includes(context.pool[next]!)) next++;
  return next;
};

export const fallbackMachine = setup({
  types: {
    input: {} as FallbackInput,
    context: {} as FallbackContext,
    events: {} as FallbackEvent,
    emitted: {} as FallbackEmitted,
    output: {} as FallbackOutput,
  },
  actions: {
    /** Provided by the plugin: send `<skill_id>.fallback.ping` for the current skill. */
    sendPing: (_args: { context: FallbackContext }, _params: { skill_id: string }) => {},
    /** Provided by the plugin: the one broadcast that asks every skill of `broadcast`. */
    sendBroadcast: (_args: { context: FallbackContext }) => {},
    recordEarly: assign({
      early: ({ context, event: received }) => {
        const event = eventOf(received, 'PONG');
        return { ...context.early, [event.skill_id]: event.can_handle };
      },
    }),
    recordOutcome: assign({
      outcomes: ({ context }, params: { outcome: SkillOutcome }) => [
        ...context.outcomes,
        { skill_id: current(context) ?? '', outcome: params.outcome },
      ],
    }),
    advance: assign({ index: ({ context }) => nextIndex(context, context.index) }),
    markGone: assign({ gone: ({ context, event }) => [...context.gone, eventOf(event, 'GONE').skill_id] }),
    reportTimeout: emit(({ context }) => ({
      type: 'ping.timeout' as const,
      skill_id: current(context) ?? '',
      after_ms: context.pingTimeoutMs,
    })),
    reportIgnored: emit(({ context, event }) => {
      const earlier = context.outcomes.find((o) => o.skill_id === event.skill_id);
      // A broadcast skill that already answered before its turn: its second answer is a duplicate.
      const answeredEarly = Object.hasOwn(context.early, event.skill_id);
      // A skill of another pool answering a broadcast (every legacy skill answers every one) is expected traffic.
      const reason =
        earlier !== undefined ? (earlier.outcome === 'timeout' ? 'late' : 'duplicate') : answeredEarly ? 'duplicate' : context.broadcast.length > 0 && !context.pool.includes(event.skill_id) ? 'not_in_pool' : 'not_awaited';
      return { type: 'pong.ignored' as const, skill_id: event.skill_id, reason };
    }),
  },
  guards: {
    poolEmpty: ({ context }) => context.pool.length === 0,
    fromAwaitedSkill: ({ context, event }) => event.skill_id === current(context),
    willing: ({ event }) => eventOf(event, 'PONG').can_handle,
    hasNext: ({ context }) => nextIndex(context, context.index) < context.pool.length,
    hasBroadcast: ({ context }) => context.broadcast.length > 0,
    earlyWilling: ({ context }) => earlyAnswer(context) === true,
    earlyDeclined: ({ context }) => earlyAnswer(context) === false,
    /** A broadcast skill's first answer before its turn (still ahead in the pool). */
    aheadInBroadcast: ({ context, event }) => {
      const skillId = eventOf(event, 'PONG').skill_id;
      return context.broadcast.includes(skillId) && !Object.hasOwn(context.early, skillId) && context.pool.indexOf(skillId) > context.index;
    },
  },
  delays: {
    pingTimeout: ({ context }) => context.pingTimeoutMs,
  },
}).createMachine({
  id: 'fallback',
  context: ({ input }) => ({
    query: input.query,
    pool: input.pool,
    pingTimeoutMs: input.pingTimeoutMs,
    index: 0,
    outcomes: [],
    gone: [],
    broadcast: (input.broadcast ?? []).filter((skill) => input.pool.includes(skill)),
    early: {},
  }),
  // A skill that becomes unreachable before its turn is skipped when its turn comes.
  on: { GONE: { actions: 'markGone' } },
  initial: 'start',
  states: {
    start: {
      always: [
        { guard: 'poolEmpty', target: 'exhausted' },
        { guard: 'hasBroadcast', target: 'querying', actions: 'sendBroadcast' },
        { target: 'querying' },
      ],
    },
    querying: {
      // Its own ping, unless the broadcast already asked it.
      entry: enqueueActions(({ context, enqueue }) => {
        const skill = current(context) ?? '';
        if (!context.broadcast.includes(skill)) enqueue({ type: 'sendPing', params: { skill_id: skill } });
      }),
      // A broadcast skill that already answered decides at its turn, at once.
      always: [
        { guard: 'earlyWilling', target: 'matched', actions: { type: 'recordOutcome', params: { outcome: 'willing' } } },
        { guard: and(['earlyDeclined', 'hasNext']), target: 'querying', reenter: true, actions: [{ type: 'recordOutcome', params: { outcome: 'declined' } }, 'advance'] },
        { guard: 'earlyDeclined', target: 'exhausted', actions: { type: 'recordOutcome', params: { outcome: 'declined' } } },
      ],
      after: {
        pingTimeout: [
          {
            guard: 'hasNext',
            target: 'querying',
            reenter: true,
            actions: ['reportTimeout', { type: 'recordOutcome', params: { outcome: 'timeout' } }, 'advance'],
          },
          { target: 'exhausted', actions: ['reportTimeout', { type: 'recordOutcome', params: { outcome: 'timeout' } }] },
        ],
      },
      on: {
        PONG: [
          {
            guard: and(['fromAwaitedSkill', 'willing']),
            target: 'matched',
            actions: { type: 'recordOutcome', params: { outcome: 'willing' } },
          },
          {
            guard: and(['fromAwaitedSkill', 'hasNext']),
            target: 'querying',
            reenter: true,
            actions: [{ type: 'recordOutcome', params: { outcome: 'declined' } }, 'advance'],
          },
          {
            guard: 'fromAwaitedSkill',
            target: 'exhausted',
            actions: { type: 'recordOutcome', params: { outcome: 'declined' } },
          },
          { guard: 'aheadInBroadcast', actions: 'recordEarly' },
          { actions: 'reportIgnored' },
        ],
        GONE: [
          {
            guard: and(['fromAwaitedSkill', 'hasNext']),
            target: 'querying',
            reenter: true,
            actions: ['markGone', { type: 'recordOutcome', params: { outcome: 'gone' } }, 'advance'],
          },
          { guard: 'fromAwaitedSkill', target: 'exhausted', actions: ['markGone', { type: 'recordOutcome', params: { outcome: 'gone' } }] },
          { actions: 'markGone' },
        ],
      },
    },
    matched: { type: 'final' },
    exhausted: { type: 'final' },
  },
  output: ({ context }) => {
    const last = context.outcomes[context.outcomes.length - 1];
    return last?.outcome === 'willing' ? { skill_id: last.skill_id } : null;
  },
});
