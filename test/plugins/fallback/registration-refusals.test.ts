/**
 * Who may deregister (OVOS-FALLBACK-1 §3.2), how much the session-scoped registry (§3.4) holds, and how a refused
 * register/deregister is answered on the bus (our extension: `<type>.response` with `{skill_id?, accepted: false,
 * reason}`) and logged (one warn per reason and skill per minute).
 */
import { describe, expect, it } from 'vitest';
import { createMessage, type JsonObject, type Message } from '../../../src/bus/message.js';
import { createHarness, withConfig, type Harness } from '../../support/harness.js';
import type { Config } from '../../../src/config/defaults.js';

const CONFIG = withConfig((config) => ({ ...config, pipeline: ['fallback_high', 'fallback_medium', 'fallback_low'] }));
const bounded = (fallback: Partial<Config['fallback']>): Config => ({ ...CONFIG, fallback: { ...CONFIG.fallback, ...fallback } });

const session = (id: string): JsonObject => ({ session_id: id });
const withReason = (h: Harness, reason: string): Array<Record<string, unknown>> => h.logs.filter((line) => line['reason'] === reason);
const registered = (h: Harness, sessionId: string): string[] => [...h.system.fallback.registry.availableFor(sessionId).keys()].sort();

const register = (skillId: string, priority: number, context: JsonObject = {}): Message =>
  createMessage('ovos.fallback.register', { skill_id: skillId, priority }, { skill_id: skillId, session: session('default'), ...context });
const deregister = (skillId: string, context: JsonObject = {}): Message =>
  createMessage('ovos.fallback.deregister', { skill_id: skillId }, { session: session('default'), ...context });

describe('FALLBACK-1 §3.2 deregistration', () => {
  it('FALLBACK-1 §3.2: a deregister without context.skill_id over the connection that registered the skill is accepted', async () => {
    const h = createHarness(CONFIG);
    h.bus.publish(register('a', 10), 'c1');
    await h.settle();
    h.bus.publish(deregister('a'), 'c1');
    await h.settle();
    expect(registered(h, 'default')).toEqual([]);
    expect(h.of('ovos.fallback.deregister.response')).toEqual([]);
    expect(h.logs.filter((l) => l['level'] === 40)).toEqual([]);
  });

  it('FALLBACK-1 §3.2: with a matching context.skill_id a deregister is accepted from anywhere (a foreign bus has no connections)', async () => {
    const h = createHarness(CONFIG);
    h.bus.publish(register('a', 10), 'c1');
    await h.settle();
    h.bus.publish(deregister('a', { skill_id: 'a' }));
    await h.settle();
    expect(registered(h, 'default')).toEqual([]);
    expect(h.of('ovos.fallback.deregister.response')).toEqual([]);
  });

  it('FALLBACK-1 §3.2: without context.skill_id, from another connection or none, a deregister is refused (deregister_not_owner) and answered', async () => {
    const h = createHarness(CONFIG);
    h.bus.publish(register('a', 10), 'c1');
    h.bus.publish(register('local', 20)); // registered in-process: no connection can prove ownership
    await h.settle();
    h.bus.publish(deregister('a', { source: 'intruder', destination: 'core' }), 'c2');
    h.bus.publish(deregister('a'));
    h.bus.publish(deregister('local'));
    await h.settle();
    expect(registered(h, 'default')).toEqual(['a', 'local']);
    const answers = h.of('ovos.fallback.deregister.response');
    expect(answers.map((m) => m.data)).toEqual([
      { skill_id: 'a', accepted: false, reason: 'deregister_not_owner' },
      { skill_id: 'a', accepted: false, reason: 'deregister_not_owner' },
      { skill_id: 'local', accepted: false, reason: 'deregister_not_owner' },
    ]);
    // Derived with response(): routing flipped, session kept.
    expect(answers[0]!.context).toEqual({ source: 'core', destination: 'intruder', session: session('default') });
    // One warn a minute per reason and sender (rate-limited): connection c2's, then the in-process sender's first
    // (its refusal for 'local' is counted into the next line, not logged: the ids a sender names are its own choice).
    const warns = withReason(h, 'deregister_not_owner');
    expect(warns.map((l) => [l['level'], l['skill_id'], l['connection']])).toEqual([
      [40, 'a', 'c2'],
      [40, 'a', undefined],
    ]);
  });

  it('FALLBACK-1 §3.2: an unknown skill_id without context.skill_id is still a no-op, not a refusal', async () => {
    const h = createHarness(CONFIG);
    h.bus.publish(deregister('ghost'));
    await h.settle();
    expect(h.of('ovos.fallback.deregister.response')).toEqual([]);
    expect(withReason(h, 'deregister_not_owner')).toEqual([]);
  });

  it('FALLBACK-1 §3.2: a deregister whose context.skill_id differs is refused (context_skill_id_mismatch) and answered', async () => {
    const h = createHarness(CONFIG);
    h.bus.publish(register('a', 10), 'c1');
    await h.settle();
    h.bus.publish(deregister('a', { skill_id: 'b' }), 'c1');
    await h.settle();
    expect(registered(h, 'default')).toEqual(['a']);
    expect(h.of('ovos.fallback.deregister.response').map((m) => m.data)).toEqual([
      { skill_id: 'a', accepted: false, reason: 'context_skill_id_mismatch' },
    ]);
    expect(withReason(h, 'context_skill_id_mismatch').map((l) => l['level'])).toEqual([40]);
  });
});

describe('FALLBACK-1 §3.1 refused registrations are answered on the bus', () => {
  it('FALLBACK-1 §3.1: dialect refusals are answered with ovos.fallback.register.response {skill_id?, accepted: false, reason}', async () => {
    const h = createHarness(CONFIG);
    const context = { source: 'skill', destination: 'core' };
    h.bus.publish(createMessage('ovos.fallback.register', { skill_id: 'impostor', priority: 10 }, { skill_id: 'victim', session: session('default'), ...context }));
    h.bus.publish(createMessage('ovos.fallback.register', { skill_id: 'a', priority: 10.5 }, { skill_id: 'a', session: session('default'), ...context }));
    h.bus.publish(createMessage('ovos.fallback.register', { priority: 10 }, { session: session('default'), ...context }));
    h.bus.publish(register('fine', 10));
    await h.settle();
    const answers = h.of('ovos.fallback.register.response');
    expect(answers.map((m) => m.data)).toEqual([
      { skill_id: 'impostor', accepted: false, reason: 'context_skill_id_mismatch' },
      { skill_id: 'a', accepted: false, reason: 'priority_invalid' },
      { accepted: false, reason: 'skill_id_missing' },
    ]);
    expect(answers[0]!.context).toEqual({ skill_id: 'victim', session: session('default'), source: 'core', destination: 'skill' });
    for (const reason of ['context_skill_id_mismatch', 'priority_invalid', 'skill_id_missing']) {
      expect(withReason(h, reason).map((l) => l['level'])).toEqual([40]);
    }
    expect(registered(h, 'default')).toEqual(['fine']);
  });

  it('FALLBACK-1 §3.1 (ovos-wire-today): a legacy registration the dialect refuses is answered on its own topic, ovos.skills.fallback.register.response, warned and counted like the spec\'s', async () => {
    const h = createHarness(CONFIG);
    const dropped: string[] = [];
    h.system.supervisor.observe({ dropped: (drop) => dropped.push(drop.reason) });
    h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: 'a', priority: 'high' }, { session: session('default') }), 'c1');
    h.bus.publish(createMessage('ovos.skills.fallback.register', { priority: 10 }, { session: session('default') }), 'c1');
    await h.settle();
    expect(h.of('ovos.skills.fallback.register.response').map((m) => m.data)).toEqual([
      { skill_id: 'a', accepted: false, reason: 'priority_invalid' },
      { accepted: false, reason: 'skill_id_missing' },
    ]);
    expect(h.of('ovos.fallback.register.response')).toEqual([]);
    expect(withReason(h, 'priority_invalid')).toEqual([expect.objectContaining({ level: 40, msg: 'message dropped', skill_id: 'a', connection: 'c1' })]);
    expect(dropped).toEqual(['priority_invalid', 'skill_id_missing']);
    expect(registered(h, 'default')).toEqual([]);
  });

  it('FALLBACK-1 §3.1: a registration refused again and again is answered every time but warned once a minute, then with the count', async () => {
    const h = createHarness(CONFIG);
    const bad = (): Message => createMessage('ovos.fallback.register', { skill_id: 'a', priority: 'high' }, { skill_id: 'a', session: session('default') });
    for (let i = 0; i < 3; i++) h.bus.publish(bad());
    await h.settle();
    expect(h.of('ovos.fallback.register.response')).toHaveLength(3);
    expect(withReason(h, 'priority_invalid')).toHaveLength(1);
    h.clock.advance(60_000);
    h.bus.publish(bad());
    await h.settle();
    const warns = withReason(h, 'priority_invalid');
    expect(warns).toHaveLength(2);
    expect(warns[1]).toMatchObject({ level: 40, suppressed: 2 });
  });
});

describe('FALLBACK-1 §3.4 registry bounds through the plugin', () => {
  it('FALLBACK-1 §3.4: a new skill beyond fallback.maxSkillsPerSession is refused (registry_full) and answered; re-registering is allowed', async () => {
    const h = createHarness(bounded({ maxSkillsPerSession: 2 }));
    const kitchen = { session: session('kitchen') };
    h.bus.publish(register('a', 10, kitchen));
    h.bus.publish(register('b', 20, kitchen));
    h.bus.publish(register('c', 30, kitchen));
    h.bus.publish(register('a', 40, kitchen));
    await h.settle();
    expect(registered(h, 'kitchen')).toEqual(['a', 'b']);
    expect(h.system.fallback.registry.availableFor('kitchen').get('a')).toBe(40);
    const answers = h.of('ovos.fallback.register.response');
    expect(answers.map((m) => m.data)).toEqual([{ skill_id: 'c', accepted: false, reason: 'registry_full' }]);
    expect(answers[0]!.context['session']).toEqual(session('kitchen'));
    expect(withReason(h, 'registry_full')).toEqual([expect.objectContaining({ level: 40, skill_id: 'c', session_id: 'kitchen' })]);
  });

  it('FALLBACK-1 §3.4: a registration for a new session beyond fallback.maxSessions is refused; "default" does not count', async () => {
    const h = createHarness(bounded({ maxSessions: 1 }));
    h.bus.publish(register('a', 10));
    h.bus.publish(register('a', 10, { session: session('s1') }));
    h.bus.publish(register('b', 10, { session: session('s2') }));
    await h.settle();
    expect(registered(h, 's1')).toEqual(['a']);
    expect(registered(h, 's2')).toEqual(['a']); // only the "default" one
    expect(h.of('ovos.fallback.register.response').map((m) => m.data)).toEqual([{ skill_id: 'b', accepted: false, reason: 'registry_full' }]);
  });

  it('FALLBACK-1 §3.4: a session’s registrations go when the connection that made them closes, making room for another session', async () => {
    const h = createHarness(bounded({ maxSessions: 1 }));
    h.bus.publish(register('a', 10, { session: session('s1') }), 'c1');
    await h.settle();
    h.bus.closeConnection('c1');
    h.bus.publish(register('b', 10, { session: session('s2') }), 'c2');
    await h.settle();
    expect(registered(h, 's1')).toEqual([]);
    expect(registered(h, 's2')).toEqual(['b']);
    expect(h.of('ovos.fallback.register.response')).toEqual([]);
  });
});
