/**
 * Never silent: what a config already reveals about contests it will cut short or skills it
 * will never ask. `configWarnings` is pure; `createContestSystem` (and so the daemon) logs each one at warn.
 */
import { describe, expect, it } from 'vitest';

import { LocalBus } from '../../src/bus/local-bus.js';
import { ManualClock } from '../../src/clock/manual-clock.js';
import { configWarnings, mergeConfig, validateConfig, type ConfigWarning } from '../../src/config/config.js';
import { DEFAULT_CONFIG, type Config } from '../../src/config/defaults.js';
import { createContestSystem } from '../../src/system.js';
import { captureLogs } from '../integration/probe.js';

/** DEFAULT_CONFIG with `override` merged over it, validated as the daemon validates a config file. */
const validWith = (override: unknown): Config => validateConfig(mergeConfig(DEFAULT_CONFIG, override, 'test'));

/** A config built in code, as an embedder may hand it to createContestSystem: never validated. */
const unchecked = (patch: (config: Config) => Config): Config => patch(structuredClone(DEFAULT_CONFIG) as Config);

const reasons = (warnings: readonly ConfigWarning[]): string[] => warnings.map((w) => w.reason);

const only = <T>(list: readonly T[]): T => {
  expect(list).toHaveLength(1);
  return list[0]!;
};

describe('configWarnings: never silent', () => {
  it('the defaults warn about nothing', () => {
    expect(configWarnings(DEFAULT_CONFIG)).toEqual([]);
    expect(configWarnings(validWith({}))).toEqual([]);
  });

  it('OVOS-FALLBACK-1 §6.1 / PIPELINE-1 §4.4 match bound: a match bound ≤ pingTimeoutMs — one silent skill cuts the stage — is warned, with both numbers', () => {
    // Valid (the common-query relation holds): only the fallback one is in the way.
    const warning = only(configWarnings(validWith({ fallback: { pingTimeoutMs: 10_000 } })));
    expect(warning).toMatchObject({
      reason: 'match_bound_below_ping_timeout',
      key: 'orchestrator.matchTimeoutMs',
      details: { match_timeout_ms: 10_000, ping_timeout_ms: 10_000 },
    });
    expect(warning.message).toContain('never asked');
    expect(warning.message).toContain('fallback.pingTimeoutMs');
    // One ms of room is enough for the next skill to be asked: no warning.
    expect(configWarnings(validWith({ fallback: { pingTimeoutMs: 9_999 } }))).toEqual([]);
    expect(reasons(configWarnings(validWith({ orchestrator: { matchTimeoutMs: 6_000 }, fallback: { pingTimeoutMs: 7_000 } })))).toEqual([
      'match_bound_below_ping_timeout',
    ]);
  });

  it('OVOS-COMMON-QUERY-1 §2.1 / PIPELINE-1 match bound: poll ceiling + collection ceiling above the bound (a question can be cut) is warned for a config validation never saw', () => {
    const cut = unchecked((c) => ({ ...c, orchestrator: { ...c.orchestrator, matchTimeoutMs: 5_499 } }));
    const warning = only(configWarnings(cut));
    expect(warning).toMatchObject({
      reason: 'match_bound_below_common_query',
      key: 'orchestrator.matchTimeoutMs',
      details: { match_timeout_ms: 5_499, poll_window_ms: 500, collection_ceiling_ms: 5_000, contest_ceiling_ms: 5_500 },
    });
    // Exactly the contest's worst case fits.
    expect(configWarnings(unchecked((c) => ({ ...c, orchestrator: { ...c.orchestrator, matchTimeoutMs: 5_500 } })))).toEqual([]);
    // A bound below both says both.
    expect(reasons(configWarnings(unchecked((c) => ({ ...c, orchestrator: { ...c.orchestrator, matchTimeoutMs: 100 } }))))).toEqual([
      'match_bound_below_ping_timeout',
      'match_bound_below_common_query',
    ]);
  });

  it('OVOS-FALLBACK-1 §3.3: fallback.mode whitelist with an empty whitelist (nobody, the catch-all included, is ever asked) is warned', () => {
    expect(only(configWarnings(validWith({ fallback: { mode: 'whitelist' } })))).toMatchObject({
      reason: 'fallback_whitelist_empty',
      key: 'fallback.whitelist',
    });
    expect(configWarnings(validWith({ fallback: { mode: 'whitelist', whitelist: ['a'] } }))).toEqual([]);
  });

  it('a whitelist or blacklist the fallback.mode ignores is warned, naming the list', () => {
    const warnings = configWarnings(validWith({ fallback: { whitelist: ['a'], blacklist: ['b', 'c'] } }));
    expect(warnings.map((w) => [w.reason, w.key, w.details['skills']])).toEqual([
      ['fallback_list_ignored', 'fallback.whitelist', ['a']],
      ['fallback_list_ignored', 'fallback.blacklist', ['b', 'c']],
    ]);
    expect(configWarnings(validWith({ fallback: { mode: 'blacklist', blacklist: ['b'] } }))).toEqual([]);
  });

  it('OVOS-FALLBACK-1 §8.2: a priority override no stage covers (that skill is asked by the nearest stage instead) is warned under its own key', () => {
    const warning = only(configWarnings(validWith({ fallback: { priorities: { 'catch-all.skill': 101, fine: 100 } } })));
    expect(warning).toMatchObject({
      reason: 'priority_override_unstaged',
      key: 'fallback.priorities["catch-all.skill"]',
      details: { skill_id: 'catch-all.skill', priority: 101 },
    });
  });

  it('OVOS-FALLBACK-1 §8.2 / §3.3: priorities in 0–100 that no stage covers are warned as ranges; no stage at all (fallback off) is not', () => {
    const warning = only(configWarnings(validWith({ fallback: { stages: { fallback_high: null, fallback_medium: [50, 59], fallback_low: [80, 99] } } })));
    expect(warning).toMatchObject({ reason: 'priorities_unstaged', key: 'fallback.stages', details: { uncovered: [[0, 49], [60, 79], [100, 100]] } });
    expect(warning.message).toContain('0–49, 60–79, 100');
    expect(configWarnings(validWith({ fallback: { stages: { fallback_high: null, fallback_medium: null, fallback_low: null } } }))).toEqual([]);
  });

  it('OVOS-FALLBACK-1 §8.2: overlapping stage ranges (a skill there is asked twice per utterance) are warned, with the overlap', () => {
    const warning = only(configWarnings(validWith({ fallback: { stages: { fallback_medium: [50, 80] } } })));
    expect(warning).toMatchObject({ reason: 'stage_ranges_overlap', key: 'fallback.stages', details: { stages: ['fallback_medium', 'fallback_low'], overlap: [75, 80] } });
  });
});

describe('createContestSystem logs the config warnings (one mechanism: the daemon and every embedder)', () => {
  it('OVOS-FALLBACK-1 §6.1 / PIPELINE-1 §4.4 match bound: each warning is one warn line at system creation, with reason, key and numbers; the defaults log none', () => {
    const config = unchecked((c) => ({ ...c, orchestrator: { ...c.orchestrator, matchTimeoutMs: 400 } }));
    const { logger, lines } = captureLogs();
    const system = createContestSystem({ bus: new LocalBus(), clock: new ManualClock(), config, logger });
    try {
      expect(reasons(system.configWarnings)).toEqual(['match_bound_below_ping_timeout', 'match_bound_below_common_query']);
      const warns = lines.items.filter((line) => line.level === 40);
      expect(warns.map((line) => [line.reason, line['key']])).toEqual([
        ['match_bound_below_ping_timeout', 'orchestrator.matchTimeoutMs'],
        ['match_bound_below_common_query', 'orchestrator.matchTimeoutMs'],
      ]);
      expect(warns[0]).toMatchObject({ match_timeout_ms: 400, ping_timeout_ms: 500, msg: system.configWarnings[0]!.message });
    } finally {
      system.close();
    }

    const quiet = captureLogs();
    const defaults = createContestSystem({ bus: new LocalBus(), clock: new ManualClock(), logger: quiet.logger });
    defaults.close();
    expect(defaults.configWarnings).toEqual([]);
    expect(quiet.lines.items.filter((line) => line.level >= 40)).toEqual([]);
  });
});
