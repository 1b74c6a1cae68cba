/**
 * The user harness (`ovos-contests/testing`, `ovos-contests test-timing`): a deployer's config and roster replayed
 * against the whole system on ManualClock and compared with the spec model (src/testing/model.ts), at T−1, T, T+1 of
 * every delay. These tests run it the way a deployer does — on the sample roster, on a non-default config, on a
 * config that cuts contests short — and show it fails, naming the boundary and the clause, when the system deviates.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/defaults.js';
import { testTiming } from '../../src/cli/test-timing.js';
import { parseSkillsFile, runScenario, runTimingSuite, SkillsFileError, type TimingScenario } from '../../src/testing/index.js';
import { withConfig } from '../support/harness.js';

const SAMPLE = 'test/testing/sample-skills.json';
const sample = parseSkillsFile(readFileSync(SAMPLE, 'utf8'));
const scenarios = (utterances: readonly string[]): TimingScenario[] => utterances.map((u) => ({ name: u, utterance: u, skills: sample.skills }));

describe('timing harness on the sample roster (src/plugins/README.md "Testing your deployment\'s timing")', () => {
  it('defaults: every path — the two questions and every boundary variant — agrees with the spec model, one handled each', async () => {
    const report = await runTimingSuite(DEFAULT_CONFIG, scenarios(sample.utterances!));
    expect(report.paths.filter((p) => !p.ok).map((p) => [p.name, p.failures])).toEqual([]);
    expect(report.paths).toHaveLength(134);
    expect(report.configFindings).toEqual([]);
    // The model does not just agree on "nothing happened": the question is answered by wiki, the command by fb.chat.
    expect(report.paths[0]!.expected).toMatchObject({ decidedBy: 'common_query', skill_id: 'wiki' });
    expect(report.paths.find((p) => p.name === 'do a barrel roll')!.expected).toMatchObject({ decidedBy: 'fallback_low', skill_id: 'fb.chat', handler: 'complete' });
  });

  it('OVOS-COMMON-QUERY-1 §7.2 at the boundary: wiki answering at the initial window T−1 / T / T+1 (3 s: ddg declares no latency_ms)', async () => {
    const report = await runTimingSuite(DEFAULT_CONFIG, scenarios(['what is the speed of light']));
    const at = (suffix: string, ms: number) => report.paths.find((p) => p.name === `what is the speed of light: wiki at collectionWindow${suffix} (${ms} ms)`)!;
    // The poll closes at 40 ms (§6.3 rule 1: wiki's claim in hand, the decliner and ddg heard), the window ends at
    // 40 + 3000. ddg never answers, so only the window lets the answer through — one round trip (the 50 ms allowance:
    // no pong took longer) after wiki's answer arrives, which is then the first survivor (§7.2 settle): answered at
    // T−1 (3039) it closes at 3089, at T (just after the window timer) at 3090, at T+1 at 3091.
    expect([at('−1', 2999), at('', 3000), at('+1', 3001)].map((p) => [p.ok, p.expected.decidedAt])).toEqual([
      [true, 3089],
      [true, 3090],
      [true, 3091],
    ]);
  });

  it('OVOS-COMMON-QUERY-1 §7.2 settle at the boundary: wiki, the first survivor, answering one round trip before the window\'s end T−1 / T / T+1', async () => {
    const report = await runTimingSuite(DEFAULT_CONFIG, scenarios(['what is the speed of light']));
    const at = (suffix: string, ms: number) => report.paths.find((p) => p.name === `what is the speed of light: wiki at settle${suffix} (${ms} ms)`)!;
    // Requests at 40 ms, the window ends at 40 + 3000; the round trip is 50 ms (no pong took longer). ddg never
    // answers. wiki answering at 2949 / 2950 ms after the request: its round trip ends by the window's end (3040);
    // at 2951 it ends at 3041, and the window waits for it.
    expect([at('−1', 2949), at('', 2950), at('+1', 2951)].map((p) => [p.ok, p.expected.decidedAt])).toEqual([
      [true, 3040],
      [true, 3040],
      [true, 3041],
    ]);
  });

  it('a non-default config (short timeouts, no early start): every path agrees', async () => {
    const config = withConfig((c) => ({
      ...c,
      orchestrator: { ...c.orchestrator, matchTimeoutMs: 8_000, handlerTimeoutMs: 1_000 },
      fallback: { ...c.fallback, pingTimeoutMs: 300, stages: { fallback_high: [0, 30], fallback_medium: [31, 80], fallback_low: [81, 100] } },
      commonQuery: { ...c.commonQuery, earlyStart: false, pollWindowMs: 300, pollClaimBoundMs: 80, collectionInitialMs: 1_500, collectionCeilingMs: 2_500, fastWinConfidence: 0.75 },
    }));
    const report = await runTimingSuite(config, scenarios(sample.utterances!));
    expect(report.paths.filter((p) => !p.ok).map((p) => [p.name, p.failures])).toEqual([]);
    // No early start: the contest starts when fallback_high gives up (fb.slow silent 300 ms, fb.weather declines 30 ms
    // later), the poll closes at 330 + 40 (rule 1), and wiki (0.8) is a fast win at 0.75 the moment it answers.
    expect(report.paths[0]!.expected).toMatchObject({ decidedBy: 'common_query', skill_id: 'wiki', decidedAt: 330 + 40 + 600 });
  });

  it('OVOS-PIPELINE-1 §4.4: a match bound below the pool × ping timeout is a config finding, and the cut stage is modelled — fb.chat is never reached', async () => {
    const config = withConfig((c) => ({ ...c, orchestrator: { ...c.orchestrator, matchTimeoutMs: 400 } }));
    const report = await runTimingSuite(config, scenarios(['do a barrel roll']));
    expect(report.configFindings.join('\n')).toMatch(/OVOS-FALLBACK-1 §6\.1/);
    expect(report.paths.filter((p) => !p.ok).map((p) => [p.name, p.failures])).toEqual([]);
    expect(report.paths[0]!.expected).toMatchObject({ decidedBy: 'fallback_low', skill_id: 'fb.chat' });
    expect(report.paths[0]!.expected.trail.join('\n')).toMatch(/stage bound cuts the stage at 395 ms/);
  });

  it('teeth: a system whose ping timeout differs from the config the model reads fails at the boundary, naming it and the clause', async () => {
    const scenario: TimingScenario = { name: 'slow', utterance: 'do a barrel roll', skills: [{ kind: 'fallback', skill_id: 'fb.a', priority: 10, pongAfterMs: 499 }] };
    const drifted = withConfig((c) => ({ ...c, fallback: { ...c.fallback, pingTimeoutMs: 499 } }));
    const result = await runScenario(DEFAULT_CONFIG, scenario, { name: 'slow: fb.a at pingTimeout−1', boundary: { delay: 'pingTimeout', offset: -1 }, clause: 'OVOS-FALLBACK-1 §6.1 ping timeout' }, { systemConfig: drifted });
    expect(result.ok).toBe(false);
    expect(result.failures[0]).toBe('decided by: expected "fallback_high", observed "unmatched" [boundary pingTimeout -1, OVOS-FALLBACK-1 §6.1 ping timeout]');
    expect(result.timeline.some((line) => line.startsWith('+499 ovos.intent.unmatched'))).toBe(true);
  });
});

describe('test-timing command line', () => {
  it('prints one line per path and a summary; exit 0 when every path agrees', async () => {
    const lines: string[] = [];
    const code = await testTiming(['--skills', SAMPLE, '--no-mycroft-conf'], (line) => lines.push(line));
    expect(code).toBe(0);
    expect(lines.at(-1)).toBe('134 paths, 0 failed');
    expect(lines).toContain('ok   what is the speed of light → common_query wiki at 3040 ms, handled at 3040 ms');
  });

  it('the README\'s deployment of today\'s OVOS skills (legacy and spec mixed): every path agrees; fallback-unknown decides at its turn, not when it answered', async () => {
    const lines: string[] = [];
    expect(await testTiming(['--skills', 'test/testing/sample-legacy-skills.json', '--no-mycroft-conf'], (line) => lines.push(line))).toBe(0);
    expect(lines.at(-1)).toBe('119 paths, 0 failed');
    expect(lines).toContain('ok   what is the speed of light → common_query skill-ovos-wikipedia.openvoiceos at 900 ms, handled at 900 ms');
    expect(lines).toContain('ok   do a barrel roll → fallback_low skill-ovos-fallback-unknown.openvoiceos at 40 ms, handled at 160 ms');
  });

  it('a missing skills file exits 2 with a message, not a stack trace', async () => {
    const bad: string[] = [];
    expect(await testTiming(['--skills', 'test/testing/missing.json', '--no-mycroft-conf'], (line) => bad.push(line))).toBe(2);
    expect(bad).toEqual(['skills file test/testing/missing.json: not found']);
  });

  it.each([
    ['{"skills": [{"kind": "fallback", "skill_id": "a"}]}', 'skills[0] (a).priority: an integer 0–100'],
    ['{"skills": [{"kind": "common_query", "skill_id": "b", "conf": 2}]}', 'skills[0] (b).conf: a number in [0, 1]'],
    ['{"skills": [{"kind": "common_query", "skill_id": "b", "latency": 5}]}', 'skills[0] (b).latency: unknown field for a common-query skill'],
    ['{"skills": [{"kind": "chat", "skill_id": "c"}]}', 'skills[0] (c).kind: "fallback" or "common_query"'],
    ['{"skills": [{"kind": "fallback", "skill_id": "a", "priority": 1}, {"kind": "fallback", "skill_id": "a", "priority": 2}]}', 'skills: a appears twice'],
    ['[]', 'expected {"skills": [...], "utterances"?: [...], "sessions"?: n}'],
    ['{"skills": [], "sessions": 0}', 'sessions: an integer 1–16'],
    ['{"skills": [], "session": 2}', 'session: unknown field (skills, utterances, sessions)'],
    ['{"skills": [], "utterances": [""]}', 'utterances: a non-empty list of non-blank strings'],
  ])('skills file %s → %s', (text, message) => {
    expect(() => parseSkillsFile(text)).toThrow(SkillsFileError);
    expect(() => parseSkillsFile(text)).toThrow(message);
  });
});

