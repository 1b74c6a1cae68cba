/**
 * The utterance lifecycle machine on its own (OVOS-PIPELINE-1 §4–§6), with stub stages: each stage is asked once,
 * in order, and nothing past the last; a stage that declines is not a rejected Match. Written for survivors of the
 * machines' mutation run (test/mutation/README.md).
 */
import { describe, expect, it } from 'vitest';
import { createActor, fromPromise } from 'xstate';
import { createMessage, type JsonObject, type Message } from '../../src/bus/message.js';
import { sessionFromObject } from '../../src/bus/session.js';
import { ManualClock } from '../../src/clock/manual-clock.js';
import type { Match } from '../../src/pipeline/plugin.js';
import { utteranceMachine, type UtteranceRequest } from '../../machines/utterance/utterance.machine.js';

async function run(
  stages: readonly string[],
  answer: (stage: string) => Match | null,
  session: Record<string, unknown> = { session_id: 's' },
  declines: (stage: string) => boolean = () => false,
) {
  const asked: string[] = [];
  const consulted: string[] = [];
  const sent: string[] = [];
  const emitted: string[] = [];
  const rejected: Array<{ stage: string; skill_id: string; reason: string }> = [];
  const machine = utteranceMachine.provide({
    actors: {
      matchStage: fromPromise(async ({ input }: { input: { pipelineId: string; request: UtteranceRequest } }) => {
        asked.push(input.pipelineId);
        return answer(input.pipelineId);
      }),
      runHandler: fromPromise<void, { pipelineId: string; match: Match; dispatched: Message }>(async () => {}),
    },
    actions: { dispatch: () => undefined, prepareDispatch: () => undefined, unmatched: () => void sent.push('unmatched'), handled: () => void sent.push('handled') },
    guards: {
      stageDeclines: ({ context }) => {
        consulted.push(context.stages[context.index]!);
        return declines(context.stages[context.index]!);
      },
    },
  });
  const entry = createMessage('ovos.utterance.handle', { utterances: ['hello'] }, { session: session as JsonObject });
  const actor = createActor(machine, {
    clock: new ManualClock(),
    input: { request: { entry, utterances: ['hello'], lang: 'en-US', session: sessionFromObject(session as JsonObject) }, stages, inProcessHandlers: ['cq'], matchTimeoutMs: 1_000, handlerTimeoutMs: 1_000 },
  });
  actor.on('*', (event: { type: string }) => emitted.push(event.type));
  actor.on('match.rejected', ({ stage, skill_id, reason }) => rejected.push({ stage, skill_id, reason }));
  const done = new Promise<unknown>((resolve) => actor.subscribe({ complete: () => resolve(actor.getSnapshot().output) }));
  actor.start();
  actor.send({ type: 'BEGIN' });
  const output = await done;
  return { output, asked, consulted, emitted, rejected, sent, declined: actor.getSnapshot().context.declined };
}

describe('OVOS-PIPELINE-1 §4: the stages are asked in order, each once, none past the last', () => {
  it('§6: every stage declines → each asked once, then unmatched; a decline is not a rejected Match', async () => {
    const { output, asked, emitted } = await run(['a', 'b', 'c'], () => null);
    expect(asked).toEqual(['a', 'b', 'c']);
    expect(output).toEqual({ outcome: 'unmatched', match: null, stage: null });
    expect(emitted).toEqual([]);
  });

  it('§4: the first stage with a Match ends the walk — later stages are never asked', async () => {
    const match: Match = { skill_id: 'cq', intent_name: 'common_query', lang: 'en-US', utterance: 'hello', slots: { answer: 'hi' }, updated_session: { session_id: 's' } };
    const { output, asked } = await run(['a', 'cq', 'c'], (stage) => (stage === 'cq' ? match : null));
    expect(asked).toEqual(['a', 'cq']);
    expect(output).toMatchObject({ outcome: 'completed', stage: 'cq' });
  });

  it('§6: no stages at all → unmatched without asking anyone', async () => {
    const { output, asked } = await run([], () => null);
    expect(asked).toEqual([]);
    expect(output).toMatchObject({ outcome: 'unmatched' });
  });
});

describe('OVOS-PIPELINE-1 §6: a stage that declines at once (stageDeclines) is passed over, recorded as declining', () => {
  it('the stages that decline at once are never asked; each stage is consulted once, in order, at its turn; the declined list keeps pipeline order', async () => {
    const { output, asked, consulted, declined } = await run(['a', 'b', 'c', 'd'], () => null, undefined, (stage) => stage === 'a' || stage === 'c');
    expect(asked).toEqual(['b', 'd']);
    expect(consulted).toEqual(['a', 'b', 'c', 'd']);
    expect(declined).toEqual([
      { stage: 'a', why: 'no_match' },
      { stage: 'b', why: 'no_match' },
      { stage: 'c', why: 'no_match' },
      { stage: 'd', why: 'no_match' },
    ]);
    expect(output).toEqual({ outcome: 'unmatched', match: null, stage: null });
  });

  it('a bare actor waits for BEGIN: no stage is consulted or asked before it, and the walk runs once it comes', async () => {
    const consulted: string[] = [];
    const machine = utteranceMachine.provide({
      guards: { stageDeclines: ({ context }) => (consulted.push(context.stages[context.index]!), true) },
    });
    const entry = createMessage('ovos.utterance.handle', { utterances: ['hello'] }, { session: { session_id: 's' } });
    const actor = createActor(machine, {
      clock: new ManualClock(),
      input: { request: { entry, utterances: ['hello'], lang: 'en-US', session: sessionFromObject({ session_id: 's' }) }, stages: ['a', 'b'], inProcessHandlers: [], matchTimeoutMs: 1_000, handlerTimeoutMs: 1_000 },
    });
    actor.start();
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(actor.getSnapshot().value).toBe('start');
    expect(consulted).toEqual([]);
    actor.send({ type: 'BEGIN' });
    expect(consulted).toEqual(['a', 'b']);
    expect(actor.getSnapshot().output).toEqual({ outcome: 'unmatched', match: null, stage: null });
  });

  it('every stage declines at once → unmatched, nobody asked, ovos.intent.unmatched and the handled once each', async () => {
    const { output, asked, declined, sent } = await run(['a', 'b'], () => null, undefined, () => true);
    expect(asked).toEqual([]);
    expect(declined.map((d) => d.stage)).toEqual(['a', 'b']);
    expect(output).toEqual({ outcome: 'unmatched', match: null, stage: null });
    expect(sent).toEqual(['unmatched', 'handled']);
  });

  it('the last stage declining at once after earlier ones were asked → unmatched; a stage passed over before a match does not stop the match', async () => {
    const match: Match = { skill_id: 'cq', intent_name: 'common_query', lang: 'en-US', utterance: 'hello', slots: { answer: 'hi' }, updated_session: { session_id: 's' } };
    const last = await run(['a', 'b'], () => null, undefined, (stage) => stage === 'b');
    expect(last.asked).toEqual(['a']);
    expect(last.output).toMatchObject({ outcome: 'unmatched' });
    const matched = await run(['a', 'cq', 'c'], (stage) => (stage === 'cq' ? match : null), undefined, (stage) => stage === 'a');
    expect(matched.asked).toEqual(['cq']);
    expect(matched.consulted).toEqual(['a', 'cq']);
    expect(matched.declined).toEqual([{ stage: 'a', why: 'no_match' }]);
    expect(matched.output).toMatchObject({ outcome: 'completed', stage: 'cq' });
  });

  it('after a rejected Match the next stage is consulted too (and passed over when it declines at once)', async () => {
    const banned: Match = { skill_id: 'banned.skill', intent_name: 'fallback', lang: 'en-US', utterance: 'hello', slots: {} };
    const { asked, consulted, declined, output } = await run(['a', 'b'], (stage) => (stage === 'a' ? banned : null), { session_id: 's', blacklisted_skills: ['banned.skill'] }, (stage) => stage === 'b');
    expect(asked).toEqual(['a']);
    expect(consulted).toEqual(['a', 'b']);
    expect(declined).toEqual([
      { stage: 'a', why: 'rejected' },
      { stage: 'b', why: 'no_match' },
    ]);
    expect(output).toMatchObject({ outcome: 'unmatched' });
  });
});

describe('OVOS-PIPELINE-1 §4.1 / §5: a Match the orchestrator rejects is reported with the skill it named', () => {
  it('a malformed Match (skill_id not a string) is rejected as malformed_match, reported with no skill, and the next stage is asked', async () => {
    const malformed = { skill_id: 42, intent_name: 'x', lang: 'en-US', utterance: 'hello', slots: {} } as unknown as Match;
    const { asked, rejected, output } = await run(['a', 'b'], (stage) => (stage === 'a' ? malformed : null));
    expect(asked).toEqual(['a', 'b']);
    expect(rejected).toEqual([{ stage: 'a', skill_id: '', reason: 'malformed_match' }]);
    expect(output).toMatchObject({ outcome: 'unmatched' });
  });

  it('a well-formed Match for a skill the live session blacklists is reported with that skill_id (§5 denylist)', async () => {
    const match: Match = { skill_id: 'banned.skill', intent_name: 'fallback', lang: 'en-US', utterance: 'hello', slots: {} };
    const { rejected, output } = await run(['a'], () => match, { session_id: 's', blacklisted_skills: ['banned.skill'] });
    expect(output).toMatchObject({ outcome: 'unmatched' });
    expect(rejected).toEqual([{ stage: 'a', skill_id: 'banned.skill', reason: 'blacklisted_skill' }]);
  });
});

describe('OVOS-PIPELINE-1 §8: a handler that fails is reported with what failed', () => {
  /** One stage that matches; its handler is in-process (`cq`) or a bus skill (`bus.skill`). */
  async function failing(kind: 'in-process' | 'bus', send?: (actor: ReturnType<typeof createActor>) => void) {
    const errors: string[] = [];
    const skill = kind === 'in-process' ? 'cq' : 'bus.skill';
    const match: Match = { skill_id: skill, intent_name: 'x', lang: 'en-US', utterance: 'hello', slots: {} };
    const machine = utteranceMachine.provide({
      actors: {
        matchStage: fromPromise(async () => match as Match | null),
        runHandler: fromPromise<void, { pipelineId: string; match: Match; dispatched: Message }>(async () => {
          throw new Error('in-process handler broke');
        }),
      },
      actions: { dispatch: () => undefined, prepareDispatch: () => undefined, handlerError: (_args, params: { exception: string }) => void errors.push(params.exception) },
    });
    const entry = createMessage('ovos.utterance.handle', { utterances: ['hello'] }, { session: { session_id: 's' } });
    const actor = createActor(machine, {
      clock: new ManualClock(),
      input: { request: { entry, utterances: ['hello'], lang: 'en-US', session: sessionFromObject({ session_id: 's' }) }, stages: ['cq'], inProcessHandlers: ['cq'], matchTimeoutMs: 1_000, handlerTimeoutMs: 1_000 },
    });
    const done = new Promise<unknown>((resolve) => actor.subscribe({ complete: () => resolve(actor.getSnapshot().output) }));
    actor.start();
    actor.send({ type: 'BEGIN' });
    if (send !== undefined) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      send(actor as never);
    }
    return { output: await done, errors };
  }

  it('an in-process handler that throws: handler_error with the error it threw', async () => {
    const { output, errors } = await failing('in-process');
    expect(output).toMatchObject({ outcome: 'handler_error' });
    expect(errors).toEqual(['Error: in-process handler broke']);
  });

  it('a bus skill\'s mycroft.skill.handler.error without an exception: handler_error "handler failed"; with one: that exception', async () => {
    const bare = await failing('bus', (actor) => actor.send({ type: 'HANDLER_DONE', skill_id: 'bus.skill', ok: false }));
    expect(bare.output).toMatchObject({ outcome: 'handler_error' });
    expect(bare.errors).toEqual(['handler failed']);
    const told = await failing('bus', (actor) => actor.send({ type: 'HANDLER_DONE', skill_id: 'bus.skill', ok: false, exception: 'KeyError: weather' }));
    expect(told.errors).toEqual(['KeyError: weather']);
  });
});

/**
 * A live utterance actor on the ManualClock: stages answer with `answer` (a stage that never settles is a Promise
 * that never resolves), events and time driven by the test.
 */
function live(stages: readonly string[], answer: (stage: string) => Promise<Match | null>) {
  const clock = new ManualClock();
  const asked: string[] = [];
  const errors: string[] = [];
  const emitted: Array<{ type: string; skill_id?: string; reason?: string }> = [];
  const machine = utteranceMachine.provide({
    actors: {
      matchStage: fromPromise(async ({ input }: { input: { pipelineId: string; request: UtteranceRequest } }) => {
        asked.push(input.pipelineId);
        return answer(input.pipelineId);
      }),
    },
    actions: { dispatch: () => undefined, prepareDispatch: () => undefined, handlerError: (_args, params: { exception: string }) => void errors.push(params.exception) },
  });
  const entry = createMessage('ovos.utterance.handle', { utterances: ['hello'] }, { session: { session_id: 's' } });
  const actor = createActor(machine, {
    clock,
    input: { request: { entry, utterances: ['hello'], lang: 'en-US', session: sessionFromObject({ session_id: 's' }) }, stages, inProcessHandlers: [], matchTimeoutMs: 1_000, handlerTimeoutMs: 1_000 },
  });
  actor.on('*', (event: { type: string; skill_id?: string; reason?: string }) => emitted.push(event));
  actor.start();
  actor.send({ type: 'BEGIN' });
  /** Let the stages' promises settle (they resolve on the microtask queue). */
  const settle = async (): Promise<void> => {
    for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
  };
  return { clock, actor, asked, errors, emitted, settle, declined: () => actor.getSnapshot().context.declined };
}

const never = (): Promise<Match | null> => new Promise<Match | null>(() => {});

describe('OVOS-PIPELINE-1 §4.4 / §6: a stage that throws or overruns its match bound declines, and the next stage is asked once', () => {
  it('§6: a stage that throws counts as declining (why: error): the next is asked once; the last one throwing ends unmatched', async () => {
    const u = live(['a', 'b'], async () => {
      throw new Error('stage broke');
    });
    await u.settle();
    expect(u.asked).toEqual(['a', 'b']);
    expect(u.declined()).toEqual([
      { stage: 'a', why: 'error' },
      { stage: 'b', why: 'error' },
    ]);
    expect(u.actor.getSnapshot().output).toEqual({ outcome: 'unmatched', match: null, stage: null });
    // The final state records its outcome in the context too (the inspector shows the context).
    expect(u.actor.getSnapshot().context.outcome).toBe('unmatched');
  });

  it('§4.4: a stage silent for its whole match bound declines (why: timeout) at exactly the bound: the next is asked once; the last one ends unmatched', async () => {
    const u = live(['a', 'b'], never);
    await u.settle();
    u.clock.advance(999);
    await u.settle();
    expect(u.asked).toEqual(['a']);
    u.clock.advance(1);
    await u.settle();
    expect(u.asked).toEqual(['a', 'b']);
    expect(u.declined()).toEqual([{ stage: 'a', why: 'timeout' }]);
    u.clock.advance(1_000);
    await u.settle();
    expect(u.asked).toEqual(['a', 'b']);
    expect(u.declined()).toEqual([
      { stage: 'a', why: 'timeout' },
      { stage: 'b', why: 'timeout' },
    ]);
    expect(u.actor.getSnapshot().output).toEqual({ outcome: 'unmatched', match: null, stage: null });
  });
});

describe('OVOS-PIPELINE-1 §8: only the dispatched skill ends its handler', () => {
  const match: Match = { skill_id: 'bus.skill', intent_name: 'x', lang: 'en-US', utterance: 'hello', slots: {} };

  it('§8: another skill\'s connection closing while the handler is awaited changes nothing; the dispatched skill\'s closing fails it (SkillDisconnected)', async () => {
    const u = live(['a'], async () => match);
    await u.settle();
    expect(u.actor.getSnapshot().matches({ handling: 'awaitingSkill' })).toBe(true);
    u.actor.send({ type: 'SKILL_GONE', skill_id: 'other.skill' });
    expect(u.actor.getSnapshot().status).toBe('active');
    u.actor.send({ type: 'SKILL_GONE', skill_id: 'bus.skill' });
    expect(u.actor.getSnapshot().output).toMatchObject({ outcome: 'handler_error' });
    expect(u.errors).toEqual(['SkillDisconnected: the bus connection of bus.skill closed before its handler completed']);
  });

  it('§8: a completion signal while the stages are still asked is reported ignored (not_awaited), and changes nothing', async () => {
    const u = live(['a'], never);
    await u.settle();
    u.actor.send({ type: 'HANDLER_DONE', skill_id: 'bus.skill', ok: true });
    expect(u.emitted).toEqual([{ type: 'handler_done.ignored', skill_id: 'bus.skill', reason: 'not_awaited' }]);
    expect(u.actor.getSnapshot().status).toBe('active');
  });
});
