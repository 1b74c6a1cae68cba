/**
 * Scripted common-query skills on the harness bus (OVOS-COMMON-QUERY-1 §11), with every delay measured on the
 * harness's ManualClock (`clock.setTimeout`), so tests never touch real time.
 *
 * A skill claims on `ovos.common_query.ping` (or stays silent), optionally after `pongDelayMs`, and answers
 * `<skill_id>:common_query` on `<skill_id>.common_query.response` after `responseDelayMs` — both derived via reply,
 * utterance echoed. Payload rewriters let a test send malformed pongs and responses.
 */
import { reply, type JsonObject, type Message } from '../../src/bus/message.js';
import { resolveLang, sessionFromObject, type SessionView } from '../../src/bus/session.js';
import { isJsonObject } from '../../src/bus/message.js';
import type { Harness } from './harness.js';

export interface CqSkillScript {
  /** The pong: `true`/`false` sends `can_answer`; `'silent'` sends nothing (§6.2). Default: true. */
  readonly claim?: boolean | 'silent' | ((utterance: string, ping: Message) => boolean | 'silent');
  /** `latency_ms` in the pong (§6.2); omitted when undefined. */
  readonly latencyMs?: number;
  /** Clock time between the ping and the pong; 0 = at once. */
  readonly pongDelayMs?: number;
  /** Per ping (`index`: 0 for the first ping this skill received): clock time before the pong; overrides pongDelayMs. */
  readonly pongDelayFor?: (utterance: string, ping: Message, index: number) => number;
  /** The answer: a string, or null for a response without `answer` (a decline, §7.1). Default: "<skill_id> answer". */
  readonly answer?: string | null | ((utterance: string, request: Message) => string | null);
  /** `conf` sent with an answer. Default 0.7. */
  readonly conf?: number;
  /** Clock time between the request and the response; 0 = at once. */
  readonly responseDelayMs?: number;
  /** Never answer the full-answer request (a silent claimant). */
  readonly silentOnRequest?: boolean;
  /** Rewrite the pong payload before it is sent (malformed-input tests). */
  readonly pongData?: (data: JsonObject) => JsonObject;
  /** Rewrite the response payload before it is sent (malformed-input tests). */
  readonly responseData?: (data: JsonObject) => JsonObject;
  /** Topic of the response; default `<skill_id>.common_query.response`. */
  readonly responseTopic?: string;
}

export interface CqSkill {
  readonly skillId: string;
  /** Pings received, with the clock time they arrived. */
  readonly pings: Array<{ readonly at: number; readonly message: Message }>;
  /** `<skill_id>:common_query` requests received, with the clock time they arrived. */
  readonly requests: Array<{ readonly at: number; readonly message: Message }>;
  /** What the skill published, in order. */
  readonly sent: Message[];
  stop(): void;
}

function firstString(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

export function cqSkill(h: Harness, skillId: string, script: CqSkillScript = {}): CqSkill {
  const pings: CqSkill['pings'] = [];
  const requests: CqSkill['requests'] = [];
  const sent: Message[] = [];
  const requestTopic = `${skillId}:common_query`;
  const later = (ms: number | undefined, fn: () => void): void => {
    if (ms === undefined || ms <= 0) fn();
    else h.clock.setTimeout(fn, ms);
  };
  const publish = (message: Message): void => {
    sent.push(message);
    h.bus.publish(message);
  };
  const stop = h.bus.subscribe((message) => {
    const utterance = firstString(message.data['utterance']);
    if (message.type === 'ovos.common_query.ping') {
      pings.push({ at: h.clock.now(), message });
      if (utterance === undefined) return;
      const claim = typeof script.claim === 'function' ? script.claim(utterance, message) : (script.claim ?? true);
      if (claim === 'silent') return;
      const base: JsonObject = { utterance, skill_id: skillId, can_answer: claim };
      if (script.latencyMs !== undefined) base['latency_ms'] = script.latencyMs;
      const data = script.pongData ? script.pongData(base) : base;
      const delay = script.pongDelayFor ? script.pongDelayFor(utterance, message, pings.length - 1) : script.pongDelayMs;
      later(delay, () => publish(reply(message, 'ovos.common_query.pong', data)));
    } else if (message.type === requestTopic) {
      requests.push({ at: h.clock.now(), message });
      if (script.silentOnRequest === true || utterance === undefined) return;
      const answer = typeof script.answer === 'function' ? script.answer(utterance, message) : script.answer === undefined ? `${skillId} answer` : script.answer;
      const base: JsonObject = answer === null ? { utterance, skill_id: skillId } : { utterance, skill_id: skillId, answer, conf: script.conf ?? 0.7 };
      const data = script.responseData ? script.responseData(base) : base;
      later(script.responseDelayMs, () => publish(reply(message, script.responseTopic ?? `${skillId}.common_query.response`, data)));
    }
  });
  return { skillId, pings, requests, sent, stop };
}

/** Every message delivered on the bus, with the clock time it was delivered at. */
export function timedWire(h: Harness): Array<{ readonly at: number; readonly message: Message }> {
  const seen: Array<{ at: number; message: Message }> = [];
  h.bus.subscribe((message) => seen.push({ at: h.clock.now(), message }));
  return seen;
}

/** The session carried by a message, as a view (default session when absent). */
export function sessionOf(message: Message): SessionView {
  const carrier = message.context['session'];
  return sessionFromObject(isJsonObject(carrier) ? carrier : {});
}

/** The language a skill resolves for a message per OVOS-SESSION-1 §3.2.7 (`null` when nothing names one). */
export function langSeenBySkill(message: Message): string | null {
  const lang = resolveLang(message, sessionOf(message), '');
  return lang === '' ? null : lang;
}

/**
 * An ovos-workshop common-query skill (ovos-wire-today.md), scripted on the harness clock: it announces itself on
 * the discovery pong `{skill_id, is_classic_cq}` when created and on every discovery ping, answers `question:query`
 * with `searching: true` then its answer (`answer`, `conf`, `callback_data`) or `searching: false`, and when it
 * wins runs its action on `question:action.<skill_id>` (classic: `question:action` naming it) as the workshop does:
 * handler start, `speak`, handler complete, its own `ovos.utterance.handled` (unless `sendsHandled: false`).
 */
export interface LegacyCqScript {
  /** A classic `CommonQuerySkill` (`is_classic_cq`, conf up to 2.0, bare `question:action`). */
  readonly classic?: boolean;
  /** Announce on creation (as a skill does at start-up). Default true. */
  readonly announce?: boolean;
  /**
   * Clock time before `searching: true`; `'never'` sends none (a skill that answers or declines straight away). A
   * function decides per question (`index`: 0 for the first this skill received). Default 0.
   */
  readonly searchingAfterMs?: Delay;
  /** Clock time before the answer (or decline); `'never'` leaves the claim unanswered. Per question as above. Default 0. */
  readonly answerAfterMs?: Delay;
  /** The answer; null sends `searching: false` (a decline). Default "<skill_id> answer". */
  readonly answer?: string | null;
  /** `conf` sent with the answer. Default 0.7. */
  readonly conf?: number;
  /** Rewrite the answer payload before it is sent (malformed-input tests). */
  readonly answerData?: (data: JsonObject) => JsonObject;
  /** Sends its own `ovos.utterance.handled` after its action. Default true; false is the newest ovos-workshop next to ovos-core ≥ 2.3.0a1. */
  readonly sendsHandled?: boolean;
}

type Delay = number | 'never' | ((index: number) => number | 'never');

export interface LegacyCqSkill {
  readonly skillId: string;
  /** `question:query` frames received, with the clock time they arrived. */
  readonly questions: Array<{ readonly at: number; readonly message: Message }>;
  /** `question:action[.<skill_id>]` frames addressed to this skill, with the clock time they arrived. */
  readonly actions: Array<{ readonly at: number; readonly message: Message }>;
}

export function legacyCqSkill(h: Harness, skillId: string, script: LegacyCqScript = {}): LegacyCqSkill {
  const questions: LegacyCqSkill['questions'] = [];
  const actions: LegacyCqSkill['actions'] = [];
  const classic = script.classic === true;
  const at = (ms: number | 'never' | undefined, fn: () => void): void => {
    if (ms === 'never') return;
    if (ms === undefined || ms <= 0) fn();
    else h.clock.setTimeout(fn, ms);
  };
  const announce = (from?: Message): void => {
    const data = { skill_id: skillId, is_classic_cq: classic };
    h.bus.publish(from === undefined ? { type: 'ovos.common_query.pong', data, context: { skill_id: skillId, session: { session_id: 'default' } } } : reply(from, 'ovos.common_query.pong', data));
  };
  h.bus.subscribe((message) => {
    if (message.type === 'ovos.common_query.ping' && message.data['utterance'] === undefined) announce(message);
    if (message.type === 'question:query') {
      questions.push({ at: h.clock.now(), message });
      const phrase = firstString(message.data['phrase']) ?? '';
      const respond = (data: JsonObject): void => {
        const out = reply(message, 'question:query.response', { phrase, skill_id: skillId, ...data });
        h.bus.publish({ ...out, context: { ...out.context, skill_id: skillId } });
      };
      const index = questions.length - 1;
      const delay = (d: Delay | undefined): number | 'never' | undefined => (typeof d === 'function' ? d(index) : d);
      at(delay(script.searchingAfterMs), () => respond({ searching: true }));
      const answer = script.answer === undefined ? `${skillId} answer` : script.answer;
      at(delay(script.answerAfterMs), () => {
        if (answer === null) return respond({ searching: false });
        const base: JsonObject = { answer, callback_data: { answer }, conf: script.conf ?? 0.7, ...(classic ? { handles_speech: true } : {}) };
        respond(script.answerData ? script.answerData(base) : base);
      });
    }
    const mine = classic ? message.type === 'question:action' && message.data['skill_id'] === skillId : message.type === `question:action.${skillId}`;
    if (mine) {
      actions.push({ at: h.clock.now(), message });
      const as = (type: string, data: JsonObject = {}): Message => ({ type, data, context: { ...message.context, skill_id: skillId } });
      const callback = message.data['callback_data'];
      h.bus.publish(as('mycroft.skill.handler.start', { name: 'CommonQuerySkill.__handle_question_action' }));
      h.bus.publish(as('speak', { utterance: isJsonObject(callback) ? String(callback['answer']) : '', expect_response: false }));
      h.bus.publish(as('mycroft.skill.handler.complete', { name: 'CommonQuerySkill.__handle_question_action' }));
      if (script.sendsHandled !== false) h.bus.publish(as('ovos.utterance.handled', {}));
    }
  });
  if (script.announce !== false) announce();
  return { skillId, questions, actions };
}
