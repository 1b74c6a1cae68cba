/**
 * The user harness with unmodified ovos-workshop `@common_query` skills (`"dialect": "legacy"`; src/plugins/README.md "Legacy
 * common-query skills"): announced before they are asked, claiming with `searching: true` on the contest's
 * `question:query`, their answer following unasked, mixed with spec skills in one contest — replayed against the whole
 * system on ManualClock at every boundary and compared with the spec model. Each expected decision is also written
 * out here by hand, from OVOS-COMMON-QUERY-1 §6–§8 and the legacy decisions of src/plugins/README.md, so a model that drifted with the
 * system would still fail.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, type Config } from '../../src/config/defaults.js';
import { parseSkillsFile, runScenario, runTimingSuite, SkillsFileError, type SkillScript, type TimingScenario } from '../../src/testing/index.js';
import { withConfig } from '../support/harness.js';

const QUESTION = 'what is the speed of light';
const scenario = (skills: readonly SkillScript[]): TimingScenario => ({ name: QUESTION, utterance: QUESTION, skills });

async function suite(skills: readonly SkillScript[], config: Config = DEFAULT_CONFIG) {
  const report = await runTimingSuite(config, [scenario(skills)]);
  // `ok` includes exactly one ovos.utterance.handled (compare, src/testing/run.ts).
  expect(report.paths.filter((p) => !p.ok).map((p) => [p.name, p.failures, p.timeline])).toEqual([]);
  return report;
}

describe('timing harness: legacy common-query skills (ovos-wire-today.md; OVOS-COMMON-QUERY-1 §6–§8)', () => {
  it('a mixed roster: every path agrees with the spec model; the legacy winner is sent no request, is activated and ends the utterance itself', async () => {
    const report = await suite([
      { kind: 'common_query', skill_id: 'wk.wiki', dialect: 'legacy', pongAfterMs: 5, answerAfterMs: 300, conf: 0.8 },
      { kind: 'common_query', skill_id: 'spec.ddg', pongAfterMs: 20, latencyMs: 200, answerAfterMs: 150, conf: 0.7 },
      { kind: 'common_query', skill_id: 'wk.none', dialect: 'legacy', pongAfterMs: 3, answer: null, answerAfterMs: 40 },
      { kind: 'fallback', skill_id: 'fb', priority: 10, pongAfterMs: 30, willing: false },
    ]);
    // §6.3 rule 1 at 20 ms (every known skill heard, claims in hand); wk.none's searching: false at 40 settles its
    // claim; ddg answers 150 ms after its request (170), wk.wiki 300 ms after the question — the last claimant, so
    // the collection closes on it and the higher conf wins (§8 step 4).
    const path = report.paths[0]!;
    expect(path.expected).toMatchObject({ decidedBy: 'common_query', skill_id: 'wk.wiki', decidedAt: 300, handledAt: 300 });
    expect(path.timeline.some((line) => line.includes('wk.wiki:common_query'))).toBe(false);
    expect(path.timeline).toContain('+20 spec.ddg:common_query');
    expect(path.timeline.filter((line) => / (wk\.wiki\.activate|question:action\.wk\.wiki|ovos\.utterance\.handled)( |$)/.test(line)).map((line) => line.split(' ').slice(0, 2).join(' '))).toEqual([
      '+300 wk.wiki.activate',
      '+300 question:action.wk.wiki',
      '+300 ovos.utterance.handled',
    ]);
  });

  it('§8 step 3 during the poll: a legacy fast win (conf 2.0 competes as 1) ends the contest the moment it arrives, before the poll closes', async () => {
    const report = await suite([
      { kind: 'common_query', skill_id: 'wk.fast', dialect: 'legacy', pongAfterMs: 2, answerAfterMs: 10, conf: 2 },
      { kind: 'common_query', skill_id: 'spec.slow', pongAfterMs: 200, latencyMs: 100, answerAfterMs: 50, conf: 0.8 },
    ]);
    expect(report.paths[0]!.expected).toMatchObject({ skill_id: 'wk.fast', decidedAt: 10 });
  });

  it('§5.1 / src/plugins/README.md "Fast win": a legacy fast answer kept during the poll wins the moment `match` joins — the poll still open — or, joining later, at the join', async () => {
    // spec.x's pong at 50 ms holds the poll open (rule 1); fallback_high's only skill declines at 30 ms.
    const roster = (fbDeclinesAt: number): SkillScript[] => [
      { kind: 'fallback', skill_id: 'fb', priority: 10, pongAfterMs: fbDeclinesAt, willing: false },
      { kind: 'common_query', skill_id: 'wk.fast', dialect: 'legacy', pongAfterMs: 2, answerAfterMs: 10, conf: 0.95 },
      { kind: 'common_query', skill_id: 'spec.x', pongAfterMs: 50, latencyMs: 50, answerAfterMs: 400, conf: 0.6 },
    ];
    expect((await suite(roster(30))).paths[0]!.expected).toMatchObject({ skill_id: 'wk.fast', decidedAt: 30 });
    expect((await suite(roster(200))).paths[0]!.expected).toMatchObject({ skill_id: 'wk.fast', decidedAt: 200 });
  });

  it('§7.2 settle (src/plugins/README.md): a legacy answer that came during the poll starts its round trip when the poll closes — the other claimants are only asked then', async () => {
    // A 20 ms initial window shows it: wk.a answers at 10 ms; wk.b claims at 120 ms (the poll closes then, rule 1)
    // and never answers. The window ends at 140, the round trip is 120 ms (wk.b's pong delay): 120 + 120 = 240.
    const short = withConfig((c) => ({ ...c, commonQuery: { ...c.commonQuery, collectionInitialMs: 20 } }));
    const report = await suite(
      [
        { kind: 'common_query', skill_id: 'wk.a', dialect: 'legacy', pongAfterMs: 2, answerAfterMs: 10, conf: 0.7 },
        { kind: 'common_query', skill_id: 'wk.b', dialect: 'legacy', pongAfterMs: 120, answerAfterMs: 'never' },
      ],
      short,
    );
    expect(report.paths[0]!.expected).toMatchObject({ skill_id: 'wk.a', decidedAt: 240 });
  });

  it('src/plugins/README.md "Dead skills": a legacy skill speaks its answer itself — gone before the decision, its better answer does not win; the spec answer is spoken', async () => {
    const report = await suite([
      { kind: 'common_query', skill_id: 'wk.a', dialect: 'legacy', pongAfterMs: 2, answerAfterMs: 20, conf: 0.8, disconnectAtMs: 50 },
      { kind: 'common_query', skill_id: 'spec.s', pongAfterMs: 5, answerAfterMs: 200, conf: 0.6 },
    ]);
    expect(report.paths[0]!.expected).toMatchObject({ decidedBy: 'common_query', skill_id: 'spec.s', decidedAt: 205 });
    expect(report.paths[0]!.timeline.some((line) => line.includes('question:action.wk.a'))).toBe(false);
    // The contest may be over before `match` reads it (early start, fallback_high still asking): a legacy winner
    // that left in between is left out too.
    const early = await suite([
      { kind: 'fallback', skill_id: 'fb', priority: 10, pongAfterMs: 200, willing: false },
      { kind: 'common_query', skill_id: 'wk.a', dialect: 'legacy', pongAfterMs: 2, answerAfterMs: 20, conf: 0.8, disconnectAtMs: 100 },
      { kind: 'common_query', skill_id: 'spec.s', pongAfterMs: 5, answerAfterMs: 10, conf: 0.6 },
    ]);
    expect(early.paths[0]!.expected).toMatchObject({ skill_id: 'spec.s', decidedAt: 200 });
  });

  it('§7.2 initial window of a legacy claimant at T−1 / T / T+1: its answer (timed from the question) around the window\'s end, then one round trip', async () => {
    const report = await suite([
      { kind: 'common_query', skill_id: 'wk.a', dialect: 'legacy', pongAfterMs: 2, answerAfterMs: 'never', conf: 0.7 },
      { kind: 'common_query', skill_id: 'spec.x', pongAfterMs: 30, latencyMs: 0, answerAfterMs: 'never' },
    ]);
    const at = (suffix: string, ms: number) => report.paths.find((p) => p.name === `${QUESTION}: wk.a at collectionWindow${suffix} (${ms} ms)`)!;
    // The poll closes at 30 ms; the window ends 3000 ms after: wk.a's answer at 3029 / 3030 / 3031 ms after the
    // question is the first survivor, spec.x never answers, so the window closes one round trip (50 ms) after it.
    expect([at('−1', 2999), at('', 3000), at('+1', 3001)].map((p) => [p.ok, p.expected.decidedAt])).toEqual([
      [true, 3079],
      [true, 3080],
      [true, 3081],
    ]);
  });

  it('README: with only the legacy dialect spoken, rule 1 needs no claim — every skill declining closes the poll at once (not at the 125 ms claim bound)', async () => {
    // A lone `searching: false` is not what ovos-workshop sends (it claims first), but other programs may: the rule
    // is about any roster skill's "no".
    const legacyOnly = withConfig((c) => ({ ...c, dialects: { spec: false, legacy: true } }));
    const report = await suite(
      [
        { kind: 'common_query', skill_id: 'wk.no', dialect: 'legacy', pong: 'decline', pongAfterMs: 5 },
        { kind: 'common_query', skill_id: 'wk.no2', dialect: 'legacy', pong: 'decline', pongAfterMs: 8 },
      ],
      legacyOnly,
    );
    expect(report.paths[0]!.expected).toMatchObject({ decidedBy: 'unmatched', decidedAt: 8 });
    const both = await runScenario(DEFAULT_CONFIG, scenario([{ kind: 'common_query', skill_id: 'wk.no', dialect: 'legacy', pong: 'decline', pongAfterMs: 5 }]));
    expect(both.expected).toMatchObject({ decidedBy: 'unmatched', decidedAt: 125 });
    expect(both.ok).toBe(true);
  });

  it('teeth: a system whose collection ceiling differs from the config the model reads fails at a legacy claimant\'s boundary', async () => {
    const drifted = withConfig((c) => ({ ...c, commonQuery: { ...c.commonQuery, collectionCeilingMs: 2_000 } }));
    const roster: SkillScript[] = [{ kind: 'common_query', skill_id: 'wk.a', dialect: 'legacy', pongAfterMs: 2, answerAfterMs: 2_500, conf: 0.7 }];
    const result = await runScenario(DEFAULT_CONFIG, scenario(roster), { name: 'wk.a late', boundary: { delay: 'collectionCeiling', offset: -1 }, clause: 'OVOS-COMMON-QUERY-1 §7.2 collection ceiling' }, { systemConfig: drifted });
    expect(result.ok).toBe(false);
    // The drifted ceiling (2 s after the poll) closes the collection before wk.a's answer at 2.5 s: nothing to speak.
    expect(result.failures.slice(0, 2)).toEqual([
      'decided by: expected "common_query", observed "unmatched" [boundary collectionCeiling -1, OVOS-COMMON-QUERY-1 §7.2 collection ceiling]',
      'winner: expected "wk.a", observed null [boundary collectionCeiling -1, OVOS-COMMON-QUERY-1 §7.2 collection ceiling]',
    ]);
  });

  it('skills file: "dialect" for common-query skills; a legacy skill declares no latency_ms, and its conf may exceed 1', () => {
    const file = parseSkillsFile('{"skills": [{"kind": "common_query", "skill_id": "w", "dialect": "legacy", "conf": 2}]}');
    expect(file.skills[0]).toEqual({ kind: 'common_query', skill_id: 'w', dialect: 'legacy', conf: 2 });
    expect(() => parseSkillsFile('{"skills": [{"kind": "common_query", "skill_id": "w", "dialect": "legacy", "latencyMs": 20}]}')).toThrow('skills[0] (w).latencyMs: a legacy skill declares no latency_ms');
    expect(() => parseSkillsFile('{"skills": [{"kind": "common_query", "skill_id": "w", "conf": 2}]}')).toThrow(SkillsFileError);
  });
});
