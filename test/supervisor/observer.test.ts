/**
 * The supervisor's observer (what the inspector and future metrics watch): it sees every contest start and end and
 * every drop with its reason, and an observer that throws is logged and disturbs nothing.
 */
import { describe, expect, it } from 'vitest';
import { createMessage } from '../../src/bus/message.js';
import type { ContestInfo, Drop } from '../../src/supervisor/supervisor.js';
import { createHarness, fallbackSkill } from '../support/harness.js';

describe('supervisor observer', () => {
  it('sees each contest start before its actor runs and end with its result, and every drop with its reason code', async () => {
    const h = createHarness();
    fallbackSkill(h, 'a.skill', 10);
    await h.settle();
    const started: Array<{ info: ContestInfo; pingsSent: number }> = [];
    const ended: Array<{ id: string; status: string }> = [];
    const drops: Drop[] = [];
    h.system.supervisor.observe({
      contestStarted: (info) => started.push({ info, pingsSent: h.of('a.skill.fallback.ping').length }),
      contestEnded: (info, result) => ended.push({ id: info.id, status: result.status }),
      dropped: (drop) => drops.push(drop),
    });
    h.utter('do a barrel roll', { session: { session_id: 'obs' } });
    await h.advance(10);
    expect(started.map((s) => s.info.kind).sort()).toEqual(['fallback', 'utterance']);
    // The fallback contest pings on its first step: the observer heard of it before that.
    expect(started.map((s) => [s.info.kind, s.pingsSent, s.info.sessionId])).toEqual(expect.arrayContaining([['fallback', 0, 'obs']]));
    expect(ended.map((e) => e.status)).toEqual(['done', 'done']);
    expect(new Set(ended.map((e) => e.id))).toEqual(new Set(started.map((s) => s.info.id)));

    h.bus.publish(createMessage('a.skill.fallback.pong', { skill_id: 'a.skill', can_handle: true }, { session: { session_id: 'obs' } }));
    await h.settle();
    expect(drops.map((d) => [d.reason, d.type, d.skillId])).toEqual([['no_live_contest', 'a.skill.fallback.pong', 'a.skill']]);
  });

  it('an observer that throws is logged with a reason and the utterance still ends with its handled', async () => {
    const h = createHarness();
    fallbackSkill(h, 'a.skill', 10);
    await h.settle();
    h.system.supervisor.observe({
      contestStarted: () => {
        throw new Error('observer bug');
      },
      contestEnded: () => {
        throw new Error('observer bug');
      },
    });
    h.utter('do a barrel roll', { session: { session_id: 'obs' } });
    await h.advance(10);
    expect(h.of('ovos.utterance.handled')).toHaveLength(1);
    expect(h.of('a.skill:fallback')).toHaveLength(1);
    expect(h.logs.filter((l) => l['reason'] === 'observer_threw').length).toBe(4);
  });
});
