import { describe, expect, it } from 'vitest';
import { buildPool, type PoolEntry, type PoolInput } from '../../../src/plugins/fallback/pool.js';

/** skill_id → registered priority, in the given (insertion) order. */
const registered = (...entries: Array<[string, number]>): Map<string, number> => new Map(entries);

const ids = (pool: readonly PoolEntry[]): string[] => pool.map((entry) => entry.skill_id);

/** A pool input with nothing but the registry: no preference, no range, empty denylist, accept_all. */
function input(available: Map<string, number>, extra: Partial<PoolInput> = {}): PoolInput {
  return { available, blacklistedSkills: [], ...extra };
}

describe('OVOS-FALLBACK-1 §5 step 1: preference / priority order', () => {
  it('§5 step 1: without a preference, skills sort by registered priority ascending', () => {
    const pool = buildPool(input(registered(['c', 90], ['a', 10], ['b', 50])));
    expect(pool).toEqual([
      { skill_id: 'a', priority: 10 },
      { skill_id: 'b', priority: 50 },
      { skill_id: 'c', priority: 90 },
    ]);
  });

  it('§5 step 1: equal priorities are broken by skill_id ascending, whatever the insertion order', () => {
    const forward = buildPool(input(registered(['alpha', 5], ['beta', 5], ['gamma', 5], ['early', 1])));
    const backward = buildPool(input(registered(['gamma', 5], ['beta', 5], ['early', 1], ['alpha', 5])));
    expect(ids(forward)).toEqual(['early', 'alpha', 'beta', 'gamma']);
    expect(ids(backward)).toEqual(ids(forward));
  });

  it('§5 step 1: tie-break is code-unit order (uppercase before lowercase), not locale order', () => {
    expect(ids(buildPool(input(registered(['b', 1], ['B', 1], ['a', 1]))))).toEqual(['B', 'a', 'b']);
  });

  it('§5 step 1: session.fallback_handlers leads, in its own order, ahead of better priorities', () => {
    const pool = buildPool(input(registered(['a', 10], ['b', 20], ['c', 30]), { preference: ['c', 'b', 'a'] }));
    expect(ids(pool)).toEqual(['c', 'b', 'a']);
  });

  it('§5 step 1 (§4 partial list): unlisted registered skills are appended by priority ascending', () => {
    const pool = buildPool(
      input(registered(['z-catchall', 100], ['a', 10], ['m', 60], ['k', 60], ['listed', 95]), { preference: ['listed'] }),
    );
    expect(ids(pool)).toEqual(['listed', 'a', 'k', 'm', 'z-catchall']);
  });

  it('§5 step 1: a listed skill that is not registered is dropped (no place in the pool)', () => {
    const pool = buildPool(input(registered(['a', 10], ['b', 20]), { preference: ['ghost', 'b'] }));
    expect(ids(pool)).toEqual(['b', 'a']);
  });

  it('§5 step 1: a skill listed twice appears once, at its first mention', () => {
    const pool = buildPool(input(registered(['a', 10], ['b', 20], ['c', 30]), { preference: ['b', 'c', 'b', 'a'] }));
    expect(ids(pool)).toEqual(['b', 'c', 'a']);
  });

  it('§5 step 1: an empty preference list is the same as an absent one', () => {
    const available = registered(['b', 20], ['a', 10]);
    expect(buildPool(input(available, { preference: [] }))).toEqual(buildPool(input(available)));
  });

  it('§5 step 1: each entry carries its (effective) priority', () => {
    expect(buildPool(input(registered(['a', 7]), { preference: ['a'] }))).toEqual([{ skill_id: 'a', priority: 7 }]);
  });
});

describe('OVOS-FALLBACK-1 §5 step 2: stage range', () => {
  const tiers = registered(['p0', 0], ['p49', 49], ['p50', 50], ['p74', 74], ['p75', 75], ['p100', 100], ['p101', 101]);

  it('§5 step 2: the range is inclusive at both ends (49 in [0,49], 50 not)', () => {
    expect(ids(buildPool(input(tiers, { range: [0, 49] })))).toEqual(['p0', 'p49']);
  });

  it('§5 step 2 (§8.2 example tiers): [50,74] and [75,100]', () => {
    expect(ids(buildPool(input(tiers, { range: [50, 74] })))).toEqual(['p50', 'p74']);
    expect(ids(buildPool(input(tiers, { range: [75, 100] })))).toEqual(['p75', 'p100']);
  });

  it('§5 step 2: no range (single-stage deployment) keeps every priority', () => {
    expect(ids(buildPool(input(tiers)))).toEqual(['p0', 'p49', 'p50', 'p74', 'p75', 'p100', 'p101']);
  });

  it('§5 step 2: a preferred skill outside the range is removed, not pulled into the stage', () => {
    const pool = buildPool(input(registered(['high', 10], ['low', 80]), { preference: ['low', 'high'], range: [0, 49] }));
    expect(ids(pool)).toEqual(['high']);
  });

  it('§5 step 2: a one-value range [n, n] keeps exactly priority n', () => {
    expect(ids(buildPool(input(tiers, { range: [50, 50] })))).toEqual(['p50']);
  });
});

describe('OVOS-FALLBACK-1 §5 step 3: availability', () => {
  it('§5 step 3: only skills present in the session’s registry view are kept', () => {
    const pool = buildPool(input(registered(['a', 10]), { preference: ['x', 'a', 'y'] }));
    expect(ids(pool)).toEqual(['a']);
  });

  it('§5 step 3: a deployment priority override never makes an unregistered skill available', () => {
    const pool = buildPool(input(registered(['a', 10]), { priorityOverrides: { ghost: 1 }, preference: ['ghost'] }));
    expect(ids(pool)).toEqual(['a']);
  });
});

describe('OVOS-FALLBACK-1 §5 step 4: policy', () => {
  it('§5 step 4: session.blacklisted_skills removes the skill', () => {
    const pool = buildPool(input(registered(['a', 10], ['b', 20], ['c', 30]), { blacklistedSkills: ['b'] }));
    expect(ids(pool)).toEqual(['a', 'c']);
  });

  it('§5 step 4: the denylist wins over the preference list', () => {
    const pool = buildPool(input(registered(['a', 10], ['b', 20]), { preference: ['b', 'a'], blacklistedSkills: ['b'] }));
    expect(ids(pool)).toEqual(['a']);
  });

  it('§5 step 4: denylisting an unregistered skill changes nothing', () => {
    const available = registered(['a', 10], ['b', 20]);
    expect(buildPool(input(available, { blacklistedSkills: ['ghost'] }))).toEqual(buildPool(input(available)));
  });

  it('§5 step 4 (ovos-core fallback_mode accept_all): every skill is kept and the lists are ignored', () => {
    const pool = buildPool(
      input(registered(['a', 10], ['b', 20]), { mode: 'accept_all', whitelist: ['a'], blacklist: ['a'] }),
    );
    expect(ids(pool)).toEqual(['a', 'b']);
  });

  it('§5 step 4 (ovos-core fallback_mode whitelist): only whitelisted skills are kept', () => {
    const pool = buildPool(input(registered(['a', 10], ['b', 20], ['c', 30]), { mode: 'whitelist', whitelist: ['c', 'a'] }));
    expect(ids(pool)).toEqual(['a', 'c']);
  });

  it('§5 step 4 (ovos-core fallback_mode whitelist): an empty whitelist admits nothing', () => {
    expect(buildPool(input(registered(['a', 10]), { mode: 'whitelist', whitelist: [] }))).toEqual([]);
  });

  it('§5 step 4 (ovos-core fallback_mode blacklist): deployment-blacklisted skills are removed', () => {
    const pool = buildPool(input(registered(['a', 10], ['b', 20], ['c', 30]), { mode: 'blacklist', blacklist: ['b'] }));
    expect(ids(pool)).toEqual(['a', 'c']);
  });

  it('§5 step 4: the whitelist does not override the session denylist', () => {
    const pool = buildPool(
      input(registered(['a', 10], ['b', 20]), { mode: 'whitelist', whitelist: ['a', 'b'], blacklistedSkills: ['a'] }),
    );
    expect(ids(pool)).toEqual(['b']);
  });
});

describe('deployment priority overrides (ovos-core fallback_priorities)', () => {
  it('§5 step 1: an override replaces the registered priority for ordering', () => {
    const pool = buildPool(input(registered(['a', 10], ['b', 20]), { priorityOverrides: { b: 5 } }));
    expect(pool).toEqual([
      { skill_id: 'b', priority: 5 },
      { skill_id: 'a', priority: 10 },
    ]);
  });

  it('§5 step 2: the stage range applies to the overridden priority', () => {
    const available = registered(['moved-down', 10], ['moved-up', 90]);
    const priorityOverrides = { 'moved-down': 80, 'moved-up': 20 };
    expect(ids(buildPool(input(available, { priorityOverrides, range: [0, 49] })))).toEqual(['moved-up']);
    expect(ids(buildPool(input(available, { priorityOverrides, range: [75, 100] })))).toEqual(['moved-down']);
  });

  it('§5 step 1: an override of 0 is honoured (not treated as absent)', () => {
    const pool = buildPool(input(registered(['a', 10], ['b', 20]), { priorityOverrides: { b: 0 } }));
    expect(ids(pool)).toEqual(['b', 'a']);
  });

  // Regression: overrides were read with `[skillId]`, so "constructor" or "toString" got a function as priority and
  // NaN comparisons kept it in every stage range.
  it('§5 step 2: a skill named like an Object.prototype key keeps its registered priority', () => {
    const available = registered(['constructor', 90], ['toString', 95], ['__proto__', 80]);
    expect(buildPool(input(available, { priorityOverrides: {}, range: [0, 49] }))).toEqual([]);
    expect(buildPool(input(available, { priorityOverrides: {}, range: [75, 100] }))).toEqual([
      { skill_id: '__proto__', priority: 80 },
      { skill_id: 'constructor', priority: 90 },
      { skill_id: 'toString', priority: 95 },
    ]);
  });
});

describe('OVOS-FALLBACK-1 §5: empty input', () => {
  it('§5: an empty registry yields an empty pool', () => {
    expect(buildPool(input(registered()))).toEqual([]);
  });

  it('§5: an empty registry with a preference list still yields an empty pool', () => {
    expect(buildPool(input(registered(), { preference: ['a', 'b'], range: [0, 100] }))).toEqual([]);
  });

  it('§5: buildPool does not mutate its input', () => {
    const available = registered(['b', 20], ['a', 10]);
    const preference = ['b'];
    buildPool(input(available, { preference }));
    expect([...available.entries()]).toEqual([
      ['b', 20],
      ['a', 10],
    ]);
    expect(preference).toEqual(['b']);
  });
});
