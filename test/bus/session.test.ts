import { describe, expect, it } from 'vitest';
import { createMessage, type Json, type JsonObject, type Message } from '../../src/bus/message.js';
import {
  DEFAULT_SESSION_ID,
  pushActiveHandler,
  readSession,
  resolveLang,
  sessionFromObject,
  sessionIdOf,
  type SessionView,
} from '../../src/bus/session.js';

/** A message whose context carries `session` exactly as given (omitted when `undefined`). */
function carrying(session: Json | undefined, data: JsonObject = {}, extra: JsonObject = {}): Message {
  const context: JsonObject = { ...extra };
  if (session !== undefined) context['session'] = session;
  return createMessage('ovos.utterance.handle', data, context);
}

function sessionOf(message: Message): SessionView {
  const result = readSession(message);
  if (!result.ok) throw new Error(`expected a session, got ${result.reason}`);
  return result.session;
}

/** The full session serialized by ovos-bus-client (ovos-wire-today.md). */
const REAL_SESSION_FRAME =
  '{"active_skills":[],"utterance_states":{},"session_id":"smoke-session-1","lang":"en-US","context":{"timeout":120,"frame_stack":[]},"site_id":"lab","pipeline":["ovos-stop-pipeline-plugin-high","ovos-converse-pipeline-plugin","ovos-ocp-pipeline-plugin-high","ovos-padatious-pipeline-plugin-high","ovos-adapt-pipeline-plugin-high","ovos-m2v-pipeline-high","ovos-ocp-pipeline-plugin-medium","ovos-fallback-pipeline-plugin-high","ovos-stop-pipeline-plugin-medium","ovos-adapt-pipeline-plugin-medium","ovos-fallback-pipeline-plugin-medium","ovos-fallback-pipeline-plugin-low"],"location":{"city":{"code":"Lawrence","name":"Lawrence","state":{"code":"KS","name":"Kansas","country":{"code":"US","name":"United States"}}},"coordinate":{"latitude":38.971669,"longitude":-95.23525},"timezone":{"code":"America/Chicago","name":"Central Standard Time","dstOffset":3600000,"offset":-21600000}},"system_unit":"metric","time_format":"half","date_format":"MDY","is_speaking":false,"is_recording":false,"blacklisted_skills":["skill-ovos-stop.openvoiceos"],"blacklisted_intents":[]}';

describe('readSession defaults', () => {
  it('OVOS-SESSION-1 §2.1 defaults: an absent session reads as session_id "default"', () => {
    expect(DEFAULT_SESSION_ID).toBe('default');
    expect(sessionOf(carrying(undefined)).sessionId).toBe('default');
  });

  it('OVOS-SESSION-1 §2.1 defaults: a null session reads as session_id "default"', () => {
    expect(sessionOf(carrying(null)).sessionId).toBe('default');
  });

  it('OVOS-SESSION-1 §2.1 defaults: an empty {} session reads as session_id "default"', () => {
    expect(sessionOf(carrying({})).sessionId).toBe('default');
  });

  it('OVOS-SESSION-1 §2.1 defaults: an empty session_id reads as "default"', () => {
    expect(sessionOf(carrying({ session_id: '' })).sessionId).toBe('default');
  });

  it('OVOS-SESSION-1 §2.1 defaults: override fields fall back to omitted, state fields to empty', () => {
    const view = sessionOf(carrying({}));
    expect(view.lang).toBeUndefined();
    expect(view.pipeline).toBeUndefined();
    expect(view.fallbackHandlers).toBeUndefined();
    expect(view.blacklistedPipelines).toEqual([]);
    expect(view.blacklistedSkills).toEqual([]);
    expect(view.blacklistedIntents).toEqual([]);
    expect(view.activeHandlers).toEqual([]);
  });

  it('OVOS-SESSION-1 §2.1 defaults: a given session_id is kept', () => {
    expect(sessionOf(carrying({ session_id: 'kitchen' })).sessionId).toBe('kitchen');
  });
});

describe('readSession null and wrong-typed fields', () => {
  it('OVOS-SESSION-1 §2 null field: blacklisted_skills: null reads as [] (ovos-bus-client ≥ 2.4)', () => {
    const result = readSession(carrying({ session_id: 's', blacklisted_skills: null }));
    expect(result.ok).toBe(true);
    if (result.ok) expect(result.session.blacklistedSkills).toEqual([]);
  });

  it('OVOS-SESSION-1 §2 null field: every blacklist null reads as []', () => {
    const view = sessionOf(
      carrying({ blacklisted_skills: null, blacklisted_intents: null, blacklisted_pipelines: null }),
    );
    expect(view.blacklistedSkills).toEqual([]);
    expect(view.blacklistedIntents).toEqual([]);
    expect(view.blacklistedPipelines).toEqual([]);
  });

  it('OVOS-SESSION-1 §2 null field: pipeline: null reads as omitted', () => {
    const view = sessionOf(carrying({ pipeline: null }));
    expect(view.pipeline).toBeUndefined();
    expect('pipeline' in view).toBe(false);
  });

  it('OVOS-SESSION-1 §2 wrong type: lang: 5 reads as omitted', () => {
    expect(sessionOf(carrying({ lang: 5 })).lang).toBeUndefined();
  });

  it('OVOS-SESSION-1 §2 null field: lang: null and lang: "" read as omitted', () => {
    expect(sessionOf(carrying({ lang: null })).lang).toBeUndefined();
    expect(sessionOf(carrying({ lang: '' })).lang).toBeUndefined();
  });

  it('OVOS-SESSION-1 §2 wrong type: fallback_handlers: "x" reads as omitted', () => {
    expect(sessionOf(carrying({ fallback_handlers: 'x' })).fallbackHandlers).toBeUndefined();
  });

  it('OVOS-SESSION-1 §2 wrong type: session_id: 5 or null reads as "default"', () => {
    expect(sessionOf(carrying({ session_id: 5 })).sessionId).toBe('default');
    expect(sessionOf(carrying({ session_id: null })).sessionId).toBe('default');
  });

  it('OVOS-SESSION-1 §2 wrong type: a list with non-string entries keeps its strings', () => {
    const view = sessionOf(
      carrying({
        blacklisted_skills: ['a', 1, null, 'b', { x: 1 }, ['c']],
        pipeline: [null, 'p1', 2, 'p2'],
        fallback_handlers: [true, 'fb'],
      }),
    );
    expect(view.blacklistedSkills).toEqual(['a', 'b']);
    expect(view.pipeline).toEqual(['p1', 'p2']);
    expect(view.fallbackHandlers).toEqual(['fb']);
  });

  it('OVOS-SESSION-1 §2 empty list: pipeline: [] is kept as an explicit empty preference', () => {
    expect(sessionOf(carrying({ pipeline: [] })).pipeline).toEqual([]);
  });

  it('OVOS-SESSION-1 §2 wrong type: malformed active_handlers entries are skipped, never rejected', () => {
    const view = sessionOf(
      carrying({
        active_handlers: [
          { skill_id: 'good', activated_at: 10 },
          'bad',
          null,
          { skill_id: 5 },
          { skill_id: 'no-time' },
          { skill_id: 'bad-time', activated_at: 'yesterday' },
        ],
      }),
    );
    expect(view.activeHandlers).toEqual([
      { skill_id: 'good', activated_at: 10 },
      { skill_id: 'no-time', activated_at: 0 },
      { skill_id: 'bad-time', activated_at: 0 },
    ]);
    expect(sessionOf(carrying({ active_handlers: null })).activeHandlers).toEqual([]);
  });
});

describe('malformed carrier', () => {
  it.each<[string, Json]>([
    ['string', 'default'],
    ['number', 42],
    ['array', [{ session_id: 's' }]],
    ['boolean', true],
  ])('OVOS-SESSION-1 §2.5 malformed carrier: a %s session is malformed_carrier', (_kind, carrier) => {
    expect(readSession(carrying(carrier))).toEqual({ ok: false, reason: 'malformed_carrier' });
  });

  it.each<[string, Json]>([
    ['string', 'default'],
    ['number', 42],
    ['array', []],
  ])('OVOS-SESSION-1 §2.5 malformed carrier: sessionIdOf a %s session is undefined, never "default"', (_k, c) => {
    expect(sessionIdOf(carrying(c))).toBeUndefined();
  });
});

describe('sessionIdOf', () => {
  it('OVOS-SESSION-1 §2.1 sessionIdOf: absent session → "default"', () => {
    expect(sessionIdOf(carrying(undefined))).toBe('default');
  });

  it('OVOS-SESSION-1 §2.1 sessionIdOf: null session → "default"', () => {
    expect(sessionIdOf(carrying(null))).toBe('default');
  });

  it('OVOS-SESSION-1 §2.1 sessionIdOf: {} → "default"', () => {
    expect(sessionIdOf(carrying({}))).toBe('default');
  });

  it('OVOS-SESSION-1 §2.1 sessionIdOf: empty or wrong-typed session_id → "default"', () => {
    expect(sessionIdOf(carrying({ session_id: '' }))).toBe('default');
    expect(sessionIdOf(carrying({ session_id: 3 }))).toBe('default');
    expect(sessionIdOf(carrying({ session_id: null }))).toBe('default');
  });

  it('OVOS-SESSION-1 §2.1 sessionIdOf: a given session_id is returned', () => {
    expect(sessionIdOf(carrying({ session_id: 'bench-session' }))).toBe('bench-session');
  });

  it('OVOS-SESSION-1 §2.1 sessionIdOf agrees with readSession for every accepted carrier', () => {
    const carriers: Array<Json | undefined> = [undefined, null, {}, { session_id: '' }, { session_id: 'x' }, { lang: 1 }];
    for (const carrier of carriers) {
      expect(sessionIdOf(carrying(carrier))).toBe(sessionOf(carrying(carrier)).sessionId);
    }
  });
});

describe('unknown keys', () => {
  const carrier: JsonObject = {
    session_id: 's1',
    persona_id: 'butler',
    site_id: 'lab',
    context: { timeout: 120, frame_stack: [] },
    utterance_states: { 'skill-a': 'intent' },
  };

  it('OVOS-SESSION-1 §2.4 unknown keys: the carrier is kept unchanged in raw', () => {
    const view = sessionOf(carrying(carrier));
    expect(view.raw).toEqual(carrier);
  });

  it('OVOS-SESSION-1 §2.4 unknown keys: pushActiveHandler output keeps every unknown key', () => {
    const view = sessionOf(carrying(carrier));
    const next = pushActiveHandler(view, 'skill-a', 1000);
    expect(next).toEqual({ ...carrier, active_handlers: [{ skill_id: 'skill-a', activated_at: 1000 }] });
  });

  it('OVOS-SESSION-1 §2.4 unknown keys: the full real session survives pushActiveHandler', () => {
    const raw = JSON.parse(REAL_SESSION_FRAME) as JsonObject;
    const next = pushActiveHandler(sessionFromObject(raw), 'weather.skill', 5);
    const { active_handlers: handlers, ...rest } = next;
    expect(rest).toEqual(raw);
    expect(handlers).toEqual([{ skill_id: 'weather.skill', activated_at: 5 }]);
  });
});

describe('the real ovos-bus-client session (ovos-wire-today.md)', () => {
  const view = sessionOf(carrying(JSON.parse(REAL_SESSION_FRAME) as JsonObject));

  it('OVOS-SESSION-1 fields: session_id and lang are read', () => {
    expect(view.sessionId).toBe('smoke-session-1');
    expect(view.lang).toBe('en-US');
  });

  it('OVOS-SESSION-1 fields: pipeline is read in order', () => {
    expect(view.pipeline).toEqual([
      'ovos-stop-pipeline-plugin-high',
      'ovos-converse-pipeline-plugin',
      'ovos-ocp-pipeline-plugin-high',
      'ovos-padatious-pipeline-plugin-high',
      'ovos-adapt-pipeline-plugin-high',
      'ovos-m2v-pipeline-high',
      'ovos-ocp-pipeline-plugin-medium',
      'ovos-fallback-pipeline-plugin-high',
      'ovos-stop-pipeline-plugin-medium',
      'ovos-adapt-pipeline-plugin-medium',
      'ovos-fallback-pipeline-plugin-medium',
      'ovos-fallback-pipeline-plugin-low',
    ]);
  });

  it('OVOS-SESSION-1 fields: blacklisted_skills and blacklisted_intents are read', () => {
    expect(view.blacklistedSkills).toEqual(['skill-ovos-stop.openvoiceos']);
    expect(view.blacklistedIntents).toEqual([]);
  });

  it('OVOS-SESSION-1 fields: fields the old client does not send read as defaults', () => {
    expect(view.blacklistedPipelines).toEqual([]);
    expect(view.fallbackHandlers).toBeUndefined();
    expect(view.activeHandlers).toEqual([]);
  });

  it('OVOS-SESSION-1 §2.4 unknown keys: location, site_id and context survive in raw', () => {
    expect(view.raw['site_id']).toBe('lab');
    expect(view.raw['context']).toEqual({ timeout: 120, frame_stack: [] });
    expect(view.raw['location']).toMatchObject({ city: { code: 'Lawrence' } });
  });
});

describe('resolveLang', () => {
  const everything: JsonObject = { stt_lang: 'stt', detected_lang: 'detected', request_lang: 'request' };
  const withSessionLang = sessionFromObject({ session_id: 's', lang: 'session' });
  const withoutSessionLang = sessionFromObject({ session_id: 's' });

  it('OVOS-SESSION-1 §3.2.7 lang precedence: data.lang wins over everything', () => {
    const message = createMessage('t', { lang: 'data' }, everything);
    expect(resolveLang(message, withSessionLang, 'default')).toBe('data');
  });

  it('OVOS-SESSION-1 §3.2.7 lang precedence: stt_lang wins when data.lang is absent', () => {
    const message = createMessage('t', {}, everything);
    expect(resolveLang(message, withSessionLang, 'default')).toBe('stt');
  });

  it('OVOS-SESSION-1 §3.2.7 lang precedence: detected_lang wins over request_lang and session lang', () => {
    const message = createMessage('t', {}, { detected_lang: 'detected', request_lang: 'request' });
    expect(resolveLang(message, withSessionLang, 'default')).toBe('detected');
  });

  it('OVOS-SESSION-1 §3.2.7 lang precedence: request_lang wins over session lang', () => {
    const message = createMessage('t', {}, { request_lang: 'request' });
    expect(resolveLang(message, withSessionLang, 'default')).toBe('request');
  });

  it('OVOS-SESSION-1 §3.2.7 lang precedence: session lang wins over the deployment default', () => {
    expect(resolveLang(createMessage('t'), withSessionLang, 'default')).toBe('session');
  });

  it('OVOS-SESSION-1 §3.2.7 lang precedence: the deployment default is the last resort', () => {
    expect(resolveLang(createMessage('t'), withoutSessionLang, 'en-US')).toBe('en-US');
  });

  it('OVOS-SESSION-1 §2 lang precedence: null, empty or wrong-typed candidates are skipped', () => {
    const message = createMessage('t', { lang: null }, { stt_lang: '', detected_lang: 5, request_lang: 'request' });
    expect(resolveLang(message, withSessionLang, 'default')).toBe('request');
  });
});

describe('pushActiveHandler', () => {
  const base = sessionFromObject({
    session_id: 's',
    active_handlers: [
      { skill_id: 'a', activated_at: 30 },
      { skill_id: 'b', activated_at: 20 },
      { skill_id: 'c', activated_at: 10 },
    ],
  });

  it('OVOS-PIPELINE-1 §7 activation: a new skill is pushed at the head, others kept in order', () => {
    const next = pushActiveHandler(base, 'd', 40);
    expect(next['active_handlers']).toEqual([
      { skill_id: 'd', activated_at: 40 },
      { skill_id: 'a', activated_at: 30 },
      { skill_id: 'b', activated_at: 20 },
      { skill_id: 'c', activated_at: 10 },
    ]);
  });

  it('OVOS-PIPELINE-1 §7 activation: an older entry of the same skill is replaced, not duplicated', () => {
    const next = pushActiveHandler(base, 'b', 50);
    expect(next['active_handlers']).toEqual([
      { skill_id: 'b', activated_at: 50 },
      { skill_id: 'a', activated_at: 30 },
      { skill_id: 'c', activated_at: 10 },
    ]);
  });

  it('OVOS-PIPELINE-1 §7 activation: re-activating the head skill only refreshes its time', () => {
    const next = pushActiveHandler(base, 'a', 60);
    expect(next['active_handlers']).toEqual([
      { skill_id: 'a', activated_at: 60 },
      { skill_id: 'b', activated_at: 20 },
      { skill_id: 'c', activated_at: 10 },
    ]);
  });

  it('OVOS-PIPELINE-1 §7 activation: the first push onto an empty session', () => {
    const next = pushActiveHandler(sessionFromObject({}), 'a', 1);
    expect(next).toEqual({ session_id: 'default', active_handlers: [{ skill_id: 'a', activated_at: 1 }] });
  });

  it('OVOS-PIPELINE-1 §7 activation: the input session and its raw carrier are not mutated', () => {
    const rawBefore = structuredClone(base.raw);
    const handlersBefore = structuredClone(base.activeHandlers);
    pushActiveHandler(base, 'b', 99);
    expect(base.raw).toEqual(rawBefore);
    expect(base.activeHandlers).toEqual(handlersBefore);
  });

  it('OVOS-PIPELINE-1 §7 activation: the result reads back as the pushed session', () => {
    const next = pushActiveHandler(base, 'c', 70);
    const view = sessionFromObject(next);
    expect(view.sessionId).toBe('s');
    expect(view.activeHandlers.map((h) => h.skill_id)).toEqual(['c', 'a', 'b']);
  });
});

describe('OVOS-SESSION-1 §2: null fields are not propagated', () => {
  it('§2: a producer MUST NOT emit null — raw omits top-level null fields and keeps every other key', () => {
    const view = sessionFromObject({ session_id: 's', blacklisted_skills: null, persona_id: null, site_id: 'lab' } as unknown as JsonObject);
    expect(view.raw).toEqual({ session_id: 's', site_id: 'lab' });
    expect(view.blacklistedSkills).toEqual([]);
  });
});
