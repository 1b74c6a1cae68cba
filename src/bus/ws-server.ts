/**
 * The embedded bus server, wire-compatible with ovos-messagebus (see specs/ovos-wire-today.md, "The bus server"):
 * one route (`/core` by default), a `connected` greeting for every new client, and every valid frame re-broadcast
 * verbatim to every client, the sender included. Unlike ovos-messagebus it sets TCP_NODELAY, so a request/reply
 * round trip is not held back by Nagle + delayed ACK (~44 ms there against ~0.15 ms here).
 *
 * In-process participants (the orchestrator, the contests) attach without a socket hop: `publish` encodes once and
 * writes to every websocket client, and in-process delivery goes through a `LocalBus`, so it is FIFO and never
 * re-entrant. A frame from a client reaches the in-process subscribers after it has been re-broadcast.
 *
 * Writes are batched per client: the frames of one event-loop turn leave in one system call (see `#flush`), in the
 * order they were sent — one write per frame per client was half the daemon's CPU under load.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, WebSocket, type RawData } from 'ws';
import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import { systemClock, type Clock, type TimerId } from '../clock/clock.js';
import { LogRateLimiter } from '../log/rate-limit.js';
import type { Logger } from '../log/logger.js';
import type { Bus, BusStatus, Unsubscribe } from './bus.js';
import { FairShare, MAX_PAUSE_MS, WINDOW_MS } from './fair-share.js';
import { LocalBus } from './local-bus.js';
import { decodeFrame, encodeMessage, type FrameDropReason, type Message } from './message.js';

export interface BusServerOptions {
  readonly host: string;
  /** 0 picks an ephemeral port; read the chosen one from `BusServer.port`. */
  readonly port: number;
  readonly route: string;
  readonly maxFrameBytes: number;
  readonly logger: Logger;
  /** Ping every client this often; one that has not answered the previous ping is dropped. 0 = off. */
  readonly heartbeatMs?: number;
  /** A client with more than this queued and unsent is stalled and dropped (default 4 × maxFrameBytes). */
  readonly maxBufferedBytes?: number;
  /**
   * Browser origins (the `Origin` header) allowed to open the bus besides loopback ones (`http://localhost:3000`,
   * `http://127.0.0.1`, …: served by a program on this machine). OVOS skills and clients send none and are always
   * let in; a web page always sends its own, and one from anywhere else is refused (403): a page the user visits must
   * not drive the assistant or read its traffic. Default: none.
   */
  readonly allowedOrigins?: readonly string[];
  /** Client connections at once; past it an upgrade is refused (503) with one warn line a minute. Default 512. */
  readonly maxConnections?: number;
  /** Fair share (fair-share.ts): the longest a loud connection stays paused at a time (ms). Default `MAX_PAUSE_MS` (1,000). */
  readonly maxPauseMs?: number;
  /** Fair share's windows run on this clock (tests give a manual one). Default: the system clock. */
  readonly clock?: Clock;
  /**
   * Whether the daemon was saturated in the window just closed. Default: its event loop busy more than 90 % of the
   * window, or a client with more than `BACKLOG_BYTES` written and not yet taken by the kernel.
   */
  readonly saturated?: () => boolean;
  /**
   * Relay mode (a daemon of a cluster, src/cluster/): what a client sends and what the daemon publishes goes to the
   * relay instead of straight to this server's clients and in-process subscribers; the relay hands every daemon's
   * traffic back through `relayed`, `relayedConnection`, `admit`. Connection ids start with `connectionPrefix`.
   */
  readonly relay?: BusRelay;
  readonly connectionPrefix?: string;
}

/** Where a daemon of a cluster sends its bus traffic (src/cluster/nats-cluster.ts). */
export interface BusRelay {
  /** A valid frame a client of this server sent (`connection`), or the daemon published (undefined). */
  send(frame: Buffer, message: Message, connection: string | undefined): void;
  opened(connection: string): void;
  closed(connection: string, late: boolean, heldBack: boolean): void;
}

/** At shutdown, how long clients get to answer the close handshake before their sockets are cut. */
const CLOSE_HANDSHAKE_MS = 1_000;

/** Exactly what ovos-messagebus sends on connect. */
const GREETING = '{"type":"connected","data":{},"context":{"session":{"session_id":"default"}}}';

/** A client's gathered frames leave at once past this many bytes, not only at the end of the turn. */
const FLUSH_BYTES = 16 * 1024;

/** How much of an untrusted frame goes into a log line. */
const FRAME_LOG_CHARS = 200;

/** Dropped frames are warned at most once a minute per client and reason; the rest are counted (`suppressed`). */
const DROP_LOG_MS = 60_000;

/** A client with this much unsent makes the bus saturated (fair share): its readers are not keeping up. */
const BACKLOG_BYTES = 256 * 1024;

/** Above this share of a window spent running, the event loop is saturated. */
const BUSY_UTILIZATION = 0.9;

/** An `Origin` served from this machine: http(s) on a loopback name or address, any port. */
const LOOPBACK_ORIGIN = /^https?:\/\/(localhost|127(\.\d{1,3}){3}|\[::1\])(:\d{1,5})?$/i;

/** Whether a browser page of `origin` may open the bus: loopback origins always, others when listed. */
export function originAllowed(origin: string, allowed: ReadonlySet<string>): boolean {
  return LOOPBACK_ORIGIN.test(origin) || allowed.has(origin);
}

interface Client {
  readonly id: string;
  readonly socket: WebSocket;
  /** The TCP socket under `socket`: corked (`writableCorked`) while a batch of frames for it is being gathered. */
  readonly tcp: Socket;
  /** Connected over loopback: nothing between it and us can hold its close back while its new connection opens. */
  readonly onThisHost: boolean;
  alive: boolean;
  gone: boolean;
  /** When fair share last paused or resumed its socket (monotonic ms): its frames were held back until then. */
  heldAt: number | undefined;
  /** Frames dropped from it (malformed, not text): told in its disconnect line. */
  dropped: number;
}

export class BusServer implements Bus {
  readonly url: string;
  readonly port: number;

  readonly #http: Server;
  readonly #wss: WebSocketServer;
  readonly #route: string;
  readonly #logger: Logger;
  readonly #local: LocalBus;
  readonly #clients = new Set<Client>();
  /** Every TCP connection the http server accepted, upgraded or not, so `close` can end them all. */
  readonly #sockets = new Set<Socket>();
  #nextClientId = 1;
  /** Clients holding frames of this event-loop turn, written out (one writev each) by `#flush`. */
  readonly #corked: Client[] = [];
  #flushScheduled = false;
  #closing: Promise<void> | undefined;
  readonly #maxBufferedBytes: number;
  readonly #allowedOrigins: ReadonlySet<string>;
  /** A refused origin is warned at most once a minute per origin. */
  readonly #originLog = new LogRateLimiter(60_000);
  readonly #heartbeat: ReturnType<typeof setInterval> | undefined;
  readonly #maxConnections: number;
  readonly #limitLog = new LogRateLimiter(60_000);
  readonly #dropLog = new LogRateLimiter(DROP_LOG_MS);
  readonly #slowLog = new LogRateLimiter(60_000);
  readonly #share: FairShare<Client>;
  readonly #maxPauseMs: number;
  readonly #clock: Clock;
  readonly #saturated: () => boolean;
  #window: TimerId | undefined;
  readonly #relay: BusRelay | undefined;
  readonly #connectionPrefix: string;
  #utilization: EventLoopUtilization = performance.eventLoopUtilization();

  private constructor(http: Server, port: number, options: BusServerOptions) {
    this.#http = http;
    this.port = port;
    this.#route = options.route;
    this.#logger = options.logger;
    this.#maxBufferedBytes = options.maxBufferedBytes ?? 4 * options.maxFrameBytes;
    this.#allowedOrigins = new Set(options.allowedOrigins ?? []);
    this.#maxConnections = options.maxConnections ?? 512;
    this.#maxPauseMs = options.maxPauseMs ?? MAX_PAUSE_MS;
    this.#share = new FairShare(this.#maxPauseMs);
    this.#clock = options.clock ?? systemClock;
    this.#saturated = options.saturated ?? (() => this.#busy());
    this.#relay = options.relay;
    this.#connectionPrefix = options.connectionPrefix ?? '';
    // A half-open or frozen client must not keep its buffers (and a place in every broadcast) for ever.
    this.#heartbeat =
      options.heartbeatMs !== undefined && options.heartbeatMs > 0
        ? setInterval(() => this.#pingClients(), options.heartbeatMs).unref()
        : undefined;
    const host = options.host.includes(':') ? `[${options.host}]` : options.host;
    this.url = `ws://${host}:${port}${options.route}`;
    this.#local = new LocalBus({
      onListenerError: (error, message) => {
        this.#logger.error({ reason: 'listener_threw', type: message.type, err: error }, 'bus listener threw');
      },
    });
    this.#wss = new WebSocketServer({
      noServer: true,
      maxPayload: options.maxFrameBytes,
      perMessageDeflate: false,
    });
    http.on('connection', (socket: Socket) => {
      this.#sockets.add(socket);
      socket.once('close', () => this.#sockets.delete(socket));
    });
    http.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => this.#onUpgrade(request, socket, head));
  }

  static async start(options: BusServerOptions): Promise<BusServer> {
    const http = createServer((_request, response) => {
      // Plain HTTP is never served: only the websocket route exists.
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    });
    await new Promise<void>((resolve, reject) => {
      const onError = (error: Error): void => reject(error);
      http.once('error', onError);
      http.listen(options.port, options.host, () => {
        http.off('error', onError);
        resolve();
      });
    });
    const address = http.address();
    const port = typeof address === 'object' && address !== null ? address.port : options.port;
    const server = new BusServer(http, port, options);
    http.on('error', (error: Error) => options.logger.error({ reason: 'server_error', err: error }, 'bus server error'));
    options.logger.info({ url: server.url }, 'bus server listening');
    return server;
  }

  get clientCount(): number {
    return this.#clients.size;
  }

  /** Encode once; write to every websocket client; then deliver to in-process subscribers. */
  publish(message: Message): void {
    if (this.#closing !== undefined) {
      this.#logger.warn({ reason: 'bus_closed', type: message.type }, 'message dropped');
      return;
    }
    const frame = Buffer.from(encodeMessage(message), 'utf8');
    if (this.#relay !== undefined) {
      this.#relay.send(frame, message, undefined);
      return;
    }
    this.#broadcast(frame);
    this.#local.publish(message);
  }

  /**
   * Relay mode: a frame of the cluster's bus (any daemon's client or contests, this one's included) — to every
   * client of this server, and to the in-process subscribers when `inProcess` (a partitioned utterance entry is
   * theirs only on the daemon that owns its session: `admit`). `elsewhere`: another daemon heard it first, and
   * answers what it asks (`Bus.answeredElsewhere`).
   */
  relayed(frame: Buffer, message: Message, connection: string | undefined, inProcess: boolean, elsewhere: boolean): void {
    if (this.#closing !== undefined) return;
    this.#broadcast(frame);
    if (inProcess) this.#local.publish(message, connection, elsewhere);
  }

  /** Relay mode: a frame for this server's clients only (its utterance runs on another daemon of the cluster). */
  relayedToClients(frame: Buffer): void {
    if (this.#closing === undefined) this.#broadcast(frame);
  }

  /**
   * Relay mode: a message for the in-process subscribers only (an utterance entry taken later by its owner, run and
   * answered here; `elsewhere`: a registration replayed from the cluster's state, answered when it was made).
   */
  admit(message: Message, connection: string | undefined, elsewhere = false): void {
    if (this.#closing === undefined) this.#local.publish(message, connection, elsewhere);
  }

  /** Relay mode: a client connection of some daemon of the cluster opened or closed. */
  relayedConnection(connection: string, closed: false | { readonly late: boolean; readonly heldBack: boolean }): void {
    if (this.#closing !== undefined) return;
    if (closed === false) this.#local.openConnection(connection);
    else this.#local.closeConnection(connection, closed.late, closed.heldBack);
  }

  subscribe(listener: (message: Message) => void): Unsubscribe {
    return this.#local.subscribe(listener);
  }

  /** The client connection a delivered message arrived on (undefined for in-process publications). */
  connectionOf(message: Message): string | undefined {
    return this.#local.connectionOf(message);
  }

  answeredElsewhere(message: Message): boolean {
    return this.#local.answeredElsewhere(message);
  }

  /** A client connection opened (heard before anything it sends). */
  onConnectionOpened(listener: (connection: string) => void): Unsubscribe {
    return this.#local.onConnectionOpened(listener);
  }

  /** A client connection closed (any cause: its close, an error, a heartbeat or slow-consumer drop). */
  onConnectionClosed(listener: (connection: string, late: boolean, heldBack: boolean) => void): Unsubscribe {
    return this.#local.onConnectionClosed(listener);
  }

  /** The server itself never goes down while it runs; there is nothing to report. */
  onStatus(_listener: (status: BusStatus) => void): Unsubscribe {
    return () => {};
  }

  /** Terminates every client, stops listening. Idempotent; resolves once the port is released. */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    if (this.#heartbeat !== undefined) clearInterval(this.#heartbeat);
    if (this.#window !== undefined) this.#clock.clearTimeout(this.#window);
    this.#window = undefined;
    // Going away (1001), as RFC 6455 says a server that shuts down does; a client that does not answer the close
    // handshake within CLOSE_HANDSHAKE_MS is cut off.
    const handshakes: Array<Promise<void>> = [];
    for (const client of this.#clients) {
      client.gone = true; // shutting down: nothing is left to tell
      if (client.socket.readyState !== client.socket.OPEN) {
        client.socket.terminate();
        continue;
      }
      handshakes.push(new Promise<void>((resolve) => client.socket.once('close', () => resolve())));
      client.socket.close(1001, 'server shutting down');
    }
    if (handshakes.length > 0) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([Promise.all(handshakes), new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_HANDSHAKE_MS)))]);
      clearTimeout(timer);
    }
    for (const client of this.#clients) client.socket.terminate();
    this.#clients.clear();
    const httpClosed = new Promise<void>((resolve) => this.#http.close(() => resolve()));
    // Upgraded sockets are no longer the http server's to close; handshakes in flight and idle keep-alive
    // connections would otherwise keep `close` waiting.
    for (const socket of this.#sockets) socket.destroy();
    this.#http.closeAllConnections();
    await Promise.all([httpClosed, new Promise<void>((resolve) => this.#wss.close(() => resolve()))]);
    this.#logger.info({ url: this.url }, 'bus server closed');
  }

  #onUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    const path = new URL(request.url ?? '/', 'ws://localhost').pathname;
    if (path !== this.#route || this.#closing !== undefined) {
      const reason = this.#closing !== undefined ? 'server_closing' : 'route_not_found';
      this.#logger.warn({ reason, path, remote: remoteOf(request) }, 'websocket upgrade rejected');
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      socket.destroy();
      return;
    }
    const origin = request.headers.origin;
    if (origin !== undefined && !originAllowed(origin, this.#allowedOrigins)) {
      const { log, suppressed } = this.#originLog.shouldLog(origin, Date.now());
      if (log) this.#logger.warn({ reason: 'origin_not_allowed', origin: origin.slice(0, 200), remote: remoteOf(request), suppressed, hint: 'bus.allowedOrigins lists the browser origins allowed' }, 'websocket upgrade rejected');
      socket.end('HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      socket.destroy();
      return;
    }
    if (this.#clients.size >= this.#maxConnections) {
      const { log, suppressed } = this.#limitLog.shouldLog('limit', Date.now());
      if (log) this.#logger.warn({ reason: 'connection_limit', max_connections: this.#maxConnections, remote: remoteOf(request), suppressed, hint: 'bus.maxConnections raises it' }, 'websocket upgrade rejected: the bus has as many clients as it takes');
      socket.end('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      socket.destroy();
      return;
    }
    // ws already does this in setSocket; set it here too so the latency property never depends on a library detail.
    request.socket.setNoDelay(true);
    this.#wss.handleUpgrade(request, socket, head, (ws) => this.#onConnection(ws, request));
  }

  #onConnection(ws: WebSocket, request: IncomingMessage): void {
    const client: Client = {
      id: `${this.#connectionPrefix}${this.#nextClientId++}@${remoteOf(request)}`,
      socket: ws,
      tcp: request.socket,
      onThisHost: isLoopback(request.socket.remoteAddress),
      alive: true,
      gone: false,
      heldAt: undefined,
      dropped: 0,
    };
    ws.on('pong', () => {
      client.alive = true;
    });
    this.#clients.add(client);
    this.#logger.debug({ client: client.id }, 'bus client connected');
    if (this.#relay !== undefined) this.#relay.opened(client.id);
    else this.#local.openConnection(client.id);

    ws.on('message', (data: RawData, isBinary: boolean) => this.#onFrame(client, data, isBinary));
    ws.on('error', (error: Error & { code?: string }) => {
      const reason = error.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH' ? 'frame_too_large' : 'client_error';
      // ws closes the connection itself after a protocol error (1009 for an oversized frame).
      this.#logger.warn({ reason, client: client.id, code: error.code, err: error }, 'bus client dropped');
      this.#gone(client, false, true);
    });
    ws.on('close', (code: number) => {
      if (client.dropped > 0) this.#logger.info({ client: client.id, code, frames_dropped: client.dropped }, 'bus client disconnected');
      else this.#logger.debug({ client: client.id, code }, 'bus client disconnected');
      this.#gone(client);
    });
    ws.send(GREETING);
  }

  #onFrame(client: Client, data: RawData, isBinary: boolean): void {
    const bytes = toBuffer(data);
    this.#charge(client, bytes.length);
    if (isBinary) {
      this.#drop(client, 'frame_not_text', bytes.subarray(0, FRAME_LOG_CHARS * 4).toString('utf8'));
      return;
    }
    const text = bytes.toString('utf8');
    const decoded = decodeFrame(text);
    if (!decoded.ok) {
      // OVOS-MSG-1 §6.1: a malformed message is dropped; the transport stays up.
      this.#drop(client, decoded.reason, text);
      return;
    }
    // Verbatim: the sender's bytes, to everyone including the sender (as ovos-messagebus does).
    if (this.#relay !== undefined) {
      this.#relay.send(bytes, decoded.message, client.id);
      return;
    }
    this.#broadcast(bytes);
    this.#local.publish(decoded.message, client.id);
  }

  /**
   * Once per client, whatever ended it: no more broadcasts to it, and in-process listeners are told — `late` (see
   * `Bus.onConnectionClosed`) when only the heartbeat noticed it (the peer may have been gone since up to two
   * heartbeats), and for any peer not over loopback (another host, a container): a network outage can deliver its
   * close (a reset, a close frame retransmitted) after its bus client's new connection. `heldBack` when what it sent
   * last may have gone unread: the server cut it (`cut`: its socket terminated, what was unread thrown away), it was
   * paused, or it was held back within the longest pause and the windows that begin and end it.
   */
  #gone(client: Client, byHeartbeat = false, cut = false): void {
    const paused = this.#share.isPaused(client);
    this.#clients.delete(client);
    this.#share.forget(client);
    if (client.gone) return;
    client.gone = true;
    const late = byHeartbeat || !client.onThisHost;
    const heldBack = cut || paused || (client.heldAt !== undefined && this.#clock.monotonic() - client.heldAt <= this.#maxPauseMs + 2 * WINDOW_MS);
    if (this.#relay !== undefined) this.#relay.closed(client.id, late, heldBack);
    else this.#local.closeConnection(client.id, late, heldBack);
  }

  /** A frame dropped: warned once a minute per client and reason, the others counted into the next line. */
  #drop(client: Client, reason: FrameDropReason, frame: string): void {
    client.dropped += 1;
    const { log, suppressed } = this.#dropLog.shouldLog(`${client.id}\u0000${reason}`, Date.now());
    if (log) this.#logger.warn({ reason, client: client.id, frame: frame.slice(0, FRAME_LOG_CHARS), suppressed }, 'frame dropped');
  }

  /** Fair share: charge the frame to its client; the window closes `WINDOW_MS` after its first frame. */
  #charge(client: Client, bytes: number): void {
    if (this.#share.charge(client, bytes, this.#clients.size)) this.#hold(client, true);
    this.#window ??= this.#clock.setTimeout(this.#roll, WINDOW_MS);
  }

  readonly #roll = (): void => {
    this.#window = undefined;
    if (this.#closing !== undefined) return;
    const { pause, resume } = this.#share.roll(this.#clock.monotonic(), this.#saturated(), this.#clients.size);
    for (const client of resume) if (!client.gone) this.#hold(client, false);
    for (const { key: client, cost, share, ms } of pause) {
      if (client.gone) continue;
      this.#hold(client, true);
      const { log, suppressed } = this.#slowLog.shouldLog(client.id, Date.now());
      if (log) this.#logger.warn({ reason: 'fair_share', client: client.id, cost, share, window_ms: WINDOW_MS, paused_ms: ms, suppressed }, 'bus client slowed: it sends far more than its share while the bus is busy');
    }
    if (this.#share.charged || this.#share.paused > 0) this.#window = this.#clock.setTimeout(this.#roll, WINDOW_MS);
  };

  /** Fair share pauses (`held`) or resumes a client's socket: noted, for its close (`#gone`). */
  #hold(client: Client, held: boolean): void {
    if (held) client.socket.pause();
    else client.socket.resume();
    client.heldAt = this.#clock.monotonic();
  }

  /** The default saturation signal: the event loop busy most of the last window, or a client's backlog growing. */
  #busy(): boolean {
    const now = performance.eventLoopUtilization();
    const busy = performance.eventLoopUtilization(now, this.#utilization).utilization > BUSY_UTILIZATION;
    this.#utilization = now;
    if (busy) return true;
    for (const client of this.#clients) if (client.socket.bufferedAmount > BACKLOG_BYTES) return true;
    return false;
  }

  /** Client connections paused by fair share right now. */
  get pausedCount(): number {
    return this.#share.paused;
  }

  #broadcast(frame: Buffer): void {
    for (const client of this.#clients) {
      const { socket } = client;
      if (socket.readyState !== WebSocket.OPEN) continue;
      if (socket.bufferedAmount > this.#maxBufferedBytes) {
        // Frames gathered this turn count in bufferedAmount too: hand them to the kernel first; only a backlog the
        // kernel will not take is a client that does not read.
        this.#uncork(client);
        if (socket.bufferedAmount > this.#maxBufferedBytes) {
          this.#dropClient(client, 'slow_consumer', { buffered_bytes: socket.bufferedAmount });
          continue;
        }
      }
      // ws corks and uncorks around each frame it writes, within send(): between sends only our cork holds.
      if (client.tcp.writableCorked === 0) {
        client.tcp.cork();
        this.#corked.push(client);
      }
      socket.send(frame, { binary: false });
      // A long turn (a burst of utterances) must not hold every frame it produces until it ends: a contest's
      // deadlines run from its ping, so its ping leaves once a batch worth a system call has gathered.
      if (client.tcp.writableLength >= FLUSH_BYTES) this.#uncork(client);
    }
    if (!this.#flushScheduled && this.#corked.length > 0) {
      this.#flushScheduled = true;
      setImmediate(this.#flush);
    }
  }

  /**
   * Every frame broadcast in one turn of the event loop leaves in one write per client, after that turn's I/O
   * (`setImmediate`) or as soon as `FLUSH_BYTES` have gathered: a contest's ping, the replies it takes and the
   * messages it publishes in answer cost one system call per client instead of one per frame per client.
   */
  readonly #flush = (): void => {
    this.#flushScheduled = false;
    for (const client of this.#corked) this.#uncork(client);
    this.#corked.length = 0;
  };

  #uncork(client: Client): void {
    if (client.tcp.writableCorked > 0) client.tcp.uncork();
  }

  #pingClients(): void {
    for (const client of this.#clients) {
      if (!client.alive) {
        this.#dropClient(client, 'heartbeat_timeout', {}, true);
        continue;
      }
      client.alive = false;
      client.socket.ping();
    }
  }

  #dropClient(client: Client, reason: string, detail: Record<string, number>, byHeartbeat = false): void {
    this.#logger.warn({ reason, client: client.id, ...detail }, 'bus client dropped');
    this.#gone(client, byHeartbeat, true);
    client.socket.terminate();
  }
}

function toBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}

/** A loopback address, IPv4 (127.0.0.0/8, also IPv4-mapped) or IPv6 (::1). */
export function isLoopback(address: string | undefined): boolean {
  if (address === undefined) return false;
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return v4.startsWith('127.') || address === '::1';
}

function remoteOf(request: IncomingMessage): string {
  const { remoteAddress, remotePort } = request.socket;
  return `${remoteAddress ?? '?'}:${remotePort ?? '?'}`;
}
