/**
 * The timing harness with fallback handlers that fail (`handlerFails`): a spec skill's `mycroft.skill.handler.error`,
 * an ovos-workshop skill's `.response {result: false}` (its handler returned false or raised: it sends no handled of
 * its own). OVOS-PIPELINE-1 §8: the failure ends the handler with ovos.intent.handler.error at that ms, and §6: the
 * utterance's one handled follows at once — never after the grace a succeeding legacy skill gets to send its own.
 * Expected decisions are written out by hand as well as checked against the model.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/defaults.js';
import { legacyTopics } from '../../src/dialect/legacy-dialect.js';
import { parseSkillsFile, runScenario, runTimingSuite, SkillsFileError, traceToScenario, TRACE_FORMAT, type SkillScript, type Trace, type TraceEntry } from '../../src/testing/index.js';

const COMMAND = 'do a barrel roll'; // the gate rejects it: fallback stages only
const H = DEFAULT_CONFIG.orchestrator.handlerTimeoutMs;

const entry = (at: number, type: string, data: TraceEntry['data'] = {}, context: TraceEntry['context'] = {}): TraceEntry => ({ at, type, data, context: { session: { session_id: 'kitchen' }, ...context } });

async function decide(skills: readonly SkillScript[]) {
  const result = await runScenario(DEFAULT_CONFIG, { name: 'fails', utterance: COMMAND, skills });
  expect(result.failures, result.timeline.join('\n')).toEqual([]);
  expect(result.observed.handledCount).toBe(1);
  return result;
}

describe('failing fallback handlers (OVOS-PIPELINE-1 §6, §8)', () => {
  it('a spec skill whose handler errors 120 ms after its dispatch: ovos.intent.handler.error and the handled at that ms', async () => {
    const r = await decide([{ kind: 'fallback', skill_id: 'fb.broken', priority: 10, pongAfterMs: 15, handlerMs: 120, handlerFails: true }]);
    expect(r.expected).toMatchObject({ decidedBy: 'fallback_high', skill_id: 'fb.broken', decidedAt: 15, handler: 'error', handledAt: 135 });
    expect(r.observed).toMatchObject({ handler: 'error', handledAt: 135 });
    expect(r.timeline.filter((line) => line.includes('ovos.intent.handler.error'))).toEqual([expect.stringMatching(/^\+135 ovos\.intent\.handler\.error .*exception="fb\.broken: scripted failure"/)]);
  });

  it('an ovos-workshop skill whose handler fails (.response {result: false}, no handled of its own): ours at once, not a grace later', async () => {
    const r = await decide([{ kind: 'fallback', skill_id: 'wk.broken', priority: 10, dialect: 'legacy', pongAfterMs: 15, handlerMs: 120, handlerFails: true }]);
    expect(r.expected).toMatchObject({ decidedBy: 'fallback_high', skill_id: 'wk.broken', decidedAt: 15, handler: 'error', handledAt: 135 });
    expect(r.observed).toMatchObject({ handler: 'error', handledAt: 135 });
    expect(r.timeline.filter((line) => line.includes('ovos.utterance.handled'))).toEqual(['+135 ovos.utterance.handled']);
  });

  it.each([
    ['spec', undefined],
    ['legacy', 'legacy' as const],
  ])('%s: a failure at the handler timeout T−1 is the skill\'s error; at T and T+1 the timeout comes first', async (_name, dialect) => {
    const skill: SkillScript = { kind: 'fallback', skill_id: 'fb.edge', priority: 10, pongAfterMs: 15, handlerMs: 200, handlerFails: true, ...(dialect === undefined ? {} : { dialect }) };
    const report = await runTimingSuite(DEFAULT_CONFIG, [{ name: 'edge', utterance: COMMAND, skills: [skill] }]);
    expect(report.paths.filter((p) => !p.ok).map((p) => [p.name, p.failures])).toEqual([]);
    const at = (suffix: string) => report.paths.find((p) => p.name.startsWith(`edge: fb.edge at handlerTimeout${suffix} (`))!;
    expect([at('−1'), at(''), at('+1')].map((p) => [p.observed.handler, p.observed.handledAt])).toEqual([
      ['error', 15 + H - 1],
      ['timeout', 15 + H],
      ['timeout', 15 + H],
    ]);
  });

  it.each([
    ['.response {result: false} before any force_timeout: a failure at that ms', [] as TraceEntry[], { handlerMs: 120, handlerFails: true }],
    ['.response {result: false} after our force_timeout, no .killed (the kill\'s own reply): a handler that never ended', [entry(11 + H, legacyTopics.fallbackForceTimeout, { skill_id: 'wk.slow' })], { handlerMs: 'never' }],
    ['.response {result: false} with .killed: a handler that never ended', [entry(130, 'ovos.skills.fallback.wk.slow.killed', { error: 'timed out' })], { handlerMs: 'never' }],
  ])('trace replay of a workshop handler — %s', (_name, extra, expected) => {
    const range = DEFAULT_CONFIG.fallback.stages['fallback_high']!;
    const endAt = extra.length > 0 && extra[0]!.type === legacyTopics.fallbackForceTimeout ? 12 + H : 131;
    const trace: Trace = {
      format: TRACE_FORMAT,
      utterance: COMMAND,
      session_id: 'kitchen',
      pools: { fallback_high: ['wk.slow'] },
      messages: [
        entry(0, legacyTopics.fallbackPing, { range: [range[0], range[1]] }, { contest_id: 'c1' }),
        entry(10, legacyTopics.fallbackPong, { skill_id: 'wk.slow', can_handle: true }, { contest_id: 'c1' }),
        entry(11, legacyTopics.fallbackRequest('wk.slow')),
        ...extra,
        entry(endAt, 'ovos.skills.fallback.wk.slow.response', { result: false }),
      ].sort((a, b) => a.at - b.at),
    };
    const skill = traceToScenario(DEFAULT_CONFIG, trace).scenario.skills[0]!;
    expect(skill).toMatchObject({ skill_id: 'wk.slow', dialect: 'legacy', ...expected });
    if (!('handlerFails' in expected)) expect(skill).not.toHaveProperty('handlerFails');
  });

  it('the skills file takes handlerFails and names a bad one', () => {
    const file = parseSkillsFile(JSON.stringify({ skills: [{ kind: 'fallback', skill_id: 'a', priority: 10, handlerMs: 50, handlerFails: true }] }));
    expect(file.skills[0]).toMatchObject({ handlerFails: true });
    expect(() => parseSkillsFile(JSON.stringify({ skills: [{ kind: 'fallback', skill_id: 'a', priority: 10, handlerFails: 'yes' }] }))).toThrow(
      new SkillsFileError('skills[0] (a).handlerFails: true or false'),
    );
  });
});
