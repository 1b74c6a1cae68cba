/**
 * The bus client against real websockets on 127.0.0.1, ephemeral ports: our own BusServer (which echoes like
 * ovos-messagebus) and, where the peer must misbehave, a raw `ws` server. Nothing here sleeps: every wait is on an
 * event, with a generous timeout only as a failure guard.
 */
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { WebSocketServer, type WebSocket } from 'ws';
import type { BusStatus } from '../../src/bus/bus.js';
import { createMessage, type Message } from '../../src/bus/message.js';
import { BusClient, FIRST_JOIN_RETRY_MS, BusClientError, type BusClientOptions } from '../../src/bus/ws-client.js';
import { BusServer } from '../../src/bus/ws-server.js';
import type { Logger } from '../../src/log/logger.js';
import { GUARD_MS, Recorder } from '../support/recorder.js';

const WARN = 40;
const ERROR = 50;
const INFO = 30;


type LogLine = Record<string, unknown> & { level: number; msg?: string; reason?: string; delay_ms?: number };

function captureLogs(): { logger: Logger; lines: Recorder<LogLine> } {
  const lines = new Recorder<LogLine>();
  const logger = pino({ level: 'debug' }, { write: (chunk: string) => lines.push(JSON.parse(chunk) as LogLine) });
  return { logger, lines };
}

const cleanups: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function startServer(port = 0): Promise<BusServer> {
  const server = await BusServer.start({
    host: '127.0.0.1',
    port,
    route: '/core',
    maxFrameBytes: 1024 * 1024,
    logger: pino({ level: 'silent' }),
  });
  cleanups.push(() => server.close());
  return server;
}

/** A raw ws server for peers that must misbehave; `autoPong: false` makes it ignore pings. */
async function startRawServer(options: { autoPong: boolean }): Promise<{ wss: WebSocketServer; url: string }> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, path: '/core', autoPong: options.autoPong });
  await once(wss, 'listening');
  cleanups.push(async () => {
    for (const socket of wss.clients) socket.terminate();
    await new Promise<void>((resolve) => wss.close(() => resolve()));
  });
  const address = wss.address();
  if (address === null || typeof address === 'string') throw new Error('expected a TCP address');
  return { wss, url: `ws://127.0.0.1:${address.port}/core` };
}

interface Harness {
  readonly client: BusClient;
  readonly messages: Recorder<Message>;
  readonly statuses: Recorder<BusStatus>;
  readonly logs: Recorder<LogLine>;
}

function makeClient(url: string, overrides: Partial<BusClientOptions> = {}): Harness {
  const { logger, lines } = captureLogs();
  const client = new BusClient({
    url,
    heartbeatMs: 60_000,
    reconnectInitialMs: 20,
    reconnectMaxMs: 100,
    maxFrameBytes: 1024 * 1024,
    logger,
    random: () => 1,
    ...overrides,
  });
  const messages = new Recorder<Message>();
  const statuses = new Recorder<BusStatus>();
  client.subscribe((message) => messages.push(message));
  client.onStatus((status) => statuses.push(status));
  cleanups.push(() => client.close());
  return { client, messages, statuses, logs: lines };
}

async function connected(url: string, overrides: Partial<BusClientOptions> = {}): Promise<Harness> {
  const harness = makeClient(url, overrides);
  harness.client.connect();
  await harness.client.waitUntilUp(GUARD_MS);
  return harness;
}

/** A port nothing listens on: bind one, then release it. */
async function freePort(): Promise<number> {
  const server = await BusServer.start({
    host: '127.0.0.1',
    port: 0,
    route: '/core',
    maxFrameBytes: 1024,
    logger: pino({ level: 'silent' }),
  });
  await server.close();
  return server.port;
}

describe('BusClient', () => {
  it('Bus contract: a publication reaches its own subscribers exactly once, through the bus echo', async () => {
    const server = await startServer();
    const inServer = new Recorder<Message>();
    cleanups.push(server.subscribe((message) => inServer.push(message)));
    const { client, messages } = await connected(server.url);

    const message = createMessage('test.once', { n: 1 }, { session: { session_id: 's1' } });
    client.publish(message);
    expect(await inServer.waitFor((m) => m.type === 'test.once', 'server saw it')).toEqual(message);
    // The server has written the echo before its in-process delivery; a frame it publishes now follows the echo
    // on the same connection, so once that barrier is here, the echo (and any local duplicate) is too.
    server.publish(createMessage('test.barrier'));
    await messages.waitFor((m) => m.type === 'test.barrier', 'barrier');
    expect(messages.items.filter((m) => m.type === 'test.once')).toEqual([message]);
  });

  it('ovos-messagebus: the connected greeting is delivered like any other message', async () => {
    const server = await startServer();
    const { messages } = await connected(server.url);
    const greeting = await messages.waitFor((m) => m.type === 'connected', 'greeting');
    expect(greeting).toEqual({ type: 'connected', data: {}, context: { session: { session_id: 'default' } } });
  });

  it('Bus contract: messages published by other participants arrive once, in order', async () => {
    const server = await startServer();
    const { messages } = await connected(server.url);
    for (let n = 0; n < 20; n++) server.publish(createMessage('test.seq', { n }));
    await messages.waitFor((m) => m.type === 'test.seq' && m.data['n'] === 19, 'last of sequence');
    expect(messages.items.filter((m) => m.type === 'test.seq').map((m) => m.data['n'])).toEqual(
      Array.from({ length: 20 }, (_, n) => n),
    );
  });

  it('LocalBus rules: a throwing subscriber is logged (listener_threw) and never affects the others', async () => {
    const server = await startServer();
    const { client, messages, logs } = await connected(server.url);
    client.subscribe(() => {
      throw new Error('boom');
    });
    server.publish(createMessage('test.after-throw'));
    await messages.waitFor((m) => m.type === 'test.after-throw', 'delivery past the throwing subscriber');
    const line = await logs.waitFor((l) => l.reason === 'listener_threw', 'listener_threw log');
    expect(line.level).toBe(ERROR);
    expect(client.connected).toBe(true);
  });

  it('OVOS-MSG-1 §6.1: a malformed frame from the bus is dropped with a warning and the connection stays', async () => {
    const { wss, url } = await startRawServer({ autoPong: true });
    wss.on('connection', (socket: WebSocket) => {
      socket.send('{"type": oops');
      socket.send('{"type":"x","data":"not an object"}');
      socket.send('{"type":"test.good"}');
    });
    const { client, messages, logs } = await connected(url);
    await messages.waitFor((m) => m.type === 'test.good', 'good frame');
    expect(messages.items.map((m) => m.type)).toEqual(['test.good']);
    const drops = logs.items.filter((l) => l.msg === 'frame dropped');
    expect(drops.map((l) => l.reason)).toEqual(['frame_not_json', 'data_not_object']);
    expect(drops.every((l) => l.level === WARN)).toBe(true);
    expect(drops[0]?.frame).toBe('{"type": oops');
    expect(client.connected).toBe(true);
  });

  it('publish while the bus is down drops the message with a bus_down warning: never throws, never buffers', async () => {
    const server = await startServer();
    const { client, messages, logs } = makeClient(server.url);

    expect(() => client.publish(createMessage('test.while-down'))).not.toThrow();
    const line = await logs.waitFor((l) => l.reason === 'bus_down', 'bus_down log');
    expect(line).toMatchObject({ level: WARN, reason: 'bus_down', type: 'test.while-down' });

    client.connect();
    await client.waitUntilUp(GUARD_MS);
    client.publish(createMessage('test.barrier'));
    await messages.waitFor((m) => m.type === 'test.barrier', 'barrier');
    expect(messages.items.some((m) => m.type === 'test.while-down')).toBe(false);
  });

  it('status: {up:true} on open, {up:false, reason:"client_closed"} on close; close is idempotent', async () => {
    const server = await startServer();
    const { client, statuses } = await connected(server.url);
    expect(client.connected).toBe(true);
    await Promise.all([client.close(), client.close()]);
    expect(client.connected).toBe(false);
    expect(statuses.items).toEqual([{ up: true }, { up: false, reason: 'client_closed' }]);
  });

  it('status: a throwing status listener is logged and the other listeners are still told', async () => {
    const server = await startServer();
    const { client, statuses, logs } = makeClient(server.url);
    client.onStatus(() => {
      throw new Error('boom');
    });
    const later = new Recorder<BusStatus>();
    client.onStatus((status) => later.push(status));
    client.connect();
    await later.waitFor((s) => s.up, 'up for the later listener');
    expect(statuses.items).toEqual([{ up: true }]);
    const line = await logs.waitFor((l) => l.reason === 'listener_threw', 'listener_threw log');
    expect(line.level).toBe(ERROR);
  });

  it('reconnect: after the bus goes away and comes back on the same port, the client is up again', async () => {
    const server = await startServer();
    const port = server.port;
    const { client, statuses, messages, logs } = await connected(server.url);

    await server.close();
    expect(await statuses.waitFor((s) => !s.up, 'down')).toEqual({ up: false, reason: 'closed' });
    // At least two failed attempts, so the backoff is visible before the bus returns.
    const schedules = () => logs.items.filter((l) => l.msg === 'bus reconnect scheduled');
    await logs.waitFor((l) => l.msg === 'bus reconnect scheduled' && l.attempt === 2, 'second reconnect');

    const revived = await startServer(port);
    await statuses.waitFor((s) => s.up, 'up again', 2);
    expect(client.connected).toBe(true);
    revived.publish(createMessage('test.after-reconnect'));
    await messages.waitFor((m) => m.type === 'test.after-reconnect', 'message after reconnect');

    // Exponential backoff with full jitter, random() = 1: min(100, 20 * 2^attempt).
    const delays = schedules().map((l) => l.delay_ms);
    expect(delays.slice(0, 4)).toEqual([20, 40, 80, 100].slice(0, delays.length));
    expect(schedules().every((l) => l.level === INFO)).toBe(true);

    // A successful open resets the backoff.
    const before = logs.items.length;
    await revived.close();
    const next = await logs.waitFor((l) => l.msg === 'bus reconnect scheduled', 'reconnect after reset', before);
    expect(next.delay_ms).toBe(20);
  });

  it('reconnect: full jitter scales the delay by random() once the bus has been up', async () => {
    const server = await startServer();
    const { client, logs } = await connected(server.url, { random: () => 0.5 });
    await server.close();
    await logs.waitFor((l) => l.msg === 'bus reconnect scheduled' && l.attempt === 3, 'third attempt');
    const delays = logs.items.filter((l) => l.msg === 'bus reconnect scheduled').map((l) => l.delay_ms);
    expect(delays.slice(0, 3)).toEqual([10, 20, 40]);
    expect(client.connected).toBe(false);
  });

  it('first join: a bus never up yet (started after us, as systemd may) is retried every 100 ms, not with backoff, and logged at attempts 1, 2, 4, 8 only', async () => {
    const port = await freePort();
    const { client, logs, statuses } = makeClient(`ws://127.0.0.1:${port}/core`, { reconnectInitialMs: 500, reconnectMaxMs: 30_000 });
    client.connect();
    await logs.waitFor((l) => l.msg === 'bus reconnect scheduled' && l.attempt === 8, 'eighth attempt');
    const scheduled = logs.items.filter((l) => l.msg === 'bus reconnect scheduled');
    expect(scheduled.map((l) => l.attempt)).toEqual([1, 2, 4, 8]);
    expect(scheduled.every((l) => l.delay_ms === FIRST_JOIN_RETRY_MS)).toBe(true);
    expect(logs.items.filter((l) => l.reason === 'connect_failed').map((l) => l.attempt)).toEqual([1, 2, 4, 8]);
    // The bus comes up: joined at the next retry.
    const server = await startServer(port);
    await statuses.waitFor((s) => s.up, 'up');
    await server.close();
    // Once it has been up, a bus that goes away is retried with backoff (500 ms × random 1 the first time).
    const first = await logs.waitFor((l) => l.msg === 'bus reconnect scheduled' && l.delay_ms !== FIRST_JOIN_RETRY_MS, 'backoff');
    expect(first.delay_ms).toBe(500);
  });

  it('heartbeat: a bus that never answers pings is cut (heartbeat_timeout) and reconnected to', async () => {
    const { wss, url } = await startRawServer({ autoPong: false });
    const { statuses, logs } = await connected(url, { heartbeatMs: 30 });
    const serverSawClose = new Promise<void>((resolve) => {
      for (const socket of wss.clients) socket.once('close', () => resolve());
    });

    expect(await statuses.waitFor((s) => !s.up, 'down')).toEqual({ up: false, reason: 'heartbeat_timeout' });
    const line = await logs.waitFor((l) => l.reason === 'heartbeat_timeout', 'heartbeat log');
    expect(line.level).toBe(WARN);
    await serverSawClose;
    // The cut connection is replaced by a new one.
    await statuses.waitFor((s) => s.up, 'up again', 2);
  });

  it('heartbeat: a bus that answers pings keeps the connection', async () => {
    const { wss, url } = await startRawServer({ autoPong: true });
    const pings = new Recorder<number>();
    wss.on('connection', (socket: WebSocket) => socket.on('ping', () => pings.push(Date.now())));
    const { client, statuses } = await connected(url, { heartbeatMs: 20 });
    await pings.waitFor(() => pings.items.length >= 5, 'five pings');
    expect(client.connected).toBe(true);
    expect(statuses.items).toEqual([{ up: true }]);
  });

  it('quickAck: frames read are acknowledged at once by an unsolicited pong, one per read batch; none without frames or without the option', async () => {
    const { wss, url } = await startRawServer({ autoPong: true });
    const pongs = new Recorder<number>();
    const sockets: WebSocket[] = [];
    wss.on('connection', (socket: WebSocket) => {
      sockets.push(socket);
      socket.on('pong', () => pongs.push(sockets.indexOf(socket)));
    });
    const quick = await connected(url, { quickAck: true });
    const plain = await connected(url);
    expect(sockets).toHaveLength(2);
    const frame = JSON.stringify(createMessage('speak', { utterance: 'hi' }, {}));
    sockets[0]!.send(frame);
    await pongs.waitFor(() => pongs.items.length >= 1, 'the pong after the frame');
    await quick.messages.waitFor(() => quick.messages.items.length >= 1, 'the frame');
    // Three frames written together arrive in one read: one pong for them.
    sockets[0]!.send(frame);
    sockets[0]!.send(frame);
    sockets[0]!.send(frame);
    await quick.messages.waitFor(() => quick.messages.items.length >= 4, 'the three frames');
    await pongs.waitFor(() => pongs.items.length >= 2, 'their pong');
    expect(pongs.items.length).toBeLessThanOrEqual(4);
    // Without the option: frames read, no pong (the heartbeat's own pings are answered by the server, not the client).
    sockets[1]!.send(frame);
    await plain.messages.waitFor(() => plain.messages.items.length >= 1, 'the frame to the plain client');
    sockets[0]!.send(frame); // a marker: its pong comes after anything the plain client would have sent before
    await pongs.waitFor(() => pongs.items.length >= 3, 'the marker\'s pong');
    expect(pongs.items.filter((i) => i === 1)).toEqual([]);
  });

  it('waitUntilUp rejects with BUS_UP_TIMEOUT when the bus is unreachable, and close stops the retries', async () => {
    const port = await freePort();
    const { client, logs } = makeClient(`ws://127.0.0.1:${port}/core`);
    client.connect();
    const error = await client.waitUntilUp(50).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BusClientError);
    expect((error as BusClientError).code).toBe('BUS_UP_TIMEOUT');

    const pending = client.waitUntilUp(GUARD_MS).catch((e: unknown) => e);
    await client.close();
    expect(((await pending) as BusClientError).code).toBe('BUS_CLIENT_CLOSED');
    const scheduled = logs.items.filter((l) => l.msg === 'bus reconnect scheduled').length;
    client.connect();
    client.publish(createMessage('test.after-close'));
    expect(logs.items.filter((l) => l.msg === 'bus reconnect scheduled').length).toBe(scheduled);
    expect(client.connected).toBe(false);
  });
});
