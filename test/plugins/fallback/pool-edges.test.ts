/**
 * OVOS-FALLBACK-1 §5 edge cases found by mutation testing (npm run test:mutation:pure): the tie-break holds for
 * every insertion order of several equal priorities, and a preference that names a skill twice places it once.
 */
import { describe, expect, it } from 'vitest';
import { buildPool, stageTakes, type PoolEntry } from '../../../src/plugins/fallback/pool.js';

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

/** A small seeded generator, so every run checks the same registries. */
function seeded(seed: number): (below: number) => number {
  let state = seed;
  return (below) => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return Math.floor((state / 2_147_483_648) * below);
  };
}

function shuffled<T>(list: readonly T[], next: (below: number) => number): T[] {
  const out = [...list];
  for (let i = out.length - 1; i > 0; i--) {
    const j = next(i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

describe('OVOS-FALLBACK-1 §4, §5 step 1 (property): the preference leads, the rest follows priority ascending, ties by skill_id', () => {
  it('300 seeded registries of up to 60 skills, few priorities, preferences with repeats and unregistered names', () => {
    const next = seeded(2_024);
    for (let round = 0; round < 300; round++) {
      const count = 1 + next(60);
      // Few distinct priorities, so ties are the rule; ids share prefixes so the tie-break compares real strings.
      const skills: Array<[string, number]> = Array.from({ length: count }, (_, i) => [`skill.${next(3)}.${i}`, 10 * next(4)]);
      const preference = Array.from({ length: next(6) }, () => (next(4) === 0 ? `ghost.${next(3)}` : skills[next(count)]![0]));
      const pool = buildPool({ available: new Map(skills), blacklistedSkills: [], preference });

      // Every registered skill exactly once, nothing else (§5 step 3).
      expect(ids(pool).sort()).toEqual(skills.map(([id]) => id).sort());
      // The registered preference, first mention first, leads (§4).
      const led = preference.filter((id, i) => skills.some(([s]) => s === id) && preference.indexOf(id) === i);
      expect(ids(pool).slice(0, led.length)).toEqual(led);
      // Every later neighbour pair is strictly ordered: lower priority first, an equal priority by skill_id (§5 step 1).
      const rest = pool.slice(led.length);
      for (let i = 1; i < rest.length; i++) {
        const [a, b] = [rest[i - 1]!, rest[i]!];
        expect(a.priority < b.priority || (a.priority === b.priority && a.skill_id < b.skill_id), `${a.skill_id}@${a.priority} before ${b.skill_id}@${b.priority}`).toBe(true);
      }
      // And registration order changes nothing.
      expect(buildPool({ available: new Map(shuffled(skills, next)), blacklistedSkills: [], preference })).toEqual(pool);
    }
  });
});

describe('FALLBACK-1 §5 step 2 × README placement rule: stageTakes', () => {
  const STAGES: ReadonlyArray<readonly [number, number]> = [
    [0, 49],
    [75, 100],
  ];
  const takenBy = (priority: number): string[] => STAGES.filter((range) => stageTakes(priority, range, STAGES)).map(([min, max]) => `${min}-${max}`);

  it('a covered priority belongs to the stage that covers it, inclusive at both ends', () => {
    expect([0, 49, 75, 100].map(takenBy)).toEqual([['0-49'], ['0-49'], ['75-100'], ['75-100']]);
  });

  it('in a gap: the nearest stage — 50 and 61 are nearer 49, 63 nearer 75, and 62 (13 from either) goes to the later one', () => {
    expect([50, 61, 62, 63, 74].map(takenBy)).toEqual([['0-49'], ['0-49'], ['75-100'], ['75-100'], ['75-100']]);
  });

  it('beyond the ends: the first or the last stage', () => {
    expect([-1, -1000, 101, 10_000].map(takenBy)).toEqual([['0-49'], ['0-49'], ['75-100'], ['75-100']]);
  });

  it('overlapping stages each take what they cover; no stages given: the range alone decides', () => {
    const overlapping: ReadonlyArray<readonly [number, number]> = [
      [0, 60],
      [50, 100],
    ];
    expect(overlapping.map((range) => stageTakes(55, range, overlapping))).toEqual([true, true]);
    expect(stageTakes(60, [0, 49], [])).toBe(false);
    expect(stageTakes(49, [0, 49], [])).toBe(true);
  });
});
