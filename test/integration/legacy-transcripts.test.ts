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
import { Probe, configWith } from './probe.js';

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
