/**
 * The ready daemon over real websockets on 127.0.0.1 (ephemeral port): the embedded bus, the actor system and the
 * example skills as real bus clients, driven by a raw `ws` client the way any OVOS participant would. Each
 * utterance is followed by its own `context.utterance_id` (OVOS-MSG-1 §4.2). Nothing sleeps: every wait is on a
 * frame, with a generous timeout as a failure guard only.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { JsonObject, Message } from '../../src/bus/message.js';
import { sessionIdOf } from '../../src/bus/session.js';
import { startDaemon, type Daemon } from '../../src/daemon/daemon.js';
import { silentLogger } from '../../src/log/logger.js';
import { BARREL_ROLL_TIMELINE, Probe, configWith, spoken } from './probe.js';

/** Exactly what ovos-messagebus sends on connect (ovos-wire-today.md, "The bus server"). */
const GREETING = '{"type":"connected","data":{},"context":{"session":{"session_id":"default"}}}';

const MEANING = 'what is the meaning of life';
const FRANCE = 'what is the capital of France';
const BARREL_ROLL = 'do a barrel roll';

const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function daemonWith(options: { readonly exampleSkills: boolean }): Promise<{ daemon: Daemon; probe: Probe }> {
  const config = configWith({ bus: { port: 0 }, exampleSkills: options.exampleSkills, log: { level: 'silent' } });
  const daemon = await startDaemon(config, silentLogger());
  cleanups.push(() => daemon.close());
  const probe = await Probe.connect(daemon.url);
  cleanups.push(() => probe.close());
  return { daemon, probe };
}

/** Run one utterance to its `ovos.utterance.handled`, then a bus round trip so every frame of it is in. */
async function utter(probe: Probe, utterance: string, utteranceId: string, session: JsonObject = { session_id: utteranceId }): Promise<Message[]> {
  probe.utter(utterance, { utteranceId, session });
  await probe.handled(utteranceId);
  await probe.barrier();
  return probe.of(utteranceId);
}

function only(messages: readonly Message[], type: string): Message {
  const found = messages.filter((message) => message.type === type);
  expect(found.map((message) => message.type), `exactly one ${type}`).toEqual([type]);
  return found[0]!;
}

/** `expected` appears in `types` in this order, each exactly once. */
function expectInOrder(types: readonly string[], expected: readonly string[]): void {
  for (const type of expected) expect(types.filter((t) => t === type), `exactly one ${type}`).toHaveLength(1);
  expect(expected.map((type) => types.indexOf(type))).toEqual(expected.map((type) => types.indexOf(type)).sort((a, b) => a - b));
}

const speechOf = (messages: readonly Message[]): string[] => messages.flatMap((message) => spoken(message) ?? []);

describe('daemon over a real websocket (example skills)', () => {
  it('greets a new client with the ovos-messagebus `connected` frame before anything else', async () => {
    const { probe } = await daemonWith({ exampleSkills: true });
    await probe.frames.waitFor(() => true, 'the first frame');
    expect(probe.frames.items[0]?.text).toBe(GREETING);
  });

  it('"what is the meaning of life": fallback_high (first in the default pipeline) dispatches to the meaning-of-life skill, which says 42, while the early common-query contest hears a decline (OVOS-FALLBACK-1 §6, §7, §8.2; OVOS-COMMON-QUERY-1 §5, §12)', async () => {
    const { probe } = await daemonWith({ exampleSkills: true });
    const messages = await utter(probe, MEANING, 'meaning-1');
    const types = messages.map((message) => message.type);

    // Two contests run side by side from the utterance's arrival, so only each one's own order is fixed.
    expectInOrder(types, [
      'ovos.utterance.handle', // our own frame, echoed (the bus re-broadcasts to the sender too)
      'meaning-of-life.example.fallback.ping',
      'meaning-of-life.example.fallback.pong',
      'ovos.intent.matched',
      'meaning-of-life.example:fallback',
      'ovos.intent.handler.start',
      'ovos.utterance.speak',
      'mycroft.skill.handler.complete',
      'ovos.intent.handler.complete',
      'ovos.utterance.handled',
    ]);
    // §5 early start: the contest began at entry; the example skill says it cannot answer (§6.2 permits false).
    expectInOrder(types, ['ovos.utterance.handle', 'ovos.common_query.ping', 'ovos.common_query.pong']);
    expect(only(messages, 'ovos.common_query.pong').data).toMatchObject({ skill_id: 'local-knowledge.example', can_answer: false });
    expect(types.filter((type) => type.endsWith(':common_query'))).toEqual([]);
    expect(only(messages, 'ovos.common_query.ping').data).toEqual({ utterance: MEANING });
    expect(only(messages, 'meaning-of-life.example.fallback.ping').data).toEqual({ utterances: [MEANING], lang: 'en-US' });
    expect(only(messages, 'meaning-of-life.example.fallback.pong').data).toEqual({ skill_id: 'meaning-of-life.example', can_handle: true });
    expect(only(messages, 'ovos.intent.matched').data).toMatchObject({
      skill_id: 'meaning-of-life.example',
      intent_name: 'fallback',
      pipeline_id: 'fallback_high',
      utterance: MEANING,
      slots: {},
    });
    const dispatch = only(messages, 'meaning-of-life.example:fallback');
    expect(dispatch.context).toMatchObject({ skill_id: 'meaning-of-life.example', pipeline_id: 'fallback_high' });
    // OVOS-PIPELINE-1 §7.3: `fallback` activates the skill.
    expect(dispatch.context['session']).toMatchObject({ session_id: 'meaning-1', active_handlers: [{ skill_id: 'meaning-of-life.example' }] });
    expect(only(messages, 'ovos.intent.handler.start').data).toEqual({ skill_id: 'meaning-of-life.example', intent_name: 'fallback' });
    expect(only(messages, 'ovos.intent.handler.complete').data).toEqual({ skill_id: 'meaning-of-life.example', intent_name: 'fallback' });
    expect(speechOf(messages)).toEqual(['42']);
    expect(messages.every((message) => sessionIdOf(message) === 'meaning-1')).toBe(true);
  });

  it('"what is the capital of France": the common query contest answers and the plugin speaks it (OVOS-COMMON-QUERY-1 §5, §9, §10)', async () => {
    const { probe } = await daemonWith({ exampleSkills: true });
    const session = { session_id: 'france-1', lang: 'en-US', custom_key: 'kept' };
    const messages = await utter(probe, FRANCE, 'france-1', session);
    const types = messages.map((message) => message.type);

    // fallback_high is asked first and declines; the common-query contest started at entry (§5) is then joined.
    expectInOrder(types, ['ovos.utterance.handle', 'meaning-of-life.example.fallback.ping', 'meaning-of-life.example.fallback.pong', 'ovos.intent.matched']);
    expectInOrder(types, [
      'ovos.utterance.handle',
      'ovos.common_query.ping',
      'ovos.common_query.pong',
      'local-knowledge.example:common_query',
      'local-knowledge.example.common_query.response',
      'ovos.intent.matched',
      'common_query:common_query',
      'ovos.intent.handler.start',
      'ovos.utterance.speak',
      'ovos.intent.handler.complete',
      'ovos.utterance.handled',
    ]);
    // 13 spec messages, and ovos-core's question:query beside the ping (the legacy dialect is on by default).
    expect(types).toHaveLength(14);
    expect(only(messages, 'question:query').data).toEqual({ phrase: FRANCE });
    expect(only(messages, 'ovos.common_query.pong').data).toMatchObject({ utterance: FRANCE, skill_id: 'local-knowledge.example', can_answer: true });
    expect(only(messages, 'local-knowledge.example.common_query.response').data).toMatchObject({
      utterance: FRANCE,
      answer: 'Paris is the capital of France.',
      conf: 0.95,
    });
    // §9: the Match names the plugin itself, with the answer as the only slot.
    expect(only(messages, 'ovos.intent.matched').data).toMatchObject({
      skill_id: 'common_query',
      intent_name: 'common_query',
      pipeline_id: 'common_query',
      slots: { answer: 'Paris is the capital of France.' },
    });
    // §9 / OVOS-PIPELINE-1 §7.3: `common_query` does not activate; the session goes out unmodified.
    expect(only(messages, 'common_query:common_query').context['session']).toEqual(session);
    expect(only(messages, 'ovos.intent.handler.start').data).toEqual({ skill_id: 'common_query', intent_name: 'common_query' });
    expect(only(messages, 'ovos.intent.handler.complete').data).toEqual({ skill_id: 'common_query', intent_name: 'common_query' });
    expect(speechOf(messages)).toEqual(['Paris is the capital of France.']);
  });

  it('"do a barrel roll": the gate skips common query, every skill before it declines, fallback_low\'s catch-all answers (OVOS-FALLBACK-1 §3.3, §8.2)', async () => {
    const { probe } = await daemonWith({ exampleSkills: true });
    const messages = await utter(probe, BARREL_ROLL, 'barrel-1');

    expect(messages.map((message) => message.type)).toEqual(BARREL_ROLL_TIMELINE);
    expect(only(messages, 'meaning-of-life.example.fallback.pong').data).toMatchObject({ can_handle: false });
    expect(only(messages, 'dont-know.example.fallback.pong').data).toMatchObject({ can_handle: true });
    expect(only(messages, 'ovos.intent.matched').data).toMatchObject({ skill_id: 'dont-know.example', pipeline_id: 'fallback_low' });
    expect(speechOf(messages)).toEqual(["I don't know how to answer that"]);
  });

  it('keeps several sessions in flight at once apart: each gets its own answer, no message crosses over', async () => {
    const { probe } = await daemonWith({ exampleSkills: true });
    const cases = [
      { id: 'para-a', utterance: FRANCE, answer: 'Paris is the capital of France.' },
      { id: 'para-b', utterance: FRANCE, answer: 'Paris is the capital of France.' }, // same text, other session
      { id: 'para-c', utterance: 'what is the capital of Japan', answer: 'Tokyo is the capital of Japan.' },
      { id: 'para-d', utterance: MEANING, answer: '42' },
      { id: 'para-e', utterance: BARREL_ROLL, answer: "I don't know how to answer that" },
    ];
    // All sent before any is read.
    for (const c of cases) probe.utter(c.utterance, { utteranceId: c.id, session: { session_id: c.id } });
    await Promise.all(cases.map((c) => probe.handled(c.id)));
    await probe.barrier();

    for (const c of cases) {
      const messages = probe.of(c.id);
      expect(speechOf(messages), c.id).toEqual([c.answer]);
      expect(messages.filter((message) => message.type === 'ovos.utterance.handled'), c.id).toHaveLength(1);
      // Everything of this utterance is in its session, and everything in its session is of this utterance.
      expect(messages.every((message) => sessionIdOf(message) === c.id), c.id).toBe(true);
      const ofSession = probe.messages.filter((message) => sessionIdOf(message) === c.id);
      expect(ofSession.map((message) => message.context['utterance_id']), c.id).toEqual(ofSession.map(() => c.id));
    }
  });

  it('a malformed frame never closes the connection; the next utterance still works (OVOS-MSG-1 §6.1, OVOS-SESSION-1 §2.5)', async () => {
    const { probe } = await daemonWith({ exampleSkills: true });
    probe.sendText('not json');
    probe.sendText('{"type":5}');
    probe.sendText('[]');
    probe.sendText('{"type":"ovos.utterance.handle","data":["not","an","object"]}');
    // A valid envelope whose session carrier is a string: re-broadcast by the bus, then dropped, never defaulted.
    probe.send({
      type: 'ovos.utterance.handle',
      data: { utterances: [MEANING] },
      context: { source: 'probe', destination: 'orchestrator', session: 'default', utterance_id: 'malformed-carrier' },
    });

    const messages = await utter(probe, MEANING, 'after-malformed');

    expect(probe.open).toBe(true);
    expect(speechOf(messages)).toEqual(['42']);
    expect(messages.filter((message) => message.type === 'ovos.utterance.handled')).toHaveLength(1);
    // Undecodable frames are not re-broadcast. The malformed carrier got its echo, ovos.session.rejected (§2.5) and
    // its one handled with the error (PIPELINE-1 §6), never a lifecycle run under a substituted default session.
    expect(probe.frames.items.filter((frame) => frame.message === undefined)).toEqual([]);
    const rejected = probe.of('malformed-carrier');
    expect(rejected.map((message) => message.type)).toEqual(['ovos.utterance.handle', 'ovos.session.rejected', 'ovos.utterance.handled']);
    expect(rejected[1]!.data).toEqual({ msg_type: 'ovos.utterance.handle', reason: 'malformed_carrier' });
    expect(rejected[2]!.data).toEqual({ error: 'malformed_carrier' });
    // One greeting: the connection was never re-established.
    expect(probe.frames.items.filter((frame) => frame.text === GREETING)).toHaveLength(1);
  });

  it('accepts `blacklisted_skills: null` as "omitted", in common query and fallback alike (OVOS-SESSION-1 §2)', async () => {
    const { probe } = await daemonWith({ exampleSkills: true });
    const session = { session_id: 'null-denylist', blacklisted_skills: null, blacklisted_intents: null };

    const answered = await utter(probe, FRANCE, 'null-denylist-cq', session);
    expect(speechOf(answered)).toEqual(['Paris is the capital of France.']);
    expect(only(answered, 'ovos.intent.matched').data).toMatchObject({ pipeline_id: 'common_query' });

    const fallback = await utter(probe, MEANING, 'null-denylist-fb', session);
    expect(speechOf(fallback)).toEqual(['42']);
    expect(only(fallback, 'ovos.intent.matched').data).toMatchObject({ pipeline_id: 'fallback_high' });
  });

  it('takes a session as ovos-bus-client serialises it: OVOS pipeline names, unknown stages skipped, unknown keys kept (OVOS-SESSION-1 §2.4)', async () => {
    const { probe } = await daemonWith({ exampleSkills: true });
    const session = {
      active_skills: [],
      utterance_states: {},
      session_id: 'bus-client-session',
      lang: 'en-US',
      context: { timeout: 120, frame_stack: [] },
      site_id: 'lab',
      pipeline: [
        'ovos-stop-pipeline-plugin-high',
        'ovos-padatious-pipeline-plugin-high',
        'ovos-fallback-pipeline-plugin-high',
        'ovos-fallback-pipeline-plugin-medium',
        'ovos-fallback-pipeline-plugin-low',
      ],
      system_unit: 'metric',
      is_speaking: false,
      blacklisted_skills: ['skill-ovos-stop.openvoiceos'],
      blacklisted_intents: [],
    };
    const messages = await utter(probe, MEANING, 'bus-client-1', session);

    // No common query stage in this pipeline: no ping, straight to fallback_high.
    expect(messages.map((message) => message.type)).not.toContain('ovos.common_query.ping');
    expect(only(messages, 'ovos.intent.matched').data).toMatchObject({ pipeline_id: 'fallback_high' });
    expect(speechOf(messages)).toEqual(['42']);
    expect(only(messages, 'meaning-of-life.example:fallback').context['session']).toMatchObject({
      site_id: 'lab',
      context: { timeout: 120, frame_stack: [] },
      active_handlers: [{ skill_id: 'meaning-of-life.example' }],
    });
  });
});

describe('daemon over a real websocket (no example skills)', () => {
  it('an utterance nobody handles ends with ovos.intent.unmatched then exactly one ovos.utterance.handled (OVOS-PIPELINE-1 §6)', async () => {
    const { probe } = await daemonWith({ exampleSkills: false });
    const messages = await utter(probe, MEANING, 'unmatched-1');

    expect(messages.map((message) => message.type)).toEqual([
      'ovos.utterance.handle',
      'ovos.common_query.ping',
      'question:query', // ovos-core's question, for today's skills (legacy dialect, on by default)
      'ovos.intent.unmatched',
      'mycroft.audio.play_sound',
      'complete_intent_failure',
      'ovos.utterance.handled',
    ]);
    expect(only(messages, 'ovos.intent.unmatched').data).toEqual({ utterances: [MEANING], lang: 'en-US' });

    // A non-question skips common query too and is just as final.
    const command = await utter(probe, BARREL_ROLL, 'unmatched-2');
    expect(command.map((message) => message.type)).toEqual(['ovos.utterance.handle', 'ovos.intent.unmatched', 'mycroft.audio.play_sound', 'complete_intent_failure', 'ovos.utterance.handled']);
  });
});
