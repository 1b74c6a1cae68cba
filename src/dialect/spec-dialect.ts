/**
 * The spec dialect: every topic of OVOS-FALLBACK-1, OVOS-COMMON-QUERY-1 and the parts of OVOS-PIPELINE-1 we speak,
 * in one adapter. Nothing else in the project spells a spec topic. `classify` turns an inbound message into a
 * typed event (payload validated) or a drop reason; the `topics` builders name what we send. The legacy OVOS dialect
 * (ovos-wire-today.md) is the second adapter, legacy-dialect.ts, producing the same `Inbound` kinds.
 */
import type { JsonObject, Message } from '../bus/message.js';
import { isJsonObject, reply, response, stringField, utteranceIdOf } from '../bus/message.js';

export const topics = {
  utteranceHandle: 'ovos.utterance.handle',
  intentMatched: 'ovos.intent.matched',
  intentUnmatched: 'ovos.intent.unmatched',
  utteranceHandled: 'ovos.utterance.handled',
  utteranceSpeak: 'ovos.utterance.speak',
  handlerStart: 'ovos.intent.handler.start',
  handlerComplete: 'ovos.intent.handler.complete',
  handlerError: 'ovos.intent.handler.error',
  /** Completion signals from a dispatched bus skill (how we observe an out-of-process handler end). */
  skillHandlerComplete: 'mycroft.skill.handler.complete',
  skillHandlerError: 'mycroft.skill.handler.error',
  sessionRejected: 'ovos.session.rejected',
  /**
   * Project extension: a refused register or deregister is answered with `response()` of it —
   * `ovos.fallback.register.response` / `ovos.fallback.deregister.response`, data `{skill_id?, accepted: false,
   * reason}` (a DropReason code) — so the skill can see why. No spec topic exists; skills that ignore it lose nothing.
   */
  fallbackRegister: 'ovos.fallback.register',
  fallbackDeregister: 'ovos.fallback.deregister',
  /**
   * Project extension (no spec topic exists): the plugin asks fallback skills to register again after it
   * (re)connects to an existing bus, since its registry lives in memory. Skills that ignore it lose nothing.
   */
  fallbackReregister: 'ovos.fallback.reregister',
  fallbackPing: (skillId: string) => `${skillId}.fallback.ping`,
  dispatch: (skillId: string, intentName: string) => `${skillId}:${intentName}`,
  commonQueryPing: 'ovos.common_query.ping',
  commonQueryPong: 'ovos.common_query.pong',
  commonQueryRequest: (skillId: string) => `${skillId}:common_query`,
  intentsList: (pipelineId: string) => `ovos.pipeline.${pipelineId}.intents.list`,
} as const;

const FALLBACK_PONG_SUFFIX = '.fallback.pong';
const CQ_RESPONSE_SUFFIX = '.common_query.response';
const INTENTS_LIST = /^ovos\.pipeline\.([A-Za-z0-9_-]+)\.intents\.list$/;

export type Inbound =
  /** `dropped`: entries of a mixed list that were not non-blank strings (the rest are kept; the orchestrator warns). */
  | { readonly kind: 'utterance.handle'; readonly utterances: readonly string[]; readonly dropped: number }
  /** `legacy`: registered in the legacy dialect (polled by the broadcast legacy ping, dispatched the legacy way). */
  | { readonly kind: 'fallback.register'; readonly skill_id: string; readonly priority: number; readonly legacy?: true }
  /** `context_skill_id`: the plugin decides who may deregister (§3.2 does not require context.skill_id). */
  | { readonly kind: 'fallback.deregister'; readonly skill_id: string; readonly context_skill_id: string | undefined; readonly legacy?: true }
  /** `legacy`: the broadcast pong of an ovos-workshop skill (its skill may be one that never registered with us). */
  | { readonly kind: 'fallback.pong'; readonly skill_id: string; readonly can_handle: boolean; readonly legacy?: true }
  | {
      readonly kind: 'common_query.pong';
      readonly skill_id: string;
      readonly utterance: string;
      readonly can_answer: boolean;
      readonly latency_ms?: number;
      /** Legacy (`searching: true`): the claim is also the request — the skill's answer follows without one. */
      readonly unasked?: true;
    }
  | {
      readonly kind: 'common_query.response';
      readonly skill_id: string;
      readonly utterance: string;
      readonly answer?: string;
      readonly conf?: number;
      /** Legacy (`question:query.response`): the reply's data as the skill sent it, handed back if it wins. */
      readonly legacy?: JsonObject;
    }
  | { readonly kind: 'skill.handler.done'; readonly skill_id: string; readonly ok: boolean; readonly exception?: string }
  | { readonly kind: 'intents.list'; readonly pipeline_id: string }
  /** Legacy dialect: a skill announcing the end of the utterance itself (ovos-workshop skills do). */
  | { readonly kind: 'utterance.handled' }
  /** Legacy dialect: a common-query skill announcing itself (discovery pong, no utterance). */
  | { readonly kind: 'common_query.discovered'; readonly skill_id: string; readonly classic: boolean };

export type InboundKind = Inbound['kind'];
export type InboundOf<K extends InboundKind> = Extract<Inbound, { kind: K }>;

/** Stable reason codes for a message of a kind we consume that we refuse (logged, then dropped). */
export type DropReason =
  | 'malformed_carrier'
  | 'utterances_invalid'
  | 'skill_id_missing'
  | 'skill_id_invalid'
  /** Longer than `MAX_SKILL_ID_LENGTH`: no skill's id is (an id becomes topics, log lines and registry entries). */
  | 'skill_id_too_long'
  /** A registration in a session whose id is longer than `MAX_SESSION_ID_LENGTH` (it would be kept with it). */
  | 'session_id_too_long'
  | 'skill_id_mismatch'
  | 'context_skill_id_mismatch'
  | 'priority_invalid'
  | 'can_handle_invalid'
  | 'can_answer_invalid'
  | 'utterance_missing'
  | 'latency_invalid'
  | 'answer_invalid'
  | 'conf_invalid'
  | 'conf_missing'
  | 'no_live_contest'
  | 'wrong_utterance'
  | 'wrong_utterance_id'
  | 'wrong_contest'
  | 'wrong_session'
  | 'ambiguous_correlation'
  | 'not_awaited'
  | 'duplicate'
  | 'not_a_claimant'
  | 'duplicate_utterance_id'
  /** Refused by the fallback plugin (not the dialect): a new registration beyond fallback.maxSkillsPerSession or
   *  fallback.maxSessions. */
  | 'registry_full'
  /** Refused by the fallback plugin: a deregister without context.skill_id from a connection other than the one
   *  the registration was made over (or with no connection identity at all). */
  | 'deregister_not_owner'
  /** Refused or dropped by the fallback plugin: a register, deregister or pong for a skill that is bound to another
   *  open connection and answers its pings there (embedded bus). */
  | 'skill_bound_elsewhere'
  /** Refused by the fallback plugin: a new registration beyond fallback.maxSkillsPerConnection bound to the sender's
   *  connection in that session (embedded bus). */
  | 'connection_quota'
  /** A reply naming one of our contest runs (or utterance broadcasts) that has already finished: a late one. */
  | 'finished_contest'
  /** A reply naming a contest run of another daemon (a cluster: every daemon hears every reply, src/cluster/). */
  | 'other_daemon'
  /** A legacy pong carrying neither contest_id nor utterance_id that no contest can take: it cannot be told from a stale one (ovos-core #859). */
  | 'uncorrelated'
  /** A legacy registration or deregistration that would replace or remove a spec skill's, from another connection. */
  | 'legacy_over_spec'
  /** An utterance that arrived while the daemon shuts down (graceful shutdown): answered with its handled at once. */
  | 'shutting_down'
  /** An utterance from a client of a daemon of a cluster cut off from NATS for longer than cluster.deadAfterMs (its
   *  partitions may be another daemon's by now): answered with its handled at once, by that daemon, to its clients. */
  | 'cluster_unreachable'
  /** An utterance past its client connection's share (orchestrator.maxInFlightPerConnection running and as many
   *  waiting): answered with its handled at once. */
  | 'too_many_in_flight';

/**
 * A field of a reply that cannot be used, where the reply itself still can: the skill's answer is taken as its
 * decline (`decline`: an unusable answer, conf or can_handle / can_answer — it never holds a contest open), or the
 * optional field is ignored (`ignored`: latency_ms). Logged with its reason by the supervisor.
 */
export interface Defect {
  readonly reason: DropReason;
  readonly effect: 'decline' | 'ignored';
  readonly detail?: string;
}

export type Classified =
  | { readonly ok: true; readonly inbound: Inbound; readonly defect?: Defect }
  | { readonly ok: false; readonly kind: InboundKind; readonly reason: DropReason; readonly detail?: string }
  | null; // not a topic we consume

/** The answer to a refused register or deregister, in either dialect (our extension, see `topics.fallbackRegister`). */
export function registrationRefused(message: Message, reason: DropReason): Message {
  const skillId = stringField(message.data, 'skill_id');
  const data: JsonObject = skillId === undefined || skillId === '' ? { accepted: false, reason } : { skill_id: skillId, accepted: false, reason };
  return response(message, data);
}

/**
 * OVOS-PIPELINE-1 §6, exactly one `ovos.utterance.handled` per `ovos.utterance.handle`: the handled that ends an
 * utterance refused at entry, with why in `error` (our extension field), so a client waiting for it never hangs.
 * Derived by `reply` (session and utterance_id kept); a malformed session carrier is not echoed, and then only an
 * entry carrying a `context.utterance_id` is answered (without either, nothing could tell whose handled it is).
 */
export function utteranceRefused(message: Message, reason: DropReason): Message | null {
  const handled = reply(message, topics.utteranceHandled, { error: reason });
  const carrier = message.context['session'];
  if (carrier === undefined || carrier === null || isJsonObject(carrier)) return handled;
  if (utteranceIdOf(message) === undefined) return null;
  const { session: _malformed, ...context } = handled.context;
  return { ...handled, context };
}

/** An utterance entry's `{utterances}` (the spec's and the legacy dialect's entry carry the same payload). */
export function classifyUtterances(data: JsonObject): Classified {
  const utterances = data['utterances'];
  if (!Array.isArray(utterances)) return fail('utterance.handle', 'utterances_invalid', 'not a list');
  // PIPELINE-1 §4: match takes a non-empty list of candidates. One bad entry does not void the good ones.
  const list = utterances.filter((u): u is string => typeof u === 'string' && u.trim() !== '');
  if (list.length === 0) return fail('utterance.handle', 'utterances_invalid', 'no non-blank string');
  return { ok: true, inbound: { kind: 'utterance.handle', utterances: list, dropped: utterances.length - list.length } };
}

export const fail = (kind: InboundKind, reason: DropReason, detail?: string): Classified =>
  detail === undefined ? { ok: false, kind, reason } : { ok: false, kind, reason, detail };

/** A registration refused for the length of its session's id (`MAX_SESSION_ID_LENGTH`), or undefined. */
export function sessionIdTooLong(message: Message, kind: InboundKind): Classified | undefined {
  const carrier = message.context['session'];
  const id = isJsonObject(carrier) ? carrier['session_id'] : undefined;
  return typeof id === 'string' && id.length > MAX_SESSION_ID_LENGTH ? fail(kind, 'session_id_too_long', `${id.length} characters (at most ${MAX_SESSION_ID_LENGTH})`) : undefined;
}

/**
 * The longest skill_id taken (OVOS ids are a package and an author, tens of characters): every registration, pong and
 * log line that carries one is bounded by it.
 */
export const MAX_SKILL_ID_LENGTH = 256;
/** The longest session id a registration may be kept under (the registry and its file hold it with every entry). */
export const MAX_SESSION_ID_LENGTH = 256;

/** Payload `skill_id` must be a non-empty string and, where the topic names one, equal the topic prefix. */
export function skillIdFrom(data: JsonObject, kind: InboundKind, topicSkillId?: string): string | Classified {
  const skillId = stringField(data, 'skill_id');
  if (skillId === undefined || skillId === '') return fail(kind, 'skill_id_missing');
  if (skillId.length > MAX_SKILL_ID_LENGTH) return fail(kind, 'skill_id_too_long', `${skillId.length} characters (at most ${MAX_SKILL_ID_LENGTH})`);
  // OVOS-MSG-1 topics: only dispatch topics contain ':' — a skill_id with one would break every topic built from it.
  if (skillId.includes(':') || /\s/.test(skillId)) return fail(kind, 'skill_id_invalid', skillId);
  if (topicSkillId !== undefined && skillId !== topicSkillId) {
    return fail(kind, 'skill_id_mismatch', `payload ${skillId} ≠ topic ${topicSkillId}`);
  }
  return skillId;
}

export function classify(message: Message): Classified {
  const { type, data } = message;
  switch (type) {
    case topics.utteranceHandle:
      return classifyUtterances(data);
    case topics.fallbackRegister: {
      const skillId = skillIdFrom(data, 'fallback.register');
      if (typeof skillId !== 'string') return skillId;
      const sessionTooLong = sessionIdTooLong(message, 'fallback.register');
      if (sessionTooLong !== undefined) return sessionTooLong;
      // OVOS-FALLBACK-1 §3.1: MUST NOT index a registration whose skill_id differs from context.skill_id.
      if (stringField(message.context, 'skill_id') !== skillId) {
        return fail('fallback.register', 'context_skill_id_mismatch');
      }
      const priority = data['priority'];
      if (typeof priority !== 'number' || !Number.isInteger(priority)) return fail('fallback.register', 'priority_invalid');
      return { ok: true, inbound: { kind: 'fallback.register', skill_id: skillId, priority } };
    }
    case topics.fallbackDeregister: {
      const skillId = skillIdFrom(data, 'fallback.deregister');
      if (typeof skillId !== 'string') return skillId;
      // §3.2 requires only skill_id; whether the sender owns the registration (a matching context.skill_id, or the
      // connection it was made over) is the plugin's decision.
      return { ok: true, inbound: { kind: 'fallback.deregister', skill_id: skillId, context_skill_id: stringField(message.context, 'skill_id') } };
    }
    case topics.commonQueryPong: {
      const skillId = skillIdFrom(data, 'common_query.pong');
      if (typeof skillId !== 'string') return skillId;
      const utterance = stringField(data, 'utterance');
      if (utterance === undefined) return fail('common_query.pong', 'utterance_missing');
      // An unusable can_answer is the skill's "no" (§6.2: it never holds the poll open); an unusable latency_ms, an
      // optional field, is ignored and the claim kept (the collection window then uses the default).
      const canAnswer = data['can_answer'];
      if (typeof canAnswer !== 'boolean') {
        return { ok: true, inbound: { kind: 'common_query.pong', skill_id: skillId, utterance, can_answer: false }, defect: { reason: 'can_answer_invalid', effect: 'decline', detail: preview(canAnswer) } };
      }
      const latency = data['latency_ms'];
      const pong = { kind: 'common_query.pong' as const, skill_id: skillId, utterance, can_answer: canAnswer };
      if (latency !== undefined && latency !== null && (typeof latency !== 'number' || !(latency >= 0) || !Number.isFinite(latency))) {
        return { ok: true, inbound: pong, defect: { reason: 'latency_invalid', effect: 'ignored', detail: preview(latency) } };
      }
      return { ok: true, inbound: typeof latency === 'number' ? { ...pong, latency_ms: latency } : pong };
    }
    case topics.skillHandlerComplete:
    case topics.skillHandlerError: {
      const skillId = stringField(message.context, 'skill_id');
      if (skillId === undefined || skillId === '') return fail('skill.handler.done', 'skill_id_missing');
      const ok = type === topics.skillHandlerComplete;
      const exception = stringField(data, 'exception');
      return {
        ok: true,
        inbound: exception === undefined ? { kind: 'skill.handler.done', skill_id: skillId, ok } : { kind: 'skill.handler.done', skill_id: skillId, ok, exception },
      };
    }
  }
  // The legacy broadcast pong is the legacy dialect's (also when it is off: not a spec pong of a skill "ovos.skills").
  if (type.endsWith(FALLBACK_PONG_SUFFIX) && type !== 'ovos.skills.fallback.pong') {
    const topicSkillId = type.slice(0, -FALLBACK_PONG_SUFFIX.length);
    if (topicSkillId === '' || type.includes(':')) return null;
    const skillId = skillIdFrom(data, 'fallback.pong', topicSkillId);
    if (typeof skillId !== 'string') return skillId;
    // An unusable can_handle is the skill's "no" (§6.1): the contest moves on at once instead of waiting its timeout.
    const canHandle = data['can_handle'];
    if (typeof canHandle !== 'boolean') {
      return { ok: true, inbound: { kind: 'fallback.pong', skill_id: skillId, can_handle: false }, defect: { reason: 'can_handle_invalid', effect: 'decline', detail: preview(canHandle) } };
    }
    return { ok: true, inbound: { kind: 'fallback.pong', skill_id: skillId, can_handle: canHandle } };
  }
  if (type.endsWith(CQ_RESPONSE_SUFFIX)) {
    const topicSkillId = type.slice(0, -CQ_RESPONSE_SUFFIX.length);
    if (topicSkillId === '' || type.includes(':')) return null;
    // OVOS-COMMON-QUERY-1 §13: a skill may not answer for another.
    const skillId = skillIdFrom(data, 'common_query.response', topicSkillId);
    if (typeof skillId !== 'string') return skillId;
    const utterance = stringField(data, 'utterance');
    if (utterance === undefined) return fail('common_query.response', 'utterance_missing');
    const answer = data['answer'];
    const conf = data['conf'];
    if (answer === undefined || answer === null) {
      return { ok: true, inbound: { kind: 'common_query.response', skill_id: skillId, utterance } };
    }
    // An answer that cannot be used — empty, not a string, or without a §7.1 conf (MUST be present, a number in [0, 1])
    // — is the skill's response without an answer: it has responded (the contest does not wait for it to its ceiling)
    // and has nothing to offer.
    const declined = { ok: true as const, inbound: { kind: 'common_query.response' as const, skill_id: skillId, utterance } };
    if (typeof answer !== 'string' || answer.trim() === '') return { ...declined, defect: { reason: 'answer_invalid', effect: 'decline', detail: preview(answer) } };
    if (conf === undefined || conf === null) return { ...declined, defect: { reason: 'conf_missing', effect: 'decline' } };
    if (typeof conf !== 'number' || !(conf >= 0 && conf <= 1)) return { ...declined, defect: { reason: 'conf_invalid', effect: 'decline', detail: preview(conf) } };
    return { ok: true, inbound: { kind: 'common_query.response', skill_id: skillId, utterance, answer, conf } };
  }
  const list = INTENTS_LIST.exec(type);
  if (list !== null && list[1] !== undefined) return { ok: true, inbound: { kind: 'intents.list', pipeline_id: list[1] } };
  return null;
}

/** A short, printable view of an unusable field value, for the log line. */
function preview(value: unknown): string {
  const text = typeof value === 'string' ? JSON.stringify(value) : String(value);
  return text.length > 60 ? `${text.slice(0, 60)}…` : text;
}
