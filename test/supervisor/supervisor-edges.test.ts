/**
 * The supervisor's edges that its mutation run left untested (test/mutation/README.md): the text and fields of
 * its log lines, the level of each kind of drop, what the observer is told, contest ids, stopping a contest twice,
 * the abort listener `until` leaves behind, a contest whose routes name a kind twice, and a send to an ended contest.
 * Driven as the other supervisor tests drive it: a LocalBus, a ManualClock, pino lines captured; no real time.
 */
import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { emit, setup as machineSetup } from 'xstate';
import { LocalBus } from '../../src/bus/local-bus.js';
import { createMessage, type JsonObject } from '../../src/bus/message.js';
import { ManualClock } from '../../src/clock/manual-clock.js';
import type { DropReason } from '../../src/dialect/spec-dialect.js';
import { Supervisor, type Drop } from '../../src/supervisor/supervisor.js';
import { captureLogs } from '../support/log-capture.js';

/** Ends on the first pong; EXPLODE runs an action that throws. */
const once = machineSetup({
  types: { events: {} as { type: 'PONG' } | { type: 'EXPLODE' } },
  actions: {
    explode: () => {
      throw new Error('boom');
    },
  },
}).createMachine({
  initial: 'waiting',
  states: { waiting: { on: { PONG: 'done', EXPLODE: { actions: 'explode' } } }, done: { type: 'final' } },
});

/** Emits what it is told to: `{type}` alone, or `{type, reason}`. */
const reporter = machineSetup({
  types: { events: {} as { type: 'REPORT'; kind: string; reason?: string } },
}).createMachine({
  initial: 'waiting',
  states: {
    waiting: {
      on: {
        REPORT: { actions: emit(({ event }) => (event.reason === undefined ? { type: event.kind } : { type: event.kind, reason: event.reason })) },
      },
    },
  },
});

const DEBUG = 20;
const INFO = 30;
const WARN = 40;
const ERROR = 50;

function setup() {
  const bus = new LocalBus();
  const clock = new ManualClock();
  const { logger, logs } = captureLogs();
  const supervisor = new Supervisor({ bus, clock, logger });
  const drops: Drop[] = [];
  supervisor.observe({ dropped: (drop) => drops.push(drop) });
  const spawn = (
    sessionId: string,
    utteranceId: string | undefined,
    options: { correlate?: () => { type: 'PONG' } | DropReason; routes?: readonly ('fallback.pong' | 'common_query.pong')[] } = {},
  ) =>
    supervisor.spawn({
      kind: 'fallback',
      label: 'edge',
      sessionId,
      utteranceId,
      logic: once,
      input: undefined,
      routes: options.routes ?? ['fallback.pong'],
      correlate: options.correlate ?? (() => ({ type: 'PONG' as const })),
    });
  const dropLines = () => logs.filter((l) => l['msg'] === 'message dropped');
  return { bus, clock, supervisor, logs, drops, spawn, dropLines };
}

const specPong = (context: JsonObject) => createMessage('fb.a.fallback.pong', { skill_id: 'fb.a', can_handle: true }, context);
const legacyPong = (context: JsonObject) => createMessage('ovos.skills.fallback.pong', { skill_id: 'fb.b', can_handle: true }, context);

describe('Supervisor edges: log lines an operator reads', () => {
  it('an observer that throws is one error line "supervisor observer threw", reason observer_threw', async () => {
    const s = setup();
    s.supervisor.observe({
      dropped: () => {
        throw new Error('observer bug');
      },
    });
    s.bus.publish(specPong({ session: { session_id: 's1' } }));
    await s.bus.idle();
    expect(s.logs.filter((l) => l['reason'] === 'observer_threw')).toEqual([
      expect.objectContaining({ level: ERROR, msg: 'supervisor observer threw' }),
    ]);
    expect(s.drops.map((d) => d.reason)).toEqual(['no_live_contest']); // the other observer still heard it
  });

  it('OVOS-MSG-1 §6.1: a message whose routing throws is dropped with one error line "message dropped", reason routing_threw and its type', async () => {
    const s = setup();
    s.spawn('s1', 'u1', {
      correlate: () => {
        throw new Error('plugin bug');
      },
    });
    s.bus.publish(specPong({ session: { session_id: 's1' }, utterance_id: 'u1' }));
    await s.bus.idle();
    expect(s.logs.filter((l) => l['reason'] === 'routing_threw')).toEqual([
      expect.objectContaining({ level: ERROR, msg: 'message dropped', type: 'fb.a.fallback.pong' }),
    ]);
    s.supervisor.stopAll('test_over');
  });

  it('a reply two contests could take is dropped as ambiguous_correlation with detail "2 contests"', async () => {
    const s = setup();
    s.spawn('s1', 'u1');
    s.spawn('s1', 'u2');
    s.bus.publish(specPong({ session: { session_id: 's1' } }));
    await s.bus.idle();
    expect(s.dropLines()).toEqual([expect.objectContaining({ level: WARN, reason: 'ambiguous_correlation', detail: '2 contests' })]);
    expect(s.drops.map((d) => [d.reason, d.detail])).toEqual([['ambiguous_correlation', '2 contests']]);
    s.supervisor.stopAll('test_over');
  });

  it('a contest whose machine throws is one error line "contest failed", reason contest_error', async () => {
    const s = setup();
    const contest = s.spawn('s1', 'u1');
    contest.send({ type: 'EXPLODE' });
    expect((await contest.done).status).toBe('error');
    expect(s.logs.filter((l) => l['reason'] === 'contest_error')).toEqual([expect.objectContaining({ level: ERROR, msg: 'contest failed' })]);
  });

  it('src/bus/README.md: a legacy pong is debug only when it answers a finished run of ours; one no contest waits for is info, one for another utterance a warn', async () => {
    const s = setup();
    s.bus.publish(legacyPong({ session: { session_id: 's1' }, utterance_id: 'u1' }));
    await s.bus.idle();
    const live = s.spawn('s1', 'u1');
    s.bus.publish(legacyPong({ session: { session_id: 's1' }, utterance_id: 'u9' }));
    await s.bus.idle();
    expect(s.dropLines()).toEqual([
      expect.objectContaining({ level: INFO, reason: 'no_live_contest', type: 'ovos.skills.fallback.pong' }),
      expect.objectContaining({ level: WARN, reason: 'wrong_utterance_id', type: 'ovos.skills.fallback.pong' }),
    ]);
    live.stop('test_over');
  });

  it('src/bus/README.md: a reply a contest calls a duplicate is expected traffic, logged at info (not a warn)', async () => {
    const s = setup();
    const live = s.spawn('s1', 'u1', { correlate: () => 'duplicate' });
    s.bus.publish(specPong({ session: { session_id: 's1' }, utterance_id: 'u1' }));
    await s.bus.idle();
    expect(s.dropLines()).toEqual([expect.objectContaining({ level: INFO, reason: 'duplicate' })]);
    live.stop('test_over');
  });

  it('OVOS-FALLBACK-1 §3.1: refused registrations naming no usable skill_id (absent, not a string, empty) count as one sender: one warn a minute, the rest counted into the next', async () => {
    const s = setup();
    const register = (data: JsonObject) => s.bus.publish(createMessage('ovos.fallback.register', { priority: 50, ...data }, { session: { session_id: 'default' } }));
    register({});
    register({ skill_id: 42 });
    register({ skill_id: '' });
    await s.bus.idle();
    expect(s.dropLines()).toEqual([expect.objectContaining({ level: WARN, reason: 'skill_id_missing', suppressed: 0 })]);
    s.clock.advance(60_000);
    register({ skill_id: '' });
    await s.bus.idle();
    expect(s.dropLines().map((l) => l['suppressed'])).toEqual([0, 2]);
  });

  it('a contest stopped twice, or stopped after it finished, says "contest stopped" once: only the stop that ended it', async () => {
    const s = setup();
    const a = s.spawn('s1', 'u1');
    a.stop('first');
    a.stop('second');
    expect(await a.done).toEqual({ status: 'stopped', reason: 'first' });
    const b = s.spawn('s2', 'u2');
    b.send({ type: 'PONG' });
    expect((await b.done).status).toBe('done');
    b.stop('after_done');
    s.supervisor.stopAll('nothing_left');
    expect(s.logs.filter((l) => l['msg'] === 'contest stopped')).toEqual([expect.objectContaining({ level: INFO, reason: 'first', utterance_id: 'u1' })]);
  });
});

describe('Supervisor edges: what an embedder sees', () => {
  it('an *.ignored event a machine emits without a reason is no drop: the observer only ever sees drops with a reason', () => {
    const s = setup();
    const live = s.supervisor.spawn({ kind: 'fallback', label: 'reporter', sessionId: 's1', utteranceId: 'u1', logic: reporter, input: undefined, routes: [] });
    live.send({ type: 'REPORT', kind: 'pong.ignored' });
    live.send({ type: 'REPORT', kind: 'pong.ignored', reason: 'late' });
    expect(s.drops.map((d) => [d.reason, d.type])).toEqual([['late', 'pong.ignored']]);
    expect(s.logs.filter((l) => l['type'] === 'pong.ignored').map((l) => [l['level'], l['msg']])).toEqual([
      [DEBUG, 'pong.ignored'],
      [INFO, 'message dropped'],
    ]);
    live.stop('test_over');
  });

  it('contest ids (context.contest_id) are <kind>:<6 hex digits of this daemon>.<n>, n counting 1, 2, … per supervisor', () => {
    const s = setup();
    const first = s.spawn('s1', 'u1');
    const second = s.supervisor.spawn({ kind: 'common_query', label: 'edge', sessionId: 's1', utteranceId: 'u2', logic: once, input: undefined, routes: [] });
    expect(first.info.id).toMatch(/^fallback:[0-9a-f]{6}\.1$/);
    expect(second.info.id).toMatch(/^common_query:[0-9a-f]{6}\.2$/);
    expect(second.info.id.split(':')[1]!.split('.')[0]).toBe(first.info.id.split(':')[1]!.split('.')[0]);
    s.supervisor.stopAll('test_over');
  });

  it('OVOS-PIPELINE-1 §4.4: until(signal) leaves no abort listener on the signal once the contest has ended by itself (a long-lived signal does not collect one per contest)', async () => {
    const s = setup();
    const shutdown = new AbortController();
    for (let i = 0; i < 3; i++) {
      const contest = s.spawn('s1', `u${i}`);
      const result = contest.until(shutdown.signal);
      expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(1);
      contest.send({ type: 'PONG' });
      expect((await result).status).toBe('done');
    }
    expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(0);
  });

  it('a contest whose routes name a kind twice ends cleanly: stop does not throw, done resolves, the routing index empties', async () => {
    const s = setup();
    const contest = s.spawn('s1', 'u1', { routes: ['fallback.pong', 'fallback.pong', 'common_query.pong'] });
    expect(s.supervisor.routeKeys).toBe(2);
    expect(() => contest.stop('test_over')).not.toThrow();
    expect(await contest.done).toEqual({ status: 'stopped', reason: 'test_over' });
    expect(s.supervisor.routeKeys).toBe(0);
    expect(s.supervisor.size).toBe(0);
  });

  describe('with the console watched', () => {
    afterEach(() => {
      vi.restoreAllMocks();
    });

    it('an event sent to a contest that has ended is dropped quietly: no XState "sent to stopped actor" warning on the console', async () => {
      const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
      const s = setup();
      const done = s.spawn('s1', 'u1');
      done.send({ type: 'PONG' });
      expect((await done.done).status).toBe('done');
      done.send({ type: 'PONG' });
      const stopped = s.spawn('s1', 'u2');
      stopped.stop('test_over');
      stopped.send({ type: 'PONG' });
      expect(warn).not.toHaveBeenCalled();
    });
  });
});
