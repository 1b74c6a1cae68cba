/**
 * Every delay the machines arm, with the clause that sets it, and how the harness puts a skill's reply at T−1, T and
 * T+1 of it. `DELAY_BOUNDARIES` is keyed by the machines' own delay names: test/testing/boundary-coverage.test.ts
 * lists the delays of every machine and fails when one has no entry here, so a new delay cannot go untested.
 */
import type { Config } from '../config/defaults.js';
import { stageBoundMs } from '../plugins/fallback/stage-bound.js';
import { gateAccepts } from './gate-verdict.js';
import { expectedMarks, initialWindowOf, settleOf, type Marks } from './model.js';
import type { CommonQuerySkillScript, FallbackSkillScript, SkillScript, TimingScenario } from './scenario.js';

export interface Variant {
  readonly name: string;
  readonly boundary: { readonly delay: string; readonly offset: -1 | 0 | 1 } | null;
  readonly clause: string;
  readonly config: Config;
  readonly scenario: TimingScenario;
}

interface DelayBoundary {
  readonly machine: 'fallback' | 'commonQuery' | 'utterance';
  readonly clause: string;
  /** For one skill of the roster: the value of T, and the script with its reply moved to `at` ms; null when n/a. */
  readonly place: (config: Config, skill: SkillScript, roster: readonly SkillScript[], utterance: string) => { readonly T: number; readonly at: (ms: number) => SkillScript; readonly config?: Config } | null;
}

const fallbackOnly = (skill: SkillScript): FallbackSkillScript | null => (skill.kind === 'fallback' ? skill : null);
const cqOnly = (skill: SkillScript): CommonQuerySkillScript | null => (skill.kind === 'common_query' ? skill : null);

/** The expected run's instants (fallback turns, the common-query poll) for this roster. */
const marksOf = (config: Config, roster: readonly SkillScript[], utterance: string): Marks =>
  expectedMarks(config, { name: '', utterance, skills: roster }, gateAccepts(config, utterance));

/**
 * How long after the question a claimant's request comes: a spec claimant's answer time counts from its request (0
 * here); a legacy one is sent none — its answer counts from the question, and the collection starts when the poll
 * closes. Null when the expected run has no poll (the gate rejects the utterance, or the stage is not run).
 */
const requestOffset = (config: Config, skill: CommonQuerySkillScript, roster: readonly SkillScript[], utterance: string): number | null => {
  if (skill.dialect !== 'legacy') return 0;
  // The poll as it closes without this skill's own answer (a fast win of its own would end it early).
  const silenced = roster.map((s) => (s === skill ? { ...skill, answerAfterMs: 'never' as const } : s));
  const poll = marksOf(config, silenced, utterance).poll;
  return poll === undefined ? null : poll.close - poll.start;
};

/** A collection-window boundary of one claimant: T after its request, its answer moved to T ± 1 of it. */
const answerBoundary = (config: Config, s: CommonQuerySkillScript, roster: readonly SkillScript[], utterance: string, T: number) => {
  const offset = requestOffset(config, s, roster, utterance);
  return offset === null ? null : { T, at: (ms: number): SkillScript => ({ ...s, answerAfterMs: ms + offset }) };
};

const claimantsOf = (roster: readonly SkillScript[]): CommonQuerySkillScript[] =>
  roster.filter((c): c is CommonQuerySkillScript => c.kind === 'common_query' && (c.pong ?? 'claim') === 'claim');

export const DELAY_BOUNDARIES: Readonly<Record<string, DelayBoundary>> = {
  pingTimeout: {
    machine: 'fallback',
    clause: 'OVOS-FALLBACK-1 §6.1 ping timeout',
    // A spec skill's ping is sent when its turn comes: T after it, as its pong is timed.
    place: (config, skill) => {
      const s = fallbackOnly(skill);
      return s === null || s.dialect === 'legacy' ? null : { T: config.fallback.pingTimeoutMs, at: (ms) => ({ ...s, pongAfterMs: ms }) };
    },
  },
  broadcastTimeout: {
    machine: 'fallback',
    clause: 'OVOS-FALLBACK-1 §6.1 ping timeout, from the utterance broadcast',
    // A legacy skill's ping is the utterance's one broadcast, and its timeout runs from it: T after it, as its pong is
    // timed (a skill never asked has no turn).
    place: (config, skill, roster, utterance) => {
      const s = fallbackOnly(skill);
      if (s === null || s.dialect !== 'legacy' || marksOf(config, roster, utterance).turns.get(s.skill_id) === undefined) return null;
      return { T: config.fallback.pingTimeoutMs, at: (ms) => ({ ...s, pongAfterMs: ms }) };
    },
  },
  matchTimeout: {
    machine: 'utterance',
    clause: 'OVOS-PIPELINE-1 §4.4 match bound',
    // The skill's pong at the stage's match bound; the ping timeout lifted past it so the bound is what decides.
    place: (config, skill) => {
      const s = fallbackOnly(skill);
      const M = config.orchestrator.matchTimeoutMs;
      return s === null ? null : { T: M, at: (ms) => ({ ...s, pongAfterMs: ms }), config: { ...config, fallback: { ...config.fallback, pingTimeoutMs: M + 1 } } };
    },
  },
  stageBound: {
    machine: 'fallback',
    clause: 'OVOS-PIPELINE-1 §4.4 × OVOS-FALLBACK-1 §6.2 stage bound',
    // The skill's pong at the fallback stage's own bound (just before the match bound); the ping timeout lifted past
    // the match bound so the stage bound is what decides. A legacy skill's pong counts from the broadcast.
    place: (config, skill) => {
      const s = fallbackOnly(skill);
      const M = config.orchestrator.matchTimeoutMs;
      return s === null ? null : { T: stageBoundMs(M), at: (ms) => ({ ...s, pongAfterMs: ms }), config: { ...config, fallback: { ...config.fallback, pingTimeoutMs: M + 1 } } };
    },
  },
  handlerTimeout: {
    machine: 'utterance',
    clause: 'OVOS-PIPELINE-1 §8 handler timeout',
    place: (config, skill) => {
      const s = fallbackOnly(skill);
      return s === null || s.willing === false ? null : { T: config.orchestrator.handlerTimeoutMs, at: (ms) => ({ ...s, handlerMs: ms }) };
    },
  },
  pollClaimBound: {
    machine: 'commonQuery',
    clause: 'OVOS-COMMON-QUERY-1 §6.3 claim bound',
    place: (config, skill) => {
      const s = cqOnly(skill);
      return s === null || s.pong === 'silent' ? null : { T: Math.min(config.commonQuery.pollClaimBoundMs, config.commonQuery.pollWindowMs), at: (ms) => ({ ...s, pongAfterMs: ms }) };
    },
  },
  pollWindow: {
    machine: 'commonQuery',
    clause: 'OVOS-COMMON-QUERY-1 §6.3 poll-window ceiling',
    place: (config, skill) => {
      const s = cqOnly(skill);
      return s === null || s.pong === 'silent' ? null : { T: config.commonQuery.pollWindowMs, at: (ms) => ({ ...s, pongAfterMs: ms }) };
    },
  },
  collectionWindow: {
    machine: 'commonQuery',
    clause: 'OVOS-COMMON-QUERY-1 §7.2 initial collection window',
    place: (config, skill, roster, utterance) => {
      const s = cqOnly(skill);
      return s === null || (s.pong ?? 'claim') !== 'claim' ? null : answerBoundary(config, s, roster, utterance, initialWindowOf(config.commonQuery, claimantsOf(roster)));
    },
  },
  settle: {
    machine: 'commonQuery',
    clause: 'OVOS-COMMON-QUERY-1 §7.2 collection window: one round trip after the first surviving answer (src/plugins/README.md)',
    // This skill's answer is the first survivor, with another claimant still outstanding: answered at T = the
    // window's end − the round trip, its round trip ends with the window (T−1: before it, T+1: after it — the
    // settle then decides when the window closes).
    place: (config, skill, roster, utterance) => {
      const s = cqOnly(skill);
      const { minConfidence } = config.commonQuery;
      const survives = (c: CommonQuerySkillScript): boolean => c.answer !== null && (c.conf ?? 0.7) >= minConfidence;
      if (s === null || (s.pong ?? 'claim') !== 'claim' || !survives(s)) return null;
      const others = claimantsOf(roster).filter((c) => c.skill_id !== s.skill_id);
      const T = initialWindowOf(config.commonQuery, claimantsOf(roster)) - settleOf(config.commonQuery, claimantsOf(roster));
      // Answered by `ms` after the request (a legacy claimant's answer counts from the question).
      const answersBy = (c: CommonQuerySkillScript, ms: number): boolean => {
        const offset = requestOffset(config, c, roster, utterance);
        return c.answerAfterMs !== 'never' && offset !== null && (c.answerAfterMs ?? 0) - offset <= ms;
      };
      if (T < 1 || others.some((c) => survives(c) && answersBy(c, T + 1)) || others.every((c) => answersBy(c, T + 1))) return null;
      return answerBoundary(config, s, roster, utterance, T);
    },
  },
  collectionCeiling: {
    machine: 'commonQuery',
    clause: 'OVOS-COMMON-QUERY-1 §7.2 collection ceiling',
    place: (config, skill, roster, utterance) => {
      const s = cqOnly(skill);
      return s === null || (s.pong ?? 'claim') !== 'claim' ? null : answerBoundary(config, s, roster, utterance, config.commonQuery.collectionCeilingMs);
    },
  },
};

/** For every skill and every delay that applies to it: the scenario with that skill's reply at T−1, T and T+1. */
export function boundaryVariants(config: Config, scenario: TimingScenario): Variant[] {
  const variants: Variant[] = [];
  for (const [delay, boundary] of Object.entries(DELAY_BOUNDARIES)) {
    for (const [index, skill] of scenario.skills.entries()) {
      const placed = boundary.place(config, skill, scenario.skills, scenario.utterance);
      if (placed === null) continue;
      for (const offset of [-1, 0, 1] as const) {
        const ms = placed.T + offset;
        if (ms < 0) continue;
        const skills = scenario.skills.map((s, i) => (i === index ? placed.at(ms) : s));
        variants.push({
          name: `${scenario.name}: ${skill.skill_id} at ${delay}${offset === 0 ? '' : offset < 0 ? '−1' : '+1'} (${ms} ms)`,
          boundary: { delay, offset },
          clause: boundary.clause,
          config: placed.config ?? config,
          scenario: { ...scenario, name: `${scenario.name} / ${delay}`, skills },
        });
      }
    }
  }
  return variants;
}
