/**
 * The user harness with unmodified ovos-workshop fallback skills (`"dialect": "legacy"`; src/plugins/README.md "Legacy fallback
 * skills"): asked by one broadcast when their stage starts, mixed with spec skills in one pool order, replayed
 * against the whole system on ManualClock and compared with the spec model. Each expected decision is also written
 * out here by hand, from OVOS-FALLBACK-1 §6 and the legacy decisions of src/plugins/README.md, so a model that drifted with the system
 * would still fail.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/defaults.js';
import { parseSkillsFile, runScenario, runTimingSuite, SkillsFileError, type SkillScript, type TimingScenario } from '../../src/testing/index.js';
import { withConfig } from '../support/harness.js';

const COMMAND = 'do a barrel roll'; // the gate rejects it: fallback stages only
const scenario = (skills: readonly SkillScript[], name = COMMAND): TimingScenario => ({ name, utterance: COMMAND, skills });

async function decide(skills: readonly SkillScript[]) {
  const result = await runScenario(DEFAULT_CONFIG, scenario(skills));
  expect(result.failures, result.timeline.join('\n')).toEqual([]);
  return result;
}

// fallback_medium (50–74): a silent workshop skill, a spec skill that declines after 30 ms, a willing workshop skill
// that answered the broadcast at 10 ms — its turn comes at 530 ms.
const MIXED: SkillScript[] = [
  { kind: 'fallback', skill_id: 'wk.slow', priority: 60, dialect: 'legacy', pongAfterMs: 'never' },
  { kind: 'fallback', skill_id: 'spec.no', priority: 61, willing: false, pongAfterMs: 30 },
  { kind: 'fallback', skill_id: 'wk.chat', priority: 62, dialect: 'legacy', pongAfterMs: 10, handlerMs: 200 },
];

describe('timing harness: legacy fallback skills (ovos-wire-today.md; OVOS-FALLBACK-1 §5–§6)', () => {
  it('a mixed roster: every path — as written and at every boundary — agrees with the spec model, one handled each', async () => {
    const report = await runTimingSuite(DEFAULT_CONFIG, [scenario(MIXED)]);
    expect(report.paths.filter((p) => !p.ok).map((p) => [p.name, p.failures, p.timeline])).toEqual([]);
    // §6.2 in pool order: wk.chat answered first (10 ms) but decides only at its turn (wk.slow's timeout 500 ms, then
    // spec.no's decline 30 ms later); its handler's .response and its own ovos.utterance.handled 200 ms after.
    expect(report.paths[0]!.expected).toMatchObject({ decidedBy: 'fallback_medium', skill_id: 'wk.chat', decidedAt: 530, handler: 'complete', handledAt: 730 });
    expect(report.paths.every((p) => p.observed.handledCount === 1)).toBe(true);
    const timeline = report.paths[0]!.timeline;
    expect(timeline.filter((line) => line.includes('ovos.skills.fallback.ping'))).toEqual(['+0 ovos.skills.fallback.ping']);
    expect(timeline).toContain('+530 ovos.skills.fallback.wk.chat.request skill_id="wk.chat"');
  });

  it('OVOS-FALLBACK-1 §6.1 ping timeout of a legacy skill counts from the broadcast (its ping), not from its turn: wk.chat at 499 / 500 / 501 ms after it', async () => {
    const report = await runTimingSuite(DEFAULT_CONFIG, [scenario(MIXED)]);
    const at = (suffix: string, ms: number) => report.paths.find((p) => p.name === `${COMMAND}: wk.chat at broadcastTimeout${suffix} (${ms} ms)`)!;
    // Its ping is the broadcast at 0, so its timeout is at 500, before its turn (530): a pong at 499 is kept and wins
    // at its turn; at 500 the timeout fires first (late), and at its turn it is passed at once — nobody after it in
    // fallback_medium nor in fallback_low: unmatched at 530.
    expect([at('−1', 499), at('', 500), at('+1', 501)].map((p) => [p.ok, p.expected.decidedBy, p.expected.decidedAt])).toEqual([
      [true, 'fallback_medium', 530],
      [true, 'unmatched', 530],
      [true, 'unmatched', 530],
    ]);
  });

  it('OVOS-PIPELINE-1 §8 handler timeout of a legacy winner: complete at T−1; at T and T+1 force_timeout, the skill is killed, our one handled', async () => {
    const report = await runTimingSuite(DEFAULT_CONFIG, [scenario(MIXED)]);
    const H = DEFAULT_CONFIG.orchestrator.handlerTimeoutMs;
    const at = (suffix: string, ms: number) => report.paths.find((p) => p.name === `${COMMAND}: wk.chat at handlerTimeout${suffix} (${ms} ms)`)!;
    expect([at('−1', H - 1), at('', H), at('+1', H + 1)].map((p) => [p.ok, p.expected.handler, p.expected.handledAt, p.observed.handledCount])).toEqual([
      [true, 'complete', 530 + H - 1, 1],
      [true, 'timeout', 530 + H, 1],
      [true, 'timeout', 530 + H, 1],
    ]);
    expect(at('', H).timeline.slice(-5)).toEqual([
      `+${530 + H} ovos.intent.handler.error skill_id="wk.chat" exception="TimeoutError: handler did not complete within ${H} ms"`,
      `+${530 + H} ovos.skills.fallback.force_timeout skill_id="wk.chat"`,
      `+${530 + H} ovos.utterance.handled`,
      `+${530 + H} ovos.skills.fallback.wk.chat.response`,
      `+${530 + H} ovos.skills.fallback.wk.chat.killed`,
    ]);
  });

  it('§6.2: an early decline decides at its turn (the next skill is asked at once); a willing skill of a later stage answering an earlier broadcast never counts there', async () => {
    const r = await decide([
      { kind: 'fallback', skill_id: 'spec.a', priority: 10, willing: false, pongAfterMs: 40 },
      { kind: 'fallback', skill_id: 'wk.no', priority: 20, dialect: 'legacy', willing: false, pongAfterMs: 5 },
      { kind: 'fallback', skill_id: 'spec.b', priority: 30, pongAfterMs: 7 },
      { kind: 'fallback', skill_id: 'wk.low', priority: 90, dialect: 'legacy', pongAfterMs: 3 },
    ]);
    // fallback_high: spec.a declines at 40, wk.no's decline (5 ms) is taken at its turn (40), spec.b wins at 47.
    expect(r.expected).toMatchObject({ decidedBy: 'fallback_high', skill_id: 'spec.b', decidedAt: 47 });
    // wk.low answers every broadcast (ovos-workshop does), willing — but it is in fallback_low's pool.
    expect(r.timeline).toContain('+3 ovos.skills.fallback.pong skill_id="wk.low" can_handle=true');
  });

  it('src/plugins/README.md "Dead skills": a legacy skill that answered willing and then disconnected before its turn is skipped; one gone during its turn is passed over at once', async () => {
    const skipped = await decide([
      { kind: 'fallback', skill_id: 'spec.a', priority: 10, pongAfterMs: 'never' },
      { kind: 'fallback', skill_id: 'wk.gone', priority: 20, dialect: 'legacy', pongAfterMs: 5, disconnectAtMs: 100 },
      { kind: 'fallback', skill_id: 'wk.ok', priority: 30, dialect: 'legacy', pongAfterMs: 5 },
    ]);
    expect(skipped.expected).toMatchObject({ decidedBy: 'fallback_high', skill_id: 'wk.ok', decidedAt: 500 });
    const passed = await decide([
      { kind: 'fallback', skill_id: 'wk.silent', priority: 10, dialect: 'legacy', pongAfterMs: 'never', disconnectAtMs: 120 },
      { kind: 'fallback', skill_id: 'wk.ok', priority: 30, dialect: 'legacy', pongAfterMs: 5 },
    ]);
    expect(passed.expected).toMatchObject({ decidedBy: 'fallback_high', skill_id: 'wk.ok', decidedAt: 120 });
  });

  it('a legacy winner that disconnects while its handler runs: SkillDisconnected and our handled at that ms', async () => {
    const r = await decide([{ kind: 'fallback', skill_id: 'wk.a', priority: 10, dialect: 'legacy', pongAfterMs: 20, handlerMs: 1_000, disconnectAtMs: 400 }]);
    expect(r.expected).toMatchObject({ skill_id: 'wk.a', decidedAt: 20, handler: 'disconnected', handledAt: 400 });
  });

  it('teeth: a system whose ping timeout differs from the config the model reads fails at a legacy skill\'s boundary, naming it and the clause', async () => {
    const drifted = withConfig((c) => ({ ...c, fallback: { ...c.fallback, pingTimeoutMs: 400 } }));
    const variant = scenario(MIXED.map((s) => (s.skill_id === 'wk.chat' ? { ...s, pongAfterMs: 499 } : s)));
    const result = await runScenario(DEFAULT_CONFIG, variant, { name: 'wk.chat at pingTimeout−1', boundary: { delay: 'pingTimeout', offset: -1 }, clause: 'OVOS-FALLBACK-1 §6.1 ping timeout' }, { systemConfig: drifted });
    expect(result.ok).toBe(false);
    expect(result.failures[0]).toBe('decided by: expected "fallback_medium", observed "unmatched" [boundary pingTimeout -1, OVOS-FALLBACK-1 §6.1 ping timeout]');
  });

  it('skills file: "dialect" is "spec" or "legacy", for fallback skills', () => {
    expect(parseSkillsFile('{"skills": [{"kind": "fallback", "skill_id": "w", "priority": 60, "dialect": "legacy"}]}').skills[0]).toEqual({ kind: 'fallback', skill_id: 'w', priority: 60, dialect: 'legacy' });
    expect(() => parseSkillsFile('{"skills": [{"kind": "fallback", "skill_id": "w", "priority": 60, "dialect": "workshop"}]}')).toThrow(SkillsFileError);
    expect(() => parseSkillsFile('{"skills": [{"kind": "fallback", "skill_id": "w", "priority": 60, "dialect": "workshop"}]}')).toThrow('skills[0] (w).dialect: "spec" or "legacy"');
  });
});
