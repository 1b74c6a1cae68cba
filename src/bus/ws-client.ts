/**
 * A client of an existing OVOS messagebus (or of our own `BusServer` across processes).
 *
 * Delivery: ovos-messagebus echoes every frame to its sender, so `publish` only SENDS to the socket and does not
 * deliver locally; subscribers see each message, their own publications included, exactly once, when the echo
 * arrives, and in the bus's one order (the `Bus` contract). Incoming frames are decoded at the edge (a malformed
 * one is logged and dropped, OVOS-MSG-1 §6.1) and delivered through a `LocalBus`: FIFO, never re-entrant, and a
 * throwing subscriber never affects the others.
 *
 * While the socket is down, `publish` drops the message with a `bus_down` warning: nothing is buffered, because a
 * contest that cannot reach the bus must see silence, not a late burst. The connection is kept up by a ping
 * heartbeat and re-established with exponential backoff and full jitter.
 */
import type { IncomingMessage } from 'node:http';
import { WebSocket, type RawData } from 'ws';
import type { Logger } from '../log/logger.js';
import { CodedError } from '../errors.js';
import type { Bus, BusStatus, Unsubscribe } from './bus.js';
import { LocalBus } from './local-bus.js';
import { decodeFrame, encodeMessage, type Message } from './message.js';

export interface BusClientOptions {
  readonly url: string;
  /** Ping interval; no pong by the next ping terminates the connection (then reconnect). */
  readonly heartbeatMs: number;
  readonly reconnectInitialMs: number;
  readonly reconnectMaxMs: number;
  readonly maxFrameBytes: number;
  readonly logger: Logger;
  /** Source of jitter in [0, 1); `Math.random` unless a test pins it. */
  readonly random?: () => number;
  /**
   * Acknowledge what the bus sends at once: after each batch of frames read, an unsolicited pong (RFC 6455 §5.5.3),
   * which carries the TCP acknowledgement with it. A bus that leaves Nagle's algorithm on (ovos-messagebus) holds
   * its next small frame to us until our last one is acknowledged, and the kernel delays a bare acknowledgement up to
   * 40 ms; with this, the frames a contest waits for (the pongs of its skills) are not held back. For a foreign bus.
   */
  readonly quickAck?: boolean;
}

/** Why the connection went down, as reported to `onStatus` listeners. */
export type BusDownReason = 'closed' | 'heartbeat_timeout' | 'error' | 'client_closed';

export type BusClientErrorCode = 'BUS_UP_TIMEOUT' | 'BUS_CLIENT_CLOSED';

export class BusClientError extends CodedError<BusClientErrorCode> {}

/**
 * Until the bus has been up once (a daemon or skill started before the bus, as systemd may start them), connecting
 * is retried this often, so the bus is joined within about this of it coming up; backoff is for a bus that went away.
 */
export const FIRST_JOIN_RETRY_MS = 100;

/** How long `close` waits for the server's close frame before cutting the socket. */
const CLOSE_GRACE_MS = 1000;
const FRAME_LOG_CHARS = 200;

export class BusClient implements Bus {
  readonly #options: BusClientOptions;
  readonly #logger: Logger;
  readonly #random: () => number;
  readonly #local: LocalBus;
  #statusListeners: Array<(status: BusStatus) => void> = [];
  readonly #waiters = new Set<(error?: BusClientError) => void>();

  #socket: WebSocket | undefined;
  #up = false;
  #closed = false;
  #attempt = 0;
  /** The bus has been up at least once (FIRST_JOIN_RETRY_MS until then). */
  #everUp = false;
  /** Set before we cut the socket ourselves, so the `close` event reports why. */
  #downReason: BusDownReason | undefined;
  #reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  #heartbeatTimer: ReturnType<typeof setInterval> | undefined;
  #pongSinceLastPing = true;
  /** A quick acknowledgement is due at the end of this turn (`quickAck`). */
  #ackDue = false;

  constructor(options: BusClientOptions) {
    this.#options = options;
    this.#logger = options.logger;
    this.#random = options.random ?? Math.random;
    this.#local = new LocalBus({
      onListenerError: (error, message) => {
        this.#logger.error({ reason: 'listener_threw', type: message.type, err: error }, 'bus listener threw');
      },
    });
  }

  get connected(): boolean {
    return this.#up;
  }

  /** Starts connecting and returns at once; progress is reported through `onStatus`. */
  connect(): void {
    if (this.#closed || this.#socket !== undefined || this.#reconnectTimer !== undefined) return;
    this.#open();
  }

  /** Sends only: the bus's echo is what delivers the message to this client's own subscribers. */
  publish(message: Message): void {
    const socket = this.#socket;
    if (!this.#up || socket === undefined || socket.readyState !== WebSocket.OPEN) {
      this.#logger.warn({ reason: 'bus_down', type: message.type }, 'message dropped');
      return;
    }
    socket.send(encodeMessage(message), (error) => {
      if (error) this.#logger.warn({ reason: 'send_failed', type: message.type, err: error }, 'message dropped');
    });
  }

  subscribe(listener: (message: Message) => void): Unsubscribe {
    return this.#local.subscribe(listener);
  }

  /** `{up:true}` on every open, `{up:false, reason}` when an open connection goes down. */
  onStatus(listener: (status: BusStatus) => void): Unsubscribe {
    this.#statusListeners = [...this.#statusListeners, listener];
    return () => {
      this.#statusListeners = this.#statusListeners.filter((l) => l !== listener);
    };
  }

  /** Resolves once connected; rejects with `BUS_UP_TIMEOUT` after `timeoutMs`, or `BUS_CLIENT_CLOSED`. */
  waitUntilUp(timeoutMs: number): Promise<void> {
    if (this.#up) return Promise.resolve();
    if (this.#closed) return Promise.reject(new BusClientError('BUS_CLIENT_CLOSED', 'bus client is closed'));
    return new Promise<void>((resolve, reject) => {
      const settle = (error?: BusClientError): void => {
        clearTimeout(timer);
        this.#waiters.delete(settle);
        if (error) reject(error);
        else resolve();
      };
      const timer = setTimeout(
        () => settle(new BusClientError('BUS_UP_TIMEOUT', `bus not up after ${timeoutMs} ms: ${this.#options.url}`)),
        timeoutMs,
      );
      this.#waiters.add(settle);
    });
  }

  /** Stops reconnecting, clears every timer, closes the socket. Resolves within about a second whatever the peer does. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#reconnectTimer);
    this.#reconnectTimer = undefined;
    this.#stopHeartbeat();
    for (const settle of [...this.#waiters]) settle(new BusClientError('BUS_CLIENT_CLOSED', 'bus client is closed'));
    const socket = this.#socket;
    if (socket === undefined) return;
    this.#downReason = 'client_closed';
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    let guard: ReturnType<typeof setTimeout> | undefined;
    if (socket.readyState === WebSocket.OPEN) {
      socket.close(1000);
      // A peer that never answers the close frame must not hold us: ws's own close timeout is 30 s.
      guard = setTimeout(() => socket.terminate(), CLOSE_GRACE_MS);
    } else if (socket.readyState !== WebSocket.CLOSED) {
      socket.terminate();
    } else {
      return;
    }
    await closed;
    clearTimeout(guard);
  }

  #open(): void {
    const socket = new WebSocket(this.#options.url, {
      maxPayload: this.#options.maxFrameBytes,
      perMessageDeflate: false,
    });
    this.#socket = socket;
    this.#downReason = undefined;

    socket.on('upgrade', (response: IncomingMessage) => {
      // ws sets it too; the request/reply latency of every contest depends on it, so don't rely on that.
      response.socket.setNoDelay(true);
    });
    socket.on('open', () => this.#onOpen(socket));
    socket.on('message', (data: RawData, isBinary: boolean) => {
      if (this.#options.quickAck === true) this.#ackSoon(socket);
      this.#onFrame(data, isBinary);
    });
    socket.on('pong', () => {
      this.#pongSinceLastPing = true;
    });
    socket.on('error', (error: Error & { code?: string }) => {
      this.#downReason ??= 'error';
      // Aborting a handshake in `close` raises an error that is ours, not news.
      if (this.#closed) return;
      // A failed (re)connect attempt is expected while the bus is away: one info line, no stack.
      if (!this.#up) {
        if (this.#logsAttempt()) this.#logger.info({ reason: 'connect_failed', url: this.#options.url, code: error.code, detail: error.message, attempt: this.#attempt + 1 }, 'bus not reachable');
      }
      else this.#logger.warn({ reason: 'error', url: this.#options.url, code: error.code, err: error }, 'bus socket error');
    });
    socket.on('close', (code: number) => this.#onClose(socket, code));
  }

  /** One pong for all the frames of one read (`quickAck`): sent when this turn's frames have been handled. */
  #ackSoon(socket: WebSocket): void {
    if (this.#ackDue) return;
    this.#ackDue = true;
    setImmediate(() => {
      this.#ackDue = false;
      if (socket === this.#socket && socket.readyState === WebSocket.OPEN) socket.pong();
    });
  }

  #onOpen(socket: WebSocket): void {
    if (socket !== this.#socket) return;
    this.#up = true;
    this.#everUp = true;
    this.#attempt = 0;
    this.#logger.info({ url: this.#options.url }, 'bus connected');
    this.#startHeartbeat(socket);
    this.#notify({ up: true });
    for (const settle of [...this.#waiters]) settle();
  }

  #onClose(socket: WebSocket, code: number): void {
    if (socket !== this.#socket) return;
    this.#socket = undefined;
    this.#stopHeartbeat();
    const reason = this.#downReason ?? 'closed';
    this.#downReason = undefined;
    const wasUp = this.#up;
    this.#up = false;
    if (wasUp) {
      this.#logger[reason === 'client_closed' ? 'info' : 'warn']({ reason, code, url: this.#options.url }, 'bus disconnected');
      this.#notify({ up: false, reason });
    }
    if (!this.#closed) this.#scheduleReconnect();
  }

  /** Before the first join, retries are frequent: only attempts 1, 2, 4, 8, … are logged. */
  #logsAttempt(): boolean {
    const attempt = this.#attempt + 1;
    return this.#everUp || (attempt & (attempt - 1)) === 0;
  }

  #scheduleReconnect(): void {
    const { reconnectInitialMs, reconnectMaxMs } = this.#options;
    // Never up yet: a steady short retry. Then full jitter: uniform over [0, min(cap, base * 2^attempt)).
    const ceilingMs = Math.min(reconnectMaxMs, reconnectInitialMs * 2 ** this.#attempt);
    const delayMs = this.#everUp ? Math.round(this.#random() * ceilingMs) : Math.min(FIRST_JOIN_RETRY_MS, reconnectInitialMs);
    const log = this.#logsAttempt();
    this.#attempt += 1;
    if (log) this.#logger.info({ url: this.#options.url, attempt: this.#attempt, delay_ms: delayMs }, 'bus reconnect scheduled');
    this.#reconnectTimer = setTimeout(() => {
      this.#reconnectTimer = undefined;
      if (!this.#closed) this.#open();
    }, delayMs);
  }

  #startHeartbeat(socket: WebSocket): void {
    this.#pongSinceLastPing = true;
    this.#heartbeatTimer = setInterval(() => {
      if (!this.#pongSinceLastPing) {
        this.#downReason = 'heartbeat_timeout';
        socket.terminate();
        return;
      }
      this.#pongSinceLastPing = false;
      socket.ping();
    }, this.#options.heartbeatMs);
  }

  #stopHeartbeat(): void {
    clearInterval(this.#heartbeatTimer);
    this.#heartbeatTimer = undefined;
  }

  #onFrame(data: RawData, isBinary: boolean): void {
    const bytes = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
    const text = bytes.toString('utf8');
    const decoded = isBinary ? ({ ok: false, reason: 'frame_not_text' } as const) : decodeFrame(text);
    if (!decoded.ok) {
      // OVOS-MSG-1 §6.1: dropped; the connection stays.
      this.#logger.warn(
        { reason: decoded.reason, url: this.#options.url, frame: text.slice(0, FRAME_LOG_CHARS) },
        'frame dropped',
      );
      return;
    }
    this.#local.publish(decoded.message);
  }

  #notify(status: BusStatus): void {
    for (const listener of this.#statusListeners) {
      try {
        listener(status);
      } catch (error) {
        this.#logger.error({ reason: 'listener_threw', status, err: error }, 'bus status listener threw');
      }
    }
  }
}
