/**
 * What a daemon remembers costs nobody time (src/plugins/README.md "Liveness and restarts"): registrations restored from the registry
 * file, skills gone for good, skills that reconnect or registered before the daemon joined, and the match bound.
 * OVOS-FALLBACK-1 §3.1 (registration), §6.1 (a silent skill is can_handle: false), §6.2 (the first willing skill in
 * pool order), OVOS-PIPELINE-1 §4.4 (the match bound).
 * Harness: the whole system on LocalBus (connections played by name) + ManualClock; no sleeps. Each test has its own
 * registry file; a "restart" is a second harness on the same file.
 */
import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createMessage, reply, type JsonObject, type Message } from '../../../src/bus/message.js';
import type { Config } from '../../../src/config/defaults.js';
import { silentLogger } from '../../../src/log/logger.js';
import { LEARNED_PRIORITY, stageBoundMs } from '../../../src/plugins/fallback/fallback.plugin.js';
import { REGISTRY_FORMAT, RegistryStore, type StoredRegistration } from '../../../src/plugins/fallback/registry-store.js';
import { createHarness, fallbackSkill, withConfig, type Harness } from '../../support/harness.js';
import { DAY_MS, registryPlace, storedEntry } from '../../support/registry-file.js';
import { StatusBus } from '../../support/status-bus.js';

const CONFIG = withConfig((config) => ({ ...config, pipeline: ['fallback_high', 'fallback_medium', 'fallback_low'] }));
const PING_TIMEOUT_MS = CONFIG.fallback.pingTimeoutMs;
const session = (id: string): JsonObject => ({ session_id: id });
const withReason = (h: Harness, reason: string): Array<Record<string, unknown>> => h.logs.filter((line) => line['reason'] === reason);
const winners = (h: Harness): unknown[] => h.of('ovos.intent.matched').map((m) => m.data['skill_id']);

/** A daemon start on `file` (a second call on the same file is a restart), with the harness clock as the store's. */
function boot(file: string, config: Config = CONFIG): { h: Harness; store: () => RegistryStore } {
  let opened: RegistryStore | undefined;
  const h = createHarness(config, {
    registryStore: (clock) => (opened = RegistryStore.open(file, { logger: silentLogger(), now: () => clock.now(), forgetAfterMs: config.fallback.forgetAfterMs })),
  });
  return { h, store: () => opened! };
}

/** A registry file holding `entries` (last seen a day before the harness clock's start). */
function fileWith(entries: readonly StoredRegistration[]): string {
  const { file } = registryPlace('ovos-restart-memory-');
  writeFileSync(file, JSON.stringify({ format: REGISTRY_FORMAT, entries }));
  return file;
}
const LAST_SEEN = 1_700_000_000_000 - DAY_MS;

/** An ovos-workshop FallbackSkill over `connection`: answers every broadcast ping with `canHandle`; never registers here. */
function workshop(h: Harness, skillId: string, connection: string, canHandle = true): { requests: Message[] } {
  const requests: Message[] = [];
  h.bus.subscribe((m) => {
    if (m.type === 'ovos.skills.fallback.ping') h.bus.publish(reply(m, 'ovos.skills.fallback.pong', { skill_id: skillId, can_handle: canHandle }), connection);
    else if (m.type === `ovos.skills.fallback.${skillId}.request`) {
      requests.push(m);
      h.bus.publish({ ...m, type: `ovos.skills.fallback.${skillId}.response`, data: { result: true, fallback_handler: 'X.handle_fallback' } }, connection);
      h.bus.publish({ ...m, type: 'ovos.utterance.handled', data: {} }, connection);
    }
  });
  return { requests };
}

describe('FALLBACK-1 §3.1 × §6.1: a skill gone for good costs users nothing after a restart', () => {
  it('FALLBACK-1 §6.1: five spec registrations of skills gone for good are restored and not waited for: the first utterance reaches the catch-all with no ping timeout', async () => {
    const stale = ['skill-a.test', 'skill-b.test', 'drain.test', 'skill-c.test', 'skill-d.test'];
    const file = fileWith(stale.map((skill_id, i) => storedEntry(skill_id, LAST_SEEN, { priority: 10 + 10 * i })));
    const { h } = boot(file);
    h.bus.openConnection('front-end');
    h.bus.openConnection('catch-all');
    h.bus.publish(createMessage('ovos.fallback.register', { skill_id: 'catch.all', priority: 100 }, { skill_id: 'catch.all' }), 'catch-all');
    fallbackSkill(h, 'catch.all', 100); // answers its pings
    await h.settle();
    for (let i = 0; i < 3; i++) {
      h.utter('do a barrel roll', { session: session('s1'), utteranceId: `u${i}` });
      await h.advance(1);
      expect(winners(h)).toHaveLength(i + 1);
    }
    expect(winners(h)).toEqual(['catch.all', 'catch.all', 'catch.all']);
    expect(h.wire.filter((m) => stale.some((skill) => m.type === `${skill}.fallback.ping`))).toEqual([]);
    expect(withReason(h, 'ping_timeout')).toEqual([]);
    expect(withReason(h, 'registry_restored')).toEqual([expect.objectContaining({ restored: 5, dormant: stale, file })]);
  });

  it('FALLBACK-1 §6.1: a stale legacy registration costs one ping timeout in total over 10 utterances, 5 connection openings and 2 restarts', async () => {
    const file = fileWith([storedEntry('gone.workshop', LAST_SEEN, { priority: 10, legacy: true })]);
    let timeouts = 0;
    let handled = 0;
    for (const restart of [0, 1, 2]) {
      const { h, store } = boot(file);
      h.bus.openConnection('catch-all');
      h.bus.publish(createMessage('ovos.fallback.register', { skill_id: 'catch.all', priority: 100 }, { skill_id: 'catch.all' }), 'catch-all');
      fallbackSkill(h, 'catch.all', 100);
      await h.settle();
      const utterances = restart === 0 ? 10 : 3;
      for (let i = 0; i < utterances; i++) {
        if (restart === 0 && i < 5) h.bus.openConnection(`client-${i}`); // say, a script, a satellite: maybe the skill
        h.utter('do a barrel roll', { session: session('s1'), utteranceId: `r${restart}-u${i}` });
        await h.advance(PING_TIMEOUT_MS + 1);
      }
      expect(winners(h)).toEqual(Array(utterances).fill('catch.all'));
      timeouts += withReason(h, 'ping_timeout').length;
      handled += h.of('ovos.utterance.handled').length;
      await store().flush();
      h.system.close();
    }
    expect(timeouts).toBe(1);
    expect(handled).toBe(16);
  });

  it('FALLBACK-1 §6.1: a live legacy skill is never lost by it — dormant after a missed ping, its next pong (to the utterance broadcast, a probe) brings it back, in time to answer that utterance', async () => {
    const file = fileWith([storedEntry('slow.workshop', LAST_SEEN, { priority: 10, legacy: true, dormant: true })]);
    const { h, store } = boot(file);
    fallbackSkill(h, 'catch.all', 100);
    await h.settle();
    h.bus.openConnection('workshop');
    workshop(h, 'slow.workshop', 'workshop');
    h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(1);
    // Dormant: in no pool — but the utterance's one broadcast at its arrival probes for it; its "yes" brings it back
    // before fallback_high runs, and is in hand there.
    expect(winners(h)).toEqual(['slow.workshop']);
    expect(h.of('ovos.skills.fallback.ping')).toHaveLength(1);
    expect(h.system.fallback.registry.entry('default', 'slow.workshop')).toEqual({ priority: 10, connection: 'workshop', legacy: true });
    h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'u2' });
    await h.advance(1);
    expect(winners(h)).toEqual(['slow.workshop', 'slow.workshop']);
    await store().flush();
    expect(store().entries().find((e) => e.skill_id === 'slow.workshop')?.dormant).toBeUndefined();
    expect(withReason(h, 'ping_timeout')).toEqual([]);
  });
});

describe('PIPELINE-1 §4.4 × FALLBACK-1 §6.2: a stale registration never turns an answerable utterance into a failure', () => {
  const withBound = (matchTimeoutMs: number, poll: number, ceiling: number): Config =>
    withConfig((config) => ({
      ...config,
      pipeline: ['fallback_high', 'fallback_medium', 'fallback_low'],
      orchestrator: { ...config.orchestrator, matchTimeoutMs },
      commonQuery: { ...config.commonQuery, pollWindowMs: poll, collectionInitialMs: ceiling, collectionCeilingMs: ceiling },
    }));
  const staleFile = (): string => fileWith(['stale.a', 'stale.b', 'stale.c'].map((skill_id, i) => storedEntry(skill_id, LAST_SEEN, { priority: 1 + i, legacy: true })));

  it('FALLBACK-1 §6.1: three stale workshop registrations ahead of a live workshop skill that said yes in 3 ms, 1.5 s match bound: asked by one broadcast, their ping timeouts run together — the live one wins at the ping timeout, not 3 of them later', async () => {
    const { h } = boot(staleFile(), withBound(1_500, 500, 1_000));
    h.bus.openConnection('workshop');
    h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: 'live.workshop', priority: 30 }, { session: session('default') }), 'workshop');
    const live = workshop(h, 'live.workshop', 'workshop');
    await h.settle();
    h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(PING_TIMEOUT_MS - 1);
    expect(winners(h)).toEqual([]);
    await h.advance(1);
    expect(winners(h)).toEqual(['live.workshop']);
    expect(live.requests).toHaveLength(1);
    expect(withReason(h, 'ping_timeout').map((l) => l['skill_id'])).toEqual(['stale.a', 'stale.b', 'stale.c']);
    expect(withReason(h, 'match_bound_cut')).toEqual([]);
    // Each stale one was maybe back and stayed silent: dormant, so the next utterance is answered at once.
    h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'u2' });
    await h.advance(1);
    expect(winners(h)).toEqual(['live.workshop', 'live.workshop']);
  });

  it('FALLBACK-1 §6.2: with a match bound shorter than the ping timeout, the stage bound chooses the live skill that said yes over the stale ones still silent ahead of it — not unmatched', async () => {
    const { h } = boot(staleFile(), withBound(300, 100, 200));
    h.bus.openConnection('workshop');
    h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: 'live.workshop', priority: 30 }, { session: session('default') }), 'workshop');
    const live = workshop(h, 'live.workshop', 'workshop');
    await h.settle();
    h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(stageBoundMs(300) - 1);
    expect(winners(h)).toEqual([]);
    await h.advance(1);
    expect(winners(h)).toEqual(['live.workshop']);
    expect(live.requests).toHaveLength(1);
    expect(h.of('complete_intent_failure')).toEqual([]);
    expect(withReason(h, 'match_bound_cut')).toEqual([expect.objectContaining({ level: 40, stage: 'fallback_high', chose: 'live.workshop', awaiting: 'stale.a' })]);
    // Silent until the bound, though it came before their whole ping timeout: dormant all the same (they had their chance).
    expect(withReason(h, 'ping_timeout')).toEqual([]);
    expect(['stale.a', 'stale.b', 'stale.c'].map((skill) => h.system.fallback.registry.entry('default', skill)?.dormant)).toEqual([true, true, true]);
  });

  it('FALLBACK-1 §6.2 boundary: nobody said yes by the stage bound — the stage is None, the next stage is asked, and the cut is reported', async () => {
    const { h } = boot(staleFile(), withBound(300, 100, 200));
    h.bus.openConnection('workshop');
    fallbackSkill(h, 'catch.all', 100);
    await h.settle();
    h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(stageBoundMs(300) + 1);
    expect(winners(h)).toEqual(['catch.all']);
    expect(withReason(h, 'match_bound_cut')).toEqual([expect.objectContaining({ stage: 'fallback_high', chose: null })]);
    expect(h.of('ovos.utterance.handled')).toHaveLength(1);
  });
});

describe('ovos-wire-today: a legacy skill that registered before the daemon joined is not lost', () => {
  it('FALLBACK-1 §3.1: joined to a bus whose workshop skill registered before us, the first utterance after the bus comes up probes with its one broadcast ping at its arrival; the skill is learnt (priority 50) and its answer, in hand, decides that same utterance at fallback_medium', async () => {
    const bus = new StatusBus();
    const h = createHarness(CONFIG, { bus });
    fallbackSkill(h, 'catch.all', 100);
    // A foreign bus shows no connection identity: the workshop skill answers over no named connection.
    h.bus.subscribe((m) => {
      if (m.type === 'ovos.skills.fallback.ping') h.bus.publish(reply(m, 'ovos.skills.fallback.pong', { skill_id: 'early.workshop', can_handle: true }));
      if (m.type === 'ovos.skills.fallback.early.workshop.request') h.bus.publish({ ...m, type: 'ovos.skills.fallback.early.workshop.response', data: { result: true } });
    });
    bus.report({ up: true });
    await h.settle();
    h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(1);
    // The utterance's broadcast at its arrival (a probe is due: the bus came up), the pong before any stage: learnt,
    // and its "yes" in hand when fallback_medium (priority 50) comes — no second ping.
    expect(winners(h)).toEqual(['early.workshop']);
    expect(h.of('ovos.skills.fallback.ping').map((m) => String(m.context['contest_id']).split(':')[0])).toEqual(['fallback-broadcast']);
    expect(h.system.fallback.registry.entry('default', 'early.workshop')).toEqual({ priority: LEARNED_PRIORITY, connection: undefined, legacy: true });
    // Once found, it is asked by each utterance's one broadcast.
    h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'u2' });
    await h.advance(1);
    expect(winners(h)).toEqual(['early.workshop', 'early.workshop']);
    expect(h.of('ovos.skills.fallback.ping')).toHaveLength(2);
  });

  it('FALLBACK-1 §3.1: with no legacy skill anywhere and the bus up since the last probe, no broadcast ping is sent', async () => {
    const bus = new StatusBus();
    const h = createHarness(CONFIG, { bus });
    fallbackSkill(h, 'catch.all', 100);
    bus.report({ up: true });
    await h.settle();
    for (const id of ['u1', 'u2', 'u3']) {
      h.utter('do a barrel roll', { session: session('s1'), utteranceId: id });
      await h.advance(1);
    }
    expect(winners(h)).toEqual(['catch.all', 'catch.all', 'catch.all']);
    expect(h.of('ovos.skills.fallback.ping')).toHaveLength(1); // the first utterance's probe only
  });

  it('FALLBACK-1 §3.1: a workshop skill answering the utterance broadcast without having registered with us is learnt (default priority, warned once with the fix) and its answer decides a later stage', async () => {
    const h = createHarness(CONFIG);
    h.bus.openConnection('old.workshop');
    h.bus.openConnection('other.workshop');
    const early = workshop(h, 'early.workshop', 'old.workshop');
    h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: 'other.workshop', priority: 10 }, { session: session('default') }), 'other.workshop');
    workshop(h, 'other.workshop', 'other.workshop', false);
    fallbackSkill(h, 'catch.all', 100);
    await h.settle();
    h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(1);
    // Its pong came to the utterance's broadcast (sent for other.workshop): learnt, and its "yes" in hand for fallback_medium.
    expect(h.of('ovos.skills.fallback.ping').map((m) => String(m.context['contest_id']).split(':')[0])).toEqual(['fallback-broadcast']);
    expect(winners(h)).toEqual(['early.workshop']);
    expect(h.system.fallback.registry.entry('default', 'early.workshop')).toEqual({ priority: LEARNED_PRIORITY, connection: 'old.workshop', legacy: true });
    const warned = withReason(h, 'fallback_skill_learned');
    expect(warned).toEqual([expect.objectContaining({ level: 40, skill_id: 'early.workshop', priority: LEARNED_PRIORITY, hint: expect.stringContaining('fallback.priorities.early.workshop') })]);
    h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'u2' });
    await h.advance(1);
    expect(winners(h)).toEqual(['early.workshop', 'early.workshop']);
    expect(early.requests).toHaveLength(2);
    expect(withReason(h, 'fallback_skill_learned')).toHaveLength(1);
  });

  it('FALLBACK-1 §3.1: a learnt skill takes its fallback.priorities entry when the deployer set one (no hint)', async () => {
    const config = withConfig((c) => ({ ...c, pipeline: ['fallback_high', 'fallback_medium', 'fallback_low'], fallback: { ...c.fallback, priorities: { 'early.workshop': 80 } } }));
    const h = createHarness(config);
    h.bus.openConnection('w');
    workshop(h, 'early.workshop', 'w');
    h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: 'other', priority: 10 }, { session: session('default') }), 'w');
    await h.settle();
    h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(PING_TIMEOUT_MS + 1);
    expect(h.system.fallback.registry.entry('default', 'early.workshop')?.priority).toBe(80);
    expect(withReason(h, 'fallback_skill_learned')[0]).not.toHaveProperty('hint');
  });
});

describe('registrations not heard from for forgetAfterMs are forgotten while the daemon runs', () => {
  it('FALLBACK-1 §3.2: a registration away past forgetAfterMs is forgotten (registry and file, one info line); one whose skill stays connected is kept fresh', async () => {
    const config = withConfig((c) => ({ ...c, pipeline: ['fallback_high', 'fallback_medium', 'fallback_low'], fallback: { ...c.fallback, forgetAfterMs: 2 * DAY_MS } }));
    const { file } = registryPlace('ovos-forget-');
    const { h, store } = boot(file, config);
    h.bus.publish(createMessage('ovos.fallback.register', { skill_id: 'leaves', priority: 10 }, { skill_id: 'leaves' }), 'c1');
    h.bus.publish(createMessage('ovos.fallback.register', { skill_id: 'stays', priority: 20 }, { skill_id: 'stays' }), 'c2');
    await h.settle();
    h.bus.closeConnection('c1');
    await h.advance(2 * DAY_MS - 3_600_000);
    expect(h.system.fallback.registry.holds('leaves')).toBe(true);
    await h.advance(2 * 3_600_000);
    expect(h.system.fallback.registry.holds('leaves')).toBe(false);
    expect(h.system.fallback.registry.holds('stays')).toBe(true);
    await store().flush();
    expect(store().entries().map((e) => e.skill_id)).toEqual(['stays']);
    expect(withReason(h, 'registry_forgotten')).toEqual([expect.objectContaining({ level: 30, skills: ['leaves'], sessions: ['default'], file })]);
    // The one still connected stays past any number of periods, and its file entry is kept fresh for the next start.
    await h.advance(10 * DAY_MS);
    expect(h.system.fallback.registry.holds('stays')).toBe(true);
    expect(store().entries()[0]!.last_seen).toBeGreaterThan(h.clock.now() - 2 * DAY_MS);
  });
});

describe('liveness edges: spec skills asked to register again, one probe per utterance, places given up, the stage bound', () => {
  /** A spec skill as the SDK writes it, over `connection`: answers its pings, and registers again when asked. */
  function sdkSkill(h: Harness, skillId: string, priority: number, connection: string): { pings: Message[] } {
    const pings: Message[] = [];
    h.bus.subscribe((m) => {
      if (m.type === 'ovos.fallback.reregister') h.bus.publish(createMessage('ovos.fallback.register', { skill_id: skillId, priority }, { skill_id: skillId }), connection);
      if (m.type === `${skillId}.fallback.ping`) {
        pings.push(m);
        h.bus.publish(reply(m, `${skillId}.fallback.pong`, { skill_id: skillId, can_handle: true }), connection);
      }
      if (m.type === `${skillId}:fallback`) h.bus.publish(reply(m, 'mycroft.skill.handler.complete'), connection);
    });
    return { pings };
  }

  it('FALLBACK-1 §3.1: after a restart on the embedded bus, a connection opening while spec registrations are dormant asks every spec skill to register again (once a second at most); the SDK skill answers and is asked', async () => {
    const file = fileWith([storedEntry('sdk.skill', LAST_SEEN, { priority: 10 })]);
    const { h } = boot(file);
    fallbackSkill(h, 'catch.all', 100);
    sdkSkill(h, 'sdk.skill', 10, 'c1');
    h.bus.openConnection('c1');
    h.bus.openConnection('c2');
    await h.settle();
    expect(h.of('ovos.fallback.reregister')).toHaveLength(1);
    await h.advance(1_000);
    // The second opening came within the second; the skill had registered again by then: nothing dormant to ask for.
    expect(h.of('ovos.fallback.reregister')).toHaveLength(1);
    h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(1);
    expect(winners(h)).toEqual(['sdk.skill']);
  });

  it('FALLBACK-1 §6.1: a spec skill maybe back that misses its ping is dormant, and spec skills are asked to register again', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'catch.all', 100);
    h.bus.publish(createMessage('ovos.fallback.register', { skill_id: 'spec.gone', priority: 10 }, { skill_id: 'spec.gone' }), 'c1');
    await h.settle();
    h.bus.closeConnection('c1');
    h.bus.openConnection('c2');
    await h.settle();
    h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(PING_TIMEOUT_MS);
    expect(h.system.fallback.registry.entry('default', 'spec.gone')?.dormant).toBe(true);
    expect(h.of('ovos.fallback.reregister')).toHaveLength(1);
    h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'u2' });
    await h.advance(1);
    expect(winners(h)).toEqual(['catch.all', 'catch.all']);
    expect(withReason(h, 'ping_timeout')).toHaveLength(1);
  });

  it('FALLBACK-1 §6.1: one broadcast ping per utterance at most — a stage with a legacy skill broadcasts, a later stage of spec skills does not probe again', async () => {
    const file = fileWith([storedEntry('gone.workshop', LAST_SEEN, { priority: 90, legacy: true, dormant: true })]);
    const { h } = boot(file);
    h.bus.openConnection('w');
    h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: 'live.workshop', priority: 10 }, { session: session('default') }), 'w');
    workshop(h, 'live.workshop', 'w', false);
    fallbackSkill(h, 'spec.low', 80);
    await h.settle();
    h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(1);
    expect(winners(h)).toEqual(['spec.low']);
    expect(h.of('ovos.skills.fallback.ping')).toHaveLength(1); // fallback_high's own; fallback_low adds no probe
  });

  it('FALLBACK-1 §6.1: a dead legacy registration gone dormant is probed with every utterance for a minute, then once a minute', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'catch.all', 100);
    h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: 'dead.workshop', priority: 10 }, { session: session('default') }), 'c1');
    await h.settle();
    h.bus.closeConnection('c1');
    h.bus.openConnection('front');
    await h.settle();
    h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'u0' });
    await h.advance(PING_TIMEOUT_MS); // its one ping timeout: dormant
    expect(h.system.fallback.registry.entry('default', 'dead.workshop')?.dormant).toBe(true);
    // Every broadcast is an utterance's; u0's asked it while it was maybe back, the ones after probe for it.
    const probes = (): number => h.of('ovos.skills.fallback.ping').filter((m) => String(m.context['contest_id']).startsWith('fallback-broadcast:')).length - 1;
    for (let i = 1; i <= 3; i++) {
      h.utter('do a barrel roll', { session: session('s1'), utteranceId: `u${i}` });
      await h.advance(10_000);
    }
    expect(probes()).toBe(3);
    await h.advance(60_000);
    for (let i = 4; i <= 8; i++) {
      h.utter('do a barrel roll', { session: session('s1'), utteranceId: `u${i}` });
      await h.advance(10_000);
    }
    expect(probes()).toBe(4); // u4 (a minute since the last), none of u5–u8
    await h.advance(20_000);
    h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'u9' });
    await h.advance(1);
    expect(probes()).toBe(5);
    expect(withReason(h, 'ping_timeout')).toHaveLength(1);
    expect(h.of('ovos.utterance.handled')).toHaveLength(10);
  });

  it('FALLBACK-1 §3.4: a full session gives a dormant registration\'s place up first (gone from the file too, logged), then the oldest away; none away: refused', async () => {
    const config = withConfig((c) => ({ ...c, pipeline: ['fallback_high', 'fallback_medium', 'fallback_low'], fallback: { ...c.fallback, maxSkillsPerSession: 3 } }));
    const file = fileWith([storedEntry('dormant.one', LAST_SEEN, { priority: 10, legacy: true, dormant: true })]);
    const { h, store } = boot(file, config);
    const register = (skillId: string, connection: string): void =>
      h.bus.publish(createMessage('ovos.fallback.register', { skill_id: skillId, priority: 20 }, { skill_id: skillId }), connection);
    register('away.one', 'c1');
    register('live.one', 'c2');
    await h.settle();
    h.bus.closeConnection('c1');
    await h.settle();
    register('new.one', 'c3');
    await h.settle();
    expect(h.system.fallback.registry.holds('dormant.one')).toBe(false);
    expect(h.system.fallback.registry.holds('away.one')).toBe(true);
    register('new.two', 'c4');
    await h.settle();
    expect(h.system.fallback.registry.holds('away.one')).toBe(false);
    register('refused', 'c5');
    await h.settle();
    expect(h.of('ovos.fallback.register.response').map((m) => m.data)).toEqual([{ skill_id: 'refused', accepted: false, reason: 'registry_full' }]);
    expect(withReason(h, 'registry_evicted').map((l) => l['skill_id'])).toEqual(['dormant.one', 'away.one']);
    await store().flush();
    expect(store().entries().map((e) => e.skill_id).sort()).toEqual(['live.one', 'new.one', 'new.two']);
  });

  it('PIPELINE-1 §4.4: a skill maybe back and still silent when the stage bound fires is dormant (it had its chance), though its ping was cut short', async () => {
    const BOUND = withConfig((c) => ({
      ...c,
      pipeline: ['fallback_high', 'fallback_medium', 'fallback_low'],
      orchestrator: { ...c.orchestrator, matchTimeoutMs: 300 },
      commonQuery: { ...c.commonQuery, pollWindowMs: 100, collectionInitialMs: 200, collectionCeilingMs: 200 },
    }));
    const h = createHarness(BOUND);
    fallbackSkill(h, 'catch.all', 100);
    h.bus.publish(createMessage('ovos.fallback.register', { skill_id: 'spec.stale', priority: 10 }, { skill_id: 'spec.stale' }), 'c1');
    await h.settle();
    h.bus.closeConnection('c1');
    h.bus.openConnection('c2');
    await h.settle();
    h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(300);
    expect(withReason(h, 'match_bound_cut')).toHaveLength(1);
    expect(withReason(h, 'ping_timeout')).toEqual([]);
    expect(h.system.fallback.registry.entry('default', 'spec.stale')?.dormant).toBe(true);
    h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'u2' });
    await h.advance(1);
    expect(winners(h)).toEqual(['catch.all', 'catch.all']);
  });

  it('FALLBACK-1 §3.1: a legacy registration never takes over a spec registration restored from disk from another connection (legacy_over_spec)', async () => {
    const file = fileWith([storedEntry('shared.id', LAST_SEEN, { priority: 10 })]);
    const { h } = boot(file);
    h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: 'shared.id', priority: 90 }, { session: session('default') }), 'intruder');
    await h.settle();
    expect(h.system.fallback.registry.entry('default', 'shared.id')).toMatchObject({ priority: 10, legacy: false, dormant: true });
    expect(h.of('ovos.skills.fallback.register.response').map((m) => m.data)).toEqual([{ skill_id: 'shared.id', accepted: false, reason: 'legacy_over_spec' }]);
  });

  it('the answers to an utterance broadcast (a probe here) are the plugin\'s: never routed to a contest, no drop line, the skill learnt', async () => {
    const bus = new StatusBus();
    const h = createHarness(CONFIG, { bus });
    fallbackSkill(h, 'catch.all', 100);
    workshop(h, 'any.workshop', 'w');
    bus.report({ up: true });
    await h.settle();
    h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(1);
    const dropped = h.logs.filter((l) => l['msg'] === 'message dropped' && l['type'] === 'ovos.skills.fallback.pong');
    expect(dropped).toEqual([]);
    expect(h.system.fallback.registry.holds('any.workshop')).toBe(true);
  });
});
