/**
 * The three machine definitions load, and every state, initial state and target they name resolves: a contest the
 * daemon cannot create is an utterance that never ends (PIPELINE-1 §6: every utterance ends with one handled). The
 * machines are imported inside each test, not at the top of the file, so a definition that throws when its module
 * loads fails a test here instead of failing this file before any test runs.
 */
import { describe, expect, it } from 'vitest';
import type { AnyStateMachine, AnyStateNode } from 'xstate';

const LOADERS: Record<string, () => Promise<AnyStateMachine>> = {
  fallback: async () => (await import('../../machines/fallback/fallback.machine.js')).fallbackMachine,
  commonQuery: async () => (await import('../../machines/common-query/common-query.machine.js')).commonQueryMachine,
  utterance: async () => (await import('../../machines/utterance/utterance.machine.js')).utteranceMachine,
};

/** Every state node of `node`'s tree, and every transition target and initial state each one names, resolved. */
function resolveAll(node: AnyStateNode): string[] {
  const paths: string[] = [node.id];
  // The getters resolve lazily: reading them resolves `#id` and relative targets and throws for one that is missing.
  void node.initial;
  for (const transitions of node.transitions.values()) for (const transition of transitions) void transition.target;
  for (const transition of node.always ?? []) void transition.target;
  for (const transition of node.after) void transition.target;
  for (const child of Object.values(node.states)) paths.push(...resolveAll(child));
  return paths;
}

describe('PIPELINE-1 §6: every machine definition loads and resolves', () => {
  it.each(Object.keys(LOADERS))('the %s machine loads with its id, and every initial state and target it names exists', async (name) => {
    const machine = await LOADERS[name]!();
    expect(machine.id).toBe(name);
    const ids = resolveAll(machine.root);
    expect(ids[0]).toBe(name);
    expect(ids.length).toBeGreaterThan(2);
  });
});
