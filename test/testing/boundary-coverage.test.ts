/**
 * Boundaries, explicitly: every delay any machine arms has boundary coverage — the harness puts a reply at
 * T−1, T and T+1 of it (src/testing/boundaries.ts) and the spec model says what must happen at each. The delays are
 * read from the machines themselves, so a delay added to a machine without boundary coverage fails here.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { commonQueryMachine } from '../../machines/common-query/common-query.machine.js';
import { fallbackMachine } from '../../machines/fallback/fallback.machine.js';
import { utteranceMachine } from '../../machines/utterance/utterance.machine.js';
import { DEFAULT_CONFIG } from '../../src/config/defaults.js';
import { DELAY_BOUNDARIES, parseSkillsFile, runTimingSuite } from '../../src/testing/index.js';

const MACHINES = { fallback: fallbackMachine, commonQuery: commonQueryMachine, utterance: utteranceMachine } as const;

const machineDelays = Object.entries(MACHINES).flatMap(([machine, logic]) => Object.keys(logic.implementations.delays).map((delay) => [machine, delay] as const));

describe('boundary coverage of every machine delay', () => {
  it('the machines arm these delays (read from the machines, not listed by hand)', () => {
    expect(machineDelays.length).toBeGreaterThanOrEqual(7);
  });

  it.each(machineDelays)('%s.%s has a boundary entry for its own machine', (machine, delay) => {
    expect(DELAY_BOUNDARIES[delay]?.machine).toBe(machine);
  });

  it('no boundary entry names a delay the machines no longer arm', () => {
    expect(Object.keys(DELAY_BOUNDARIES).sort()).toEqual(machineDelays.map(([, delay]) => delay).sort());
  });

  it('on the sample rosters (spec, and today\'s OVOS skills) every delay is exercised at T−1, T and T+1, and the system agrees with the spec model at each', async () => {
    const exercised = new Map<string, Set<number>>();
    const paths: Array<Awaited<ReturnType<typeof runTimingSuite>>['paths'][number]> = [];
    for (const file of ['test/testing/sample-skills.json', 'test/testing/sample-legacy-skills.json']) {
      const sample = parseSkillsFile(readFileSync(file, 'utf8'));
      const utterances = sample.utterances ?? ['what is the speed of light'];
      paths.push(...(await runTimingSuite(DEFAULT_CONFIG, utterances.map((utterance) => ({ name: utterance, utterance, skills: sample.skills })))).paths);
    }
    for (const path of paths) {
      if (path.boundary === null) continue;
      expect(path.failures, path.name).toEqual([]);
      const offsets = exercised.get(path.boundary.delay) ?? new Set<number>();
      offsets.add(path.boundary.offset);
      exercised.set(path.boundary.delay, offsets);
    }
    for (const [, delay] of machineDelays) expect([...(exercised.get(delay) ?? [])].sort(), delay).toEqual([-1, 0, 1]);
  });
});
