/**
 * The live inspector: a local web page served by the daemon (loopback only, every asset from here — no CDN), fed
 * over a websocket from the recorder (src/inspect/recorder.ts) and the system's registry and roster.
 *
 *   GET /                      the page (src/inspect/page/: plain ES modules, no build step)
 *   GET /diagrams/<m>.svg      the committed machine diagrams (visualizations/, `npm run viz`)
 *   GET /api/state             everything the page shows, as JSON
 *   GET /api/trace?session=S&utterance=U   one utterance's timeline as a trace (`ovos-contests replay-trace FILE`)
 *   WS  /feed                  a `hello` with the state, then `update`s with what changed, at most every 100 ms
 *
 * The feed does nothing while no page is connected: the recorder's change listener, its detail mode (state changes
 * and timeouts through XState's inspection) and the flush timer exist only while a client does. A page that cannot keep up (its socket buffer past 4 MiB) is skipped and sent the whole
 * state again once it has drained. Requests whose Host is not a loopback name are refused (DNS rebinding).
 *
 * Nothing a request or the feed runs into leaves the inspector: a request that fails is answered 500 and logged
 * (`inspector_request_failed`), a feed frame that cannot be built is logged (`inspector_feed_failed`) and its page
 * closed to reconnect; the daemon runs on either way.
 */
import { nonLocalRequest } from '../bus/loopback.js';
import type { ClusterView } from '../cluster/nats-cluster.js';
import { partitionOf } from '../cluster/subjects.js';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Logger } from '../log/logger.js';
import { stageTakes } from '../plugins/fallback/pool.js';
import type { ContestSystem } from '../system.js';
import type { DecisionView, InspectorRecorder, StrayDrop, UtteranceView } from './recorder.js';

export interface RegistryRow {
  readonly session_id: string;
  readonly skill_id: string;
  /** As registered. */
  readonly priority: number;
  /** After the deployment's `fallback.priorities` override. */
  readonly effective_priority: number;
  /** The fallback stage that asks it: the one whose range covers it, else the nearest (pool.ts `stageTakes`); null with no stages. */
  readonly stage: string | null;
  readonly dialect: 'spec' | 'legacy';
  /** The client connection it registered over; null in process, on a foreign bus (no connection identity), or unbound. */
  readonly connection: string | null;
  /** In no pool: its connection closed (or it was restored) and no client connection it might be on is open, or dormant. */
  readonly away: boolean;
  /** Away after a missed ping while not heard from (or restored so): back only once its skill is heard from. */
  readonly dormant: boolean;
  /**
   * Not heard from since its connection closed (or a restart), back in the pools on probation: it may be on a
   * connection opened since (its bus client reconnecting); away again if they all close first, dormant after a missed ping.
   */
  readonly maybe_back: boolean;
  /** Circuit breaker: `open` = suspended from every pool. */
  readonly breaker: 'closed' | 'open' | 'half_open';
}

export interface SystemView {
  readonly pipeline: readonly string[];
  readonly stages: Readonly<Record<string, readonly [number, number]>>;
  /** At most `MAX_REGISTRY_ROWS` registrations ("default" first, then by session): the view is bounded whatever the registry holds. */
  readonly registry: readonly RegistryRow[];
  /** How many registrations the registry holds in all (more than `registry` shows when it was cut). */
  readonly registryTotal: number;
  readonly roster: ReadonlyArray<{ readonly skill_id: string; readonly answersEveryPoll: boolean }>;
  /** A daemon of a cluster (src/cluster/): its view of the cluster, and which daemon runs each recent session. */
  readonly cluster?: Omit<ClusterView, 'recentSessions'> & {
    /** The latest sessions heard, newest first: where each runs. */
    readonly sessions: ReadonlyArray<{ readonly session_id: string; readonly partition: number; readonly owner: string | null }>;
  };
}

/**
 * The most registrations the inspector's state shows (its first message to a page included): the registry may hold
 * 64,064 (the default bounds), which no page needs at once and every page would pay for in bytes.
 */
export const MAX_REGISTRY_ROWS = 1_000;

export function systemView(system: ContestSystem, cluster?: ClusterView): SystemView {
  const { stages, priorities } = system.config.fallback;
  const all = system.fallback.registry.entries();
  const shown = all.length <= MAX_REGISTRY_ROWS ? all : [...all].sort((x, y) => Number(y.sessionId === 'default') - Number(x.sessionId === 'default')).slice(0, MAX_REGISTRY_ROWS);
  const registry = shown.map((entry): RegistryRow => {
    const effective = Object.hasOwn(priorities, entry.skillId) ? priorities[entry.skillId]! : entry.priority;
    const ranges = Object.values(stages);
    const stage = Object.entries(stages).find(([, range]) => stageTakes(effective, range, ranges))?.[0] ?? null;
    return {
      session_id: entry.sessionId,
      skill_id: entry.skillId,
      priority: entry.priority,
      effective_priority: effective,
      stage,
      dialect: entry.legacy ? 'legacy' : 'spec',
      connection: entry.connection ?? null,
      away: entry.away === true,
      dormant: entry.dormant === true,
      maybe_back: entry.unheard === true && entry.away !== true,
      breaker: system.fallback.breaker.state(entry.skillId),
    };
  });
  const view = { pipeline: system.config.pipeline, stages, registry, registryTotal: all.length, roster: system.commonQuery.roster() };
  if (cluster === undefined) return view;
  const { recentSessions, ...rest } = cluster;
  const sessions = [...recentSessions].reverse().map((session_id) => {
    const partition = partitionOf(session_id, cluster.partitions);
    return { session_id, partition, owner: cluster.owners[partition] ?? null };
  });
  return { ...view, cluster: { ...rest, sessions } };
}

export interface InspectorState {
  readonly utterances: readonly UtteranceView[];
  readonly decisions: readonly DecisionView[];
  readonly strays: readonly StrayDrop[];
  readonly system: SystemView;
}

export type FeedMessage =
  | ({ readonly type: 'hello' } & InspectorState)
  | {
      readonly type: 'update';
      readonly utterances: readonly UtteranceView[];
      readonly decisions?: readonly DecisionView[];
      readonly strays?: readonly StrayDrop[];
      readonly system?: SystemView;
    };

export interface InspectorServerOptions {
  readonly recorder: InspectorRecorder;
  readonly system: ContestSystem;
  readonly port: number;
  readonly logger: Logger;
  /** Feed flush period (ms). */
  readonly flushMs?: number;
  /** A daemon of a cluster: its view of the cluster (`NatsCluster.view`). */
  readonly cluster?: () => ClusterView;
}

const HOST = '127.0.0.1';
const PAGE_FILES: Readonly<Record<string, string>> = {
  '/': 'index.html',
  '/index.html': 'index.html',
  '/app.js': 'app.js',
  '/style.css': 'style.css',
};
const DIAGRAMS = new Set(['fallback', 'common-query', 'utterance']);
const TYPES: Readonly<Record<string, string>> = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  svg: 'image/svg+xml',
};
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;

/** The package root (where package.json is), from src/inspect or dist/src/inspect alike. */
function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('inspector: package root not found');
    dir = parent;
  }
  return dir;
}

/** A request's URL, or undefined when it does not parse (`//[` does not). */
function urlOf(path: string | undefined, base: string): URL | undefined {
  try {
    return new URL(path ?? '/', base);
  } catch {
    return undefined;
  }
}

const LOOPBACK_HOST = /^(127\.0\.0\.1|localhost|\[::1\])(:\d+)?$/i;
/** A page served from a loopback name (the inspector's own when its port is the inspector's). */
const LOOPBACK_ORIGIN = /^http:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?$/i;

export class InspectorServer {
  readonly url: string;
  readonly #server: Server;
  readonly #wss: WebSocketServer;
  readonly #options: InspectorServerOptions;
  readonly #files = new Map<string, Buffer>();
  readonly #clients = new Set<WebSocket>();
  /** Clients skipped while their buffer was full: sent the whole state once drained. */
  readonly #stale = new Set<WebSocket>();
  #dirty = new Set<string>();
  #decisionsChanged = false;
  #straysChanged = false;
  #lastSystem = '';
  #unlisten: (() => void) | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;

  private constructor(server: Server, options: InspectorServerOptions, port: number) {
    this.#server = server;
    this.#options = options;
    this.url = `http://${HOST}:${port}/`;
    this.#wss = new WebSocketServer({ noServer: true, maxPayload: 4096 });
    const root = packageRoot();
    for (const file of new Set(Object.values(PAGE_FILES))) this.#files.set(file, readFileSync(join(root, 'src', 'inspect', 'page', file)));
    for (const name of DIAGRAMS) {
      const path = join(root, 'visualizations', `${name}.machine.svg`);
      if (existsSync(path)) this.#files.set(`${name}.svg`, readFileSync(path));
    }
    server.on('request', (request, response) => {
      try {
        this.#request(request, response);
      } catch (error) {
        this.#options.logger.warn({ reason: 'inspector_request_failed', path: request.url?.slice(0, 200), err: error }, 'inspector request failed; answered 500');
        if (response.headersSent) response.destroy();
        else response.writeHead(500, { 'content-type': 'text/plain', 'cache-control': 'no-store' }).end('the inspector could not answer this request\n');
      }
    });
    server.on('upgrade', (request, socket, head) => {
      try {
        // The feed carries every session's utterances and answers: only the inspector's own page (or a client that
        // sends no Origin: not a browser) may open it — never a page of another origin the user happens to visit.
        const origin = request.headers.origin;
        const ownPage = origin === undefined || (LOOPBACK_ORIGIN.test(origin) && new URL(origin).port === new URL(this.url).port);
        if (!LOOPBACK_HOST.test(request.headers.host ?? '') || !ownPage || urlOf(request.url, this.url)?.pathname !== '/feed') {
          socket.end('HTTP/1.1 403 Forbidden\r\n\r\n');
          return;
        }
        this.#wss.handleUpgrade(request, socket, head, (ws) => this.#connected(ws));
      } catch (error) {
        this.#options.logger.warn({ reason: 'inspector_request_failed', path: request.url?.slice(0, 200), err: error }, 'inspector feed request failed');
        socket.destroy();
      }
    });
  }

  /** Listen on loopback. A port already in use is reported by the returned error, not thrown past the caller. */
  static async start(options: InspectorServerOptions): Promise<InspectorServer> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      // Exclusive: a worker of `--workers` serves its own page, never a port shared across the workers.
      server.listen({ port: options.port, host: HOST, exclusive: true }, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const address = server.address();
    const port = typeof address === 'object' && address !== null ? address.port : options.port;
    return new InspectorServer(server, options, port);
  }

  /** Connected pages right now. */
  get clients(): number {
    return this.#clients.size;
  }

  state(): InspectorState {
    const { recorder } = this.#options;
    return { utterances: recorder.utterances(), decisions: recorder.decisions(), strays: recorder.strays(), system: this.#systemView() };
  }

  #systemView(): SystemView {
    const { system, cluster } = this.#options;
    return systemView(system, cluster?.());
  }

  #request(request: IncomingMessage, response: ServerResponse): void {
    if (!LOOPBACK_HOST.test(request.headers.host ?? '')) {
      response.writeHead(403, { 'content-type': 'text/plain' }).end('the inspector answers loopback names only\n');
      return;
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    const url = urlOf(request.url, this.url);
    if (url === undefined) {
      response.writeHead(400, { 'content-type': 'text/plain' }).end('not a URL\n');
      return;
    }
    const send = (status: number, type: string, body: string | Buffer, extra: Record<string, string> = {}): void => {
      response.writeHead(status, { 'content-type': type, 'cache-control': 'no-store', 'x-content-type-options': 'nosniff', ...extra }).end(body);
    };
    const page = PAGE_FILES[url.pathname];
    if (page !== undefined) {
      send(200, TYPES[page.split('.').pop()!]!, this.#files.get(page)!);
      return;
    }
    const diagram = /^\/diagrams\/([a-z-]+)\.svg$/.exec(url.pathname)?.[1];
    if (diagram !== undefined && this.#files.has(`${diagram}.svg`)) {
      send(200, TYPES['svg']!, this.#files.get(`${diagram}.svg`)!);
      return;
    }
    if (url.pathname === '/api/state') {
      // Every session's utterances and answers: never for a page of another site (a navigation typed by the user,
      // curl and the inspector's own page pass).
      const refused = nonLocalRequest(request.headers);
      if (refused !== undefined) {
        send(403, 'text/plain', `refused (${refused}): the inspector's state is for this machine's programs and its own page only\n`);
        return;
      }
      send(200, 'application/json', JSON.stringify(this.state()));
      return;
    }
    if (url.pathname === '/api/trace') {
      const session = url.searchParams.get('session') ?? '';
      const utterance = url.searchParams.get('utterance') ?? '';
      const trace = this.#options.recorder.trace(`${session}\u0000${utterance}`);
      if (trace === undefined) {
        send(404, 'application/json', JSON.stringify({ error: 'no such utterance in the inspector\'s ring', session, utterance }));
        return;
      }
      const file = `trace-${session}-${utterance}.json`.replace(/[^A-Za-z0-9._-]/g, '_');
      send(200, 'application/json', `${JSON.stringify(trace, null, 2)}\n`, { 'content-disposition': `attachment; filename="${file}"` });
      return;
    }
    send(404, 'text/plain', 'not found\n');
  }

  #connected(ws: WebSocket): void {
    this.#clients.add(ws);
    ws.on('close', () => this.#disconnected(ws));
    ws.on('error', () => ws.terminate());
    ws.on('message', () => {}); // the page only listens; anything it sends is ignored
    if (this.#unlisten === undefined) this.#listen();
    this.#sendState(ws);
  }

  /** The whole state to one page; a state that cannot be sent is logged and the page closed (it reconnects). */
  #sendState(ws: WebSocket): void {
    try {
      const state = this.state();
      this.#lastSystem = JSON.stringify(state.system);
      const hello: FeedMessage = { type: 'hello', ...state };
      ws.send(JSON.stringify(hello));
    } catch (error) {
      this.#options.logger.warn({ reason: 'inspector_feed_failed', err: error }, 'inspector could not send the page its state; closing it');
      ws.close(1011, 'inspector state unavailable');
    }
  }

  #disconnected(ws: WebSocket): void {
    this.#clients.delete(ws);
    this.#stale.delete(ws);
    if (this.#clients.size === 0) this.#quiet();
  }

  /** The first page connected: hear the recorder's changes and flush them on a timer. */
  #listen(): void {
    this.#unlisten = this.#options.recorder.onChange((change) => {
      if ('utterance' in change) this.#dirty.add(change.utterance);
      else this.#straysChanged = true;
    });
    this.#options.recorder.setDetailed(true);
    this.#timer = setInterval(() => {
      try {
        this.#flush();
      } catch (error) {
        // What changed is let go (a page gets it with its next whole state), so one failure is logged once.
        this.#dirty = new Set();
        this.#decisionsChanged = false;
        this.#straysChanged = false;
        this.#options.logger.warn({ reason: 'inspector_feed_failed', err: error }, 'inspector feed update failed; the pages get the whole state later');
        for (const ws of this.#clients) this.#stale.add(ws);
      }
    }, this.#options.flushMs ?? 100);
    this.#timer.unref();
  }

  /** The last page left: nothing is listened to or computed any more. */
  #quiet(): void {
    this.#unlisten?.();
    this.#unlisten = undefined;
    this.#options.recorder.setDetailed(false);
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#dirty.clear();
    this.#decisionsChanged = false;
    this.#straysChanged = false;
  }

  #flush(): void {
    const { recorder } = this.#options;
    const utterances: UtteranceView[] = [];
    for (const key of this.#dirty) {
      const view = recorder.utterance(key);
      if (view === undefined) continue;
      utterances.push(view);
      if (view.decision !== undefined) this.#decisionsChanged = true;
    }
    this.#dirty = new Set();
    const systemNow = this.#systemView();
    const systemText = JSON.stringify(systemNow);
    const systemChanged = systemText !== this.#lastSystem;
    this.#lastSystem = systemText;
    for (const ws of this.#stale) {
      if (ws.bufferedAmount < MAX_BUFFERED_BYTES) {
        this.#stale.delete(ws);
        this.#sendState(ws);
      }
    }
    if (utterances.length === 0 && !systemChanged && !this.#straysChanged && !this.#decisionsChanged) return;
    const update: FeedMessage = {
      type: 'update',
      utterances,
      ...(this.#decisionsChanged ? { decisions: recorder.decisions() } : {}),
      ...(this.#straysChanged ? { strays: recorder.strays() } : {}),
      ...(systemChanged ? { system: systemNow } : {}),
    };
    this.#decisionsChanged = false;
    this.#straysChanged = false;
    const frame = JSON.stringify(update);
    for (const ws of this.#clients) {
      if (this.#stale.has(ws)) continue;
      if (ws.bufferedAmount >= MAX_BUFFERED_BYTES) {
        this.#stale.add(ws);
        this.#options.logger.warn({ reason: 'inspector_client_slow', buffered: ws.bufferedAmount }, 'inspector page is not keeping up; it gets the whole state once it has caught up');
        continue;
      }
      ws.send(frame);
    }
  }

  async close(): Promise<void> {
    this.#quiet();
    for (const ws of this.#clients) ws.close(1001, 'daemon shutting down');
    this.#wss.close();
    await new Promise<void>((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }
}
