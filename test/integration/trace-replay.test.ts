/**
 * Trace replay: an utterance recorded on a running daemon over a real websocket (`say --trace`) replays
 * through the timing harness on the deterministic clock to the same decision, and the spec model agrees — so a
 * wrong answer a user saw becomes a test. Real time on purpose (the recording is of a real bus); the skills reply
 * far from every boundary so the bus's jitter cannot move a decision.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { forward, reply, withContext, type JsonObject } from '../../src/bus/message.js';
import { parse, say } from '../../src/cli/say.js';
import { replayTraceCommand } from '../../src/cli/replay-trace.js';
import { DEFAULT_CONFIG } from '../../src/config/defaults.js';
import { startDaemon } from '../../src/daemon/daemon.js';
import { silentLogger } from '../../src/log/logger.js';
import { parseTrace, replayTrace } from '../../src/testing/index.js';
import { Probe, configWith } from './probe.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A daemon with no skills of its own, and one websocket client for the test's skills. */
async function daemonWithSkillClient() {
  const started = await startDaemon(configWith({ bus: { port: 0 }, exampleSkills: false, log: { level: 'silent' } }), silentLogger());
  cleanups.push(() => started.close());
  const skills = await Probe.connect(started.url);
  cleanups.push(() => skills.close());
  const later = (ms: number, fn: () => void): void => void setTimeout(fn, ms);
  return { started, skills, later };
}

/** A daemon and skills in their own websocket client: fb.no (10) declines after 20 ms, fb.yes (60) willing after 30 ms
 * with a 40 ms handler; wiki claims after 10 ms (latency_ms 300) and answers 0.8 after 60 ms. */
async function recordedRun(utterance: string): Promise<{ file: string; lines: string[] }> {
  const { started, skills, later } = await daemonWithSkillClient();
  for (const [id, priority] of [['fb.no', 10], ['fb.yes', 60]] as const) {
    skills.send({ type: 'ovos.fallback.register', data: { skill_id: id, priority }, context: { skill_id: id, session: { session_id: 'default' } } });
  }
  skills.frames.subscribe(({ message: m }) => {
    if (m === undefined) return;
    if (m.type === 'fb.no.fallback.ping') later(20, () => skills.send(reply(m, 'fb.no.fallback.pong', { skill_id: 'fb.no', can_handle: false })));
    if (m.type === 'fb.yes.fallback.ping') later(30, () => skills.send(reply(m, 'fb.yes.fallback.pong', { skill_id: 'fb.yes', can_handle: true })));
    if (m.type === 'fb.yes:fallback') later(40, () => skills.send({ ...reply(m, 'mycroft.skill.handler.complete'), context: { ...reply(m, 'x').context, skill_id: 'fb.yes' } }));
    if (m.type === 'ovos.common_query.ping') later(10, () => skills.send(reply(m, 'ovos.common_query.pong', { utterance: m.data['utterance']!, skill_id: 'wiki', can_answer: true, latency_ms: 300 })));
    if (m.type === 'wiki:common_query') later(60, () => skills.send(reply(m, 'wiki.common_query.response', { utterance: m.data['utterance']!, skill_id: 'wiki', answer: 'Light is fast.', conf: 0.8 })));
  });
  await skills.barrier();
  const file = join(mkdtempSync(join(tmpdir(), 'trace-')), 'trace.json');
  const lines: string[] = [];
  const code = await say(parse([utterance, '--bus', started.url, '--session', 'kitchen', '--trace', file]), (text) => lines.push(text));
  expect(code).toBe(0);
  return { file, lines };
}

describe('trace replay (say --trace → replay-trace)', () => {
  it('a question answered by common query: the roster is read back from the trace and the replay decides as the daemon did', async () => {
    const { file } = await recordedRun('what is the speed of light');
    const trace = parseTrace(readFileSync(file, 'utf8'));
    expect(trace.pools).toEqual({ fallback_high: ['fb.no'], fallback_medium: ['fb.yes'], fallback_low: [] });
    const result = await replayTrace(DEFAULT_CONFIG, trace);
    expect(result.recorded).toMatchObject({ decidedBy: 'common_query', skill_id: 'wiki' });
    expect(result.reproduced).toBe(true);
    expect(result.replay.failures).toEqual([]);
    const wiki = result.scenario.skills.find((s) => s.skill_id === 'wiki');
    expect(wiki).toMatchObject({ kind: 'common_query', pong: 'claim', latencyMs: 300, answer: 'Light is fast.', conf: 0.8 });
    // The times read back are the real ones: 10 ms and 60 ms give or take the bus's few ms (the recording client
    // hears the ping a little after the skill does, so a delay can read a few ms short).
    expect(wiki?.kind === 'common_query' ? [wiki.pongAfterMs, wiki.answerAfterMs] : []).toEqual([expect.any(Number), expect.any(Number)]);
    if (wiki?.kind === 'common_query') {
      expect(wiki.pongAfterMs).toBeGreaterThanOrEqual(5);
      expect(wiki.answerAfterMs).toBeGreaterThanOrEqual(55);
    }
  });

  it('a command answered by fallback: the pool order, the decline, the willing skill and its handler are read back; replay-trace exits 0', async () => {
    const { file } = await recordedRun('do a barrel roll');
    const result = await replayTrace(DEFAULT_CONFIG, parseTrace(readFileSync(file, 'utf8')));
    expect(result.recorded).toMatchObject({ decidedBy: 'fallback_medium', skill_id: 'fb.yes' });
    expect(result.scenario.skills.map((s) => [s.skill_id, s.kind === 'fallback' ? s.willing : undefined])).toEqual([
      ['fb.no', false],
      ['fb.yes', true],
    ]);
    expect(result.reproduced).toBe(true);
    const lines: string[] = [];
    expect(await replayTraceCommand(['--trace', file, '--no-mycroft-conf'], (line) => lines.push(line))).toBe(0);
    expect(lines).toContain('recorded:  fallback_medium fb.yes at ' + String(result.recorded.decidedAt) + ' ms');
  });

  it('unmodified ovos-workshop fallback skills (legacy dialect): read back as legacy skills — pong delay after their stage\'s broadcast, handler until .response — and replayed to the same decision', async () => {
    const { started, skills, later } = await daemonWithSkillClient();
    // As ovos-workshop's FallbackSkill: registers without context.skill_id, answers every broadcast by reply, and on its
    // request sends .start, then .response {result: true} and the utterance's ovos.utterance.handled.
    const roster = { 'wk.no': { priority: 10, willing: false, pongMs: 20 }, 'wk.yes': { priority: 60, willing: true, pongMs: 30 } } as const;
    for (const [id, { priority }] of Object.entries(roster)) skills.send({ type: 'ovos.skills.fallback.register', data: { skill_id: id, priority }, context: { session: { session_id: 'default' } } });
    skills.frames.subscribe(({ message: m }) => {
      if (m === undefined) return;
      if (m.type === 'ovos.skills.fallback.ping') {
        for (const [id, { willing, pongMs }] of Object.entries(roster)) later(pongMs, () => skills.send(withContext(reply(m, 'ovos.skills.fallback.pong', { skill_id: id, can_handle: willing }), { skill_id: id })));
      }
      if (m.type === 'ovos.skills.fallback.wk.yes.request') {
        skills.send(forward(m, 'ovos.skills.fallback.wk.yes.start'));
        later(40, () => {
          skills.send(forward(m, 'ovos.skills.fallback.wk.yes.response', { result: true, fallback_handler: 'WkYes.handle_fallback' }));
          skills.send(forward(m, 'ovos.utterance.handled'));
        });
      }
    });
    await skills.barrier();
    const file = join(mkdtempSync(join(tmpdir(), 'trace-')), 'trace.json');
    expect(await say(parse(['do a barrel roll', '--bus', started.url, '--session', 'kitchen', '--trace', file]), () => undefined)).toBe(0);
    const result = await replayTrace(DEFAULT_CONFIG, parseTrace(readFileSync(file, 'utf8')));
    expect(result.recorded).toMatchObject({ decidedBy: 'fallback_medium', skill_id: 'wk.yes' });
    expect(result.scenario.skills.map((s) => (s.kind === 'fallback' ? [s.skill_id, s.dialect, s.willing, s.handlerMs === undefined] : []))).toEqual([
      ['wk.no', 'legacy', false, true],
      ['wk.yes', 'legacy', true, false],
    ]);
    const yes = result.scenario.skills[1]!;
    if (yes.kind === 'fallback') {
      expect(yes.pongAfterMs).toBeGreaterThanOrEqual(25);
      expect(yes.handlerMs).toBeGreaterThanOrEqual(35);
    }
    expect(result.notes.join('\n')).not.toMatch(/legacy/);
    expect(result.reproduced).toBe(true);
    expect(result.replay.failures).toEqual([]);
  });

  it('failing handlers are read back as failures, not as handlers that never end: a workshop skill\'s .response {result: false} and a spec skill\'s mycroft.skill.handler.error replay to the same decision and handler end', async () => {
    const { started, skills, later } = await daemonWithSkillClient();
    skills.send({ type: 'ovos.skills.fallback.register', data: { skill_id: 'wk.broken', priority: 10 }, context: { session: { session_id: 'default' } } });
    skills.send({ type: 'ovos.fallback.register', data: { skill_id: 'fb.broken', priority: 60 }, context: { skill_id: 'fb.broken', session: { session_id: 'default' } } });
    let asked = 0;
    skills.frames.subscribe(({ message: m }) => {
      if (m === undefined) return;
      // The first question goes to the workshop skill; the second finds it unwilling and goes to the spec skill.
      if (m.type === 'ovos.skills.fallback.ping') later(20, () => skills.send(withContext(reply(m, 'ovos.skills.fallback.pong', { skill_id: 'wk.broken', can_handle: asked++ === 0 }), { skill_id: 'wk.broken' })));
      if (m.type === 'ovos.skills.fallback.wk.broken.request') {
        skills.send(forward(m, 'ovos.skills.fallback.wk.broken.start'));
        later(40, () => skills.send(forward(m, 'ovos.skills.fallback.wk.broken.response', { result: false, fallback_handler: null })));
      }
      if (m.type === 'fb.broken.fallback.ping') later(20, () => skills.send(reply(m, 'fb.broken.fallback.pong', { skill_id: 'fb.broken', can_handle: true })));
      if (m.type === 'fb.broken:fallback') later(40, () => skills.send(withContext(reply(m, 'mycroft.skill.handler.error', { exception: 'ValueError: boom' }), { skill_id: 'fb.broken' })));
    });
    await skills.barrier();
    const dir = mkdtempSync(join(tmpdir(), 'trace-'));
    for (const [name, winner] of [['legacy', 'wk.broken'], ['spec', 'fb.broken']] as const) {
      const file = join(dir, `${name}.json`);
      expect(await say(parse(['do a barrel roll', '--bus', started.url, '--session', `kitchen-${name}`, '--trace', file]), () => undefined)).toBe(0);
      const result = await replayTrace(DEFAULT_CONFIG, parseTrace(readFileSync(file, 'utf8')));
      expect(result.recorded.skill_id).toBe(winner);
      const script = result.scenario.skills.find((s) => s.skill_id === winner)!;
      expect(script).toMatchObject({ kind: 'fallback', handlerFails: true });
      if (script.kind === 'fallback') expect(script.handlerMs).toBeGreaterThanOrEqual(35);
      expect(result.reproduced).toBe(true);
      expect(result.replay.observed.handler).toBe('error');
      expect(result.replay.failures).toEqual([]);
    }
  });

  it.each([
    ['an unmodified ovos-workshop @common_query skill', false],
    ['a classic ovos-workshop CommonQuerySkill (its answer says handles_speech, it is sent the bare question:action)', true],
  ] as const)('%s (legacy dialect): read back from its question:query replies — searching, then its answer, timed from the question — and replayed to the same decision', async (_kind, classic) => {
    const { started, skills, later } = await daemonWithSkillClient();
    // As ovos-workshop does: announces itself, answers question:query with searching: true then its answer (by
    // reply), and, selected, speaks and ends the utterance itself.
    skills.send({ type: 'ovos.common_query.pong', data: { skill_id: 'wk.wiki', is_classic_cq: classic }, context: { skill_id: 'wk.wiki', session: { session_id: 'default' } } });
    skills.frames.subscribe(({ message: m }) => {
      if (m === undefined) return;
      const respond = (data: JsonObject): void => skills.send(withContext(reply(m, 'question:query.response', { phrase: m.data['phrase']!, skill_id: 'wk.wiki', ...data }), { skill_id: 'wk.wiki' }));
      if (m.type === 'question:query') {
        later(5, () => respond({ searching: true }));
        later(60, () => respond({ answer: 'Light is fast.', callback_data: { answer: 'Light is fast.' }, conf: 0.8, ...(classic ? { handles_speech: true } : {}) }));
      }
      if (classic ? m.type === 'question:action' && m.data['skill_id'] === 'wk.wiki' : m.type === 'question:action.wk.wiki') {
        for (const [type, data] of [['mycroft.skill.handler.start', {}], ['speak', { utterance: 'Light is fast.' }], ['mycroft.skill.handler.complete', {}], ['ovos.utterance.handled', {}]] as const) {
          skills.send(withContext(forward(m, type, data), { skill_id: 'wk.wiki' }));
        }
      }
    });
    await skills.barrier();
    const file = join(mkdtempSync(join(tmpdir(), 'trace-')), 'trace.json');
    const printed: string[] = [];
    expect(await say(parse(['what is the speed of light', '--bus', started.url, '--session', 'kitchen', '--trace', file]), (text) => printed.push(text))).toBe(0);
    // `say` shows what the legacy winner said itself (ovos-workshop's `speak`).
    expect(printed.join('')).toContain('spoken: Light is fast.');
    const result = await replayTrace(DEFAULT_CONFIG, parseTrace(readFileSync(file, 'utf8')));
    expect(result.recorded).toMatchObject({ decidedBy: 'common_query', skill_id: 'wk.wiki' });
    const wiki = result.scenario.skills.find((s) => s.skill_id === 'wk.wiki');
    expect(wiki).toMatchObject({ kind: 'common_query', dialect: 'legacy', pong: 'claim', answer: 'Light is fast.', conf: 0.8 });
    expect(wiki?.kind === 'common_query' && wiki.classic === true).toBe(classic);
    if (wiki?.kind === 'common_query') {
      expect(wiki.pongAfterMs).toBeGreaterThanOrEqual(1);
      expect(wiki.answerAfterMs).toBeGreaterThanOrEqual(55);
    }
    expect(result.reproduced).toBe(true);
    expect(result.replay.failures).toEqual([]);
  });

  it('a trace that is not one, or missing, exits 2 with a message', async () => {
    const lines: string[] = [];
    expect(await replayTraceCommand(['--trace', 'package.json', '--no-mycroft-conf'], (line) => lines.push(line))).toBe(2);
    expect(lines[0]).toMatch(/^trace package.json: not a trace/);
  });
});
