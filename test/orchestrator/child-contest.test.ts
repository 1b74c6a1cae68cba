/**
 * A stage's contest as the utterance actor's own child (`PipelineStage.matchLogic`, `Supervisor.child`): one XState
 * system per utterance. What a user of the daemon or an embedder could notice of it: the contest is routed, observed
 * and ended like a spawned one; it ends with its utterance's stage (OVOS-PIPELINE-1 §4.4) or with the reason its
 * utterance was stopped; a plugin whose `matchLogic` throws costs its stage, never the utterance (§6). LocalBus,
 * ManualClock, no sleeps.
 */
import { describe, expect, it } from 'vitest';
import { setup as machineSetup, type AnyStateMachine } from 'xstate';
import { LocalBus } from '../../src/bus/local-bus.js';
import { createMessage, reply, type JsonObject, type Message } from '../../src/bus/message.js';
import { ManualClock } from '../../src/clock/manual-clock.js';
import { NO_MATCH, type Match } from '../../src/pipeline/plugin.js';
import { Supervisor, type ContestInfo, type ContestResult } from '../../src/supervisor/supervisor.js';
import { createHarness, withConfig, type Harness } from '../support/harness.js';
import { captureLogs } from '../support/log-capture.js';

const session = (id: string): JsonObject => ({ session_id: id });
const handledOf = (h: Harness, utteranceId: string): Message[] => h.of('ovos.utterance.handled').filter((m) => m.context['utterance_id'] === utteranceId);

const GREET: Match = { skill_id: 'echo.skill', intent_name: 'greet', lang: 'en-US', utterance: 'hello', slots: {} };

/** The stage after the one under test, "echo": it matches echo.skill, whose handler completes. */
function echoStage(h: Harness): void {
  h.system.orchestrator.register({ pipelineId: 'echo', match: async () => GREET, intents: () => [] });
  h.bus.subscribe((m) => {
    if (m.type === 'echo.skill:greet') h.bus.publish(reply(m, 'mycroft.skill.handler.complete'), 'skills');
  });
}

/** "hello" as utterance u1 of session s1, through the orchestrator: its record. */
const hello = (h: Harness) => h.system.orchestrator.handle(createMessage('ovos.utterance.handle', { utterances: ['hello'] }, { session: session('s1'), utterance_id: 'u1' }), ['hello']);

/** Every contest the supervisor started and how it ended, as its observers see them. */
function watch(supervisor: Supervisor): { started: ContestInfo[]; ended: Array<{ info: ContestInfo; result: ContestResult<unknown> }> } {
  const seen = { started: [] as ContestInfo[], ended: [] as Array<{ info: ContestInfo; result: ContestResult<unknown> }> };
  supervisor.observe({ contestStarted: (info) => void seen.started.push(info), contestEnded: (info, result) => void seen.ended.push({ info, result }) });
  return seen;
}

/** A fallback skill over its own connection: pongs `willing` (or stays silent), completes its handler. */
function fallbackSkill(h: Harness, skillId: string, priority: number, willing: boolean | 'silent'): void {
  h.bus.subscribe((m) => {
    if (m.type === `${skillId}.fallback.ping` && willing !== 'silent') h.bus.publish(reply(m, `${skillId}.fallback.pong`, { skill_id: skillId, can_handle: willing }), skillId);
    if (m.type === `${skillId}:fallback`) h.bus.publish(reply(m, 'mycroft.skill.handler.complete'), skillId);
  });
  h.bus.publish(createMessage('ovos.fallback.register', { skill_id: skillId, priority }, { skill_id: skillId, session: session('default') }), skillId);
}

describe('a fallback stage\'s contest as the utterance actor\'s child (one XState system per utterance)', () => {
  it('OVOS-FALLBACK-1 §6.1: the contest is a child of the utterance actor, observed as a contest of its own; its ping names its contest id and the pong routed back by it decides', async () => {
    const h = createHarness(withConfig((config) => ({ ...config, pipeline: ['fallback_low'] })));
    const seen = watch(h.system.supervisor);
    fallbackSkill(h, 'fb.yes', 90, true);
    await h.settle();
    h.utter('tell me something', { session: session('s1'), utteranceId: 'u1' });
    await h.settle();
    const contest = seen.started.find((info) => info.kind === 'fallback');
    expect(contest).toMatchObject({ kind: 'fallback', label: 'fallback_low', sessionId: 's1', utteranceId: 'u1', child: true });
    expect(seen.started.find((info) => info.kind === 'utterance')?.child).toBeUndefined();
    const ping = h.of('fb.yes.fallback.ping')[0]!;
    expect(ping.context['contest_id']).toBe(contest!.id);
    expect(seen.ended.find((e) => e.info.id === contest!.id)?.result).toEqual({ status: 'done', output: { skill_id: 'fb.yes' } });
    expect(h.of('fb.yes:fallback')).toHaveLength(1);
    expect(handledOf(h, 'u1')).toHaveLength(1);
    expect(h.system.supervisor.size).toBe(0);
  });

  it('PIPELINE-1 §4.4 / FALLBACK-1 §6.1: at the stage bound, just inside the match bound, the child decides (None, cut logged once) and the utterance moves on; a pong after it names a finished contest and is dropped', async () => {
    const h = createHarness(withConfig((config) => ({ ...config, pipeline: ['fallback_low'], orchestrator: { ...config.orchestrator, matchTimeoutMs: 1_000 }, fallback: { ...config.fallback, pingTimeoutMs: 5_000 } })));
    const seen = watch(h.system.supervisor);
    fallbackSkill(h, 'fb.late', 90, 'silent');
    await h.settle();
    h.utter('tell me something', { session: session('s1'), utteranceId: 'u1' });
    await h.settle();
    h.clock.advance(1_000);
    await h.settle();
    const contest = seen.ended.find((e) => e.info.kind === 'fallback');
    expect(contest?.result).toEqual({ status: 'done', output: null });
    expect(h.logs.filter((line) => line['reason'] === 'match_bound_cut')).toHaveLength(1);
    expect(h.of('ovos.intent.unmatched')).toHaveLength(1);
    expect(handledOf(h, 'u1')).toHaveLength(1);
    // The skill's pong, late: its contest id names a contest of this daemon that is over.
    const ping = h.of('fb.late.fallback.ping')[0]!;
    h.bus.publish(reply(ping, 'fb.late.fallback.pong', { skill_id: 'fb.late', can_handle: true }), 'fb.late');
    await h.settle();
    expect(h.logs.some((line) => line['msg'] === 'message dropped' && line['reason'] === 'finished_contest' && line['type'] === 'fb.late.fallback.pong')).toBe(true);
    expect(h.of('fb.late:fallback')).toEqual([]);
    expect(handledOf(h, 'u1')).toHaveLength(1);
    expect(h.system.supervisor.size).toBe(0);
  });

  it('PIPELINE-1 §6: a bus going down mid-contest stops the child with that reason (no match_bound_cut) and the utterance still gets exactly one handled', async () => {
    const h = createHarness(withConfig((config) => ({ ...config, pipeline: ['fallback_low'] })));
    const seen = watch(h.system.supervisor);
    fallbackSkill(h, 'fb.slow', 90, 'silent');
    await h.settle();
    h.utter('tell me something', { session: session('s1'), utteranceId: 'u1' });
    await h.settle();
    h.system.supervisor.stopAll('bus_down:test');
    await h.settle();
    expect(seen.ended.find((e) => e.info.kind === 'fallback')?.result).toEqual({ status: 'stopped', reason: 'bus_down:test' });
    expect(h.logs.filter((line) => line['reason'] === 'match_bound_cut')).toEqual([]);
    expect(handledOf(h, 'u1').map((m) => m.data['error'])).toEqual(['bus_down:test']);
    expect(h.system.supervisor.size).toBe(0);
  });

  it('PIPELINE-1 §6: a stage whose matchLogic throws declines with an error (logged, plugin_hook_threw); the next stage answers; one handled', async () => {
    const h = createHarness(withConfig((config) => ({ ...config, pipeline: ['broken', 'echo'] })));
    h.system.orchestrator.register({
      pipelineId: 'broken',
      match: async () => GREET,
      matchLogic: () => {
        throw new Error('plugin bug');
      },
      intents: () => [],
    });
    echoStage(h);
    await h.settle();
    const record = hello(h);
    await h.settle();
    expect(h.logs.filter((line) => line['reason'] === 'plugin_hook_threw' && line['hook'] === 'matchLogic' && line['stage'] === 'broken')).toHaveLength(1);
    expect(h.of('ovos.intent.matched').map((m) => m.data['pipeline_id'])).toEqual(['echo']);
    expect(handledOf(h, 'u1')).toHaveLength(1);
    expect(await record?.done).toMatchObject({ outcome: 'completed', stage: 'echo' });
  });

  it('PIPELINE-1 §6: a stage whose contest fails declines with an error (logged once, contest_error); the next stage answers; one handled, nothing left routed', async () => {
    const h = createHarness(withConfig((config) => ({ ...config, pipeline: ['failing', 'echo'] })));
    const seen = watch(h.system.supervisor);
    const broken = machineSetup({}).createMachine({ entry: () => { throw new Error('contest bug'); } });
    h.system.orchestrator.register({
      pipelineId: 'failing',
      match: async () => null,
      matchLogic: (request) =>
        h.system.supervisor.child(
          { kind: 'custom', label: 'failing', sessionId: request.session.sessionId, utteranceId: 'u1', logic: broken, input: undefined, routes: [] },
          (): Match | null => null,
          () => {},
        ),
      intents: () => [],
    });
    echoStage(h);
    await h.settle();
    const record = hello(h);
    await h.settle();
    expect(seen.ended.find((e) => e.info.kind === 'custom')?.result.status).toBe('error');
    expect(h.logs.filter((line) => line['reason'] === 'contest_error')).toHaveLength(1);
    expect(h.logs.filter((line) => line['msg'] === 'stage matched' && line['stage'] === 'failing').map((line) => [line['matched'], line['aborted']])).toEqual([[false, false]]);
    expect(h.of('ovos.intent.matched').map((m) => m.data['pipeline_id'])).toEqual(['echo']);
    expect(handledOf(h, 'u1')).toHaveLength(1);
    expect(await record?.done).toMatchObject({ outcome: 'completed', stage: 'echo' });
    expect(h.system.supervisor.size).toBe(0);
  });

  it('PIPELINE-1 §6: a stage whose matchLogic is a None at once (NO_MATCH) declines; the next stage answers', async () => {
    const h = createHarness(withConfig((config) => ({ ...config, pipeline: ['nothing', 'echo'] })));
    h.system.orchestrator.register({ pipelineId: 'nothing', match: async () => GREET, matchLogic: () => NO_MATCH, intents: () => [] });
    echoStage(h);
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.settle();
    expect(h.of('ovos.intent.matched').map((m) => m.data['pipeline_id'])).toEqual(['echo']);
    expect(handledOf(h, 'u1')).toHaveLength(1);
  });

  it('inspector: a live child contest shows its machine\'s diagram, without detail mode', async () => {
    const h = createHarness(withConfig((config) => ({ ...config, pipeline: ['fallback_low'] })), { recorder: {} });
    fallbackSkill(h, 'fb.slow', 90, 'silent');
    await h.settle();
    h.utter('tell me something', { session: session('s1'), utteranceId: 'u1' });
    await h.settle();
    const [utterance] = h.recorder!.utterances();
    expect(utterance?.live).toBe(true);
    expect(utterance?.contests.find((c) => c.kind === 'fallback')).toMatchObject({ machine: 'fallback', status: 'live' });
  });
});

describe('Supervisor.child (one contest inside another actor\'s system)', () => {
  const once = machineSetup({ types: { events: {} as { type: 'PONG' }, output: {} as string } }).createMachine({
    initial: 'waiting',
    states: { waiting: { on: { PONG: 'done' } }, done: { type: 'final' } },
    output: 'ponged',
  });

  /** A supervisor on its own bus and clock, and what its observers see. */
  function supervised(clock = new ManualClock()) {
    const supervisor = new Supervisor({ bus: new LocalBus(), clock, logger: captureLogs().logger });
    return { supervisor, seen: watch(supervisor) };
  }

  /** The child contest "inner" of session s1, running `logic`, taking every fallback pong of its session as PONG. */
  const inner = <TLogic extends AnyStateMachine>(logic: TLogic) =>
    ({ kind: 'fallback', label: 'inner', sessionId: 's1', utteranceId: 'u1', logic, input: undefined, routes: ['fallback.pong'], correlate: () => ({ type: 'PONG' as const }) }) as const;

  it('PIPELINE-1 §6: a root contest stopped with a reason (a shutdown) ends the child contest it runs with the same reason, and both leave the routing index', async () => {
    const { supervisor, seen } = supervised();
    const child = supervisor.child(inner(once), (output) => output, () => {});
    const parent = machineSetup({ actors: { inner: child } }).createMachine({ initial: 'running', states: { running: { invoke: { src: 'inner' } } } });
    const outer = supervisor.spawn({ kind: 'utterance', label: 'outer', sessionId: 's1', utteranceId: 'u1', logic: parent, input: undefined, routes: [] });
    expect(supervisor.size).toBe(2);
    outer.stop('embedder_stopped');
    expect(await outer.done).toEqual({ status: 'stopped', reason: 'embedder_stopped' });
    expect(seen.ended.map((e) => [e.info.label, e.result])).toEqual([
      ['outer', { status: 'stopped', reason: 'embedder_stopped' }],
      ['inner', { status: 'stopped', reason: 'embedder_stopped' }],
    ]);
    expect(supervisor.size).toBe(0);
  });

  it('PIPELINE-1 §4.4: a parent leaving the state that invoked it (the match bound) ends the child as match_aborted: routes gone, its timers cancelled', async () => {
    const clock = new ManualClock();
    const { supervisor, seen } = supervised(clock);
    const slow = machineSetup({ types: { events: {} as { type: 'PONG' } } }).createMachine({
      initial: 'waiting',
      states: { waiting: { on: { PONG: 'done' }, after: { 5_000: 'done' } }, done: { type: 'final' } },
    });
    const child = supervisor.child(inner(slow), (output) => output, () => {});
    const parent = machineSetup({ actors: { inner: child } }).createMachine({
      initial: 'running',
      states: { running: { invoke: { src: 'inner' }, after: { 1_000: 'over' } }, over: { type: 'final' } },
    });
    const outer = supervisor.spawn({ kind: 'utterance', label: 'outer', sessionId: 's1', utteranceId: 'u1', logic: parent, input: undefined, routes: [] });
    clock.advance(1_000);
    expect(await outer.done).toEqual({ status: 'done', output: undefined });
    expect(seen.ended.find((e) => e.info.label === 'inner')?.result).toEqual({ status: 'stopped', reason: 'match_aborted' });
    expect(supervisor.size).toBe(0);
    expect(clock.pending).toBe(0);
  });

  it('FALLBACK-1 §6.1 (a late pong reaches no contest): a child its parent never started (it left the invoking state at once) is ended with its parent, not left routed', async () => {
    const { supervisor, seen } = supervised();
    const child = supervisor.child(inner(once), (output) => output, () => {});
    const parent = machineSetup({ types: { events: {} as { type: 'END' } }, actors: { inner: child } }).createMachine({
      initial: 'a',
      states: { a: { invoke: { src: 'inner' }, always: 'b' }, b: { on: { END: 'over' } }, over: { type: 'final' } },
    });
    const outer = supervisor.spawn({ kind: 'utterance', label: 'outer', sessionId: 's1', utteranceId: 'u1', logic: parent, input: undefined, routes: [] });
    outer.send({ type: 'END' });
    expect(await outer.done).toEqual({ status: 'done', output: undefined });
    expect(seen.ended.find((e) => e.info.label === 'inner')?.result).toEqual({ status: 'stopped', reason: 'utterance_ended' });
    expect(supervisor.size).toBe(0);
    expect(supervisor.routeKeys).toBe(0);
  });

  it('PIPELINE-1 §4.1: what the parent reads is the mapped output (the stage\'s Match); `done` resolves with the machine\'s own', async () => {
    const { supervisor } = supervised();
    let done: Promise<ContestResult<string>> | undefined;
    const child = supervisor.child(inner(once), (output) => output.length, (contest) => void (done = contest.done));
    const parent = machineSetup({ types: { output: {} as number }, actors: { inner: child } }).createMachine({
      context: { length: 0 },
      initial: 'running',
      states: {
        running: { invoke: { src: 'inner', onDone: { target: 'over', actions: ({ context, event }) => void (context.length = event.output as number) } } },
        over: { type: 'final' },
      },
      output: ({ context }) => context.length,
    });
    const outer = supervisor.spawn({ kind: 'utterance', label: 'outer', sessionId: 's1', utteranceId: 'u1', logic: parent, input: undefined, routes: [] });
    supervisor.bus.publish(createMessage('fb.a.fallback.pong', { skill_id: 'fb.a', can_handle: true }, { session: { session_id: 's1' } }));
    await (supervisor.bus as LocalBus).idle();
    expect(await done).toEqual({ status: 'done', output: 'ponged' });
    expect(await outer.done).toEqual({ status: 'done', output: 6 });
  });
});
