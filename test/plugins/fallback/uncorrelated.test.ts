/**
 * A fallback pong built as a fresh message — not derived from its ping, so without the ping's utterance_id,
 * contest_id and (often) session (OVOS-FALLBACK-1 §6.1 asks for the pong by `reply`, but skills get it wrong): taken
 * by the one live contest awaiting that skill, in any session; with several, dropped as ambiguous, never guessed.
 * Harness: LocalBus + ManualClock; no sleeps.
 */
import { describe, expect, it } from 'vitest';
import { createMessage, reply, type JsonObject } from '../../../src/bus/message.js';
import { createHarness, fallbackSkill, withConfig, type Harness } from '../../support/harness.js';

const CONFIG = withConfig((config) => ({ ...config, pipeline: ['fallback_high', 'fallback_medium', 'fallback_low'] }));
const PING_TIMEOUT_MS = CONFIG.fallback.pingTimeoutMs;
const session = (id: string): JsonObject => ({ session_id: id });
const winners = (h: Harness): unknown[] => h.of('ovos.intent.matched').map((m) => m.data['skill_id']);
const drops = (h: Harness, reason: string): Array<Record<string, unknown>> => h.logs.filter((l) => l['msg'] === 'message dropped' && l['reason'] === reason);

/** A spec skill that answers its ping with a pong of its own making: no session, no ids. */
function freshPonger(h: Harness, skillId: string, priority: number, canHandle = true): void {
  h.bus.publish(createMessage('ovos.fallback.register', { skill_id: skillId, priority }, { skill_id: skillId }));
  h.bus.subscribe((m) => {
    if (m.type === `${skillId}.fallback.ping`) h.bus.publish({ type: `${skillId}.fallback.pong`, data: { skill_id: skillId, can_handle: canHandle }, context: {} });
    if (m.type === `${skillId}:fallback`) h.bus.publish(reply(m, 'mycroft.skill.handler.complete'));
  });
}

describe('OVOS-FALLBACK-1 §6.1: an uncorrelated fallback pong', () => {
  it('§6.1: is taken by the one contest awaiting that skill, in another session than the pong\'s (none): the skill wins at once', async () => {
    const h = createHarness(CONFIG);
    freshPonger(h, 'fresh.skill', 10);
    fallbackSkill(h, 'catch.all', 100);
    await h.settle();
    h.utter('do a barrel roll', { session: session('kitchen'), utteranceId: 'u1' });
    await h.advance(1);
    expect(winners(h)).toEqual(['fresh.skill']);
    expect(h.of('ovos.utterance.handled')).toHaveLength(1);
    expect(h.logs.filter((l) => l['reason'] === 'ping_timeout')).toEqual([]);
  });

  it('§6.1: with two contests awaiting that skill it is dropped as ambiguous_correlation (with the count) — each waits its ping timeout', async () => {
    const h = createHarness(CONFIG);
    freshPonger(h, 'fresh.skill', 10);
    fallbackSkill(h, 'catch.all', 100);
    await h.settle();
    h.utter('do a barrel roll', { session: session('kitchen'), utteranceId: 'u1' });
    h.utter('do a barrel roll', { session: session('car'), utteranceId: 'u2' });
    await h.advance(PING_TIMEOUT_MS - 1);
    expect(winners(h)).toEqual([]);
    expect(drops(h, 'ambiguous_correlation')).toEqual([
      expect.objectContaining({ type: 'fresh.skill.fallback.pong', detail: '2 contests await this sender' }),
      expect.objectContaining({ type: 'fresh.skill.fallback.pong', detail: '2 contests await this sender' }),
    ]);
    await h.advance(1);
    expect(winners(h)).toEqual(['catch.all', 'catch.all']);
  });

  it('§6.1: one not awaited by any contest (a skill not asked yet) goes the usual way, by session: not taken', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'first', 10, { decide: () => 'silent' });
    h.bus.publish(createMessage('ovos.fallback.register', { skill_id: 'later', priority: 20 }, { skill_id: 'later' }));
    await h.settle();
    h.utter('do a barrel roll', { session: session('default'), utteranceId: 'u1' });
    await h.advance(1);
    h.bus.publish({ type: 'later.fallback.pong', data: { skill_id: 'later', can_handle: true }, context: {} });
    await h.advance(1);
    expect(winners(h)).toEqual([]);
    expect(h.logs.filter((l) => l['type'] === 'pong.ignored' && l['skill_id'] === 'later')).toEqual([expect.objectContaining({ reason: 'not_awaited' })]);
  });

  it('ovos-wire-today: a legacy pong without ids is taken by the one contest whose broadcast awaits that skill; with none awaiting it, dropped as uncorrelated (ovos-core #859)', async () => {
    const h = createHarness(CONFIG);
    h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: 'wk.fresh', priority: 10 }, { session: session('default') }));
    h.bus.subscribe((m) => {
      if (m.type === 'ovos.skills.fallback.ping') h.bus.publish({ type: 'ovos.skills.fallback.pong', data: { skill_id: 'wk.fresh', can_handle: true }, context: {} });
      if (m.type === 'ovos.skills.fallback.wk.fresh.request') h.bus.publish({ ...m, type: 'ovos.skills.fallback.wk.fresh.response', data: { result: true } });
    });
    await h.settle();
    h.utter('do a barrel roll', { session: session('kitchen'), utteranceId: 'u1' });
    await h.advance(1);
    expect(winners(h)).toEqual(['wk.fresh']);
    h.bus.publish({ type: 'ovos.skills.fallback.pong', data: { skill_id: 'wk.fresh', can_handle: true }, context: {} });
    await h.settle();
    expect(drops(h, 'uncorrelated')).toEqual([expect.objectContaining({ type: 'ovos.skills.fallback.pong' })]);
  });
});

describe('OVOS-FALLBACK-1 §6.1 × ovos-core #859: an uncorrelated pong is never a stale one taken for a new question', () => {
  it('ovos-wire-today: a legacy skill whose id-less pongs come after its ping timeout — the late "yes" to the first utterance is not taken by the second, which awaits the same skill', async () => {
    const h = createHarness(CONFIG);
    h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: 'wk.slow', priority: 10 }, { session: session('default') }));
    h.bus.subscribe((m) => {
      if (m.type !== 'ovos.skills.fallback.ping') return;
      const utterances = m.data['utterances'];
      const willing = Array.isArray(utterances) && String(utterances[0]).includes('roll');
      h.clock.setTimeout(() => h.bus.publish({ type: 'ovos.skills.fallback.pong', data: { skill_id: 'wk.slow', can_handle: willing }, context: { session: { session_id: 'default' } } }), 600);
    });
    fallbackSkill(h, 'catch.all', 100);
    await h.settle();
    h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(PING_TIMEOUT_MS + 60); // u1: wk.slow timed out, the catch-all answered
    h.utter('what time is it', { session: session('s2'), utteranceId: 'u2' });
    await h.advance(PING_TIMEOUT_MS + 200); // u1's late "yes" arrives at 600 while u2 awaits wk.slow
    expect(winners(h)).toEqual(['catch.all', 'catch.all']);
    expect(drops(h, 'uncorrelated').length).toBeGreaterThanOrEqual(1);
  });

  it('§6.1: a spec pong without ids but with its session goes the usual way, by session — two sessions awaiting the skill each get their own', async () => {
    const h = createHarness(CONFIG);
    h.bus.publish(createMessage('ovos.fallback.register', { skill_id: 'sess.skill', priority: 10 }, { skill_id: 'sess.skill' }));
    h.bus.subscribe((m) => {
      if (m.type === 'sess.skill.fallback.ping') h.bus.publish({ type: 'sess.skill.fallback.pong', data: { skill_id: 'sess.skill', can_handle: true }, context: { session: m.context['session'] as JsonObject } });
      if (m.type === 'sess.skill:fallback') h.bus.publish(reply(m, 'mycroft.skill.handler.complete'));
    });
    await h.settle();
    h.utter('do a barrel roll', { session: session('kitchen'), utteranceId: 'u1' });
    h.utter('do a barrel roll', { session: session('car'), utteranceId: 'u2' });
    await h.advance(1);
    expect(winners(h)).toEqual(['sess.skill', 'sess.skill']);
    expect(drops(h, 'ambiguous_correlation')).toEqual([]);
  });
});
