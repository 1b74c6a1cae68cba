/**
 * Nothing a client sends, and nothing that fails while answering, takes the inspector — or the daemon — down: the
 * page's state stays small after a flood of 9 MiB frames, a request whose answer throws is answered 500 and the next
 * request is served, a feed frame that cannot be built is logged with its reason code. The server runs on loopback
 * over the in-process harness (port 0); every wait is on a response, a frame or a log line.
 */
import { request } from 'node:http';
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { createMessage, type Message } from '../../src/bus/message.js';
import { DEFAULT_CONFIG } from '../../src/config/defaults.js';
import { InspectorRecorder, type UtteranceView } from '../../src/inspect/recorder.js';
import { InspectorServer, type FeedMessage, type InspectorState } from '../../src/inspect/server.js';
import type { Logger } from '../../src/log/logger.js';
import { captureLogs, Recorder } from '../integration/probe.js';
import { createHarness, type Harness } from '../support/harness.js';

const HUGE = 'x'.repeat(9 * 1024 * 1024);

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function serve(h: Harness, recorder: InspectorRecorder, logger: Logger): Promise<InspectorServer> {
  const server = await InspectorServer.start({ recorder, system: h.system, port: 0, logger, flushMs: 5 });
  cleanups.push(() => server.close());
  return server;
}

function get(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A request line as written, `GET <target> HTTP/1.1`, with `headers`: the status line of the answer. */
function rawStatus(port: number, target: string, headers = 'Connection: close\r\n'): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${headers}\r\n`));
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('end', () => resolve(text.split('\r\n')[0] ?? ''));
    socket.on('error', reject);
  });
}

/** A feed client: every frame, and how the socket closed. */
function openFeed(server: InspectorServer): { readonly frames: Recorder<FeedMessage>; readonly closed: Promise<number> } {
  const ws = new WebSocket(`${server.url.replace('http', 'ws')}feed`);
  const frames = new Recorder<FeedMessage>();
  ws.on('message', (data) => frames.push(JSON.parse(String(data)) as FeedMessage));
  const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
  cleanups.push(async () => {
    ws.close();
    await closed;
  });
  return { frames, closed };
}

/** A recorder whose views throw while `failing` is set: the failure is the test's, the recording is real. */
class FailingRecorder extends InspectorRecorder {
  failing: 'utterances' | 'utterance' | undefined = 'utterances';

  override utterances(): UtteranceView[] {
    if (this.failing === 'utterances') throw new RangeError('Invalid string length');
    return super.utterances();
  }

  override utterance(key: string): UtteranceView | undefined {
    if (this.failing === 'utterance') throw new RangeError('Invalid string length');
    return super.utterance(key);
  }
}

describe('inspector server: bounded and never thrown out of', () => {
  it('after 60 frames of 9 MiB carrying an utterance\'s ids (a 9 MiB skill_id in each), /api/state answers 200, small, the frames on the timeline clipped', async () => {
    const h = createHarness(DEFAULT_CONFIG, { recorder: {} });
    const server = await serve(h, h.recorder!, captureLogs('info').logger);
    h.utter('blorp the flange', { session: { session_id: 's1' }, utteranceId: 'u1' });
    await h.advance(10);
    for (let i = 0; i < 60; i++) {
      const frame: Message = createMessage('flood.skill.fallback.pong', { skill_id: HUGE, n: i, payload: HUGE }, { session: { session_id: 's1' }, utterance_id: 'u1' });
      h.bus.publish(frame);
      await h.settle();
    }
    expect(h.recorder!.bytes).toBeLessThan(2 * 1024 * 1024);

    const answer = await get(`${server.url}api/state`);
    expect(answer.status).toBe(200);
    expect(answer.body.length).toBeLessThan(2 * 1024 * 1024);
    const state = JSON.parse(answer.body) as InspectorState;
    const flood = state.utterances[0]!.timeline.filter((e) => e.kind === 'message' && e.type === 'flood.skill.fallback.pong');
    expect(flood).toHaveLength(60);
    for (const entry of flood) expect(entry).toMatchObject({ clipped: true, skill_id: `${'x'.repeat(1024)}…[clipped ${HUGE.length - 1024} chars]` });
    const exported = await get(`${server.url}api/trace?session=s1&utterance=u1`);
    expect(exported.status).toBe(200);
    expect(exported.body.length).toBeLessThan(4 * 1024 * 1024);
  });

  it('a request whose answer throws is answered 500 and logged (inspector_request_failed); the next requests are served', async () => {
    const h = createHarness();
    const recorder = new FailingRecorder({ clock: h.clock });
    const { logger, lines } = captureLogs('info');
    const server = await serve(h, recorder, logger);

    expect((await get(`${server.url}api/state`)).status).toBe(500);
    expect(lines.items.filter((l) => l['reason'] === 'inspector_request_failed')).toEqual([expect.objectContaining({ path: '/api/state', err: expect.objectContaining({ message: 'Invalid string length' }) })]);
    expect((await get(server.url)).status).toBe(200);
    expect((await get(`${server.url}api/trace?session=s&utterance=u`)).status).toBe(404);
    expect((await get(`${server.url}api/state`)).status).toBe(500);
    recorder.failing = undefined;
    expect((await get(`${server.url}api/state`)).status).toBe(200);
  });

  it('a request target that is no URL (//[) is answered 400, and refused as a feed; the next requests are served', async () => {
    const h = createHarness();
    const server = await serve(h, new InspectorRecorder({ clock: h.clock }), captureLogs('info').logger);
    const port = Number(new URL(server.url).port);
    expect(await rawStatus(port, '//[')).toBe('HTTP/1.1 400 Bad Request');
    const upgrade = 'Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n';
    expect(await rawStatus(port, '//[', upgrade)).toBe('HTTP/1.1 403 Forbidden');
    expect((await get(`${server.url}api/state`)).status).toBe(200);
  });

  it('a feed whose state cannot be built: the page is closed (1011) and the failure logged (inspector_feed_failed); a failed update is logged and the page sent the whole state again', async () => {
    const h = createHarness();
    const recorder = new FailingRecorder({ clock: h.clock });
    // Wired as createRecordedSystem wires one: it hears the bus and the supervisor.
    h.bus.subscribe(recorder.onMessage);
    h.system.supervisor.observe(recorder);
    const { logger, lines } = captureLogs('info');
    const server = await serve(h, recorder, logger);

    const refused = openFeed(server);
    expect(await refused.closed).toBe(1011);
    await lines.waitFor((l) => l['reason'] === 'inspector_feed_failed', 'the failed hello logged');
    expect(refused.frames.items).toEqual([]);

    // A page that got its hello; then building an update throws.
    recorder.failing = undefined;
    const page = openFeed(server);
    await page.frames.waitFor((m) => m.type === 'hello', 'the hello');
    recorder.failing = 'utterance';
    const failures = lines.items.length;
    h.utter('blorp the flange', { session: { session_id: 's1' }, utteranceId: 'u1' });
    await h.settle();
    await lines.waitFor((l) => l['reason'] === 'inspector_feed_failed', 'the failed update logged', failures);
    // The update was lost, not the page: it is sent the whole state, the new utterance in it.
    const again = await page.frames.waitFor((m) => m.type === 'hello' && m.utterances.some((u) => u.utterance_id === 'u1'), 'the whole state again', 1);
    expect(again.type).toBe('hello');
    expect((await get(`${server.url}api/state`)).status).toBe(200);
  });
});
