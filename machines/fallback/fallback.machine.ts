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
 * Skills asked by one broadcast (`broadcast`: the legacy dialect's single ping reaches every skill at once) were
 * asked before the contest's turn for them — the broadcast went out `broadcastAgoMs` before the start (the plugin
 * sends it, one per utterance for all its stages) — so the contest pings none of them; the order of decision is still
 * the pool's: an answer from a broadcast skill ahead in the pool is kept (`early`; those already in hand at the start
 * come as `answered`) and decides the moment its turn comes. Their ping went out with the broadcast, so their ping
 * timeout runs from it (§6.1): `BROADCAST_TIMEOUT`, raised when `pingTimeout` has passed since the broadcast, makes
 * every broadcast skill still silent timed out — the awaited one moves on then, and one whose turn comes later is
 * passed at its turn, at once; a pong after it is late. Silent broadcast skills cost one ping timeout together, as
 * ovos-core's own wait does. So the winner is always the first willing skill in pool order, never the first to answer.
 *
 * The stage bound (`stageBound`, when `boundMs` is given: the orchestrator's match bound, PIPELINE-1 §4.4, less a
 * margin so the result still counts) ends the contest while skills are still silent. The silent skills are treated
 * as at their timeout (§6.1: no reply is `can_handle: false`), so §6.2 selects the first willing skill of those that
 * did answer, in pool order: a broadcast skill that already said yes is never thrown away for stale skills ahead of
 * it that never answer. With no such answer the pool is exhausted (`cut` says the bound decided).
 *
 * No bus here: `sendPing` is provided from outside (the plugin derives the pings by `reply` of the utterance).
 */
import { and, assign, emit, enqueueActions, raise, setup } from 'xstate';
import type { Message } from '../../src/bus/message.js';
import { eventOf } from '../event-of.js';

/** What every ping of this contest carries (§6.1): derived from `origin` with `{utterances, lang}`. */
export interface FallbackQuery {
  readonly origin: Message;
  readonly utterances: readonly string[];
  readonly lang: string;
}

export interface FallbackInput {
  readonly query: FallbackQuery;
  /** The effective pool, already ordered (§5). */
  readonly pool: readonly string[];
  readonly pingTimeoutMs: number;
  /** Skills of the pool asked together by one broadcast, not by a ping of this contest (none: every skill its own ping). */
  readonly broadcast?: readonly string[];
  /** How long before the contest's start the broadcast went out (0: at the start): their ping timeout runs from it. */
  readonly broadcastAgoMs?: number;
  /** Answers (can_handle) to the broadcast already in hand at the start, by skill: each decides at its turn, at once. */
  readonly answered?: Readonly<Record<string, boolean>>;
  /** The stage must decide within this many ms of its start (the match bound less a margin); absent: no bound. */
  readonly boundMs?: number;
}

/** The delay armed when no stage bound is given: setTimeout's largest (about 24.8 days); a contest never lasts it. */
export const NO_BOUND_MS = 2_147_483_647;

/** `cut`: still silent (or never asked) when the stage bound fired. */
export type SkillOutcome = 'willing' | 'declined' | 'timeout' | 'gone' | 'cut';

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
  /** Skills asked by the broadcast. */
  readonly broadcast: readonly string[];
  /** How long before the start the broadcast went out. */
  readonly broadcastAgoMs: number;
  /** Answers (can_handle) of broadcast skills received before their turn. */
  readonly early: Readonly<Record<string, boolean>>;
  /** The broadcast's ping timeout has passed: a broadcast skill with no answer in `early` is timed out. */
  readonly broadcastExpired: boolean;
  readonly boundMs: number;
  /** The stage bound decided: skills were still silent when it fired. */
  readonly cut: boolean;
  /** With `cut`: how many of `outcomes` were recorded before it (the rest were decided by it). */
  readonly decidedBeforeCut: number;
}

export type FallbackEvent =
  | { readonly type: 'PONG'; readonly skill_id: string; readonly can_handle: boolean }
  | { readonly type: 'GONE'; readonly skill_id: string }
  /** Raised by the contest itself `pingTimeout` after the broadcast went out: the broadcast skills' ping timeout. */
  | { readonly type: 'BROADCAST_TIMEOUT' };

export type FallbackEmitted =
  | { readonly type: 'ping.timeout'; readonly skill_id: string; readonly after_ms: number }
  /**
   * At the stage bound: `skill_ids`, asked by the broadcast and silent for at least their ping timeout (timed out);
   * `silent`, every skill asked and still silent (those, and the awaited one, however short its wait).
   */
  | { readonly type: 'ping.timeouts'; readonly skill_ids: readonly string[]; readonly silent: readonly string[]; readonly after_ms: number }
  | { readonly type: 'pong.ignored'; readonly skill_id: string; readonly reason: 'duplicate' | 'late' | 'not_awaited' | 'not_in_pool' };

/** The selected skill, or null when every skill declined or stayed silent (§6.2). */
export type FallbackOutput = { readonly skill_id: string } | null;

const current = (context: FallbackContext): string | undefined => context.pool[context.index];
/** The early answer of the skill whose turn it is, if it gave one. */
const earlyAnswer = (context: FallbackContext): boolean | undefined => {
  const skill = current(context);
  return skill !== undefined && Object.hasOwn(context.early, skill) ? context.early[skill] : undefined;
};

/** The awaited skill is a broadcast one whose ping timeout (from the broadcast) has passed without its answer. */
const awaitedExpired = (context: FallbackContext): boolean => {
  const skill = current(context);
  return context.broadcastExpired && skill !== undefined && context.broadcast.includes(skill) && !Object.hasOwn(context.early, skill);
};

/** At the stage bound: the index of the first skill from the current one on that already said yes; -1 when none did. */
const willingAhead = (context: FallbackContext): number => {
  for (let i = context.index; i < context.pool.length; i++) {
    const skill = context.pool[i]!;
    if (!context.gone.includes(skill) && context.early[skill] === true) return i;
  }
  return -1;
};

/**
 * Whether the contest waits for `skillId`'s pong right now: it is the awaited skill, or a broadcast skill still ahead
 * that has not answered within the broadcast's ping timeout (a reply with no ids of its own is routed by this).
 */
export const awaitsPong = (context: FallbackContext, skillId: string): boolean => {
  const index = context.pool.indexOf(skillId);
  if (index < context.index || context.gone.includes(skillId) || Object.hasOwn(context.early, skillId)) return false;
  if (index === context.index) return !context.outcomes.some((o) => o.skill_id === skillId);
  return context.broadcast.includes(skillId) && !context.broadcastExpired;
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
    /**
     * The stage bound fired: the skills still silent up to the first one that said yes (or to the end) are recorded as
     * `cut` (§6.1: no reply counts as can_handle false); that one, if any, as willing. `index` stays at the skill that
     * was awaited.
     */
    cutAtBound: assign(({ context }) => {
      const chosen = willingAhead(context);
      const last = chosen === -1 ? context.pool.length - 1 : chosen;
      const outcomes = [...context.outcomes];
      for (let i = context.index; i <= last; i++) {
        const skill = context.pool[i]!;
        if (context.gone.includes(skill)) continue;
        if (i === chosen) outcomes.push({ skill_id: skill, outcome: 'willing' });
        else if (context.early[skill] === false) outcomes.push({ skill_id: skill, outcome: 'declined' });
        else outcomes.push({ skill_id: skill, outcome: 'cut' });
      }
      return { outcomes, cut: true, decidedBeforeCut: context.outcomes.length };
    }),
    markGone: assign({ gone: ({ context, event }) => [...context.gone, eventOf(event, 'GONE').skill_id] }),
    /** §6.1: the broadcast skills' ping timeout, counted from the broadcast. */
    scheduleBroadcastTimeout: raise({ type: 'BROADCAST_TIMEOUT' }, { delay: 'broadcastTimeout' }),
    expireBroadcast: assign({ broadcastExpired: true }),
    reportTimeout: emit(({ context }) => ({
      type: 'ping.timeout' as const,
      skill_id: current(context) ?? '',
      after_ms: context.pingTimeoutMs,
    })),
    /**
     * At the stage bound: broadcast skills silent since the broadcast have had their whole ping timeout when the bound
     * and the broadcast's age together are at least that long — reported as timed out, as at their turn; with the
     * awaited skill, they are reported silent (`ping.timeouts`).
     */
    reportCutTimeouts: emit(({ context }) => {
      const asked = context.outcomes.filter((o) => o.outcome === 'cut' && (context.broadcast.includes(o.skill_id) || o.skill_id === current(context))).map((o) => o.skill_id);
      return {
        type: 'ping.timeouts' as const,
        skill_ids: context.boundMs + context.broadcastAgoMs < context.pingTimeoutMs ? [] : asked.filter((skill) => context.broadcast.includes(skill)),
        silent: asked,
        after_ms: context.boundMs,
      };
    }),
    reportIgnored: emit(({ context, event: received }) => {
      const event = eventOf(received, 'PONG');
      const earlier = context.outcomes.find((o) => o.skill_id === event.skill_id);
      // A broadcast skill that already answered before its turn: its second answer is a duplicate.
      const answeredEarly = Object.hasOwn(context.early, event.skill_id);
      // A skill of another pool answering a broadcast (every legacy skill answers every one) is expected traffic.
      const reason =
        earlier !== undefined ? (earlier.outcome === 'timeout' ? 'late' : 'duplicate')
        : answeredEarly ? 'duplicate'
        : context.broadcastExpired && context.broadcast.includes(event.skill_id) ? 'late'
        : context.broadcast.length > 0 && !context.pool.includes(event.skill_id) ? 'not_in_pool'
        : 'not_awaited';
      return { type: 'pong.ignored' as const, skill_id: event.skill_id, reason };
    }),
  },
  guards: {
    poolEmpty: ({ context }) => context.pool.length === 0,
    /** At the stage bound: a skill from the current one on already said yes. */
    willingAhead: ({ context }) => willingAhead(context) !== -1,
    fromAwaitedSkill: ({ context, event }) => eventOf(event, ['PONG', 'GONE']).skill_id === current(context),
    willing: ({ event }) => eventOf(event, 'PONG').can_handle,
    hasNext: ({ context }) => nextIndex(context, context.index) < context.pool.length,
    hasBroadcast: ({ context }) => context.broadcast.length > 0,
    earlyWilling: ({ context }) => earlyAnswer(context) === true,
    earlyDeclined: ({ context }) => earlyAnswer(context) === false,
    /** A broadcast skill's first answer before its turn (still ahead in the pool), within its ping timeout. */
    aheadInBroadcast: ({ context, event }) => {
      const skillId = eventOf(event, 'PONG').skill_id;
      return !context.broadcastExpired && context.broadcast.includes(skillId) && !Object.hasOwn(context.early, skillId) && context.pool.indexOf(skillId) > context.index;
    },
    awaitedExpired: ({ context }) => awaitedExpired(context),
  },
  delays: {
    pingTimeout: ({ context }) => context.pingTimeoutMs,
    broadcastTimeout: ({ context }) => Math.max(0, context.pingTimeoutMs - context.broadcastAgoMs),
    stageBound: ({ context }) => context.boundMs,
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
    broadcastAgoMs: input.broadcastAgoMs ?? 0,
    early: Object.fromEntries(Object.entries(input.answered ?? {}).filter(([skill]) => input.pool.includes(skill) && (input.broadcast ?? []).includes(skill))),
    broadcastExpired: false,
    boundMs: input.boundMs ?? NO_BOUND_MS,
    cut: false,
    decidedBeforeCut: 0,
  }),
  // A skill that becomes unreachable before its turn is skipped when its turn comes.
  on: { GONE: { actions: 'markGone' }, BROADCAST_TIMEOUT: { actions: 'expireBroadcast' } },
  // PIPELINE-1 §4.4 × §6.1–6.2: the stage decides before the match bound, with what the skills have said by then.
  after: {
    stageBound: [
      { guard: 'willingAhead', target: '.matched', actions: ['cutAtBound', 'reportCutTimeouts'] },
      { target: '.exhausted', actions: ['cutAtBound', 'reportCutTimeouts'] },
    ],
  },
  initial: 'start',
  states: {
    start: {
      always: [
        { guard: 'poolEmpty', target: 'exhausted' },
        { guard: 'hasBroadcast', target: 'querying', actions: 'scheduleBroadcastTimeout' },
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
        // A broadcast skill silent past the broadcast's ping timeout: timed out, now (at its turn, or when it passes).
        {
          guard: and(['awaitedExpired', 'hasNext']),
          target: 'querying',
          reenter: true,
          actions: ['reportTimeout', { type: 'recordOutcome', params: { outcome: 'timeout' } }, 'advance'],
        },
        { guard: 'awaitedExpired', target: 'exhausted', actions: ['reportTimeout', { type: 'recordOutcome', params: { outcome: 'timeout' } }] },
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
