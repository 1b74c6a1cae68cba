/**
 * Benchmark 1b — what XState alone costs per utterance: the floor under benchmark 1 (issue 12's "10k contests/s in
 * process"). The two machines of an in-process fallback utterance, with no bus, no supervisor, no plugin, no log:
 *
 *  - the fallback contest: `createActor(fallbackMachine)`, start, three pongs (decline, decline, willing), done;
 *  - the same inside the utterance machine: its `matchStage` runs that contest and resolves with the Match, the
 *    handler completes at once (`HANDLER_DONE`), done.
 *
 * Delays are armed on a clock that never fires (as in benchmark 1, nothing times out), so this is the machines'
 * own work: actor creation, the SCXML microsteps, the scheduled and cancelled timeouts, GC. Whatever benchmark 1
 * costs above it is ours (bus, routing, logging, the plugins).
 */
import { createActor, fromPromise, toPromise } from 'xstate';
import { fallbackMachine } from '../../machines/fallback/fallback.machine.js';
import { utteranceMachine } from '../../machines/utterance/utterance.machine.js';
import { createMessage } from '../../src/bus/message.js';
import { sessionFromObject } from '../../src/bus/session.js';
import type { Match } from '../../src/pipeline/plugin.js';
import type { Section } from './report.js';
import { collectGarbage } from './rig.js';

const ROUNDS = 20_000;
const WARMUP = 5_000;
const origin = createMessage('ovos.utterance.handle', { utterances: ['tell me something'] }, { session: { session_id: 's1' } });
const neverFires = { setTimeout: () => 0, clearTimeout: () => {} };
const contestLogic = fallbackMachine.provide({ actions: { sendPing: () => {}, sendBroadcast: () => {} } });
const MATCH: Match = { skill_id: 'c', intent_name: 'fallback', utterance: 'tell me something', lang: 'en-US', slots: {} };

function contest(): void {
  const actor = createActor(contestLogic, {
    input: { query: { origin, utterances: ['tell me something'], lang: 'en-US' }, pool: ['a', 'b', 'c'], pingTimeoutMs: 500 },
    clock: neverFires,
  });
  actor.start();
  actor.send({ type: 'PONG', skill_id: 'a', can_handle: false });
  actor.send({ type: 'PONG', skill_id: 'b', can_handle: false });
  actor.send({ type: 'PONG', skill_id: 'c', can_handle: true });
  if (actor.getSnapshot().status !== 'done') throw new Error('contest not done');
}

const utteranceLogic = utteranceMachine.provide({
  actors: {
    matchStage: fromPromise(async (): Promise<Match | null> => {
      contest();
      return MATCH;
    }),
  },
});

async function utterance(): Promise<void> {
  const actor = createActor(utteranceLogic, {
    input: {
      request: { entry: origin, utterances: ['tell me something'], lang: 'en-US', session: sessionFromObject({ session_id: 's1' }) },
      stages: ['fallback_low'],
      inProcessHandlers: [],
      matchTimeoutMs: 5_000,
      handlerTimeoutMs: 30_000,
    },
    clock: neverFires,
  });
  const done = toPromise(actor);
  actor.start();
  // Dispatched (awaiting the skill), or ended some other way — which the outcome check below reports.
  await new Promise<void>((resolve) => {
    const sub = actor.subscribe({
      next: (snapshot) => {
        if (snapshot.status !== 'active' || snapshot.matches({ handling: 'awaitingSkill' })) {
          sub.unsubscribe();
          resolve();
        }
      },
      error: () => resolve(),
    });
  });
  actor.send({ type: 'HANDLER_DONE', skill_id: MATCH.skill_id, ok: true });
  const output = await done;
  if (output.outcome !== 'completed') throw new Error(`utterance ended ${output.outcome}, not completed`);
}

async function perSecond(run: () => void | Promise<void>): Promise<number> {
  for (let i = 0; i < WARMUP; i++) await run();
  await collectGarbage();
  const started = performance.now();
  for (let i = 0; i < ROUNDS; i++) await run();
  return ROUNDS / ((performance.now() - started) / 1000);
}

export async function benchMachinesFloor(): Promise<Section> {
  const contests = await perSecond(contest);
  const utterances = await perSecond(utterance);
  const row = (what: string, rate: number) => ({ what, perSecond: Math.round(rate), perUnitUs: Math.round(1e7 / rate) / 10 });
  return {
    id: 'machines-floor',
    title: '1b. The machines alone: what XState costs per in-process fallback utterance (no bus, supervisor, plugin or log)',
    params: { rounds: ROUNDS, warmup: WARMUP, pool: 3 },
    columns: [
      { key: 'what', header: 'what', unit: 'text' },
      { key: 'perSecond', header: 'per second', unit: 'count' },
      { key: 'perUnitUs', header: 'µs each', unit: 'count' },
    ],
    rows: [
      row('fallback contest actor: create, start, 3 pongs, done', contests),
      row('utterance actor running that contest as its match, handler done', utterances),
    ],
    notes: ['one at a time on one core; benchmark 1 runs the same utterance through the bus, the supervisor and the plugins'],
    checks: [],
  };
}
