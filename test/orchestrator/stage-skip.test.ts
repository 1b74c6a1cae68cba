/**
 * A stage that would return None at once is passed over without calling `match` (PipelineStage.declines): the
 * outcome OVOS-PIPELINE-1 §6 gives a stage that returns None — recorded as declining, in pipeline order — without an
 * actor and a timer per stage. What a user sees must not change: the same dispatch at the same instant, the same
 * single handled, and a pool read at the stage's turn (a skill that registers while an earlier stage still asks is
 * in it). Whole system, in-process bus, deterministic clock.
 */
import { describe, expect, it } from 'vitest';
import { createMessage, reply, type Message } from '../../src/bus/message.js';
import { DEFAULT_CONFIG } from '../../src/config/defaults.js';
import type { Match } from '../../src/pipeline/plugin.js';
import { cqSkill } from '../support/cq-skills.js';
import { createHarness, fallbackSkill, withConfig, type Harness } from '../support/harness.js';

/** A spec fallback skill that pongs `canHandle` `pongAfterMs` after its ping and completes its handler at once. */
function skill(h: Harness, skillId: string, priority: number, canHandle: boolean, pongAfterMs = 0): void {
  h.bus.subscribe((m: Message) => {
    if (m.type === `${skillId}.fallback.ping`) {
      h.clock.setTimeout(() => h.bus.publish(reply(m, `${skillId}.fallback.pong`, { skill_id: skillId, can_handle: canHandle })), pongAfterMs);
    } else if (m.type === `${skillId}:fallback`) {
      h.bus.publish(reply(m, 'mycroft.skill.handler.complete', {}));
    }
  });
  h.bus.publish(createMessage('ovos.fallback.register', { skill_id: skillId, priority }, { skill_id: skillId, session: { session_id: 'default' } }));
}

const stagesAsked = (h: Harness): unknown[] => h.logs.filter((l) => l['msg'] === 'stage matched').map((l) => l['stage']);
const at = (h: Harness, type: string): number[] => h.wire.flatMap((m, i) => (m.type === type ? [i] : []));

describe('OVOS-PIPELINE-1 §6: a stage that would return None at once is passed over, recorded as declining', () => {
  it('FALLBACK-1 §5 / COMMON-QUERY-1 §4.1: empty pools and a gate that rejects → only fallback_low is asked; the others are recorded as no_match in pipeline order; dispatch at 0 ms, one handled', async () => {
    const h = createHarness(DEFAULT_CONFIG, { recorder: {} });
    skill(h, 'low.skill', 90, true);
    await h.settle();
    h.utter('turn on the lights', { session: { session_id: 's1' } });
    await h.advance(0);

    expect(stagesAsked(h)).toEqual(['fallback_low']);
    expect(h.of('ovos.common_query.ping')).toEqual([]);
    expect(h.of('low.skill:fallback')).toHaveLength(1);
    expect(h.of('ovos.utterance.handled')).toHaveLength(1);
    const decision = h.recorder!.decisions()[0];
    expect(decision).toMatchObject({ outcome: 'completed', stage: 'fallback_low', skill_id: 'low.skill', afterMs: 0 });
    expect(decision!.declined).toEqual([
      { stage: 'fallback_high', why: 'no_match' },
      { stage: 'common_query', why: 'no_match' },
      { stage: 'fallback_medium', why: 'no_match' },
    ]);
  });

  it('§6: every stage passed over → ovos.intent.unmatched and exactly one handled, at once, each stage recorded', async () => {
    const h = createHarness(DEFAULT_CONFIG, { recorder: {} });
    h.utter('turn on the lights', { session: { session_id: 's1' } });
    await h.settle();

    expect(stagesAsked(h)).toEqual([]);
    expect(h.of('ovos.intent.unmatched')).toHaveLength(1);
    expect(h.of('ovos.utterance.handled')).toHaveLength(1);
    // The unmatched comes before the handled (§6: handled is the last message of the lifecycle).
    expect(at(h, 'ovos.intent.unmatched')[0]!).toBeLessThan(at(h, 'ovos.utterance.handled')[0]!);
    const decision = h.recorder!.decisions()[0];
    expect(decision).toMatchObject({ outcome: 'unmatched', stage: null, afterMs: 0 });
    expect(decision!.declined.map((d) => d.stage)).toEqual(['fallback_high', 'common_query', 'fallback_medium', 'fallback_low']);
    expect(decision!.declined.every((d) => d.why === 'no_match')).toBe(true);
  });

  it('the pool is read at the stage\'s turn: a skill that registers at 50 ms while fallback_high still waits for a pong (100 ms) is asked by fallback_low', async () => {
    const h = createHarness(DEFAULT_CONFIG);
    skill(h, 'slow.no', 10, false, 100);
    await h.settle();
    h.utter('turn on the lights', { session: { session_id: 's1' } });
    await h.advance(50);
    skill(h, 'late.yes', 90, true);
    await h.advance(49);
    expect(h.of('late.yes.fallback.ping')).toEqual([]);
    await h.advance(1);

    expect(h.of('late.yes.fallback.ping')).toHaveLength(1);
    expect(h.of('late.yes:fallback')).toHaveLength(1);
    expect(stagesAsked(h)).toEqual(['fallback_high', 'fallback_low']);
    expect(h.of('ovos.utterance.handled')).toHaveLength(1);
  });

  it('the walk begins once everything already published has been delivered: an embedder that registers a skill and calls orchestrator.handle in the same tick has it asked', async () => {
    const h = createHarness(DEFAULT_CONFIG);
    fallbackSkill(h, 'hello.skill', 10); // publishes its registration: queued, not yet delivered
    const record = h.system.orchestrator.handle(createMessage('ovos.utterance.handle', { utterances: ['hello robot'] }, { session: { session_id: 's1' } }), ['hello robot']);
    await h.advance(1);
    expect(h.of('hello.skill.fallback.ping')).toHaveLength(1);
    expect(await record?.done).toMatchObject({ outcome: 'completed', stage: 'fallback_high' });
  });

  it('a registration published in the same tick right after the utterance is in the first stage\'s pool, as when match read it after a microtask', async () => {
    const h = createHarness(DEFAULT_CONFIG);
    h.utter('hello robot', { session: { session_id: 's1' } });
    fallbackSkill(h, 'hello.skill', 10);
    await h.advance(1);
    expect(h.of('hello.skill.fallback.ping')).toHaveLength(1);
    expect(h.of('ovos.intent.matched').map((m) => m.data['skill_id'])).toEqual(['hello.skill']);
    expect(h.of('ovos.utterance.handled')).toHaveLength(1);
  });

  it('COMMON-QUERY-1 §4.1: a question the gate accepts is asked (its stage matched), a command is not — same roster, same session', async () => {
    const h = createHarness(DEFAULT_CONFIG);
    cqSkill(h, 'cq.knower', { answer: 'Paris is the capital of France.', conf: 0.9 });
    await h.settle();
    h.utter('turn on the lights', { session: { session_id: 's1' } });
    await h.advance(10);
    expect(stagesAsked(h)).toEqual([]);
    h.utter('what is the capital of france', { session: { session_id: 's1' } });
    await h.advance(DEFAULT_CONFIG.commonQuery.pollClaimBoundMs + 10);
    expect(stagesAsked(h)).toEqual(['common_query']);
    expect(h.of('ovos.utterance.speak').map((m) => m.data['utterance'])).toEqual(['Paris is the capital of France.']);
    expect(h.of('ovos.utterance.handled')).toHaveLength(2);
  });

  it('a plugin whose declines throws: logged with reason plugin_hook_threw (hook "declines"), and its stage is asked as usual', async () => {
    const h = createHarness(withConfig((c) => ({ ...c, pipeline: ['custom'] })));
    const asked: string[] = [];
    h.system.orchestrator.register({
      pipelineId: 'custom',
      declines: () => {
        throw new Error('broken declines');
      },
      match: async (request) => {
        asked.push(request.utterances[0]!);
        return null;
      },
      intents: () => [],
    });
    h.utter('turn on the lights', { session: { session_id: 's1' } });
    await h.settle();

    expect(asked).toEqual(['turn on the lights']);
    expect(h.logs.filter((l) => l['reason'] === 'plugin_hook_threw')).toEqual([expect.objectContaining({ hook: 'declines', stage: 'custom', level: 50 })]);
    expect(h.of('ovos.intent.unmatched')).toHaveLength(1);
    expect(h.of('ovos.utterance.handled')).toHaveLength(1);
  });

  it('a plugin that says it declines is not asked, even when its match would have matched: declines is the plugin\'s promise, and the next stage runs', async () => {
    const h = createHarness(withConfig((c) => ({ ...c, pipeline: ['custom', 'fallback_low'] })));
    let asked = 0;
    const match: Match = { skill_id: 'custom.skill', intent_name: 'x', lang: 'en-US', utterance: 'turn on the lights', slots: {} };
    h.system.orchestrator.register({ pipelineId: 'custom', declines: () => true, match: async () => (asked++, match), intents: () => [] });
    skill(h, 'low.skill', 90, true);
    await h.settle();
    h.utter('turn on the lights', { session: { session_id: 's1' } });
    await h.advance(0);

    expect(asked).toBe(0);
    expect(h.of('low.skill:fallback')).toHaveLength(1);
    expect(h.of('ovos.intent.matched').map((m) => m.data['pipeline_id'])).toEqual(['fallback_low']);
  });
});
