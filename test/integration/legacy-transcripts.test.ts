/**
 * The legacy dialect against frames recorded from the real OVOS programs (transcripts/, copied from
 * ../shared/specs/transcripts so CI has them; see transcripts/README.md). A plain websocket client sends the exact
 * JSON text a real OVOS client sent; we assert what our daemon emits is what that client waits for — data and context
 * compared as subsets, order checked. Nothing of ours is on the client side but the socket.
 *
 * So far: the utterance entry `recognizer_loop:utterance` and the no-match ending (ovos-wire-today.md "no match"),
 * in both dialects. Legacy fallback and common-query skills are to follow (issue 8).
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
function workshopFallbackSkill(probe: Probe, registerText: string, canHandle: boolean, result = true): void {
  const skillId = (JSON.parse(registerText) as Message).data['skill_id'] as string;
  probe.sendText(registerText);
  probe.frames.subscribe((frame) => {
    const message = frame.message;
    if (message === undefined) return;
    if (message.type === 'ovos.skills.fallback.ping') {
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
    expect(turn[1]).toMatchObject({ data: { utterances: ['do a barrel roll please'], lang: 'en-US', range: [0, 49] }, context: { source: 'bench', destination: 'skills' } });
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

  it('fallback-none-willing: three skills (3, 50, 95) all decline → one broadcast per stage, unmatched, the error sound, complete_intent_failure, one handled (ours)', async () => {
    const { probe } = await daemonWithLogs();
    for (const register of registerTexts('fallback-none-willing')) workshopFallbackSkill(probe, register, false);
    await probe.barrier();
    probe.sendText(recordedText('fallback-none-willing', 'recognizer_loop:utterance'));
    await probe.waitFor((m) => m.type === 'ovos.utterance.handled' && sessionIdOf(m) === 'bench-session', 'handled');
    await probe.barrier();
    const turn = inSession(probe, 'bench-session');
    expect(turn.filter((m) => m.type === 'ovos.skills.fallback.ping').map((m) => m.data['range'])).toEqual([[0, 49], [50, 74], [75, 100]]);
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

describe('ovos-wire-today: common-query skills of today announce themselves (discovery pong)', () => {
  it('common-query-decorator / -classic: the start-up pong {skill_id, is_classic_cq} is told apart from a spec claim — one warn per skill that it is not supported yet, no utterance_missing', async () => {
    const { probe, lines } = await daemonWithLogs();
    const decorator = transcript('common-query-decorator').find((r) => r.frame.type === 'ovos.common_query.pong')!;
    const classic = transcript('common-query-classic').find((r) => r.frame.type === 'ovos.common_query.pong')!;
    probe.sendText(JSON.stringify(decorator.frame));
    probe.sendText(JSON.stringify(classic.frame));
    probe.sendText(JSON.stringify(decorator.frame)); // announced again (a restart): still one warn
    await probe.barrier();
    await lines.waitFor((line) => line.reason === 'legacy_common_query_unsupported' && line['skill_id'] === 'cq.classic', 'the classic skill');
    const unsupported = lines.items.filter((line) => line.reason === 'legacy_common_query_unsupported');
    expect(unsupported.map((line) => [line['skill_id'], line['classic'], line.level])).toEqual([
      ['cq.decorator', false, 40],
      ['cq.classic', true, 40],
    ]);
    expect(lines.items.filter((line) => line.reason === 'utterance_missing')).toEqual([]);
  });
});
