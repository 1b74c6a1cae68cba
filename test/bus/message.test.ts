import { describe, expect, it } from 'vitest';
import {
  createMessage,
  decodeFrame,
  encodeMessage,
  forward,
  isDispatchTopic,
  reply,
  response,
  utteranceIdOf,
  type FrameDropReason,
  type JsonObject,
  type Message,
} from '../../src/bus/message.js';

/** Decode a frame that must be accepted, failing the test with the drop reason otherwise. */
function decodeOk(frame: string): Message {
  const result = decodeFrame(frame);
  if (!result.ok) throw new Error(`expected ${frame} to decode, dropped as ${result.reason}`);
  return result.message;
}

/** Decode a frame that must be dropped; returns its reason code. */
function dropReason(frame: string): FrameDropReason {
  const result = decodeFrame(frame);
  if (result.ok) throw new Error(`expected ${frame} to be dropped, decoded as ${JSON.stringify(result.message)}`);
  return result.reason;
}

const session: JsonObject = { session_id: 'bench-session', lang: 'en-US', custom_key: { nested: [1, 2] } };

describe('decodeFrame', () => {
  it('OVOS-MSG-1 envelope: decodes a valid frame into type, data and context', () => {
    const message = decodeOk(
      '{"type":"ovos.utterance.handle","data":{"utterances":["hello"]},"context":{"source":"cli","session":{"session_id":"s1"}}}',
    );
    expect(message).toEqual({
      type: 'ovos.utterance.handle',
      data: { utterances: ['hello'] },
      context: { source: 'cli', session: { session_id: 's1' } },
    });
  });

  it('OVOS-MSG-1 envelope: absent data and context decode as {}', () => {
    expect(decodeOk('{"type":"ping"}')).toEqual({ type: 'ping', data: {}, context: {} });
  });

  it('OVOS-MSG-1 envelope: null data and context decode as {}', () => {
    expect(decodeOk('{"type":"ping","data":null,"context":null}')).toEqual({ type: 'ping', data: {}, context: {} });
  });

  it('OVOS-MSG-1 envelope: unknown top-level keys are ignored, never a reason to reject', () => {
    const message = decodeOk('{"type":"ping","data":{"a":1},"context":{},"msg_type":"x","extra":[1,2],"ts":5}');
    expect(message).toEqual({ type: 'ping', data: { a: 1 }, context: {} });
    expect(Object.keys(message).sort()).toEqual(['context', 'data', 'type']);
  });

  it('OVOS-MSG-1 §6.1 malformed: a frame that is not JSON is dropped as frame_not_json', () => {
    expect(dropReason('{"type":"ping"')).toBe('frame_not_json');
    expect(dropReason('')).toBe('frame_not_json');
    expect(dropReason('not json at all')).toBe('frame_not_json');
  });

  it('OVOS-MSG-1 §6.1 malformed: a frame_not_json drop carries the parser detail', () => {
    const result = decodeFrame('{');
    expect(result.ok).toBe(false);
    if (!result.ok) expect(typeof result.detail).toBe('string');
  });

  it('OVOS-MSG-1 §6.1 malformed: a JSON array is dropped as frame_not_object', () => {
    expect(dropReason('[{"type":"ping"}]')).toBe('frame_not_object');
  });

  it('OVOS-MSG-1 §6.1 malformed: a JSON number, string or null is dropped as frame_not_object', () => {
    expect(dropReason('42')).toBe('frame_not_object');
    expect(dropReason('"ping"')).toBe('frame_not_object');
    expect(dropReason('null')).toBe('frame_not_object');
  });

  it('OVOS-MSG-1 §6.1 malformed: a missing type is dropped as type_missing', () => {
    expect(dropReason('{"data":{},"context":{}}')).toBe('type_missing');
  });

  it('OVOS-MSG-1 §6.1 malformed: an empty type is dropped as type_missing', () => {
    expect(dropReason('{"type":"","data":{}}')).toBe('type_missing');
  });

  it('OVOS-MSG-1 §6.1 malformed: a non-string type is dropped as type_not_string', () => {
    expect(dropReason('{"type":7}')).toBe('type_not_string');
    expect(dropReason('{"type":null}')).toBe('type_not_string');
    expect(dropReason('{"type":["ping"]}')).toBe('type_not_string');
  });

  it('OVOS-MSG-1 §6.1 malformed: an array data is dropped as data_not_object', () => {
    expect(dropReason('{"type":"ping","data":[1,2]}')).toBe('data_not_object');
    expect(dropReason('{"type":"ping","data":"x"}')).toBe('data_not_object');
  });

  it('OVOS-MSG-1 §6.1 malformed: a string context is dropped as context_not_object', () => {
    expect(dropReason('{"type":"ping","context":"x"}')).toBe('context_not_object');
    expect(dropReason('{"type":"ping","context":[]}')).toBe('context_not_object');
  });

  it('OVOS-MSG-1 §6.1 + our bound: a frame nesting deeper than 64 levels is dropped as frame_too_deep before it is parsed; 64 is kept', () => {
    const nested = (levels: number): string => `{"type":"deep","data":{"x":${'['.repeat(levels - 2)}${']'.repeat(levels - 2)}}}`;
    expect(decodeFrame(nested(64)).ok).toBe(true);
    expect(dropReason(nested(65))).toBe('frame_too_deep');
    expect(dropReason(`{"type":"deep","data":{"x":${'['.repeat(25_000)}${']'.repeat(25_000)}}}`)).toBe('frame_too_deep');
    // Brackets inside strings (escaped quotes included) are text, not nesting.
    expect(decodeFrame(`{"type":"t","data":{"s":"${'['.repeat(100)}\\\"${'{'.repeat(100)}"}}`).ok).toBe(true);
  });

  it('OVOS-MSG-1 §6.1 + our bound: a type longer than 512 characters is dropped as type_too_long; 512 is kept', () => {
    expect(decodeFrame(JSON.stringify({ type: 'a'.repeat(512) })).ok).toBe(true);
    expect(dropReason(JSON.stringify({ type: 'a'.repeat(513) }))).toBe('type_too_long');
    expect(dropReason(JSON.stringify({ type: 'a'.repeat(100_000), data: {} }))).toBe('type_too_long');
  });

  it('OVOS-MSG-1 §6.1 malformed: decodeFrame never throws on hostile input', () => {
    const frames = ['', ' ', '{', 'undefined', 'NaN', '{"type":{}}', '{"__proto__":{"type":"x"}}', '\u0000'];
    for (const frame of frames) expect(() => decodeFrame(frame)).not.toThrow();
  });
});

describe('real ovos frames (ovos-wire-today.md)', () => {
  const frames = [
    '{"type":"connected","data":{},"context":{"session":{"session_id":"default"}}}',
    '{"type":"ovos.skills.fallback.register","data":{"skill_id":"fb-willing","priority":60},"context":{"skill_id":"fb-willing","session":{"session_id":"default"}}}',
    '{"type":"recognizer_loop:utterance","data":{"utterances":["what is the speed of light"],"lang":"en-US"},"context":{"session":{"session_id":"bench-session"},"source":"bench","destination":"skills"}}',
    '{"type":"question:query","data":{"phrase":"what is the speed of light"},"context":{"session":{"session_id":"bench-session"},"source":"skills","destination":"bench","lang":"en-US","skill_id":"common_query.openvoiceos"}}',
    '{"type":"question:query.response","data":{"phrase":"what is the speed of light","skill_id":"cq-fast","searching":true},"context":{"session":{"session_id":"bench-session"},"source":"bench","destination":"skills","lang":"en-US","skill_id":"cq-fast"}}',
    '{"type":"question:query.response","data":{"phrase":"what is the speed of light","skill_id":"cq-fast","answer":"299792458 metres per second","callback_data":{"answer":"299792458 metres per second"},"conf":0.9},"context":{"session":{"session_id":"bench-session"},"source":"bench","destination":"skills","lang":"en-US","skill_id":"cq-fast"}}',
    '{"type":"cq-slow.activate","data":{},"context":{"session":{"session_id":"bench-session"},"source":"skills","destination":"bench","lang":"en-US","skill_id":"cq-slow"}}',
    '{"type":"question:action.cq-slow","data":{"utterances":["what is the speed of light"],"lang":"en-US","utterance":"what is the speed of light","phrase":"what is the speed of light","skill_id":"cq-slow","answer":"answer from cq-slow","callback_data":{"answer":"answer from cq-slow"},"conf":0.95},"context":{"session":{"session_id":"bench-session"},"source":"skills","destination":"bench","lang":"en-US","skill_id":"cq-slow"}}',
    '{"type":"ovos.skills.fallback.ping","data":{"utterances":["do a barrel roll please"],"lang":"en-US","range":[5,90]},"context":{"session":{"session_id":"bench-session"},"source":"bench","destination":"skills","lang":"en-US"}}',
    '{"type":"ovos.skills.fallback.pong","data":{"skill_id":"ws-fb","can_handle":true},"context":{"session":{"session_id":"bench-session"},"source":"skills","destination":"bench","lang":"en-US","skill_id":"ws-fb"}}',
    '{"type":"ovos.skills.fallback.fb-slow.request","data":{"utterances":["do a barrel roll please"],"lang":"en-US","range":[5,90],"skill_id":"fb-slow","utterance":"do a barrel roll please"},"context":{"session":{"session_id":"bench-session"},"source":"skills","destination":"bench","lang":"en-US"}}',
    '{"type":"ovos.skills.fallback.fb-slow.start","data":{},"context":{"session":{"session_id":"bench-session"},"source":"skills","destination":"bench","lang":"en-US"}}',
    '{"type":"ovos.skills.fallback.fb-slow.response","data":{"result":true,"fallback_handler":"FakeFallbackSkill.handle_fallback"},"context":{"session":{"session_id":"bench-session"},"source":"skills","destination":"bench","lang":"en-US"}}',
    '{"type":"complete_intent_failure","data":{"utterances":["do a barrel roll please"],"lang":"en-US"},"context":{"session":{"session_id":"bench-session"},"source":"skills","destination":"bench","lang":"en-US"}}',
  ];

  it.each(frames.map((frame) => [(JSON.parse(frame) as { type: string }).type, frame]))(
    'OVOS-MSG-1 envelope: real frame %s decodes and re-encodes to the same bytes',
    (_type, frame) => {
      const message = decodeOk(frame);
      expect(message).toEqual(JSON.parse(frame));
      expect(encodeMessage(message)).toBe(frame);
    },
  );

  it('OVOS-MSG-1 envelope: the real fallback pong keeps its routing and skill_id', () => {
    const pong = decodeOk(frames[9]!);
    expect(pong.type).toBe('ovos.skills.fallback.pong');
    expect(pong.data).toEqual({ skill_id: 'ws-fb', can_handle: true });
    expect(pong.context['source']).toBe('skills');
    expect(pong.context['destination']).toBe('bench');
    expect(pong.context['skill_id']).toBe('ws-fb');
    expect(pong.context['session']).toEqual({ session_id: 'bench-session' });
  });
});

describe('encodeMessage', () => {
  it('OVOS-MSG-1 envelope: encode then decode round-trips the message', () => {
    const message = createMessage(
      'ovos.intent.matched',
      { skill_id: 'weather.skill', slots: { city: 'Lisbon' }, conf: 0.5, ok: true, none: null },
      { source: 'a', destination: ['b', 'c'], session: { session_id: 's', unknown: { deep: [1, 'two'] } } },
    );
    expect(decodeOk(encodeMessage(message))).toEqual(message);
  });

  it('OVOS-MSG-1 envelope: the encoding is one compact JSON object (no whitespace between tokens)', () => {
    const frame = encodeMessage(createMessage('a.b', { x: 1, y: [1, 2] }, { source: 'z' }));
    expect(frame).toBe('{"type":"a.b","data":{"x":1,"y":[1,2]},"context":{"source":"z"}}');
    expect(frame).not.toMatch(/\s/);
  });

  it('OVOS-MSG-1 envelope: always emits data and context, even when empty', () => {
    expect(encodeMessage(createMessage('ping'))).toBe('{"type":"ping","data":{},"context":{}}');
  });
});

describe('forward', () => {
  const origin = createMessage(
    'ovos.utterance.handle',
    { utterances: ['hi'] },
    { source: 'cli', destination: ['skills', 'audio'], session, skill_id: 'x', utterance_id: 'u-1' },
  );

  it('OVOS-MSG-1 §5 forward: context is kept identical (source, destination, session, ids)', () => {
    const next = forward(origin, 'ovos.intent.handler.start', { skill_id: 'x' });
    expect(next.type).toBe('ovos.intent.handler.start');
    expect(next.data).toEqual({ skill_id: 'x' });
    expect(next.context).toEqual(origin.context);
  });

  it('OVOS-MSG-1 §5 forward: data defaults to {}', () => {
    expect(forward(origin, 't').data).toEqual({});
  });

  it('OVOS-MSG-1 §5 forward: the context is a copy; mutating the result does not touch the input', () => {
    const before = structuredClone(origin.context);
    const next = forward(origin, 't');
    expect(next.context).not.toBe(origin.context);
    const context = next.context as JsonObject;
    context['source'] = 'someone-else';
    context['added'] = true;
    delete context['session'];
    expect(origin.context).toEqual(before);
  });
});

describe('reply', () => {
  it('OVOS-MSG-1 §5 reply: with both keys set, source and destination are swapped', () => {
    const from = createMessage('q', {}, { source: 'bench', destination: 'skills', session });
    const next = reply(from, 'q.answer', { a: 1 });
    expect(next.type).toBe('q.answer');
    expect(next.data).toEqual({ a: 1 });
    expect(next.context['source']).toBe('skills');
    expect(next.context['destination']).toBe('bench');
  });

  it('OVOS-MSG-1 §5 reply: an array destination gives its first element as the new source', () => {
    const from = createMessage('q', {}, { source: 'bench', destination: ['skills', 'audio'] });
    const next = reply(from, 'q.answer');
    expect(next.context['source']).toBe('skills');
    expect(next.context['destination']).toBe('bench');
  });

  it('OVOS-MSG-1 §5 reply: only source set → destination becomes it and source stays absent', () => {
    const from = createMessage('q', {}, { source: 'bench', session });
    const next = reply(from, 'q.answer');
    expect(next.context['destination']).toBe('bench');
    expect('source' in next.context).toBe(false);
  });

  it('OVOS-MSG-1 §5 reply: only destination set → source becomes it and destination stays absent', () => {
    const from = createMessage('q', {}, { destination: 'skills', session });
    const next = reply(from, 'q.answer');
    expect(next.context['source']).toBe('skills');
    expect('destination' in next.context).toBe(false);
  });

  it('OVOS-MSG-1 §5 reply: neither set → both stay absent', () => {
    const from = createMessage('q', {}, { session });
    const next = reply(from, 'q.answer');
    expect('source' in next.context).toBe(false);
    expect('destination' in next.context).toBe(false);
    expect(next.context).toEqual({ session });
  });

  it('OVOS-MSG-1 §5 reply: session, skill_id, utterance_id and unknown keys are kept', () => {
    const from = createMessage(
      'q',
      {},
      { source: 'a', destination: 'b', session, skill_id: 'cq-fast', utterance_id: 'u-7', lang: 'en-US', other: 1 },
    );
    const next = reply(from, 'q.answer');
    expect(next.context).toEqual({
      source: 'b',
      destination: 'a',
      session,
      skill_id: 'cq-fast',
      utterance_id: 'u-7',
      lang: 'en-US',
      other: 1,
    });
  });

  it('OVOS-MSG-1 §5 reply: the input message is not mutated', () => {
    const from = createMessage('q', { d: 1 }, { source: 'a', destination: ['b', 'c'], session });
    const before = structuredClone(from);
    const next = reply(from, 'q.answer');
    (next.context as JsonObject)['extra'] = 1;
    expect(from).toEqual(before);
    expect(next.context).not.toBe(from.context);
  });

  it('OVOS-MSG-1 §5 reply: reply of a reply restores the original routing', () => {
    const from = createMessage('q', {}, { source: 'bench', destination: 'skills' });
    const back = reply(reply(from, 'q.answer'), 'q.ack');
    expect(back.context['source']).toBe('bench');
    expect(back.context['destination']).toBe('skills');
  });

  it('OVOS-MSG-1 §5 reply: an empty destination array (broadcast) gives no source', () => {
    const from = createMessage('q', {}, { source: 'bench', destination: [] });
    const next = reply(from, 'q.answer');
    expect('source' in next.context).toBe(false);
    expect(next.context['destination']).toBe('bench');
  });

  it('OVOS-MSG-1 §5 reply: the real common-query answer derives from the real query', () => {
    const query = decodeOk(
      '{"type":"question:query","data":{"phrase":"what is the speed of light"},"context":{"session":{"session_id":"bench-session"},"source":"skills","destination":"bench","lang":"en-US","skill_id":"common_query.openvoiceos"}}',
    );
    const answer = reply(query, 'question:query.response', { phrase: 'what is the speed of light' });
    expect(answer.context).toEqual({
      session: { session_id: 'bench-session' },
      source: 'bench',
      destination: 'skills',
      lang: 'en-US',
      skill_id: 'common_query.openvoiceos',
    });
  });
});

describe('response', () => {
  it('OVOS-MSG-1 §5 response: type is the original type plus ".response", routing flipped', () => {
    const from = createMessage(
      'ovos.pipeline.fallback.intents.list',
      {},
      { source: 'cli', destination: 'skills', session, utterance_id: 'u' },
    );
    const next = response(from, { intents: [] });
    expect(next.type).toBe('ovos.pipeline.fallback.intents.list.response');
    expect(next.data).toEqual({ intents: [] });
    expect(next.context).toEqual({ source: 'skills', destination: 'cli', session, utterance_id: 'u' });
  });

  it('OVOS-MSG-1 §5 response: equals reply(T + ".response", D)', () => {
    const from = createMessage('a.b', { x: 1 }, { source: 's', destination: ['d', 'e'], session });
    expect(response(from, { y: 2 })).toEqual(reply(from, 'a.b.response', { y: 2 }));
  });

  it('OVOS-MSG-1 §5 response: data defaults to {}', () => {
    expect(response(createMessage('a')).data).toEqual({});
  });
});

describe('isDispatchTopic', () => {
  it('OVOS-MSG-1 topics: exactly one colon is a dispatch topic', () => {
    expect(isDispatchTopic('weather.skill:get_forecast')).toBe(true);
    expect(isDispatchTopic('fb-slow:fallback')).toBe(true);
    expect(isDispatchTopic('question:query.response')).toBe(true);
  });

  it('OVOS-MSG-1 topics: zero colons is not a dispatch topic', () => {
    expect(isDispatchTopic('ovos.utterance.handle')).toBe(false);
    expect(isDispatchTopic('')).toBe(false);
  });

  it('OVOS-MSG-1 topics: two colons is not a dispatch topic', () => {
    expect(isDispatchTopic('a:b:c')).toBe(false);
    expect(isDispatchTopic('a::b')).toBe(false);
  });

  it('OVOS-MSG-1 topics: a leading or trailing colon is not a dispatch topic', () => {
    expect(isDispatchTopic(':intent')).toBe(false);
    expect(isDispatchTopic('skill:')).toBe(false);
    expect(isDispatchTopic(':')).toBe(false);
  });
});

describe('utteranceIdOf', () => {
  it('OVOS-MSG-1 §4.2 utterance_id: a non-empty string is returned', () => {
    expect(utteranceIdOf(createMessage('t', {}, { utterance_id: 'u-42' }))).toBe('u-42');
  });

  it('OVOS-MSG-1 §4.2 utterance_id: absent → undefined', () => {
    expect(utteranceIdOf(createMessage('t'))).toBeUndefined();
  });

  it('OVOS-MSG-1 §4.2 utterance_id: empty string → undefined', () => {
    expect(utteranceIdOf(createMessage('t', {}, { utterance_id: '' }))).toBeUndefined();
  });

  it('OVOS-MSG-1 §4.2 utterance_id: non-string (number, null, object) → undefined', () => {
    expect(utteranceIdOf(createMessage('t', {}, { utterance_id: 7 }))).toBeUndefined();
    expect(utteranceIdOf(createMessage('t', {}, { utterance_id: null }))).toBeUndefined();
    expect(utteranceIdOf(createMessage('t', {}, { utterance_id: { id: 'x' } }))).toBeUndefined();
  });

  it('OVOS-MSG-1 §4.2 utterance_id: read from context, not data', () => {
    expect(utteranceIdOf(createMessage('t', { utterance_id: 'in-data' }))).toBeUndefined();
  });
});
