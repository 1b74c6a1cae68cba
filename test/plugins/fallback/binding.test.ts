/**
 * Who speaks for a fallback skill (src/plugins/README.md, "Who speaks for a fallback skill"): on the embedded bus a
 * registration is bound to the client connection it was made or heard over, and once its skill has answered there, that
 * connection alone may deregister it (OVOS-FALLBACK-1 §3.2), register it again (§3.1) or answer its pings (§6.1) —
 * until the connection closes or the skill misses a ping, when the next connection it speaks over takes it (a skill
 * restarted in a new process). One connection holds at most `fallback.maxSkillsPerConnection` registrations of a
 * session (§3.4), and after a restart a registration nobody ever answered for is dormant (§3.1 × §6.1).
 * Both dialects: the spec's topics (`context.skill_id` set, as an impostor sets it too) and ovos-workshop's.
 * Harness: LocalBus (connections played by name) + ManualClock; no sleeps.
 */
import { describe, expect, it } from 'vitest';
import { createMessage, reply, type JsonObject, type Message } from '../../../src/bus/message.js';
import type { Config } from '../../../src/config/defaults.js';
import { DEFAULT_CONFIG } from '../../../src/config/defaults.js';
import { silentLogger } from '../../../src/log/logger.js';
import { RegistryStore } from '../../../src/plugins/fallback/registry-store.js';
import { createHarness, fallbackSkill, withConfig, type Harness } from '../../support/harness.js';
import { registryPlace } from '../../support/registry-file.js';

const CONFIG = withConfig((config) => ({ ...config, pipeline: ['fallback_high', 'fallback_medium', 'fallback_low'] }));
const PING_TIMEOUT_MS = CONFIG.fallback.pingTimeoutMs;
const QUOTA = DEFAULT_CONFIG.fallback.maxSkillsPerConnection;

const session = (id: string): JsonObject => ({ session_id: id });
const withReason = (h: Harness, reason: string): Array<Record<string, unknown>> => h.logs.filter((line) => line['reason'] === reason);
const winners = (h: Harness): unknown[] => h.of('ovos.intent.matched').map((m) => m.data['skill_id']);
const registered = (h: Harness, sessionId = 'default'): string[] => [...h.system.fallback.registry.availableFor(sessionId).keys()].sort();

type Dialect = 'spec' | 'legacy';

/** The dialect's topics: an impostor copies whatever the skill would send, `context.skill_id` included. */
const wire = (dialect: Dialect) => ({
  register: (skillId: string, priority: number): Message =>
    dialect === 'spec'
      ? createMessage('ovos.fallback.register', { skill_id: skillId, priority }, { skill_id: skillId, session: session('default') })
      : createMessage('ovos.skills.fallback.register', { skill_id: skillId, priority }, { session: session('default') }),
  deregister: (skillId: string): Message =>
    dialect === 'spec'
      ? createMessage('ovos.fallback.deregister', { skill_id: skillId }, { skill_id: skillId, session: session('default') })
      : createMessage('ovos.skills.fallback.deregister', { skill_id: skillId }, { session: session('default') }),
  registerAnswer: dialect === 'spec' ? 'ovos.fallback.register.response' : 'ovos.skills.fallback.register.response',
  deregisterAnswer: dialect === 'spec' ? 'ovos.fallback.deregister.response' : 'ovos.skills.fallback.deregister.response',
  isPing: (m: Message, skillId: string): boolean => m.type === (dialect === 'spec' ? `${skillId}.fallback.ping` : 'ovos.skills.fallback.ping'),
  pong: (ping: Message, skillId: string, canHandle: boolean): Message =>
    reply(ping, dialect === 'spec' ? `${skillId}.fallback.pong` : 'ovos.skills.fallback.pong', { skill_id: skillId, can_handle: canHandle }),
});

/**
 * A process answering `skillId`'s pings over `via.connection` with `via.verdict` (after `via.delayMs`), and finishing
 * its dispatches there; `silent` plays a process that hangs with its socket open. Registers only when told.
 */
function skillProcess(
  h: Harness,
  dialect: Dialect,
  skillId: string,
  via: { connection: string; verdict: boolean | 'silent'; delayMs?: number },
): { pings: Message[] } {
  const w = wire(dialect);
  const pings: Message[] = [];
  h.bus.subscribe((m) => {
    if (w.isPing(m, skillId)) {
      pings.push(m);
      const { connection, verdict, delayMs = 0 } = via;
      if (verdict === 'silent') return;
      const answer = (): void => h.bus.publish(w.pong(m, skillId, verdict), connection);
      if (delayMs === 0) answer();
      else h.clock.setTimeout(answer, delayMs);
    } else if (m.type === `${skillId}:fallback`) {
      h.bus.publish(reply(m, 'mycroft.skill.handler.complete'), via.connection);
    } else if (m.type === `ovos.skills.fallback.${skillId}.request`) {
      h.bus.publish({ ...m, type: `ovos.skills.fallback.${skillId}.response`, data: { result: true } }, via.connection);
    }
  });
  return { pings };
}

/**
 * `x` (priority 10, fallback_high) registered over 'owner' and heard answering one ping there (it declined); a
 * catch-all (in process, fallback_low) answers every utterance after it.
 */
async function heldByOwner(dialect: Dialect): Promise<{ h: Harness; owner: { connection: string; verdict: boolean | 'silent'; delayMs?: number } }> {
  const h = createHarness(CONFIG);
  const owner: { connection: string; verdict: boolean | 'silent'; delayMs?: number } = { connection: 'owner', verdict: false };
  skillProcess(h, dialect, 'x', owner);
  h.bus.publish(wire(dialect).register('x', 10), 'owner');
  fallbackSkill(h, 'catch.all', 90);
  await h.settle();
  h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'first' });
  await h.advance(1);
  expect(winners(h)).toEqual(['catch.all']);
  expect(h.system.fallback.registry.holder('default', 'x')).toBe('owner');
  return { h, owner };
}

describe.each(['spec', 'legacy'] as const)('FALLBACK-1 §3 / §6.1 only its own connection speaks for a skill that answers there (%s dialect)', (dialect) => {
  const w = wire(dialect);

  it('FALLBACK-1 §3.2: a deregistration from another connection — context.skill_id copied — is refused (skill_bound_elsewhere), answered, counted each time and warned once a minute; the skill keeps being asked', async () => {
    const { h } = await heldByOwner(dialect);
    const dropped: Array<[string, string | undefined]> = [];
    h.system.supervisor.observe({ dropped: (drop) => dropped.push([drop.reason, drop.skillId]) });
    h.bus.publish(w.deregister('x'), 'intruder');
    h.bus.publish(w.deregister('x'), 'intruder');
    await h.settle();
    expect(registered(h)).toEqual(['catch.all', 'x']);
    expect(h.of(w.deregisterAnswer).map((m) => m.data)).toEqual([
      { skill_id: 'x', accepted: false, reason: 'skill_bound_elsewhere' },
      { skill_id: 'x', accepted: false, reason: 'skill_bound_elsewhere' },
    ]);
    expect(withReason(h, 'skill_bound_elsewhere')).toEqual([expect.objectContaining({ level: 40, skill_id: 'x', connection: 'intruder' })]);
    // What the metrics (ovos_messages_dropped_total) and the inspector hear: both refusals.
    expect(dropped).toEqual([
      ['skill_bound_elsewhere', 'x'],
      ['skill_bound_elsewhere', 'x'],
    ]);
    h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'after' });
    await h.advance(1);
    expect(h.wire.filter((m) => w.isPing(m, 'x') && m.context['utterance_id'] === 'after')).toHaveLength(1);
  });

  it('FALLBACK-1 §3.1: a registration from another connection is refused (skill_bound_elsewhere): the skill keeps its priority and its connection, and the other one closing takes nothing away', async () => {
    const { h } = await heldByOwner(dialect);
    h.bus.publish(w.register('x', 1), 'intruder');
    await h.settle();
    expect(h.of(w.registerAnswer).map((m) => m.data)).toEqual([{ skill_id: 'x', accepted: false, reason: 'skill_bound_elsewhere' }]);
    expect(h.system.fallback.registry.entry('default', 'x')).toMatchObject({ priority: 10, connection: 'owner' });
    h.bus.closeConnection('intruder');
    await h.settle();
    expect(registered(h)).toEqual(['catch.all', 'x']);
  });

  it('FALLBACK-1 §6.1: a pong for it from another connection is dropped (skill_bound_elsewhere) and never counted: the skill\'s own later "no" decides', async () => {
    const { h, owner } = await heldByOwner(dialect);
    owner.delayMs = 100;
    h.bus.subscribe((m) => {
      if (w.isPing(m, 'x')) h.bus.publish(w.pong(m, 'x', true), 'intruder');
    });
    h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(99);
    expect(winners(h)).toEqual(['catch.all']); // the first utterance's: the impostor's "yes" decided nothing
    await h.advance(1);
    expect(winners(h)).toEqual(['catch.all', 'catch.all']);
    expect(h.of('x:fallback')).toEqual([]);
    expect(h.of('ovos.skills.fallback.x.request')).toEqual([]);
    expect(withReason(h, 'skill_bound_elsewhere')).toEqual([expect.objectContaining({ level: 40, msg: 'message dropped' })]);
  });

  it('FALLBACK-1 §3.1 / §6.1: an impostor whose messages were refused is not where the skill is when its connection closes — the restarted skill registers over its new connection and wins', async () => {
    const { h, owner } = await heldByOwner(dialect);
    h.bus.subscribe((m) => {
      if (w.isPing(m, 'x')) h.bus.publish(w.pong(m, 'x', true), 'intruder');
    });
    h.bus.publish(w.register('x', 1), 'intruder');
    h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(1);
    expect(h.system.supervisor.latestConnectionOf('x')).toBe('owner');
    h.bus.closeConnection('owner');
    await h.settle();
    expect(h.system.fallback.registry.entry('default', 'x')?.connection).not.toBe('intruder');
    owner.connection = 'restarted';
    owner.verdict = true;
    h.bus.publish(w.register('x', 10), 'restarted');
    await h.settle();
    expect(h.system.fallback.registry.entry('default', 'x')).toMatchObject({ priority: 10, connection: 'restarted' });
    h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'u2' });
    await h.advance(1);
    expect(winners(h).at(-1)).toBe('x');
    expect(h.system.fallback.registry.holder('default', 'x')).toBe('restarted');
  });

  it('FALLBACK-1 §3.1 / §3.2: its own connection registers it again (new priority) and deregisters it', async () => {
    const { h } = await heldByOwner(dialect);
    h.bus.publish(w.register('x', 20), 'owner');
    await h.settle();
    expect(h.system.fallback.registry.availableFor('default').get('x')).toBe(20);
    h.bus.publish(w.deregister('x'), 'owner');
    await h.settle();
    expect(registered(h)).toEqual(['catch.all']);
    expect(h.of(w.registerAnswer)).toEqual([]);
    expect(h.of(w.deregisterAnswer)).toEqual([]);
    expect(withReason(h, 'skill_bound_elsewhere')).toEqual([]);
  });

  it('FALLBACK-1 §3.1: once its connection has closed, a registration over a new connection binds it there (a skill restarted in a new process)', async () => {
    const { h, owner } = await heldByOwner(dialect);
    h.bus.closeConnection('owner');
    await h.settle();
    owner.connection = 'restarted';
    owner.verdict = true;
    h.bus.publish(w.register('x', 10), 'restarted');
    await h.settle();
    expect(h.of(w.registerAnswer)).toEqual([]);
    expect(h.system.fallback.registry.entry('default', 'x')).toMatchObject({ connection: 'restarted' });
    h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(1);
    expect(winners(h).at(-1)).toBe('x');
    expect(h.system.fallback.registry.holder('default', 'x')).toBe('restarted');
  });

  it('FALLBACK-1 §3.2 / §6.1: once its connection has closed, a new connection may deregister it, and its pong there is counted', async () => {
    const { h, owner } = await heldByOwner(dialect);
    h.bus.closeConnection('owner');
    await h.settle();
    // Its bus client reconnects; it never registers again — its pong (to a later ping) brings it back, bound there.
    h.bus.openConnection('restarted');
    owner.connection = 'restarted';
    owner.verdict = true;
    h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(1);
    expect(winners(h).at(-1)).toBe('x');
    expect(h.system.fallback.registry.holder('default', 'x')).toBe('restarted');
    h.bus.publish(w.deregister('x'), 'restarted');
    await h.settle();
    expect(registered(h)).toEqual(['catch.all']);
    expect(h.of(w.deregisterAnswer)).toEqual([]);
  });

  it('FALLBACK-1 §6.1: once it missed a ping over its connection (its old process hangs, the socket open), the new process takes it over — its registration, its pong, then its deregistration', async () => {
    const { h, owner } = await heldByOwner(dialect);
    owner.verdict = 'silent'; // the old process hangs
    const restarted = { connection: 'restarted', verdict: true as boolean | 'silent' };
    skillProcess(h, dialect, 'x', restarted);
    h.bus.publish(w.register('x', 10), 'restarted');
    await h.settle();
    expect(h.of(w.registerAnswer).map((m) => m.data['reason'])).toEqual(['skill_bound_elsewhere']); // the old one still holds it

    // Asked: the old process is silent, the new one's "yes" is not counted yet — one ping timeout, then the binding lapses.
    const asked = h.clock.now();
    h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(PING_TIMEOUT_MS);
    expect(winners(h)).toEqual(['catch.all', 'catch.all']);
    expect(h.clock.now() - asked).toBe(PING_TIMEOUT_MS);
    expect(withReason(h, 'ping_timeout')).toEqual([expect.objectContaining({ skill_id: 'x' })]);
    expect(h.system.fallback.registry.holder('default', 'x')).toBeUndefined();

    // Its pong over the new connection binds it there, and counts: it wins at once.
    h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'u2' });
    await h.advance(1);
    expect(winners(h)).toEqual(['catch.all', 'catch.all', 'x']);
    expect(h.system.fallback.registry.holder('default', 'x')).toBe('restarted');
    expect(withReason(h, 'skill_taken_over')).toEqual([expect.objectContaining({ level: 30, skill_id: 'x', connection: 'restarted' })]);
    // Now the old connection is the other one: refused there, accepted here.
    h.bus.publish(w.deregister('x'), 'owner');
    await h.settle();
    expect(registered(h)).toEqual(['catch.all', 'x']);
    h.bus.publish(w.deregister('x'), 'restarted');
    await h.settle();
    expect(registered(h)).toEqual(['catch.all']);
  });

  it('FALLBACK-1 §3.1: once it missed a ping, a registration over a new connection is accepted and binds it there', async () => {
    const { h, owner } = await heldByOwner(dialect);
    owner.verdict = 'silent';
    h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(PING_TIMEOUT_MS);
    h.bus.publish(w.register('x', 30), 'restarted');
    await h.settle();
    expect(h.of(w.registerAnswer)).toEqual([]);
    expect(h.system.fallback.registry.entry('default', 'x')).toMatchObject({ priority: 30, connection: 'restarted' });
    // The old connection closing takes nothing away any more.
    h.bus.closeConnection('owner');
    await h.settle();
    expect(registered(h)).toEqual(['catch.all', 'x']);
  });
});

describe('FALLBACK-1 §3.1 / §3.4 the registrations one connection may make (fallback.maxSkillsPerConnection)', () => {
  const bigSession = withConfig((config) => ({ ...config, pipeline: ['fallback_high', 'fallback_medium', 'fallback_low'], fallback: { ...config.fallback, maxSkillsPerSession: 128 } }));

  it('config: the default is 32, half of fallback.maxSkillsPerSession', () => {
    expect(QUOTA).toBe(32);
    expect(DEFAULT_CONFIG.fallback.maxSkillsPerSession).toBe(2 * QUOTA);
  });

  it('FALLBACK-1 §3.4: one connection registering 70 skills gets 32 places; the 38 others are refused (connection_quota), each answered, warned once; another connection still registers', async () => {
    const h = createHarness(CONFIG);
    for (let i = 0; i < 70; i++) {
      const message = i % 2 === 0 ? wire('spec').register(`fake.${i}`, 10) : wire('legacy').register(`fake.${i}`, 10);
      h.bus.publish(message, 'flood');
    }
    await h.settle();
    expect(registered(h)).toHaveLength(QUOTA);
    const answers = [...h.of('ovos.fallback.register.response'), ...h.of('ovos.skills.fallback.register.response')];
    expect(answers).toHaveLength(70 - QUOTA);
    expect(new Set(answers.map((m) => m.data['reason']))).toEqual(new Set(['connection_quota']));
    // Warned once per dialect's topic, not once per skill.
    const warns = withReason(h, 'connection_quota');
    expect(warns.map((l) => [l['level'], l['type'], l['connection']])).toEqual([
      [40, 'ovos.fallback.register', 'flood'],
      [40, 'ovos.skills.fallback.register', 'flood'],
    ]);

    // Registering again one it holds is not a new place; another connection is not held back.
    h.bus.publish(wire('spec').register('fake.0', 40), 'flood');
    h.bus.publish(wire('spec').register('real.skill', 20), 'skills');
    await h.settle();
    expect(h.system.fallback.registry.availableFor('default').get('fake.0')).toBe(40);
    expect(registered(h)).toContain('real.skill');
    expect(answers).toHaveLength(70 - QUOTA);
  });

  it('FALLBACK-1 §3.4: the quota is per session, and with no connection identity (in process, a foreign bus) there is none', async () => {
    const h = createHarness(bigSession);
    for (let i = 0; i < 40; i++) h.bus.publish(wire('spec').register(`local.${i}`, 10));
    for (let i = 0; i < 40; i++) {
      h.bus.publish(createMessage('ovos.fallback.register', { skill_id: `kitchen.${i}`, priority: 10 }, { skill_id: `kitchen.${i}`, session: session('kitchen') }), 'flood');
    }
    await h.settle();
    expect(h.system.fallback.registry.entries().filter((e) => e.sessionId === 'default')).toHaveLength(40);
    expect(h.system.fallback.registry.entries().filter((e) => e.sessionId === 'kitchen')).toHaveLength(QUOTA);
  });
});

describe('FALLBACK-1 §3.1 × §6.1 after a restart, registrations nobody answered for cost nothing', () => {
  /** Room for exactly 71 in "default": the flood (over three connections, the quota's way round) fills it. */
  const config: Config = withConfig((c) => ({ ...c, pipeline: ['fallback_high', 'fallback_medium', 'fallback_low'], fallback: { ...c.fallback, maxSkillsPerSession: 71 } }));

  function boot(file: string): { h: Harness; store: () => RegistryStore } {
    let opened: RegistryStore | undefined;
    const h = createHarness(config, {
      registryStore: (clock) => (opened = RegistryStore.open(file, { logger: silentLogger(), now: () => clock.now(), forgetAfterMs: config.fallback.forgetAfterMs })),
    });
    return { h, store: () => opened! };
  }

  it('FALLBACK-1 §6.1: 70 registrations never answered for (both dialects, three connections) and one skill heard: after a restart only the heard one is in the pool, and an utterance no skill handles ends at once — no ping timeout', async () => {
    const { file } = registryPlace('ovos-binding-');
    const first = boot(file);
    const live = { connection: 'workshop', verdict: false as boolean | 'silent' };
    skillProcess(first.h, 'legacy', 'live.workshop', live);
    first.h.bus.publish(wire('legacy').register('live.workshop', 30), 'workshop');
    const fakes: string[] = [];
    for (let i = 0; i < 70; i++) {
      const skillId = `fake.${i}`;
      fakes.push(skillId);
      const connection = ['flood-a', 'flood-b', 'flood-c'][Math.floor(i / QUOTA)]!;
      first.h.bus.publish(wire(i % 2 === 0 ? 'legacy' : 'spec').register(skillId, 10 + (i % 50)), connection);
    }
    await first.h.settle();
    expect(registered(first.h)).toHaveLength(71);
    // While the daemon runs, the silent fakes do cost: the broadcast's ping timeout, then each spec one's in turn.
    const asked = first.h.clock.now();
    first.h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'before' });
    await first.h.advance(PING_TIMEOUT_MS);
    expect(first.h.of('ovos.utterance.handled')).toEqual([]);
    expect(first.h.clock.now() - asked).toBe(PING_TIMEOUT_MS);
    await first.h.advance(CONFIG.orchestrator.matchTimeoutMs * 3);
    expect(first.h.of('ovos.utterance.handled')).toHaveLength(1);
    await first.store().flush();
    expect(first.store().entries().filter((e) => e.heard === false).map((e) => e.skill_id).sort()).toEqual([...fakes].sort());
    expect(first.store().entries().find((e) => e.skill_id === 'live.workshop')?.heard).toBeUndefined();
    first.h.system.close();

    const { h } = boot(file);
    // The line names at most 20 skills of a list and counts the rest.
    expect(withReason(h, 'registry_restored')).toEqual([expect.objectContaining({ restored: 71, never_heard: [...fakes.slice(0, 20), '…(+50 more)'] })]);
    expect(fakes.every((skill) => h.system.fallback.registry.entry('default', skill)?.dormant === true)).toBe(true);
    h.bus.openConnection('workshop'); // its bus client reconnects
    skillProcess(h, 'legacy', 'live.workshop', live);
    await h.settle();
    expect(registered(h)).toEqual(['live.workshop']);

    const start = h.clock.now();
    h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'after' });
    await h.settle();
    expect(h.of('ovos.intent.unmatched')).toHaveLength(1);
    expect(h.of('ovos.utterance.handled')).toHaveLength(1);
    expect(h.clock.now() - start).toBe(0); // every fallback stage decided without waiting
    expect(h.wire.filter((m) => fakes.some((skill) => m.type === `${skill}.fallback.ping`))).toEqual([]);
    expect(withReason(h, 'ping_timeout')).toEqual([]);

    // The fakes give their places up to skills that register now.
    h.bus.publish(wire('spec').register('new.skill', 20), 'skills');
    await h.settle();
    expect(registered(h)).toEqual(['live.workshop', 'new.skill']);
    expect(withReason(h, 'registry_evicted')).toEqual([expect.objectContaining({ skill_id: expect.stringMatching(/^fake\./) })]);
  });

  it('FALLBACK-1 §3.1: a workshop skill that registered and was never asked before the restart is dormant after it — its answer to the first utterance\'s broadcast brings it back at its registered priority', async () => {
    const { file } = registryPlace('ovos-binding-');
    const first = boot(file);
    first.h.bus.publish(wire('legacy').register('quiet.workshop', 20), 'workshop');
    await first.h.settle();
    await first.store().flush();
    first.h.system.close();

    const { h } = boot(file);
    fallbackSkill(h, 'catch.all', 90);
    h.bus.openConnection('workshop');
    skillProcess(h, 'legacy', 'quiet.workshop', { connection: 'workshop', verdict: true });
    await h.settle();
    expect(h.system.fallback.registry.entry('default', 'quiet.workshop')).toMatchObject({ dormant: true });
    h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(1);
    // Asked by the utterance's broadcast at its arrival (a probe for it); its "yes" brings it back before the stages.
    expect(winners(h)).toEqual(['quiet.workshop']);
    expect(h.of('ovos.skills.fallback.ping')).toHaveLength(1);
    expect(h.system.fallback.registry.availableFor('default').get('quiet.workshop')).toBe(20);
    h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'u2' });
    await h.advance(1);
    expect(winners(h)).toEqual(['quiet.workshop', 'quiet.workshop']);
  });
});
