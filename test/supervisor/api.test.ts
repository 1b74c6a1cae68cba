/**
 * The supervisor as an embedder uses it (src/README.md): subscribing and unsubscribing services and observers,
 * the dialects it understands by default, its routing index emptying as contests end, and `close`.
 */
import { describe, expect, it } from 'vitest';
import { setup as machineSetup } from 'xstate';
import { LocalBus } from '../../src/bus/local-bus.js';
import { createMessage } from '../../src/bus/message.js';
import { ManualClock } from '../../src/clock/manual-clock.js';
import { captureLogs } from '../support/log-capture.js';
import { Supervisor, type ContestInfo, type ContestResult } from '../../src/supervisor/supervisor.js';

const once = machineSetup({ types: { events: {} as { type: 'PONG' } } }).createMachine({
  initial: 'waiting',
  states: { waiting: { on: { PONG: 'done' } }, done: { type: 'final' } },
});

function setup(options: { dialects?: { spec: boolean; legacy: boolean } } = {}) {
  const bus = new LocalBus();
  const { logger, logs } = captureLogs();
  const supervisor = new Supervisor({ bus, clock: new ManualClock(), logger, ...options });
  const spawn = (sessionId: string, utteranceId: string) =>
    supervisor.spawn({ kind: 'fallback', label: 'test', sessionId, utteranceId, logic: once, input: undefined, routes: ['fallback.pong'], correlate: () => ({ type: 'PONG' as const }) });
  const errors = () => logs.filter((l) => Number(l['level']) >= 50);
  return { bus, supervisor, logs, spawn, errors };
}

const specPong = (session: string) => createMessage('fb.a.fallback.pong', { skill_id: 'fb.a', can_handle: true }, { session: { session_id: session } });
const legacyPong = (session: string) => createMessage('ovos.skills.fallback.pong', { skill_id: 'fb.b', can_handle: true }, { session: { session_id: session }, utterance_id: 'u1' });

describe('Supervisor API (src/README.md)', () => {
  it('by default it speaks both dialects: a spec and a legacy pong both reach the owner of fallback pongs', async () => {
    const s = setup();
    const heard: string[] = [];
    s.supervisor.on('fallback.pong', (inbound) => void heard.push(inbound.skill_id));
    s.bus.publish(specPong('s1'));
    s.bus.publish(legacyPong('s1'));
    await s.bus.idle();
    expect(heard).toEqual(['fb.a', 'fb.b']);
  });

  it('with only the spec dialect a legacy pong is not a topic it consumes (no line, no owner called)', async () => {
    const s = setup({ dialects: { spec: true, legacy: false } });
    const heard: string[] = [];
    s.supervisor.on('fallback.pong', (inbound) => void heard.push(inbound.skill_id));
    s.bus.publish(legacyPong('s1'));
    await s.bus.idle();
    expect(heard).toEqual([]);
    expect(s.logs.filter((l) => l['msg'] === 'message dropped')).toEqual([]);
  });

  it('a service handler unsubscribed is not called again; one that throws is logged (service_threw) and the next still runs', async () => {
    const s = setup();
    const heard: string[] = [];
    const off = s.supervisor.on('fallback.pong', () => void heard.push('first'));
    s.supervisor.on('fallback.pong', () => {
      throw new Error('owner bug');
    });
    s.supervisor.on('fallback.pong', () => void heard.push('third'));
    s.bus.publish(specPong('s1'));
    await s.bus.idle();
    off();
    s.bus.publish(specPong('s1'));
    await s.bus.idle();
    expect(heard).toEqual(['first', 'third', 'third']);
    expect(s.errors()).toEqual([
      expect.objectContaining({ reason: 'service_threw', msg: 'service handler threw' }),
      expect.objectContaining({ reason: 'service_threw', msg: 'service handler threw' }),
    ]);
  });

  it('an observer sees each contest end once, whether it finished or was stopped; unsubscribed, it sees nothing more; one with only some callbacks is fine', async () => {
    const s = setup();
    const ended: Array<[string, ContestResult<unknown>['status']]> = [];
    const stays: string[] = [];
    const off = s.supervisor.observe({ contestEnded: (info: ContestInfo, result) => ended.push([info.utteranceId ?? '', result.status]) });
    s.supervisor.observe({ dropped: () => {} }); // no contestStarted / contestEnded
    s.supervisor.observe({ contestEnded: (info: ContestInfo) => stays.push(info.utteranceId ?? '') });
    const a = s.spawn('s1', 'u1');
    const b = s.spawn('s2', 'u2');
    a.send({ type: 'PONG' });
    await a.done;
    b.stop('test_over');
    b.stop('again');
    await b.done;
    off();
    const c = s.spawn('s3', 'u3');
    c.stop('test_over');
    expect(ended).toEqual([
      ['u1', 'done'],
      ['u2', 'stopped'],
    ]);
    expect(stays).toEqual(['u1', 'u2', 'u3']); // unsubscribing one observer leaves the others
    expect(s.errors()).toEqual([]);
  });

  it('the routing index empties as contests end (no key left per session), whatever ended them', async () => {
    const s = setup();
    const a = s.spawn('s1', 'u1');
    const b = s.spawn('s1', 'u2');
    const c = s.spawn('s2', 'u3');
    expect(s.supervisor.routeKeys).toBe(2);
    a.send({ type: 'PONG' });
    await a.done;
    expect(s.supervisor.routeKeys).toBe(2); // s1 still has b
    b.stop('test_over');
    c.stop('test_over');
    expect(s.supervisor.routeKeys).toBe(0);
    expect(s.supervisor.size).toBe(0);
  });

  it('close stops every live contest with reason supervisor_closed and hears the bus no more', async () => {
    const s = setup();
    const heard: string[] = [];
    s.supervisor.on('fallback.pong', (inbound) => void heard.push(inbound.skill_id));
    const a = s.spawn('s1', 'u1');
    s.supervisor.close();
    expect(await a.done).toEqual({ status: 'stopped', reason: 'supervisor_closed' });
    s.bus.publish(specPong('s1'));
    await s.bus.idle();
    expect(heard).toEqual([]);
    expect(s.supervisor.size).toBe(0);
  });
});
