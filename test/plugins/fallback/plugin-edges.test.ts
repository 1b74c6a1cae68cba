/**
 * Edges of the fallback plugin found by mutation testing: registration and deregistration in both dialects
 * (OVOS-FALLBACK-1 §3; ovos-wire-today), what the circuit breaker remembers once a skill is registered nowhere, the
 * registry file across a restart, the re-registration request when the bus comes up, a legacy winner's stage range,
 * and the log lines a deployer reads (reason code, fields, a message that says what happened).
 * Harness: LocalBus (connections played by name) + ManualClock; no sleeps.
 */
import { describe, expect, it } from 'vitest';
import { createMessage, reply, type JsonObject, type Message } from '../../../src/bus/message.js';
import type { Config } from '../../../src/config/defaults.js';
import { silentLogger } from '../../../src/log/logger.js';
import type { FallbackSkillEvent } from '../../../src/plugins/fallback/fallback.plugin.js';
import { RegistryStore } from '../../../src/plugins/fallback/registry-store.js';
import { createHarness, withConfig, type Harness } from '../../support/harness.js';
import { registryPlace } from '../../support/registry-file.js';
import { StatusBus } from '../../support/status-bus.js';

const CONFIG = withConfig((config) => ({ ...config, pipeline: ['fallback_high', 'fallback_medium', 'fallback_low'] }));
const PING_TIMEOUT_MS = CONFIG.fallback.pingTimeoutMs;
/** One timeout suspends a skill: the breaker's memory is what these tests look at, not its threshold. */
const QUICK_BREAKER = withConfig((config) => ({
  ...config,
  pipeline: ['fallback_high', 'fallback_medium', 'fallback_low'],
  fallback: { ...config.fallback, suspendAfterTimeouts: 1, suspendMs: 60_000 },
}));
const HOUR_MS = 3_600_000;

const session = (id: string): JsonObject => ({ session_id: id });
const withReason = (h: Harness, reason: string): Array<Record<string, unknown>> => h.logs.filter((line) => line['reason'] === reason);
const withMsg = (h: Harness, msg: string): Array<Record<string, unknown>> => h.logs.filter((line) => line['msg'] === msg);
const atLeast = (h: Harness, level: number): Array<Record<string, unknown>> => h.logs.filter((line) => typeof line['level'] === 'number' && line['level'] >= level);
const registered = (h: Harness, sessionId: string): string[] => [...h.system.fallback.registry.availableFor(sessionId).keys()].sort();

const only = <T>(list: readonly T[]): T => {
  expect(list).toHaveLength(1);
  return list[0]!;
};

// The two dialects' registration messages: the spec's carries context.skill_id, the legacy one (ovos-workshop) none.
const specRegister = (skillId: string, priority: number, sessionId = 'default'): Message =>
  createMessage('ovos.fallback.register', { skill_id: skillId, priority }, { skill_id: skillId, session: session(sessionId) });
const legacyRegister = (skillId: string, priority: number, sessionId = 'default'): Message =>
  createMessage('ovos.skills.fallback.register', { skill_id: skillId, priority }, { session: session(sessionId) });
const specDeregister = (skillId: string, context: JsonObject = {}, sessionId = 'default'): Message =>
  createMessage('ovos.fallback.deregister', { skill_id: skillId }, { session: session(sessionId), ...context });
const legacyDeregister = (skillId: string): Message => createMessage('ovos.skills.fallback.deregister', { skill_id: skillId }, { session: session('default') });

/**
 * A spec skill answering its pings with `verdict` over `via.connection` (undefined: in-process, or a foreign bus);
 * change `via` to move it. Registers only when told (`register`).
 */
function specSkill(h: Harness, skillId: string, verdict: boolean | 'silent', via: { connection: string | undefined }): { pings: Message[] } {
  const pings: Message[] = [];
  h.bus.subscribe((m) => {
    if (m.type === `${skillId}.fallback.ping`) {
      pings.push(m);
      if (verdict !== 'silent') h.bus.publish(reply(m, `${skillId}.fallback.pong`, { skill_id: skillId, can_handle: verdict }), via.connection);
    } else if (m.type === `${skillId}:fallback`) {
      h.bus.publish(reply(m, 'mycroft.skill.handler.complete'), via.connection);
    }
  });
  return { pings };
}

/** An ovos-workshop FallbackSkill: answers every broadcast ping, and its request with `.response {result: true}`. */
function legacySkill(h: Harness, skillId: string, canHandle: boolean): void {
  h.bus.subscribe((m) => {
    if (m.type === 'ovos.skills.fallback.ping') h.bus.publish(reply(m, 'ovos.skills.fallback.pong', { skill_id: skillId, can_handle: canHandle }), 'legacy');
    else if (m.type === `ovos.skills.fallback.${skillId}.request`) {
      h.bus.publish({ ...m, type: `ovos.skills.fallback.${skillId}.response`, data: { result: true } }, 'legacy');
    }
  });
}

/** Skill events (metrics' feed) as they happen. */
function events(h: Harness): FallbackSkillEvent[] {
  const heard: FallbackSkillEvent[] = [];
  h.system.fallback.onSkillEvent((event) => heard.push(event));
  return heard;
}

/** A daemon start on the registry file `file` (a second call on the same file is a restart). */
function boot(file: string, config: Config = CONFIG): { h: Harness; store: () => RegistryStore } {
  let opened: RegistryStore | undefined;
  const h = createHarness(config, {
    registryStore: (clock) => (opened = RegistryStore.open(file, { logger: silentLogger(), now: () => clock.now(), forgetAfterMs: 30 * 24 * HOUR_MS })),
  });
  return { h, store: () => opened! };
}

const registryFile = (): string => registryPlace('ovos-plugin-edges-').file;

describe('OVOS-FALLBACK-1 §3.1 registration in both dialects', () => {
  it('FALLBACK-1 §3.1 (ovos-wire-today): a legacy registration over the connection that made the spec one replaces it; from another connection it is refused (legacy_over_spec)', async () => {
    const h = createHarness(CONFIG);
    h.bus.publish(specRegister('switcher', 10), 'c1');
    h.bus.publish(specRegister('guarded', 10), 'c1');
    await h.settle();
    h.bus.publish(legacyRegister('switcher', 90), 'c1'); // the same skill process, now speaking the legacy dialect
    h.bus.publish(legacyRegister('guarded', 90), 'c2'); // somebody else
    await h.settle();
    expect(h.system.fallback.registry.entry('default', 'switcher')).toEqual({ priority: 90, connection: 'c1', legacy: true });
    expect(h.system.fallback.registry.entry('default', 'guarded')).toEqual({ priority: 10, connection: 'c1', legacy: false });
    expect(h.of('ovos.skills.fallback.register.response').map((m) => m.data)).toEqual([{ skill_id: 'guarded', accepted: false, reason: 'legacy_over_spec' }]);
    expect(only(withReason(h, 'legacy_over_spec'))).toMatchObject({ level: 40, msg: 'message dropped', skill_id: 'guarded', connection: 'c2', type: 'ovos.skills.fallback.register' });
  });

  it('FALLBACK-1 §3.1 / §3.4: each accepted registration is logged with its skill, priority, session, connection and dialect', async () => {
    const h = createHarness(CONFIG);
    h.bus.publish(specRegister('spec.a', 10), 'c1');
    h.bus.publish(legacyRegister('legacy.b', 60, 'kitchen'), 'c2');
    await h.settle();
    expect(withMsg(h, 'fallback skill registered').map(({ level, skill_id, priority, session_id, connection, dialect }) => ({ level, skill_id, priority, session_id, connection, dialect }))).toEqual([
      { level: 30, skill_id: 'spec.a', priority: 10, session_id: 'default', connection: 'c1', dialect: 'spec' },
      { level: 30, skill_id: 'legacy.b', priority: 60, session_id: 'kitchen', connection: 'c2', dialect: 'legacy' },
    ]);
  });

  it('FALLBACK-1 §8.2: a priority no stage covers is warned with a message naming the nearest stage, which asks it', async () => {
    const h = createHarness(withConfig((config) => ({ ...config, pipeline: ['fallback_high'], fallback: { ...config.fallback, stages: { fallback_high: [0, 49] } } })));
    h.bus.publish(specRegister('nowhere', 60));
    await h.settle();
    const line = only(withReason(h, 'priority_outside_stages'));
    expect(line).toMatchObject({ level: 40, skill_id: 'nowhere', priority: 60, stage: 'fallback_high' });
    expect(line['msg']).toMatch(/asked by the nearest stage, fallback_high/);
    expect(h.system.fallback.pool({ sessionId: 's1', blacklistedSkills: [] }, [0, 49])).toEqual(['nowhere']);
  });
});

describe('OVOS-FALLBACK-1 §3.2 deregistration in both dialects', () => {
  it('FALLBACK-1 §3.2 (ovos-wire-today): a legacy deregistration of a legacy registration is accepted from any connection or none, as ovos-core does', async () => {
    const h = createHarness(CONFIG);
    h.bus.publish(legacyRegister('l.one', 10), 'c1');
    h.bus.publish(legacyRegister('l.two', 20), 'c1');
    await h.settle();
    h.bus.publish(legacyDeregister('l.one'), 'c2');
    h.bus.publish(legacyDeregister('l.two')); // a foreign bus shows no connection
    await h.settle();
    expect(registered(h, 'default')).toEqual([]);
    expect(h.of('ovos.skills.fallback.deregister.response')).toEqual([]);
    expect(withMsg(h, 'fallback skill deregistered').map(({ level, skill_id, session_id, removed }) => ({ level, skill_id, session_id, removed }))).toEqual([
      { level: 30, skill_id: 'l.one', session_id: 'default', removed: true },
      { level: 30, skill_id: 'l.two', session_id: 'default', removed: true },
    ]);
  });

  it('FALLBACK-1 §3.2: a legacy deregistration never removes a spec registration it cannot prove it owns (deregister_not_owner), and is answered', async () => {
    const h = createHarness(CONFIG);
    h.bus.publish(specRegister('spec.x', 10), 'c1');
    await h.settle();
    h.bus.publish(legacyDeregister('spec.x'), 'c2');
    await h.settle();
    expect(registered(h, 'default')).toEqual(['spec.x']);
    expect(h.of('ovos.skills.fallback.deregister.response').map((m) => m.data)).toEqual([{ skill_id: 'spec.x', accepted: false, reason: 'deregister_not_owner' }]);
    expect(only(withReason(h, 'deregister_not_owner'))).toMatchObject({ level: 40, msg: 'message dropped', type: 'ovos.skills.fallback.deregister', skill_id: 'spec.x', connection: 'c2' });
    expect(withMsg(h, 'fallback skill deregistered')).toEqual([]);
  });

  it('FALLBACK-1 §3.2: a spec deregistration without context.skill_id from another connection does not remove a legacy registration (deregister_not_owner)', async () => {
    const h = createHarness(CONFIG);
    h.bus.publish(legacyRegister('legacy.y', 10), 'c1');
    await h.settle();
    h.bus.publish(specDeregister('legacy.y'), 'c2');
    await h.settle();
    expect(registered(h, 'default')).toEqual(['legacy.y']);
    expect(h.of('ovos.fallback.deregister.response').map((m) => m.data)).toEqual([{ skill_id: 'legacy.y', accepted: false, reason: 'deregister_not_owner' }]);
  });

  it('FALLBACK-1 §3.2: a legacy deregistration of an unknown skill_id is a no-op: nothing refused, nothing failing', async () => {
    const h = createHarness(CONFIG);
    h.bus.publish(legacyDeregister('ghost'), 'c1');
    await h.settle();
    expect(h.of('ovos.skills.fallback.deregister.response')).toEqual([]);
    expect(atLeast(h, 40)).toEqual([]);
    expect(only(withMsg(h, 'fallback skill deregistered'))).toMatchObject({ skill_id: 'ghost', removed: false });
  });
});

describe('OVOS-FALLBACK-1 §6.1 circuit breaker: what it remembers once a skill is registered nowhere', () => {
  it('FALLBACK-1 §3.2 / §6.1: a suspended skill deregistered everywhere is forgotten — registering again is a fresh start, not a resumption', async () => {
    const h = createHarness(QUICK_BREAKER);
    const heard = events(h);
    specSkill(h, 'dead', 'silent', { connection: undefined });
    h.bus.publish(specRegister('dead', 10));
    await h.settle();
    h.utter('hello', { session: session('s1') });
    await h.advance(PING_TIMEOUT_MS);
    expect(heard).toEqual([{ type: 'ping_timeout', skill_id: 'dead' }, { type: 'suspended', skill_id: 'dead', for_ms: QUICK_BREAKER.fallback.suspendMs }]);
    const timeout = only(withReason(h, 'ping_timeout'));
    expect(timeout).toMatchObject({ level: 40, skill_id: 'dead', after_ms: PING_TIMEOUT_MS });
    expect(timeout['msg']).toMatch(/did not answer its ping/);
    const suspended = only(withReason(h, 'skill_suspended'));
    expect(suspended).toMatchObject({ level: 40, skill_id: 'dead', timeouts: 1, for_ms: 60_000 });
    expect(suspended['msg']).toMatch(/suspended/);

    h.bus.publish(specDeregister('dead', { skill_id: 'dead' }));
    await h.settle();
    expect(h.system.fallback.breaker.state('dead')).toBe('closed');
    h.bus.publish(specRegister('dead', 10));
    await h.settle();
    expect(heard).toHaveLength(2); // no "resumed": there was nothing left to resume
    expect(withReason(h, 'skill_resumed')).toEqual([]);
  });

  it('FALLBACK-1 §3.4 / §6.1: a suspended skill deregistered from one session but registered in another stays suspended; its pong resumes it', async () => {
    const h = createHarness(QUICK_BREAKER);
    const dead = specSkill(h, 'dead', 'silent', { connection: undefined });
    h.bus.publish(specRegister('dead', 10));
    h.bus.publish(specRegister('dead', 10, 'kitchen'));
    await h.settle();
    h.utter('hello', { session: session('s1') });
    await h.advance(PING_TIMEOUT_MS);
    expect(h.system.fallback.breaker.suspended('dead')).toBe(true);

    h.bus.publish(specDeregister('dead', { skill_id: 'dead' }, 'kitchen'));
    await h.settle();
    expect(registered(h, 'kitchen')).toEqual(['dead']); // the "default" registration
    expect(h.system.fallback.breaker.suspended('dead')).toBe(true);
    h.utter('again', { session: session('kitchen') });
    await h.advance(1);
    expect(dead.pings).toHaveLength(1); // still left out

    h.bus.publish(reply(dead.pings[0]!, 'dead.fallback.pong', { skill_id: 'dead', can_handle: false }));
    await h.settle();
    const resumed = only(withReason(h, 'skill_resumed'));
    expect(resumed).toMatchObject({ level: 30, skill_id: 'dead' });
    expect(resumed['msg']).toMatch(/resumed/);
  });

  it('FALLBACK-1 §6.1 (embedded bus): a suspended skill whose connections closed is remembered with its kept registration; registering again resumes it', async () => {
    const h = createHarness(QUICK_BREAKER);
    const heard = events(h);
    specSkill(h, 'gone', 'silent', { connection: 'c1' });
    const kept = specSkill(h, 'kept', 'silent', { connection: 'c2' });
    h.bus.publish(specRegister('gone', 10), 'c1');
    h.bus.publish(specRegister('kept', 20), 'c2');
    h.bus.publish(specRegister('kept', 20, 'kitchen'), 'c3');
    await h.settle();
    h.utter('hello', { session: session('s1') });
    await h.advance(2 * PING_TIMEOUT_MS);
    expect(heard.filter((e) => e.type === 'suspended').map((e) => e.skill_id)).toEqual(['gone', 'kept']);

    h.bus.closeConnection('c1');
    h.bus.closeConnection('c2');
    await h.settle();
    expect(registered(h, 'kitchen')).toEqual(['kept']);
    expect(h.system.fallback.breaker.suspended('kept')).toBe(true);
    h.utter('again', { session: session('kitchen') });
    await h.advance(1);
    expect(kept.pings).toHaveLength(1); // still left out

    expect(h.system.fallback.breaker.suspended('gone')).toBe(true);
    h.bus.publish(specRegister('gone', 10), 'c4'); // back, over a new connection
    await h.settle();
    expect(heard.filter((e) => e.type === 'resumed')).toEqual([{ type: 'resumed', skill_id: 'gone' }]);
    expect(h.system.fallback.breaker.state('gone')).toBe('closed');
    // Deregistered everywhere: nothing left to remember.
    h.bus.publish(specDeregister('kept', { skill_id: 'kept' }), 'c3');
    h.bus.publish(specDeregister('kept', { skill_id: 'kept' }, 'kitchen'), 'c3');
    await h.settle();
    expect(h.system.fallback.registry.holds('kept')).toBe(false);
    expect(h.system.fallback.breaker.state('kept')).toBe('closed');
  });
});

describe('the registry file across a restart (src/plugins/README.md "Restarts"; FALLBACK-1 §3.1, §3.4)', () => {
  it('FALLBACK-1 §3.1: each registration comes back in its dialect — the legacy skill asked by broadcast once a connection opens, the spec skill by its own ping once heard from — and the start says what it restored', async () => {
    const file = registryFile();
    const first = boot(file);
    first.h.bus.publish(specRegister('spec.a', 10));
    first.h.bus.publish(legacyRegister('legacy.b', 20), 'legacy');
    // It answers a broadcast before the restart: heard (one nobody ever answered for comes back dormant, binding.test.ts).
    first.h.bus.publish(createMessage('ovos.skills.fallback.pong', { skill_id: 'legacy.b', can_handle: false }, { session: session('default') }), 'legacy');
    await first.h.settle();
    await first.store().flush();
    expect(first.store().entries().map(({ skill_id, legacy }) => ({ skill_id, legacy }))).toEqual([
      { skill_id: 'spec.a', legacy: false },
      { skill_id: 'legacy.b', legacy: true },
    ]);
    expect(only(withReason(first.h, 'registry_restored'))).toMatchObject({ level: 30, restored: 0, file });

    const { h } = boot(file);
    const restored = only(withReason(h, 'registry_restored'));
    // The file lists heard skills first (a file cut short keeps them): legacy.b answered, spec.a never did.
    expect(restored).toMatchObject({ level: 30, restored: 2, skills: ['legacy.b', 'spec.a'], dormant: ['spec.a'], file });
    expect(restored['msg']).toContain(`2 from ${file}`);
    expect(h.system.fallback.registry.entry('default', 'legacy.b')).toEqual({ priority: 20, connection: undefined, legacy: true, unheard: true, away: true });

    const spec = specSkill(h, 'spec.a', false, { connection: 'spec' });
    legacySkill(h, 'legacy.b', true);
    h.utter('hello', { session: session('s1'), utteranceId: 'u0' });
    await h.advance(1);
    expect(h.of('ovos.intent.unmatched')).toHaveLength(1); // no client connection yet: nobody to wait for
    expect(h.of('ovos.skills.fallback.ping')).toHaveLength(0);
    h.bus.openConnection('legacy');
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(1);
    expect(spec.pings).toHaveLength(0);
    expect(h.of('ovos.skills.fallback.ping')).toHaveLength(1);
    expect(only(h.of('ovos.intent.matched')).data['skill_id']).toBe('legacy.b');
    expect(h.of('ovos.skills.fallback.legacy.b.request')).toHaveLength(1);
    // The spec skill says something of its own (here: registers again): asked from then on, in its own dialect.
    h.bus.publish(specRegister('spec.a', 10), 'spec');
    h.utter('hello', { session: session('s1'), utteranceId: 'u2' });
    await h.advance(1);
    expect(spec.pings).toHaveLength(1);
  });

  it('a restored skill is bound to the connection it is first heard on (one info line) and is away when that connection closes; a pong from no connection brings it back unbound', async () => {
    const file = registryFile();
    const first = boot(file);
    first.h.bus.publish(legacyRegister('r.skill', 10));
    await first.h.settle();
    await first.store().flush();

    const { h } = boot(file);
    const back = (): Array<Record<string, unknown>> => withMsg(h, 'fallback skill heard from: back in the pools').filter((l) => l['skill_id'] === 'r.skill');
    h.bus.openConnection('c1');
    h.bus.subscribe((m) => {
      if (m.type === 'ovos.skills.fallback.ping') h.bus.publish(reply(m, 'ovos.skills.fallback.pong', { skill_id: 'r.skill', can_handle: false }), 'c1');
    });
    h.utter('one', { session: session('s1') });
    await h.advance(1);
    const line = [expect.objectContaining({ level: 30, skill_id: 'r.skill', connection: 'c1', sessions: ['default'] })];
    expect(back()).toEqual(line); // at its first pong over c1
    expect(h.system.fallback.registry.entry('default', 'r.skill')).toEqual({ priority: 10, connection: 'c1', legacy: true });
    h.utter('two', { session: session('s1') });
    await h.advance(1);
    expect(back()).toEqual(line); // already bound: nothing more to say

    h.bus.closeConnection('c1');
    await h.settle();
    expect(registered(h, 'default')).toEqual([]);
    expect(only(withReason(h, 'connection_closed'))).toMatchObject({ connection: 'c1', skills: ['r.skill'], away: ['r.skill'] });
    h.bus.publish(reply(createMessage('x', {}, { session: session('s1'), utterance_id: 'u-x' }), 'ovos.skills.fallback.pong', { skill_id: 'r.skill', can_handle: false }));
    await h.settle();
    expect(h.system.fallback.registry.entry('default', 'r.skill')).toEqual({ priority: 10, connection: undefined, legacy: true });
  });
});

describe('joining an existing bus', () => {
  it('FALLBACK-1 §3.1: when the bus comes (back) up, connected skills are asked to register again (ovos.fallback.reregister); going down asks nothing', async () => {
    const bus = new StatusBus();
    const h = createHarness(CONFIG, { bus });
    bus.report({ up: false, reason: 'socket closed' });
    await h.settle();
    expect(h.of('ovos.fallback.reregister')).toEqual([]);
    bus.report({ up: true });
    await h.settle();
    expect(only(h.of('ovos.fallback.reregister'))).toEqual({ type: 'ovos.fallback.reregister', data: {}, context: { source: 'fallback', session: { session_id: 'default' } } });
  });

  it('a closed system lets go of the bus: when the bus comes back it asks nobody to register or announce again, and a connection opening brings nothing back', async () => {
    const bus = new StatusBus();
    const h = createHarness(CONFIG, { bus });
    h.bus.publish(legacyRegister('wk.gone', 10), 'c1');
    await h.settle();
    h.bus.closeConnection('c1');
    await h.settle();
    expect(h.system.fallback.registry.entry('default', 'wk.gone')?.away).toBe(true);
    h.system.close();
    bus.report({ up: true });
    h.bus.openConnection('c2');
    await h.settle();
    expect(h.wire.map((m) => m.type)).toEqual(['ovos.skills.fallback.register']);
    expect(h.system.fallback.registry.entry('default', 'wk.gone')?.away).toBe(true);
  });
});

describe('OVOS-FALLBACK-1 §6 / §8.2 the match', () => {
  it('FALLBACK-1 §8.2 (ovos-wire-today): a legacy winner is dispatched with the range of the stage that took it; the one broadcast names every stage’s range', async () => {
    const h = createHarness(CONFIG);
    legacySkill(h, 'l.low', true);
    h.bus.publish(legacyRegister('l.low', 90), 'legacy');
    await h.settle();
    h.utter('hello', { session: session('s1') });
    await h.advance(1);
    expect(only(h.of('ovos.skills.fallback.ping')).data['range']).toEqual([0, 100]);
    expect(only(h.of('ovos.skills.fallback.l.low.request')).data).toMatchObject({ skill_id: 'l.low', range: [75, 100], utterance: 'hello' });
  });

  it('FALLBACK-1 §5: an empty pool returns None at once — no contest runs for a stage without skills', async () => {
    const h = createHarness(CONFIG);
    const labels: string[] = [];
    h.system.supervisor.observe({ contestStarted: (info) => void (info.kind === 'fallback' && labels.push(info.label)) });
    specSkill(h, 'low', true, { connection: undefined });
    h.bus.publish(specRegister('low', 90));
    await h.settle();
    h.utter('hello', { session: session('s1') });
    await h.advance(1);
    expect(only(h.of('ovos.intent.matched')).data['pipeline_id']).toBe('fallback_low');
    expect(labels).toEqual(['fallback_low']);
  });

  it('FALLBACK-1 §6.2: a stage whose whole pool declines answers None — a decline, not a failure', async () => {
    const h = createHarness(CONFIG);
    specSkill(h, 'no', false, { connection: undefined });
    h.bus.publish(specRegister('no', 10));
    await h.settle();
    h.utter('hello', { session: session('s1') });
    await h.advance(1);
    expect(h.of('ovos.intent.unmatched')).toHaveLength(1);
    // fallback_medium and fallback_low have empty pools (§5): passed over without a match (PipelineStage.declines).
    expect(withMsg(h, 'stage matched').map(({ stage, matched }) => ({ stage, matched }))).toEqual([{ stage: 'fallback_high', matched: false }]);
    expect(atLeast(h, 40)).toEqual([]);
  });

  it('FALLBACK-1 §6.1 / PIPELINE-1 §4.4: a pool the bound covers warns nothing; one it cannot is warned when built and, when cut, logged with a hint', async () => {
    const bound = 1_000;
    const h = createHarness(withConfig((config) => ({
      ...config,
      pipeline: ['fallback_low'],
      orchestrator: { ...config.orchestrator, matchTimeoutMs: bound },
      fallback: { ...config.fallback, pingTimeoutMs: bound / 2 },
    })));
    specSkill(h, 'silent-1', 'silent', { connection: undefined });
    specSkill(h, 'catch-all', true, { connection: undefined });
    h.bus.publish(specRegister('silent-1', 75));
    h.bus.publish(specRegister('catch-all', 100));
    await h.settle();
    h.utter('fits', { session: session('s1') });
    await h.advance(bound);
    expect(h.of('catch-all:fallback')).toHaveLength(1);
    expect(withReason(h, 'pool_exceeds_match_bound')).toEqual([]);
    expect(withReason(h, 'match_bound_cut')).toEqual([]);

    specSkill(h, 'silent-2', 'silent', { connection: undefined });
    h.bus.publish(specRegister('silent-2', 80));
    await h.settle();
    h.utter('too many', { session: session('s2') });
    await h.advance(bound);
    const exceeds = only(withReason(h, 'pool_exceeds_match_bound'));
    expect(exceeds).toMatchObject({ level: 40, pool_size: 3 });
    expect(exceeds['msg']).toMatch(/match bound/);
    const cut = only(withReason(h, 'match_bound_cut'));
    expect(cut).toMatchObject({ level: 40, awaiting: 'silent-2', never_asked: ['catch-all'] });
    expect(cut['hint']).toMatch(/pingTimeoutMs/);
    expect(cut['msg']).toMatch(/never asked/);
  });
});

describe('nothing retained after a contest (bounded memory)', () => {
  it('FALLBACK-1 §6: the plugin lets go of every contest once it ends — decided, timed out, or cut by the match bound', async () => {
    const bound = 2 * PING_TIMEOUT_MS;
    const h = createHarness(withConfig((config) => ({ ...config, pipeline: ['fallback_low'], orchestrator: { ...config.orchestrator, matchTimeoutMs: bound } })));
    specSkill(h, 'silent', 'silent', { connection: undefined });
    specSkill(h, 'willing', true, { connection: undefined });
    h.bus.publish(specRegister('silent', 80));
    h.bus.publish(specRegister('willing', 90));
    await h.settle();
    h.utter('decided after a timeout', { session: session('s1') });
    await h.advance(1);
    expect(h.system.fallback.liveContests).toBe(1);
    await h.advance(PING_TIMEOUT_MS);
    expect(h.of('willing:fallback')).toHaveLength(1);
    expect(h.system.fallback.liveContests).toBe(0);

    specSkill(h, 'silent-2', 'silent', { connection: undefined });
    h.bus.publish(specRegister('silent-2', 85));
    await h.settle();
    h.utter('cut by the bound', { session: session('s2') });
    await h.advance(1);
    expect(h.system.fallback.liveContests).toBe(1);
    await h.advance(bound);
    expect(withReason(h, 'match_bound_cut')).toHaveLength(1);
    expect(h.system.fallback.liveContests).toBe(0);
  });
});
