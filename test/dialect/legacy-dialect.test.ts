/**
 * The legacy dialect adapter (src/dialect/legacy-dialect.ts) on its own: what each frame today's OVOS programs send
 * (ovos-wire-today.md) becomes, and what a malformed one is dropped for. Never a throw: every field of every
 * consumed topic set to every JSON type still classifies to an inbound, a reason code, or "not ours".
 */
import { describe, expect, it } from 'vitest';
import type { Json, JsonObject, Message } from '../../src/bus/message.js';
import { classifyLegacy, legacyQuestion, legacyQuestionAction } from '../../src/dialect/legacy-dialect.js';

const frame = (type: string, data: JsonObject, context: JsonObject = { session: { session_id: 'default' } }): Message => ({ type, data, context });
const question = (data: JsonObject): ReturnType<typeof classifyLegacy> => classifyLegacy(frame('question:query.response', { phrase: 'what is the speed of light', skill_id: 'cq.wiki', ...data }));

describe('ovos-wire-today: question:query.response', () => {
  it('searching: true is an unasked claim (a pong with can_answer, correlated by its phrase)', () => {
    expect(question({ searching: true })).toEqual({
      ok: true,
      inbound: { kind: 'common_query.pong', skill_id: 'cq.wiki', utterance: 'what is the speed of light', can_answer: true, unasked: true },
    });
  });

  it('an answer with conf is a response that keeps the whole reply (callback_data goes back to the skill)', () => {
    const reply = question({ answer: 'fast', conf: 0.7, callback_data: { answer: 'fast' } });
    expect(reply).toMatchObject({ ok: true, inbound: { kind: 'common_query.response', skill_id: 'cq.wiki', answer: 'fast', conf: 0.7 } });
    expect(reply?.ok === true && reply.inbound.kind === 'common_query.response' ? reply.inbound.legacy : null).toMatchObject({ callback_data: { answer: 'fast' } });
  });

  it.each([
    [2.0, 1],
    [1.0, 1],
    [1.0000001, 1],
    [0.99, 0.99],
    [0, 0],
  ])('a classic conf of %s competes as %s (OVOS-COMMON-QUERY-1 Appendix B: [0, 1])', (conf, competes) => {
    expect(question({ answer: 'a', conf })).toMatchObject({ ok: true, inbound: { conf: competes } });
  });

  it('searching: false is a response without answer (a decline; the plugin decides claim or poll "no")', () => {
    expect(question({ searching: false })).toMatchObject({ ok: true, inbound: { kind: 'common_query.response', skill_id: 'cq.wiki' } });
    const inbound = question({ searching: false });
    expect(inbound?.ok === true && 'answer' in inbound.inbound).toBe(false);
  });

  it('answer: null with searching: false is a decline too (Python None on the wire)', () => {
    expect(question({ answer: null, searching: false })).toMatchObject({ ok: true, inbound: { kind: 'common_query.response' } });
  });

  it.each<[string, JsonObject, string]>([
    ['conf a string', { answer: 'a', conf: 'high' }, 'conf_invalid'],
    ['conf negative', { answer: 'a', conf: -0.1 }, 'conf_invalid'],
    ['conf missing', { answer: 'a' }, 'conf_missing'],
    ['conf null', { answer: 'a', conf: null }, 'conf_missing'],
    ['answer a number', { answer: 42, conf: 0.9 }, 'answer_invalid'],
    ['answer blank', { answer: '   ', conf: 0.9 }, 'answer_invalid'],
    ['answer an object', { answer: { text: 'a' }, conf: 0.9 }, 'answer_invalid'],
  ])('%s → the reply without an answer (the skill\'s decline, at once), with its reason (%s)', (_what, data, reason) => {
    const classified = question(data);
    expect(classified).toMatchObject({ ok: true, inbound: { kind: 'common_query.response', skill_id: 'cq.wiki' }, defect: { reason, effect: 'decline' } });
    expect(classified?.ok === true && 'answer' in classified.inbound).toBe(false);
  });

  it.each<[string, JsonObject, string]>([
    ['neither searching nor answer', {}, 'answer_invalid'],
    ['searching a string', { searching: 'yes' }, 'answer_invalid'],
    ['phrase null', { phrase: null, answer: 'a', conf: 0.9 }, 'utterance_missing'],
    ['phrase a number', { phrase: 7, searching: true }, 'utterance_missing'],
    ['skill_id null', { skill_id: null, searching: true }, 'skill_id_missing'],
    ['skill_id empty', { skill_id: '', searching: true }, 'skill_id_missing'],
    ['skill_id with a colon', { skill_id: 'evil:x', searching: true }, 'skill_id_invalid'],
  ])('%s → dropped (%s)', (_what, data, reason) => {
    expect(question(data)).toMatchObject({ ok: false, reason });
  });
});

describe('ovos-wire-today: the discovery pong and the spec claim share a topic', () => {
  it('{skill_id, is_classic_cq} is a discovery', () => {
    expect(classifyLegacy(frame('ovos.common_query.pong', { skill_id: 'cq.classic', is_classic_cq: true }))).toEqual({
      ok: true,
      inbound: { kind: 'common_query.discovered', skill_id: 'cq.classic', classic: true },
    });
  });

  it('a pong with an utterance or can_answer is the spec claim: not the legacy adapter’s', () => {
    expect(classifyLegacy(frame('ovos.common_query.pong', { skill_id: 'wiki', utterance: 'x', can_answer: true }))).toBeNull();
    expect(classifyLegacy(frame('ovos.common_query.pong', { skill_id: 'wiki', can_answer: false }))).toBeNull();
  });

  it('is_classic_cq of any other type means not classic; a missing skill_id is dropped', () => {
    expect(classifyLegacy(frame('ovos.common_query.pong', { skill_id: 'cq', is_classic_cq: 'yes' }))).toMatchObject({ ok: true, inbound: { classic: false } });
    expect(classifyLegacy(frame('ovos.common_query.pong', { is_classic_cq: true }))).toMatchObject({ ok: false, reason: 'skill_id_missing' });
  });
});

describe('ovos-wire-today: what the daemon sends a workshop common-query skill', () => {
  const entry = frame('recognizer_loop:utterance', { utterances: ['what is the speed of light'] }, { source: 'audio', destination: 'skills', session: { session_id: 's1', active_skills: [['old.skill', 1]] }, x: 'xx' });

  it('question:query {phrase} is derived from the utterance by reply, asked in the pipeline’s name', () => {
    expect(legacyQuestion(entry, 'what is the speed of light', 'common_query')).toEqual({
      type: 'question:query',
      data: { phrase: 'what is the speed of light' },
      context: { source: 'skills', destination: 'audio', session: { session_id: 's1', active_skills: [['old.skill', 1]] }, x: 'xx', skill_id: 'common_query' },
    });
  });

  it('the winner is activated first in active_skills, then dispatched its own reply on question:action.<skill_id> (classic: the bare topic)', () => {
    const answer = { phrase: 'what is the speed of light', skill_id: 'cq.wiki', answer: 'fast', conf: 0.7, callback_data: { answer: 'fast' } };
    const dispatch = frame('common_query:common_query', { utterance: 'what is the speed of light', lang: 'en-US' }, { ...entry.context, session: { session_id: 's1', active_skills: [['cq.wiki', 5], ['old.skill', 1]] } });
    const [activate, action] = legacyQuestionAction(dispatch, 'cq.wiki', false, ['what is the speed of light'], answer, 100);
    expect(activate?.type).toBe('cq.wiki.activate');
    expect(action?.type).toBe('question:action.cq.wiki');
    expect(action?.data).toEqual({ utterances: ['what is the speed of light'], lang: 'en-US', utterance: 'what is the speed of light', ...answer });
    // Its older entry is replaced, not duplicated; the other active skill stays.
    expect((action?.context['session'] as JsonObject)['active_skills']).toEqual([['cq.wiki', 100], ['old.skill', 1]]);
    expect(action?.context['x']).toBe('xx');
    expect(legacyQuestionAction(dispatch, 'cq.classic', true, ['q'], answer, 100)[1]?.type).toBe('question:action');
  });
});

describe('legacy dialect: malformed frames never throw', () => {
  const values: Json[] = [null, true, false, 0, -1, 2.5, 'x', '', [], [1, 'a'], {}, { a: 1 }];
  const topicsAndFields: Array<[string, string[]]> = [
    ['question:query.response', ['phrase', 'skill_id', 'answer', 'conf', 'searching', 'callback_data']],
    ['ovos.common_query.pong', ['skill_id', 'is_classic_cq', 'utterance', 'can_answer']],
    ['ovos.skills.fallback.register', ['skill_id', 'priority']],
    ['ovos.skills.fallback.deregister', ['skill_id']],
    ['ovos.skills.fallback.pong', ['skill_id', 'can_handle']],
    ['ovos.skills.fallback.wiki.response', ['result', 'fallback_handler']],
    ['recognizer_loop:utterance', ['utterances', 'lang']],
  ];
  it.each(topicsAndFields)('%s: every field as every JSON type classifies (inbound, reason code or not ours)', (type, fields) => {
    for (const field of fields) {
      for (const value of values) {
        const base: JsonObject = { skill_id: 'wiki', phrase: 'q', answer: 'a', conf: 0.5, utterances: ['q'], can_handle: true, result: true };
        const message = frame(type, { ...base, [field]: value }, { session: { session_id: 'default' }, contest_id: 'c1' });
        const classified = classifyLegacy(message);
        if (classified !== null && !classified.ok) expect(typeof classified.reason).toBe('string');
      }
    }
  });
});
