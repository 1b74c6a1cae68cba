/**
 * How the supervisor logs what it drops (README "Bus topics": every dropped message gets one line with a stable
 * `reason`; expected traffic is logged below `info`). The level is what an operator filters on: a warn is
 * something wrong on the bus, info is traffic that lost a race, debug is what every legacy skill does by design.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { setup as machineSetup } from 'xstate';
import { LocalBus } from '../../src/bus/local-bus.js';
import { createMessage, type JsonObject } from '../../src/bus/message.js';
import { ManualClock } from '../../src/clock/manual-clock.js';
import { Supervisor, type Drop } from '../../src/supervisor/supervisor.js';

/** Ends on the first pong. */
const once = machineSetup({ types: { events: {} as { type: 'PONG' } } }).createMachine({
  initial: 'waiting',
  states: { waiting: { on: { PONG: 'done' } }, done: { type: 'final' } },
});

const DEBUG = 20;
const INFO = 30;
const WARN = 40;

function setup() {
  const bus = new LocalBus();
  const logs: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _e, cb) {
      for (const line of String(chunk).split('\n')) if (line) logs.push(JSON.parse(line) as Record<string, unknown>);
      cb();
    },
  });
  const supervisor = new Supervisor({ bus, clock: new ManualClock(), logger: pino({ level: 'debug' }, sink) });
  const drops: Drop[] = [];
  supervisor.observe({ dropped: (drop) => drops.push(drop) });
  const spawn = (sessionId: string, utteranceId: string) =>
    supervisor.spawn({
      kind: 'fallback',
      label: 'test',
      sessionId,
      utteranceId,
      logic: once,
      input: undefined,
      routes: ['fallback.pong'],
      correlate: () => ({ type: 'PONG' as const }),
    });
  const dropLines = () => logs.filter((l) => l['msg'] === 'message dropped');
  return { bus, supervisor, logs, drops, spawn, dropLines };
}

const pong = (type: string, data: JsonObject, context: JsonObject) => createMessage(type, data, context);

describe('Supervisor drops: one line each, at the level an operator expects (README "Bus topics")', () => {
  it('OVOS-MSG-1 §6.1: a wrong-typed field is a warn with its reason; the observer sees the drop and who sent it', async () => {
    const s = setup();
    s.bus.publish(pong('fb.a.fallback.pong', { skill_id: 'fb.a', can_handle: 'yes' }, { session: { session_id: 's1' }, utterance_id: 'u1' }));
    await s.bus.idle();
    expect(s.dropLines()).toEqual([expect.objectContaining({ level: WARN, reason: 'can_handle_invalid', type: 'fb.a.fallback.pong', session_id: 's1', utterance_id: 'u1' })]);
    expect(s.drops).toEqual([expect.objectContaining({ reason: 'can_handle_invalid', type: 'fb.a.fallback.pong', skillId: 'fb.a', contest: undefined })]);
  });

  it('a reply no live contest waits for (it lost a race) is info, reason no_live_contest', async () => {
    const s = setup();
    s.bus.publish(pong('fb.a.fallback.pong', { skill_id: 'fb.a', can_handle: true }, { session: { session_id: 's1' }, utterance_id: 'u1' }));
    await s.bus.idle();
    expect(s.dropLines()).toEqual([expect.objectContaining({ level: INFO, reason: 'no_live_contest' })]);
  });

  it('a reply naming a run of ours that has ended is finished_contest: info for a spec pong, debug for a legacy pong (every legacy skill answers every broadcast)', async () => {
    const s = setup();
    const live = s.spawn('s1', 'u1');
    const other = s.spawn('s1', 'u2'); // keeps the session's route alive, so the ended run is told apart
    const contestId = live.info.id;
    live.send({ type: 'PONG' });
    expect((await live.done).status).toBe('done');
    s.bus.publish(pong('fb.a.fallback.pong', { skill_id: 'fb.a', can_handle: true }, { session: { session_id: 's1' }, utterance_id: 'u1', contest_id: contestId }));
    s.bus.publish(pong('ovos.skills.fallback.pong', { skill_id: 'fb.b', can_handle: true }, { session: { session_id: 's1' }, utterance_id: 'u1', contest_id: contestId }));
    await s.bus.idle();
    expect(s.dropLines()).toEqual([
      expect.objectContaining({ level: INFO, reason: 'finished_contest', type: 'fb.a.fallback.pong' }),
      expect.objectContaining({ level: DEBUG, reason: 'finished_contest', type: 'ovos.skills.fallback.pong' }),
    ]);
    expect(s.drops.map((d) => [d.reason, d.skillId])).toEqual([
      ['finished_contest', 'fb.a'],
      ['finished_contest', 'fb.b'],
    ]);
    other.stop('test_over');
  });

  it('a reply for another utterance of the session is a warn (wrong_utterance_id): the sender mixed up its ids', async () => {
    const s = setup();
    const live = s.spawn('s1', 'u1');
    s.bus.publish(pong('fb.a.fallback.pong', { skill_id: 'fb.a', can_handle: true }, { session: { session_id: 's1' }, utterance_id: 'u9' }));
    await s.bus.idle();
    expect(s.dropLines()).toEqual([expect.objectContaining({ level: WARN, reason: 'wrong_utterance_id' })]);
    live.stop('test_over');
  });

  it('with no observer watching, the drop is logged just the same', async () => {
    const bus = new LocalBus();
    const logs: Array<Record<string, unknown>> = [];
    const sink = new Writable({
      write(chunk, _e, cb) {
        for (const line of String(chunk).split('\n')) if (line) logs.push(JSON.parse(line) as Record<string, unknown>);
        cb();
      },
    });
    new Supervisor({ bus, clock: new ManualClock(), logger: pino({ level: 'debug' }, sink) });
    bus.publish(pong('fb.a.fallback.pong', { skill_id: 'fb.a', can_handle: true }, { session: { session_id: 's1' } }));
    await bus.idle();
    expect(logs.filter((l) => l['msg'] === 'message dropped')).toEqual([expect.objectContaining({ level: INFO, reason: 'no_live_contest' })]);
  });
});
