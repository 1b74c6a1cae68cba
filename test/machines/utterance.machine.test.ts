/**
 * The utterance lifecycle machine on its own (OVOS-PIPELINE-1 §4–§6), with stub stages: each stage is asked once,
 * in order, and nothing past the last; a stage that declines is not a rejected Match. Written for survivors of the
 * machines' mutation run (README "Mutation testing").
 */
import { describe, expect, it } from 'vitest';
import { createActor, fromPromise } from 'xstate';
import { createMessage, type Message } from '../../src/bus/message.js';
import { sessionFromObject } from '../../src/bus/session.js';
import { ManualClock } from '../../src/clock/manual-clock.js';
import type { Match } from '../../src/pipeline/plugin.js';
import { utteranceMachine, type UtteranceRequest } from '../../machines/utterance/utterance.machine.js';

async function run(stages: readonly string[], answer: (stage: string) => Match | null) {
  const asked: string[] = [];
  const emitted: string[] = [];
  const machine = utteranceMachine.provide({
    actors: {
      matchStage: fromPromise(async ({ input }: { input: { pipelineId: string; request: UtteranceRequest } }) => {
        asked.push(input.pipelineId);
        return answer(input.pipelineId);
      }),
      runHandler: fromPromise<void, { pipelineId: string; match: Match; dispatched: Message }>(async () => {}),
    },
    actions: { dispatch: () => undefined, prepareDispatch: () => undefined },
  });
  const entry = createMessage('ovos.utterance.handle', { utterances: ['hello'] }, { session: { session_id: 's' } });
  const actor = createActor(machine, {
    clock: new ManualClock(),
    input: { request: { entry, utterances: ['hello'], lang: 'en-US', session: sessionFromObject({ session_id: 's' }) }, stages, inProcessHandlers: ['cq'], matchTimeoutMs: 1_000, handlerTimeoutMs: 1_000 },
  });
  actor.on('*', (event: { type: string }) => emitted.push(event.type));
  const done = new Promise<unknown>((resolve) => actor.subscribe({ complete: () => resolve(actor.getSnapshot().output) }));
  actor.start();
  return { output: await done, asked, emitted };
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
