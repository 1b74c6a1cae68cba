/**
 * The orchestrator's edges (OVOS-PIPELINE-1 §5–§8, §10 as this project implements them): shutdown (drain, close),
 * refusals and the embedding API `Orchestrator.handle`, instances of one skill_id on several connections, stages of
 * an embedder's own, what reaches the log. Whole system on a LocalBus whose client connections are played by name,
 * on ManualClock; no sleeps. Each test was checked against the mutant of `src/orchestrator/orchestrator.ts` it is
 * there for (test/mutation/results.json).
 */
import { describe, expect, it, vi } from 'vitest';
import { createMessage, reply, type JsonObject, type Message } from '../../src/bus/message.js';
import type { Match, PipelineStage } from '../../src/pipeline/plugin.js';
import { SKILL_HANDLED_GRACE_MS } from '../../src/orchestrator/orchestrator.js';
import { createHarness, fallbackSkill, withConfig, type Harness } from '../support/harness.js';
import { legacyCqSkill } from '../support/cq-skills.js';

const FALLBACK_STAGES = ['fallback_high', 'fallback_medium', 'fallback_low'];
const CONFIG = withConfig((config) => ({ ...config, pipeline: FALLBACK_STAGES }));
const PING_TIMEOUT_MS = CONFIG.fallback.pingTimeoutMs;

const session = (id: string, extra: JsonObject = {}): JsonObject => ({ session_id: id, ...extra });
const withReason = (h: Harness, reason: string): Array<Record<string, unknown>> => h.logs.filter((line) => line['reason'] === reason);
/** Error-level (pino 50) lines and above: what an operator is paged for. */
const errors = (h: Harness): Array<Record<string, unknown>> => h.logs.filter((line) => Number(line['level']) >= 50);
const handledOf = (h: Harness, utteranceId: string): Message[] => h.of('ovos.utterance.handled').filter((m) => m.context['utterance_id'] === utteranceId);
/** The utterance's lifecycle on the wire, skills' pings and pongs left out. */
const lifecycle = (h: Harness, utteranceId: string): string[] =>
  h.wire.filter((m) => m.context['utterance_id'] === utteranceId && !m.type.endsWith('.ping') && !m.type.endsWith('.pong')).map((m) => m.type);

const only = <T>(list: readonly T[]): T => {
  expect(list).toHaveLength(1);
  return list[0]!;
};

const entry = (context: JsonObject, utterances: readonly string[] = ['hello']): Message =>
  createMessage('ovos.utterance.handle', { utterances: [...utterances] }, { source: 'test', destination: 'orchestrator', ...context });

/**
 * A fallback skill instance speaking over `connection`: registers (in `registerIn`), pongs every ping of its
 * skill_id per `willing` ('silent': no pong), and completes its handler over the same connection when `completes`.
 */
function skillOn(
  h: Harness,
  skillId: string,
  priority: number,
  connection: string,
  options: { willing?: (utterance: string) => boolean | 'silent'; completes?: boolean; registerIn?: string } = {},
): Message[] {
  const dispatched: Message[] = [];
  h.bus.subscribe((m) => {
    if (m.type === `${skillId}.fallback.ping`) {
      const utterances = m.data['utterances'];
      const verdict = options.willing?.(Array.isArray(utterances) ? String(utterances[0]) : '') ?? true;
      if (verdict !== 'silent') h.bus.publish(reply(m, `${skillId}.fallback.pong`, { skill_id: skillId, can_handle: verdict }), connection);
    } else if (m.type === `${skillId}:fallback`) {
      dispatched.push(m);
      if (options.completes === true) h.bus.publish(reply(m, 'mycroft.skill.handler.complete'), connection);
    }
  });
  h.bus.publish(createMessage('ovos.fallback.register', { skill_id: skillId, priority }, { skill_id: skillId, session: session(options.registerIn ?? 'default') }), connection);
  return dispatched;
}

/** An ovos-workshop FallbackSkill that answers its request (`.response {result: true}`) and never sends the handled. */
function legacyFallbackSkill(h: Harness, skillId: string, priority: number): void {
  h.bus.subscribe((m) => {
    if (m.type === 'ovos.skills.fallback.ping') h.bus.publish(reply(m, 'ovos.skills.fallback.pong', { skill_id: skillId, can_handle: true }), 'legacy');
    else if (m.type === `ovos.skills.fallback.${skillId}.request`) {
      h.bus.publish({ ...m, type: `ovos.skills.fallback.${skillId}.response`, data: { result: true } }, 'legacy');
    }
  });
  h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: skillId, priority }, { session: session('default') }), 'legacy');
}

/** From `refuse()` on, publishing an ovos.utterance.handled throws (an embedder's bus that refuses it). */
function refusingHandled(h: Harness): { refuse(): void } {
  const publish = h.bus.publish.bind(h.bus);
  let refusing = false;
  vi.spyOn(h.bus, 'publish').mockImplementation((message: Message, connection?: string) => {
    if (refusing && message.type === 'ovos.utterance.handled') throw new Error('bus refused the message');
    publish(message, connection);
  });
  return { refuse: () => (refusing = true) };
}

/** A harness whose one fallback skill never answers its ping: every utterance stays in match until stopped. */
async function withSilentSkill(): Promise<Harness> {
  const h = createHarness(CONFIG);
  fallbackSkill(h, 'a', 10, { decide: () => 'silent' });
  await h.settle();
  return h;
}

/** A stage of an embedder's own: `match` returns `result`; `extra` adds hooks (handle, dispatchFor). */
function ownStage(h: Harness, pipelineId: string, result: Match, extra: Partial<PipelineStage> = {}): void {
  h.system.orchestrator.register({ pipelineId, match: async () => result, intents: () => [], ...extra });
}

/** A bus skill answering `<skillId>:<intent>` with its completion signal, derived from the dispatch. */
function completingSkill(h: Harness, topic: string): Message[] {
  const dispatched: Message[] = [];
  h.bus.subscribe((m) => {
    if (m.type !== topic) return;
    dispatched.push(m);
    h.bus.publish(reply(m, 'mycroft.skill.handler.complete'), 'skills');
  });
  return dispatched;
}

describe('graceful shutdown (OVOS-PIPELINE-1 §6: exactly one handled, also while draining)', () => {
  it('PIPELINE-1 §6: while draining, a new utterance is answered at once with handled {error: shutting_down} and warned (shutting_down, its session and utterance_id)', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'a', 10);
    await h.settle();
    await h.system.orchestrator.drain();
    h.utter('hello', { session: session('s1'), utteranceId: 'late' });
    await h.settle();
    expect(lifecycle(h, 'late')).toEqual(['ovos.utterance.handle', 'ovos.utterance.handled']);
    expect(only(handledOf(h, 'late')).data).toEqual({ error: 'shutting_down' });
    expect(only(withReason(h, 'shutting_down'))).toMatchObject({ level: 40, session_id: 's1', utterance_id: 'late' });
  });

  it('PIPELINE-1 §6: while draining, Orchestrator.handle of an entry with a malformed carrier and no utterance_id publishes nothing — and the bus keeps delivering', async () => {
    const h = createHarness(CONFIG);
    await h.settle();
    await h.system.orchestrator.drain();
    expect(h.system.orchestrator.handle(entry({ session: 'x' }), ['hello'])).toBeNull();
    await h.settle();
    expect(h.of('ovos.utterance.handled')).toEqual([]);
    h.utter('hello', { session: session('s1'), utteranceId: 'after' });
    await h.settle();
    expect(only(handledOf(h, 'after')).data).toEqual({ error: 'shutting_down' });
  });

  it('PIPELINE-1 §6: drain waits for a handled left to a legacy skill — it resolves when ours goes out after the grace, not when the utterance actor ends', async () => {
    const h = createHarness(CONFIG);
    legacyFallbackSkill(h, 'legacy.fb', 30);
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.settle();
    expect(h.of('ovos.intent.handler.complete')).toHaveLength(1);
    expect(h.system.orchestrator.inFlight).toBe(0);
    let drained = false;
    void h.system.orchestrator.drain().then(() => (drained = true));
    await h.advance(SKILL_HANDLED_GRACE_MS - 1);
    expect(drained).toBe(false);
    expect(handledOf(h, 'u1')).toEqual([]);
    await h.advance(1);
    expect(handledOf(h, 'u1')).toHaveLength(1);
    expect(drained).toBe(true);
  });

  it('PIPELINE-1 §6: system.close() sends at once the handled still waiting for a legacy skill — exactly one, none later', async () => {
    const h = createHarness(CONFIG);
    legacyFallbackSkill(h, 'legacy.fb', 30);
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.settle();
    expect(handledOf(h, 'u1')).toEqual([]);
    h.system.close();
    await h.settle();
    expect(only(handledOf(h, 'u1')).data).toEqual({});
    await h.advance(SKILL_HANDLED_GRACE_MS);
    expect(handledOf(h, 'u1')).toHaveLength(1);
  });

  it('system.close() on a bus that refuses that handled logs it at error (publish_failed) and still closes: no timer left, nothing thrown', async () => {
    const h = createHarness(CONFIG);
    const bus = refusingHandled(h);
    legacyFallbackSkill(h, 'legacy.fb', 30);
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.settle();
    bus.refuse();
    expect(() => h.system.close()).not.toThrow();
    expect(only(errors(h))).toMatchObject({ level: 50, reason: 'publish_failed' });
    expect(h.clock.pending).toBe(0);
  });
});

describe('OVOS-PIPELINE-1 §6: an utterance that ends early still gets its handled, and says why', () => {
  it('PIPELINE-1 §6: an utterance stopped mid-match (bus down) is warned with the stop reason, in its session, before its handled {error}', async () => {
    const h = await withSilentSkill();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.settle();
    h.system.supervisor.stopAll('bus_down:test');
    await h.settle();
    expect(only(handledOf(h, 'u1')).data).toEqual({ error: 'bus_down:test' });
    expect(only(h.logs.filter((l) => l['level'] === 40 && l['utterance_id'] === 'u1'))).toMatchObject({
      reason: 'bus_down:test',
      session_id: 's1',
      contest: 'utterance/pipeline',
    });
  });

  it('PIPELINE-1 §6: on a bus that refuses the handled of a stopped utterance, the failure is logged at error (publish_failed) and its record still resolves', async () => {
    const h = await withSilentSkill();
    const bus = refusingHandled(h);
    const record = h.system.orchestrator.handle(entry({ session: session('s1'), utterance_id: 'u1' }), ['hello']);
    await h.settle();
    bus.refuse();
    h.system.supervisor.stopAll('bus_down:test');
    expect(await record?.done).toBeNull();
    expect(only(errors(h))).toMatchObject({ level: 50, reason: 'publish_failed', utterance_id: 'u1' });
    expect(h.system.orchestrator.inFlight).toBe(0);
  });
});

describe('OVOS-PIPELINE-1 §6: refused entries and the embedding API', () => {
  it('PIPELINE-1 §6: an invalid entry reusing an utterance_id that is in flight in another session still gets its own handled', async () => {
    const h = await withSilentSkill();
    h.utter('hello', { session: session('s1'), utteranceId: 'same' });
    await h.settle();
    h.bus.publish(entry({ session: session('s2'), utterance_id: 'same' }, []));
    await h.settle();
    const handled = only(handledOf(h, 'same'));
    expect(handled.data).toEqual({ error: 'utterances_invalid' });
    expect(handled.context['session']).toEqual(session('s2'));
  });

  it('SESSION-1 §2.5 + PIPELINE-1 §6: a malformed carrier naming an utterance_id nobody has in flight gets its handled while another utterance is in flight', async () => {
    const h = await withSilentSkill();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.settle();
    h.bus.publish(entry({ session: 'x', utterance_id: 'other' }));
    await h.settle();
    expect(only(handledOf(h, 'other')).data).toEqual({ error: 'malformed_carrier' });
    expect(handledOf(h, 'u1')).toEqual([]);
  });

  it('SESSION-1 §2.5 + PIPELINE-1 §6: Orchestrator.handle with a malformed carrier is dropped (warn "message dropped", malformed_carrier) and answered with handled {error} when it names an utterance_id', async () => {
    const h = createHarness(CONFIG);
    await h.settle();
    expect(h.system.orchestrator.handle(entry({ session: 'x', utterance_id: 'bad' }), ['hello'])).toBeNull();
    await h.settle();
    const handled = only(handledOf(h, 'bad'));
    expect(handled.data).toEqual({ error: 'malformed_carrier' });
    expect('session' in handled.context).toBe(false);
    expect(only(withReason(h, 'malformed_carrier'))).toMatchObject({ level: 40, msg: 'message dropped', type: 'ovos.utterance.handle' });
  });

  it('SESSION-1 §2.5: Orchestrator.handle with a malformed carrier and no utterance_id publishes nothing — and the bus keeps delivering', async () => {
    const h = createHarness(CONFIG);
    await h.settle();
    expect(h.system.orchestrator.handle(entry({ session: ['s1'] }), ['hello'])).toBeNull();
    await h.settle();
    expect(h.wire).toEqual([]);
    expect(only(withReason(h, 'malformed_carrier'))).toMatchObject({ level: 40, type: 'ovos.utterance.handle' });
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.settle();
    expect(handledOf(h, 'u1')).toHaveLength(1);
  });

  it('Orchestrator.handle of an utterance_id already in flight in the session returns null, logged as a drop (warn "message dropped", duplicate_utterance_id)', async () => {
    const h = await withSilentSkill();
    h.utter('hello', { session: session('s1'), utteranceId: 'dup' });
    await h.settle();
    expect(h.system.orchestrator.handle(entry({ session: session('s1'), utterance_id: 'dup' }), ['hello'])).toBeNull();
    expect(only(withReason(h, 'duplicate_utterance_id'))).toMatchObject({ level: 40, msg: 'message dropped', session_id: 's1', utterance_id: 'dup' });
  });
});

describe('messages naming no live utterance change nothing and cost no error', () => {
  it('FALLBACK-1 §6.2: a willing pong arriving over a skill\'s connection after its utterance ended is dropped quietly — no dispatch, no error', async () => {
    const h = createHarness(CONFIG);
    skillOn(h, 'x', 10, 'c1', { willing: () => 'silent' });
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(PING_TIMEOUT_MS);
    expect(handledOf(h, 'u1')).toHaveLength(1);
    h.bus.publish(reply(only(h.of('x.fallback.ping')), 'x.fallback.pong', { skill_id: 'x', can_handle: true }), 'c1');
    await h.settle();
    expect(withReason(h, 'finished_contest').map((l) => l['type'])).toEqual(['x.fallback.pong']);
    expect(h.of('x:fallback')).toEqual([]);
    expect(errors(h)).toEqual([]);
  });

  it('PIPELINE-1 §6: a skill\'s ovos.utterance.handled for an utterance not in flight changes nothing and costs no error', async () => {
    const h = createHarness(CONFIG);
    await h.settle();
    h.bus.publish(createMessage('ovos.utterance.handled', {}, { session: session('s1'), utterance_id: 'nobody' }), 'c1');
    await h.settle();
    expect(h.wire.map((m) => m.type)).toEqual(['ovos.utterance.handled']);
    expect(withReason(h, 'handled_by_skill')).toEqual([]);
    expect(errors(h)).toEqual([]);
  });

  it('PIPELINE-1 §10: an introspection request for a pipeline this daemon does not run is left to others — no response, no error', async () => {
    const h = createHarness(CONFIG);
    await h.settle();
    h.bus.publish(createMessage('ovos.pipeline.nobody_here.intents.list', {}, { session: session('default') }));
    await h.settle();
    expect(h.wire.map((m) => m.type)).toEqual(['ovos.pipeline.nobody_here.intents.list']);
    expect(errors(h)).toEqual([]);
  });
});

describe('OVOS-PIPELINE-1 §8: the handler is awaited on the connection of the instance that said yes', () => {
  it('PIPELINE-1 §8: two instances of a skill_id answer one ping (yes over c1, then no over c2): c1 closing ends the handler at once', async () => {
    const h = createHarness(CONFIG);
    skillOn(h, 'x', 10, 'c1', { willing: () => 'silent' });
    h.bus.subscribe((m) => {
      if (m.type !== 'x.fallback.ping') return;
      h.bus.publish(reply(m, 'x.fallback.pong', { skill_id: 'x', can_handle: true }), 'c1');
      h.bus.publish(reply(m, 'x.fallback.pong', { skill_id: 'x', can_handle: false }), 'c2');
    });
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.settle();
    expect(h.of('x:fallback')).toHaveLength(1);
    h.bus.closeConnection('c1');
    await h.settle();
    expect(lifecycle(h, 'u1').slice(-2)).toEqual(['ovos.intent.handler.error', 'ovos.utterance.handled']);
    expect(String(only(h.of('ovos.intent.handler.error')).data['exception'])).toMatch(/^SkillDisconnected: .*x.*closed/);
  });

  it('PIPELINE-1 §8: the instance that said yes closing between its pong and the dispatch ends the handler at once, though another instance of the skill_id is still connected', async () => {
    const h = createHarness(CONFIG);
    skillOn(h, 'x', 10, 'c1', { registerIn: 's1' });
    skillOn(h, 'x', 10, 'c2', { registerIn: 's2', willing: () => 'silent' });
    h.bus.subscribe((m) => {
      if (m.type === 'x.fallback.pong' && h.bus.connectionOf(m) === 'c1') h.bus.closeConnection('c1');
    });
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.settle();
    expect(h.of('x:fallback')).toHaveLength(1);
    expect(lifecycle(h, 'u1').slice(-2)).toEqual(['ovos.intent.handler.error', 'ovos.utterance.handled']);
    expect(String(only(h.of('ovos.intent.handler.error')).data['exception'])).toMatch(/^SkillDisconnected/);
  });

  it('PIPELINE-1 §8: an utterance_id reused after its lifecycle ended is not ended when the connection of the skill that handled the earlier one closes', async () => {
    const h = createHarness(CONFIG);
    skillOn(h, 'x', 10, 'c1', { willing: (u) => u === 'first', completes: true });
    const y = skillOn(h, 'y', 60, 'c2');
    await h.settle();
    h.utter('first', { session: session('s1'), utteranceId: 'again' });
    await h.settle();
    expect(h.of('x:fallback')).toHaveLength(1);
    expect(handledOf(h, 'again')).toHaveLength(1);
    h.utter('second', { session: session('s1'), utteranceId: 'again' });
    await h.settle();
    expect(y).toHaveLength(1);
    h.bus.closeConnection('c1');
    await h.settle();
    expect(h.of('ovos.intent.handler.error')).toEqual([]);
    expect(handledOf(h, 'again')).toHaveLength(1);
    h.bus.publish(reply(y[0]!, 'mycroft.skill.handler.complete'), 'c2');
    await h.settle();
    expect(lifecycle(h, 'again').slice(-2)).toEqual(['ovos.intent.handler.complete', 'ovos.utterance.handled']);
    expect(handledOf(h, 'again')).toHaveLength(2);
  });

  it('PIPELINE-1 §8: two utterances await one connection; after the first completes, the connection closing still ends the second at once', async () => {
    const h = createHarness(CONFIG);
    const x = skillOn(h, 'x', 10, 'c1');
    await h.settle();
    h.utter('one', { session: session('s1'), utteranceId: 'u1' });
    h.utter('two', { session: session('s2'), utteranceId: 'u2' });
    await h.settle();
    expect(x).toHaveLength(2);
    h.bus.publish(reply(x.find((d) => d.context['utterance_id'] === 'u1')!, 'mycroft.skill.handler.complete'), 'c1');
    await h.settle();
    expect(lifecycle(h, 'u1').slice(-2)).toEqual(['ovos.intent.handler.complete', 'ovos.utterance.handled']);
    h.bus.closeConnection('c1');
    await h.settle();
    expect(lifecycle(h, 'u2').slice(-2)).toEqual(['ovos.intent.handler.error', 'ovos.utterance.handled']);
  });
});

describe('OVOS-PIPELINE-1 §7: the dispatch of an embedder\'s stage', () => {
  const hello = (skillId: string, intent: string, extra: Partial<Match> = {}): Match => ({ skill_id: skillId, intent_name: intent, lang: 'en-US', utterance: 'hello', slots: {}, ...extra });

  it('PIPELINE-1 §7 / §8: a Match naming its own stage, from a stage without an in-process handler, is dispatched on the bus (activation pushed) and its completion awaited', async () => {
    const h = createHarness(withConfig((config) => ({ ...config, pipeline: ['echo'] })));
    ownStage(h, 'echo', hello('echo', 'greet'));
    const dispatched = completingSkill(h, 'echo:greet');
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.settle();
    expect(lifecycle(h, 'u1')).toEqual([
      'ovos.utterance.handle',
      'ovos.intent.matched',
      'echo:greet',
      'ovos.intent.handler.start',
      'mycroft.skill.handler.complete',
      'ovos.intent.handler.complete',
      'ovos.utterance.handled',
    ]);
    expect(only(dispatched).context['session']).toEqual({ session_id: 's1', active_handlers: [{ skill_id: 'echo', activated_at: Math.floor(h.clock.now() / 1000) }] });
  });

  it('PIPELINE-1 §7: a stage whose dispatchFor returns no message gets the spec dispatch', async () => {
    const h = createHarness(withConfig((config) => ({ ...config, pipeline: ['quiet'] })));
    ownStage(h, 'quiet', hello('q.skill', 'ask'), { dispatchFor: () => [] });
    const dispatched = completingSkill(h, 'q.skill:ask');
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.settle();
    expect(only(dispatched).data).toEqual({ lang: 'en-US', utterance: 'hello', slots: {} });
    expect(lifecycle(h, 'u1').slice(-2)).toEqual(['ovos.intent.handler.complete', 'ovos.utterance.handled']);
  });

  it('PIPELINE-1 §7.3: a common_query Match naming its own stage (no updated_session) is dispatched with the utterance\'s session as it came — no activation', async () => {
    const h = createHarness(withConfig((config) => ({ ...config, pipeline: ['myqa'] })));
    ownStage(h, 'myqa', hello('myqa', 'common_query'), { handle: async () => undefined });
    await h.settle();
    const carrier = session('s1', { site_id: 'lab' });
    h.utter('hello', { session: carrier, utteranceId: 'u1' });
    await h.settle();
    expect(only(h.of('myqa:common_query')).context['session']).toEqual(carrier);
    expect(only(handledOf(h, 'u1')).context['session']).toEqual(carrier);
  });

  it('PIPELINE-1 §7: an activating Match\'s updated_session is the session dispatched, with the activation pushed onto it', async () => {
    const h = createHarness(withConfig((config) => ({ ...config, pipeline: ['prefs'] })));
    ownStage(h, 'prefs', hello('p.skill', 'go', { updated_session: session('s1', { mood: 'happy' }) }));
    const dispatched = completingSkill(h, 'p.skill:go');
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.settle();
    expect(only(dispatched).context['session']).toEqual({
      session_id: 's1',
      mood: 'happy',
      active_handlers: [{ skill_id: 'p.skill', activated_at: Math.floor(h.clock.now() / 1000) }],
    });
  });

  it('PIPELINE-1 §7.3: a legacy common-query winner is a skill — its question:action carries the session with it activated (active_handlers)', async () => {
    const h = createHarness(withConfig((config) => ({ ...config, pipeline: ['common_query', ...FALLBACK_STAGES] })));
    const quick = legacyCqSkill(h, 'cq.quick', { answerAfterMs: 20, conf: 0.7 });
    await h.settle();
    h.utter('what is the speed of light', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(6_000);
    const action = only(quick.actions).message;
    expect(action.type).toBe('question:action.cq.quick');
    const carried = action.context['session'] as JsonObject;
    expect(carried['active_handlers']).toEqual([{ skill_id: 'cq.quick', activated_at: expect.any(Number) as number }]);
  });
});

describe('what the orchestrator logs', () => {
  it('PIPELINE-1 §5: unknown pipeline ids are warned about once each, up to 256 distinct ids — beyond that no more', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'a', 10);
    await h.settle();
    const unknown = Array.from({ length: 257 }, (_, i) => `unknown_${i}`);
    h.utter('hello', { session: session('s1', { pipeline: [...unknown, 'fallback_high'] }), utteranceId: 'u1' });
    await h.advance(1);
    expect(withReason(h, 'unknown_pipeline').map((l) => l['pipeline_id'])).toEqual(unknown.slice(0, 256));
    expect(only(h.of('a:fallback')).context['utterance_id']).toBe('u1');
  });

  it('COMMON-QUERY-1 §5: each stage\'s match time is logged ("stage matched") with the utterance\'s contest, the stage, match_ms on the clock and whether it matched', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'slow', 10, { decide: () => 'silent' });
    fallbackSkill(h, 'a', 60);
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(PING_TIMEOUT_MS + 1);
    expect(h.logs.filter((l) => l['msg'] === 'stage matched')).toEqual([
      expect.objectContaining({ session_id: 's1', utterance_id: 'u1', contest: 'utterance/pipeline', stage: 'fallback_high', match_ms: PING_TIMEOUT_MS, matched: false, aborted: false }),
      expect.objectContaining({ session_id: 's1', utterance_id: 'u1', contest: 'utterance/pipeline', stage: 'fallback_medium', match_ms: 0, matched: true, aborted: false }),
    ]);
  });
});
