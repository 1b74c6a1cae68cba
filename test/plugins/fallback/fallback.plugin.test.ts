/**
 * The fallback plugin through the whole system (harness: LocalBus + ManualClock). The pipeline is pinned to the
 * three fallback stages so these tests do not depend on which other plugins are loaded.
 */
import { describe, expect, it } from 'vitest';
import { createMessage, reply, withContext, type JsonObject, type Message } from '../../../src/bus/message.js';
import { sessionFromObject } from '../../../src/bus/session.js';
import { createHarness, fallbackSkill, withConfig, type Harness } from '../../support/harness.js';

const FALLBACK_STAGES = ['fallback_high', 'fallback_medium', 'fallback_low'];
const CONFIG = withConfig((config) => ({ ...config, pipeline: FALLBACK_STAGES }));
const PING_TIMEOUT_MS = CONFIG.fallback.pingTimeoutMs;

const session = (id: string, extra: JsonObject = {}): JsonObject => ({ session_id: id, ...extra });

/** Log lines carrying a drop `reason`. */
const drops = (h: Harness, reason: string): Array<Record<string, unknown>> => h.logs.filter((line) => line['reason'] === reason);

/** Every `<id>.fallback.ping` on the wire, as skill ids in order. */
const pingOrder = (h: Harness): string[] =>
  h.wire.filter((m) => m.type.endsWith('.fallback.ping')).map((m) => m.type.slice(0, -'.fallback.ping'.length));

const dispatches = (h: Harness): Message[] => h.wire.filter((m) => m.type.endsWith(':fallback'));

const only = <T>(list: readonly T[]): T => {
  expect(list).toHaveLength(1);
  return list[0]!;
};

async function ready(h: Harness): Promise<void> {
  await h.settle(); // registrations delivered
}

describe('OVOS-FALLBACK-1 §3 registration over the bus', () => {
  it('§3.1: a registration whose payload skill_id ≠ context.skill_id is not indexed (warn, context_skill_id_mismatch)', async () => {
    const h = createHarness(CONFIG);
    h.bus.publish(createMessage('ovos.fallback.register', { skill_id: 'impostor', priority: 10 }, { skill_id: 'victim', session: session('default') }));
    await h.settle();
    expect(h.system.fallback.registry.availableFor('default').has('impostor')).toBe(false);
    expect(h.system.fallback.registry.availableFor('default').has('victim')).toBe(false);
    const line = only(drops(h, 'context_skill_id_mismatch'));
    expect(line['level']).toBe(40);
    expect(line['type']).toBe('ovos.fallback.register');

    h.utter('anything', { session: session('s1') });
    await h.advance(1);
    expect(pingOrder(h)).toEqual([]);
    expect(h.timeline('s1')).toEqual(['ovos.utterance.handle', 'ovos.intent.unmatched', 'mycroft.audio.play_sound', 'complete_intent_failure', 'ovos.utterance.handled']);
  });

  it('§3.1: a registration with no context.skill_id at all is not indexed either', async () => {
    const h = createHarness(CONFIG);
    h.bus.publish(createMessage('ovos.fallback.register', { skill_id: 'a', priority: 10 }, { session: session('default') }));
    await h.settle();
    expect(h.system.fallback.registry.availableFor('default').size).toBe(0);
    expect(drops(h, 'context_skill_id_mismatch')).toHaveLength(1);
  });

  it('§3.1: a registration with a non-integer priority is not indexed (priority_invalid)', async () => {
    const h = createHarness(CONFIG);
    h.bus.publish(createMessage('ovos.fallback.register', { skill_id: 'a', priority: 10.5 }, { skill_id: 'a', session: session('default') }));
    h.bus.publish(createMessage('ovos.fallback.register', { skill_id: 'b', priority: '10' }, { skill_id: 'b', session: session('default') }));
    await h.settle();
    expect(h.system.fallback.registry.availableFor('default').size).toBe(0);
    // Both refused; one line a minute per sender (the second counted into the next one's `suppressed`).
    expect(drops(h, 'priority_invalid')).toHaveLength(1);
  });

  it('§3.1 (MSG-1 topics, PIPELINE-1 §4.1): a registration whose skill_id contains ":" is not indexed', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'bad:id', 10);
    await ready(h);
    expect(h.system.fallback.registry.availableFor('default').has('bad:id')).toBe(false);
    h.utter('hello', { session: session('s1') });
    await h.advance(1);
    expect(h.wire.filter((m) => m.type.includes(':') && !m.type.endsWith(':fallback'))).toEqual([]);
    expect(h.timeline('s1')).toEqual(['ovos.utterance.handle', 'ovos.intent.unmatched', 'mycroft.audio.play_sound', 'complete_intent_failure', 'ovos.utterance.handled']);
  });

  it('§3.1: re-registration replaces the prior entry — the skill moves from fallback_high to fallback_low', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'a', 10, { decide: () => false });
    await ready(h);
    h.bus.publish(createMessage('ovos.fallback.register', { skill_id: 'a', priority: 80 }, { skill_id: 'a', session: session('default') }));
    await h.settle();
    h.utter('hello', { session: session('s1') });
    await h.advance(1);
    // Asked once (by fallback_low), not twice: the old priority-10 entry is gone.
    expect(pingOrder(h)).toEqual(['a']);
    const view = sessionFromObject(session('s1'));
    expect(h.system.fallback.pool(view, [0, 49])).toEqual([]);
    expect(h.system.fallback.pool(view, [75, 100])).toEqual(['a']);
  });

  it('§3.2: ovos.fallback.deregister removes the skill; an unknown skill_id is a no-op', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'a', 10);
    fallbackSkill(h, 'b', 20, { decide: () => false });
    await ready(h);
    h.bus.publish(createMessage('ovos.fallback.deregister', { skill_id: 'a' }, { skill_id: 'a', session: session('default') }));
    h.bus.publish(createMessage('ovos.fallback.deregister', { skill_id: 'ghost' }, { skill_id: 'ghost', session: session('default') }));
    await h.settle();
    h.utter('hello', { session: session('s1') });
    await h.advance(1);
    expect(pingOrder(h)).toEqual(['b']);
    expect(h.timeline('s1')).toContain('ovos.intent.unmatched');
    expect(h.logs.filter((l) => l['level'] === 50 || l['level'] === 60)).toEqual([]);
  });

  it('§3.4: a session registration is pinged for that session only; "default" ones for everyone', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'everyone', 30, { decide: () => false });
    fallbackSkill(h, 'kitchen-only', 20, { decide: () => false, session: session('kitchen') });
    await ready(h);
    h.utter('in the kitchen', { session: session('kitchen') });
    await h.advance(1);
    expect(pingOrder(h)).toEqual(['kitchen-only', 'everyone']);
    h.utter('in the car', { session: session('car') });
    await h.advance(1);
    expect(pingOrder(h)).toEqual(['kitchen-only', 'everyone', 'everyone']);
  });
});

describe('OVOS-FALLBACK-1 §6.1 ping derivation and pong validation', () => {
  it('§6.1: the ping is derived by reply (source/destination flipped, session and utterance_id carried), payload {utterances, lang}', async () => {
    const h = createHarness(CONFIG);
    const a = fallbackSkill(h, 'a', 10, { decide: () => false });
    await ready(h);
    const carrier = session('s1', { site_id: 'lab', unknown_key: { nested: [1, 2] } });
    h.utter('what is the meaning of life', { session: carrier, utteranceId: 'utt-1', lang: 'pt-PT' });
    await h.advance(1);
    const ping = only(a.pings);
    expect(ping.type).toBe('a.fallback.ping');
    expect(ping.data).toEqual({ utterances: ['what is the meaning of life'], lang: 'pt-PT' });
    expect(ping.context).toEqual({ source: 'orchestrator', destination: 'test', session: carrier, utterance_id: 'utt-1', contest_id: expect.stringMatching(/^fallback:/) });
  });

  it('§6.1 (MSG-1 §4.2): an utterance without utterance_id gets one stamped, carried by the ping and the handled', async () => {
    const h = createHarness(CONFIG);
    const a = fallbackSkill(h, 'a', 10, { decide: () => false });
    await ready(h);
    h.utter('hello', { session: session('s1') });
    await h.advance(1);
    const stamped = only(a.pings).context['utterance_id'];
    expect(typeof stamped).toBe('string');
    expect(stamped).not.toBe('');
    expect(only(h.of('ovos.utterance.handled')).context['utterance_id']).toBe(stamped);
  });

  it('§6.1 (SESSION-1 §3.2.7): the ping lang falls back to the session lang, then the deployment default', async () => {
    const h = createHarness(CONFIG);
    const a = fallbackSkill(h, 'a', 10, { decide: () => false });
    await ready(h);
    h.utter('one', { session: session('s1', { lang: 'de-DE' }) });
    await h.advance(1);
    h.utter('two', { session: session('s2') });
    await h.advance(1);
    expect(a.pings.map((p) => p.data['lang'])).toEqual(['de-DE', CONFIG.lang]);
  });

  it('§6.1: a pong whose payload skill_id ≠ topic prefix is dropped (skill_id_mismatch) and does not win', async () => {
    const h = createHarness(CONFIG);
    const a = fallbackSkill(h, 'a', 10, { decide: () => 'silent' });
    fallbackSkill(h, 'b', 60, { decide: () => 'silent' });
    await ready(h);
    h.utter('hello', { session: session('s1') });
    await h.settle();
    const ping = only(a.pings);
    h.bus.publish(reply(ping, 'a.fallback.pong', { skill_id: 'b', can_handle: true })); // b speaking for a
    h.bus.publish(reply(ping, 'b.fallback.pong', { skill_id: 'a', can_handle: true })); // a on b's topic
    await h.settle();
    const mismatches = drops(h, 'skill_id_mismatch');
    expect(mismatches.map((l) => l['type'])).toEqual(['a.fallback.pong', 'b.fallback.pong']);
    expect(mismatches.every((l) => l['level'] === 40)).toBe(true);
    await h.advance(2 * PING_TIMEOUT_MS);
    expect(dispatches(h)).toEqual([]);
    expect(h.of('ovos.intent.unmatched')).toHaveLength(1);
    expect(h.of('ovos.utterance.handled')).toHaveLength(1);
  });

  it('§6.1: a pong with a non-boolean can_handle is dropped (can_handle_invalid) and does not win', async () => {
    const h = createHarness(CONFIG);
    const a = fallbackSkill(h, 'a', 10, { decide: () => 'silent' });
    await ready(h);
    h.utter('hello', { session: session('s1') });
    await h.settle();
    h.bus.publish(reply(only(a.pings), 'a.fallback.pong', { skill_id: 'a', can_handle: 'yes' }));
    await h.advance(PING_TIMEOUT_MS);
    expect(drops(h, 'can_handle_invalid')).toHaveLength(1);
    expect(dispatches(h)).toEqual([]);
    expect(h.of('ovos.intent.unmatched')).toHaveLength(1);
  });

  it('§6.1 (MSG-1 §4.2): a pong with a different utterance_id is dropped (wrong_utterance_id) and does not win', async () => {
    const h = createHarness(CONFIG);
    const a = fallbackSkill(h, 'a', 10, { decide: () => 'silent' });
    await ready(h);
    h.utter('hello', { session: session('s1'), utteranceId: 'u-live' });
    await h.settle();
    const forged = withContext(reply(only(a.pings), 'a.fallback.pong', { skill_id: 'a', can_handle: true }), { utterance_id: 'u-other' });
    h.bus.publish(forged);
    await h.settle();
    expect(only(drops(h, 'wrong_utterance_id'))['utterance_id']).toBe('u-other');
    await h.advance(PING_TIMEOUT_MS);
    expect(dispatches(h)).toEqual([]);
    expect(h.timeline('s1')).toEqual(['ovos.utterance.handle', 'a.fallback.ping', 'a.fallback.pong', 'ovos.intent.unmatched', 'mycroft.audio.play_sound', 'complete_intent_failure', 'ovos.utterance.handled']);
  });

  it('§6.1 (SESSION-1): a pong carrying another session is dropped (no_live_contest) and does not win', async () => {
    const h = createHarness(CONFIG);
    const a = fallbackSkill(h, 'a', 10, { decide: () => 'silent' });
    await ready(h);
    h.utter('hello', { session: session('s1') });
    await h.settle();
    const ping = only(a.pings);
    h.bus.publish(withContext(reply(ping, 'a.fallback.pong', { skill_id: 'a', can_handle: true }), { session: session('s2') }));
    await h.settle();
    expect(only(drops(h, 'no_live_contest'))['session_id']).toBe('s2');
    await h.advance(PING_TIMEOUT_MS);
    expect(dispatches(h)).toEqual([]);
    expect(h.of('ovos.intent.unmatched')).toHaveLength(1);
  });

  it('§6.1: a willing pong after the contest ended is dropped (finished_contest: it names that contest); nothing crashes and the next utterance works', async () => {
    const h = createHarness(CONFIG);
    let verdict: boolean | 'silent' = 'silent';
    const a = fallbackSkill(h, 'a', 10, { decide: () => verdict });
    await ready(h);
    h.utter('first', { session: session('s1') });
    await h.advance(PING_TIMEOUT_MS);
    expect(h.of('ovos.utterance.handled')).toHaveLength(1);
    expect(h.system.supervisor.size).toBe(0);

    h.bus.publish(reply(only(a.pings), 'a.fallback.pong', { skill_id: 'a', can_handle: true }));
    await h.advance(10);
    const late = only(drops(h, 'finished_contest'));
    expect(late['type']).toBe('a.fallback.pong');
    expect(late['level']).toBe(30);
    expect(dispatches(h)).toEqual([]);
    expect(h.logs.filter((l) => typeof l['level'] === 'number' && l['level'] >= 50)).toEqual([]);

    verdict = true;
    h.utter('second', { session: session('s1') });
    await h.advance(1);
    expect(only(dispatches(h)).data['utterance']).toBe('second');
    expect(h.of('ovos.utterance.handled')).toHaveLength(2);
  });

  it('§6.1: a timed-out skill is skipped and the next skill in the same stage is asked at exactly T', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'a', 10, { decide: () => 'silent' });
    const b = fallbackSkill(h, 'b', 20);
    await ready(h);
    const start = h.clock.now();
    h.utter('hello', { session: session('s1') });
    await h.advance(PING_TIMEOUT_MS - 1);
    expect(b.pings).toEqual([]);
    await h.advance(1);
    expect(b.pings).toHaveLength(1);
    expect(h.clock.now() - start).toBe(PING_TIMEOUT_MS);
    await h.settle();
    expect(only(dispatches(h)).type).toBe('b:fallback');
  });
});

describe('OVOS-FALLBACK-1 §4 / §5 session fields through the plugin', () => {
  it('SESSION-1 §2: blacklisted_skills: null reads as omitted — the skill is still asked and wins', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'a', 10);
    await ready(h);
    h.utter('hello', { session: session('s1', { blacklisted_skills: null }) });
    await h.advance(1);
    expect(only(dispatches(h)).type).toBe('a:fallback');
    expect(h.of('ovos.utterance.handled')).toHaveLength(1);
  });

  it('§5 step 4: a skill in session.blacklisted_skills is never pinged', async () => {
    const h = createHarness(CONFIG);
    const a = fallbackSkill(h, 'a', 10);
    fallbackSkill(h, 'b', 20);
    await ready(h);
    h.utter('hello', { session: session('s1', { blacklisted_skills: ['a'] }) });
    await h.advance(1);
    expect(a.pings).toEqual([]);
    expect(only(dispatches(h)).type).toBe('b:fallback');
  });

  it('§4 / §5 step 1: session.fallback_handlers reorders the pool within a stage', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'a', 10, { decide: () => false });
    fallbackSkill(h, 'b', 20, { decide: () => false });
    fallbackSkill(h, 'c', 30, { decide: () => false });
    await ready(h);
    h.utter('default order', { session: session('s1') });
    await h.advance(1);
    expect(pingOrder(h)).toEqual(['a', 'b', 'c']);
    h.utter('preferred order', { session: session('s2', { fallback_handlers: ['c', 'ghost', 'b'] }) });
    await h.advance(1);
    expect(pingOrder(h).slice(3)).toEqual(['c', 'b', 'a']);
  });

  it('§4 / §5 step 1: the preferred skill wins over a better-priority willing skill', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'a', 10);
    fallbackSkill(h, 'b', 20);
    await ready(h);
    h.utter('hello', { session: session('s1', { fallback_handlers: ['b'] }) });
    await h.advance(1);
    expect(pingOrder(h)).toEqual(['b']);
    expect(only(dispatches(h)).type).toBe('b:fallback');
  });
});

describe('OVOS-FALLBACK-1 §8.2 multiple stages', () => {
  it('§8.2: a priority-80 skill is asked only in fallback_low, after fallback_high and fallback_medium declined', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'low', 80);
    fallbackSkill(h, 'high', 10, { decide: () => false });
    fallbackSkill(h, 'medium', 60, { decide: () => false });
    await ready(h);
    h.utter('hello', { session: session('s1') });
    await h.advance(1);
    expect(h.timeline('s1')).toEqual([
      'ovos.utterance.handle',
      'high.fallback.ping',
      'high.fallback.pong',
      'medium.fallback.ping',
      'medium.fallback.pong',
      'low.fallback.ping',
      'low.fallback.pong',
      'ovos.intent.matched',
      'low:fallback',
      'ovos.intent.handler.start',
      'ovos.utterance.speak',
      'mycroft.skill.handler.complete',
      'ovos.intent.handler.complete',
      'ovos.utterance.handled',
    ]);
    expect(only(h.of('ovos.intent.matched')).data['pipeline_id']).toBe('fallback_low');
  });

  it('§8.2: each stage waits out its own silent skill before the next stage runs', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'high', 10, { decide: () => 'silent' });
    fallbackSkill(h, 'medium', 60, { decide: () => 'silent' });
    const low = fallbackSkill(h, 'low', 80);
    await ready(h);
    h.utter('hello', { session: session('s1') });
    await h.advance(2 * PING_TIMEOUT_MS - 1);
    expect(low.pings).toEqual([]);
    await h.advance(1);
    expect(low.pings).toHaveLength(1);
    await h.settle();
    expect(only(dispatches(h)).type).toBe('low:fallback');
  });

  it('§8.2: a skill at a stage boundary (49 / 50 / 74 / 75) is asked by exactly one stage', async () => {
    const h = createHarness(CONFIG);
    for (const [id, priority] of [['p49', 49], ['p50', 50], ['p74', 74], ['p75', 75]] as const) {
      fallbackSkill(h, id, priority, { decide: () => false });
    }
    await ready(h);
    h.utter('hello', { session: session('s1') });
    await h.advance(1);
    expect(pingOrder(h)).toEqual(['p49', 'p50', 'p74', 'p75']);
  });

  it('§8.2 (ovos-wire-today): session.pipeline alias ovos-fallback-pipeline-plugin-high resolves to fallback_high only', async () => {
    const h = createHarness(CONFIG);
    const high = fallbackSkill(h, 'high', 10, { decide: () => false });
    const low = fallbackSkill(h, 'low', 80);
    await ready(h);
    h.utter('hello', { session: session('s1', { pipeline: ['ovos-fallback-pipeline-plugin-high'] }) });
    await h.advance(1);
    expect(high.pings).toHaveLength(1);
    expect(low.pings).toEqual([]);
    expect(h.timeline('s1').slice(-4)).toEqual(['ovos.intent.unmatched', 'mycroft.audio.play_sound', 'complete_intent_failure', 'ovos.utterance.handled']);
  });

  it('§8.2 (ovos-wire-today): alias ovos-fallback-pipeline-plugin-low matches, and ovos.intent.matched names fallback_low', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'low', 80);
    await ready(h);
    h.utter('hello', { session: session('s1', { pipeline: ['ovos-fallback-pipeline-plugin-low'] }) });
    await h.advance(1);
    expect(only(h.of('ovos.intent.matched')).data['pipeline_id']).toBe('fallback_low');
    expect(only(dispatches(h)).context['pipeline_id']).toBe('fallback_low');
  });

  it('§8.2: session.pipeline order is honoured — low before high when the session says so', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'high', 10, { decide: () => false });
    fallbackSkill(h, 'low', 80, { decide: () => false });
    await ready(h);
    h.utter('hello', { session: session('s1', { pipeline: ['fallback_low', 'fallback_high'] }) });
    await h.advance(1);
    expect(pingOrder(h)).toEqual(['low', 'high']);
  });

  it('§8.2: a single-stage deployment (no ranges) asks every priority in one stage', async () => {
    const h = createHarness(
      withConfig((config) => ({ ...config, pipeline: ['fallback'], fallback: { ...config.fallback, stages: {} } })),
    );
    h.system.orchestrator.register(h.system.fallback.stage('fallback'));
    fallbackSkill(h, 'z', 150, { decide: () => false });
    fallbackSkill(h, 'a', -5, { decide: () => false });
    fallbackSkill(h, 'm', 60, { decide: () => false });
    await ready(h);
    h.utter('hello', { session: session('s1') });
    await h.advance(1);
    expect(pingOrder(h)).toEqual(['a', 'm', 'z']);
  });
});

describe('OVOS-PIPELINE-1 §10 introspection', () => {
  it('§10: ovos.pipeline.fallback_low.intents.list is answered with .response listing registered skills in range', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'high', 10);
    fallbackSkill(h, 'low-b', 90);
    fallbackSkill(h, 'low-a', 80);
    fallbackSkill(h, 'kitchen-low', 85, { session: session('kitchen') });
    await ready(h);
    h.bus.publish(createMessage('ovos.pipeline.fallback_low.intents.list', {}, { source: 'cli', destination: 'core', session: session('default') }));
    await h.settle();
    const response = only(h.of('ovos.pipeline.fallback_low.intents.list.response'));
    expect(response.data).toEqual({
      pipeline_id: 'fallback_low',
      intents: [
        { intent_name: 'fallback', skill_id: 'low-a', lang: '*' },
        { intent_name: 'fallback', skill_id: 'low-b', lang: '*' },
      ],
    });
    expect(response.context).toEqual({ source: 'core', destination: 'cli', session: session('default') });
  });

  it('§10 (§3.4): the listing for a session includes that session’s own registrations', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'low-a', 80);
    fallbackSkill(h, 'kitchen-low', 85, { session: session('kitchen') });
    await ready(h);
    h.bus.publish(createMessage('ovos.pipeline.fallback_low.intents.list', {}, { session: session('kitchen') }));
    await h.settle();
    const response = only(h.of('ovos.pipeline.fallback_low.intents.list.response'));
    expect(response.data['intents']).toEqual([
      { intent_name: 'fallback', skill_id: 'low-a', lang: '*' },
      { intent_name: 'fallback', skill_id: 'kitchen-low', lang: '*' },
    ]);
  });

  it('§10: an empty stage answers with an empty list; an unknown pipeline_id is not answered', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'high', 10);
    await ready(h);
    h.bus.publish(createMessage('ovos.pipeline.fallback_medium.intents.list', {}, { session: session('default') }));
    h.bus.publish(createMessage('ovos.pipeline.nobody_here.intents.list', {}, { session: session('default') }));
    await h.settle();
    expect(only(h.of('ovos.pipeline.fallback_medium.intents.list.response')).data).toEqual({ pipeline_id: 'fallback_medium', intents: [] });
    expect(h.of('ovos.pipeline.nobody_here.intents.list.response')).toEqual([]);
  });
});
