/**
 * What the fallback plugin tells the deployer (FALLBACK-1 §8.2 stages, §6.1 ping timeouts): a registration no stage
 * will ever ask is warned about at once, and the skill events metrics are built on (`onSkillEvent`: ping timeouts and
 * circuit-breaker transitions) reach every listener — one that throws costs the others nothing, one that unsubscribed
 * hears nothing more. Harness: LocalBus + ManualClock.
 */
import { describe, expect, it } from 'vitest';
import { createMessage } from '../../../src/bus/message.js';
import type { FallbackRegistrationChange, FallbackSkillEvent } from '../../../src/plugins/fallback/fallback.plugin.js';
import { createHarness, fallbackSkill, HARNESS_CONFIG, withConfig, type Harness } from '../../support/harness.js';

const withReason = (h: Harness, reason: string): Array<Record<string, unknown>> => h.logs.filter((line) => line['reason'] === reason);

describe('FALLBACK-1 §8.2: a registered priority that no stage covers', () => {
  // Two stages with a gap between them (50–74 belongs to no stage).
  const GAPPED = withConfig((config) => ({
    ...config,
    pipeline: ['fallback_high', 'fallback_low'],
    fallback: { ...config.fallback, stages: { fallback_high: [0, 49], fallback_low: [75, 100] }, priorities: { 'moved.skill': 60, 'rescued.skill': 80 } },
  }));

  it('§8.2 × README placement rule: is warned (priority_outside_stages) with the effective priority, the stages and the stage that asks it — the nearest (60: fallback_high, 11 away, not fallback_low, 15)', async () => {
    const h = createHarness(GAPPED);
    const gap = fallbackSkill(h, 'gap.skill', 60);
    await h.settle();
    expect(withReason(h, 'priority_outside_stages')).toMatchObject([
      { level: 40, skill_id: 'gap.skill', priority: 60, stage: 'fallback_high', stages: { fallback_high: [0, 49], fallback_low: [75, 100] } },
    ]);
    h.utter('anything');
    await h.advance(1);
    expect(gap.pings).toHaveLength(1);
    expect(h.of('gap.skill:fallback')).toHaveLength(1);
    expect(h.of('ovos.utterance.handled')).toHaveLength(1);
  });

  it('§8.2 × README placement rule, boundaries: in the middle of a gap the later stage (62: 13 from either); beyond the ends the first or last stage', async () => {
    const h = createHarness(GAPPED);
    fallbackSkill(h, 'tie.skill', 62);
    fallbackSkill(h, 'below.skill', -5);
    fallbackSkill(h, 'above.skill', 150);
    await h.settle();
    expect(h.system.fallback.pool({ sessionId: 's1', blacklistedSkills: [] }, [0, 49])).toEqual(['below.skill']);
    expect(h.system.fallback.pool({ sessionId: 's1', blacklistedSkills: [] }, [75, 100])).toEqual(['tie.skill', 'above.skill']);
  });

  it('§8.2: the range bounds are inclusive — 49 and 75 are covered, no warning', async () => {
    const h = createHarness(GAPPED);
    fallbackSkill(h, 'edge.high', 49);
    fallbackSkill(h, 'edge.low', 75);
    await h.settle();
    expect(withReason(h, 'priority_outside_stages')).toEqual([]);
  });

  it('§5 step 3: the deployer\'s priority override decides — moved into the gap is warned, moved out of it is not', async () => {
    const h = createHarness(GAPPED);
    fallbackSkill(h, 'moved.skill', 10); // registers at 10, configured to 60
    fallbackSkill(h, 'rescued.skill', 60); // registers at 60, configured to 80
    await h.settle();
    expect(withReason(h, 'priority_outside_stages')).toMatchObject([{ skill_id: 'moved.skill', priority: 60, stage: 'fallback_high' }]);
  });
});

describe('FALLBACK-1 §6.1: skill events for metrics (onSkillEvent)', () => {
  const CONFIG = withConfig((config) => ({
    ...config,
    pipeline: ['fallback_high'],
    fallback: { ...config.fallback, suspendAfterTimeouts: 2, suspendMs: 1_000 },
  }));
  const PING_TIMEOUT_MS = CONFIG.fallback.pingTimeoutMs;

  it('every ping timeout and each breaker transition reaches every listener, once, in order', async () => {
    const h = createHarness(CONFIG);
    const first: FallbackSkillEvent[] = [];
    const second: FallbackSkillEvent[] = [];
    h.system.fallback.onSkillEvent((event) => first.push(event));
    h.system.fallback.onSkillEvent((event) => second.push(event));
    let answer: boolean | 'silent' = 'silent';
    fallbackSkill(h, 'flaky', 10, { decide: () => answer });
    await h.settle();

    for (const id of ['u1', 'u2']) {
      h.utter('hello', { utteranceId: id });
      await h.advance(PING_TIMEOUT_MS);
    }
    const timedOutTwice: FallbackSkillEvent[] = [
      { type: 'ping_timeout', skill_id: 'flaky' },
      { type: 'ping_timeout', skill_id: 'flaky' },
      { type: 'suspended', skill_id: 'flaky', for_ms: CONFIG.fallback.suspendMs },
    ];
    expect(first).toEqual(timedOutTwice);
    // Suspended: left out of the pool, so no ping and no event while it lasts.
    h.utter('hello', { utteranceId: 'u3' });
    await h.advance(PING_TIMEOUT_MS);
    expect(first).toEqual(timedOutTwice);
    // Half-open after suspendMs: its answer closes the breaker.
    await h.advance(1_000);
    answer = false;
    h.utter('hello', { utteranceId: 'u4' });
    await h.advance(1);
    expect(first).toEqual([...timedOutTwice, { type: 'resumed', skill_id: 'flaky' }]);
    expect(second).toEqual(first);
    expect(h.of('ovos.utterance.handled')).toHaveLength(4);
  });

  it('a listener that throws is logged (observer_threw) and the others still hear; an unsubscribed one hears nothing more', async () => {
    const h = createHarness(CONFIG);
    const heard: FallbackSkillEvent[] = [];
    const gone: FallbackSkillEvent[] = [];
    h.system.fallback.onSkillEvent(() => {
      throw new Error('metrics exporter broke');
    });
    const unsubscribe = h.system.fallback.onSkillEvent((event) => gone.push(event));
    h.system.fallback.onSkillEvent((event) => heard.push(event));
    fallbackSkill(h, 'silent', 10, { decide: () => 'silent' });
    await h.settle();

    h.utter('hello', { utteranceId: 'u1' });
    await h.advance(PING_TIMEOUT_MS);
    expect(gone).toEqual([{ type: 'ping_timeout', skill_id: 'silent' }]);
    unsubscribe();
    h.utter('hello', { utteranceId: 'u2' });
    await h.advance(PING_TIMEOUT_MS);
    expect(gone).toHaveLength(1);
    expect(heard).toEqual([
      { type: 'ping_timeout', skill_id: 'silent' },
      { type: 'ping_timeout', skill_id: 'silent' },
      { type: 'suspended', skill_id: 'silent', for_ms: CONFIG.fallback.suspendMs },
    ]);
    expect(withReason(h, 'observer_threw').map((l) => l['msg'])).toEqual(Array(3).fill('fallback skill listener threw'));
    // The utterances themselves were not touched by it.
    expect(h.of('ovos.utterance.handled')).toHaveLength(2);
  });
});

describe('FALLBACK-1 §3.1, §3.2: registrations for a cluster\'s shared state (onRegistration)', () => {
  it('reports each register and deregister the plugin accepts, with its message and connection — none it refuses, and nothing to a listener that unsubscribed', async () => {
    const h = createHarness(HARNESS_CONFIG);
    const heard: FallbackRegistrationChange[] = [];
    const gone: FallbackRegistrationChange[] = [];
    h.system.fallback.onRegistration((change) => heard.push(change));
    const unsubscribe = h.system.fallback.onRegistration((change) => gone.push(change));
    unsubscribe();
    const register = createMessage('ovos.fallback.register', { skill_id: 'a.spec', priority: 10 }, { skill_id: 'a.spec', session: { session_id: 'kitchen' } });
    h.bus.publish(register, 'c1');
    // A legacy registration of the same skill over another connection never takes the spec skill's over (refused).
    h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: 'a.spec', priority: 20 }, { session: { session_id: 'kitchen' } }), 'c2');
    const deregister = createMessage('ovos.fallback.deregister', { skill_id: 'a.spec' }, { skill_id: 'a.spec', session: { session_id: 'kitchen' } });
    h.bus.publish(deregister, 'c1');
    await h.settle();
    expect(withReason(h, 'legacy_over_spec')).toHaveLength(1);
    expect(heard).toEqual([
      { type: 'registered', session_id: 'kitchen', skill_id: 'a.spec', message: register, connection: 'c1' },
      { type: 'deregistered', session_id: 'kitchen', skill_id: 'a.spec', message: deregister },
    ]);
    expect(heard[0]!.message).toBe(register);
    expect(gone).toEqual([]);
  });

  it('§3.4: a registration the registry bounds evict is reported deregistered, with the register message that took its place', async () => {
    const h = createHarness(withConfig((config) => ({ ...config, fallback: { ...config.fallback, maxSkillsPerSession: 1 } })));
    const heard: FallbackRegistrationChange[] = [];
    h.system.fallback.onRegistration((change) => heard.push(change));
    h.bus.publish(createMessage('ovos.fallback.register', { skill_id: 'old.spec', priority: 10 }, { skill_id: 'old.spec' }), 'c1');
    await h.settle();
    h.bus.closeConnection('c1'); // old.spec is away: its place may be given up
    await h.settle();
    const taking = createMessage('ovos.fallback.register', { skill_id: 'new.spec', priority: 20 }, { skill_id: 'new.spec' });
    h.bus.publish(taking, 'c2');
    await h.settle();
    expect(withReason(h, 'registry_evicted')).toHaveLength(1);
    expect(heard.map((change) => [change.type, change.skill_id])).toEqual([
      ['registered', 'old.spec'],
      ['deregistered', 'old.spec'],
      ['registered', 'new.spec'],
    ]);
    expect(heard[1]!.message).toBe(taking);
  });
});
