/**
 * Integration-test helpers over real websockets: a raw `ws` client of the bus that records every frame it is sent
 * (the greeting included), waits on predicates instead of sleeping, and a config builder that goes through the
 * project's own validation. Every wait has a generous timeout, as a failure guard only.
 */
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { pino } from 'pino';
import { WebSocket, type RawData } from 'ws';
import { decodeFrame, encodeMessage, utteranceIdOf, type JsonObject, type Message } from '../../src/bus/message.js';
import { DEFAULT_CONFIG, type Config } from '../../src/config/defaults.js';
import { mergeConfig, validateConfig } from '../../src/config/config.js';
import type { Logger } from '../../src/log/logger.js';

/** How long any single wait may take before the test fails (never a pacing device). */
export { GUARD_MS, Recorder } from '../support/recorder.js';
import { GUARD_MS, Recorder } from '../support/recorder.js';

/** Rejects if `promise` has not settled within `ms`. */
export async function within<T>(promise: Promise<T>, ms: number, label: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const guard = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${label}`)), ms);
  });
  try {
    return await Promise.race([promise, guard]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * DEFAULT_CONFIG with `override` merged over it, validated exactly as the daemon validates a config file. The
 * inspector is on, as for `npm start`, but on a free port (tests run in parallel); no registry file unless a test asks.
 */
export function configWith(override: Record<string, unknown>): Config {
  const base = validateConfig(mergeConfig(DEFAULT_CONFIG, { inspector: { port: 0 }, fallback: { registryFile: null } }, 'test'));
  return validateConfig(mergeConfig(base, override, 'test'));
}

export type LogLine = Record<string, unknown> & { readonly level: number; readonly msg?: string; readonly reason?: string };

/** A pino logger writing JSON lines into memory. */
export function captureLogs(level: 'debug' | 'info' = 'debug'): { readonly logger: Logger; readonly lines: Recorder<LogLine> } {
  const lines = new Recorder<LogLine>();
  const logger = pino({ level }, { write: (chunk: string) => lines.push(JSON.parse(chunk) as LogLine) });
  return { logger, lines };
}

/** A port that was free a moment ago on 127.0.0.1 (listen on 0, read it, close). */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** One frame as the probe received it: the text, and the message when it decodes. */
export interface Frame {
  readonly text: string;
  readonly message: Message | undefined;
}

export interface UtterOptions {
  readonly utteranceId: string;
  readonly session?: JsonObject;
  readonly lang?: string;
}

/** A raw `ws` client of the bus, as any OVOS participant would be. */
export class Probe {
  readonly frames = new Recorder<Frame>();
  readonly #socket: WebSocket;
  #closeCode: number | undefined;

  private constructor(socket: WebSocket) {
    this.#socket = socket;
    // Listening from construction, so the very first frame (the greeting) is recorded too.
    socket.on('message', (data: RawData) => {
      const text = rawText(data);
      const decoded = decodeFrame(text);
      this.frames.push({ text, message: decoded.ok ? decoded.message : undefined });
    });
    socket.on('close', (code: number) => {
      this.#closeCode = code;
    });
  }

  /** `autoPong: false`: a peer that stops answering the bus server's heartbeat (hung, or its network gone). */
  static async connect(url: string, handshakeTimeoutMs = GUARD_MS, options: { readonly autoPong?: boolean } = {}): Promise<Probe> {
    const socket = new WebSocket(url, { handshakeTimeout: handshakeTimeoutMs, perMessageDeflate: false, autoPong: options.autoPong ?? true });
    const probe = new Probe(socket);
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', (error) => reject(error));
    });
    return probe;
  }

  /** The close code the connection ended with (undefined while open). */
  get closeCode(): number | undefined {
    return this.#closeCode;
  }

  /** Resolves at the next ping the bus server's heartbeat sends this connection. */
  pinged(): Promise<void> {
    return once(this.#socket, 'ping').then(() => undefined);
  }

  /** Resolves with the close code once the connection has ended. */
  closed(): Promise<number> {
    if (this.#closeCode !== undefined) return Promise.resolve(this.#closeCode);
    return once(this.#socket, 'close').then(([code]) => code as number);
  }

  /** Open and never closed by the peer. */
  get open(): boolean {
    return this.#closeCode === undefined && this.#socket.readyState === WebSocket.OPEN;
  }

  /** Decoded messages received so far, in order. */
  get messages(): Message[] {
    return this.frames.items.flatMap((frame) => (frame.message === undefined ? [] : [frame.message]));
  }

  sendText(text: string): void {
    this.#socket.send(text);
  }

  send(message: Message): void {
    this.#socket.send(encodeMessage(message));
  }

  /** `ovos.utterance.handle` with the given utterance_id (OVOS-MSG-1 §4.2: the orchestrator keeps it). */
  utter(utterance: string, options: UtterOptions): void {
    const context: JsonObject = {
      source: 'probe',
      destination: 'orchestrator',
      session: options.session ?? { session_id: 'default' },
      utterance_id: options.utteranceId,
    };
    const data: JsonObject = options.lang === undefined ? { utterances: [utterance] } : { utterances: [utterance], lang: options.lang };
    this.send({ type: 'ovos.utterance.handle', data, context });
  }

  /** Every message of one utterance lifecycle, in arrival order. */
  of(utteranceId: string): Message[] {
    return this.messages.filter((message) => utteranceIdOf(message) === utteranceId);
  }

  typesOf(utteranceId: string): string[] {
    return this.of(utteranceId).map((message) => message.type);
  }

  waitFor(predicate: (message: Message) => boolean, label: string, timeoutMs = GUARD_MS): Promise<Message> {
    return this.frames
      .waitFor((frame) => frame.message !== undefined && predicate(frame.message), label, 0, timeoutMs)
      .then((frame) => frame.message!);
  }

  /** The one `ovos.utterance.handled` of an utterance. */
  handled(utteranceId: string, timeoutMs = GUARD_MS): Promise<Message> {
    return this.waitFor(
      (message) => message.type === 'ovos.utterance.handled' && utteranceIdOf(message) === utteranceId,
      `ovos.utterance.handled of ${utteranceId}`,
      timeoutMs,
    );
  }

  /**
   * A round trip through the bus: resolves once our own marker frame comes back. Everything the bus sent us before
   * it processed the marker has then been received, so counts taken afterwards are complete up to that point.
   */
  async barrier(): Promise<void> {
    const id = randomUUID();
    this.send({ type: 'probe.barrier', data: {}, context: { barrier_id: id } });
    await this.waitFor((message) => message.type === 'probe.barrier' && message.context['barrier_id'] === id, 'barrier echo');
  }

  async close(): Promise<void> {
    if (this.#socket.readyState === WebSocket.CLOSED) return;
    const closed = once(this.#socket, 'close');
    if (this.#socket.readyState === WebSocket.OPEN) this.#socket.close(1000);
    else this.#socket.terminate();
    const guard = setTimeout(() => this.#socket.terminate(), 1000);
    await closed;
    clearTimeout(guard);
  }
}

/** `utterance` of an `ovos.utterance.speak`, or undefined for anything else. */
export function spoken(message: Message): string | undefined {
  if (message.type !== 'ovos.utterance.speak') return undefined;
  const text = message.data['utterance'];
  return typeof text === 'string' ? text : undefined;
}

function rawText(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}

/**
 * "do a barrel roll" with the example skills, as every client sees it: the gate keeps common query out, the
 * high-tier skill declines, the catch-all in fallback_low answers (OVOS-FALLBACK-1 §3.3, §8.2; PIPELINE-1 §6–§8).
 */
export const BARREL_ROLL_TIMELINE: readonly string[] = [
  'ovos.utterance.handle',
  'meaning-of-life.example.fallback.ping',
  'meaning-of-life.example.fallback.pong',
  'dont-know.example.fallback.ping',
  'dont-know.example.fallback.pong',
  'ovos.intent.matched',
  'dont-know.example:fallback',
  'ovos.intent.handler.start',
  'ovos.utterance.speak',
  'mycroft.skill.handler.complete',
  'ovos.intent.handler.complete',
  'ovos.utterance.handled',
];
