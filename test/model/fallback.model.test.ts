/**
 * Model-based test of the fallback contest, OVOS-FALLBACK-1 §6.1 (sequential per-skill query, per-skill timeout
 * treated as `can_handle: false`) and §6.2 (first willing skill in pool order wins; exhausted pool → None).
 *
 * THE MODEL is written from the spec, not from machines/fallback/fallback.machine.ts. `createTestModel` rejects
 * `after`, so time is an explicit event here (ENGINEERING-NOTES "Time in tests"); the system under test is the real
 * `fallbackMachine` actor on a `ManualClock`.
 *
 *   pool    [A, B, C] (already ordered, §5), per-skill timeout T = 500 ms.
 *   states  asking.justPinged   — the awaited skill POOL[index] was pinged, elapsed = 0
 *           asking.nearTimeout  — elapsed = T-1: the last instant at which the awaited skill may still answer
 *           matched (final)     — winner = the first skill that said can_handle: true (§6.2)
 *           unmatched (final)   — every skill declined or timed out: output None (§6.2)
 *   context index, elapsed (0 | T-1), now (model clock, ms since the contest started), expectedPings (every ping the
 *           spec requires so far: skill + time; the next ping goes out at the instant the previous skill was closed,
 *           so with only timeouts the ping of skill k is at k*T), closed (declined/timeout per skill), strays (stray
 *           pongs seen during the current ping), winner.
 *   events  PONG_WILLING / PONG_DECLINE      — pong from the awaited skill
 *           TICK_T_MINUS_1                    — advance T-1 ms (0 → T-1: the awaited skill has NOT timed out yet)
 *           TICK_1                            — advance 1 ms (T-1 → T: the boundary; timeout = can_handle:false, §6.1)
 *           LATE_PONG_WILLING  {skill}        — willing pong from a skill already declined/timed out: changes nothing
 *           SPOOF_PONG_WILLING {skill}        — willing pong from a skill not asked yet: changes nothing
 *
 * BOUNDARY VALUES: a pong at elapsed 0 and at elapsed T-1 must still count; crossing T (T-1 + 1) must close the
 * awaited skill exactly at ping+T and ping the next skill at that same instant. Ping times reachable in the model:
 * A at 0; B at {0, T-1, T}; C at {0, T-1, T, 2T-2, 2T-1, 2T}. TICK_T_MINUS_1 is only enabled at elapsed 0 and TICK_1
 * only at elapsed T-1, so the model never skips over a deadline inside one event.
 *
 * "CHANGE NOTHING" EVENTS — what we chose: (1) the model records each stray pong in `context.strays` (each stray
 * sender at most once per ping; the list is reset when the next skill is pinged), so a stray pong leads to a distinct
 * model state although the spec outcome is unchanged; (2) paths are generated with edge coverage: `serializeTransition`
 * keys a vertex on (previous snapshot, event, snapshot), so every model transition is the last step of at least one
 * shortest path. Together this exercises e.g. "late pong from A at B's T-1, then TICK_1": B must still time out at
 * exactly its ping + T (a stray pong must not re-arm or cancel the timer). Events the model does not enable
 * (`snapshot.can(event)` is false) are filtered out, so no path contains a no-op the model did not mean.
 *
 * At every model state the SUT must agree: clock time, the full list of pings (skill + time), whether the actor is
 * done, its output ({skill_id} or null), and the pending timers (1 while asking — the per-skill timeout, §6.1/§10
 * SHOULD; 0 once done).
 */
import { describe, expect, it } from 'vitest';
import { and, assign, createActor, setup, type SnapshotFrom } from 'xstate';
import { createTestModel, serializeSnapshot } from 'xstate/graph';
import { fallbackMachine } from '../../machines/fallback/fallback.machine.js';
import { ManualClock } from '../../src/clock/manual-clock.js';

const T = 500;
const POOL = ['A', 'B', 'C'] as const;
type Skill = (typeof POOL)[number];
const T0 = 1_700_000_000_000;
const CLAUSE = 'OVOS-FALLBACK-1 §6.1/§6.2 model';

interface Ping {
  readonly skill: string;
  readonly at: number;
}

interface ModelContext {
  /** POOL[index] is the skill being asked. */
  readonly index: number;
  /** Coarse bucket of the time since the current ping: 0 or T-1. */
  readonly elapsed: number;
  /** Model clock, ms since the contest started. */
  readonly now: number;
  /** Every ping the spec requires so far, in order (§6.1: one at a time, in pool order). */
  readonly expectedPings: readonly Ping[];
  readonly closed: ReadonlyArray<{ readonly skill: Skill; readonly outcome: 'declined' | 'timeout' }>;
  /** Stray (late or unsolicited) willing pongs seen during the current ping, in pool order. */
  readonly strays: readonly Skill[];
  readonly winner: Skill | null;
}

type ModelEvent =
  | { readonly type: 'PONG_WILLING'; readonly skill: Skill }
  | { readonly type: 'PONG_DECLINE'; readonly skill: Skill }
  | { readonly type: 'TICK_T_MINUS_1' }
  | { readonly type: 'TICK_1' }
  | { readonly type: 'LATE_PONG_WILLING'; readonly skill: Skill }
  | { readonly type: 'SPOOF_PONG_WILLING'; readonly skill: Skill };

const awaitedSkill = (context: ModelContext): Skill => {
  const skill = POOL[context.index];
  if (skill === undefined) throw new Error(`model: no awaited skill at index ${context.index}`);
  return skill;
};

const specModel = setup({
  types: { context: {} as ModelContext, events: {} as ModelEvent },
  guards: {
    fromAwaited: ({ context, event }) => 'skill' in event && event.skill === POOL[context.index],
    hasNext: ({ context }) => context.index + 1 < POOL.length,
    /** Asked before (declined or timed out) and not already seen as a stray during this ping. */
    newLate: ({ context, event }) =>
      'skill' in event && POOL.indexOf(event.skill) < context.index && !context.strays.includes(event.skill),
    /** Not asked yet and not already seen as a stray during this ping. */
    newSpoof: ({ context, event }) =>
      'skill' in event && POOL.indexOf(event.skill) > context.index && !context.strays.includes(event.skill),
  },
  actions: {
    advanceClock: assign(({ context }, params: { ms: number }) => ({
      now: context.now + params.ms,
      elapsed: context.elapsed + params.ms,
    })),
    close: assign(({ context }, params: { outcome: 'declined' | 'timeout' }) => ({
      closed: [...context.closed, { skill: awaitedSkill(context), outcome: params.outcome }],
    })),
    /** §6.1: the next skill is pinged at the instant the previous one was closed. */
    pingNext: assign(({ context }) => {
      const next = POOL[context.index + 1];
      if (next === undefined) throw new Error('model: pingNext past the end of the pool');
      return {
        index: context.index + 1,
        elapsed: 0,
        strays: [],
        expectedPings: [...context.expectedPings, { skill: next, at: context.now }],
      };
    }),
    win: assign(({ context }) => ({ winner: awaitedSkill(context) })),
    recordStray: assign(({ context, event }) => ({
      strays: 'skill' in event ? POOL.filter((s) => s === event.skill || context.strays.includes(s)) : context.strays,
    })),
  },
}).createMachine({
  id: 'fallbackSpec',
  context: {
    index: 0,
    elapsed: 0,
    now: 0,
    expectedPings: [{ skill: 'A', at: 0 }],
    closed: [],
    strays: [],
    winner: null,
  },
  initial: 'asking',
  states: {
    asking: {
      initial: 'justPinged',
      on: {
        PONG_WILLING: { guard: 'fromAwaited', target: 'matched', actions: 'win' },
        PONG_DECLINE: [
          {
            guard: and(['fromAwaited', 'hasNext']),
            target: '.justPinged',
            reenter: true,
            actions: [{ type: 'close', params: { outcome: 'declined' } }, 'pingNext'],
          },
          { guard: 'fromAwaited', target: 'unmatched', actions: { type: 'close', params: { outcome: 'declined' } } },
        ],
        LATE_PONG_WILLING: { guard: 'newLate', actions: 'recordStray' },
        SPOOF_PONG_WILLING: { guard: 'newSpoof', actions: 'recordStray' },
      },
      states: {
        justPinged: {
          on: { TICK_T_MINUS_1: { target: 'nearTimeout', actions: { type: 'advanceClock', params: { ms: T - 1 } } } },
        },
        nearTimeout: {
          on: {
            TICK_1: [
              {
                guard: 'hasNext',
                target: 'justPinged',
                actions: [
                  { type: 'advanceClock', params: { ms: 1 } },
                  { type: 'close', params: { outcome: 'timeout' } },
                  'pingNext',
                ],
              },
              {
                target: '#fallbackSpec.unmatched',
                actions: [{ type: 'advanceClock', params: { ms: 1 } }, { type: 'close', params: { outcome: 'timeout' } }],
              },
            ],
          },
        },
      },
    },
    matched: { type: 'final' },
    unmatched: { type: 'final' },
  },
});

type ModelSnapshot = SnapshotFrom<typeof specModel>;

/** The concrete events of one model state (skill payloads filled in from the model's own context). */
function eventsOf(snapshot: ModelSnapshot): ModelEvent[] {
  if (snapshot.status !== 'active') return [];
  const { index } = snapshot.context;
  const awaited = awaitedSkill(snapshot.context);
  return [
    { type: 'PONG_WILLING', skill: awaited },
    { type: 'PONG_DECLINE', skill: awaited },
    { type: 'TICK_T_MINUS_1' },
    { type: 'TICK_1' },
    ...POOL.slice(0, index).map((skill): ModelEvent => ({ type: 'LATE_PONG_WILLING', skill })),
    ...POOL.slice(index + 1).map((skill): ModelEvent => ({ type: 'SPOOF_PONG_WILLING', skill })),
  ];
}

const testModel = createTestModel(specModel, {
  events: eventsOf,
  filterEvents: (snapshot, event) => snapshot.can(event),
  // Edge coverage: a vertex is (previous snapshot, event, snapshot), so every model transition ends some path.
  serializeTransition: (_snapshot, event, previous) =>
    event === undefined || previous === undefined
      ? ''
      : ` via ${JSON.stringify(event)} from ${serializeSnapshot(previous)}`,
});

const paths = testModel.getShortestPaths();

/** Run one model path against the real actor, asserting agreement at every model state. */
function runPath(steps: ReadonlyArray<{ readonly state: ModelSnapshot; readonly event: { readonly type: string } }>) {
  const clock = new ManualClock(T0);
  const pings: Ping[] = [];
  const errors: unknown[] = [];
  const sut = createActor(
    fallbackMachine.provide({
      actions: {
        sendPing: (_args, params) => {
          pings.push({ skill: params.skill_id, at: clock.now() - T0 });
        },
      },
    }),
    {
      clock,
      input: {
        pool: [...POOL],
        pingTimeoutMs: T,
        query: { origin: { type: 'ovos.utterance.handle', data: {}, context: {} }, utterances: ['x'], lang: 'en-US' },
      },
    },
  );
  sut.subscribe({ error: (error) => errors.push(error) });
  sut.start();

  const apply = (event: ModelEvent): void => {
    switch (event.type) {
      case 'PONG_WILLING':
      case 'LATE_PONG_WILLING':
      case 'SPOOF_PONG_WILLING':
        sut.send({ type: 'PONG', skill_id: event.skill, can_handle: true });
        return;
      case 'PONG_DECLINE':
        sut.send({ type: 'PONG', skill_id: event.skill, can_handle: false });
        return;
      case 'TICK_T_MINUS_1':
        clock.advance(T - 1);
        return;
      case 'TICK_1':
        clock.advance(1);
        return;
    }
  };

  const agree = (model: ModelSnapshot, where: string): void => {
    const c = model.context;
    const snapshot = sut.getSnapshot();
    expect(errors, `${where}: actor errors`).toEqual([]);
    expect(clock.now() - T0, `${where}: clock`).toBe(c.now);
    expect(pings, `${where}: pings (skill, ms since start)`).toEqual(c.expectedPings);
    expect(pings.at(-1), `${where}: last ping`).toEqual(c.expectedPings.at(-1));
    if (model.status === 'done') {
      expect(snapshot.status, `${where}: status`).toBe('done');
      expect(snapshot.output, `${where}: output`).toEqual(c.winner === null ? null : { skill_id: c.winner });
      expect(clock.pending, `${where}: pending timers once done`).toBe(0);
    } else {
      expect(snapshot.status, `${where}: status`).toBe('active');
      expect(clock.pending, `${where}: pending timers while asking ${awaitedSkill(c)}`).toBe(1);
    }
  };

  steps.forEach((step, i) => {
    // alterPath puts the initial state first, with the synthetic `xstate.init` event.
    if (i > 0) apply(step.event as ModelEvent);
    agree(step.state, i === 0 ? 'initial state' : `after step ${i} (${step.event.type})`);
  });
  sut.stop();
}

const outcomeOf = (snapshot: ModelSnapshot): string =>
  snapshot.status === 'done' ? (snapshot.context.winner ?? 'none') : 'asking';

describe(CLAUSE, () => {
  it(`${CLAUSE}: path generation yields more than 10 paths and covers every outcome and event`, () => {
    expect(paths.length).toBeGreaterThan(10);
    expect(new Set(paths.map((p) => outcomeOf(p.state)))).toEqual(new Set(['A', 'B', 'C', 'none', 'asking']));
    const eventTypes = new Set(paths.flatMap((p) => p.steps.slice(1).map((s) => s.event.type)));
    expect(eventTypes).toEqual(
      new Set(['PONG_WILLING', 'PONG_DECLINE', 'TICK_T_MINUS_1', 'TICK_1', 'LATE_PONG_WILLING', 'SPOOF_PONG_WILLING']),
    );
    // The all-timeouts chain: A, B, C pinged at 0, T, 2T, output None at 3T.
    const chain = paths.find(
      (p) =>
        p.state.status === 'done' &&
        p.state.context.closed.length === 3 &&
        p.state.context.closed.every((c) => c.outcome === 'timeout'),
    );
    expect(chain?.state.context.expectedPings).toEqual([
      { skill: 'A', at: 0 },
      { skill: 'B', at: T },
      { skill: 'C', at: 2 * T },
    ]);
  });

  for (const path of paths) {
    it(`${CLAUSE}: ${path.description}`, () => {
      runPath(path.steps);
    });
  }
});
