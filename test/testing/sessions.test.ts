/**
 * The timing harness with the question asked in several sessions at once (`sessions` in the skills file,
 * `TimingScenario.sessions`): contests are keyed by session (OVOS-COMMON-QUERY-1 §6.3, §7.1; OVOS-FALLBACK-1 §6.1,
 * replies derived with the session), so each session must come out exactly as the spec model says the question does
 * alone — same decider, winner, times, handler end, and exactly one handled of its own (OVOS-PIPELINE-1 §6).
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { testTiming } from '../../src/cli/test-timing.js';
import { DEFAULT_CONFIG } from '../../src/config/defaults.js';
import { createMessage, type Message } from '../../src/bus/message.js';
import { LocalBus } from '../../src/bus/local-bus.js';
import { ManualClock } from '../../src/clock/manual-clock.js';
import { legacyTopics } from '../../src/dialect/legacy-dialect.js';
import { parseSkillsFile, runScenario, runTimingSuite, type SkillScript, type TimingScenario } from '../../src/testing/index.js';
import { playSkill } from '../../src/testing/run.js';
import { withConfig } from '../support/harness.js';

const QUESTION = 'what is the speed of light';
const COMMAND = 'do a barrel roll';
const handledIn = (timeline: readonly string[], session: string): string[] => timeline.filter((line) => line.includes(` [${session}] ovos.utterance.handled`));

describe('two sessions at once (OVOS-COMMON-QUERY-1 §6.3, §7.1; OVOS-FALLBACK-1 §6.1)', () => {
  it('the sample roster, every path and boundary variant in two sessions: each agrees with the model and gets its one handled', async () => {
    const sample = parseSkillsFile(readFileSync('test/testing/sample-skills.json', 'utf8'));
    const report = await runTimingSuite(DEFAULT_CONFIG, sample.utterances!.map((u) => ({ name: u, utterance: u, skills: sample.skills, sessions: 2 })));
    expect(report.paths.filter((p) => !p.ok).map((p) => [p.name, p.failures])).toEqual([]);
    expect(report.paths).toHaveLength(134);
    for (const path of report.paths) {
      expect(handledIn(path.timeline, 'timing'), path.name).toHaveLength(1);
      expect(handledIn(path.timeline, 'timing-2'), path.name).toHaveLength(1);
    }
  });

  it("today's OVOS skills (the legacy sample roster) in three sessions: workshop fallback and common-query skills answer each session apart", async () => {
    const sample = parseSkillsFile(readFileSync('test/testing/sample-legacy-skills.json', 'utf8'));
    const report = await runTimingSuite(DEFAULT_CONFIG, sample.utterances!.map((u) => ({ name: u, utterance: u, skills: sample.skills, sessions: 3 })));
    expect(report.paths.filter((p) => !p.ok).map((p) => [p.name, p.failures])).toEqual([]);
    expect(report.paths).toHaveLength(119);
    for (const path of report.paths) for (const session of ['timing', 'timing-2', 'timing-3']) expect(handledIn(path.timeline, session), `${path.name} ${session}`).toHaveLength(1);
  });

  it('a legacy fallback handler killed at the handler timeout in two sessions: each session ends its own at that ms (each session\'s force_timeout kills its own handler)', async () => {
    const config = withConfig((c) => ({ ...c, orchestrator: { ...c.orchestrator, handlerTimeoutMs: 1_000 } }));
    const skills: SkillScript[] = [{ kind: 'fallback', skill_id: 'slowpoke', priority: 10, dialect: 'legacy', pongAfterMs: 10, handlerMs: 5_000 }];
    const result = await runScenario(config, { name: 'killed', utterance: COMMAND, skills, sessions: 2 });
    expect(result.failures).toEqual([]);
    expect(result.expected).toMatchObject({ decidedBy: 'fallback_high', skill_id: 'slowpoke', decidedAt: 10, handler: 'timeout', handledAt: 1_010 });
    expect(handledIn(result.timeline, 'timing')).toEqual(['+1010 [timing] ovos.utterance.handled']);
    expect(handledIn(result.timeline, 'timing-2')).toEqual(['+1010 [timing-2] ovos.utterance.handled']);
  });

  it("the workshop player kills on a force_timeout of the handler's own session only, as ovos-workshop's killable_event does: another session's handler runs on to its end", async () => {
    const bus = new LocalBus();
    const clock = new ManualClock();
    playSkill(bus, clock, { kind: 'fallback', skill_id: 'wk.slow', priority: 10, dialect: 'legacy', handlerMs: 5_000 });
    const seen: Message[] = [];
    bus.subscribe((m) => {
      if (m.type.startsWith('ovos.skills.fallback.wk.slow.') || m.type === 'ovos.utterance.handled') seen.push(m);
    });
    const inSession = (type: string, session_id: string, data: Record<string, string> = {}) =>
      createMessage(type, data, { session: { session_id }, utterance_id: `u-${session_id}` });
    bus.publish(inSession(legacyTopics.fallbackRequest('wk.slow'), 's1'), 'daemon');
    bus.publish(inSession(legacyTopics.fallbackRequest('wk.slow'), 's2'), 'daemon');
    await bus.idle();
    bus.publish(inSession(legacyTopics.fallbackForceTimeout, 's1', { skill_id: 'wk.slow' }), 'daemon');
    await bus.idle();
    clock.advance(5_000);
    for (let i = 0; i < 5; i++) await bus.idle();
    const ends = seen.filter((m) => !m.type.endsWith('.start') && !m.type.endsWith('.request')).map((m) => [m.context['utterance_id'], m.type, m.data['result'] ?? null]);
    expect(ends).toEqual([
      ['u-s1', 'ovos.skills.fallback.wk.slow.response', false],
      ['u-s1', 'ovos.skills.fallback.wk.slow.killed', null],
      ['u-s2', 'ovos.skills.fallback.wk.slow.response', true],
      ['u-s2', 'ovos.utterance.handled', null],
    ]);
  });

  it('sessions must be a whole number ≥ 1: the API says so instead of failing on an empty result', async () => {
    const scenario = (sessions: number): TimingScenario => ({ name: 'n', utterance: COMMAND, skills: [], sessions });
    await expect(runScenario(DEFAULT_CONFIG, scenario(0))).rejects.toThrow(new RangeError('sessions: a whole number ≥ 1 (got 0)'));
    await expect(runScenario(DEFAULT_CONFIG, scenario(1.5))).rejects.toThrow(RangeError);
  });

  it('each session is compared, not only the first: a system off the model fails in both, each failure naming its session', async () => {
    const scenario: TimingScenario = { name: 'slow', utterance: COMMAND, skills: [{ kind: 'fallback', skill_id: 'fb.a', priority: 10, pongAfterMs: 499 }], sessions: 2 };
    const drifted = withConfig((c) => ({ ...c, fallback: { ...c.fallback, pingTimeoutMs: 499 } }));
    const result = await runScenario(DEFAULT_CONFIG, scenario, { name: 'slow', boundary: { delay: 'pingTimeout', offset: -1 }, clause: 'OVOS-FALLBACK-1 §6.1 ping timeout' }, { systemConfig: drifted });
    expect(result.ok).toBe(false);
    expect(result.failures.filter((f) => f.startsWith('decided by:') || f.includes(': decided by:'))).toEqual([
      'session timing: decided by: expected "fallback_high", observed "unmatched" [boundary pingTimeout -1, OVOS-FALLBACK-1 §6.1 ping timeout]',
      'session timing-2: decided by: expected "fallback_high", observed "unmatched" [boundary pingTimeout -1, OVOS-FALLBACK-1 §6.1 ping timeout]',
    ]);
  });

  it('the command line takes "sessions" from the skills file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'timing-sessions-'));
    const file = join(dir, 'skills.json');
    writeFileSync(file, JSON.stringify({ skills: [{ kind: 'common_query', skill_id: 'wiki', pongAfterMs: 5, latencyMs: 20, answerAfterMs: 10, conf: 0.8 }], utterances: [QUESTION], sessions: 2 }));
    const lines: string[] = [];
    expect(await testTiming(['--skills', file, '--no-mycroft-conf', '--verbose'], (line) => lines.push(line))).toBe(0);
    expect(lines.at(-1)).toMatch(/^\d+ paths, 0 failed$/);
    expect(lines.some((line) => line.includes('[timing-2] ovos.utterance.handled'))).toBe(true);
  });
});
