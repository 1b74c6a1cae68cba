/**
 * OVOS-FALLBACK-1 §5 edge cases found by mutation testing (npm run test:mutation:pure): the tie-break holds for
 * every insertion order of several equal priorities, and a preference that names a skill twice places it once.
 */
import { describe, expect, it } from 'vitest';
import { buildPool, type PoolEntry } from '../../../src/plugins/fallback/pool.js';

const ids = (pool: readonly PoolEntry[]): string[] => pool.map((entry) => entry.skill_id);

function permutations<T>(list: readonly T[]): T[][] {
  if (list.length <= 1) return [[...list]];
  return list.flatMap((item, i) => permutations([...list.slice(0, i), ...list.slice(i + 1)]).map((rest) => [item, ...rest]));
}

describe('OVOS-FALLBACK-1 §5 step 1: the pool order never depends on registration order', () => {
  it('four skills at one priority (and one ahead): skill_id ascending for all 120 registration orders', () => {
    const skills: Array<[string, number]> = [['delta', 50], ['alpha', 50], ['charlie', 50], ['bravo', 50], ['zulu', 10]];
    for (const order of permutations(skills)) {
      expect(ids(buildPool({ available: new Map(order), blacklistedSkills: [] }))).toEqual(['zulu', 'alpha', 'bravo', 'charlie', 'delta']);
    }
  });

  it('a preference naming a skill twice places it once, at its first mention', () => {
    const available = new Map<string, number>([['a', 10], ['b', 20], ['c', 30]]);
    expect(ids(buildPool({ available, blacklistedSkills: [], preference: ['c', 'a', 'c'] }))).toEqual(['c', 'a', 'b']);
  });

  it('a preference naming an unregistered skill gives it no place (§5 step 3)', () => {
    const available = new Map<string, number>([['a', 10]]);
    expect(buildPool({ available, blacklistedSkills: [], preference: ['ghost', 'a'] })).toEqual([{ skill_id: 'a', priority: 10 }]);
  });
});
