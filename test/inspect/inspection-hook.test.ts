/**
 * One inspection hook sees every contest (the future live page and diagrams build on this): the supervisor hands
 * the same `inspect` to every actor it spawns — utterance lifecycles, fallback contests, common-query contests.
 */
import { describe, expect, it } from 'vitest';
import type { InspectionEvent } from 'xstate';
import { LocalBus } from '../../src/bus/local-bus.js';
import { createMessage, reply } from '../../src/bus/message.js';
import { ManualClock } from '../../src/clock/manual-clock.js';
import { createContestSystem } from '../../src/system.js';

describe('the inspection hook', () => {
  it('receives the events and snapshots of every kind of contest actor, keyed by actor', async () => {
    const bus = new LocalBus();
    const events: InspectionEvent[] = [];
    const system = createContestSystem({ bus, clock: new ManualClock(), inspect: (event) => events.push(event) });
    // A fallback skill that declines, so the utterance walks through common query and every fallback stage.
    bus.subscribe((m) => {
      if (m.type === 'a.skill.fallback.ping') bus.publish(reply(m, 'a.skill.fallback.pong', { skill_id: 'a.skill', can_handle: true }));
      if (m.type === 'a.skill:fallback') bus.publish(reply(m, 'mycroft.skill.handler.complete', {}));
    });
    bus.publish(createMessage('ovos.fallback.register', { skill_id: 'a.skill', priority: 90 }, { skill_id: 'a.skill' }));
    await bus.idle();
    // "what is …" passes the question gate: a common-query contest starts too (nobody is known and nobody claims, so
    // it ends at the claim bound).
    bus.publish(createMessage('ovos.utterance.handle', { utterances: ['what is a barrel roll'] }, { session: { session_id: 'insp' } }));
    await bus.idle();
    (system.supervisor.clock as ManualClock).advance(600);
    for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));

    const machineIds = new Set(
      events.filter((e) => e.type === '@xstate.snapshot').map((e) => (e as { snapshot: { machine?: { id?: string } } }).snapshot.machine?.id),
    );
    // The three machines (a fallback contest runs as the utterance actor's child: its actor's logic is the
    // utterance's match, its snapshot names its machine) — plus the promise actor common query's match runs in.
    for (const id of ['utterance', 'commonQuery', 'fallback']) expect(machineIds).toContain(id);
    // Every transition of every contest is visible: the fallback contest's PONG, the poll's claim-bound delayed event.
    const received = events.filter((e) => e.type === '@xstate.event').map((e) => (e as { event: { type: string } }).event.type);
    expect(received).toContain('PONG');
    expect(received.some((t) => t.startsWith('xstate.after.pollClaimBound'))).toBe(true);
    expect(system.supervisor.size).toBe(0);
  });
});
