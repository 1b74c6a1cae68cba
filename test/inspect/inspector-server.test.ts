/**
 * The inspector as a user reaches it: the daemon (`startDaemon`, example skills as real websocket clients) serves
 * the page, the diagrams, the state and the trace export on loopback, and a live feed over a websocket. Nothing
 * sleeps: every wait is on a frame or a response.
 */
import { readFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import type { AnyStateMachine } from 'xstate';
import { startDaemon, type Daemon } from '../../src/daemon/daemon.js';
import { activeNodes } from '../../src/inspect/recorder.js';
import type { FeedMessage } from '../../src/inspect/server.js';
import { silentLogger } from '../../src/log/logger.js';
import { parseTrace } from '../../src/testing/trace.js';
import { MACHINES } from '../../visualizations/diagrams.js';
import { Probe, captureLogs, configWith } from '../integration/probe.js';
import { createHarness } from '../support/harness.js';
import { MAX_REGISTRY_ROWS, systemView, type RegistryRow } from '../../src/inspect/server.js';
import { createMessage } from '../../src/bus/message.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function daemon(): Promise<Daemon> {
  const started = await startDaemon(configWith({ bus: { port: 0 }, exampleSkills: true, log: { level: 'silent' } }), silentLogger());
  cleanups.push(() => started.close());
  expect(started.inspector).toBeDefined();
  return started;
}

async function ask(d: Daemon, utterance: string, session: string): Promise<string> {
  const probe = await Probe.connect(d.url);
  cleanups.push(() => probe.close());
  const utteranceId = `${session}-1`;
  probe.utter(utterance, { utteranceId, session: { session_id: session } });
  await probe.handled(utteranceId);
  return utteranceId;
}

function get(url: string, host?: string, headers: Record<string, string> = {}): Promise<{ status: number; type: string; disposition: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { ...headers, ...(host === undefined ? {} : { host }) } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), disposition: String(res.headers['content-disposition']), body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A feed client that collects frames and waits for one that satisfies a predicate. */
async function feed(d: Daemon): Promise<{ frames: FeedMessage[]; until(pred: (m: FeedMessage) => boolean): Promise<FeedMessage> }> {
  const ws = new WebSocket(`${d.inspector!.url.replace('http', 'ws')}feed`);
  const frames: FeedMessage[] = [];
  const waiters: Array<{ pred: (m: FeedMessage) => boolean; resolve: (m: FeedMessage) => void }> = [];
  ws.on('message', (data) => {
    const message = JSON.parse(String(data)) as FeedMessage;
    frames.push(message);
    for (const w of [...waiters]) if (w.pred(message)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve(message);
    }
  });
  await new Promise<void>((resolve, reject) => ws.once('open', () => resolve()).once('error', reject));
  cleanups.push(async () => ws.close());
  return {
    frames,
    until: (pred) => {
      const seen = frames.find(pred);
      return seen !== undefined ? Promise.resolve(seen) : new Promise((resolve) => waiters.push({ pred, resolve }));
    },
  };
}

describe('inspector server', () => {
  it('serves the page, its script and stylesheet, and every machine diagram, from the daemon itself (no CDN)', async () => {
    const d = await daemon();
    const page = await get(d.inspector!.url);
    expect(page.status).toBe(200);
    expect(page.type).toContain('text/html');
    // Every asset the page loads is a path on the daemon.
    const assets = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(assets.sort()).toEqual(['/app.js', '/style.css']);
    for (const asset of assets) expect((await get(new URL(asset, d.inspector!.url).href)).status).toBe(200);
    expect((await get(new URL('/app.js', d.inspector!.url).href)).body).not.toMatch(/https?:\/\//);
    for (const name of Object.keys(MACHINES)) {
      const svg = await get(new URL(`/diagrams/${name}.svg`, d.inspector!.url).href);
      expect(svg.status).toBe(200);
      expect(svg.type).toBe('image/svg+xml');
      expect(svg.body).toBe(readFileSync(new URL(`../../visualizations/${name}.machine.svg`, import.meta.url), 'utf8'));
    }
    expect((await get(new URL('/../package.json', d.inspector!.url).href)).status).toBe(404);
  });

  it('answers loopback names only: a request naming another host (DNS rebinding) is refused', async () => {
    const d = await daemon();
    expect(d.inspector!.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    expect((await get(`${d.inspector!.url}api/state`, 'attacker.example:80')).status).toBe(403);
    expect((await get(`${d.inspector!.url}api/state`, `localhost:${new URL(d.inspector!.url).port}`)).status).toBe(200);
  });

  it('GET /api/state is refused to a page of another site (Sec-Fetch-Site: cross-site, or its Origin), answered to the inspector\'s own page and to programs', async () => {
    const d = await daemon();
    const state = `${d.inspector!.url}api/state`;
    expect((await get(state, undefined, { 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await get(state, undefined, { origin: 'https://evil.example' })).status).toBe(403);
    expect((await get(state, undefined, { 'sec-fetch-site': 'same-origin', origin: d.inspector!.url.slice(0, -1) })).status).toBe(200);
    expect((await get(state, undefined, { 'sec-fetch-site': 'none' })).status).toBe(200);
    expect((await get(state)).status).toBe(200);
  });

  it('the feed opens for the inspector\'s own page (or a client that sends no Origin), never for a page of another origin', async () => {
    const d = await daemon();
    const port = new URL(d.inspector!.url).port;
    const feed = `ws://127.0.0.1:${port}/feed`;
    const status = (origin: string | undefined): Promise<number> =>
      new Promise((resolve) => {
        const socket = new WebSocket(feed, origin === undefined ? {} : { headers: { Origin: origin } });
        socket.once('open', () => {
          socket.close();
          resolve(101);
        });
        socket.once('unexpected-response', (_request, response) => resolve(response.statusCode ?? 0));
        socket.once('error', () => resolve(0));
      });
    expect(await status('https://evil.example.com')).toBe(403);
    expect(await status('http://localhost:3000')).toBe(403);
    expect(await status(`http://127.0.0.1:${port}`)).toBe(101);
    expect(await status(`http://localhost:${port}`)).toBe(101);
    expect(await status(undefined)).toBe(101);
  });

  it('every state the machines can be in highlights nodes that exist in its diagram', () => {
    for (const [name, { machine }] of Object.entries(MACHINES)) {
      const titles = new Set([...readFileSync(new URL(`../../visualizations/${name}.machine.svg`, import.meta.url), 'utf8').matchAll(/<title>([^<]+)<\/title>/g)].map((m) => m[1]!));
      // A leaf's value names it under every compound ancestor: { polling: 'open' }.
      const valuesOf = (node: AnyStateMachine['root']): unknown[] => {
        const children = Object.values(node.states);
        return children.length === 0 ? [node.key] : children.flatMap((child) => valuesOf(child).map((value) => ({ [node.key]: value })));
      };
      const values = Object.values(machine.root.states).flatMap(valuesOf);
      expect(values.length).toBeGreaterThan(3);
      for (const value of values) for (const node of activeNodes(machine.id, value)) expect(titles, `${name}: ${JSON.stringify(value)} → ${node}`).toContain(node);
    }
  });

  it('the feed: a hello with the registry and roster, then the utterance as it happens with its decision; the trace exports from /api/trace', async () => {
    const d = await daemon();
    const live = await feed(d);
    const hello = await live.until((m) => m.type === 'hello');
    if (hello.type !== 'hello') throw new Error('first frame is the hello');
    expect(hello.system.registry.map((r) => [r.skill_id, r.stage, r.dialect])).toEqual([
      ['meaning-of-life.example', 'fallback_high', 'spec'],
      ['dont-know.example', 'fallback_low', 'spec'],
    ]);

    const utteranceId = await ask(d, 'what is the meaning of life', 'feed-test');
    const update = await live.until((m) => m.type === 'update' && m.utterances.some((u) => u.utterance_id === utteranceId && u.decision !== undefined));
    const u = update.utterances.find((x) => x.utterance_id === utteranceId)!;
    expect(u.decision).toMatchObject({ outcome: 'completed', stage: 'fallback_high', skill_id: 'meaning-of-life.example', answer: '42' });
    expect(u.timeline.map((e) => e.type)).toEqual(expect.arrayContaining(['meaning-of-life.example.fallback.ping', 'meaning-of-life.example.fallback.pong', 'meaning-of-life.example:fallback']));
    expect(update.decisions?.[0]?.utterance_id).toBe(utteranceId);

    const exported = await get(`${d.inspector!.url}api/trace?session=feed-test&utterance=${utteranceId}`);
    expect(exported.status).toBe(200);
    expect(exported.disposition).toBe(`attachment; filename="trace-feed-test-${utteranceId}.json"`);
    const trace = parseTrace(exported.body);
    expect(trace).toMatchObject({ utterance: 'what is the meaning of life', session_id: 'feed-test' });
    expect(trace.pools['fallback_high']).toEqual(['meaning-of-life.example']);
    expect((await get(`${d.inspector!.url}api/trace?session=feed-test&utterance=nope`)).status).toBe(404);
  });

  it('a port already in use: one warn line naming the way out, and the daemon serves the bus without the page', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => blocker.close(() => resolve())));
    const port = (blocker.address() as { port: number }).port;
    const { logger, lines } = captureLogs('info');
    const d = await startDaemon(configWith({ bus: { port: 0 }, exampleSkills: true, inspector: { port } }), logger);
    cleanups.push(() => d.close());
    expect(d.inspector).toBeUndefined();
    expect(lines.items.filter((l) => l.reason === 'inspector_port_in_use')).toEqual([expect.objectContaining({ port, msg: expect.stringContaining('--inspector-port') })]);
    await ask(d, 'what is the meaning of life', 'no-page');
  });

  it('--no-inspector: no page is served', async () => {
    const d = await startDaemon(configWith({ bus: { port: 0 }, exampleSkills: false, log: { level: 'silent' }, inspector: { enabled: false } }), silentLogger());
    cleanups.push(() => d.close());
    expect(d.inspector).toBeUndefined();
  });
});

describe('the inspector\'s registry view', () => {
  it('is bounded whatever the registry holds: 3,000 registrations with ids of 256 characters show as the first 1,000 ("default" first) and their total, in well under a megabyte', async () => {
    const h = createHarness();
    const id = (prefix: string, n: number): string => `${prefix}${n}`.padEnd(256, 'x');
    h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: 'real.skill', priority: 10 }, { session: { session_id: 'default' } }), 'c0');
    for (let i = 0; i < 3_000; i++) {
      const session = id('s', Math.floor(i / 30));
      h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: id('k', i), priority: 50 }, { session: { session_id: session } }), `c${i % 100}`);
    }
    await h.settle();
    const view = systemView(h.system);
    expect(view.registryTotal).toBe(3_001);
    expect(view.registry).toHaveLength(MAX_REGISTRY_ROWS);
    expect(view.registry[0]).toMatchObject({ skill_id: 'real.skill', session_id: 'default' });
    expect(JSON.stringify(view).length).toBeLessThan(1_000_000);
  });

  it('FALLBACK-1 §6.1: a legacy skill whose connection closed shows as away (in no pool) until a client connection opens, then maybe back until heard or away again', async () => {
    const h = createHarness();
    h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: 'wiki.fb', priority: 10 }, { session: { session_id: 'default' } }), 'c1');
    await h.settle();
    const row = (): RegistryRow | undefined => systemView(h.system).registry.find((r) => r.skill_id === 'wiki.fb');
    expect(row()).toMatchObject({ dialect: 'legacy', connection: 'c1', away: false, maybe_back: false });
    h.bus.closeConnection('c1');
    await h.settle();
    expect(row()).toMatchObject({ connection: null, away: true, maybe_back: false });
    h.bus.openConnection('c2');
    await h.settle();
    expect(row()).toMatchObject({ connection: null, away: false, maybe_back: true });
    h.bus.closeConnection('c2');
    await h.settle();
    expect(row()).toMatchObject({ connection: null, away: true, maybe_back: false });
    h.bus.openConnection('c3');
    h.bus.publish(createMessage('ovos.skills.fallback.pong', { skill_id: 'wiki.fb', can_handle: false }, { session: { session_id: 's9' }, utterance_id: 'elsewhere' }), 'c3'); // a pong to a broadcast: heard
    await h.settle();
    expect(row()).toMatchObject({ connection: 'c3', away: false, maybe_back: false, dormant: false });
    // Its connection closes, one opens, and it misses its ping there: dormant (away, back only once heard).
    h.bus.closeConnection('c3');
    h.bus.openConnection('c4');
    await h.settle();
    h.utter('do a barrel roll', { session: { session_id: 's1' } });
    await h.advance(h.system.config.fallback.pingTimeoutMs);
    expect(row()).toMatchObject({ connection: null, away: true, maybe_back: false, dormant: true });
  });
});
