/**
 * The pipeline-plugin contract (OVOS-PIPELINE-1 §4) as this project embeds it.
 *
 * `match` receives the spec's `(utterances, lang, session)` plus the stamped utterance message (plugins derive
 * their bus queries from it via `reply`, OVOS-FALLBACK-1 §6.1) and an AbortSignal the orchestrator fires when the
 * match bound (§4.4) expires, so a contest abandoned by the orchestrator stops instead of running on.
 */
import { randomUUID } from 'node:crypto';
import type { ActorLogic, EventObject, Snapshot } from 'xstate';
import { isJsonObject, type JsonObject, type Message } from '../bus/message.js';
import { sessionFromObject, type SessionView } from '../bus/session.js';

/** OVOS-PIPELINE-1 §4.1. */
export interface Match {
  readonly skill_id: string;
  readonly intent_name: string;
  readonly lang: string;
  readonly utterance: string;
  readonly slots: Readonly<Record<string, string>>;
  readonly updated_session?: JsonObject;
}

export interface MatchRequest {
  readonly utterances: readonly string[];
  readonly lang: string;
  readonly session: SessionView;
  readonly message: Message;
  readonly signal: AbortSignal;
}

/** OVOS-PIPELINE-1 §10 introspection entry. */
export interface IntentListing {
  readonly intent_name: string;
  readonly skill_id: string;
  readonly lang: string;
}

/**
 * A stage's match as actor logic whose output is the Match (or null): its contest machine, built with
 * `Supervisor.child`, which the orchestrator runs as the utterance actor's own child.
 */
export type MatchLogic = ActorLogic<Snapshot<Match | null>, EventObject, unknown>;

/** A match that returns None at once, as actor logic (done as it starts). */
export const NO_MATCH: MatchLogic = {
  getInitialSnapshot: () => ({ status: 'done', output: null, error: undefined }),
  transition: (snapshot) => snapshot,
  getPersistedSnapshot: (snapshot) => snapshot,
};

export interface PipelineStage {
  readonly pipelineId: string;
  match(request: MatchRequest): Promise<Match | null>;
  /**
   * Optional: the same match as `match(request)`, as actor logic (see `MatchLogic`), for the orchestrator to run in
   * the utterance actor's own XState system — one system per utterance, no promise actor between the utterance and
   * its contest. Ended by the utterance: leaving the stage (the match bound, §4.4) stops it. Absent: `match`.
   */
  matchLogic?(request: Omit<MatchRequest, 'signal'>): MatchLogic;
  /**
   * Optional and synchronous: true when `match(request)` would return None at once, sending nothing
   * and awaiting nothing (an empty fallback pool, OVOS-FALLBACK-1 §5; a question the gate rejects,
   * OVOS-COMMON-QUERY-1 §4.1). Asked at the stage's turn; the orchestrator then records the stage as declining
   * without calling `match` — the outcome PIPELINE-1 §6 gives that stage, without an actor and a timer. False (or
   * absent, or a throw) means: call `match`.
   */
  declines?(request: Omit<MatchRequest, 'signal'>): boolean;
  /** Intents this stage can produce, for `ovos.pipeline.<id>.intents.list`. */
  intents(sessionId: string): readonly IntentListing[];
  /**
   * In-process handler for dispatches addressed to the plugin itself (`<pipeline_id>:<intent>`, a Match whose
   * skill_id is the stage's pipeline_id); a Match naming a bus skill is dispatched to it and its handler awaited.
   * Resolves when the handler is done; rejects on a handler error.
   */
  handle?(dispatch: Message, match: Match): Promise<void>;
  /**
   * Called at utterance entry, before any stage runs, for every registered stage: early start
   * (OVOS-COMMON-QUERY-1 §5) when `inPipeline`, and a session's new utterance in any case (§5.2 eviction).
   */
  onUtterance?(entry: Message, lang: string, session: SessionView, inPipeline: boolean): void;
  /**
   * The dispatch of an accepted Match as the winning skill expects it: a stage whose skills speak another dialect
   * rewrites the spec dispatch (PIPELINE-1 §7) into theirs, keeping its context — the messages in order, the last one
   * the dispatch the handler trio derives from. Absent, or `[dispatch]`: the spec dispatch.
   */
  dispatchFor?(dispatch: Message, match: Match, utterance: { readonly session: SessionView; readonly utterances: readonly string[] }): readonly Message[];
  /** Called once the orchestrator emitted `ovos.utterance.handled` for an utterance. */
  onHandled?(entry: Message, session: SessionView): void;
}

/**
 * OVOS-PIPELINE-1 §4.1: a Match missing a field, with ':' in ids, or non-string slots counts as a decline; so does an
 * `updated_session` that is present but not a session object (it would become the dispatched session, §7).
 */
export function isWellFormedMatch(value: unknown): value is Match {
  if (typeof value !== 'object' || value === null) return false;
  const m = value as Record<string, unknown>;
  const ids = [m['skill_id'], m['intent_name']];
  if (!ids.every((id) => typeof id === 'string' && id !== '' && !id.includes(':'))) return false;
  if (typeof m['lang'] !== 'string' || typeof m['utterance'] !== 'string') return false;
  const slots = m['slots'];
  if (typeof slots !== 'object' || slots === null || Array.isArray(slots)) return false;
  if (!Object.values(slots).every((v) => typeof v === 'string')) return false;
  return !('updated_session' in m) || m['updated_session'] === undefined || isJsonObject(m['updated_session']);
}

/**
 * The orchestrator's re-check of every candidate Match (OVOS-PIPELINE-1 §4.1 well-formed, §5 denylists of the
 * live session): null when it survives, else why not.
 */
export function rejectionOf(
  match: unknown,
  session: { readonly blacklistedSkills: readonly string[]; readonly blacklistedIntents: readonly string[] },
): 'malformed_match' | 'blacklisted_skill' | 'blacklisted_intent' | null {
  if (!isWellFormedMatch(match)) return 'malformed_match';
  if (session.blacklistedSkills.includes(match.skill_id)) return 'blacklisted_skill';
  if (session.blacklistedIntents.includes(`${match.skill_id}:${match.intent_name}`)) return 'blacklisted_intent';
  return null;
}

export interface MatchRequestInput {
  readonly utterances: readonly string[];
  /** Default: the session's `lang`, else "en-US". */
  readonly lang?: string;
  /** The OVOS session object as it travels in `context.session` (OVOS-SESSION-1). Default `{ session_id: "default" }`. */
  readonly session?: JsonObject;
  /** The utterance's id (OVOS-MSG-1 §4.2): every query the contest sends carries it. Default: a fresh UUID. */
  readonly utteranceId?: string;
  /** Aborts the match (the orchestrator's match bound). Default: 10 s (OVOS-PIPELINE-1 §4.4). */
  readonly signal?: AbortSignal;
}

/**
 * A `MatchRequest` for calling a stage's `match` directly (embedding): the session view is read from the OVOS
 * session object, and the stamped `ovos.utterance.handle` message the contest derives its queries from is built.
 */
export function matchRequest(input: MatchRequestInput): MatchRequest {
  const raw = input.session ?? { session_id: 'default' };
  const session = sessionFromObject(raw);
  const lang = input.lang ?? (typeof raw['lang'] === 'string' ? raw['lang'] : 'en-US');
  const message: Message = {
    type: 'ovos.utterance.handle',
    data: { utterances: [...input.utterances], lang },
    context: { source: 'embedder', destination: 'orchestrator', session: { ...raw, session_id: session.sessionId }, utterance_id: input.utteranceId ?? randomUUID() },
  };
  return { utterances: input.utterances, lang, session, message, signal: input.signal ?? AbortSignal.timeout(10_000) };
}
