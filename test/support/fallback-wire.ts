/**
 * Helpers for driving the whole system (test/support/harness.ts) from a model: fallback skills played by the test,
 * each over its own client connection (`conn-<skill_id>`), and the wire as a per-session timeline with clock times.
 *
 * A `ScriptedSkill` registers at once and then answers nothing by itself unless told to (`autoPong`, `autoHandle`):
 * a model path decides every pong, completion and connection close. Every message it sends is derived from the
 * message it answers (`reply`, OVOS-MSG-1 §5), so it carries that message's session, utterance_id and contest_id.
 */
import { createMessage, forward, reply, stringField, type Json, type Message } from '../../src/bus/message.js';
import type { Harness } from './harness.js';

/** A message as seen on the wire, with the clock time (ms since `t0`) it was delivered at. */
export interface Stamped {
  readonly at: number;
  readonly message: Message;
}

/** Record every message on the bus with the harness clock (LocalBus delivers in the same tick it was published). */
export function stampWire(h: Harness, t0: () => number): Stamped[] {
  const stamped: Stamped[] = [];
  h.bus.subscribe((message) => stamped.push({ at: h.clock.now() - t0(), message }));
  return stamped;
}

export function sessionIdOfMessage(message: Message): string | undefined {
  const session = message.context['session'];
  if (typeof session !== 'object' || session === null || Array.isArray(session)) return undefined;
  return typeof session['session_id'] === 'string' ? session['session_id'] : 'default';
}

/**
 * What a user of the bus sees of one session's utterances: fallback pings, dispatches, ovos.intent.matched, the
 * handler trio, ovos.intent.unmatched and ovos.utterance.handled, in order, each with its time and the fields
 * a model predicts. Skills' own messages (pongs, completion signals, speak) are left out. `u` is the ordinal of the
 * entry's context.utterance_id among the session's utterance_ids in order of first appearance (1, 2, …; 0 when
 * the message carries none), so a model can predict it without knowing the stamped ids.
 */
export interface TimelineEntry {
  readonly at: number;
  readonly type: string;
  readonly u: number;
  readonly skill_id?: Json;
  readonly intent_name?: Json;
  readonly pipeline_id?: Json;
  readonly exception?: unknown;
  readonly utterances?: Json;
  readonly lang?: Json;
}

const TRIO = new Set(['ovos.intent.handler.start', 'ovos.intent.handler.complete', 'ovos.intent.handler.error']);

export function timeline(stamped: readonly Stamped[], sessionId: string): TimelineEntry[] {
  const entries: TimelineEntry[] = [];
  const ordinals = new Map<string, number>();
  for (const { at, message } of stamped) {
    if (sessionIdOfMessage(message) !== sessionId) continue;
    const { type, data } = message;
    const id = stringField(message.context, 'utterance_id');
    if (id !== undefined && !ordinals.has(id)) ordinals.set(id, ordinals.size + 1);
    const u = id === undefined ? 0 : ordinals.get(id)!;
    if (type.endsWith('.fallback.ping')) {
      entries.push({ at, type, u, utterances: data['utterances'] ?? null, lang: data['lang'] ?? null });
    } else if (type.endsWith(':fallback')) {
      entries.push({ at, type, u });
    } else if (type === 'ovos.intent.matched') {
      entries.push({ at, type, u, skill_id: data['skill_id'] ?? null, intent_name: data['intent_name'] ?? null, pipeline_id: data['pipeline_id'] ?? null });
    } else if (TRIO.has(type)) {
      const entry = { at, type, u, skill_id: data['skill_id'] ?? null, intent_name: data['intent_name'] ?? null };
      entries.push(type === 'ovos.intent.handler.error' ? { ...entry, exception: data['exception'] ?? null } : entry);
    } else if (type === 'ovos.intent.unmatched' || type === 'ovos.utterance.handled') {
      entries.push({ at, type, u });
    }
  }
  return entries;
}

export interface ScriptedSkillOptions {
  readonly priority: number;
  /** Sessions to register in (OVOS-FALLBACK-1 §3.4); default ["default"]. */
  readonly sessions?: readonly string[];
  /** Answer each ping by itself at once (true / false), or stay silent; absent: the test answers. */
  readonly autoPong?: (ping: Message) => boolean | 'silent';
  /** Finish each dispatch by itself at once; absent: the test finishes it. */
  readonly autoHandle?: (dispatch: Message) => 'complete' | 'error' | 'silent';
}

export class ScriptedSkill {
  readonly pings: Stamped[] = [];
  readonly dispatches: Stamped[] = [];
  readonly connection: string;
  #closed = false;
  readonly #h: Harness;

  constructor(
    h: Harness,
    readonly id: string,
    readonly options: ScriptedSkillOptions,
  ) {
    this.#h = h;
    this.connection = `conn-${id}`;
    h.bus.subscribe((message) => {
      if (this.#closed) return;
      if (message.type === `${id}.fallback.ping`) {
        this.pings.push({ at: h.clock.now(), message });
        const verdict = options.autoPong?.(message) ?? 'silent';
        if (verdict !== 'silent') this.pong(message, verdict);
      } else if (message.type === `${id}:fallback`) {
        this.dispatches.push({ at: h.clock.now(), message });
        const outcome = options.autoHandle?.(message) ?? 'silent';
        if (outcome === 'complete') this.complete(message);
        else if (outcome === 'error') this.fail(message);
      }
    });
    for (const session_id of options.sessions ?? ['default']) {
      this.#publish(createMessage('ovos.fallback.register', { skill_id: id, priority: options.priority }, { skill_id: id, session: { session_id } }));
    }
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** The most recent ping this skill received (in `sessionId`, when given). */
  lastPing(sessionId?: string): Message {
    const found = [...this.pings].reverse().find((p) => sessionId === undefined || sessionIdOfMessage(p.message) === sessionId);
    if (found === undefined) throw new Error(`${this.id} was never pinged${sessionId === undefined ? '' : ` in ${sessionId}`}`);
    return found.message;
  }

  lastDispatch(sessionId?: string): Message {
    const found = [...this.dispatches].reverse().find((d) => sessionId === undefined || sessionIdOfMessage(d.message) === sessionId);
    if (found === undefined) throw new Error(`${this.id} was never dispatched to${sessionId === undefined ? '' : ` in ${sessionId}`}`);
    return found.message;
  }

  /**
   * `<own id>.fallback.pong` derived by reply from `ping` — its own ping, or (an unsolicited pong) the ping another
   * skill received, which names that skill's contest.
   */
  pong(ping: Message, canHandle: boolean): void {
    this.#publish(reply(ping, `${this.id}.fallback.pong`, { skill_id: this.id, can_handle: canHandle }));
  }

  /** The handler ran: a spoken line, then the completion signal, both derived from the dispatch. */
  complete(dispatch: Message): void {
    this.#publish(forward(dispatch, 'ovos.utterance.speak', { utterance: `${this.id} answers` }));
    this.#publish(reply(dispatch, 'mycroft.skill.handler.complete', {}));
  }

  fail(dispatch: Message, exception = 'boom'): void {
    this.#publish(reply(dispatch, 'mycroft.skill.handler.error', { exception }));
  }

  /** The skill's client connection closes (the process died); it sends nothing more. */
  close(): void {
    this.#closed = true;
    this.#h.bus.closeConnection(this.connection);
  }

  #publish(message: Message): void {
    if (this.#closed) throw new Error(`${this.id}: connection already closed`);
    this.#h.bus.publish(message, this.connection);
  }
}
