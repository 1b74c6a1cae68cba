/**
 * The daemon as ovos-core's stage service (src/stage-service/, protocol v1 in src/ovos-plugin/README.md): one
 * `ovos.contests.stage.match` request, one `.response`, carrying what ovos-core's own fallback and common-query plugins
 * return for the same decision — and nothing dispatched by the daemon itself (ovos-core dispatches). Whole system on
 * a LocalBus with client connections played by name, ManualClock; no sleeps.
 */
import { describe, expect, it } from 'vitest';
import { createMessage, reply, type JsonObject, type Message } from '../../src/bus/message.js';
import { REPLY_MARGIN_MS, stageTopics } from '../../src/stage-service/stage-service.js';
import { legacyCqSkill } from '../support/cq-skills.js';
import { createHarness, fallbackSkill, withConfig, type Harness } from '../support/harness.js';

const CONFIG = withConfig((c) => ({ ...c, dialects: { spec: true, legacy: true } }));
const PING_MS = CONFIG.fallback.pingTimeoutMs;

/** What our Python plugin sends from inside ovos-core: the utterance message's context, session and utterance_id. */
function request(h: Harness, data: JsonObject, session: JsonObject = { session_id: 'kitchen' }): Message {
  const message = createMessage(stageTopics.match, data, { source: 'IntentService', destination: 'ovos-contests', session, utterance_id: 'u-1' });
  h.bus.publish(message, 'ovos-core');
  return message;
}

const ask = (stage: string, utterances: string[], timeoutMs = 1_000): JsonObject => ({ version: 1, request_id: `r-${stage}`, stage, utterances, lang: 'en-US', timeout_ms: timeoutMs });
const responses = (h: Harness): JsonObject[] => h.of(stageTopics.response).map((m) => m.data);

/** An ovos-workshop FallbackSkill over its own connection: registers, answers the broadcast ping. */
function workshopFallback(h: Harness, skillId: string, priority: number, willing: boolean): void {
  h.bus.subscribe((m) => {
    if (m.type === 'ovos.skills.fallback.ping') h.bus.publish(reply(m, 'ovos.skills.fallback.pong', { skill_id: skillId, can_handle: willing }), skillId);
  });
  h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: skillId, priority }, {}), skillId);
}

describe('stage service: fallback tiers (OVOS-FALLBACK-1, answered as ovos-core\'s FallbackService answers)', () => {
  it('FALLBACK-1 §6: a workshop skill willing in fallback_low → the request topic, skill_id null, the data ovos-core sets before it dispatches; nothing dispatched by the daemon', async () => {
    const h = createHarness(CONFIG);
    workshopFallback(h, 'wk.fb', 80, true);
    await h.settle();
    const asked = request(h, ask('fallback_low', ['do a barrel roll']));
    await h.advance(PING_MS);
    expect(responses(h)).toEqual([
      {
        version: 1,
        request_id: 'r-fallback_low',
        stage: 'fallback_low',
        match: {
          match_type: 'ovos.skills.fallback.wk.fb.request',
          match_data: { skill_id: 'wk.fb', utterances: ['do a barrel roll'], lang: 'en-US' },
          skill_id: null,
          utterance: 'do a barrel roll',
          message_data: { utterances: ['do a barrel roll'], lang: 'en-US', range: [75, 100] },
        },
      },
    ]);
    const response = h.of(stageTopics.response)[0]!;
    expect(response.context).toMatchObject({ session: { session_id: 'kitchen' }, utterance_id: 'u-1', source: asked.context['destination'] });
    // The ping went out in the utterance's session; the dispatch is ovos-core's to send.
    expect(h.of('ovos.skills.fallback.ping')[0]!.context).toMatchObject({ session: { session_id: 'kitchen' }, utterance_id: 'u-1' });
    expect(h.of('ovos.skills.fallback.wk.fb.request')).toEqual([]);
    expect(h.of('ovos.intent.matched')).toEqual([]);
    expect(h.of('ovos.utterance.handled')).toEqual([]);
  });

  it('FALLBACK-1 §6.1: a spec skill wins with its own dispatch topic as the match type, and skill_id set (ovos-core activates it)', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'spec.fb', 10);
    await h.settle();
    request(h, ask('fallback_high', ['do a barrel roll']));
    await h.advance(1);
    expect(responses(h)[0]!['match']).toEqual({
      match_type: 'spec.fb:fallback',
      match_data: { utterance: 'do a barrel roll', lang: 'en-US', slots: {} },
      skill_id: 'spec.fb',
      utterance: 'do a barrel roll',
      message_data: {},
    });
    expect(h.of('spec.fb:fallback')).toEqual([]);
  });

  it('PIPELINE-1 §6, §8: when ovos-core dispatches the spec winner, its handler\'s end brings the utterance\'s one handled from the daemon (ovos-core sends none; a workshop skill sends its own)', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'spec.fb', 10);
    await h.settle();
    request(h, ask('fallback_high', ['do a barrel roll']));
    await h.advance(1);
    const match = responses(h)[0]!['match'] as JsonObject;
    // ovos-core's dispatch: a reply of its utterance message (the plugin stamped utterance_id on it), context.skill_id set.
    h.bus.publish(createMessage(String(match['match_type']), { ...(match['match_data'] as JsonObject) }, { session: { session_id: 'kitchen' }, utterance_id: 'u-1', skill_id: 'spec.fb' }), 'ovos-core');
    await h.settle();
    expect(h.of('ovos.utterance.speak').map((m) => m.data['utterance'])).toEqual(['spec.fb says hi']);
    expect(h.of('ovos.utterance.handled').map((m) => m.context['utterance_id'])).toEqual(['u-1']);
    // A second handler end (a duplicate) brings nothing more.
    h.bus.publish(createMessage('mycroft.skill.handler.complete', {}, { session: { session_id: 'kitchen' }, utterance_id: 'u-1', skill_id: 'spec.fb' }), 'spec.fb');
    await h.settle();
    expect(h.of('ovos.utterance.handled')).toHaveLength(1);
  });

  it('FALLBACK-1 §5: no skill in the tier → match null at once, nothing asked', async () => {
    const h = createHarness(CONFIG);
    await h.settle();
    request(h, ask('fallback_medium', ['do a barrel roll']));
    await h.settle();
    expect(responses(h).map((r) => r['match'])).toEqual([null]);
    expect(h.wire.filter((m) => m.type.includes('fallback.ping'))).toEqual([]);
  });

  it('a silent skill past the request\'s bound: the reply (match null) leaves REPLY_MARGIN_MS before timeout_ms, never after, and exactly once', async () => {
    const h = createHarness(withConfig((c) => ({ ...c, fallback: { ...c.fallback, pingTimeoutMs: 5_000 } })));
    fallbackSkill(h, 'mute', 10, { decide: () => 'silent' });
    await h.settle();
    request(h, ask('fallback_high', ['do a barrel roll'], 300));
    await h.advance(300 - REPLY_MARGIN_MS - 1);
    expect(responses(h)).toEqual([]);
    await h.advance(1);
    expect(responses(h).map((r) => r['match'])).toEqual([null]);
    await h.advance(10_000);
    expect(responses(h)).toHaveLength(1);
  });
});

describe('stage service: common query (OVOS-COMMON-QUERY-1, answered as ovos-common-query-pipeline-plugin answers)', () => {
  it('COMMON-QUERY-1 §8: a workshop skill\'s answer → question:action.<skill_id> with its own reply, skill_id set; the daemon speaks nothing', async () => {
    const h = createHarness(CONFIG);
    legacyCqSkill(h, 'wk.cq', { answerAfterMs: 30, conf: 0.8 });
    await h.settle();
    request(h, ask('common_query', ['what is the speed of light'], 6_100));
    await h.advance(6_100);
    const match = responses(h)[0]!['match'] as JsonObject;
    expect(match).toMatchObject({
      match_type: 'question:action.wk.cq',
      skill_id: 'wk.cq',
      utterance: 'what is the speed of light',
      match_data: { phrase: 'what is the speed of light', skill_id: 'wk.cq', answer: 'wk.cq answer', callback_data: { answer: 'wk.cq answer' }, conf: 0.8 },
      message_data: { lang: 'en-US', utterance: 'what is the speed of light' },
    });
    expect(h.of('speak')).toEqual([]);
    expect(h.wire.filter((m) => m.type.startsWith('question:action'))).toEqual([]);
  });

  it('COMMON-QUERY-1 §8: a classic CommonQuerySkill wins on the bare question:action', async () => {
    const h = createHarness(CONFIG);
    legacyCqSkill(h, 'wk.classic', { classic: true, answerAfterMs: 30, conf: 0.8 });
    await h.settle();
    request(h, ask('common_query', ['what is the speed of light'], 6_100));
    await h.advance(6_100);
    expect((responses(h)[0]!['match'] as JsonObject)['match_type']).toBe('question:action');
  });

  it('COMMON-QUERY-1 §10: a spec skill\'s answer → the daemon\'s answer topic; when ovos-core emits it, the daemon speaks it and ends the utterance once', async () => {
    const h = createHarness(CONFIG);
    h.bus.subscribe((m) => {
      if (m.type === 'ovos.common_query.ping') h.bus.publish(reply(m, 'ovos.common_query.pong', { utterance: m.data['utterance'] ?? '', skill_id: 'spec.cq', can_answer: true, latency_ms: 0 }), 'spec.cq');
      if (m.type === 'spec.cq:common_query') h.bus.publish(reply(m, 'spec.cq.common_query.response', { utterance: m.data['utterance'] ?? '', skill_id: 'spec.cq', answer: 'About 300,000 km/s.', conf: 0.8 }), 'spec.cq');
    });
    await h.settle();
    request(h, ask('common_query', ['what is the speed of light'], 6_100));
    await h.advance(6_100);
    const match = responses(h)[0]!['match'] as JsonObject;
    expect(match).toEqual({ match_type: stageTopics.commonQueryAnswer, match_data: { answer: 'About 300,000 km/s.' }, skill_id: null, utterance: 'what is the speed of light', message_data: { lang: 'en-US', utterance: 'what is the speed of light' } });
    // ovos-core's dispatch: message.data + match_data, then utterance and lang.
    h.bus.publish(createMessage(stageTopics.commonQueryAnswer, { utterances: ['what is the speed of light'], ...(match['match_data'] as JsonObject), utterance: 'what is the speed of light', lang: 'en-US' }, { session: { session_id: 'kitchen' } }), 'ovos-core');
    await h.settle();
    expect(h.of('speak').map((m) => m.data)).toEqual([{ utterance: 'About 300,000 km/s.', lang: 'en-US' }]);
    expect(h.of('ovos.utterance.handled')).toHaveLength(1);
  });

  it('COMMON-QUERY-1 §4: a command the gate turns away → match null at once, nobody asked', async () => {
    const h = createHarness(CONFIG);
    legacyCqSkill(h, 'wk.cq', { answerAfterMs: 30 });
    await h.settle();
    request(h, ask('common_query', ['do a barrel roll'], 6_100));
    await h.settle();
    expect(responses(h).map((r) => r['match'])).toEqual([null]);
    expect(h.of('question:query')).toEqual([]);
  });
});

describe('stage service: bad requests get one reply with an error and a reason, and change nothing else', () => {
  it.each([
    ['no request_id', { version: 1, stage: 'fallback_high', utterances: ['x'], lang: 'en-US', timeout_ms: 100 }, 'bad_request'],
    ['a null utterance', { version: 1, request_id: 'r', stage: 'fallback_high', utterances: [null], lang: 'en-US', timeout_ms: 100 }, 'bad_request'],
    ['timeout_ms 0', { version: 1, request_id: 'r', stage: 'fallback_high', utterances: ['x'], lang: 'en-US', timeout_ms: 0 }, 'bad_request'],
    ['a stage we do not run', { version: 1, request_id: 'r', stage: 'adapt_high', utterances: ['x'], lang: 'en-US', timeout_ms: 100 }, 'unknown_stage'],
    ['a newer protocol', { version: 2, request_id: 'r', stage: 'fallback_high', utterances: ['x'], lang: 'en-US', timeout_ms: 100 }, 'unsupported_version'],
  ])('%s → %s', async (_what, data, error) => {
    const h = createHarness(CONFIG);
    await h.settle();
    request(h, data as JsonObject);
    await h.settle();
    expect(responses(h)).toEqual([expect.objectContaining({ version: 1, match: null, error })]);
    expect(h.logs.filter((l) => l['reason'] === `stage_${error}`)).toHaveLength(1);
    expect(h.system.supervisor.size).toBe(0);
  });
});

describe('ovos-core takes the utterances (orchestrator.takesUtterances false)', () => {
  const INSIDE = withConfig((c) => ({ ...c, dialects: { spec: true, legacy: true }, orchestrator: { ...c.orchestrator, takesUtterances: false } }));

  it('PIPELINE-1 §6 is ovos-core\'s then: an utterance on the bus gets no pipeline and no handled from the daemon — one orchestrator answers, not two', async () => {
    const h = createHarness(INSIDE);
    fallbackSkill(h, 'spec.fb', 10);
    await h.settle();
    h.bus.publish(createMessage('recognizer_loop:utterance', { utterances: ['do a barrel roll'], lang: 'en-US' }, { session: { session_id: 'kitchen' } }), 'ovos-core');
    h.utter('do a barrel roll', { session: { session_id: 'kitchen' } });
    await h.advance(PING_MS * 4);
    expect(h.of('ovos.utterance.handled')).toEqual([]);
    expect(h.of('ovos.intent.matched')).toEqual([]);
    expect(h.of('spec.fb.fallback.ping')).toEqual([]);
    expect(h.system.orchestrator.inFlight).toBe(0);
  });

  it('COMMON-QUERY-1 §5 early start: the question is asked when the utterance arrives; ovos-core\'s request 400 ms later joins that contest and is answered at once', async () => {
    const h = createHarness(INSIDE);
    const skill = legacyCqSkill(h, 'wk.cq', { answerAfterMs: 100, conf: 0.8 });
    await h.settle();
    h.bus.publish(createMessage('recognizer_loop:utterance', { utterances: ['what is the speed of light'], lang: 'en-US' }, { session: { session_id: 'kitchen' } }), 'ovos-core');
    await h.settle();
    expect(skill.questions).toHaveLength(1); // asked at arrival, before ovos-core's pipeline reaches the stage
    await h.advance(400); // ovos-core's earlier stages
    request(h, ask('common_query', ['what is the speed of light'], 6_100));
    await h.settle();
    await h.advance(1);
    expect((responses(h)[0]!['match'] as JsonObject)?.['match_type']).toBe('question:action.wk.cq');
    expect(skill.questions).toHaveLength(1); // not asked twice
  });
});
