/**
 * The legacy dialect against frames recorded from the real OVOS programs (transcripts/; see
 * transcripts/README.md). A plain websocket client sends the exact
 * JSON text a real OVOS client sent; we assert what our daemon emits is what that client waits for — data and context
 * compared as subsets, order checked. Nothing of ours is on the client side but the socket.
 *
 * The utterance entry `recognizer_loop:utterance` and the no-match ending (ovos-wire-today.md "no match") in both
 * dialects; fallback skills on ovos-workshop (`FallbackSkill`); common-query skills on ovos-workshop (`@common_query`
 * and the classic `CommonQuerySkill`), in a skill process of their own.
 */
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { JsonObject, Message } from '../../src/bus/message.js';
import { sessionIdOf } from '../../src/bus/session.js';
import { startDaemon } from '../../src/daemon/daemon.js';
import { silentLogger } from '../../src/log/logger.js';
import { Probe, captureLogs, configWith, type LogLine, type Recorder } from './probe.js';

interface Recorded {
  readonly t_ms: number;
  readonly frame: Message;
}

/** The frames of one recorded scenario (the header line skipped). */
function transcript(name: string): Recorded[] {
  const text = readFileSync(new URL(`./transcripts/${name}.jsonl`, import.meta.url), 'utf8');
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .slice(1)
    .map((line) => JSON.parse(line) as Recorded);
}

/** The first recorded frame of `type`, as the exact JSON text the real program sent. */
function recordedText(name: string, type: string): string {
  const found = transcript(name).find((r) => r.frame.type === type);
  if (found === undefined) throw new Error(`${name}: no ${type}`);
  return JSON.stringify(found.frame);
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function daemon(dialects: { spec: boolean; legacy: boolean }): Promise<Probe> {
  const config = configWith({ bus: { port: 0 }, exampleSkills: false, log: { level: 'silent' }, dialects });
  const started = await startDaemon(config, silentLogger());
  cleanups.push(() => started.close());
  const probe = await Probe.connect(started.url);
  cleanups.push(() => probe.close());
  return probe;
}

const NO_MATCH_ENDING = ['ovos.intent.unmatched', 'mycroft.audio.play_sound', 'complete_intent_failure', 'ovos.utterance.handled'];

/** `expected` appear in `types` in this order (other types may come between). */
function expectInOrder(types: readonly string[], expected: readonly string[]): void {
  let from = 0;
  for (const [i, type] of expected.entries()) {
    const at = types.indexOf(type, from);
    expect(at, `${type} after ${expected[i - 1] ?? 'the start'} in ${types.join(', ')}`).toBeGreaterThanOrEqual(0);
    from = at + 1;
  }
}

const inSession = (probe: Probe, sessionId: string): Message[] => probe.messages.filter((m) => sessionIdOf(m) === sessionId);

/** `recorded` with its session's id and, when given, one extra context key. */
function variant(text: string, sessionId: string, extra: JsonObject = {}): string {
  const frame = JSON.parse(text) as Message;
  const session = { ...(frame.context['session'] as JsonObject), session_id: sessionId };
  return JSON.stringify({ ...frame, context: { ...frame.context, ...extra, session } });
}

describe('ovos-wire-today: an utterance from a real OVOS client, no skills at all → unmatched + handled', () => {
  const ENTRY = recordedText('fallback-none-willing', 'recognizer_loop:utterance');
  const RECORDED_SESSION = (JSON.parse(ENTRY) as Message).context['session'] as JsonObject;

  it('recognizer_loop:utterance (ovos-bus-client, full session, OVOS pipeline ids): ovos.intent.unmatched, the error sound, complete_intent_failure, one ovos.utterance.handled — each derived by reply, the whole session kept', async () => {
    const probe = await daemon({ spec: true, legacy: true });
    probe.sendText(ENTRY);
    const handled = await probe.waitFor((m) => m.type === 'ovos.utterance.handled' && sessionIdOf(m) === 'bench-session', 'handled');
    await probe.barrier();
    const turn = inSession(probe, 'bench-session');
    expect(turn.map((m) => m.type)).toEqual([
      'recognizer_loop:utterance', // the client's own frame, echoed by the bus
      'ovos.intent.unmatched',
      'mycroft.audio.play_sound',
      'complete_intent_failure',
      'ovos.utterance.handled',
    ]);
    // What OVOS clients wait for (ovos-wire-today.md "no match"), derived by reply: source/destination swapped.
    expect(turn[2]).toMatchObject({ data: { uri: 'snd/error.mp3' }, context: { source: 'skills', destination: 'bench' } });
    expect(turn[3]).toMatchObject({ data: { utterances: ['do a barrel roll please'], lang: 'en-US' }, context: { source: 'skills', destination: 'bench' } });
    // Every derived frame carries the client's session whole (SESSION-1 §2.4: unknown keys survive), and one id.
    const utteranceId = handled.context['utterance_id'];
    expect(typeof utteranceId).toBe('string');
    for (const message of turn.slice(1)) {
      expect(message.context['session']).toEqual(RECORDED_SESSION);
      expect(message.context['utterance_id']).toBe(utteranceId);
    }
  });

  it('the same turn entered as ovos.utterance.handle (spec dialect) ends the same way', async () => {
    const probe = await daemon({ spec: true, legacy: true });
    const entry = JSON.parse(variant(ENTRY, 'spec-entry')) as Message;
    probe.sendText(JSON.stringify({ ...entry, type: 'ovos.utterance.handle' }));
    await probe.waitFor((m) => m.type === 'ovos.utterance.handled' && sessionIdOf(m) === 'spec-entry', 'handled');
    await probe.barrier();
    expect(inSession(probe, 'spec-entry').map((m) => m.type)).toEqual([
      'ovos.utterance.handle',
      'ovos.intent.unmatched',
      'mycroft.audio.play_sound',
      'complete_intent_failure',
      'ovos.utterance.handled',
    ]);
  });

  it('extra context keys ("x": "xx") and a named session survive every derived message; the default session keeps "default"', async () => {
    const probe = await daemon({ spec: true, legacy: true });
    probe.sendText(variant(ENTRY, 'named-7f3a', { x: 'xx' }));
    probe.sendText(variant(ENTRY, 'default', { x: 'xx' }));
    for (const id of ['named-7f3a', 'default']) {
      await probe.waitFor((m) => m.type === 'ovos.utterance.handled' && sessionIdOf(m) === id, `handled in ${id}`);
    }
    await probe.barrier();
    for (const id of ['named-7f3a', 'default']) {
      // (the default session also carries the bus greeting and the probe's barrier)
      const derived = inSession(probe, id).filter((m) => NO_MATCH_ENDING.includes(m.type));
      expect(derived.map((m) => m.type)).toEqual(['ovos.intent.unmatched', 'mycroft.audio.play_sound', 'complete_intent_failure', 'ovos.utterance.handled']);
      for (const message of derived) expect(message.context).toMatchObject({ x: 'xx', session: { session_id: id } });
    }
  });

  it('dialects.legacy false: recognizer_loop:utterance is not ours (no reaction), and a spec entry ends without the legacy events', async () => {
    const probe = await daemon({ spec: true, legacy: false });
    probe.sendText(ENTRY);
    const entry = JSON.parse(variant(ENTRY, 'spec-only')) as Message;
    probe.sendText(JSON.stringify({ ...entry, type: 'ovos.utterance.handle' }));
    await probe.waitFor((m) => m.type === 'ovos.utterance.handled' && sessionIdOf(m) === 'spec-only', 'handled');
    await probe.barrier();
    expect(inSession(probe, 'bench-session').map((m) => m.type)).toEqual(['recognizer_loop:utterance']);
    expect(inSession(probe, 'spec-only').map((m) => m.type)).toEqual(['ovos.utterance.handle', 'ovos.intent.unmatched', 'ovos.utterance.handled']);
  });

  it('dialects.spec false: ovos.utterance.handle is not ours; recognizer_loop:utterance still is', async () => {
    const probe = await daemon({ spec: false, legacy: true });
    const entry = JSON.parse(variant(ENTRY, 'spec-off')) as Message;
    probe.sendText(JSON.stringify({ ...entry, type: 'ovos.utterance.handle' }));
    probe.sendText(ENTRY);
    await probe.waitFor((m) => m.type === 'ovos.utterance.handled' && sessionIdOf(m) === 'bench-session', 'handled');
    await probe.barrier();
    expect(inSession(probe, 'spec-off').map((m) => m.type)).toEqual(['ovos.utterance.handle']);
  });
});

// ---- Legacy fallback skills (ovos-workshop FallbackSkill), played by a plain websocket client ----------------------

/** ovos-bus-client's Message.reply: the context copied, routing flipped, `extra` merged in. */
function ovosReply(from: Message, type: string, data: JsonObject, extra: JsonObject = {}): Message {
  const context: JsonObject = { ...from.context, ...extra };
  const { source, destination } = from.context;
  if (destination !== undefined) context['source'] = Array.isArray(destination) ? (destination[0] ?? null) : destination;
  if (source !== undefined) context['destination'] = source;
  return { type, data, context };
}

/** ovos-bus-client's Message.forward: the context copied as it is. */
const ovosForward = (from: Message, type: string, data: JsonObject = {}): Message => ({ type, data, context: { ...from.context } });

/**
 * A FallbackSkill as ovos-workshop runs it (transcripts/fallback-*.jsonl): the recorded register frame sent verbatim;
 * on the broadcast ping a pong by reply with context.skill_id; on its request `.start`, `.response {result}`, then
 * `ovos.utterance.handled`, each a forward of the request.
 */
function workshopFallbackSkill(probe: Probe, registerText: string, canHandle: boolean | 'silent', result = true): void {
  const skillId = (JSON.parse(registerText) as Message).data['skill_id'] as string;
  probe.sendText(registerText);
  probe.frames.subscribe((frame) => {
    const message = frame.message;
    if (message === undefined) return;
    if (message.type === 'ovos.skills.fallback.ping') {
      if (canHandle === 'silent') return;
      probe.send(ovosReply(message, 'ovos.skills.fallback.pong', { skill_id: skillId, can_handle: canHandle }, { skill_id: skillId }));
    } else if (message.type === `ovos.skills.fallback.${skillId}.request`) {
      probe.send(ovosForward(message, `ovos.skills.fallback.${skillId}.start`));
      probe.send(ovosForward(message, `ovos.skills.fallback.${skillId}.response`, { result, fallback_handler: 'WorkshopFallback.handle_fallback' }));
      // ovos-workshop ends the utterance itself only after a handler that succeeded.
      if (result) probe.send(ovosForward(message, 'ovos.utterance.handled'));
    }
  });
}

function registerTexts(name: string): string[] {
  return transcript(name)
    .filter((r) => r.frame.type === 'ovos.skills.fallback.register')
    .map((r) => JSON.stringify(r.frame));
}

async function daemonWithLogs(): Promise<{ probe: Probe; lines: Recorder<LogLine> }> {
  const config = configWith({ bus: { port: 0 }, exampleSkills: false, log: { level: 'info' } });
  const { logger, lines } = captureLogs('info');
  const started = await startDaemon(config, logger);
  cleanups.push(() => started.close());
  const probe = await Probe.connect(started.url);
  cleanups.push(() => probe.close());
  return { probe, lines };
}

describe('ovos-wire-today: fallback skills written on ovos-workshop take part unmodified', () => {
  it('fallback-workshop-willing: fb.barrel (priority 30) is pinged by the broadcast, wins, gets its request, and its own ovos.utterance.handled is the only one', async () => {
    const { probe, lines } = await daemonWithLogs();
    const [register] = registerTexts('fallback-workshop-willing');
    workshopFallbackSkill(probe, register!, true);
    await probe.barrier();
    probe.sendText(recordedText('fallback-workshop-willing', 'recognizer_loop:utterance'));
    await lines.waitFor((line) => line.msg === 'utterance handled by the skill itself', 'the skill ended the utterance');
    await probe.barrier();
    const turn = inSession(probe, 'bench-session');
    // The skill sends `.response` and its handled back to back, so its handled may reach the wire before the
    // ovos.intent.handler.complete we derive from that `.response`: only their relative order is free.
    const types = turn.map((m) => m.type);
    expect(types.filter((t) => t !== 'ovos.utterance.handled')).toEqual([
      'recognizer_loop:utterance',
      'ovos.skills.fallback.ping',
      'ovos.skills.fallback.pong',
      'ovos.intent.matched',
      'ovos.skills.fallback.fb.barrel.request',
      'ovos.intent.handler.start',
      'ovos.skills.fallback.fb.barrel.start',
      'ovos.skills.fallback.fb.barrel.response',
      'ovos.intent.handler.complete',
    ]);
    expect(types.filter((t) => t === 'ovos.utterance.handled')).toHaveLength(1);
    expect(types.indexOf('ovos.utterance.handled')).toBeGreaterThan(types.indexOf('ovos.skills.fallback.fb.barrel.response'));
    // The utterance's one broadcast asks for every stage at once: its range spans them (ovos-core sends one per stage).
    expect(turn[1]).toMatchObject({ data: { utterances: ['do a barrel roll please'], lang: 'en-US', range: [0, 100] }, context: { source: 'bench', destination: 'skills' } });
    expect(turn[4]).toMatchObject({
      data: { utterances: ['do a barrel roll please'], lang: 'en-US', skill_id: 'fb.barrel', utterance: 'do a barrel roll please' },
      context: { session: { session_id: 'bench-session' }, skill_id: 'fb.barrel' },
    });
    expect(turn[3]!.data).toMatchObject({ skill_id: 'fb.barrel', intent_name: 'fallback', pipeline_id: 'fallback_high' });
  });

  it('fallback-two-skills-order: fb.unwilling (20) declines, fb.willing (60) wins; the unwilling skill never gets a request', async () => {
    const { probe, lines } = await daemonWithLogs();
    const [unwilling, willing] = registerTexts('fallback-two-skills-order');
    workshopFallbackSkill(probe, unwilling!, false);
    workshopFallbackSkill(probe, willing!, true);
    await probe.barrier();
    probe.sendText(recordedText('fallback-two-skills-order', 'recognizer_loop:utterance'));
    await lines.waitFor((line) => line.msg === 'utterance handled by the skill itself', 'the skill ended the utterance');
    await probe.barrier();
    const types = inSession(probe, 'bench-session').map((m) => m.type);
    expect(types.filter((t) => t.endsWith('.request'))).toEqual(['ovos.skills.fallback.fb.willing.request']);
    expect(types.filter((t) => t === 'ovos.utterance.handled')).toHaveLength(1);
    expect(inSession(probe, 'bench-session').find((m) => m.type === 'ovos.intent.matched')?.data).toMatchObject({ skill_id: 'fb.willing', pipeline_id: 'fallback_medium' });
  });

  it('fallback-none-willing: three skills (3, 50, 95) all decline → one broadcast for the utterance (its answers serve all three stages), unmatched, the error sound, complete_intent_failure, one handled (ours)', async () => {
    const { probe } = await daemonWithLogs();
    for (const register of registerTexts('fallback-none-willing')) workshopFallbackSkill(probe, register, false);
    await probe.barrier();
    probe.sendText(recordedText('fallback-none-willing', 'recognizer_loop:utterance'));
    await probe.waitFor((m) => m.type === 'ovos.utterance.handled' && sessionIdOf(m) === 'bench-session', 'handled');
    await probe.barrier();
    const turn = inSession(probe, 'bench-session');
    expect(turn.filter((m) => m.type === 'ovos.skills.fallback.ping').map((m) => m.data['range'])).toEqual([[0, 100]]);
    expect(turn.filter((m) => m.type === 'ovos.skills.fallback.pong')).toHaveLength(3);
    expect(turn.filter((m) => m.type.endsWith('.request'))).toEqual([]);
    expect(turn.map((m) => m.type).slice(-4)).toEqual(['ovos.intent.unmatched', 'mycroft.audio.play_sound', 'complete_intent_failure', 'ovos.utterance.handled']);
    expect(turn.filter((m) => m.type === 'ovos.utterance.handled')).toHaveLength(1);
  });

  it('a fallback handler answering result: false is a handler error (not a second contest), and our handled the only one', async () => {
    const { probe } = await daemonWithLogs();
    const [register] = registerTexts('fallback-workshop-willing');
    workshopFallbackSkill(probe, register!, true, false);
    await probe.barrier();
    probe.sendText(recordedText('fallback-workshop-willing', 'recognizer_loop:utterance'));
    await probe.waitFor((m) => m.type === 'ovos.utterance.handled' && sessionIdOf(m) === 'bench-session', 'handled');
    await probe.barrier();
    const turn = inSession(probe, 'bench-session');
    const error = turn.find((m) => m.type === 'ovos.intent.handler.error');
    expect(String(error?.data['exception'])).toMatch(/FallbackHandlerFailed: fb\.barrel answered result false/);
    expect(turn.filter((m) => m.type === 'ovos.utterance.handled')).toHaveLength(1);
    expect(turn.filter((m) => m.type === 'ovos.skills.fallback.ping')).toHaveLength(1);
  });

  it('a mixed pool (spec skill at 10, legacy skill at 30): pool order decides, not who answers first', async () => {
    const { probe } = await daemonWithLogs();
    const [register] = registerTexts('fallback-workshop-willing'); // fb.barrel, priority 30, answers the broadcast at once
    workshopFallbackSkill(probe, register!, true);
    // A spec skill at priority 10 that answers willing only once the legacy skill's pong is on the wire.
    probe.send({ type: 'ovos.fallback.register', data: { skill_id: 'spec.first', priority: 10 }, context: { skill_id: 'spec.first', session: { session_id: 'default' } } });
    probe.frames.subscribe((frame) => {
      const m = frame.message;
      if (m?.type === 'spec.first.fallback.ping') {
        void probe
          .waitFor((x) => x.type === 'ovos.skills.fallback.pong' && sessionIdOf(x) === 'bench-session', 'the legacy pong')
          .then(() => probe.send(ovosReply(m, 'spec.first.fallback.pong', { skill_id: 'spec.first', can_handle: true })));
      } else if (m?.type === 'spec.first:fallback') {
        probe.send(ovosReply(m, 'mycroft.skill.handler.complete', {}, { skill_id: 'spec.first' }));
      }
    });
    await probe.barrier();
    probe.sendText(recordedText('fallback-workshop-willing', 'recognizer_loop:utterance'));
    await probe.waitFor((m) => m.type === 'ovos.utterance.handled' && sessionIdOf(m) === 'bench-session', 'handled');
    await probe.barrier();
    const turn = inSession(probe, 'bench-session');
    const types = turn.map((m) => m.type);
    expect(types.indexOf('ovos.skills.fallback.pong')).toBeLessThan(types.indexOf('spec.first.fallback.pong'));
    expect(turn.find((m) => m.type === 'ovos.intent.matched')?.data).toMatchObject({ skill_id: 'spec.first' });
    expect(turn.filter((m) => m.type.endsWith('.request'))).toEqual([]);
    expect(turn.filter((m) => m.type === 'ovos.utterance.handled')).toHaveLength(1);
  });
});

// ---- OVOS fallback behaviours, ported (ovos-core's fallback tests), in both dialects -------------------------------

type Dialect = 'spec' | 'legacy';

/** The recorded ovos-workshop registration, for another skill and priority (ovos-workshop sends no context.skill_id). */
function legacyRegistration(skillId: string, priority: number): string {
  const frame = JSON.parse(registerTexts('fallback-workshop-willing')[0]!) as Message;
  return JSON.stringify({ ...frame, data: { skill_id: skillId, priority } });
}

/**
 * A spec fallback skill (OVOS-FALLBACK-1 §3, §6, §7) on the probe: registers with context.skill_id, pongs on its own
 * ping by reply (or stays silent), and on its dispatch speaks and completes its handler, both by reply.
 */
function specFallbackSkill(probe: Probe, skillId: string, priority: number, canHandle: boolean | 'silent'): void {
  probe.send({ type: 'ovos.fallback.register', data: { skill_id: skillId, priority }, context: { skill_id: skillId, session: { session_id: 'default' } } });
  probe.frames.subscribe((frame) => {
    const m = frame.message;
    if (m?.type === `${skillId}.fallback.ping` && canHandle !== 'silent') {
      probe.send(ovosReply(m, `${skillId}.fallback.pong`, { skill_id: skillId, can_handle: canHandle }, { skill_id: skillId }));
    } else if (m?.type === `${skillId}:fallback`) {
      probe.send(ovosReply(m, 'ovos.utterance.speak', { utterance: `${skillId} says hello` }, { skill_id: skillId }));
      probe.send(ovosReply(m, 'mycroft.skill.handler.complete', {}, { skill_id: skillId }));
    }
  });
}

function fallbackSkillIn(dialect: Dialect, probe: Probe, skillId: string, priority: number, canHandle: boolean | 'silent'): void {
  if (dialect === 'spec') specFallbackSkill(probe, skillId, priority, canHandle);
  else workshopFallbackSkill(probe, legacyRegistration(skillId, priority), canHandle);
}

/** The recorded client utterance with another text and session (extra session keys merged), in either dialect's entry. */
function utteranceIn(dialect: Dialect, utterance: string, sessionId: string, session: JsonObject = {}): string {
  const frame = JSON.parse(recordedText('fallback-workshop-willing', 'recognizer_loop:utterance')) as Message;
  return JSON.stringify({
    type: dialect === 'spec' ? 'ovos.utterance.handle' : 'recognizer_loop:utterance',
    data: { ...frame.data, utterances: [utterance] },
    context: { ...frame.context, session: { ...(frame.context['session'] as JsonObject), ...session, session_id: sessionId } },
  });
}

/** What each dialect's pings to `skillId` look like on the wire. */
const pingsTo = (dialect: Dialect, turn: readonly Message[], skillId: string): Message[] =>
  dialect === 'spec' ? turn.filter((m) => m.type === `${skillId}.fallback.ping`) : turn.filter((m) => m.type === 'ovos.skills.fallback.ping');

async function endOfTurn(probe: Probe, sessionId: string): Promise<Message[]> {
  await probe.waitFor((m) => m.type === 'ovos.utterance.handled' && sessionIdOf(m) === sessionId, `handled in ${sessionId}`);
  await probe.barrier();
  return inSession(probe, sessionId);
}

describe.each<Dialect>(['spec', 'legacy'])('ovos-core fallback behaviours, ported: %s dialect', (dialect) => {
  it('FALLBACK-1 §8: a skill at priority 95 handles "hello world" at the low stage; one handled', async () => {
    const { probe } = await daemonWithLogs();
    fallbackSkillIn(dialect, probe, 'fb.hello', 95, true);
    await probe.barrier();
    probe.sendText(utteranceIn(dialect, 'hello world', 'hello'));
    const turn = await endOfTurn(probe, 'hello');
    expect(turn.find((m) => m.type === 'ovos.intent.matched')?.data).toMatchObject({ skill_id: 'fb.hello', intent_name: 'fallback', pipeline_id: 'fallback_low' });
    expect(turn.filter((m) => m.type === 'ovos.intent.handler.complete')).toHaveLength(1);
    expect(turn.filter((m) => m.type === 'ovos.utterance.handled')).toHaveLength(1);
    // Only the low stage's pool held the skill: the high and medium stages asked nobody (a workshop skill is asked by
    // the utterance's one broadcast, for every stage at once).
    if (dialect === 'legacy') expect(pingsTo(dialect, turn, 'fb.hello').map((m) => m.data['range'])).toEqual([[0, 100]]);
    else expect(pingsTo(dialect, turn, 'fb.hello')).toHaveLength(1);
  });

  it('FALLBACK-1 §5 / SESSION-1 blacklisted_skills: a blacklisted skill is never pinged and never wins; the next willing skill does', async () => {
    const { probe } = await daemonWithLogs();
    fallbackSkillIn(dialect, probe, 'fb.banned', 10, true);
    fallbackSkillIn(dialect, probe, 'fb.allowed', 60, true);
    await probe.barrier();
    probe.sendText(utteranceIn(dialect, 'do a barrel roll please', 'kid', { blacklisted_skills: ['fb.banned'] }));
    const turn = await endOfTurn(probe, 'kid');
    // A spec skill denied is never pinged; workshop skills all hear the utterance's one broadcast (as ovos-core's), sent
    // for fb.allowed — a denied one's answer decides nothing.
    expect(pingsTo(dialect, turn, 'fb.banned')).toHaveLength(dialect === 'spec' ? 0 : 1);
    expect(turn.filter((m) => m.type.includes('fb.banned'))).toEqual([]);
    expect(turn.find((m) => m.type === 'ovos.intent.matched')?.data).toMatchObject({ skill_id: 'fb.allowed', pipeline_id: 'fallback_medium' });
    expect(turn.filter((m) => m.type === 'ovos.utterance.handled')).toHaveLength(1);
  });

  it('FALLBACK-1 §6.1: a slow skill (silent) is skipped after its ping timeout and the next in the pool wins; the slow one never gets a dispatch', async () => {
    const { probe, lines } = await daemonWithLogs();
    fallbackSkillIn(dialect, probe, 'fb.slow', 10, 'silent');
    fallbackSkillIn(dialect, probe, 'fb.next', 20, true);
    await probe.barrier();
    probe.sendText(utteranceIn(dialect, 'do a barrel roll please', 'slow'));
    const turn = await endOfTurn(probe, 'slow');
    expect(lines.items.some((line) => line.reason === 'ping_timeout' && line['skill_id'] === 'fb.slow')).toBe(true);
    expect(turn.find((m) => m.type === 'ovos.intent.matched')?.data).toMatchObject({ skill_id: 'fb.next', pipeline_id: 'fallback_high' });
    expect(turn.filter((m) => m.type.includes('fb.slow') && !m.type.endsWith('.ping'))).toEqual([]);
    expect(turn.filter((m) => m.type === 'ovos.utterance.handled')).toHaveLength(1);
  });

  it('two sessions ask at once: each turn is decided by its own pongs — a skill willing only in one session wins there and not in the other', async () => {
    const { probe } = await daemonWithLogs();
    // fb.picky is willing only for "kitchen"'s utterance; fb.any at a lower priority for everything.
    if (dialect === 'spec') {
      probe.send({ type: 'ovos.fallback.register', data: { skill_id: 'fb.picky', priority: 10 }, context: { skill_id: 'fb.picky', session: { session_id: 'default' } } });
    } else {
      probe.sendText(legacyRegistration('fb.picky', 10));
    }
    probe.frames.subscribe((frame) => {
      const m = frame.message;
      if (m === undefined) return;
      const ping = dialect === 'spec' ? m.type === 'fb.picky.fallback.ping' : m.type === 'ovos.skills.fallback.ping';
      if (ping) {
        const willing = sessionIdOf(m) === 'kitchen';
        probe.send(ovosReply(m, dialect === 'spec' ? 'fb.picky.fallback.pong' : 'ovos.skills.fallback.pong', { skill_id: 'fb.picky', can_handle: willing }, { skill_id: 'fb.picky' }));
      } else if (m.type === (dialect === 'spec' ? 'fb.picky:fallback' : 'ovos.skills.fallback.fb.picky.request')) {
        if (dialect === 'spec') probe.send(ovosReply(m, 'mycroft.skill.handler.complete', {}, { skill_id: 'fb.picky' }));
        else {
          probe.send(ovosForward(m, 'ovos.skills.fallback.fb.picky.response', { result: true }));
          probe.send(ovosForward(m, 'ovos.utterance.handled'));
        }
      }
    });
    fallbackSkillIn(dialect, probe, 'fb.any', 60, true);
    await probe.barrier();
    probe.sendText(utteranceIn(dialect, 'do a barrel roll please', 'kitchen'));
    probe.sendText(utteranceIn(dialect, 'do a barrel roll please', 'bedroom'));
    const kitchen = await endOfTurn(probe, 'kitchen');
    const bedroom = await endOfTurn(probe, 'bedroom');
    expect(kitchen.find((m) => m.type === 'ovos.intent.matched')?.data['skill_id']).toBe('fb.picky');
    expect(bedroom.find((m) => m.type === 'ovos.intent.matched')?.data['skill_id']).toBe('fb.any');
    for (const turn of [kitchen, bedroom]) expect(turn.filter((m) => m.type === 'ovos.utterance.handled')).toHaveLength(1);
  });
});

// ---- Legacy common-query skills (ovos-workshop @common_query and classic CommonQuerySkill), plain websocket ---------

type CqReply = { readonly answer: string; readonly conf: number } | null | 'never';

interface WorkshopCqSkill {
  readonly skillId: string;
  readonly classic?: boolean;
  /** The skill's answer to a phrase: an answer, null (ovos-workshop's searching: false), or 'never' (it hangs). */
  readonly reply: (phrase: string, query: Message) => CqReply;
}

/**
 * Common-query skills as ovos-workshop runs them in one skill process (transcripts/common-query-*.jsonl, session-full):
 * the discovery pong at start-up and on every discovery ping; on `question:query` `{phrase, skill_id, searching:
 * true}` by `message.response`, then the answer (`callback_data`; classic skills add `handles_speech`) or
 * `searching: false`; on `question:action.<id>` (classic: `question:action` naming it) the skill speaks and sends
 * handler start/complete and its own `ovos.utterance.handled`, each a forward of the action. Skills sharing the client
 * send the first one's `context.skill_id` on their replies, as recorded.
 */
async function workshopCqProcess(url: string, skills: readonly WorkshopCqSkill[]): Promise<Probe> {
  const probe = await Probe.connect(url);
  cleanups.push(() => probe.close());
  const shared = skills[0]!.skillId;
  const announce = (skill: WorkshopCqSkill, from?: Message): void => {
    const data = { skill_id: skill.skillId, is_classic_cq: skill.classic === true };
    probe.send(from === undefined ? { type: 'ovos.common_query.pong', data, context: { skill_id: skill.skillId, session: { session_id: 'default' } } } : ovosReply(from, 'ovos.common_query.pong', data, { skill_id: skill.skillId }));
  };
  for (const skill of skills) announce(skill);
  probe.frames.subscribe((frame) => {
    const m = frame.message;
    if (m === undefined) return;
    if (m.type === 'ovos.common_query.ping' && m.data['utterance'] === undefined) for (const skill of skills) announce(skill, m);
    if (m.type === 'question:query') {
      const phrase = String(m.data['phrase']);
      const response = (data: JsonObject): void => probe.send(ovosReply(m, 'question:query.response', { phrase, ...data }, { skill_id: shared }));
      for (const skill of skills) response({ skill_id: skill.skillId, searching: true });
      for (const skill of skills) {
        const verdict = skill.reply(phrase, m);
        if (verdict === 'never') continue;
        if (verdict === null) response({ skill_id: skill.skillId, searching: false });
        else response({ skill_id: skill.skillId, answer: verdict.answer, ...(skill.classic === true ? { handles_speech: true } : {}), callback_data: { answer: verdict.answer }, conf: verdict.conf });
      }
    }
    for (const skill of skills) {
      const action = skill.classic === true ? m.type === 'question:action' && m.data['skill_id'] === skill.skillId : m.type === `question:action.${skill.skillId}`;
      if (!action) continue;
      const as = (type: string, data: JsonObject = {}): Message => ({ type, data, context: { ...m.context, skill_id: skill.skillId } });
      const callback = m.data['callback_data'] as JsonObject;
      probe.send(as('mycroft.skill.handler.start', { name: 'WorkshopCQ.__handle_skill_query_action' }));
      probe.send(as('speak', { utterance: String(callback['answer']), expect_response: false, meta: { skill: skill.skillId }, lang: String(m.data['lang']) }));
      probe.send(as('mycroft.skill.handler.complete', { name: 'WorkshopCQ.__handle_skill_query_action' }));
      probe.send(as('ovos.utterance.handled', { name: 'WorkshopCQ.__handle_skill_query_action' }));
    }
  });
  await probe.barrier();
  return probe;
}

async function legacyDaemon(override: Record<string, unknown> = {}): Promise<{ url: string; client: Probe; lines: Recorder<LogLine> }> {
  const config = configWith({ bus: { port: 0 }, exampleSkills: false, log: { level: 'info' }, ...override });
  const { logger, lines } = captureLogs('info');
  const started = await startDaemon(config, logger);
  cleanups.push(() => started.close());
  const client = await Probe.connect(started.url);
  cleanups.push(() => client.close());
  return { url: started.url, client, lines };
}

const SPEED = 'Light travels at about three hundred thousand kilometres per second.';
const handledIn = (probe: Probe, sessionId: string): Message[] => inSession(probe, sessionId).filter((m) => m.type === 'ovos.utterance.handled');

/** Waits for the skill's own handled, then a barrier: anything of ours that would follow is on the wire by then. */
async function skillEnded(client: Probe, lines: Recorder<LogLine>, sessionId: string): Promise<Message[]> {
  await lines.waitFor((line) => line.msg === 'utterance handled by the skill itself' && line['session_id'] === sessionId, `the skill ended ${sessionId}`);
  await client.barrier();
  return inSession(client, sessionId);
}

describe('ovos-wire-today: common-query skills written on ovos-workshop take part unmodified', () => {
  it('common-query-decorator: cq.decorator answers (0.7), is activated and gets question:action.cq.decorator with its callback_data; it speaks, and its own ovos.utterance.handled is the only one', async () => {
    const { url, client, lines } = await legacyDaemon();
    await workshopCqProcess(url, [{ skillId: 'cq.decorator', reply: () => ({ answer: SPEED, conf: 0.7 }) }]);
    client.sendText(recordedText('common-query-decorator', 'recognizer_loop:utterance'));
    const turn = await skillEnded(client, lines, 'bench-session');
    const types = turn.map((m) => m.type);
    expectInOrder(types, [
      'recognizer_loop:utterance',
      'question:query',
      'question:query.response',
      'ovos.intent.matched',
      'cq.decorator.activate',
      'question:action.cq.decorator',
      'ovos.intent.handler.start',
      'mycroft.skill.handler.complete',
      'ovos.intent.handler.complete',
    ]);
    expect(types.filter((t) => t === 'ovos.utterance.handled')).toHaveLength(1);
    expect(types).not.toContain('ovos.utterance.speak'); // the skill speaks, not the plugin
    expect(turn.filter((m) => m.type === 'speak').map((m) => m.data['utterance'])).toEqual([SPEED]);
    const query = turn.find((m) => m.type === 'question:query')!;
    expect(query).toMatchObject({ data: { phrase: 'what is the speed of light' }, context: { source: 'skills', destination: 'bench', skill_id: 'common_query' } });
    const action = turn.find((m) => m.type === 'question:action.cq.decorator')!;
    expect(action.data).toEqual({
      utterances: ['what is the speed of light'],
      lang: 'en-US',
      utterance: 'what is the speed of light',
      phrase: 'what is the speed of light',
      skill_id: 'cq.decorator',
      answer: SPEED,
      callback_data: { answer: SPEED },
      conf: 0.7,
    });
    // As ovos-core: the winner is activated in the session it is dispatched with.
    const active = (action.context['session'] as JsonObject)['active_skills'] as unknown[];
    expect(active.map((entry) => (entry as unknown[])[0])).toEqual(['cq.decorator']);
    expect(turn.find((m) => m.type === 'ovos.intent.matched')?.data).toMatchObject({ skill_id: 'cq.decorator', intent_name: 'common_query', pipeline_id: 'common_query' });
    expect(handledIn(client, 'bench-session')[0]?.context['skill_id']).toBe('cq.decorator');
  });

  it('common-query-classic: conf 2.0 competes as 1; the classic skill gets the bare question:action naming it, with its own reply (conf 2.0, handles_speech) back', async () => {
    const { url, client, lines } = await legacyDaemon();
    await workshopCqProcess(url, [{ skillId: 'cq.classic', classic: true, reply: () => ({ answer: SPEED, conf: 2.0 }) }]);
    client.sendText(recordedText('common-query-classic', 'recognizer_loop:utterance'));
    const turn = await skillEnded(client, lines, 'bench-session');
    const action = turn.find((m) => m.type === 'question:action');
    expect(action?.data).toMatchObject({ skill_id: 'cq.classic', phrase: 'what is the speed of light', answer: SPEED, conf: 2.0, handles_speech: true, callback_data: { answer: SPEED } });
    expect(turn.map((m) => m.type)).not.toContain('question:action.cq.classic');
    expect(turn.filter((m) => m.type === 'ovos.utterance.handled')).toHaveLength(1);
    const decided = lines.items.find((line) => line.msg === 'common query decided');
    expect(decided).toMatchObject({ winner: 'cq.classic', conf: 1 });
  });

  it('common-query-none: the only skill declines (searching: false) → the contest closes on that decline (all_answered), not at a deadline; unmatched, the error sound, complete_intent_failure, one handled (ours)', async () => {
    const { url, client, lines } = await legacyDaemon();
    await workshopCqProcess(url, [{ skillId: 'cq.decline', reply: () => null }]);
    client.sendText(recordedText('common-query-none', 'recognizer_loop:utterance'));
    await client.waitFor((m) => m.type === 'ovos.utterance.handled' && sessionIdOf(m) === 'bench-session', 'handled');
    await client.barrier();
    const turn = inSession(client, 'bench-session');
    expect(turn.map((m) => m.type).slice(-4)).toEqual(['ovos.intent.unmatched', 'mycroft.audio.play_sound', 'complete_intent_failure', 'ovos.utterance.handled']);
    expect(turn.filter((m) => m.type === 'ovos.utterance.handled')).toHaveLength(1);
    expect(turn.map((m) => m.type).filter((t) => t.startsWith('question:action'))).toEqual([]);
    expect(lines.items.find((line) => line.msg === 'common query decided')).toMatchObject({ closed_by: 'all_answered', claimants: 1, winner: null });
  });

  it('session-full: two skills in one process (replies carrying the other\'s context.skill_id), the live blacklist drops cq.blocked (0.9): cq.open (0.7) wins in the named session, whose id and keys survive', async () => {
    const { url, client, lines } = await legacyDaemon();
    await workshopCqProcess(url, [
      { skillId: 'cq.blocked', reply: () => ({ answer: 'Blocked skill answer.', conf: 0.9 }) },
      { skillId: 'cq.open', reply: () => ({ answer: SPEED, conf: 0.7 }) },
    ]);
    const entryText = recordedText('session-full', 'recognizer_loop:utterance');
    const recordedSession = (JSON.parse(entryText) as Message).context['session'] as JsonObject;
    client.sendText(entryText);
    const turn = await skillEnded(client, lines, 'kitchen-satellite-7f3a');
    expect(turn.find((m) => m.type === 'ovos.intent.matched')?.data).toMatchObject({ skill_id: 'cq.open' });
    expect(turn.map((m) => m.type).filter((t) => t.startsWith('question:action') || t.endsWith('.activate'))).toEqual(['cq.open.activate', 'question:action.cq.open']);
    expect(turn.filter((m) => m.type === 'speak').map((m) => m.data['utterance'])).toEqual([SPEED]);
    expect(turn.filter((m) => m.type === 'ovos.utterance.handled')).toHaveLength(1);
    // Everything we derived carries the client's session whole, blacklist and all (activation aside).
    for (const message of turn.filter((m) => ['question:query', 'ovos.intent.matched', 'ovos.intent.handler.complete'].includes(m.type))) {
      const { active_skills: _a, active_handlers: _h, ...rest } = message.context['session'] as JsonObject;
      const { active_skills: _b, ...recorded } = recordedSession;
      expect(rest).toEqual(recorded);
    }
  });

  it('extra context keys ("x": "xx") survive every derived message of a legacy common-query turn, and the default session keeps "default"', async () => {
    const { url, client, lines } = await legacyDaemon();
    await workshopCqProcess(url, [{ skillId: 'cq.decorator', reply: () => ({ answer: SPEED, conf: 0.7 }) }]);
    client.sendText(variant(recordedText('common-query-decorator', 'recognizer_loop:utterance'), 'default', { x: 'xx' }));
    await lines.waitFor((line) => line.msg === 'utterance handled by the skill itself' && line['session_id'] === 'default', 'the skill ended the turn');
    await client.barrier();
    const ours = client.messages.filter((m) => ['question:query', 'ovos.intent.matched', 'cq.decorator.activate', 'question:action.cq.decorator', 'ovos.intent.handler.start', 'ovos.intent.handler.complete'].includes(m.type));
    expect(ours).toHaveLength(6);
    for (const message of ours) expect(message.context).toMatchObject({ x: 'xx', session: { session_id: 'default' } });
  });

  it('two sessions asking at once never see each other\'s replies; the same question twice in one session is two contests — one answer and one handled each, none doubled', async () => {
    const { url, client, lines } = await legacyDaemon();
    // The skill answers with the session it was asked in: a reply crossing sessions would be spoken in the wrong one.
    await workshopCqProcess(url, [{ skillId: 'cq.decorator', reply: (_phrase, query) => ({ answer: `for ${sessionIdOf(query)}`, conf: 0.7 }) }]);
    const entry = recordedText('common-query-decorator', 'recognizer_loop:utterance');
    client.sendText(variant(entry, 'kitchen'));
    client.sendText(variant(entry, 'bedroom'));
    for (const id of ['kitchen', 'bedroom']) await skillEnded(client, lines, id);
    client.sendText(variant(entry, 'kitchen'));
    await lines.waitFor((line) => line.msg === 'utterance handled by the skill itself' && line['session_id'] === 'kitchen' && lines.items.filter((l) => l.msg === 'utterance handled by the skill itself' && l['session_id'] === 'kitchen').length === 2, 'the second kitchen turn');
    await client.barrier();
    for (const id of ['kitchen', 'bedroom']) {
      const spokenHere = inSession(client, id).filter((m) => m.type === 'speak').map((m) => m.data['utterance']);
      expect(spokenHere).toEqual(id === 'kitchen' ? ['for kitchen', 'for kitchen'] : ['for bedroom']);
      expect(handledIn(client, id)).toHaveLength(id === 'kitchen' ? 2 : 1);
      expect(new Set(handledIn(client, id).map((m) => m.context['utterance_id'])).size).toBe(id === 'kitchen' ? 2 : 1);
    }
  });

  it('a skill process that disconnects after searching: true is not waited for: the contest closes at once (its claim counts as declined) and the utterance goes on to fallback → unmatched, one handled', async () => {
    const { url, client, lines } = await legacyDaemon();
    const skill = await workshopCqProcess(url, [{ skillId: 'cq.crashy', reply: () => 'never' }]);
    skill.frames.subscribe((frame) => {
      if (frame.message?.type === 'question:query') setImmediate(() => void skill.close());
    });
    client.sendText(recordedText('common-query-decorator', 'recognizer_loop:utterance'));
    await client.waitFor((m) => m.type === 'ovos.utterance.handled' && sessionIdOf(m) === 'bench-session', 'handled');
    await client.barrier();
    expect(lines.items.find((line) => line.msg === 'common query decided')).toMatchObject({ closed_by: 'all_answered', winner: null });
    expect(inSession(client, 'bench-session').map((m) => m.type).slice(-2)).toEqual(['complete_intent_failure', 'ovos.utterance.handled']);
  });

  it('a mixed contest: a spec skill (0.8) and a legacy skill (0.9 / 0.6) compete under one selection — the higher confidence wins whichever dialect it speaks', async () => {
    for (const [legacyConf, winner] of [[0.9, 'cq.legacy'], [0.6, 'spec.wiki']] as const) {
      const { url, client, lines } = await legacyDaemon();
      await workshopCqProcess(url, [{ skillId: 'cq.legacy', reply: () => ({ answer: 'legacy answer', conf: legacyConf }) }]);
      const spec = await Probe.connect(url);
      cleanups.push(() => spec.close());
      spec.frames.subscribe((frame) => {
        const m = frame.message;
        if (m?.type === 'ovos.common_query.ping' && typeof m.data['utterance'] === 'string') spec.send(ovosReply(m, 'ovos.common_query.pong', { utterance: m.data['utterance'], skill_id: 'spec.wiki', can_answer: true, latency_ms: 50 }));
        if (m?.type === 'spec.wiki:common_query') spec.send(ovosReply(m, 'spec.wiki.common_query.response', { utterance: m.data['utterance'] as string, skill_id: 'spec.wiki', answer: 'spec answer', conf: 0.8 }));
      });
      // A first question puts spec.wiki on the roster (the roster learns from pongs; see the poll rules in src/plugins/README.md: an
      // unknown skill that claims after every known one has is heard from its next question on).
      client.send({ type: 'recognizer_loop:utterance', data: { utterances: ['who wrote the iliad'], lang: 'en-US' }, context: { session: { session_id: 'warm-up' } } });
      await lines.waitFor((line) => line.msg === 'common query decided' && line['session_id'] === 'warm-up', 'the warm-up question');
      client.sendText(recordedText('common-query-decorator', 'recognizer_loop:utterance'));
      await client.waitFor((m) => m.type === 'ovos.intent.matched' && sessionIdOf(m) === 'bench-session', 'matched');
      await lines.waitFor((line) => (line.msg === 'utterance handled' || line.msg === 'utterance handled by the skill itself') && line['session_id'] === 'bench-session', 'the turn ended');
      await client.barrier();
      const turn = inSession(client, 'bench-session');
      expect(turn.find((m) => m.type === 'ovos.intent.matched')?.data['skill_id']).toBe(winner === 'cq.legacy' ? 'cq.legacy' : 'common_query');
      const said = [...turn.filter((m) => m.type === 'speak'), ...turn.filter((m) => m.type === 'ovos.utterance.speak')].map((m) => m.data['utterance']);
      expect(said).toEqual([winner === 'cq.legacy' ? 'legacy answer' : 'spec answer']);
      expect(turn.filter((m) => m.type === 'ovos.utterance.handled')).toHaveLength(1);
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    }
  });

  it('dialects.legacy false: no question:query is sent and a legacy skill\'s replies are not ours', async () => {
    const { url, client } = await legacyDaemon({ dialects: { spec: true, legacy: false } });
    await workshopCqProcess(url, [{ skillId: 'cq.decorator', reply: () => ({ answer: SPEED, conf: 0.7 }) }]);
    const entry = JSON.parse(recordedText('common-query-decorator', 'recognizer_loop:utterance')) as Message;
    client.send({ ...entry, type: 'ovos.utterance.handle' });
    await client.waitFor((m) => m.type === 'ovos.utterance.handled' && sessionIdOf(m) === 'bench-session', 'handled');
    await client.barrier();
    const types = inSession(client, 'bench-session').map((m) => m.type);
    expect(types).not.toContain('question:query');
    expect(types.filter((t) => t === 'ovos.utterance.handled')).toHaveLength(1);
  });
});

describe('ovos-wire-today: common-query skills of today announce themselves (discovery pong)', () => {
  it('common-query-decorator / -classic: the start-up pong {skill_id, is_classic_cq} is told apart from a spec claim and puts the skill on the roster once, classic or not — no utterance_missing', async () => {
    const { probe, lines } = await daemonWithLogs();
    const decorator = transcript('common-query-decorator').find((r) => r.frame.type === 'ovos.common_query.pong')!;
    const classic = transcript('common-query-classic').find((r) => r.frame.type === 'ovos.common_query.pong')!;
    probe.sendText(JSON.stringify(decorator.frame));
    probe.sendText(JSON.stringify(classic.frame));
    probe.sendText(JSON.stringify(decorator.frame)); // announced again (a restart): still one roster entry
    await probe.barrier();
    await lines.waitFor((line) => line.msg === 'common-query skill joined the roster' && line['skill_id'] === 'cq.classic', 'the classic skill');
    const joined = lines.items.filter((line) => line.msg === 'common-query skill joined the roster');
    expect(joined.map((line) => [line['skill_id'], line['dialect'], line['classic']])).toEqual([
      ['cq.decorator', 'legacy', false],
      ['cq.classic', 'legacy', true],
    ]);
    expect(lines.items.filter((line) => line.reason === 'utterance_missing')).toEqual([]);
  });
});
