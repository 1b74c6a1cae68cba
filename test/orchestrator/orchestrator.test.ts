/**
 * The orchestrator (OVOS-PIPELINE-1 as this project implements it) through the whole system, driven by the fallback
 * plugin. The pipeline is pinned to the three fallback stages so these tests do not depend on which other plugins
 * are loaded.
 */
import { describe, expect, it } from 'vitest';
import { createMessage, reply, withContext, type JsonObject, type Message } from '../../src/bus/message.js';
import { createHarness, fallbackSkill, withConfig, type Harness } from '../support/harness.js';

const FALLBACK_STAGES = ['fallback_high', 'fallback_medium', 'fallback_low'];
const CONFIG = withConfig((config) => ({ ...config, pipeline: FALLBACK_STAGES }));
const PING_TIMEOUT_MS = CONFIG.fallback.pingTimeoutMs;

const session = (id: string, extra: JsonObject = {}): JsonObject => ({ session_id: id, ...extra });

const drops = (h: Harness, reason: string): Array<Record<string, unknown>> => h.logs.filter((line) => line['reason'] === reason);

const dispatches = (h: Harness): Message[] => h.wire.filter((m) => m.type.endsWith(':fallback'));

const only = <T>(list: readonly T[]): T => {
  expect(list).toHaveLength(1);
  return list[0]!;
};

/** ovos.utterance.handled count per utterance_id. */
function handledPerUtterance(h: Harness): Map<string, number> {
  const counts = new Map<string, number>();
  for (const m of h.of('ovos.utterance.handled')) {
    const id = String(m.context['utterance_id']);
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

/** PIPELINE-1 §6: exactly one ovos.utterance.handled per accepted ovos.utterance.handle. */
function expectOneHandledEach(h: Harness, utteranceIds: readonly string[]): void {
  const counts = handledPerUtterance(h);
  expect([...counts.keys()].sort()).toEqual([...utteranceIds].sort());
  for (const id of utteranceIds) expect(counts.get(id)).toBe(1);
}

const MATCHED_SEQUENCE = (skillId: string): string[] => [
  'ovos.utterance.handle',
  `${skillId}.fallback.ping`,
  `${skillId}.fallback.pong`,
  'ovos.intent.matched',
  `${skillId}:fallback`,
  'ovos.intent.handler.start',
  'ovos.utterance.speak',
  'mycroft.skill.handler.complete',
  'ovos.intent.handler.complete',
  'ovos.utterance.handled',
];

describe('OVOS-PIPELINE-1 §6 lifecycle', () => {
  it('§6 with only the spec dialect on (dialects.legacy false): unmatched ends [..., ovos.intent.unmatched, ovos.utterance.handled] — no legacy events', async () => {
    const h = createHarness(withConfig((config) => ({ ...config, pipeline: FALLBACK_STAGES, dialects: { spec: true, legacy: false } })));
    h.utter('gibberish', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(1);
    expect(h.timeline('s1')).toEqual(['ovos.utterance.handle', 'ovos.intent.unmatched', 'ovos.utterance.handled']);
  });

  it('§6: a matched utterance produces exactly the full message sequence', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'a', 10);
    await h.settle();
    h.utter('tell me a joke', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(1);
    expect(h.timeline('s1')).toEqual(MATCHED_SEQUENCE('a'));
    expectOneHandledEach(h, ['u1']);
    expect(h.system.supervisor.size).toBe(0);
    expect(h.clock.pending).toBe(0);
  });

  it('§6 / §9: every lifecycle message carries the utterance_id; intent.matched has the full payload', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'a', 10);
    await h.settle();
    h.utter('tell me a joke', { session: session('s1'), utteranceId: 'u1', lang: 'en-GB' });
    await h.advance(1);
    const lifecycle = h.wire.filter((m) => m.type !== 'ovos.fallback.register');
    expect(lifecycle.every((m) => m.context['utterance_id'] === 'u1')).toBe(true);
    const matched = only(h.of('ovos.intent.matched'));
    expect(matched.data).toEqual({
      skill_id: 'a',
      intent_name: 'fallback',
      lang: 'en-GB',
      utterance: 'tell me a joke',
      slots: {},
      pipeline_id: 'fallback_high',
    });
    expect(matched.context).toMatchObject({ source: 'orchestrator', destination: 'test' });
  });

  it('§6: an unmatched utterance ends [..., ovos.intent.unmatched, (legacy: the error sound, complete_intent_failure), ovos.utterance.handled]', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'a', 10, { decide: () => false });
    await h.settle();
    h.utter('gibberish', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(1);
    expect(h.timeline('s1')).toEqual([
      'ovos.utterance.handle',
      'a.fallback.ping',
      'a.fallback.pong',
      'ovos.intent.unmatched',
      'mycroft.audio.play_sound',
      'complete_intent_failure',
      'ovos.utterance.handled',
    ]);
    const unmatched = only(h.of('ovos.intent.unmatched'));
    expect(unmatched.data).toEqual({ utterances: ['gibberish'], lang: CONFIG.lang });
    expect(unmatched.context).toMatchObject({ source: 'orchestrator', destination: 'test', utterance_id: 'u1' });
    // ovos-wire-today.md "no match": what OVOS clients of today wait for, derived from the utterance the same way.
    expect(only(h.of('mycroft.audio.play_sound')).data).toEqual({ uri: 'snd/error.mp3' });
    expect(only(h.of('complete_intent_failure'))).toMatchObject({ data: { utterances: ['gibberish'], lang: CONFIG.lang }, context: { destination: 'test', utterance_id: 'u1' } });
    expectOneHandledEach(h, ['u1']);
  });

  it('§6: with nothing registered the utterance is unmatched at once (no ping, no wait)', async () => {
    const h = createHarness(CONFIG);
    h.utter('anything', { session: session('s1'), utteranceId: 'u1' });
    await h.settle();
    expect(h.timeline('s1')).toEqual(['ovos.utterance.handle', 'ovos.intent.unmatched', 'mycroft.audio.play_sound', 'complete_intent_failure', 'ovos.utterance.handled']);
    expect(h.clock.pending).toBe(0);
  });

  it('§6: ovos.utterance.handled is derived by reply from the utterance (routing flipped, session kept)', async () => {
    const h = createHarness(CONFIG);
    const carrier = session('s1', { extra: 'kept' });
    h.utter('anything', { session: carrier, utteranceId: 'u1' });
    await h.settle();
    expect(only(h.of('ovos.utterance.handled'))).toEqual({
      type: 'ovos.utterance.handled',
      data: {},
      context: { source: 'orchestrator', destination: 'test', session: carrier, utterance_id: 'u1' },
    });
  });

  it('§6: exactly one ovos.utterance.handled per utterance across matched, unmatched, error and timeout outcomes', async () => {
    const h = createHarness(withConfig((config) => ({ ...config, pipeline: FALLBACK_STAGES, orchestrator: { ...config.orchestrator, handlerTimeoutMs: 1_000 } })));
    fallbackSkill(h, 'willing', 10, {
      decide: (u) => u.startsWith('match'),
      onDispatch: (d) => (d.data['utterance'] === 'match error' ? 'error' : d.data['utterance'] === 'match silent' ? 'silent' : 'complete'),
    });
    fallbackSkill(h, 'mute', 60, { decide: (u) => (u === 'nobody' ? 'silent' : false) });
    await h.settle();
    const cases = ['match ok', 'match error', 'match silent', 'no match', 'nobody'];
    cases.forEach((u, i) => h.utter(u, { session: session(`s${i}`), utteranceId: `u${i}` }));
    await h.advance(1_000 + PING_TIMEOUT_MS);
    expectOneHandledEach(h, cases.map((_, i) => `u${i}`));
    expect(h.of('ovos.intent.handler.complete')).toHaveLength(1);
    expect(h.of('ovos.intent.handler.error')).toHaveLength(2);
    expect(h.of('ovos.intent.unmatched')).toHaveLength(2);
    expect(h.system.supervisor.size).toBe(0);
    expect(h.clock.pending).toBe(0);
  });

  it('§6.5: the orchestrator accepts new utterances while another is still being matched', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'slow', 10, { decide: (u) => (u === 'slow one' ? 'silent' : false) });
    fallbackSkill(h, 'fast', 60);
    await h.settle();
    h.utter('slow one', { session: session('s1'), utteranceId: 'u1' });
    await h.settle();
    h.utter('fast one', { session: session('s2'), utteranceId: 'u2' });
    await h.advance(1);
    expect(h.timeline('s2').at(-1)).toBe('ovos.utterance.handled');
    expect(h.timeline('s1')).not.toContain('ovos.utterance.handled');
    await h.advance(PING_TIMEOUT_MS);
    expectOneHandledEach(h, ['u1', 'u2']);
  });
});

describe('OVOS-PIPELINE-1 §7 dispatch', () => {
  it('§7: dispatch <skill_id>:fallback is derived by reply, payload {lang, utterance, slots}, with skill_id and pipeline_id stamped', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'a', 60);
    await h.settle();
    h.utter('tell me a joke', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(1);
    const dispatch = only(dispatches(h));
    expect(dispatch.type).toBe('a:fallback');
    expect(dispatch.data).toEqual({ lang: CONFIG.lang, utterance: 'tell me a joke', slots: {} });
    expect(dispatch.context).toMatchObject({ source: 'orchestrator', destination: 'test', skill_id: 'a', pipeline_id: 'fallback_medium', utterance_id: 'u1' });
  });

  it('§7 / §7.3: fallback activation pushes {skill_id, activated_at} onto the head of session.active_handlers', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'a', 10);
    await h.settle();
    const carrier = session('s1', {
      site_id: 'lab',
      active_handlers: [
        { skill_id: 'older', activated_at: 1 },
        { skill_id: 'a', activated_at: 2 },
      ],
    });
    h.utter('tell me a joke', { session: carrier, utteranceId: 'u1' });
    await h.advance(1);
    const dispatched = only(dispatches(h)).context['session'];
    expect(dispatched).toEqual({
      session_id: 's1',
      site_id: 'lab',
      active_handlers: [
        { skill_id: 'a', activated_at: Math.floor(h.clock.now() / 1000) },
        { skill_id: 'older', activated_at: 1 },
      ],
    });
  });

  it('§8: the handler trio is derived by forward from the dispatch, payload {skill_id, intent_name}', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'a', 10);
    await h.settle();
    h.utter('tell me a joke', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(1);
    const dispatch = only(dispatches(h));
    for (const topic of ['ovos.intent.handler.start', 'ovos.intent.handler.complete']) {
      const m = only(h.of(topic));
      expect(m.data).toEqual({ skill_id: 'a', intent_name: 'fallback' });
      expect(m.context).toEqual(dispatch.context);
    }
  });
});

describe('OVOS-PIPELINE-1 §8 handler lifecycle for a bus skill', () => {
  const HANDLER_TIMEOUT_MS = 2_000;
  const TIMEOUT_CONFIG = withConfig((config) => ({
    ...config,
    pipeline: FALLBACK_STAGES,
    orchestrator: { ...config.orchestrator, handlerTimeoutMs: HANDLER_TIMEOUT_MS },
  }));

  it('§8: a skill that never completes → ovos.intent.handler.error (timeout) after handlerTimeoutMs, then handled', async () => {
    const h = createHarness(TIMEOUT_CONFIG);
    fallbackSkill(h, 'a', 10, { onDispatch: () => 'silent' });
    await h.settle();
    h.utter('hang forever', { session: session('s1'), utteranceId: 'u1' });
    await h.settle();
    const startedAt = h.clock.now();
    expect(h.timeline('s1').at(-1)).toBe('ovos.intent.handler.start');
    await h.advance(HANDLER_TIMEOUT_MS - 1);
    expect(h.of('ovos.intent.handler.error')).toEqual([]);
    expect(h.of('ovos.utterance.handled')).toEqual([]);
    await h.advance(1);
    expect(h.clock.now() - startedAt).toBe(HANDLER_TIMEOUT_MS);
    const error = only(h.of('ovos.intent.handler.error'));
    expect(error.data).toMatchObject({ skill_id: 'a', intent_name: 'fallback' });
    expect(String(error.data['exception'])).toMatch(/timeout/i);
    expect(String(error.data['exception'])).toContain(String(HANDLER_TIMEOUT_MS));
    expect(h.timeline('s1').slice(-3)).toEqual(['ovos.intent.handler.start', 'ovos.intent.handler.error', 'ovos.utterance.handled']);
    expect(only(h.of('ovos.utterance.handled')).data).toEqual({}); // the lifecycle's own, not an early end's
    expectOneHandledEach(h, ['u1']);
  });

  it('§8: a completion signal after the handler timed out is dropped (no_live_contest) and changes nothing', async () => {
    const h = createHarness(TIMEOUT_CONFIG);
    fallbackSkill(h, 'a', 10, { onDispatch: () => 'silent' });
    await h.settle();
    h.utter('hang forever', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(HANDLER_TIMEOUT_MS);
    h.bus.publish(reply(only(dispatches(h)), 'mycroft.skill.handler.complete', {}));
    await h.settle();
    expect(only(drops(h, 'no_live_contest'))['type']).toBe('mycroft.skill.handler.complete');
    expect(h.of('ovos.intent.handler.complete')).toEqual([]);
    expectOneHandledEach(h, ['u1']);
  });

  it('§8: a handler error signal → ovos.intent.handler.error (with the exception) then handled', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'a', 10, { onDispatch: () => 'error' });
    await h.settle();
    h.utter('explode', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(1);
    expect(h.timeline('s1')).toEqual([
      'ovos.utterance.handle',
      'a.fallback.ping',
      'a.fallback.pong',
      'ovos.intent.matched',
      'a:fallback',
      'ovos.intent.handler.start',
      'ovos.utterance.speak',
      'mycroft.skill.handler.error',
      'ovos.intent.handler.error',
      'ovos.utterance.handled',
    ]);
    expect(only(h.of('ovos.intent.handler.error')).data).toEqual({ skill_id: 'a', intent_name: 'fallback', exception: 'boom' });
    expect(h.of('ovos.intent.handler.complete')).toEqual([]);
    // The lifecycle's own handled, sent as the utterance ends: no `error` (that marks an utterance ended early).
    expect(only(h.of('ovos.utterance.handled')).data).toEqual({});
  });

  it('§8: a completion signal from a different skill is ignored; the dispatched skill’s own completes', async () => {
    const h = createHarness(TIMEOUT_CONFIG);
    fallbackSkill(h, 'a', 10, { onDispatch: () => 'silent' });
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.settle();
    const dispatch = only(dispatches(h));
    h.bus.publish(withContext(reply(dispatch, 'mycroft.skill.handler.complete', {}), { skill_id: 'intruder' }));
    h.bus.publish(withContext(reply(dispatch, 'mycroft.skill.handler.error', { exception: 'not mine' }), { skill_id: 'intruder' }));
    await h.settle();
    expect(h.of('ovos.intent.handler.complete')).toEqual([]);
    expect(h.of('ovos.intent.handler.error')).toEqual([]);
    expect(h.of('ovos.utterance.handled')).toEqual([]);
    expect(drops(h, 'not_awaited').map((l) => l['skill_id'])).toEqual(['intruder', 'intruder']);

    h.bus.publish(reply(dispatch, 'mycroft.skill.handler.complete', {}));
    await h.settle();
    expect(h.timeline('s1').slice(-2)).toEqual(['ovos.intent.handler.complete', 'ovos.utterance.handled']);
    expectOneHandledEach(h, ['u1']);
  });

  it('§8: a completion signal without context.skill_id is dropped (skill_id_missing)', async () => {
    const h = createHarness(TIMEOUT_CONFIG);
    fallbackSkill(h, 'a', 10, { onDispatch: () => 'silent' });
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.settle();
    const signal = reply(only(dispatches(h)), 'mycroft.skill.handler.complete', {});
    const { skill_id: _dropped, ...context } = signal.context;
    h.bus.publish({ ...signal, context });
    await h.settle();
    expect(drops(h, 'skill_id_missing')).toHaveLength(1);
    expect(h.of('ovos.utterance.handled')).toEqual([]);
  });
});

describe('OVOS-PIPELINE-1 §4.4 match bound (a fallback stage decides at its stage bound, 5 ms before it)', () => {
  const BOUND_MS = 100;
  const STAGE_BOUND_MS = BOUND_MS - 5;
  const BOUND_CONFIG = withConfig((config) => ({
    ...config,
    pipeline: FALLBACK_STAGES,
    orchestrator: { ...config.orchestrator, matchTimeoutMs: BOUND_MS },
  }));

  it('§4.4: a stage slower than the bound is closed for good — a willing pong after the bound is never dispatched', async () => {
    expect(BOUND_MS).toBeLessThan(BOUND_CONFIG.fallback.pingTimeoutMs);
    const h = createHarness(BOUND_CONFIG);
    const a = fallbackSkill(h, 'a', 10, { decide: () => 'silent' });
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(STAGE_BOUND_MS - 1);
    expect(h.of('ovos.utterance.handled')).toEqual([]);
    await h.advance(1);
    // The only stage with a skill was cut at its bound; the other two had empty pools.
    expect(h.timeline('s1')).toEqual(['ovos.utterance.handle', 'a.fallback.ping', 'ovos.intent.unmatched', 'mycroft.audio.play_sound', 'complete_intent_failure', 'ovos.utterance.handled']);
    expect(h.logs.filter((l) => l['reason'] === 'match_bound_cut')).toEqual([expect.objectContaining({ stage: 'fallback_high', awaiting: 'a', chose: null })]);
    expect(h.system.supervisor.size).toBe(0);
    expect(h.clock.pending).toBe(0);

    await h.advance(BOUND_MS);
    h.bus.publish(reply(only(a.pings), 'a.fallback.pong', { skill_id: 'a', can_handle: true }));
    await h.advance(2 * PING_TIMEOUT_MS);
    expect(dispatches(h)).toEqual([]);
    expect(h.of('ovos.intent.matched')).toEqual([]);
    expect(only(drops(h, 'finished_contest'))['type']).toBe('a.fallback.pong');
    expectOneHandledEach(h, ['u1']);
  });

  it('§4.4: a late willing pong arriving while the next stage runs is not taken by that stage either', async () => {
    const h = createHarness(BOUND_CONFIG);
    const a = fallbackSkill(h, 'a', 10, { decide: () => 'silent' });
    const m = fallbackSkill(h, 'm', 60, { decide: () => 'silent' });
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(BOUND_MS + 10); // fallback_high closed, fallback_medium awaiting m
    expect(m.pings).toHaveLength(1);
    h.bus.publish(reply(only(a.pings), 'a.fallback.pong', { skill_id: 'a', can_handle: true }));
    await h.settle();
    // The pong names the fallback_high run it answers (context.contest_id), which has finished: fallback_medium's run
    // never takes it.
    expect(drops(h, 'finished_contest').map((l) => l['type'])).toEqual(['a.fallback.pong']);
    await h.advance(BOUND_MS);
    expect(dispatches(h)).toEqual([]);
    expect(h.timeline('s1').slice(-4)).toEqual(['ovos.intent.unmatched', 'mycroft.audio.play_sound', 'complete_intent_failure', 'ovos.utterance.handled']);
    expectOneHandledEach(h, ['u1']);
  });

  it('§4.4: a willing pong just inside the bound is dispatched', async () => {
    const h = createHarness(BOUND_CONFIG);
    const a = fallbackSkill(h, 'a', 10, { decide: () => 'silent' });
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(STAGE_BOUND_MS - 1);
    h.bus.publish(reply(only(a.pings), 'a.fallback.pong', { skill_id: 'a', can_handle: true }));
    await h.advance(1);
    expect(only(dispatches(h)).type).toBe('a:fallback');
    expectOneHandledEach(h, ['u1']);
  });
});

describe('OVOS-PIPELINE-1 §6.5 concurrency and correlation', () => {
  it('two sessions in flight with the same skill get their own answers without cross-talk', async () => {
    const h = createHarness(CONFIG);
    const a = fallbackSkill(h, 'a', 10, { decide: (u) => u.includes('alpha') });
    await h.settle();
    h.utter('alpha question', { session: session('A'), utteranceId: 'uA' });
    h.utter('beta question', { session: session('B'), utteranceId: 'uB' });
    await h.advance(1);
    expect(a.pings).toHaveLength(2);
    expect(h.timeline('A')).toEqual(MATCHED_SEQUENCE('a'));
    expect(h.timeline('B')).toEqual(['ovos.utterance.handle', 'a.fallback.ping', 'a.fallback.pong', 'ovos.intent.unmatched', 'mycroft.audio.play_sound', 'complete_intent_failure', 'ovos.utterance.handled']);
    expect(only(dispatches(h)).data['utterance']).toBe('alpha question');
    expectOneHandledEach(h, ['uA', 'uB']);
  });

  it('two live contests awaiting the same skill: pongs answered in reverse order still reach their own session', async () => {
    const h = createHarness(CONFIG);
    const a = fallbackSkill(h, 'a', 10, { decide: () => 'silent' });
    await h.settle();
    h.utter('alpha question', { session: session('A'), utteranceId: 'uA' });
    h.utter('beta question', { session: session('B'), utteranceId: 'uB' });
    await h.settle();
    expect(h.system.supervisor.size).toBe(4); // two utterance contests + two fallback contests
    const [pingA, pingB] = a.pings;
    expect(pingA?.data['utterances']).toEqual(['alpha question']);
    h.bus.publish(reply(pingB!, 'a.fallback.pong', { skill_id: 'a', can_handle: false }));
    h.bus.publish(reply(pingA!, 'a.fallback.pong', { skill_id: 'a', can_handle: true }));
    await h.advance(1);
    expect(only(dispatches(h)).context['utterance_id']).toBe('uA');
    expect(h.timeline('B').slice(-4)).toEqual(['ovos.intent.unmatched', 'mycroft.audio.play_sound', 'complete_intent_failure', 'ovos.utterance.handled']);
    expectOneHandledEach(h, ['uA', 'uB']);
  });

  it('two utterances of one session, pongs carrying utterance_id: each reaches its own contest', async () => {
    const h = createHarness(CONFIG);
    const a = fallbackSkill(h, 'a', 10, { decide: () => 'silent' });
    await h.settle();
    h.utter('first', { session: session('s1'), utteranceId: 'u1' });
    h.utter('second', { session: session('s1'), utteranceId: 'u2' });
    await h.settle();
    h.bus.publish(reply(a.pings[1]!, 'a.fallback.pong', { skill_id: 'a', can_handle: true }));
    await h.advance(1);
    expect(only(dispatches(h)).context['utterance_id']).toBe('u2');
    await h.advance(PING_TIMEOUT_MS);
    expectOneHandledEach(h, ['u1', 'u2']);
  });

  // Regression: routing once delivered such a reply to every candidate before deciding it was ambiguous, so one
  // pong dispatched both utterances while the log said "dropped".
  it('MSG-1 §4.2: a pong without utterance_id that two live contests of the session could take is dropped (ambiguous) and wins neither', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'a', 10, { decide: () => 'silent' });
    await h.settle();
    h.utter('first', { session: session('s1'), utteranceId: 'u1' });
    h.utter('second', { session: session('s1'), utteranceId: 'u2' });
    await h.settle();
    h.bus.publish(createMessage('a.fallback.pong', { skill_id: 'a', can_handle: true }, { session: session('s1') }));
    await h.settle();
    expect(drops(h, 'ambiguous_correlation')).toHaveLength(1);
    expect(dispatches(h)).toEqual([]);
  });

  it('MSG-1 §4.2: a pong without utterance_id is accepted when exactly one contest of the session is live', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'a', 10, { decide: () => 'silent' });
    await h.settle();
    h.utter('only one', { session: session('s1'), utteranceId: 'u1' });
    await h.settle();
    h.bus.publish(createMessage('a.fallback.pong', { skill_id: 'a', can_handle: true }, { session: session('s1') }));
    await h.advance(1);
    expect(only(dispatches(h)).context['utterance_id']).toBe('u1');
  });

  it('a duplicate ovos.utterance.handle with the same utterance_id while in flight is dropped (duplicate_utterance_id)', async () => {
    const h = createHarness(CONFIG);
    const a = fallbackSkill(h, 'a', 10, { decide: () => 'silent' });
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'dup' });
    await h.settle();
    h.utter('hello again', { session: session('s1'), utteranceId: 'dup' });
    await h.settle();
    const line = only(drops(h, 'duplicate_utterance_id'));
    expect(line).toMatchObject({ level: 40, session_id: 's1', utterance_id: 'dup' });
    expect(a.pings).toHaveLength(1);
    await h.advance(PING_TIMEOUT_MS);
    expectOneHandledEach(h, ['dup']);
    expect(h.of('ovos.intent.unmatched')).toHaveLength(1);
  });

  it('the same utterance_id in another session is not a duplicate', async () => {
    const h = createHarness(CONFIG);
    const a = fallbackSkill(h, 'a', 10, { decide: () => 'silent' });
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'same' });
    h.utter('hello', { session: session('s2'), utteranceId: 'same' });
    await h.settle();
    expect(drops(h, 'duplicate_utterance_id')).toEqual([]);
    expect(a.pings).toHaveLength(2);
    await h.advance(PING_TIMEOUT_MS);
    expect(h.of('ovos.utterance.handled')).toHaveLength(2);
  });

  it('an utterance_id may be reused once its lifecycle has ended', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'a', 10);
    await h.settle();
    h.utter('first', { session: session('s1'), utteranceId: 'again' });
    await h.advance(1);
    h.utter('second', { session: session('s1'), utteranceId: 'again' });
    await h.advance(1);
    expect(drops(h, 'duplicate_utterance_id')).toEqual([]);
    expect(h.of('ovos.utterance.handled')).toHaveLength(2);
  });
});

describe('OVOS-SESSION-1 §2.5 malformed carrier', () => {
  it('§2.5: session: "x" is dropped (malformed_carrier, never defaulted) and the next good utterance still works', async () => {
    const h = createHarness(CONFIG);
    const a = fallbackSkill(h, 'a', 10);
    await h.settle();
    h.bus.publish(createMessage('ovos.utterance.handle', { utterances: ['bad'] }, { source: 'test', session: 'x' }));
    await h.advance(1);
    const line = only(drops(h, 'malformed_carrier'));
    expect(line).toMatchObject({ level: 40, type: 'ovos.utterance.handle' });
    expect(a.pings).toEqual([]);
    expect(h.of('ovos.utterance.handled')).toEqual([]);
    expect(h.timeline('default')).toEqual(['ovos.fallback.register']); // not substituted by the default session

    h.utter('good', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(1);
    expect(h.timeline('s1')).toEqual(MATCHED_SEQUENCE('a'));
  });

  it('§2.5: a malformed carrier on a pong is dropped too and does not win', async () => {
    const h = createHarness(CONFIG);
    const a = fallbackSkill(h, 'a', 10, { decide: () => 'silent' });
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.settle();
    h.bus.publish(withContext(reply(only(a.pings), 'a.fallback.pong', { skill_id: 'a', can_handle: true }), { session: ['s1'] }));
    await h.advance(PING_TIMEOUT_MS);
    expect(drops(h, 'malformed_carrier')).toHaveLength(1);
    expect(dispatches(h)).toEqual([]);
  });

  it('§2.1: an absent session is the default session', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'a', 10);
    await h.settle();
    h.bus.publish(createMessage('ovos.utterance.handle', { utterances: ['hello'] }, { source: 'test' }));
    await h.advance(1);
    expect(only(dispatches(h)).type).toBe('a:fallback');
    expect(h.of('ovos.utterance.handled')).toHaveLength(1);
  });

  it('§9 + §6: ovos.utterance.handle with invalid utterances is dropped (utterances_invalid) and answered with handled {error}', async () => {
    const h = createHarness(CONFIG);
    h.bus.publish(createMessage('ovos.utterance.handle', { utterances: [] }, { session: session('s1') }));
    h.bus.publish(createMessage('ovos.utterance.handle', { utterances: [3] }, { session: session('s1') }));
    h.bus.publish(createMessage('ovos.utterance.handle', {}, { session: session('s1') }));
    await h.settle();
    expect(drops(h, 'utterances_invalid')).toHaveLength(3);
    expect(h.of('ovos.utterance.handled').map((m) => m.data)).toEqual([{ error: 'utterances_invalid' }, { error: 'utterances_invalid' }, { error: 'utterances_invalid' }]);
  });
});

describe('OVOS-PIPELINE-1 §5 effective pipeline', () => {
  it('§5: with no stages loaded → unmatched + handled', async () => {
    const h = createHarness(withConfig((config) => ({ ...config, pipeline: FALLBACK_STAGES, fallback: { ...config.fallback, stages: {} } })));
    fallbackSkill(h, 'a', 10);
    await h.settle();
    expect(h.system.orchestrator.stages.filter((stage) => stage.pipelineId.startsWith('fallback'))).toEqual([]);
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.settle();
    expect(h.timeline('s1')).toEqual(['ovos.utterance.handle', 'ovos.intent.unmatched', 'mycroft.audio.play_sound', 'complete_intent_failure', 'ovos.utterance.handled']);
  });

  it('§5: all pipelines blacklisted (ids and OVOS aliases) → unmatched + handled, no skill pinged', async () => {
    const h = createHarness(CONFIG);
    const a = fallbackSkill(h, 'a', 10);
    const b = fallbackSkill(h, 'b', 60);
    const c = fallbackSkill(h, 'c', 80);
    await h.settle();
    h.utter('hello', {
      session: session('s1', { blacklisted_pipelines: ['fallback_high', 'ovos-fallback-pipeline-plugin-medium', 'fallback_low'] }),
      utteranceId: 'u1',
    });
    await h.settle();
    expect([...a.pings, ...b.pings, ...c.pings]).toEqual([]);
    expect(h.timeline('s1')).toEqual(['ovos.utterance.handle', 'ovos.intent.unmatched', 'mycroft.audio.play_sound', 'complete_intent_failure', 'ovos.utterance.handled']);
  });

  it('§5: a blacklisted stage is skipped, the others still run', async () => {
    const h = createHarness(CONFIG);
    const a = fallbackSkill(h, 'a', 10);
    fallbackSkill(h, 'c', 80);
    await h.settle();
    h.utter('hello', { session: session('s1', { blacklisted_pipelines: ['fallback_high'] }) });
    await h.advance(1);
    expect(a.pings).toEqual([]);
    expect(only(dispatches(h)).type).toBe('c:fallback');
  });

  it('§5: an empty session.pipeline → unmatched + handled', async () => {
    const h = createHarness(CONFIG);
    const a = fallbackSkill(h, 'a', 10);
    await h.settle();
    h.utter('hello', { session: session('s1', { pipeline: [] }) });
    await h.settle();
    expect(a.pings).toEqual([]);
    expect(h.timeline('s1')).toEqual(['ovos.utterance.handle', 'ovos.intent.unmatched', 'mycroft.audio.play_sound', 'complete_intent_failure', 'ovos.utterance.handled']);
  });

  it('§5: unknown pipeline ids are skipped (logged with a reason), never abort the utterance', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'c', 80);
    await h.settle();
    h.utter('hello', { session: session('s1', { pipeline: ['no_such_stage', 'ovos-adapt-pipeline-plugin-high', 'fallback_low'] }) });
    await h.advance(1);
    expect(only(dispatches(h)).type).toBe('c:fallback');
    expect(drops(h, 'unknown_pipeline').map((l) => l['pipeline_id'])).toEqual(['no_such_stage', 'ovos-adapt-pipeline-plugin-high']);
  });

  it('§5: a stage listed twice (id and alias) runs once', async () => {
    const h = createHarness(CONFIG);
    const a = fallbackSkill(h, 'a', 10, { decide: () => false });
    await h.settle();
    h.utter('hello', { session: session('s1', { pipeline: ['fallback_high', 'ovos-fallback-pipeline-plugin-high'] }) });
    await h.advance(1);
    expect(a.pings).toHaveLength(1);
  });

  it('§5: session.blacklisted_skills: null (SESSION-1 §2) does not disturb the pipeline', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'a', 10);
    await h.settle();
    h.utter('hello', { session: session('s1', { blacklisted_skills: null, blacklisted_pipelines: null, pipeline: null }) });
    await h.advance(1);
    expect(h.timeline('s1')).toEqual(MATCHED_SEQUENCE('a'));
  });
});

describe('orchestrator reporting', () => {
  it('the "utterance handled" log and UtteranceRecord.done report outcome "completed" for a completed handler', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'a', 10);
    await h.settle();
    const record = h.system.orchestrator.handle(createMessage('ovos.utterance.handle', { utterances: ['hello'] }, { session: session('s1') }), ['hello']);
    await h.advance(1);
    expect(h.timeline('s1').at(-1)).toBe('ovos.utterance.handled');
    expect(only(h.logs.filter((l) => l['msg'] === 'utterance handled'))['outcome']).toBe('completed');
    expect(await record?.done).toMatchObject({ outcome: 'completed', stage: 'fallback_high' });
  });

  it('UtteranceRecord.done reports unmatched (with no match) for an unmatched utterance', async () => {
    const h = createHarness(CONFIG);
    const record = h.system.orchestrator.handle(createMessage('ovos.utterance.handle', { utterances: ['hello'] }, { session: session('s1') }), ['hello']);
    await h.settle();
    expect(await record?.done).toEqual({ outcome: 'unmatched', match: null, stage: null });
  });
});

describe('OVOS-SESSION-1 §2 on the way out', () => {
  it('§2: null session fields received are never emitted again (dispatch, ping, handled), other keys kept', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'a.skill', 10);
    await h.settle();
    h.utter('anything', { session: session('s-null', { blacklisted_skills: null, persona_id: null, site_id: 'lab' }), utteranceId: 'u-null' });
    await h.advance(10);
    const outgoing = h.wire.filter((m) => m.context['utterance_id'] === 'u-null' && m.type !== 'ovos.utterance.handle');
    expect(outgoing.map((m) => m.type)).toContain('a.skill:fallback');
    for (const m of outgoing) {
      const carried = m.context['session'] as JsonObject;
      expect(Object.values(carried)).not.toContain(null);
      expect(carried['site_id']).toBe('lab');
    }
  });

  it('PIPELINE-1 §7: ovos.utterance.handled carries the session with the activation pushed by the dispatch', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'a.skill', 10);
    await h.settle();
    h.utter('anything', { session: session('s-act'), utteranceId: 'u-act' });
    await h.advance(10);
    const handled = only(h.of('ovos.utterance.handled'));
    const carried = handled.context['session'] as JsonObject;
    expect(carried['active_handlers']).toEqual([{ skill_id: 'a.skill', activated_at: expect.any(Number) as number }]);
  });
});

describe('OVOS-PIPELINE-1 §4.1 / §5: the orchestrator re-checks every Match', () => {
  const fixedStage = (pipelineId: string, match: Record<string, unknown>) => ({
    pipelineId,
    match: async () => match as never,
    intents: () => [],
  });

  it.each([
    ['blacklisted_skill', { blacklisted_skills: ['evil.skill'] }, { skill_id: 'evil.skill', intent_name: 'x', lang: 'en-US', utterance: 'u', slots: {} }],
    ['blacklisted_intent', { blacklisted_intents: ['evil.skill:x'] }, { skill_id: 'evil.skill', intent_name: 'x', lang: 'en-US', utterance: 'u', slots: {} }],
    ['malformed_match', {}, { skill_id: 'bad:id', intent_name: 'x', lang: 'en-US', utterance: 'u', slots: {} }],
    ['malformed_match', {}, { skill_id: 'evil.skill', intent_name: 'x', lang: 'en-US', utterance: 'u', slots: { n: 5 } }],
  ])('a Match refused as %s is never dispatched; the next stage runs', async (reason, sessionExtra, match) => {
    const h = createHarness(CONFIG);
    h.system.orchestrator.register(fixedStage('rogue_stage', match));
    fallbackSkill(h, 'a.skill', 10);
    await h.settle();
    h.utter('anything', { session: session('s-recheck', { pipeline: ['rogue_stage', 'fallback_high'], ...sessionExtra }), utteranceId: 'u-recheck' });
    await h.advance(10);
    expect(h.wire.some((m) => m.type.startsWith('evil.skill:') || m.type.startsWith('bad:id'))).toBe(false);
    expect(only(dispatches(h)).type).toBe('a.skill:fallback');
    const rejected = only(h.logs.filter((l) => l['msg'] === 'match.rejected'));
    expect(rejected['reason']).toBe(reason);
    expect(rejected['stage']).toBe('rogue_stage');
    expectOneHandledEach(h, ['u-recheck']);
  });
});
