/**
 * Actor logic that is another actor logic, chosen when its actor is created: how a machine with one fixed `invoke`
 * (the utterance machine's `matchStage`) runs a different child per invocation — a stage's contest machine itself,
 * in the parent's own XState system, instead of a promise actor awaiting a root actor of its own.
 *
 * The actor's snapshot is the chosen logic's own (`getSnapshot()`, `matches`, inspection see the machine), except
 * that `output`, when given, rewrites the output once the chosen logic is done: what the parent reads in its
 * `onDone` (a contest's winner becomes the stage's Match).
 */
import type { ActorLogic, ActorScope, AnyActorLogic, AnyActorRef, EventObject, Snapshot } from 'xstate';

export interface Chosen<TOut> {
  readonly logic: AnyActorLogic;
  readonly input: unknown;
  readonly output?: (output: unknown) => TOut;
}

type Scope = ActorScope<Snapshot<unknown>, EventObject>;

export function delegate<TInput, TOut>(choose: (input: TInput, self: AnyActorRef) => Chosen<TOut>): ActorLogic<Snapshot<TOut>, EventObject, TInput> {
  // Per actor: the logic chosen for it (an actor's scope names it in every call but getPersistedSnapshot).
  const chosen = new WeakMap<AnyActorRef, Chosen<TOut>>();
  const of = (scope: Scope): Chosen<TOut> => chosen.get(scope.self)!;
  // An actor whose logic is done takes no more events: its output is rewritten once.
  const finish = (choice: Chosen<TOut>, next: Snapshot<unknown>): Snapshot<TOut> => {
    if (choice.output === undefined || next.status !== 'done') return next as Snapshot<TOut>;
    return { ...next, output: choice.output(next.output) } as Snapshot<TOut>;
  };
  const logic = {
    config: undefined,
    getInitialSnapshot: (scope: Scope, input: TInput) => {
      const choice = choose(input, scope.self);
      chosen.set(scope.self, choice);
      return finish(choice, choice.logic.getInitialSnapshot(scope, choice.input));
    },
    transition: (snapshot: Snapshot<unknown>, event: EventObject, scope: Scope) => {
      const choice = of(scope);
      return finish(choice, choice.logic.transition(snapshot, event, scope));
    },
    start: (snapshot: Snapshot<unknown>, scope: Scope) => {
      of(scope).logic.start?.(snapshot, scope);
    },
    // A machine's snapshot names its machine; any other snapshot is its own persisted form.
    getPersistedSnapshot: (snapshot: Snapshot<unknown>, options?: unknown) => {
      const machine = (snapshot as { machine?: AnyActorLogic }).machine;
      return machine === undefined ? snapshot : machine.getPersistedSnapshot(snapshot, options);
    },
  };
  return logic as unknown as ActorLogic<Snapshot<TOut>, EventObject, TInput>;
}
