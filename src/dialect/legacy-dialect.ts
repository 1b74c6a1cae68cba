/**
 * The legacy dialect: what shipping OpenVoiceOS programs put on the wire today (ovos-core 2.1, ovos-workshop 7,
 * ovos-bus-client 1.3 — src/specs/companion.md, "The wire today", and the frames recorded in
 * test/integration/transcripts/). It produces the same
 * `Inbound` kinds as the spec dialect, so machines and plugins never see which dialect a message came in; what the
 * legacy side expects to see back is built here too.
 *
 * So far: the utterance entry (`recognizer_loop:utterance`, as the OVOS voice loop and ovos-bus-client clients send
 * it), the no-match events OVOS clients listen for, and fallback skills written on ovos-workshop (`FallbackSkill`):
 *   - `ovos.skills.fallback.register {skill_id, priority?}` / `.deregister {skill_id}` — no `context.skill_id`;
 *     a missing priority is ovos-core's 101, i.e. our lowest, 100;
 *   - one broadcast `ovos.skills.fallback.ping {utterances, lang, range}` per contest, answered on
 *     `ovos.skills.fallback.pong {skill_id, can_handle}` by reply — so the pong carries the ping's session,
 *     utterance_id and contest_id, which is how it is correlated (`data.skill_id` names the skill: when skills share
 *     a bus client `context.skill_id` can name another one);
 *   - the winner is dispatched on `ovos.skills.fallback.<skill_id>.request`, answers `.start` then
 *     `.response {result}` (`result: false` is a handler error), and ends the utterance with its own
 *     `ovos.utterance.handled`.
 * Common-query skills written on ovos-workshop (`@common_query` skills and the classic `CommonQuerySkill`):
 *   - discovery: `ovos.common_query.pong {skill_id, is_classic_cq}` (no utterance) is told apart from the spec claim
 *     of the same topic; ovos-core's discovery ping (no utterance) is sent on joining a bus;
 *   - one broadcast `question:query {phrase}` per contest, answered by `message.response`, so the replies on
 *     `question:query.response` carry the query's session, utterance_id and contest_id: `{phrase, skill_id,
 *     searching: true}` is a claim whose answer follows unasked (a pong with `unasked`), `{…, answer, conf,
 *     callback_data}` the answer, `{…, searching: false}` a decline (`data.skill_id` names the skill: skills sharing
 *     a bus client send each other's `context.skill_id`). A classic skill's `conf` above 1 (its level's base plus
 *     bonuses: 2.0 is common) counts as 1, the top of the spec's scale;
 *   - the winner is activated (`<skill_id>.activate`) and dispatched on `question:action.<skill_id>` (classic:
 *     `question:action`, the skill checks `data.skill_id`), data = the utterance merged with its own reply; it speaks,
 *     sends `mycroft.skill.handler.start/complete` and ends the utterance with its own `ovos.utterance.handled`.
 */
import type { JsonObject, Message } from '../bus/message.js';
import { forward, isJsonObject, reply, stringField, withContext } from '../bus/message.js';
import { classifyUtterances, fail, sessionIdTooLong, skillIdFrom, type Classified } from './spec-dialect.js';

export const legacyTopics = {
  /** The utterance entry of the OVOS voice loop and of ovos-bus-client clients. */
  recognizerUtterance: 'recognizer_loop:utterance',
  /** Emitted by ovos-core when no stage matched (with the error sound), before its `ovos.utterance.handled`. */
  completeIntentFailure: 'complete_intent_failure',
  playSound: 'mycroft.audio.play_sound',
  fallbackRegister: 'ovos.skills.fallback.register',
  fallbackDeregister: 'ovos.skills.fallback.deregister',
  fallbackPing: 'ovos.skills.fallback.ping',
  fallbackPong: 'ovos.skills.fallback.pong',
  fallbackRequest: (skillId: string): string => `ovos.skills.fallback.${skillId}.request`,
  utteranceHandled: 'ovos.utterance.handled',
  /** ovos-core's discovery: a ping without an utterance, answered by every common-query skill with its id. */
  commonQueryPing: 'ovos.common_query.ping',
  commonQueryPong: 'ovos.common_query.pong',
  /** ovos-core's common-query question (one broadcast per contest) and the skills' replies to it. */
  questionQuery: 'question:query',
  questionQueryResponse: 'question:query.response',
  /** The dispatch of a common-query winner: `question:action.<skill_id>`; classic CommonQuerySkills listen on the bare topic. */
  questionAction: (skillId: string, classic: boolean): string => (classic ? 'question:action' : `question:action.${skillId}`),
  /** Sent before a legacy skill's dispatch, as ovos-core does: the skill becomes active (converse). */
  activate: (skillId: string): string => `${skillId}.activate`,
  /** What an ovos-workshop skill says (a legacy common-query winner speaks its own answer on it). */
  speak: 'speak',
  /** ovos-core's: stops a fallback handler that ran past its timeout (ovos-workshop's killable event listens). */
  fallbackForceTimeout: 'ovos.skills.fallback.force_timeout',
} as const;

const FALLBACK_PREFIX = 'ovos.skills.fallback.';
const RESPONSE_SUFFIX = '.response';
/** ovos-core's default priority for a registration without one (the end of its low stage). */
const LEGACY_DEFAULT_PRIORITY = 101;

/** The error sound ovos-core plays when nothing matched. */
export const ERROR_SOUND = 'snd/error.mp3';

/** A legacy message we consume, as the same `Inbound` the spec dialect produces; null when not ours. */
export function classifyLegacy(message: Message): Classified {
  const { type, data } = message;
  switch (type) {
    case legacyTopics.recognizerUtterance:
      return classifyUtterances(data);
    case legacyTopics.fallbackRegister: {
      const skillId = skillIdFrom(data, 'fallback.register');
      if (typeof skillId !== 'string') return skillId;
      const sessionTooLong = sessionIdTooLong(message, 'fallback.register');
      if (sessionTooLong !== undefined) return sessionTooLong;
      const raw = data['priority'];
      if (raw !== undefined && raw !== null && (typeof raw !== 'number' || !Number.isFinite(raw))) return fail('fallback.register', 'priority_invalid');
      // ovos-core's scale runs to 101 (its low stage is (90, 101]); ours to 100: the same place, the lowest.
      const priority = Math.min(100, Math.max(0, Math.round(typeof raw === 'number' ? raw : LEGACY_DEFAULT_PRIORITY)));
      return { ok: true, inbound: { kind: 'fallback.register', skill_id: skillId, priority, legacy: true } };
    }
    case legacyTopics.fallbackDeregister: {
      const skillId = skillIdFrom(data, 'fallback.deregister');
      if (typeof skillId !== 'string') return skillId;
      return { ok: true, inbound: { kind: 'fallback.deregister', skill_id: skillId, context_skill_id: stringField(message.context, 'skill_id'), legacy: true } };
    }
    case legacyTopics.fallbackPong: {
      const skillId = skillIdFrom(data, 'fallback.pong');
      if (typeof skillId !== 'string') return skillId;
      // A pong by ovos-bus-client's reply keeps the ping's ids; one without any is routed only to a contest awaiting
      // its skill, if exactly one does (Supervisor `#routeUncorrelated`), else dropped as `uncorrelated`.
      // An unusable can_handle is the skill's "no", at once (as in the spec dialect).
      const canHandle = data['can_handle'];
      if (typeof canHandle !== 'boolean') {
        return { ok: true, inbound: { kind: 'fallback.pong', skill_id: skillId, can_handle: false, legacy: true }, defect: { reason: 'can_handle_invalid', effect: 'decline', detail: String(canHandle) } };
      }
      return { ok: true, inbound: { kind: 'fallback.pong', skill_id: skillId, can_handle: canHandle, legacy: true } };
    }
    case legacyTopics.utteranceHandled:
      return { ok: true, inbound: { kind: 'utterance.handled' } };
    case legacyTopics.commonQueryPong: {
      // The same topic as the spec's claim, another meaning: {skill_id, is_classic_cq}, no utterance (discovery).
      if (data['utterance'] !== undefined || data['can_answer'] !== undefined) return null; // a spec pong
      const skillId = skillIdFrom(data, 'common_query.discovered');
      if (typeof skillId !== 'string') return skillId;
      return { ok: true, inbound: { kind: 'common_query.discovered', skill_id: skillId, classic: data['is_classic_cq'] === true } };
    }
    case legacyTopics.questionQueryResponse:
      return classifyQuestionReply(data);
  }
  // ovos.skills.fallback.<skill_id>.response {result, fallback_handler}: the legacy handler's end.
  if (type.startsWith(FALLBACK_PREFIX) && type.endsWith(RESPONSE_SUFFIX)) {
    const skillId = type.slice(FALLBACK_PREFIX.length, -RESPONSE_SUFFIX.length);
    // Not ours: the answers to our refusals, and a spec common-query answer of a skill named "ovos.skills.fallback.…".
    if (skillId === '' || skillId === 'register' || skillId === 'deregister' || type.endsWith('.common_query.response')) return null;
    const result = data['result'];
    if (result === true) return { ok: true, inbound: { kind: 'skill.handler.done', skill_id: skillId, ok: true } };
    const handler = stringField(data, 'fallback_handler');
    const exception = `FallbackHandlerFailed: ${skillId} answered result ${JSON.stringify(result ?? null)}${handler === undefined ? '' : ` (${handler})`}`;
    return { ok: true, inbound: { kind: 'skill.handler.done', skill_id: skillId, ok: false, exception } };
  }
  return null;
}

/**
 * `question:query.response`: a claim (`searching: true`), an answer (`answer` + `conf`) or a decline (`searching:
 * false`), correlated by `phrase` like a spec reply by `utterance`. A decline stays a response without answer here;
 * the plugin knows whether it follows a claim (then it settles that claim) or not (then it is a "no" to the poll).
 */
function classifyQuestionReply(data: JsonObject): Classified {
  const skillId = skillIdFrom(data, 'common_query.response');
  if (typeof skillId !== 'string') return skillId;
  const phrase = stringField(data, 'phrase');
  if (phrase === undefined) return fail('common_query.response', 'utterance_missing');
  const answer = data['answer'];
  if (answer === undefined || answer === null) {
    const searching = data['searching'];
    if (searching === true) return { ok: true, inbound: { kind: 'common_query.pong', skill_id: skillId, utterance: phrase, can_answer: true, unasked: true } };
    if (searching === false) return { ok: true, inbound: { kind: 'common_query.response', skill_id: skillId, utterance: phrase, legacy: data } };
    return fail('common_query.response', 'answer_invalid', 'neither searching nor answer');
  }
  // An answer that cannot be used is the skill's reply without an answer (`searching: false`), at once: it never holds
  // the contest open to its ceiling (as in the spec dialect).
  const declined = { ok: true as const, inbound: { kind: 'common_query.response' as const, skill_id: skillId, utterance: phrase, legacy: data } };
  if (typeof answer !== 'string' || answer.trim() === '') return { ...declined, defect: { reason: 'answer_invalid', effect: 'decline', detail: String(answer) } };
  const conf = data['conf'];
  if (conf === undefined || conf === null) return { ...declined, defect: { reason: 'conf_missing', effect: 'decline' } };
  if (typeof conf !== 'number' || !(conf >= 0) || !Number.isFinite(conf)) return { ...declined, defect: { reason: 'conf_invalid', effect: 'decline', detail: String(conf) } };
  // A classic skill's conf runs past 1 (see the header): it competes as 1, the most a spec answer can say.
  return { ok: true, inbound: { kind: 'common_query.response', skill_id: skillId, utterance: phrase, answer, conf: Math.min(conf, 1), legacy: data } };
}

/** ovos-core's question (ovos-wire-today.md): one broadcast `{phrase}`, derived from the utterance by reply. */
export function legacyQuestion(origin: Message, phrase: string, asker: string): Message {
  return withContext(reply(origin, legacyTopics.questionQuery, { phrase }), { skill_id: asker });
}

/**
 * The dispatch of a legacy common-query winner, as ovos-core sends it: `<skill_id>.activate`, then
 * `question:action[.<skill_id>]` whose data is the utterance merged with the skill's own winning reply (its
 * `callback_data` comes back to it), both with the context of the spec dispatch.
 */
export function legacyQuestionAction(
  dispatch: Message,
  skillId: string,
  classic: boolean,
  utterances: readonly string[],
  answer: JsonObject,
  activatedAt: number,
): Message[] {
  const lang = stringField(dispatch.data, 'lang') ?? '';
  const utterance = stringField(dispatch.data, 'utterance') ?? utterances[0] ?? '';
  const session = dispatch.context['session'];
  const context = isJsonObject(session) ? { ...dispatch.context, session: withActiveSkill(session, skillId, activatedAt) } : dispatch.context;
  return [
    { type: legacyTopics.activate(skillId), data: {}, context },
    { type: legacyTopics.questionAction(skillId, classic), data: { utterances: [...utterances], lang, utterance, ...answer, skill_id: skillId }, context },
  ];
}

/** ovos-core's activation: `[skill_id, unix seconds]` first in the session's `active_skills`, any older entry of it dropped. */
function withActiveSkill(session: JsonObject, skillId: string, activatedAt: number): JsonObject {
  const current = session['active_skills'];
  const others = Array.isArray(current) ? current.filter((entry) => !(Array.isArray(entry) && entry[0] === skillId)) : [];
  return { ...session, active_skills: [[skillId, activatedAt], ...others] };
}

/** The legacy ping (ovos-wire-today.md): one broadcast, a `forward` of the utterance, `{utterances, lang, range}`. */
export function legacyFallbackPing(origin: Message, utterances: readonly string[], lang: string, range: readonly [number, number]): Message {
  return forward(origin, legacyTopics.fallbackPing, { utterances: [...utterances], lang, range: [range[0], range[1]] });
}

/** Whether `message` is the legacy dispatch of a fallback winner (the one ovos-core can stop with force_timeout). */
export function isLegacyFallbackRequest(message: Message): boolean {
  return message.type.startsWith(FALLBACK_PREFIX) && message.type.endsWith('.request');
}

/**
 * The legacy dispatch of a fallback winner: `ovos.skills.fallback.<skill_id>.request {utterances, lang, range,
 * skill_id, utterance}`, with the context of the spec dispatch (derived from the utterance by reply, ids stamped).
 */
export function legacyFallbackRequest(dispatch: Message, skillId: string, utterances: readonly string[], range: readonly [number, number]): Message {
  const lang = stringField(dispatch.data, 'lang') ?? '';
  const utterance = stringField(dispatch.data, 'utterance') ?? utterances[0] ?? '';
  return {
    type: legacyTopics.fallbackRequest(skillId),
    data: { utterances: [...utterances], lang, range: [range[0], range[1]], skill_id: skillId, utterance },
    context: dispatch.context,
  };
}

/**
 * What an OVOS client waits for when nothing matched (ovos-wire-today.md, "no match"): the error sound, then
 * `complete_intent_failure {utterances, lang}`, each derived from the utterance by `reply`. Sent alongside the spec's
 * `ovos.intent.unmatched`, before the one `ovos.utterance.handled`.
 */
export function legacyUnmatched(entry: Message, utterances: readonly string[], lang: string): Message[] {
  const data: JsonObject = { utterances: [...utterances], lang };
  return [reply(entry, legacyTopics.playSound, { uri: ERROR_SOUND }), reply(entry, legacyTopics.completeIntentFailure, data)];
}
