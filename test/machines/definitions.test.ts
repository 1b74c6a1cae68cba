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

/**
 * Every state node of `node`'s tree, its initial state resolved. (`createMachine` already resolves every transition
 * target, throwing for a missing one; an initial state is resolved when first read, here.)
 */
function resolveAll(node: AnyStateNode): string[] {
  const ids: string[] = [node.id];
  void node.initial;
  for (const child of Object.values(node.states)) ids.push(...resolveAll(child));
  return ids;
}

describe('PIPELINE-1 §6: every machine definition loads and resolves', () => {
  it.each(Object.keys(LOADERS))('the %s machine loads with its id, and every initial state and target it names exists', async (name) => {
    const machine = await LOADERS[name]!();
    expect(machine.id).toBe(name);
    expect(resolveAll(machine.root).length).toBeGreaterThan(2);
  });
});
