/**
 * Benchmark 1b — what XState alone costs per utterance: the floor under benchmark 1 (the target "10k contests/s in
 * process"). The two machines of an in-process fallback utterance, with no bus, no supervisor, no plugin, no log:
 *
 *  - the fallback contest: `createActor(fallbackMachine)`, start, three pongs (decline, decline, willing), done;
 *  - the same inside the utterance machine, as the daemon runs a fallback stage: the contest is the utterance
 *    actor's own child (its `matchStage`, through `delegate`), one XState system; the handler completes at once
 *    (`HANDLER_DONE`), done;
 *  - the same with the contest in a system of its own, a promise actor awaiting it (how a stage that offers only
 *    `match` runs, the common-query stage among them).
 *
 * Delays are armed on a clock that never fires (as in benchmark 1, nothing times out), so this is the machines'
 * own work: actor creation, the SCXML microsteps, the scheduled and cancelled timeouts, GC. Whatever benchmark 1
 * costs above it is ours (bus, routing, logging, the plugins).
 *
 * The same for memory (the floor under benchmark 4's "heap per live utterance"): 10k utterances held live — the
 * utterance actor matching, its fallback contest waiting for a pong, in both arrangements — heap after a full GC
 * against before; and a root actor of a one-state machine with nothing in it, XState's own cost per actor.
 */
import { createActor, createMachine, fromPromise, toPromise, type AnyActorRef } from 'xstate';
import { delegate } from '../../src/supervisor/delegate.js';
import { fallbackMachine } from '../../machines/fallback/fallback.machine.js';
import { utteranceMachine } from '../../machines/utterance/utterance.machine.js';
import { createMessage } from '../../src/bus/message.js';
import { sessionFromObject } from '../../src/bus/session.js';
import type { Match } from '../../src/pipeline/plugin.js';
import type { Section } from './report.js';
import { canCollectGarbage, collectGarbage, heapUsed } from './rig.js';

const ROUNDS = 20_000;
const WARMUP = 5_000;
const origin = createMessage('ovos.utterance.handle', { utterances: ['tell me something'] }, { session: { session_id: 's1' } });
const neverFires = { setTimeout: () => 0, clearTimeout: () => {} };
const contestLogic = fallbackMachine.provide({ actions: { sendPing: () => {} } });
const MATCH: Match = { skill_id: 'c', intent_name: 'fallback', utterance: 'tell me something', lang: 'en-US', slots: {} };

const contestInput = { query: { origin, utterances: ['tell me something'], lang: 'en-US' }, pool: ['a', 'b', 'c'], pingTimeoutMs: 500 };
const utteranceInput = {
  request: { entry: origin, utterances: ['tell me something'], lang: 'en-US', session: sessionFromObject({ session_id: 's1' }) },
  stages: ['fallback_low'],
  inProcessHandlers: [],
  matchTimeoutMs: 5_000,
  handlerTimeoutMs: 30_000,
};

function contestActor(): AnyActorRef {
  return createActor(contestLogic, { input: contestInput, clock: neverFires });
}

/** Three pongs: two declines, then the willing skill; the contest is done. */
function pongs(actor: AnyActorRef): void {
  actor.send({ type: 'PONG', skill_id: 'a', can_handle: false });
  actor.send({ type: 'PONG', skill_id: 'b', can_handle: false });
  actor.send({ type: 'PONG', skill_id: 'c', can_handle: true });
  if (actor.getSnapshot().status !== 'done') throw new Error('contest not done');
}

function contest(): void {
  const actor = contestActor();
  actor.start();
  pongs(actor);
}

const toMatch = (output: unknown): Match | null => (output === null ? null : MATCH);

type MatchStage = NonNullable<NonNullable<Parameters<typeof utteranceMachine.provide>[0]['actors']>['matchStage']>;

/** The contest as the utterance actor's child (as the orchestrator runs a stage that offers `matchLogic`). */
let child: AnyActorRef | undefined;
const childLogic = utteranceMachine.provide({
  actors: {
    matchStage: delegate((_input, self) => {
      child = self;
      return { logic: contestLogic, input: contestInput, output: toMatch };
    }) as unknown as MatchStage, // the machine declares a promise actor and reads only its output (as the orchestrator)
  },
});

/** The contest as a root actor of its own, awaited by the utterance's promise actor (a stage with `match` only). */
let root: AnyActorRef | undefined;
const rootLogic = utteranceMachine.provide({
  actors: {
    matchStage: fromPromise(async (): Promise<Match | null> => {
      root = contestActor();
      root.start();
      return toMatch(await toPromise(root));
    }),
  },
});

async function utterance(logic: typeof childLogic, contestOf: () => AnyActorRef | undefined): Promise<void> {
  const actor = createActor(logic, {
    input: utteranceInput,
    clock: neverFires,
  });
  const done = toPromise(actor);
  actor.start();
  actor.send({ type: 'BEGIN' }); // as the orchestrator does, one microtask later
  await Promise.resolve(); // the promise actor's contest starts a microtask later
  pongs(contestOf()!);
  // Dispatched (awaiting the skill), or ended some other way — which the outcome check below reports.
  await new Promise<void>((resolve) => {
    const check = (): void => {
      const snapshot = actor.getSnapshot();
      if (snapshot.status !== 'active' || snapshot.matches({ handling: 'awaitingSkill' })) {
        sub.unsubscribe();
        resolve();
      }
    };
    const sub = actor.subscribe({ next: check, error: () => resolve() });
    check();
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

const LIVE = 10_000;

/** Heap per item while `LIVE` items made by `make` are alive (after a full GC), or null without `--expose-gc`. */
async function heapPerLive(make: () => AnyActorRef[]): Promise<number | null> {
  if (!canCollectGarbage) return null;
  for (let i = 0; i < 500; i++) for (const actor of make()) actor.stop();
  await collectGarbage();
  const before = heapUsed();
  const live: AnyActorRef[][] = [];
  for (let i = 0; i < LIVE; i++) live.push(make());
  await collectGarbage();
  const bytes = (heapUsed() - before) / LIVE;
  for (const actors of live) for (const actor of actors) actor.stop();
  return bytes;
}

// A promise of its own per actor: one shared never-settling promise would hold every actor that ever awaited it
// (its reactions), stopped or not, for the life of the process.
const matchingLogic = utteranceMachine.provide({ actors: { matchStage: fromPromise(() => new Promise<Match | null>(() => {})) } });

/** An utterance in its fallback stage, its contest a root actor of its own waiting for the first pong. */
function liveUtterance(): AnyActorRef[] {
  const actor = createActor(matchingLogic, {
    input: utteranceInput,
    clock: neverFires,
  });
  const contest = contestActor();
  actor.start();
  actor.send({ type: 'BEGIN' });
  contest.start();
  return [actor, contest];
}

/** An utterance in its fallback stage, its contest its child waiting for the first pong. */
function liveUtteranceWithChild(): AnyActorRef[] {
  const actor = createActor(childLogic, {
    input: utteranceInput,
    clock: neverFires,
  });
  actor.start();
  actor.send({ type: 'BEGIN' });
  return [actor];
}

const emptyMachine = createMachine({});
const emptyActor = (): AnyActorRef[] => [createActor(emptyMachine).start()];

export async function benchMachinesFloor(): Promise<Section> {
  const contests = await perSecond(contest);
  const withChild = await perSecond(() => utterance(childLogic, () => child));
  const withRoot = await perSecond(() => utterance(rootLogic, () => root));
  const perUtteranceWithChild = await heapPerLive(liveUtteranceWithChild);
  const perUtterance = await heapPerLive(liveUtterance);
  const perEmptyActor = await heapPerLive(emptyActor);
  const row = (what: string, rate: number) => ({ what, perSecond: Math.round(rate), perUnitUs: Math.round(1e7 / rate) / 10 });
  const heapRow = (what: string, bytes: number | null) => ({ what, perSecond: null, perUnitUs: null, bytes });
  return {
    id: 'machines-floor',
    title: '1b. The machines alone: what XState costs per in-process fallback utterance (no bus, supervisor, plugin or log)',
    params: { rounds: ROUNDS, warmup: WARMUP, pool: 3, live: LIVE },
    columns: [
      { key: 'what', header: 'what', unit: 'text' },
      { key: 'perSecond', header: 'per second', unit: 'count' },
      { key: 'perUnitUs', header: 'µs each', unit: 'count' },
      { key: 'bytes', header: 'heap each while live', unit: 'bytes' },
    ],
    rows: [
      row('fallback contest actor: create, start, 3 pongs, done', contests),
      row('utterance actor running that contest as its child (one system), handler done', withChild),
      row('utterance actor awaiting that contest in a system of its own (a promise actor), handler done', withRoot),
      heapRow(`${LIVE.toLocaleString('en-US')} live utterances: utterance actor matching, its fallback contest as its child awaiting a pong`, perUtteranceWithChild),
      heapRow(`${LIVE.toLocaleString('en-US')} live utterances: the same, the contest a root actor of its own`, perUtterance),
      heapRow(`${LIVE.toLocaleString('en-US')} live root actors of an empty machine (XState's own cost per actor)`, perEmptyActor),
    ],
    notes: [
      'one at a time on one core; benchmark 1 runs the same utterance through the bus, the supervisor and the plugins',
      'the daemon runs a fallback stage\'s contest as the utterance actor\'s child (the plugin\'s matchLogic); the common-query stage, whose contest may start before its turn (early start), in a system of its own',
      'heap: after a full GC, against before (needs --expose-gc, which npm run bench gives); benchmark 4 measures the same utterance through the supervisor and the plugins',
    ],
    checks: [],
  };
}
