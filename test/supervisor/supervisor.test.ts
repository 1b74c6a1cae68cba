import { describe, expect, it } from 'vitest';
import { assign, setup } from 'xstate';
import { LocalBus } from '../../src/bus/local-bus.js';
import { createMessage, type JsonObject, type Message } from '../../src/bus/message.js';
import { ManualClock } from '../../src/clock/manual-clock.js';
import { Supervisor } from '../../src/supervisor/supervisor.js';
import { captureLogs } from '../support/log-capture.js';

/** A contest that counts pongs and ends on the first willing one; its `explode` action throws on demand. */
const counter = setup({
  types: {
    context: {} as { pongs: number },
    events: {} as { type: 'PONG'; can_handle: boolean } | { type: 'EXPLODE' },
    output: {} as { pongs: number },
  },
  actions: {
    explode: () => {
      throw new Error('boom');
    },
  },
}).createMachine({
  context: { pongs: 0 },
  initial: 'waiting',
  states: {
    waiting: {
      after: { 1000: 'done' },
      on: {
        PONG: [
          { guard: ({ event }) => event.can_handle, target: 'done', actions: assign({ pongs: ({ context }) => context.pongs + 1 }) },
          { actions: assign({ pongs: ({ context }) => context.pongs + 1 }) },
        ],
        EXPLODE: { actions: 'explode' },
      },
    },
    done: { type: 'final' },
  },
  output: ({ context }) => ({ pongs: context.pongs }),
});

function setupSupervisor() {
  const bus = new LocalBus();
  const clock = new ManualClock();
  const { logger, logs } = captureLogs();
  const supervisor = new Supervisor({ bus, clock, logger });
  const spawn = (sessionId: string, utteranceId: string | undefined) =>
    supervisor.spawn({
      kind: 'test',
      label: 'counter',
      sessionId,
      utteranceId,
      logic: counter,
      input: undefined,
      routes: ['fallback.pong'],
      correlate: (inbound) => (inbound.kind === 'fallback.pong' ? { type: 'PONG' as const, can_handle: inbound.can_handle } : 'not_awaited'),
    });
  const pong = (sessionId: string, canHandle: boolean, utteranceId?: string): Message => {
    const context: JsonObject = { session: { session_id: sessionId } };
    if (utteranceId !== undefined) context['utterance_id'] = utteranceId;
    return createMessage('a.skill.fallback.pong', { skill_id: 'a.skill', can_handle: canHandle }, context);
  };
  const reasons = () => logs.filter((l) => l['msg'] === 'message dropped').map((l) => l['reason']);
  return { bus, clock, logs, supervisor, spawn, pong, reasons };
}

describe('Supervisor routing', () => {
  it('routes a reply to the live contest of its session and utterance_id', async () => {
    const t = setupSupervisor();
    const mine = t.spawn('s1', 'u1');
    const other = t.spawn('s2', 'u2');
    t.supervisor.receive(t.pong('s1', true, 'u1'));
    expect(await mine.done).toEqual({ status: 'done', output: { pongs: 1 } });
    expect(other.actor.getSnapshot().status).toBe('active');
    other.stop('test_over');
  });

  it('MSG-1 §4.2: a reply with another utterance_id is dropped with reason wrong_utterance_id', () => {
    const t = setupSupervisor();
    const contest = t.spawn('s1', 'u1');
    t.supervisor.receive(t.pong('s1', true, 'u-other'));
    expect(t.reasons()).toEqual(['wrong_utterance_id']);
    expect(contest.actor.getSnapshot().status).toBe('active');
    contest.stop('test_over');
  });

  it('a reply without utterance_id that two contests of the session could take is dropped as ambiguous, and neither receives it', () => {
    const t = setupSupervisor();
    const a = t.spawn('s1', 'u1');
    const b = t.spawn('s1', 'u2');
    t.supervisor.receive(t.pong('s1', false));
    expect(t.reasons()).toEqual(['ambiguous_correlation']);
    expect((a.actor.getSnapshot() as { context: { pongs: number } }).context.pongs).toBe(0);
    expect((b.actor.getSnapshot() as { context: { pongs: number } }).context.pongs).toBe(0);
    a.stop('test_over');
    b.stop('test_over');
  });

  it('a reply without utterance_id is accepted when exactly one contest of the session can take it', async () => {
    const t = setupSupervisor();
    const contest = t.spawn('s1', 'u1');
    t.supervisor.receive(t.pong('s1', true));
    expect(await contest.done).toEqual({ status: 'done', output: { pongs: 1 } });
  });

  it('a late reply after the contest finished is dropped with no_live_contest and nothing crashes', async () => {
    const t = setupSupervisor();
    const contest = t.spawn('s1', 'u1');
    t.supervisor.receive(t.pong('s1', true, 'u1'));
    await contest.done;
    expect(t.supervisor.size).toBe(0);
    t.supervisor.receive(t.pong('s1', true, 'u1'));
    expect(t.reasons()).toEqual(['no_live_contest']);
  });

  it('a finished contest is forgotten and leaves no timer behind', async () => {
    const t = setupSupervisor();
    const contest = t.spawn('s1', 'u1');
    t.clock.advance(1000);
    expect(await contest.done).toEqual({ status: 'done', output: { pongs: 0 } });
    expect(t.supervisor.size).toBe(0);
    expect(t.clock.pending).toBe(0);
  });

  it('OVOS-SESSION-1 §2.5: a reply whose session is not an object is dropped as malformed_carrier and ovos.session.rejected says so', async () => {
    const t = setupSupervisor();
    const contest = t.spawn('default', undefined);
    t.supervisor.receive(createMessage('a.skill.fallback.pong', { skill_id: 'a.skill', can_handle: true }, { session: 'default' }));
    expect(t.reasons()).toEqual(['malformed_carrier']);
    expect(contest.actor.getSnapshot().status).toBe('active');
    const rejected: Message[] = [];
    t.bus.subscribe((m) => rejected.push(m));
    await t.bus.idle();
    expect(rejected.map((m) => [m.type, m.data])).toEqual([['ovos.session.rejected', { msg_type: 'a.skill.fallback.pong', reason: 'malformed_carrier' }]]);
    contest.stop('test_over');
  });

  it('a contest whose action throws ends with status error, is logged, forgotten, and other contests keep running', async () => {
    const t = setupSupervisor();
    const bad = t.spawn('s1', 'u1');
    const good = t.spawn('s2', 'u2');
    bad.send({ type: 'EXPLODE' });
    const result = await bad.done;
    expect(result.status).toBe('error');
    expect(t.logs.some((l) => l['reason'] === 'contest_error')).toBe(true);
    expect(t.supervisor.size).toBe(1);
    t.supervisor.receive(t.pong('s2', true, 'u2'));
    expect(await good.done).toEqual({ status: 'done', output: { pongs: 1 } });
  });

  it('stopAll ends every live contest with the reason and clears their timers (bus connection lost)', async () => {
    const t = setupSupervisor();
    const contests = [t.spawn('s1', 'u1'), t.spawn('s2', 'u2'), t.spawn('s3', 'u3')];
    t.supervisor.stopAll('bus_down:closed');
    for (const contest of contests) expect(await contest.done).toEqual({ status: 'stopped', reason: 'bus_down:closed' });
    expect(t.supervisor.size).toBe(0);
    expect(t.clock.pending).toBe(0);
  });

  it('OVOS-MSG-1 §6.1: a consumed topic with an invalid payload is dropped with its reason before any contest sees it', () => {
    const t = setupSupervisor();
    const contest = t.spawn('s1', 'u1');
    t.supervisor.receive(createMessage('a.skill.fallback.pong', { skill_id: 7, can_handle: true }, { session: { session_id: 's1' }, utterance_id: 'u1' }));
    t.supervisor.receive(createMessage('a.skill.fallback.pong', { skill_id: 'b.skill', can_handle: true }, { session: { session_id: 's1' }, utterance_id: 'u1' }));
    expect(t.reasons()).toEqual(['skill_id_missing', 'skill_id_mismatch']);
    expect((contest.actor.getSnapshot() as { context: { pongs: number } }).context.pongs).toBe(0);
    contest.stop('test_over');
  });
});

describe('Supervisor contract edges', () => {
  it('PIPELINE-1 §4.4: until(signal) ends the contest as match_aborted when the match bound fires, and clears its timers', async () => {
    const t = setupSupervisor();
    const contest = t.spawn('s1', 'u1');
    const bound = new AbortController();
    const result = contest.until(bound.signal);
    bound.abort();
    expect(await result).toEqual({ status: 'stopped', reason: 'match_aborted' });
    expect(t.supervisor.size).toBe(0);
    expect(t.clock.pending).toBe(0);
  });

  it('PIPELINE-1 §4.4: until(signal) with a signal already aborted stops at once (a result after the bound is never used)', async () => {
    const t = setupSupervisor();
    const contest = t.spawn('s1', 'u1');
    expect(await contest.until(AbortSignal.abort())).toEqual({ status: 'stopped', reason: 'match_aborted' });
  });

  it('OVOS-MSG-1 §6.1: a correlate step that throws drops that one message (routing_threw) and routing goes on', async () => {
    const t = setupSupervisor();
    t.supervisor.spawn({
      kind: 'test',
      label: 'broken',
      sessionId: 's-broken',
      utteranceId: 'u-broken',
      logic: counter,
      input: undefined,
      routes: ['fallback.pong'],
      correlate: () => {
        throw new Error('plugin bug');
      },
    });
    const healthy = t.spawn('s2', 'u2');
    expect(() => t.supervisor.receive(t.pong('s-broken', true, 'u-broken'))).not.toThrow();
    expect(t.logs.some((l) => l['reason'] === 'routing_threw')).toBe(true);
    t.supervisor.receive(t.pong('s2', true, 'u2'));
    expect(await healthy.done).toEqual({ status: 'done', output: { pongs: 1 } });
    t.supervisor.stopAll('test_over');
  });
});
