/**
 * OVOS-PIPELINE-1 §6: exactly one `ovos.utterance.handled` per `ovos.utterance.handle` — on every path, errors
 * included — and §8: a dispatched skill that dies ends its handler at once.
 * Whole system (orchestrator, supervisor, plugins) on a LocalBus whose client connections are played by name, on
 * ManualClock; no sleeps.
 */
import { describe, expect, it } from 'vitest';
import { LocalBus } from '../../src/bus/local-bus.js';
import { createMessage, reply, type JsonObject, type Message } from '../../src/bus/message.js';
import type { Match, PipelineStage } from '../../src/pipeline/plugin.js';
import { createHarness, fallbackSkill, withConfig, type Harness } from '../support/harness.js';
import { SKILL_HANDLED_GRACE_MS, SKILL_HANDLED_READ_MS } from '../../src/orchestrator/orchestrator.js';
import { MAX_PAUSE_MS } from '../../src/bus/fair-share.js';

const FALLBACK_STAGES = ['fallback_high', 'fallback_medium', 'fallback_low'];
const CONFIG = withConfig((config) => ({ ...config, pipeline: FALLBACK_STAGES }));
const HANDLER_TIMEOUT_MS = CONFIG.orchestrator.handlerTimeoutMs;

const session = (id: string): JsonObject => ({ session_id: id });
const withReason = (h: Harness, reason: string): Array<Record<string, unknown>> => h.logs.filter((line) => line['reason'] === reason);

/** The handled messages of one utterance_id. */
const handledOf = (h: Harness, utteranceId: string): Message[] => h.of('ovos.utterance.handled').filter((m) => m.context['utterance_id'] === utteranceId);

/** A willing fallback skill over client connection `connection` whose handler never completes on its own. */
function busySkill(h: Harness, skillId: string, priority: number, connection: string): Message[] {
  const dispatched: Message[] = [];
  h.bus.subscribe((m) => {
    if (m.type === `${skillId}.fallback.ping`) h.bus.publish(reply(m, `${skillId}.fallback.pong`, { skill_id: skillId, can_handle: true }), connection);
    else if (m.type === `${skillId}:fallback`) {
      dispatched.push(m);
    }
  });
  h.bus.publish(createMessage('ovos.fallback.register', { skill_id: skillId, priority }, { skill_id: skillId, session: session('default') }), connection);
  return dispatched;
}

/** A stage of our own returning `result` from match (an embedder's plugin). */
function stage(h: Harness, pipelineId: string, result: () => unknown): void {
  const plugin: PipelineStage = {
    pipelineId,
    match: async () => result() as Match | null,
    intents: () => [],
  };
  h.system.orchestrator.register(plugin);
}

const lifecycle = (h: Harness, utteranceId: string): string[] =>
  h.wire.filter((m) => m.context['utterance_id'] === utteranceId && !m.type.endsWith('.ping') && !m.type.endsWith('.pong')).map((m) => m.type);

describe('OVOS-PIPELINE-1 §8: a dispatched skill whose connection closes ends its handler at once (embedded bus)', () => {
  it('PIPELINE-1 §8 + §6: handler.error (skill disconnected) then exactly one handled, the moment the connection closes — not after the handler timeout', async () => {
    const h = createHarness(CONFIG);
    const dispatched = busySkill(h, 'dying', 10, 'c1');
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(5);
    expect(dispatched).toHaveLength(1);
    expect(handledOf(h, 'u1')).toEqual([]);

    h.bus.closeConnection('c1');
    await h.settle();
    expect(lifecycle(h, 'u1')).toEqual([
      'ovos.utterance.handle',
      'ovos.intent.matched',
      'dying:fallback',
      'ovos.intent.handler.start',
      'ovos.intent.handler.error',
      'ovos.utterance.handled',
    ]);
    const error = h.of('ovos.intent.handler.error')[0]!;
    expect(error.data).toMatchObject({ skill_id: 'dying', intent_name: 'fallback' });
    expect(String(error.data['exception'])).toMatch(/^SkillDisconnected: .*dying.*closed/);
    expect(h.system.supervisor.size).toBe(0);
    expect(h.clock.pending).toBe(0); // the 30 s handler timer is gone with it

    await h.advance(HANDLER_TIMEOUT_MS + 1);
    expect(handledOf(h, 'u1')).toHaveLength(1);
    expect(h.of('ovos.intent.handler.error')).toHaveLength(1);
  });

  it('PIPELINE-1 §8: a skill whose connection closed between its willing pong and the dispatch is ended too (no 30 s wait)', async () => {
    const h = createHarness(CONFIG);
    // The pong and the close are on the bus back to back: the close is seen before the dispatch goes out.
    busySkill(h, 'racer', 10, 'c1');
    h.bus.subscribe((m) => {
      if (m.type === 'racer.fallback.pong') h.bus.closeConnection('c1');
    });
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(1);
    expect(lifecycle(h, 'u1').slice(-2)).toEqual(['ovos.intent.handler.error', 'ovos.utterance.handled']);
    expect(handledOf(h, 'u1')).toHaveLength(1);
  });

  it('PIPELINE-1 §8: another connection closing, or the skill\'s old connection after it reconnected, changes nothing', async () => {
    const h = createHarness(CONFIG);
    // The skill registered over 'old', then reconnected: it speaks over 'new' now.
    h.bus.publish(createMessage('ovos.fallback.register', { skill_id: 'worker', priority: 10 }, { skill_id: 'worker', session: session('default') }), 'old');
    busySkill(h, 'worker', 10, 'new');
    const bystander = busySkill(h, 'bystander', 50, 'other');
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(1);
    const dispatch = h.of('worker:fallback')[0]!;
    h.bus.closeConnection('old');
    h.bus.closeConnection('other');
    await h.settle();
    expect(h.of('ovos.intent.handler.error')).toEqual([]);
    expect(handledOf(h, 'u1')).toEqual([]);
    expect(bystander).toEqual([]);

    h.bus.publish(reply(dispatch, 'mycroft.skill.handler.complete'), 'new');
    await h.settle();
    expect(lifecycle(h, 'u1').slice(-2)).toEqual(['ovos.intent.handler.complete', 'ovos.utterance.handled']);
    expect(handledOf(h, 'u1')).toHaveLength(1);
  });

  it('PIPELINE-1 §8: two utterances (two sessions) awaiting the same skill both end when it dies; each gets one handled', async () => {
    const h = createHarness(CONFIG);
    busySkill(h, 'shared', 10, 'c1');
    await h.settle();
    h.utter('one', { session: session('s1'), utteranceId: 'u1' });
    h.utter('two', { session: session('s2'), utteranceId: 'u2' });
    await h.advance(1);
    expect(h.of('shared:fallback')).toHaveLength(2);
    h.bus.closeConnection('c1');
    await h.settle();
    expect(handledOf(h, 'u1')).toHaveLength(1);
    expect(handledOf(h, 'u2')).toHaveLength(1);
    expect(h.of('ovos.intent.handler.error')).toHaveLength(2);
  });
});

describe('OVOS-PIPELINE-1 §6: exactly one handled on every path', () => {
  for (const [label, updated] of [
    ['null', null],
    ['a string', 'x'],
    ['a list', ['s1']],
  ] as const) {
    it(`PIPELINE-1 §4.1 + §6: a Match whose updated_session is ${label} is a malformed Match (a decline): the next stage runs, one handled`, async () => {
      const h = createHarness(withConfig((config) => ({ ...config, pipeline: ['broken', 'fallback_low'] })));
      stage(h, 'broken', () => ({ skill_id: 'b', intent_name: 'x', lang: 'en-US', utterance: 'hello', slots: {}, updated_session: updated }));
      fallbackSkill(h, 'catchall', 95);
      await h.settle();
      h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
      await h.advance(1);
      expect(withReason(h, 'malformed_match')).toHaveLength(1);
      expect(h.of('catchall:fallback')).toHaveLength(1);
      expect(h.of('b:x')).toEqual([]);
      expect(handledOf(h, 'u1')).toHaveLength(1);
      expect(handledOf(h, 'u1')[0]!.data).toEqual({});
    });
  }

  it('PIPELINE-1 §6: a stage whose Match blows up the utterance actor (a throwing getter) still ends with one handled {error: utterance_error}', async () => {
    const h = createHarness(withConfig((config) => ({ ...config, pipeline: ['evil'] })));
    stage(h, 'evil', () => ({
      skill_id: 'e',
      intent_name: 'x',
      lang: 'en-US',
      utterance: 'hello',
      get slots(): Record<string, string> {
        throw new Error('getter exploded');
      },
    }));
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(1);
    const handled = handledOf(h, 'u1');
    expect(handled).toHaveLength(1);
    expect(handled[0]!.data).toEqual({ error: 'utterance_error' });
    expect(h.system.supervisor.size).toBe(0);
    // The next utterance is not affected.
    stage(h, 'evil', () => null);
    h.utter('again', { session: session('s1'), utteranceId: 'u2' });
    await h.advance(1);
    expect(lifecycle(h, 'u2')).toEqual(['ovos.utterance.handle', 'ovos.intent.unmatched', 'mycroft.audio.play_sound', 'complete_intent_failure', 'ovos.utterance.handled']);
  });

  it('PIPELINE-1 §6: contests stopped (bus down) mid-match and mid-handler each end with one handled carrying the reason', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'silent', 5, { decide: () => 'silent' });
    busySkill(h, 'busy', 10, 'c9');
    await h.settle();
    h.utter('hello', { session: session('matching'), utteranceId: 'u1' }); // 'busy' is asked after 'silent' times out
    await h.advance(1);
    expect(handledOf(h, 'u1')).toEqual([]);
    h.system.supervisor.stopAll('bus_down:test');
    await h.settle();
    const handled = handledOf(h, 'u1');
    expect(handled).toHaveLength(1);
    expect(handled[0]!.data).toEqual({ error: 'bus_down:test' });
    expect(handled[0]!.context['session']).toMatchObject({ session_id: 'matching' });

    const h2 = createHarness(CONFIG);
    busySkill(h2, 'busy', 10, 'c9');
    await h2.settle();
    h2.utter('hello', { session: session('handling'), utteranceId: 'u2' });
    await h2.advance(1);
    expect(h2.of('busy:fallback')).toHaveLength(1);
    h2.system.supervisor.stopAll('bus_down:test');
    await h2.advance(HANDLER_TIMEOUT_MS + 1);
    expect(handledOf(h2, 'u2').map((m) => m.data)).toEqual([{ error: 'bus_down:test' }]);
  });

  for (const [label, data] of [
    ['utterances: []', { utterances: [] }],
    ['utterances: [""]', { utterances: [''] }],
    ['utterances: ["  ", 3]', { utterances: ['  ', 3] }],
    ['no utterances', {}],
    ['utterances: "hello"', { utterances: 'hello' }],
  ] as const) {
    it(`PIPELINE-1 §4 + §6: an entry with ${label} ends at once with handled {error: utterances_invalid}, in its session`, async () => {
      const h = createHarness(CONFIG);
      fallbackSkill(h, 'a', 10);
      await h.settle();
      h.bus.publish(createMessage('ovos.utterance.handle', data as JsonObject, { session: session('s1'), utterance_id: 'bad' }));
      await h.settle();
      const handled = handledOf(h, 'bad');
      expect(handled).toHaveLength(1);
      expect(handled[0]!.data).toEqual({ error: 'utterances_invalid' });
      expect(handled[0]!.context['session']).toEqual(session('s1'));
      expect(withReason(h, 'utterances_invalid')).toHaveLength(1);
      expect(h.of('a.fallback.ping')).toEqual([]);
    });
  }

  it('PIPELINE-1 §4: a mixed list keeps its good entries (warned utterances_filtered) and is handled normally', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'a', 10);
    await h.settle();
    h.bus.publish(createMessage('ovos.utterance.handle', { utterances: ['', 'hello', 3, null] }, { session: session('s1'), utterance_id: 'mixed' }));
    await h.advance(1);
    expect(h.of('a.fallback.ping')[0]!.data['utterances']).toEqual(['hello']);
    expect(handledOf(h, 'mixed').map((m) => m.data)).toEqual([{}]);
    expect(withReason(h, 'utterances_filtered')).toEqual([expect.objectContaining({ level: 40, dropped: 3, kept: 1, utterance_id: 'mixed' })]);
  });

  it('SESSION-1 §2.5 + PIPELINE-1 §6: a malformed carrier with an utterance_id gets session.rejected, then handled {error: malformed_carrier} without the session', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'a', 10);
    await h.settle();
    h.bus.publish(createMessage('ovos.utterance.handle', { utterances: ['hello'] }, { session: 'x', utterance_id: 'bad-carrier' }));
    await h.settle();
    expect(h.wire.filter((m) => m.context['utterance_id'] === 'bad-carrier').map((m) => m.type)).toEqual([
      'ovos.utterance.handle',
      'ovos.session.rejected',
      'ovos.utterance.handled',
    ]);
    const handled = handledOf(h, 'bad-carrier')[0]!;
    expect(handled.data).toEqual({ error: 'malformed_carrier' });
    expect('session' in handled.context).toBe(false);
    expect(h.of('a.fallback.ping')).toEqual([]);
  });

  it('PIPELINE-1 §6: a duplicate utterance_id in flight is dropped without a second handled; the first gets exactly one', async () => {
    const h = createHarness(CONFIG);
    busySkill(h, 'slow', 10, 'c1');
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'dup' });
    await h.advance(1);
    h.utter('hello again', { session: session('s1'), utteranceId: 'dup' });
    await h.settle();
    expect(withReason(h, 'duplicate_utterance_id')).toHaveLength(1);
    expect(handledOf(h, 'dup')).toEqual([]);
    h.bus.publish(reply(h.of('slow:fallback')[0]!, 'mycroft.skill.handler.complete'), 'c1');
    await h.settle();
    expect(handledOf(h, 'dup')).toHaveLength(1);
  });
});

describe('OVOS-PIPELINE-1 §5: unknown pipeline ids are skipped with a warning', () => {
  it('PIPELINE-1 §5: an unknown id in config or session is warned once per id, not per utterance, and the utterance still runs', async () => {
    const h = createHarness(withConfig((config) => ({ ...config, pipeline: ['no_such_stage', ...FALLBACK_STAGES] })));
    fallbackSkill(h, 'a', 10);
    await h.settle();
    for (const id of ['u1', 'u2']) {
      h.utter('hello', { session: session('s1'), utteranceId: id });
      await h.advance(1);
    }
    // A real OVOS session names stages we do not run: each is warned about once.
    const ovosSession = { session_id: 's2', pipeline: ['ovos-stop-pipeline-plugin-high', 'ovos-padatious-pipeline-plugin-high', 'fallback_high'] };
    h.utter('hello', { session: ovosSession, utteranceId: 'u3' });
    await h.advance(1);
    await h.advance(60_000);
    h.utter('hello', { session: ovosSession, utteranceId: 'u4' });
    await h.advance(1);
    expect(withReason(h, 'unknown_pipeline')).toEqual([
      expect.objectContaining({ level: 40, pipeline_id: 'no_such_stage', source: 'config' }),
      expect.objectContaining({ level: 40, pipeline_id: 'ovos-stop-pipeline-plugin-high', source: 'session' }),
      expect.objectContaining({ level: 40, pipeline_id: 'ovos-padatious-pipeline-plugin-high', source: 'session' }),
    ]);
    expect(h.of('a:fallback')).toHaveLength(4);
    expect(h.of('ovos.utterance.handled')).toHaveLength(4);
  });
});

describe('OVOS-PIPELINE-1 §6: plugins and duplicates never cost an utterance its one handled', () => {
  it('PIPELINE-1 §6: a stage whose onUtterance or onHandled hook throws is logged; the utterance still ends with exactly one handled', async () => {
    const h = createHarness(withConfig((config) => ({ ...config, pipeline: ['noisy', ...FALLBACK_STAGES] })));
    h.system.orchestrator.register({
      pipelineId: 'noisy',
      match: async () => null,
      intents: () => [],
      onUtterance: () => {
        throw new Error('onUtterance exploded');
      },
      onHandled: () => {
        throw new Error('onHandled exploded');
      },
    });
    fallbackSkill(h, 'a', 10);
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(1);
    expect(handledOf(h, 'u1')).toHaveLength(1);
    expect(h.of('a:fallback')).toHaveLength(1);
    expect(withReason(h, 'plugin_hook_threw').map((l) => l['hook'])).toEqual(['onUtterance', 'onHandled']);
  });

  it('PIPELINE-1 §6: an invalid entry reusing the utterance_id of one in flight gets no handled of its own; the one in flight gets exactly one', async () => {
    const h = createHarness(CONFIG);
    busySkill(h, 'slow', 10, 'c1');
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'dup' });
    await h.advance(1);
    h.bus.publish(createMessage('ovos.utterance.handle', { utterances: [] }, { session: session('s1'), utterance_id: 'dup' }));
    await h.settle();
    expect(withReason(h, 'utterances_invalid')).toHaveLength(1);
    expect(handledOf(h, 'dup')).toEqual([]);
    h.bus.publish(reply(h.of('slow:fallback')[0]!, 'mycroft.skill.handler.complete'), 'c1');
    await h.settle();
    expect(handledOf(h, 'dup').map((m) => m.data)).toEqual([{}]);
  });

  it('SESSION-1 §2.5 + PIPELINE-1 §6: an entry with a malformed carrier reusing an utterance_id in flight gets no handled of its own', async () => {
    const h = createHarness(CONFIG);
    busySkill(h, 'slow', 10, 'c1');
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'dup' });
    await h.advance(1);
    h.bus.publish(createMessage('ovos.utterance.handle', { utterances: ['hello'] }, { session: 'garbage', utterance_id: 'dup' }));
    await h.settle();
    expect(h.of('ovos.session.rejected')).toHaveLength(1);
    expect(handledOf(h, 'dup')).toEqual([]);
    h.bus.publish(reply(h.of('slow:fallback')[0]!, 'mycroft.skill.handler.complete'), 'c1');
    await h.settle();
    expect(handledOf(h, 'dup').map((m) => m.data)).toEqual([{}]);
  });

  it('COMMON-QUERY-1 §5 + PIPELINE-1 §4: early start gets the filtered candidates (a blank first entry does not hide the question from the gate)', async () => {
    const h = createHarness(); // default pipeline: fallback_high, common_query, …
    await h.settle();
    h.bus.publish(createMessage('ovos.utterance.handle', { utterances: ['', 'who wrote hamlet'] }, { session: session('s1'), utterance_id: 'u1' }));
    await h.settle();
    // The contest started at entry (early start), for the real question.
    expect(h.of('ovos.common_query.ping').map((m) => m.data['utterance'])).toEqual(['who wrote hamlet']);
  });
});

describe('OVOS-FALLBACK-1 §3.4 / PIPELINE-1 §8: the same skill_id over two connections is two instances', () => {
  it('FALLBACK-1 §6.1: one instance\'s connection closing does not pass over the other instance in another session\'s contest', async () => {
    const h = createHarness(CONFIG);
    // skill-x registered in s1 over A, and in s2 over B (the §3.4 session-scoped case); B answers its pings late.
    const pings: Message[] = [];
    h.bus.subscribe((m) => {
      if (m.type === 'x.fallback.ping') pings.push(m);
      else if (m.type === 'x:fallback') h.bus.publish(reply(m, 'mycroft.skill.handler.complete'), 'B');
    });
    h.bus.publish(createMessage('ovos.fallback.register', { skill_id: 'x', priority: 10 }, { skill_id: 'x', session: session('s2') }), 'B');
    h.bus.publish(createMessage('ovos.fallback.register', { skill_id: 'x', priority: 10 }, { skill_id: 'x', session: session('s1') }), 'A');
    await h.settle();
    h.utter('hello', { session: session('s2'), utteranceId: 'u2' });
    await h.advance(10);
    expect(pings).toHaveLength(1);
    h.bus.closeConnection('A');
    await h.settle();
    expect(handledOf(h, 'u2')).toEqual([]); // still waiting for B's instance
    h.bus.publish(reply(pings[0]!, 'x.fallback.pong', { skill_id: 'x', can_handle: true }), 'B');
    await h.settle();
    expect(h.of('x:fallback')).toHaveLength(1);
    expect(lifecycle(h, 'u2').slice(-2)).toEqual(['ovos.intent.handler.complete', 'ovos.utterance.handled']);
  });

  it('PIPELINE-1 §8: a handler dispatched to the instance on B is not ended when the instance on A goes away', async () => {
    const h = createHarness(CONFIG);
    h.bus.subscribe((m) => {
      if (m.type === 'x.fallback.ping') h.bus.publish(reply(m, 'x.fallback.pong', { skill_id: 'x', can_handle: true }), 'B');
    });
    h.bus.publish(createMessage('ovos.fallback.register', { skill_id: 'x', priority: 10 }, { skill_id: 'x', session: session('s2') }), 'B');
    await h.settle();
    h.utter('hello', { session: session('s2'), utteranceId: 'u2' });
    await h.advance(1);
    expect(h.of('x:fallback')).toHaveLength(1);
    // The instance on A speaks last (it registers for s1), then its connection closes.
    h.bus.publish(createMessage('ovos.fallback.register', { skill_id: 'x', priority: 10 }, { skill_id: 'x', session: session('s1') }), 'A');
    await h.settle();
    h.bus.closeConnection('A');
    await h.settle();
    expect(h.of('ovos.intent.handler.error')).toEqual([]);
    expect(handledOf(h, 'u2')).toEqual([]);
    h.bus.closeConnection('B');
    await h.settle();
    expect(lifecycle(h, 'u2').slice(-2)).toEqual(['ovos.intent.handler.error', 'ovos.utterance.handled']);
  });
});

describe('OVOS-PIPELINE-1 §8 / COMMON-QUERY-1 §7.2: instances of one skill_id on two connections, asked at once', () => {
  it('PIPELINE-1 §8: each session\'s handler ends when the connection of the instance it was dispatched to closes — not the other\'s', async () => {
    const h = createHarness(CONFIG);
    // X registered for s1 over c1 and for s2 over c2; each instance answers its own session's pings.
    for (const [conn, sid] of [['c1', 's1'], ['c2', 's2']] as const) {
      h.bus.subscribe((m) => {
        if (m.type === 'x.fallback.ping' && (m.context['session'] as JsonObject)['session_id'] === sid) {
          h.bus.publish(reply(m, 'x.fallback.pong', { skill_id: 'x', can_handle: true }), conn);
        }
      });
      h.bus.publish(createMessage('ovos.fallback.register', { skill_id: 'x', priority: 10 }, { skill_id: 'x', session: session(sid) }), conn);
    }
    await h.settle();
    h.utter('one', { session: session('s1'), utteranceId: 'u1' });
    h.utter('two', { session: session('s2'), utteranceId: 'u2' });
    await h.advance(1);
    expect(h.of('x:fallback')).toHaveLength(2);

    h.bus.closeConnection('c1');
    await h.settle();
    expect(lifecycle(h, 'u1').slice(-2)).toEqual(['ovos.intent.handler.error', 'ovos.utterance.handled']);
    expect(handledOf(h, 'u2')).toEqual([]);

    h.bus.closeConnection('c2');
    await h.settle();
    expect(lifecycle(h, 'u2').slice(-2)).toEqual(['ovos.intent.handler.error', 'ovos.utterance.handled']);
  });

  it('COMMON-QUERY-1 §7.2: another instance\'s connection closing does not cost a claimant\'s answer', async () => {
    const h = createHarness(withConfig((config) => ({ ...config, pipeline: ['common_query', 'fallback_low'] })));
    fallbackSkill(h, 'catchall', 95);
    // Instance on c1 claims and answers 300 ms after the request; the instance on c2 pongs (declines), then dies.
    h.bus.subscribe((m) => {
      const utterance = String(m.data['utterance']);
      if (m.type === 'ovos.common_query.ping') {
        h.bus.publish(reply(m, 'ovos.common_query.pong', { utterance, skill_id: 'x', can_answer: true, latency_ms: 20 }), 'c1');
        h.bus.publish(reply(m, 'ovos.common_query.pong', { utterance, skill_id: 'x', can_answer: false }), 'c2');
      } else if (m.type === 'x:common_query') {
        h.clock.setTimeout(() => h.bus.publish(reply(m, 'x.common_query.response', { utterance, skill_id: 'x', answer: 'Paris.', conf: 0.8 }), 'c1'), 300);
      }
    });
    await h.settle();
    h.utter('what is the capital of france', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(130);
    expect(h.of('x:common_query')).toHaveLength(1);
    h.bus.closeConnection('c2');
    await h.advance(400);
    expect(h.of('ovos.utterance.speak').map((m) => m.data['utterance'])).toEqual(['Paris.']);
    expect(h.system.commonQuery.roster().map((r) => r.skill_id)).toEqual(['x']);
    h.bus.closeConnection('c1');
    await h.settle();
    expect(h.system.commonQuery.roster()).toEqual([]);
  });
});

describe('OVOS-PIPELINE-1 §6 with legacy fallback skills (ovos-wire-today): exactly one handled, whoever sends it', () => {
  /** A FallbackSkill (ovos-workshop): broadcast ping → pong; request → .start, .response {result}, then maybe its handled. */
  function legacySkill(h: Harness, skillId: string, priority: number, sendsHandled: boolean): void {
    h.bus.subscribe((m) => {
      if (m.type === 'ovos.skills.fallback.ping') h.bus.publish(reply(m, 'ovos.skills.fallback.pong', { skill_id: skillId, can_handle: true }), 'legacy');
      else if (m.type === `ovos.skills.fallback.${skillId}.request`) {
        h.bus.publish({ ...m, type: `ovos.skills.fallback.${skillId}.start`, data: {} }, 'legacy');
        h.bus.publish({ ...m, type: `ovos.skills.fallback.${skillId}.response`, data: { result: true, fallback_handler: 'X.handle_fallback' } }, 'legacy');
        if (sendsHandled) h.bus.publish({ ...m, type: 'ovos.utterance.handled', data: {} }, 'legacy');
      }
    });
    h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: skillId, priority }, { session: session('default') }), 'legacy');
  }

  it(`PIPELINE-1 §6: the skill's own handled ends the utterance; ours is never sent`, async () => {
    const h = createHarness(CONFIG);
    legacySkill(h, 'legacy.fb', 30, true);
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(SKILL_HANDLED_GRACE_MS + 10);
    expect(handledOf(h, 'u1')).toHaveLength(1);
    expect(h.of('ovos.intent.handler.complete')).toHaveLength(1);
    expect(withReason(h, 'handled_by_skill')).toHaveLength(1);
    expect(h.clock.pending).toBe(0);
  });

  it('PIPELINE-1 §6: a busy skill paused by the bus\'s fair share between its .response and its handled (the longest pause, and half a second of a loaded daemon) still ends the utterance itself: one handled, its own, nothing learnt', async () => {
    const h = createHarness(CONFIG);
    h.bus.subscribe((m) => {
      if (m.type === 'ovos.skills.fallback.ping') h.bus.publish(reply(m, 'ovos.skills.fallback.pong', { skill_id: 'busy.fb', can_handle: true }), 'legacy');
      else if (m.type === 'ovos.skills.fallback.busy.fb.request') {
        h.bus.publish({ ...m, type: 'ovos.skills.fallback.busy.fb.response', data: { result: true, fallback_handler: 'X.handle_fallback' } }, 'legacy');
        h.clock.setTimeout(() => h.bus.publish({ ...m, type: 'ovos.utterance.handled', data: {} }, 'legacy'), MAX_PAUSE_MS + 500);
      }
    });
    h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: 'busy.fb', priority: 30 }, { session: session('default') }), 'legacy');
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(SKILL_HANDLED_GRACE_MS + 10);
    expect(handledOf(h, 'u1')).toHaveLength(1);
    expect(withReason(h, 'handled_by_skill')).toHaveLength(1);
    expect(withReason(h, 'skill_leaves_handled')).toEqual([]);
  });

  it.each([
    [SKILL_HANDLED_GRACE_MS - 1, 0],
    [SKILL_HANDLED_GRACE_MS, 1],
  ])('PIPELINE-1 §6: a legacy skill that answers its handler but never sends the handled: %i ms after its .response → %i handled (ours)', async (after, count) => {
    const h = createHarness(CONFIG);
    legacySkill(h, 'legacy.fb', 30, false);
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.settle();
    expect(h.of('ovos.intent.handler.complete')).toHaveLength(1);
    await h.advance(after);
    expect(handledOf(h, 'u1')).toHaveLength(count);
  });
});

describe('ovos-wire-today: legacy fallback pongs are correlated per contest (ovos-core #806/#808: concurrent utterances consumed each other\'s pongs)', () => {
  it('OVOS-FALLBACK-1 §6.2 + legacy broadcast: two sessions asking at once each decide on their own pongs — every legacy skill answers every broadcast', async () => {
    const h = createHarness(CONFIG);
    // Two ovos-workshop skills on one bus client: A (10) is willing only in s2, B (20) always.
    const willing: Record<string, (sessionId: string) => boolean> = { 'legacy.a': (sid) => sid === 's2', 'legacy.b': () => true };
    h.bus.subscribe((m) => {
      const sid = String((m.context['session'] as JsonObject)['session_id']);
      if (m.type === 'ovos.skills.fallback.ping') {
        for (const [skillId, decide] of Object.entries(willing)) h.bus.publish(reply(m, 'ovos.skills.fallback.pong', { skill_id: skillId, can_handle: decide(sid) }), 'shared');
      } else if (m.type.startsWith('ovos.skills.fallback.') && m.type.endsWith('.request')) {
        h.bus.publish({ ...m, type: m.type.replace(/\.request$/, '.response'), data: { result: true } }, 'shared');
        h.bus.publish({ ...m, type: 'ovos.utterance.handled', data: {} }, 'shared');
      }
    });
    for (const [skillId, priority] of [['legacy.a', 10], ['legacy.b', 20]] as const) {
      h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: skillId, priority }, { session: session('default') }), 'shared');
    }
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    h.utter('hello', { session: session('s2'), utteranceId: 'u2' });
    await h.advance(SKILL_HANDLED_GRACE_MS + 10);
    const winner = (utteranceId: string): unknown => h.of('ovos.intent.matched').find((m) => m.context['utterance_id'] === utteranceId)?.data['skill_id'];
    expect(winner('u1')).toBe('legacy.b');
    expect(winner('u2')).toBe('legacy.a');
    expect(h.of('ovos.skills.fallback.ping')).toHaveLength(2);
    expect(handledOf(h, 'u1')).toHaveLength(1);
    expect(handledOf(h, 'u2')).toHaveLength(1);
    expect(withReason(h, 'ambiguous_correlation')).toEqual([]);
  });
});

describe('ovos-wire-today: legacy fallback edges (review of the legacy slice)', () => {
  /** An ovos-workshop-like skill with scripted behaviour at its request. */
  function scripted(h: Harness, skillId: string, priority: number, onRequest: (request: Message) => void, canHandle = true): void {
    h.bus.subscribe((m) => {
      if (m.type === 'ovos.skills.fallback.ping') h.bus.publish(reply(m, 'ovos.skills.fallback.pong', { skill_id: skillId, can_handle: canHandle }), 'legacy');
      else if (m.type === `ovos.skills.fallback.${skillId}.request`) onRequest(m);
    });
    h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: skillId, priority }, { session: session('default') }), 'legacy');
  }
  const send = (h: Harness, request: Message, type: string, data: JsonObject = {}): void => h.bus.publish({ ...request, type, data }, 'legacy');

  it('PIPELINE-1 §6: result false (ovos-workshop then sends no handled) → our handled at once, not after the grace', async () => {
    const h = createHarness(CONFIG);
    scripted(h, 'lx', 30, (r) => send(h, r, 'ovos.skills.fallback.lx.response', { result: false }));
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.settle();
    expect(lifecycle(h, 'u1').slice(-2)).toEqual(['ovos.intent.handler.error', 'ovos.utterance.handled']);
  });

  it('PIPELINE-1 §6: the skill\'s handled before its .response is the one; ours is never sent', async () => {
    const h = createHarness(CONFIG);
    scripted(h, 'lx', 30, (r) => {
      send(h, r, 'ovos.utterance.handled');
      send(h, r, 'ovos.skills.fallback.lx.response', { result: true });
    });
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(SKILL_HANDLED_GRACE_MS + 10);
    expect(handledOf(h, 'u1')).toHaveLength(1);
  });

  it('PIPELINE-1 §8 + ovos-core: a legacy handler past its timeout is told ovos.skills.fallback.force_timeout, then our handled', async () => {
    const h = createHarness(CONFIG);
    scripted(h, 'lx', 30, () => undefined);
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(HANDLER_TIMEOUT_MS + 1);
    expect(lifecycle(h, 'u1').slice(-3)).toEqual(['ovos.intent.handler.error', 'ovos.skills.fallback.force_timeout', 'ovos.utterance.handled']);
    expect(h.of('ovos.skills.fallback.force_timeout')[0]!.data).toEqual({ skill_id: 'lx' });
  });

  it('system.close() leaves no handled waiting on a skill (no timer, nothing published after close)', async () => {
    const h = createHarness(CONFIG);
    scripted(h, 'lx', 30, (r) => send(h, r, 'ovos.skills.fallback.lx.response', { result: true }));
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.settle();
    expect(h.clock.pending).toBe(1);
    h.system.close();
    expect(h.clock.pending).toBe(0);
  });

  it('FALLBACK-1 §3.1: a legacy registration never takes over a spec skill registered over another connection (legacy_over_spec)', async () => {
    const h = createHarness(CONFIG);
    h.bus.publish(createMessage('ovos.fallback.register', { skill_id: 'spec.x', priority: 10 }, { skill_id: 'spec.x', session: session('default') }), 'c-spec');
    h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: 'spec.x', priority: 90 }, { session: session('default') }), 'c-other');
    await h.settle();
    expect(h.system.fallback.registry.entry('default', 'spec.x')).toMatchObject({ priority: 10, legacy: false });
    expect(withReason(h, 'legacy_over_spec')).toHaveLength(1);
  });

  it('ovos-core #859: a legacy pong with neither contest_id nor utterance_id is taken only by the one contest awaiting that skill; one no contest awaits is dropped (uncorrelated), never counted', async () => {
    const h = createHarness(CONFIG);
    h.bus.subscribe((m) => {
      if (m.type === 'ovos.skills.fallback.ping') h.bus.publish(createMessage('ovos.skills.fallback.pong', { skill_id: 'lx', can_handle: true }, { session: m.context['session'] as JsonObject }), 'legacy');
    });
    h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: 'lx', priority: 30 }, { session: session('default') }), 'legacy');
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(1);
    expect(h.of('ovos.skills.fallback.lx.request')).toHaveLength(1);
    // The same pong again, now that no contest awaits lx: it cannot be told from a stale one.
    h.bus.publish(createMessage('ovos.skills.fallback.pong', { skill_id: 'lx', can_handle: true }, { session: session('s1') }), 'legacy');
    await h.settle();
    expect(withReason(h, 'uncorrelated')).toHaveLength(1);
    expect(h.of('ovos.skills.fallback.lx.request')).toHaveLength(1);
  });

  it('every legacy skill answering every broadcast (three stages, three skills) costs no warn-level line', async () => {
    const h = createHarness(withConfig((config) => ({ ...config, pipeline: FALLBACK_STAGES })));
    for (const [skillId, priority] of [['l.high', 10], ['l.medium', 60], ['l.low', 90]] as const) scripted(h, skillId, priority, () => undefined, false);
    await h.settle();
    for (const id of ['u1', 'u2', 'u3']) {
      h.utter('do a barrel roll', { session: session('s1'), utteranceId: id });
      await h.advance(5);
    }
    expect(h.of('ovos.utterance.handled')).toHaveLength(3);
    expect(h.logs.filter((l) => l['level'] === 40 && l['msg'] === 'message dropped')).toEqual([]);
  });
});

describe('OVOS-PIPELINE-1 §6 with ovos-workshop skills that leave the handled to core (ovos-core ≥ 2.3.0a1 installed): no grace once learnt', () => {
  /** A FallbackSkill on `connection`: request → .start, .response {result: true}, then its handled when `sends()`. */
  function workshopSkill(h: Harness, skillId: string, connection: string, sends: () => boolean): void {
    h.bus.subscribe((m) => {
      if (m.type === 'ovos.skills.fallback.ping') h.bus.publish(reply(m, 'ovos.skills.fallback.pong', { skill_id: skillId, can_handle: true }), connection);
      else if (m.type === `ovos.skills.fallback.${skillId}.request`) {
        h.bus.publish({ ...m, type: `ovos.skills.fallback.${skillId}.response`, data: { result: true, fallback_handler: 'X.handle_fallback' } }, connection);
        if (sends()) h.bus.publish({ ...m, type: 'ovos.utterance.handled', data: {} }, connection);
      }
    });
    h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: skillId, priority: 30 }, { session: session('default') }), connection);
  }
  /** A harness whose `skillId` on `connection` has been learnt silent: asked once (u1), the grace waited out. */
  async function learntSilent(skillId: string, connection: string, sends: () => boolean = () => false): Promise<Harness> {
    const h = createHarness(CONFIG);
    workshopSkill(h, skillId, connection, sends);
    await h.settle();
    await ask(h, 'u1');
    await h.advance(SKILL_HANDLED_GRACE_MS);
    return h;
  }
  /** Asks in session s1 and lets every message settle (no time passes). */
  const ask = async (h: Harness, utteranceId: string): Promise<void> => {
    h.utter('hello', { session: session('s1'), utteranceId });
    await h.settle();
  };

  it('PIPELINE-1 §6: the first utterance waits the grace for the skill\'s handled (skill_leaves_handled); the next ones get ours the moment .response arrives', async () => {
    const h = createHarness(CONFIG);
    workshopSkill(h, 'silent.fb', 'c1', () => false);
    await h.settle();
    await ask(h, 'u1');
    expect(handledOf(h, 'u1')).toEqual([]);
    await h.advance(SKILL_HANDLED_GRACE_MS);
    expect(handledOf(h, 'u1')).toHaveLength(1);
    expect(withReason(h, 'skill_leaves_handled')).toEqual([expect.objectContaining({ skill_id: 'silent.fb', utterance_id: 'u1' })]);

    for (const id of ['u2', 'u3']) {
      await ask(h, id);
      expect(lifecycle(h, id).slice(-2)).toEqual(['ovos.intent.handler.complete', 'ovos.utterance.handled']);
      expect(h.clock.pending).toBe(0); // no grace timer
    }
    await h.advance(SKILL_HANDLED_GRACE_MS + 10);
    expect(h.of('ovos.utterance.handled')).toHaveLength(3);
    expect(withReason(h, 'skill_leaves_handled')).toHaveLength(1);
  });

  it('PIPELINE-1 §6: its other utterances waiting the grace when it is learnt get ours then — one grace in all, not one each', async () => {
    const h = createHarness(CONFIG);
    workshopSkill(h, 'silent.fb', 'c1', () => false);
    await h.settle();
    await ask(h, 'u1');
    await h.advance(400);
    h.utter('hello', { session: session('s2'), utteranceId: 'u2' });
    await h.settle();
    await h.advance(SKILL_HANDLED_GRACE_MS - 400 - 1);
    expect(h.of('ovos.utterance.handled')).toEqual([]);
    await h.advance(1);
    expect(handledOf(h, 'u1')).toHaveLength(1);
    expect(handledOf(h, 'u2')).toHaveLength(1);
    expect(h.clock.pending).toBe(0);
    await h.advance(SKILL_HANDLED_GRACE_MS);
    expect(h.of('ovos.utterance.handled')).toHaveLength(2);
  });

  it('PIPELINE-1 §6: a skill that sends its own handled is never learnt as silent: each utterance ends with its one handled', async () => {
    const h = createHarness(CONFIG);
    workshopSkill(h, 'polite.fb', 'c1', () => true);
    await h.settle();
    for (const id of ['u1', 'u2']) {
      await ask(h, id);
      await h.advance(SKILL_HANDLED_GRACE_MS + 10);
      expect(handledOf(h, id)).toHaveLength(1);
    }
    expect(withReason(h, 'handled_by_skill')).toHaveLength(2);
    expect(withReason(h, 'skill_leaves_handled')).toEqual([]);
  });

  it('PIPELINE-1 §6: what is learnt of one skill is not applied to another on the same connection', async () => {
    const h = await learntSilent('silent.fb', 'c1');
    // The silent skill goes; a polite one on the same connection takes its place.
    h.bus.publish(createMessage('ovos.skills.fallback.deregister', { skill_id: 'silent.fb' }, { session: session('default') }), 'c1');
    workshopSkill(h, 'polite.fb', 'c1', () => true);
    await h.settle();
    await ask(h, 'u2');
    await h.advance(SKILL_HANDLED_GRACE_MS + 10);
    expect(handledOf(h, 'u2')).toHaveLength(1);
    expect(withReason(h, 'handled_by_skill')).toEqual([expect.objectContaining({ utterance_id: 'u2' })]);
  });

  it('PIPELINE-1 §6: what is learnt outlives a reconnect (its bus client reconnecting runs the same ovos-workshop): no grace on the new connection', async () => {
    const h = await learntSilent('flaky.fb', 'c1');
    h.bus.closeConnection('c1');
    await h.settle();
    workshopSkill(h, 'flaky.fb', 'c2', () => false);
    await h.settle();
    await ask(h, 'u2');
    expect(handledOf(h, 'u2')).toHaveLength(1);
    expect(h.clock.pending).toBe(0);
    expect(withReason(h, 'skill_leaves_handled').map((l) => l['utterance_id'])).toEqual(['u1']);
  });

  it('PIPELINE-1 §6: a skill back on a new connection that now sends its own handled costs one doubled handled (warned), then the grace is back', async () => {
    const h = await learntSilent('flaky.fb', 'c1');
    h.bus.closeConnection('c1');
    await h.settle();
    workshopSkill(h, 'flaky.fb', 'c2', () => true);
    await h.settle();
    await ask(h, 'u2');
    expect(handledOf(h, 'u2')).toHaveLength(2);
    expect(withReason(h, 'skill_handled_after_ours')).toEqual([expect.objectContaining({ skill_id: 'flaky.fb', utterance_id: 'u2' })]);
    await ask(h, 'u3');
    await h.advance(SKILL_HANDLED_GRACE_MS + 10);
    expect(handledOf(h, 'u3')).toHaveLength(1);
    expect(withReason(h, 'handled_by_skill')).toEqual([expect.objectContaining({ utterance_id: 'u3' })]);
  });

  it('PIPELINE-1 §6: our own handled, echoed back to us with the skill named in its context, does not unlearn the skill', async () => {
    const h = await learntSilent('silent.fb', 'c1');
    // An utterance whose entry names the skill in its context (a skill that spoke on the user's behalf): our handled
    // for it carries that context.skill_id too.
    h.bus.publish(createMessage('ovos.utterance.handle', { utterances: ['hello'] }, { session: session('s1'), utterance_id: 'u2', skill_id: 'silent.fb' }));
    await h.settle();
    expect(handledOf(h, 'u2')).toHaveLength(1);
    expect(handledOf(h, 'u2')[0]!.context['skill_id']).toBe('silent.fb');
    await ask(h, 'u3');
    expect(handledOf(h, 'u3')).toHaveLength(1);
    expect(withReason(h, 'skill_handled_after_ours')).toEqual([]);
  });

  it('PIPELINE-1 §6: a skill learnt as silent that sends a handled after all is warned once (skill_handled_after_ours) and gets the grace again', async () => {
    let sends = false;
    const h = await learntSilent('fickle.fb', 'c1', () => sends);
    sends = true;
    await ask(h, 'u2'); // ours went at once, then the skill's: the one doubled handled this costs
    expect(handledOf(h, 'u2')).toHaveLength(2);
    expect(withReason(h, 'skill_handled_after_ours')).toEqual([expect.objectContaining({ skill_id: 'fickle.fb', utterance_id: 'u2' })]);
    await ask(h, 'u3');
    await h.advance(SKILL_HANDLED_GRACE_MS + 10);
    expect(handledOf(h, 'u3')).toHaveLength(1);
    expect(withReason(h, 'handled_by_skill')).toEqual([expect.objectContaining({ utterance_id: 'u3' })]);
    expect(withReason(h, 'skill_handled_after_ours')).toHaveLength(1);
    expect(withReason(h, 'skill_handled_after_ours')[0]!['msg']).toBe('a skill that had left the handled to us sent its own: the grace is back for it');
    expect(withReason(h, 'skill_leaves_handled')[0]!['msg']).toBe('the skill sent no ovos.utterance.handled of its own; from now on ours goes out as soon as its handler completes');
  });

  /** A FallbackSkill on `connection`, willing when `willing(utterance)`, doing `onRequest` with each request. */
  function scripted(h: Harness, skillId: string, priority: number, connection: string, willing: (utterance: string) => boolean, onRequest: (request: Message) => void): void {
    h.bus.subscribe((m) => {
      const utterance = String((m.data['utterances'] as unknown[] | undefined)?.[0] ?? '');
      if (m.type === 'ovos.skills.fallback.ping') h.bus.publish(reply(m, 'ovos.skills.fallback.pong', { skill_id: skillId, can_handle: willing(utterance) }), connection);
      else if (m.type === `ovos.skills.fallback.${skillId}.request`) onRequest(m);
    });
    h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: skillId, priority }, { session: session('default') }), connection);
  }
  const respond = (h: Harness, request: Message, skillId: string, connection: string): void =>
    h.bus.publish({ ...request, type: `ovos.skills.fallback.${skillId}.response`, data: { result: true } }, connection);
  const ownHandled = (h: Harness, request: Message, connection: string): void => h.bus.publish({ ...request, type: 'ovos.utterance.handled', data: {} }, connection);

  it('PIPELINE-1 §6: learning one skill sends only its own waiting handleds — another skill\'s, whose own handled is on its way, is not sent early (it would be doubled)', async () => {
    const h = createHarness(CONFIG);
    scripted(h, 'silent.fb', 30, 'c1', () => true, (r) => respond(h, r, 'silent.fb', 'c1'));
    scripted(h, 'slow.fb', 20, 'c2', (u) => u === 'slow please', (r) => {
      respond(h, r, 'slow.fb', 'c2');
      h.clock.setTimeout(() => ownHandled(h, r, 'c2'), 500);
    });
    await h.settle();
    await ask(h, 'u1'); // silent.fb, at 0: its grace ends at G (SKILL_HANDLED_GRACE_MS)
    await h.advance(SKILL_HANDLED_GRACE_MS - 200);
    h.utter('slow please', { session: session('s2'), utteranceId: 'u2' }); // slow.fb, at G − 200: its handled at G + 300
    await h.settle();
    await h.advance(200);
    expect(handledOf(h, 'u1')).toHaveLength(1);
    expect(handledOf(h, 'u2')).toEqual([]);
    await h.advance(SKILL_HANDLED_GRACE_MS);
    expect(handledOf(h, 'u2')).toHaveLength(1);
    expect(withReason(h, 'handled_by_skill')).toEqual([expect.objectContaining({ utterance_id: 'u2' })]);
  });

  it('PIPELINE-1 §6: a stray handled naming a skill never learnt, for an utterance that has ended, changes nothing and warns nothing', async () => {
    const h = await learntSilent('silent.fb', 'c1');
    h.bus.publish(createMessage('ovos.utterance.handled', {}, { skill_id: 'other.fb', session: session('s1'), utterance_id: 'u1' }), 'c9');
    await h.settle();
    expect(withReason(h, 'skill_handled_after_ours')).toEqual([]);
    await ask(h, 'u2');
    expect(handledOf(h, 'u2')).toHaveLength(1); // still learnt: at once
  });

  it('PIPELINE-1 §6: a learnt skill\'s own handled that comes after its utterance has ended (a socket\'s delay) is still told: warned, unlearnt', async () => {
    const h = createHarness(CONFIG);
    let sends = false;
    scripted(h, 'late.fb', 30, 'c1', () => true, (r) => {
      respond(h, r, 'late.fb', 'c1');
      if (sends) h.clock.setTimeout(() => ownHandled(h, r, 'c1'), 10);
    });
    await h.settle();
    await ask(h, 'u1');
    await h.advance(SKILL_HANDLED_GRACE_MS);
    sends = true;
    await ask(h, 'u2');
    expect(handledOf(h, 'u2')).toHaveLength(1); // ours, at once
    expect(h.system.orchestrator.inFlight).toBe(0);
    await h.advance(10);
    expect(handledOf(h, 'u2')).toHaveLength(2);
    expect(withReason(h, 'skill_handled_after_ours')).toEqual([expect.objectContaining({ skill_id: 'late.fb', utterance_id: 'u2' })]);
  });

  it('PIPELINE-1 §6: a handled naming the learnt skill but no utterance dispatched to it changes nothing (it cannot be told from a stray one)', async () => {
    const h = await learntSilent('silent.fb', 'c1');
    h.bus.publish(createMessage('ovos.utterance.handled', {}, { skill_id: 'silent.fb', session: session('s1') }), 'c1');
    await h.settle();
    expect(withReason(h, 'skill_handled_after_ours')).toEqual([]);
    await ask(h, 'u2');
    expect(handledOf(h, 'u2')).toHaveLength(1); // still learnt: at once
  });

  it('PIPELINE-1 §6: a skill whose connection closes during the grace (its handled may have gone with it) is not learnt: back, the grace is kept for it', async () => {
    const h = createHarness(CONFIG);
    let on = 'c1';
    let dropAfterResponse = true;
    scripted(h, 'old.fb', 30, 'c1', () => true, (r) => {
      respond(h, r, 'old.fb', on);
      if (dropAfterResponse) {
        dropAfterResponse = false;
        h.bus.closeConnection(on);
        return;
      }
      ownHandled(h, r, on);
    });
    await h.settle();
    await ask(h, 'u1');
    on = 'c2';
    h.bus.openConnection('c2');
    await h.advance(SKILL_HANDLED_GRACE_MS);
    expect(handledOf(h, 'u1')).toHaveLength(1);
    expect(withReason(h, 'skill_leaves_handled')).toEqual([]);
    await ask(h, 'u2');
    await h.advance(SKILL_HANDLED_GRACE_MS + 10);
    expect(handledOf(h, 'u2')).toHaveLength(1);
  });

  it('PIPELINE-1 §6: a skill whose connection closes later in the grace — when a handled sent right after its .response would have been read (SKILL_HANDLED_READ_MS) — sends none: learnt, though it reconnects more often than the grace lasts', async () => {
    const h = createHarness(CONFIG);
    let on = 'c1';
    scripted(h, 'flaky.fb', 30, 'c1', () => true, (r) => respond(h, r, 'flaky.fb', on));
    await h.settle();
    await ask(h, 'u1');
    await h.advance(SKILL_HANDLED_READ_MS);
    h.bus.closeConnection('c1');
    on = 'c2';
    h.bus.openConnection('c2');
    await h.advance(SKILL_HANDLED_GRACE_MS);
    expect(handledOf(h, 'u1')).toHaveLength(1);
    expect(withReason(h, 'skill_leaves_handled')).toEqual([expect.objectContaining({ skill_id: 'flaky.fb', utterance_id: 'u1' })]);
    await ask(h, 'u2');
    expect(handledOf(h, 'u2')).toHaveLength(1); // at once
  });

  it('PIPELINE-1 §6: a skill whose bus client reconnects every 600 ms, a new utterance every 150 ms, never held back by the bus: learnt at its first grace — every later handled at once, not a grace each', async () => {
    const h = createHarness(CONFIG);
    let n = 1;
    // Its pongs and responses over whichever connection its bus client has now (it does not register again).
    h.bus.subscribe((m) => {
      if (m.type === 'ovos.skills.fallback.ping') h.bus.publish(reply(m, 'ovos.skills.fallback.pong', { skill_id: 'busy.fb', can_handle: true }), `c${n}`);
      else if (m.type === 'ovos.skills.fallback.busy.fb.request') respond(h, m, 'busy.fb', `c${n}`);
    });
    h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: 'busy.fb', priority: 30 }, { session: session('default') }), 'c1');
    const handledAt = new Map<string, number>();
    h.bus.subscribe((m) => {
      if (m.type === 'ovos.utterance.handled') handledAt.set(String(m.context['utterance_id']), h.clock.now());
    });
    await h.settle();
    const reconnect = (): void => {
      h.bus.closeConnection(`c${n}`);
      n += 1;
      h.bus.openConnection(`c${n}`);
    };
    const askedAt = new Map<string, number>();
    for (let i = 0; i < 24; i++) {
      askedAt.set(`u${i}`, h.clock.now());
      h.utter('do it', { session: session(`s${i % 4}`), utteranceId: `u${i}` });
      await h.advance(150);
      if (i % 4 === 3) reconnect();
    }
    await h.advance(SKILL_HANDLED_GRACE_MS);
    for (let i = 0; i < 24; i++) expect(handledOf(h, `u${i}`), `u${i}`).toHaveLength(1);
    expect(withReason(h, 'skill_leaves_handled')).toHaveLength(1);
    // Once learnt (the first grace's end, 2 s after u0's .response), each utterance ends with its handler.
    const lateHandled = [...askedAt].filter(([id, at]) => at > askedAt.get('u0')! + SKILL_HANDLED_GRACE_MS && handledAt.get(id)! - at > 100);
    expect(lateHandled).toEqual([]);
  });

  it('PIPELINE-1 §6: a skill whose connection closes within SKILL_HANDLED_READ_MS of its .response (its handled may have been unread in the socket), is held back by the bus when it closes, or is closed late (its daemon lost), is not learnt', async () => {
    const h = createHarness(CONFIG);
    scripted(h, 'flaky.fb', 30, 'c1', (u) => u === 'hello', (r) => respond(h, r, 'flaky.fb', 'c1'));
    await h.settle();
    await ask(h, 'u1');
    await h.advance(SKILL_HANDLED_READ_MS - 1);
    h.bus.closeConnection('c1');
    await h.advance(SKILL_HANDLED_GRACE_MS);
    expect(handledOf(h, 'u1')).toHaveLength(1);
    expect(withReason(h, 'skill_leaves_handled')).toEqual([]);
    // Late: heard of only once its daemon was missed, however far into the grace; held back: what it sent last (its
    // handled) may still have been in the socket when it closed, however far into the grace.
    for (const [connection, late, heldBack] of [
      ['c2', true, false],
      ['c3', false, true],
    ] as const) {
      h.bus.openConnection(connection);
      scripted(h, `other.${connection}`, 20, connection, (u) => u === `for ${connection}`, (r) => respond(h, r, `other.${connection}`, connection));
      await h.settle();
      h.utter(`for ${connection}`, { session: session('s1'), utteranceId: `u.${connection}` });
      await h.settle();
      await h.advance(SKILL_HANDLED_GRACE_MS / 2);
      h.bus.closeConnection(connection, late, heldBack);
      await h.advance(SKILL_HANDLED_GRACE_MS);
      expect(handledOf(h, `u.${connection}`)).toHaveLength(1);
      expect(withReason(h, 'skill_leaves_handled')).toEqual([]);
    }
  });

  it('PIPELINE-1 §6 on a bus without connection identity: our own handled, naming a learnt skill in its context for an utterance not dispatched to it, does not unlearn it', async () => {
    const bus = new LocalBus();
    for (const hidden of ['connectionOf', 'onConnectionClosed', 'onConnectionOpened']) Object.defineProperty(bus, hidden, { value: undefined });
    const h = createHarness(CONFIG, { bus });
    scripted(h, 'wiki.fb', 30, 'c1', (u) => u !== 'nothing', (r) => respond(h, r, 'wiki.fb', 'c1'));
    await h.settle();
    await ask(h, 'u1');
    await h.advance(SKILL_HANDLED_GRACE_MS);
    // An utterance the skill re-emitted from its handler's message (its context names it); nothing takes it.
    h.bus.publish(createMessage('ovos.utterance.handle', { utterances: ['nothing'] }, { skill_id: 'wiki.fb', session: session('s1'), utterance_id: 'u2' }));
    await h.advance(SKILL_HANDLED_GRACE_MS);
    expect(handledOf(h, 'u2')).toHaveLength(1);
    expect(withReason(h, 'skill_handled_after_ours')).toEqual([]);
    await ask(h, 'u3');
    expect(handledOf(h, 'u3')).toHaveLength(1); // still learnt: at once
  });

  it('PIPELINE-1 §6: a learnt skill whose handled comes before its .response is unlearnt without a warning; that handled is the utterance\'s one', async () => {
    const h = createHarness(CONFIG);
    let before = false;
    scripted(h, 'turn.fb', 30, 'c1', () => true, (r) => {
      if (before) ownHandled(h, r, 'c1');
      respond(h, r, 'turn.fb', 'c1');
    });
    await h.settle();
    await ask(h, 'u1');
    await h.advance(SKILL_HANDLED_GRACE_MS);
    expect(withReason(h, 'skill_leaves_handled')).toHaveLength(1);
    before = true;
    await ask(h, 'u2');
    await h.advance(SKILL_HANDLED_GRACE_MS + 10);
    expect(handledOf(h, 'u2')).toHaveLength(1);
    expect(withReason(h, 'skill_handled_after_ours')).toEqual([]);
  });
});
