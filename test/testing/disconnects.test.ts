/**
 * The timing harness with skills whose connection closes mid-question (`disconnectAtMs`): the model's expectations,
 * written from the "Dead skills" and "Common-query poll" decisions of src/plugins/README.md (a closed connection takes its
 * registrations with it; an awaited skill is passed over at once; a dispatched handler ends with SkillDisconnected;
 * in the poll a gone skill counts as heard from, as a claimant it counts as declining), checked against the whole
 * system on ManualClock. Each expected decision is also written out here by hand, so a model that drifted with the
 * system would still fail.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/defaults.js';
import { parseSkillsFile, runScenario, runTimingSuite, SkillsFileError, type SkillScript, type TimingScenario } from '../../src/testing/index.js';

const COMMAND = 'do a barrel roll'; // the gate rejects it: fallback stages only
const QUESTION = 'what is the speed of light';

async function decide(utterance: string, skills: readonly SkillScript[]) {
  const scenario: TimingScenario = { name: 'disconnect', utterance, skills };
  const result = await runScenario(DEFAULT_CONFIG, scenario);
  expect(result.failures, result.timeline.join('\n')).toEqual([]);
  expect(result.observed.handledCount).toBe(1);
  return result;
}

describe('fallback skills that disconnect (OVOS-FALLBACK-1 §6.1; src/plugins/README.md "Dead skills")', () => {
  it('awaited when its connection closes: the next skill is asked at that ms, not at the 500 ms ping timeout', async () => {
    const r = await decide(COMMAND, [
      { kind: 'fallback', skill_id: 'a', priority: 10, pongAfterMs: 'never', disconnectAtMs: 200 },
      { kind: 'fallback', skill_id: 'b', priority: 20, pongAfterMs: 5 },
    ]);
    expect(r.expected).toMatchObject({ decidedBy: 'fallback_high', skill_id: 'b', decidedAt: 205, handler: 'complete' });
  });

  it('a pong due at the very ms its connection closes never comes; one a ms earlier wins', async () => {
    const at = await decide(COMMAND, [
      { kind: 'fallback', skill_id: 'a', priority: 10, pongAfterMs: 300, disconnectAtMs: 300 },
      { kind: 'fallback', skill_id: 'b', priority: 20, pongAfterMs: 5 },
    ]);
    expect(at.expected).toMatchObject({ skill_id: 'b', decidedAt: 305 });
    const before = await decide(COMMAND, [
      { kind: 'fallback', skill_id: 'a', priority: 10, pongAfterMs: 299, disconnectAtMs: 300 },
      { kind: 'fallback', skill_id: 'b', priority: 20, pongAfterMs: 5 },
    ]);
    expect(before.expected).toMatchObject({ skill_id: 'a', decidedAt: 299, handler: 'complete', handledAt: 299 });
  });

  it('the winner disconnects while its handler runs: ovos.intent.handler.error (SkillDisconnected) and handled at that ms', async () => {
    const r = await decide(COMMAND, [{ kind: 'fallback', skill_id: 'a', priority: 10, pongAfterMs: 20, handlerMs: 1_000, disconnectAtMs: 400 }]);
    expect(r.expected).toMatchObject({ skill_id: 'a', decidedAt: 20, handler: 'disconnected', handledAt: 400 });
  });

  it('gone before its turn: not asked at all; gone before the question: never in the pool', async () => {
    const r = await decide(COMMAND, [
      { kind: 'fallback', skill_id: 'a', priority: 10, willing: false, pongAfterMs: 100 },
      { kind: 'fallback', skill_id: 'b', priority: 20, pongAfterMs: 0, disconnectAtMs: 50 },
      { kind: 'fallback', skill_id: 'c', priority: 30, pongAfterMs: 0 },
    ]);
    expect(r.expected).toMatchObject({ skill_id: 'c', decidedAt: 100 });
    expect(r.timeline.some((line) => line.includes('b.fallback.ping'))).toBe(false);
    const gone = await decide(COMMAND, [
      { kind: 'fallback', skill_id: 'a', priority: 10, disconnectAtMs: 0 },
      { kind: 'fallback', skill_id: 'b', priority: 20 },
    ]);
    expect(gone.expected).toMatchObject({ skill_id: 'b', decidedAt: 0 });
  });
});

describe('common-query skills that disconnect (OVOS-COMMON-QUERY-1 §6.3, §7.2; src/plugins/README.md "Common-query poll")', () => {
  it('a claimant that disconnects before answering counts as declining then: the collection closes on the other answer, not at the 3 s window', async () => {
    const r = await decide(QUESTION, [
      { kind: 'common_query', skill_id: 'wiki', pongAfterMs: 10, latencyMs: 100, answerAfterMs: 50, conf: 0.8 },
      { kind: 'common_query', skill_id: 'ddg', pongAfterMs: 20, answerAfterMs: 'never', disconnectAtMs: 30 },
    ]);
    // Poll: both known, both claimed by 20 ms → closed (rule 1). ddg gone at 30 → declining; wiki answers at 20 + 50.
    expect(r.expected).toMatchObject({ decidedBy: 'common_query', skill_id: 'wiki', decidedAt: 70 });
  });

  it('the only claimant disconnects during the collection: nothing to wait for — unmatched at that ms', async () => {
    const r = await decide(QUESTION, [
      { kind: 'common_query', skill_id: 'no', pong: 'decline', pongAfterMs: 5 },
      { kind: 'common_query', skill_id: 'wiki', pongAfterMs: 10, answerAfterMs: 'never', disconnectAtMs: 15 },
    ]);
    expect(r.expected).toMatchObject({ decidedBy: 'unmatched', skill_id: null, decidedAt: 15 });
  });

  it('a known skill that disconnects during the poll counts as heard from: the poll closes then (rule 1), not when its pong would have come', async () => {
    const r = await decide(QUESTION, [
      { kind: 'common_query', skill_id: 'wiki', pongAfterMs: 10, answerAfterMs: 5, latencyMs: 10 },
      { kind: 'common_query', skill_id: 'slowno', pong: 'decline', pongAfterMs: 60, disconnectAtMs: 40 },
    ]);
    expect(r.expected).toMatchObject({ skill_id: 'wiki', decidedAt: 45 });
  });

  it('a claim due at the ms its connection closes never comes: the other claimant answers', async () => {
    const r = await decide(QUESTION, [
      { kind: 'common_query', skill_id: 'wiki', pongAfterMs: 10, disconnectAtMs: 10, conf: 0.95 },
      { kind: 'common_query', skill_id: 'ddg', pongAfterMs: 20, latencyMs: 10, conf: 0.6 },
    ]);
    expect(r.expected).toMatchObject({ skill_id: 'ddg', decidedAt: 20 });
  });
});

describe('disconnects in a deployer\'s roster', () => {
  it('every boundary variant of a roster with disconnecting skills agrees with the model', async () => {
    const skills: SkillScript[] = [
      { kind: 'fallback', skill_id: 'fb.crashy', priority: 10, pongAfterMs: 'never', disconnectAtMs: 250 },
      { kind: 'fallback', skill_id: 'fb.chat', priority: 90, pongAfterMs: 10, handlerMs: 200 },
      { kind: 'common_query', skill_id: 'wiki', pongAfterMs: 15, latencyMs: 40, answerAfterMs: 30, conf: 0.8 },
      { kind: 'common_query', skill_id: 'ddg', pongAfterMs: 25, answerAfterMs: 'never', disconnectAtMs: 60 },
    ];
    const report = await runTimingSuite(DEFAULT_CONFIG, [QUESTION, COMMAND].map((u) => ({ name: u, utterance: u, skills })));
    expect(report.paths.filter((p) => !p.ok).map((p) => [p.name, p.failures])).toEqual([]);
    expect(report.paths.length).toBeGreaterThan(20);
  });

  it('the skills file takes disconnectAtMs and names a bad one', () => {
    const file = parseSkillsFile(JSON.stringify({ skills: [{ kind: 'fallback', skill_id: 'a', priority: 10, disconnectAtMs: 120 }] }));
    expect(file.skills[0]).toMatchObject({ disconnectAtMs: 120 });
    expect(() => parseSkillsFile(JSON.stringify({ skills: [{ kind: 'common_query', skill_id: 'q', disconnectAtMs: -1 }] }))).toThrow(
      new SkillsFileError('skills[0] (q).disconnectAtMs: milliseconds ≥ 0 after the question'),
    );
  });
});
