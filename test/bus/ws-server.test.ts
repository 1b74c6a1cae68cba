/**
 * The embedded server against real websockets on 127.0.0.1, ephemeral ports. Nothing here sleeps: every wait is
 * on an event, with a generous timeout only as a failure guard.
 */
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { WebSocket } from 'ws';
import { BusServer, isLoopback } from '../../src/bus/ws-server.js';
import { networkInterfaces } from 'node:os';
import { createMessage, encodeMessage, type Message } from '../../src/bus/message.js';
import type { Logger } from '../../src/log/logger.js';
import { Recorder } from '../support/recorder.js';
import { ManualClock } from '../../src/clock/manual-clock.js';
import { BUSY_COST, MIN_COST, WINDOW_MS } from '../../src/bus/fair-share.js';

const GREETING = '{"type":"connected","data":{},"context":{"session":{"session_id":"default"}}}';


type LogLine = Record<string, unknown> & { level: number; msg?: string; reason?: string };

function captureLogs(): { logger: Logger; lines: Recorder<LogLine> } {
  const lines = new Recorder<LogLine>();
  const logger = pino({ level: 'debug' }, { write: (chunk: string) => lines.push(JSON.parse(chunk) as LogLine) });
  return { logger, lines };
}

const WARN = 40;
const ERROR = 50;

const cleanups: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function startServer(maxFrameBytes = 1024 * 1024) {
  const logs = captureLogs();
  const server = await BusServer.start({ host: '127.0.0.1', port: 0, route: '/core', maxFrameBytes, logger: logs.logger });
  cleanups.push(() => server.close());
  return { server, logs };
}

interface Peer {
  readonly ws: WebSocket;
  readonly frames: Recorder<string>;
}

async function connect(url: string): Promise<Peer> {
  const ws = new WebSocket(url);
  const frames = new Recorder<string>();
  ws.on('message', (data) => frames.push(String(data)));
  cleanups.push(() => ws.terminate());
  await once(ws, 'open');
  // The greeting is the first frame; waiting for it means the server has registered this client.
  await frames.waitFor((frame) => frame === GREETING, 'greeting');
  return { ws, frames };
}

function subscribeAll(server: BusServer): Recorder<Message> {
  const seen = new Recorder<Message>();
  cleanups.push(server.subscribe((message) => seen.push(message)));
  return seen;
}

function typeOf(frame: string): unknown {
  return (JSON.parse(frame) as { type?: unknown }).type;
}

describe('BusServer (ovos-messagebus compatible)', () => {
  it('ovos-messagebus: greets every new client with the exact connected frame, first', async () => {
    const { server } = await startServer();
    expect(server.url).toBe(`ws://127.0.0.1:${server.port}/core`);
    const ws = new WebSocket(server.url);
    cleanups.push(() => ws.terminate());
    const [first] = (await once(ws, 'message')) as [Buffer, boolean];
    expect(first.toString('utf8')).toBe(GREETING);
    expect(server.clientCount).toBe(1);
  });

  it('ovos-messagebus: re-broadcasts a frame verbatim to every client, the sender included, then in-process', async () => {
    const { server } = await startServer();
    const inProcess = subscribeAll(server);
    const a = await connect(server.url);
    const b = await connect(server.url);
    // Odd spacing, key order and an unknown key: none of it may be normalised on the way through.
    const frame = '{ "context": {"source":"a"},  "type" : "test.verbatim", "data":{"n":1}, "extra": [true] }';
    a.ws.send(frame);

    expect(await a.frames.waitFor((f) => f.includes('test.verbatim'), 'echo to sender')).toBe(frame);
    expect(await b.frames.waitFor((f) => f.includes('test.verbatim'), 'broadcast to b')).toBe(frame);
    const delivered = await inProcess.waitFor((m) => m.type === 'test.verbatim', 'in-process delivery');
    expect(delivered).toEqual({ type: 'test.verbatim', data: { n: 1 }, context: { source: 'a' } });
  });

  it('Bus contract: an in-process publish reaches every ws client and every in-process subscriber exactly once', async () => {
    const { server } = await startServer();
    const first = subscribeAll(server);
    const second = subscribeAll(server);
    const a = await connect(server.url);
    const b = await connect(server.url);

    const message = createMessage('test.inproc', { n: 1 }, { session: { session_id: 's1' } });
    server.publish(message);
    server.publish(createMessage('test.barrier'));

    for (const peer of [a, b]) {
      // Frames on one connection arrive in order: once the barrier is here, any duplicate would be too.
      await peer.frames.waitFor((f) => typeOf(f) === 'test.barrier', 'barrier');
      expect(peer.frames.items.filter((f) => typeOf(f) === 'test.inproc')).toEqual([encodeMessage(message)]);
    }
    for (const seen of [first, second]) {
      await seen.waitFor((m) => m.type === 'test.barrier', 'in-process barrier');
      expect(seen.items.map((m) => m.type)).toEqual(['test.inproc', 'test.barrier']);
      expect(seen.items[0]).toEqual(message);
    }
  });

  it('LocalBus rules: in-process delivery is FIFO and not re-entrant when a subscriber publishes', async () => {
    const { server } = await startServer();
    cleanups.push(
      server.subscribe((message) => {
        if (message.type === 'test.first') server.publish(createMessage('test.second'));
      }),
    );
    const order = subscribeAll(server);
    server.publish(createMessage('test.first'));
    await order.waitFor((m) => m.type === 'test.second', 'the message published during delivery');
    expect(order.items.map((m) => m.type)).toEqual(['test.first', 'test.second']);
  });

  it('LocalBus rules: a throwing in-process subscriber is logged (listener_threw) and never affects the others', async () => {
    const { server, logs } = await startServer();
    cleanups.push(
      server.subscribe(() => {
        throw new Error('boom');
      }),
    );
    const others = subscribeAll(server);
    const peer = await connect(server.url);
    peer.ws.send('{"type":"test.after-throw"}');

    await others.waitFor((m) => m.type === 'test.after-throw', 'delivery past the throwing subscriber');
    const line = await logs.lines.waitFor((l) => l.reason === 'listener_threw', 'listener_threw log');
    expect(line.level).toBe(ERROR);
    expect(peer.ws.readyState).toBe(WebSocket.OPEN);
  });

  it('OVOS-MSG-1 §6.1: malformed frames are dropped with one warning each and the connection stays open', async () => {
    const { server, logs } = await startServer();
    const inProcess = subscribeAll(server);
    const sender = await connect(server.url);
    const other = await connect(server.url);
    const bad: Array<[string | Buffer, string]> = [
      ['this is not json', 'frame_not_json'],
      ['[1,2,3]', 'frame_not_object'],
      ['{"data":{}}', 'type_missing'],
      ['{"type":42}', 'type_not_string'],
      ['{"type":"x","data":[1]}', 'data_not_object'],
      ['{"type":"x","context":"nope"}', 'context_not_object'],
      [Buffer.from('{"type":"binary.frame"}'), 'frame_not_text'],
    ];
    for (const [frame] of bad) sender.ws.send(frame);
    sender.ws.send('{"type":"test.good"}');

    await sender.frames.waitFor((f) => typeOf(f) === 'test.good', 'good frame echoed to sender');
    await other.frames.waitFor((f) => typeOf(f) === 'test.good', 'good frame broadcast');
    await inProcess.waitFor((m) => m.type === 'test.good', 'good frame in-process');
    expect(sender.ws.readyState).toBe(WebSocket.OPEN);
    expect(sender.frames.items).toEqual([GREETING, '{"type":"test.good"}']);
    expect(other.frames.items).toEqual([GREETING, '{"type":"test.good"}']);
    expect(inProcess.items.map((m) => m.type)).toEqual(['test.good']);

    const drops = logs.lines.items.filter((l) => l.msg === 'frame dropped');
    expect(drops.map((l) => l.reason)).toEqual(bad.map(([, reason]) => reason));
    for (const line of drops) {
      expect(line.level).toBe(WARN);
      expect(typeof line.client).toBe('string');
    }
    expect(drops[0]?.frame).toBe('this is not json');
  });

  it('OVOS-MSG-1 §6.1: the logged frame is cut to its first 200 characters', async () => {
    const { server, logs } = await startServer();
    const peer = await connect(server.url);
    peer.ws.send(`not json ${'x'.repeat(1000)}`);
    const line = await logs.lines.waitFor((l) => l.msg === 'frame dropped', 'drop log');
    expect(line.frame).toBe(`not json ${'x'.repeat(1000)}`.slice(0, 200));
  });

  it('maxFrameBytes: an oversized frame closes only that client (1009), logged as frame_too_large', async () => {
    const { server, logs } = await startServer(1024);
    const offender = await connect(server.url);
    const bystander = await connect(server.url);
    const closed = once(offender.ws, 'close');
    offender.ws.send(JSON.stringify({ type: 'test.big', data: { blob: 'x'.repeat(2048) } }));

    const [code] = (await closed) as [number, Buffer];
    expect(code).toBe(1009);
    const line = await logs.lines.waitFor((l) => l.reason === 'frame_too_large', 'frame_too_large log');
    expect(line.level).toBe(WARN);

    server.publish(createMessage('test.still-up'));
    await bystander.frames.waitFor((f) => typeOf(f) === 'test.still-up', 'bystander still served');
    expect(bystander.frames.items.some((f) => f.includes('test.big'))).toBe(false);
    expect(server.clientCount).toBe(1);
  });

  it('route: an upgrade on any path other than the configured route is rejected with 404 and logged', async () => {
    const { server, logs } = await startServer();
    const ws = new WebSocket(`ws://127.0.0.1:${server.port}/not-core`);
    cleanups.push(() => ws.terminate());
    const [error] = (await once(ws, 'error')) as [Error];
    expect(error.message).toContain('404');
    const line = await logs.lines.waitFor((l) => l.reason === 'route_not_found', 'rejection log');
    expect(line.path).toBe('/not-core');
    expect(server.clientCount).toBe(0);
  });

  it('clients that leave are removed; close terminates the rest, releases the port and is idempotent', async () => {
    const { server, logs } = await startServer();
    const leaving = await connect(server.url);
    const staying = await connect(server.url);
    expect(server.clientCount).toBe(2);

    leaving.ws.close();
    await logs.lines.waitFor((l) => l.msg === 'bus client disconnected', 'server saw the client leave');
    expect(server.clientCount).toBe(1);

    const stayingClosed = once(staying.ws, 'close');
    await Promise.all([server.close(), server.close()]);
    await stayingClosed;
    expect(server.clientCount).toBe(0);

    // The port is free again: a new server can bind it.
    const again = await BusServer.start({
      host: '127.0.0.1',
      port: server.port,
      route: '/core',
      maxFrameBytes: 1024,
      logger: pino({ level: 'silent' }),
    });
    await again.close();
  });
});

describe('BusServer protects everyone else from one bad client', () => {
  it('heartbeat, FALLBACK-1 §6.1 (reconnect window): a client that never answers pings is dropped (heartbeat_timeout), reported closed late; one that answers stays, and its own close is not late', async () => {
    const logs = captureLogs();
    const server = await BusServer.start({ host: '127.0.0.1', port: 0, route: '/core', maxFrameBytes: 1024 * 1024, logger: logs.logger, heartbeatMs: 30 });
    cleanups.push(() => server.close());
    const closes = new Recorder<{ connection: string; late: boolean }>();
    server.onConnectionClosed((connection, late) => closes.push({ connection, late }));
    const healthy = await connect(server.url);
    const frozen = new WebSocket(server.url, { autoPong: false });
    cleanups.push(() => frozen.terminate());
    await once(frozen, 'open');
    await once(frozen, 'close');
    const line = await logs.lines.waitFor((l) => l.reason === 'heartbeat_timeout', 'the heartbeat drop');
    expect(line.level).toBe(WARN);
    expect(healthy.ws.readyState).toBe(WebSocket.OPEN);
    expect(server.clientCount).toBe(1);
    expect(await closes.waitFor(() => true, 'the heartbeat drop reported')).toEqual({ connection: line['client'], late: true });
    healthy.ws.close();
    await closes.waitFor((c) => !c.late, 'the healthy client closing');
    expect(closes.items.map((c) => c.late)).toEqual([true, false]);
  });

  it('FALLBACK-1 §6.1 (reconnect window): a peer not over loopback: its close, whatever ended it, is reported late (a network outage can deliver it after its new connection); loopback is this host', async () => {
    expect([isLoopback('127.0.0.1'), isLoopback('127.8.9.10'), isLoopback('::1'), isLoopback('::ffff:127.0.0.1')]).toEqual([true, true, true, true]);
    expect([isLoopback('192.0.2.2'), isLoopback('::ffff:10.0.0.1'), isLoopback('fe80::1'), isLoopback('1.127.0.0'), isLoopback(undefined)]).toEqual([false, false, false, false, false]);
    // Over a real socket, through this machine's own non-loopback address when it has one (an address "on another host" as far as the server can tell).
    const address = Object.values(networkInterfaces()).flat().find((i) => i !== undefined && i.family === 'IPv4' && !i.internal)?.address;
    if (address === undefined) return;
    const server = await BusServer.start({ host: '0.0.0.0', port: 0, route: '/core', maxFrameBytes: 1024 * 1024, logger: captureLogs().logger });
    cleanups.push(() => server.close());
    const closes = new Recorder<{ connection: string; late: boolean }>();
    server.onConnectionClosed((connection, late) => closes.push({ connection, late }));
    const remote = await connect(`ws://${address}:${server.port}/core`);
    remote.ws.close();
    const local = await connect(`ws://127.0.0.1:${server.port}/core`);
    local.ws.close();
    await closes.waitFor((c) => c.connection.includes('127.0.0.1'), 'the loopback close');
    expect(closes.items.map((c) => [c.connection.split('@')[1]!.split(':')[0], c.late])).toEqual([
      [address, true],
      ['127.0.0.1', false],
    ]);
  });

  it('ovos-wire-today (the bus server): frames gathered in one turn do not make a reading client look slow, however small the limit (no slow_consumer); they arrive in order', async () => {
    const logs = captureLogs();
    // 4 × 1 KB = a 4 KB backlog limit, far below one turn's batch of 40 frames of ~500 bytes.
    const server = await BusServer.start({ host: '127.0.0.1', port: 0, route: '/core', maxFrameBytes: 1024, logger: logs.logger });
    cleanups.push(() => server.close());
    const reader = await connect(server.url);
    for (let i = 0; i < 40; i++) server.publish(createMessage(`burst.${i}`, { blob: 'x'.repeat(450) }));
    await reader.frames.waitFor((frame) => typeOf(frame) === 'burst.39', 'the last frame of the burst');
    expect(reader.frames.items.filter((f) => f !== GREETING).map(typeOf)).toEqual(Array.from({ length: 40 }, (_, i) => `burst.${i}`));
    expect(logs.lines.items.filter((l) => l.reason === 'slow_consumer')).toEqual([]);
    expect(server.clientCount).toBe(1);
  });

  it('a client that stops reading is dropped once its unsent backlog passes the limit (slow_consumer); the others keep receiving', async () => {
    const logs = captureLogs();
    const server = await BusServer.start({ host: '127.0.0.1', port: 0, route: '/core', maxFrameBytes: 64 * 1024, maxBufferedBytes: 256 * 1024, logger: logs.logger });
    cleanups.push(() => server.close());
    const reader = await connect(server.url);
    const stalled = new WebSocket(server.url);
    cleanups.push(() => stalled.terminate());
    stalled.on('upgrade', (response) => response.socket.pause()); // never reads a byte: a frozen peer
    await once(stalled, 'open');
    const payload = { blob: 'x'.repeat(32 * 1024) };
    // Batches, yielding to the event loop in between, so a client that does read keeps draining.
    for (let i = 0; i < 2_000 && server.clientCount === 2; i++) {
      server.publish(createMessage('bulk.test', payload));
      if (i % 4 === 3) await new Promise<void>((resolve) => setImmediate(resolve));
    }
    const line = await logs.lines.waitFor((l) => l.reason === 'slow_consumer', 'the slow-consumer drop');
    expect(line.level).toBe(WARN);
    expect(server.clientCount).toBe(1);
    server.publish(createMessage('after.drop'));
    await reader.frames.waitFor((frame) => typeOf(frame) === 'after.drop', 'delivery to the healthy client');
  });
});

describe('who may open the bus: only this machine\'s programs, not a web page', () => {
  /** Opens the bus with the given headers; resolves with the HTTP status of a refusal, or 101 when it opened. */
  async function openWith(url: string, headers: Record<string, string>): Promise<number> {
    const socket = new WebSocket(url, { headers });
    return new Promise((resolve) => {
      socket.once('open', () => {
        socket.close();
        resolve(101);
      });
      socket.once('unexpected-response', (_request, response) => resolve(response.statusCode ?? 0));
      socket.once('error', () => resolve(0));
    });
  }

  it('an upgrade with a browser Origin is refused (403, one warn per origin a minute); without one — an OVOS client — it opens', async () => {
    const { server, logs } = await startServer();
    expect(await openWith(server.url, { Origin: 'https://evil.example.com' })).toBe(403);
    expect(await openWith(server.url, { Origin: 'https://evil.example.com' })).toBe(403);
    expect(await openWith(server.url, {})).toBe(101);
    expect(logs.lines.items.filter((l) => l.reason === 'origin_not_allowed')).toEqual([expect.objectContaining({ level: WARN, origin: 'https://evil.example.com' })]);
  });

  it('a page served from this machine (a loopback origin, any port) may open it; a look-alike name may not', async () => {
    const { server } = await startServer();
    for (const origin of ['http://localhost:3000', 'http://127.0.0.1', 'https://127.0.0.53:8443', 'http://[::1]:8080', 'HTTP://LOCALHOST:1']) {
      expect([origin, await openWith(server.url, { Origin: origin })]).toEqual([origin, 101]);
    }
    for (const origin of ['http://localhost.evil.example.com', 'http://127.0.0.1.evil.example.com', 'http://evil.example.com#localhost', 'null', 'file://', 'http://localhost:3000/']) {
      expect([origin, await openWith(server.url, { Origin: origin })]).toEqual([origin, 403]);
    }
  });

  it('bus.allowedOrigins lets the origins listed in, exactly as written, and no other', async () => {
    const logs = captureLogs();
    const server = await BusServer.start({ host: '127.0.0.1', port: 0, route: '/core', maxFrameBytes: 1024, logger: logs.logger, allowedOrigins: ['https://assistant.example.com'] });
    cleanups.push(() => server.close());
    expect(await openWith(server.url, { Origin: 'https://assistant.example.com' })).toBe(101);
    expect(await openWith(server.url, { Origin: 'https://assistant.example.com:8443' })).toBe(403);
    expect(await openWith(server.url, { Origin: 'https://assistant.example.com/' })).toBe(403);
    expect(await openWith(server.url, { Origin: 'http://assistant.example.com' })).toBe(403);
  });

  it('bus.maxConnections: past the limit an upgrade is refused (503) with one warn line; a place freed lets the next one in', async () => {
    const logs = captureLogs();
    const server = await BusServer.start({ host: '127.0.0.1', port: 0, route: '/core', maxFrameBytes: 1024, logger: logs.logger, maxConnections: 2 });
    cleanups.push(() => server.close());
    const first = await connect(server.url);
    await connect(server.url);
    expect(await openWith(server.url, {})).toBe(503);
    expect(await openWith(server.url, {})).toBe(503);
    expect(logs.lines.items.filter((l) => l.reason === 'connection_limit')).toEqual([expect.objectContaining({ level: WARN, max_connections: 2 })]);
    const closed = once(first.ws, 'close');
    first.ws.close();
    await closed;
    await logs.lines.waitFor((l) => l.msg === 'bus client disconnected', 'the server saw the close');
    expect(await openWith(server.url, {})).toBe(101);
  });
});

describe('dropped frames are logged, not flooded into the log', () => {
  it('OVOS-MSG-1 §6.1: 5,000 malformed frames from one client are one warn line per reason, the rest counted, and the total told when it leaves', async () => {
    const { server, logs } = await startServer();
    const sender = await connect(server.url);
    for (let i = 0; i < 5_000; i++) sender.ws.send(i % 2 === 0 ? 'not json' : '{"type":42}');
    sender.ws.send('{"type":"test.after"}');
    await sender.frames.waitFor((f) => typeOf(f) === 'test.after', 'the good frame after the bad ones');
    const drops = logs.lines.items.filter((l) => l.msg === 'frame dropped');
    expect(drops.map((l) => [l.reason, l.suppressed])).toEqual([
      ['frame_not_json', 0],
      ['type_not_string', 0],
    ]);
    const closed = once(sender.ws, 'close');
    sender.ws.close();
    await closed;
    const bye = await logs.lines.waitFor((l) => l.msg === 'bus client disconnected', 'the disconnect line');
    expect(bye).toMatchObject({ frames_dropped: 5_000 });
    expect(server.clientCount).toBe(0);
  });
});

describe('fair share: a client sending far more than its share while the bus is saturated is slowed, not the others', () => {
  /** A server whose fair-share windows run on a manual clock and whose saturation the test decides. */
  async function startSaturable(maxPauseMs = 1_000) {
    const logs = captureLogs();
    const clock = new ManualClock();
    let saturated = true;
    const server = await BusServer.start({ host: '127.0.0.1', port: 0, route: '/core', maxFrameBytes: 1024 * 1024, logger: logs.logger, clock, saturated: () => saturated, maxPauseMs });
    cleanups.push(() => server.close());
    return { server, logs, clock, setSaturated: (on: boolean) => (saturated = on) };
  }

  it('the loud client is paused at once past its share (one warn); a quiet client is still heard while it is; it resumes when its pause is over, and its held frames follow', async () => {
    const { server, logs, clock } = await startSaturable();
    const seen = subscribeAll(server);
    const loud = await connect(server.url);
    const quiet = await connect(server.url);
    await connect(server.url); // a third client that says nothing: the share is over every connected client
    // 1,500 frames of ~230 bytes: far more than one read of its socket, so what follows the pause stays unread.
    for (let i = 0; i < 1_500; i++) loud.ws.send(JSON.stringify({ type: 'flood', data: { i, pad: 'x'.repeat(200) } }));
    loud.ws.send('{"type":"loud.held"}');
    await seen.waitFor((m) => m.type === 'flood' && m.data['i'] === BUSY_COST, 'the frame past the busy bound');
    expect(server.pausedCount).toBe(1);
    quiet.ws.send('{"type":"quiet.two"}');
    await seen.waitFor((m) => m.type === 'quiet.two', 'the quiet client while the loud one is paused');
    await quiet.frames.waitFor((f) => typeOf(f) === 'quiet.two', 'the echo of the quiet frame');
    expect(seen.items.some((m) => m.type === 'loud.held')).toBe(false);

    clock.advance(WINDOW_MS);
    expect(logs.lines.items.filter((l) => l.reason === 'fair_share')).toEqual([expect.objectContaining({ level: WARN, share: MIN_COST, paused_ms: WINDOW_MS, window_ms: WINDOW_MS })]);
    clock.advance(WINDOW_MS);
    expect(server.pausedCount).toBe(0);
    await seen.waitFor((m) => m.type === 'loud.held', 'the held frame once resumed');
    expect(loud.ws.readyState).toBe(WebSocket.OPEN); // slowed, never dropped
  });

  it('PIPELINE-1 §6 (the handled of a legacy skill, src/plugins/README.md), Bus.onConnectionClosed heldBack: a client that closes while paused, or within the longest pause and two windows of its resume, is reported held back (what it sent last may have gone unread); one never paused, or resumed longer ago, is not', async () => {
    const { server, clock, setSaturated } = await startSaturable(300);
    const closes = new Recorder<{ connection: string; heldBack: boolean }>();
    server.onConnectionClosed((connection, _late, heldBack) => closes.push({ connection, heldBack }));
    const seen = subscribeAll(server);
    const flood = async (client: Awaited<ReturnType<typeof connect>>, tag: string): Promise<void> => {
      for (let i = 0; i < 1_500; i++) client.ws.send(JSON.stringify({ type: tag, data: { i, pad: 'x'.repeat(200) } }));
      await seen.waitFor((m) => m.type === tag && m.data['i'] === BUSY_COST, `${tag}: the frame past the busy bound`);
      expect(server.pausedCount).toBe(1);
    };
    const quiet = await connect(server.url);
    for (let i = 0; i < 3; i++) await connect(server.url);
    // Closed while paused.
    const pausedNow = await connect(server.url);
    await flood(pausedNow, 'flood.a');
    pausedNow.ws.terminate();
    await closes.waitFor((c) => c.heldBack, 'the paused client closing');
    // Resumed, then closed after the longest pause and two windows: everything it sent was read long before.
    setSaturated(false);
    const resumedLongAgo = await connect(server.url);
    setSaturated(true);
    await flood(resumedLongAgo, 'flood.b');
    setSaturated(false);
    for (let ms = 0; ms < 300 + 2 * WINDOW_MS; ms += WINDOW_MS) clock.advance(WINDOW_MS);
    expect(server.pausedCount).toBe(0);
    await seen.waitFor((m) => m.type === 'flood.b' && m.data['i'] === 1_499, 'the rest of its burst');
    // Resumed exactly the longest pause and two windows ago: still held back; a millisecond later, not.
    const atTheBound = await connect(server.url);
    setSaturated(true);
    await flood(atTheBound, 'flood.c');
    setSaturated(false);
    while (server.pausedCount > 0) clock.advance(WINDOW_MS); // resumed by the window that ends now
    await seen.waitFor((m) => m.type === 'flood.c' && m.data['i'] === 1_499, 'the rest of its burst');
    clock.advance(300 + 2 * WINDOW_MS);
    atTheBound.ws.close();
    await closes.waitFor(() => closes.items.length === 2, 'the client at the bound closing');
    clock.advance(1);
    resumedLongAgo.ws.close();
    await closes.waitFor(() => closes.items.length === 3, 'the client past the bound closing');
    quiet.ws.close();
    await closes.waitFor(() => closes.items.length === 4, 'the quiet client closing');
    expect(closes.items.map((c) => c.heldBack)).toEqual([true, true, false, false]);
  });

  it('PIPELINE-1 §6 (the handled of a legacy skill), Bus.onConnectionClosed heldBack: a client the server cuts (a frame over maxFrameBytes) is reported held back — what it sent after that frame was never read; one closing on its own is not', async () => {
    const server = await BusServer.start({ host: '127.0.0.1', port: 0, route: '/core', maxFrameBytes: 1024, logger: captureLogs().logger });
    cleanups.push(() => server.close());
    const closes = new Recorder<{ connection: string; heldBack: boolean }>();
    server.onConnectionClosed((connection, _late, heldBack) => closes.push({ connection, heldBack }));
    const polite = await connect(server.url);
    polite.ws.close();
    await closes.waitFor(() => true, 'the polite close');
    const rude = await connect(server.url);
    rude.ws.send(JSON.stringify({ type: 'too.large', data: { pad: 'x'.repeat(4096) } }));
    await closes.waitFor(() => closes.items.length === 2, 'the cut');
    expect(closes.items.map((c) => c.heldBack)).toEqual([false, true]);
  });

  it('a paused client resumes within maxPauseMs whatever the bus does, and the rest of its burst goes through', async () => {
    const { server, clock, setSaturated } = await startSaturable(300);
    const seen = subscribeAll(server);
    const loud = await connect(server.url);
    for (let i = 0; i < 8; i++) await connect(server.url);
    for (let i = 0; i < 2_000; i++) loud.ws.send(JSON.stringify({ type: 'flood', data: { i, pad: 'x'.repeat(200) } }));
    await seen.waitFor((m) => m.type === 'flood' && m.data['i'] === BUSY_COST, 'the frame past the busy bound');
    expect(server.pausedCount).toBe(1);
    expect(seen.items.some((m) => m.type === 'flood' && m.data['i'] === 1_999)).toBe(false);
    clock.advance(WINDOW_MS);
    setSaturated(false); // the window that resumes it is not saturated: what is left of its burst (under BUSY_COST) flows
    clock.advance(WINDOW_MS);
    clock.advance(WINDOW_MS);
    clock.advance(WINDOW_MS); // 300 ms: the longest it stays paused
    expect(server.pausedCount).toBe(0);
    await seen.waitFor((m) => m.type === 'flood' && m.data['i'] === 1_999, 'the rest once resumed');
  });

  it('nobody is slowed while the bus keeps up and carries little, nor when only two clients talk (a load driver and a skills process)', async () => {
    const { server, clock, setSaturated } = await startSaturable();
    const seen = subscribeAll(server);
    const loud = await connect(server.url);
    await connect(server.url);
    await connect(server.url);
    setSaturated(false);
    for (let i = 0; i < 300; i++) loud.ws.send(JSON.stringify({ type: 'flood', data: { i } }));
    await seen.waitFor((m) => m.type === 'flood' && m.data['i'] === 299, 'the whole burst');
    clock.advance(WINDOW_MS);
    expect(server.pausedCount).toBe(0);

    const two = await startSaturable();
    const seenTwo = subscribeAll(two.server);
    const driver = await connect(two.server.url);
    await connect(two.server.url);
    for (let i = 0; i < 300; i++) driver.ws.send(JSON.stringify({ type: 'flood', data: { i } }));
    await seenTwo.waitFor((m) => m.type === 'flood' && m.data['i'] === 299, 'the whole burst');
    two.clock.advance(WINDOW_MS);
    expect(two.server.pausedCount).toBe(0);
  });
});
