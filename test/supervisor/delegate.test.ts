/**
 * `delegate` (src/supervisor/delegate.ts): one invoke of a machine that runs, per invocation, the logic chosen as its
 * actor is created — how the utterance machine's `matchStage` becomes a stage's contest machine (a machine, a
 * promise, or any other actor logic), with its output rewritten for the parent.
 */
import { describe, expect, it } from 'vitest';
import { assign, createActor, fromPromise, fromTransition, setup, toPromise, type AnyActorLogic } from 'xstate';
import { delegate } from '../../src/supervisor/delegate.js';

const counter = setup({ types: { events: {} as { type: 'ADD' }, input: {} as { to: number }, context: {} as { n: number; to: number }, output: {} as number } }).createMachine({
  context: ({ input }) => ({ n: 0, to: input.to }),
  initial: 'counting',
  states: {
    counting: { on: { ADD: { actions: ({ context }) => void (context.n += 1) } }, always: { guard: ({ context }) => context.n >= context.to, target: 'done' } },
    done: { type: 'final' },
  },
  output: ({ context }) => context.n,
});

/** A parent that invokes `logic` as `child` with `input`, and ends with what the child's onDone gave it. */
function parentOf(logic: AnyActorLogic, input: unknown) {
  return setup({ types: { events: {} as { type: 'ADD' }, context: {} as { got: unknown }, output: {} as unknown }, actors: { child: logic } }).createMachine({
    context: { got: undefined },
    initial: 'running',
    states: {
      running: {
        invoke: { id: 'child', src: 'child', input, onDone: { target: 'over', actions: assign({ got: ({ event }) => event.output }) } },
      },
      over: { type: 'final' },
    },
    output: ({ context }: { context: { got: unknown } }) => context.got,
  });
}

describe('delegate: the logic chosen per invocation', () => {
  it('PIPELINE-1 §4: runs the chosen machine with the chosen input and rewrites its output once, as its parent reads it (the stage\'s Match)', async () => {
    const seen: unknown[] = [];
    const logic = delegate<{ to: number }, string>((input) => ({ logic: counter, input, output: (n) => (seen.push(n), `counted ${String(n)}`) }));
    const parent = createActor(parentOf(logic, { to: 2 }));
    parent.start();
    const child = parent.getSnapshot().children['child']!;
    expect(child.getSnapshot()).toMatchObject({ status: 'active', value: 'counting', context: { n: 0, to: 2 } });
    child.send({ type: 'ADD' });
    child.send({ type: 'ADD' });
    expect(await toPromise(parent)).toBe('counted 2');
    expect(seen).toEqual([2]);
  });

  it('PIPELINE-1 §6: chooses per actor — two invocations of one delegate (two stages) run different logics, each to its own end', async () => {
    let calls = 0;
    const logic = delegate<{ to: number }, unknown>((input) => (++calls === 1 ? { logic: counter, input } : { logic: fromPromise(async () => 'promised'), input: undefined }));
    const first = createActor(parentOf(logic, { to: 1 })).start();
    const second = createActor(parentOf(logic, { to: 1 })).start();
    first.getSnapshot().children['child']!.send({ type: 'ADD' });
    expect(await toPromise(first)).toBe(1);
    expect(await toPromise(second)).toBe('promised');
  });

  it('PIPELINE-1 §4: runs a chosen logic that has no start of its own (a transition function)', async () => {
    const reducer = fromTransition((state: number, event: { type: string }) => (event.type === 'ADD' ? state + 1 : state), 0);
    const logic = delegate<undefined, unknown>(() => ({ logic: reducer, input: undefined }));
    const parent = createActor(parentOf(logic, undefined)).start();
    const child = parent.getSnapshot().children['child']!;
    child.send({ type: 'ADD' });
    expect(child.getSnapshot()).toMatchObject({ status: 'active', context: 1 });
    expect(parent.getSnapshot().status).toBe('active');
  });

  it('PIPELINE-1 §4: persists a chosen machine as its machine does, and any other snapshot as it is', () => {
    const machineChild = createActor(parentOf(delegate(() => ({ logic: counter, input: { to: 5 } })), undefined)).start();
    const persisted = machineChild.getPersistedSnapshot() as unknown as { children: Record<string, { snapshot: unknown }> };
    expect(persisted.children['child']?.snapshot).toEqual(counter.getPersistedSnapshot(machineChild.getSnapshot().children['child']!.getSnapshot()));
    expect(persisted.children['child']?.snapshot).toMatchObject({ value: 'counting', context: { n: 0, to: 5 } });

    const reducer = fromTransition((state: number) => state, 7);
    const otherChild = createActor(parentOf(delegate(() => ({ logic: reducer, input: undefined })), undefined)).start();
    const other = otherChild.getPersistedSnapshot() as unknown as { children: Record<string, { snapshot: unknown }> };
    expect(other.children['child']?.snapshot).toBe(otherChild.getSnapshot().children['child']!.getSnapshot());
  });
});
