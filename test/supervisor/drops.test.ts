/**
 * How the supervisor logs what it drops (src/bus/README.md: every dropped message gets one line with a stable
 * `reason`; expected traffic is logged below `info`). The level is what an operator filters on: a warn is
 * something wrong on the bus, info is traffic that lost a race, debug is what every legacy skill does by design.
 */
import { describe, expect, it } from 'vitest';
import { emit, setup as machineSetup } from 'xstate';
import { LocalBus } from '../../src/bus/local-bus.js';
import { createMessage, type JsonObject } from '../../src/bus/message.js';
import { ManualClock } from '../../src/clock/manual-clock.js';
import { captureLogs } from '../support/log-capture.js';
import { Supervisor, type Drop } from '../../src/supervisor/supervisor.js';

/** Ends on the first pong. */
const once = machineSetup({ types: { events: {} as { type: 'PONG' } } }).createMachine({
  initial: 'waiting',
  states: { waiting: { on: { PONG: 'done' } }, done: { type: 'final' } },
});

/** Reports what it ignores, as the contest machines do (`*.ignored` with a reason), and other moments. */
const reporter = machineSetup({
  types: { events: {} as { type: 'PONG'; reason?: string; kind?: string } },
}).createMachine({
  initial: 'waiting',
  states: {
    waiting: {
      on: {
        PONG: {
          actions: emit(({ event }) => (event.reason === undefined ? { type: event.kind ?? 'pong.noted' } : { type: event.kind ?? 'pong.ignored', reason: event.reason, skill_id: 'fb.a' })),
        },
      },
    },
  },
});

const DEBUG = 20;
const INFO = 30;
const WARN = 40;

function setup() {
  const bus = new LocalBus();
  const { logger, logs } = captureLogs();
  const supervisor = new Supervisor({ bus, clock: new ManualClock(), logger });
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
  const errors = () => logs.filter((l) => Number(l['level']) >= 50);
  return { bus, supervisor, logs, drops, spawn, dropLines, errors };
}

const pong = (type: string, data: JsonObject, context: JsonObject) => createMessage(type, data, context);

describe('Supervisor drops: one line each, at the level an operator expects (src/bus/README.md)', () => {
  it('OVOS-MSG-1 §6.1: a wrong-typed field that makes the reply unusable is a warn with its reason; the observer sees the drop and who sent it', async () => {
    const s = setup();
    s.bus.publish(pong('fb.a.fallback.pong', { skill_id: 7, can_handle: true }, { session: { session_id: 's1' }, utterance_id: 'u1', skill_id: 'fb.a' }));
    await s.bus.idle();
    expect(s.dropLines()).toEqual([expect.objectContaining({ level: WARN, reason: 'skill_id_missing', type: 'fb.a.fallback.pong', session_id: 's1', utterance_id: 'u1' })]);
    expect(s.drops).toEqual([expect.objectContaining({ reason: 'skill_id_missing', type: 'fb.a.fallback.pong', skillId: 'fb.a', contest: undefined })]);
    expect(s.errors()).toEqual([]);
  });

  it('a usable reply with an unusable field is no drop: one warn with its reason, and it goes on as the skill\'s decline (can_handle "yes" → false)', async () => {
    const s = setup();
    const heard: boolean[] = [];
    s.supervisor.on('fallback.pong', (inbound) => void heard.push(inbound.can_handle));
    s.bus.publish(pong('fb.a.fallback.pong', { skill_id: 'fb.a', can_handle: 'yes' }, { session: { session_id: 's1' }, utterance_id: 'u1' }));
    s.bus.publish(pong('fb.a.fallback.pong', { skill_id: 'fb.a', can_handle: 'yes' }, { session: { session_id: 's1' }, utterance_id: 'u2' }));
    await s.bus.idle();
    expect(heard).toEqual([false, false]);
    expect(s.logs.filter((l) => l['reason'] === 'can_handle_invalid')).toEqual([
      expect.objectContaining({ level: WARN, type: 'fb.a.fallback.pong', skill_id: 'fb.a', detail: '"yes"', msg: "a reply's field cannot be used: it counts as the skill's decline" }),
    ]); // once a minute per reason and skill
    expect(s.drops.filter((d) => d.reason === 'can_handle_invalid')).toEqual([]);
  });

  it('a reply no live contest waits for (it lost a race) is info, reason no_live_contest', async () => {
    const s = setup();
    s.bus.publish(pong('fb.a.fallback.pong', { skill_id: 'fb.a', can_handle: true }, { session: { session_id: 's1' }, utterance_id: 'u1' }));
    await s.bus.idle();
    expect(s.dropLines()).toEqual([expect.objectContaining({ level: INFO, reason: 'no_live_contest' })]);
    expect(s.errors()).toEqual([]); // no service owns pongs here: nothing is called, nothing throws
  });

  it('a reply a live contest does not wait for (it names no way to take it) is info, reason not_awaited', async () => {
    const s = setup();
    const live = s.supervisor.spawn({ kind: 'test', label: 'deaf', sessionId: 's1', utteranceId: 'u1', logic: once, input: undefined, routes: ['fallback.pong'] });
    s.bus.publish(pong('fb.a.fallback.pong', { skill_id: 'fb.a', can_handle: true }, { session: { session_id: 's1' }, utterance_id: 'u1' }));
    await s.bus.idle();
    expect(s.dropLines()).toEqual([expect.objectContaining({ level: INFO, reason: 'not_awaited' })]);
    live.stop('test_over');
  });

  it('a reply naming another daemon\'s run in a session with no contest here (a cluster: every daemon hears every reply) is debug, other_daemon', async () => {
    const s = setup();
    s.bus.publish(pong('fb.a.fallback.pong', { skill_id: 'fb.a', can_handle: true }, { session: { session_id: 's9' }, utterance_id: 'u9', contest_id: 'fallback:0a0b0c.1' }));
    // Without a contest id of a daemon's form it is what it always was.
    s.bus.publish(pong('fb.a.fallback.pong', { skill_id: 'fb.a', can_handle: true }, { session: { session_id: 's9' }, utterance_id: 'u9', contest_id: 'made-up' }));
    await s.bus.idle();
    expect(s.dropLines()).toEqual([
      expect.objectContaining({ level: DEBUG, reason: 'other_daemon' }),
      expect.objectContaining({ level: INFO, reason: 'no_live_contest' }),
    ]);
  });

  it('a reply naming another daemon\'s run (a shared bus) is not one of ours that ended: it is a warn, wrong_contest', async () => {
    const s = setup();
    const live = s.spawn('s1', 'u1');
    s.bus.publish(pong('fb.a.fallback.pong', { skill_id: 'fb.a', can_handle: true }, { session: { session_id: 's1' }, utterance_id: 'u1', contest_id: 'fallback:0a0b0c.1' }));
    await s.bus.idle();
    expect(s.dropLines()).toEqual([expect.objectContaining({ level: WARN, reason: 'wrong_contest' })]);
    expect(live.actor.getSnapshot().status).toBe('active');
    live.stop('test_over');
  });

  it('a reply naming one run goes to that run only, while another run of the same utterance is live (a §5.1 re-run)', async () => {
    const s = setup();
    const first = s.spawn('s1', 'u1');
    const second = s.spawn('s1', 'u1');
    s.bus.publish(pong('fb.a.fallback.pong', { skill_id: 'fb.a', can_handle: true }, { session: { session_id: 's1' }, utterance_id: 'u1', contest_id: second.info.id }));
    await s.bus.idle();
    expect((await second.done).status).toBe('done');
    expect(first.actor.getSnapshot().status).toBe('active');
    expect(s.dropLines()).toEqual([]);
    first.stop('test_over');
  });

  it('a contest spawned without an utterance_id takes a reply that carries one (nothing to disagree with, MSG-1 §4.2)', async () => {
    const s = setup();
    const live = s.supervisor.spawn({ kind: 'test', label: 'no-id', sessionId: 's1', utteranceId: undefined, logic: once, input: undefined, routes: ['fallback.pong'], correlate: () => ({ type: 'PONG' as const }) });
    s.bus.publish(pong('fb.a.fallback.pong', { skill_id: 'fb.a', can_handle: true }, { session: { session_id: 's1' }, utterance_id: 'u7' }));
    await s.bus.idle();
    expect((await live.done).status).toBe('done');
  });

  it('the observer is told who sent a drop from context.skill_id when the data names none', async () => {
    const s = setup();
    s.bus.publish(pong('ovos.skills.fallback.pong', { can_handle: true }, { session: { session_id: 's1' }, skill_id: 'fb.ctx' }));
    await s.bus.idle();
    expect(s.drops).toHaveLength(1);
    expect(s.drops[0]!.skillId).toBe('fb.ctx');
  });

  it('what a machine ignores is logged by its reason: expected traffic (not_in_pool) at debug, other reasons at info as a drop the observer sees with the contest; other moments under their own name', async () => {
    const s = setup();
    const live = s.supervisor.spawn({ kind: 'fallback', label: 'reporter', sessionId: 's1', utteranceId: 'u1', logic: reporter, input: undefined, routes: [] });
    live.send({ type: 'PONG', reason: 'not_in_pool' });
    live.send({ type: 'PONG', reason: 'late' });
    live.send({ type: 'PONG', reason: 'rejected', kind: 'match.rejected' });
    live.send({ type: 'PONG' });
    const byType = (type: string) => s.logs.filter((l) => l['type'] === type && l['contest'] === 'fallback/reporter');
    expect(byType('pong.ignored')).toEqual([
      expect.objectContaining({ level: DEBUG, reason: 'not_in_pool', msg: 'pong.ignored' }),
      expect.objectContaining({ level: INFO, reason: 'late', msg: 'message dropped' }),
    ]);
    expect(byType('match.rejected')).toEqual([expect.objectContaining({ level: INFO, reason: 'rejected', msg: 'match.rejected' })]);
    expect(byType('pong.noted')).toEqual([expect.objectContaining({ level: DEBUG, msg: 'pong.noted' })]);
    expect(s.drops.map((d) => [d.reason, d.type, d.contest?.label, d.skillId])).toEqual([
      ['not_in_pool', 'pong.ignored', 'reporter', 'fb.a'],
      ['late', 'pong.ignored', 'reporter', 'fb.a'],
    ]);
    live.stop('test_over');
  });

  it('a refused fallback registration is answered and logged once a minute per reason and sender — the skill ids a sender names do not make more lines, another sender does', async () => {
    const s = setup();
    const register = (skillId: string, session = 'default') =>
      s.bus.publish(createMessage('ovos.fallback.register', { skill_id: skillId, priority: 'high' }, { skill_id: skillId, session: { session_id: session } }));
    register('fb.a');
    register('fb.b');
    register('fb.a');
    for (let i = 0; i < 100; i++) register(`fb.flood${i}`);
    register('fb.a', 'other-session');
    await s.bus.idle();
    const lines = s.dropLines().filter((l) => l['reason'] === 'priority_invalid');
    expect(lines.map((l) => l['session_id'])).toEqual(['default', 'other-session']);
    const answers: Array<Record<string, unknown>> = [];
    s.bus.subscribe((m) => {
      if (m.data['accepted'] === false) answers.push({ type: m.type, ...m.data });
    });
    register('fb.c');
    await s.bus.idle();
    expect(answers).toEqual([expect.objectContaining({ skill_id: 'fb.c', accepted: false, reason: 'priority_invalid' })]);
  });

  it('a dropped reply that is no registration gets no refusal answer; a registration with a malformed session gets ovos.session.rejected and no refusal', async () => {
    const s = setup();
    const seen: string[] = [];
    s.bus.subscribe((m) => seen.push(m.type));
    s.bus.publish(pong('fb.a.fallback.pong', { skill_id: 7, can_handle: true }, { session: { session_id: 's1' } }));
    s.bus.publish(createMessage('ovos.fallback.register', { skill_id: 'fb.b', priority: 50 }, { skill_id: 'fb.b', session: 'not an object' }));
    await s.bus.idle();
    await s.bus.idle();
    expect(seen.filter((t) => t !== 'fb.a.fallback.pong' && t !== 'ovos.fallback.register')).toEqual(['ovos.session.rejected']);
    expect(s.dropLines().map((l) => l['reason'])).toEqual(['skill_id_missing', 'malformed_carrier']);
  });

  it('Bus.answeredElsewhere (a cluster: another daemon heard the message first and answers it): the same drops, logged at debug (the other daemon warns), and no ovos.session.rejected and no refusal answer from here — one answer and one warning per request, as on one bus', async () => {
    const s = setup();
    const seen: string[] = [];
    s.bus.subscribe((m) => seen.push(m.type));
    s.bus.publish(createMessage('ovos.fallback.register', { skill_id: 'fb.b', priority: 50 }, { skill_id: 'fb.b', session: 'not an object' }), 'elsewhere/1', true);
    s.bus.publish(createMessage('ovos.fallback.register', { skill_id: 'fb.c', priority: 'high' }, { skill_id: 'fb.c', session: { session_id: 's1' } }), 'elsewhere/1', true);
    await s.bus.idle();
    await s.bus.idle();
    expect(seen).toEqual(['ovos.fallback.register', 'ovos.fallback.register']);
    expect(s.dropLines().map((l) => [l['reason'], l['level']])).toEqual([['malformed_carrier', DEBUG], ['priority_invalid', DEBUG]]);
    // Heard here first: answered.
    s.bus.publish(createMessage('ovos.fallback.register', { skill_id: 'fb.d', priority: 'high' }, { skill_id: 'fb.d', session: { session_id: 's1' } }), 'here/1');
    await s.bus.idle();
    await s.bus.idle();
    expect(seen.slice(2)).toEqual(['ovos.fallback.register', 'ovos.fallback.register.response']);
    expect(s.dropLines().slice(2).map((l) => [l['reason'], l['level']])).toEqual([['priority_invalid', WARN]]);
  });

  it('the owner of a kind hears its refusals (the orchestrator answers a refused utterance) until it unsubscribes; other kinds\' refusals are not its', async () => {
    const s = setup();
    const heard: string[] = [];
    const off = s.supervisor.onRefused('utterance.handle', (message, reason) => heard.push(`${message.type} ${reason}`));
    const stays: string[] = [];
    s.supervisor.onRefused('utterance.handle', (_message, reason) => stays.push(reason));
    s.bus.publish(createMessage('ovos.utterance.handle', { utterances: 'not a list' }, { session: { session_id: 's1' }, utterance_id: 'u1' }));
    s.bus.publish(pong('fb.a.fallback.pong', { skill_id: 7, can_handle: true }, { session: { session_id: 's1' } }));
    await s.bus.idle();
    off();
    s.bus.publish(createMessage('ovos.utterance.handle', { utterances: [] }, { session: { session_id: 's1' }, utterance_id: 'u2' }));
    await s.bus.idle();
    expect(heard).toEqual(['ovos.utterance.handle utterances_invalid']);
    expect(stays).toEqual(['utterances_invalid', 'utterances_invalid']); // unsubscribing one owner leaves the others
    expect(s.dropLines().map((l) => l['reason'])).toEqual(['utterances_invalid', 'skill_id_missing', 'utterances_invalid']);
    expect(s.errors()).toEqual([]);
  });

  it('a refusal handler that throws is logged (service_threw); the next one still hears the refusal', async () => {
    const s = setup();
    const heard: string[] = [];
    s.supervisor.onRefused('utterance.handle', () => {
      throw new Error('owner bug');
    });
    s.supervisor.onRefused('utterance.handle', (_message, reason) => heard.push(reason));
    s.bus.publish(createMessage('ovos.utterance.handle', { utterances: 'not a list' }, { session: { session_id: 's1' }, utterance_id: 'u1' }));
    await s.bus.idle();
    expect(heard).toEqual(['utterances_invalid']);
    expect(s.errors()).toEqual([expect.objectContaining({ reason: 'service_threw', msg: 'refusal handler threw' })]);
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
    const { logger, logs } = captureLogs();
    new Supervisor({ bus, clock: new ManualClock(), logger });
    bus.publish(pong('fb.a.fallback.pong', { skill_id: 'fb.a', can_handle: true }, { session: { session_id: 's1' } }));
    await bus.idle();
    expect(logs.filter((l) => l['msg'] === 'message dropped')).toEqual([expect.objectContaining({ level: INFO, reason: 'no_live_contest' })]);
  });
});

describe('drop lines are rate limited, never the drops themselves (OVOS-MSG-1 §6.1: every malformed message is dropped)', () => {
  it('5,000 spoofed pongs from one connection: ten lines a minute per reason, the rest counted into the next minute\'s first line; every drop still reaches the observers', async () => {
    const bus = new LocalBus();
    const { logger, logs } = captureLogs();
    const clock = new ManualClock();
    const supervisor = new Supervisor({ bus, clock, logger });
    const drops: Drop[] = [];
    supervisor.observe({ dropped: (drop) => drops.push(drop) });
    const spoof = (i: number) => pong('x.fallback.pong', { skill_id: 'x', can_handle: true }, { session: { session_id: 's1' }, utterance_id: `u${i}` });
    for (let i = 0; i < 5_000; i++) bus.publish(spoof(i), 'flooder');
    bus.publish(spoof(0), 'other');
    await Promise.resolve();
    await new Promise((resolve) => setImmediate(resolve));
    const lines = () => logs.filter((l) => l['msg'] === 'message dropped');
    expect(drops).toHaveLength(5_001);
    expect(lines().map((l) => l['connection'])).toEqual([...Array<string>(10).fill('flooder'), 'other']);
    clock.advance(60_000);
    bus.publish(spoof(1), 'flooder');
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines().at(-1)).toMatchObject({ connection: 'flooder', reason: 'no_live_contest', suppressed: 4_990 });
    supervisor.close();
  });
});
