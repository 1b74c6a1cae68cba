/**
 * Log volume of registrations (src/plugins/fallback/fallback.plugin.ts, README "Safe on a shared machine"): accepted
 * registrations, deregistrations and the evictions they cause are logged at most 64 times a minute per client
 * connection, the rest counted into the next line (`suppressed`); registrations without connection identity count as
 * one connection's. On the harness's ManualClock; OVOS-FALLBACK-1 §3.1 registrations in the legacy dialect.
 */
import { describe, expect, it } from 'vitest';
import { createMessage, type Message } from '../../../src/bus/message.js';
import { createHarness, withConfig, type Harness } from '../../support/harness.js';

const CONFIG = withConfig((config) => ({ ...config, pipeline: ['fallback_high', 'fallback_medium', 'fallback_low'] }));
const register = (skillId: string, sessionId: string): Message => createMessage('ovos.skills.fallback.register', { skill_id: skillId, priority: 50 }, { session: { session_id: sessionId } });
const lines = (h: Harness, msg: string): Array<Record<string, unknown>> => h.logs.filter((line) => line['msg'] === msg);

describe('FALLBACK-1 §3.1 registrations: log lines bounded per connection', () => {
  it('100 registrations over one connection log 64 lines in a minute; the next line after it counts the 36 suppressed; another connection is logged meanwhile', async () => {
    const h = createHarness(CONFIG);
    for (let i = 0; i < 100; i++) h.bus.publish(register(`flood.${i}`, `s${i % 4}`), 'flood');
    h.bus.publish(register('real.skill', 'default'), 'skills');
    await h.settle();
    expect(h.system.fallback.registry.entries()).toHaveLength(101);
    const first = lines(h, 'fallback skill registered');
    expect(first.filter((l) => l['connection'] === 'flood')).toHaveLength(64);
    expect(first.filter((l) => l['connection'] === 'skills')).toEqual([expect.objectContaining({ skill_id: 'real.skill' })]);
    expect(first.some((l) => l['suppressed'] !== undefined)).toBe(false);

    h.clock.advance(59_999);
    h.bus.publish(register('flood.late', 's0'), 'flood');
    await h.settle();
    expect(lines(h, 'fallback skill registered')).toHaveLength(65);
    h.clock.advance(1);
    h.bus.publish(register('flood.later', 's0'), 'flood');
    await h.settle();
    expect(lines(h, 'fallback skill registered').at(-1)).toEqual(expect.objectContaining({ skill_id: 'flood.later', connection: 'flood', suppressed: 37 }));
  });

  it('without connection identity (in process), registrations in 100 sessions count as one sender\'s: 64 lines', async () => {
    const h = createHarness(CONFIG);
    for (let i = 0; i < 100; i++) h.bus.publish(register(`p.${i}`, `session-${i}`));
    await h.settle();
    expect(h.system.fallback.registry.entries()).toHaveLength(100);
    expect(lines(h, 'fallback skill registered')).toHaveLength(64);
  });
});
