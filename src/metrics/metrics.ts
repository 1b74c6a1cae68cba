/**
 * Prometheus metrics (opt-in: `--metrics-port`, loopback only), with prom-client in a registry of its own — so two
 * systems in one process never share counters. Everything is counted from the same places the inspector reads:
 * the supervisor's observer (contests, drops), the bus (decisions), the fallback plugin (ping timeouts, circuit
 * breaker). Label values come from bounded sets only: contest kinds and stage ids from the config, reason codes from
 * the code, and skill_ids of registered skills (the registry is bounded).
 */
import { nonLocalRequest } from '../bus/loopback.js';
import type { ClusterView } from '../cluster/nats-cluster.js';
import { createServer, type Server } from 'node:http';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Unsubscribe } from '../bus/bus.js';
import { stringField, utteranceIdOf, type Message } from '../bus/message.js';
import { sessionIdOf } from '../bus/session.js';
import type { ContestSystem } from '../system.js';
import type { ContestInfo, ContestResult } from '../supervisor/supervisor.js';

const SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export interface Metrics {
  readonly registry: Registry;
  /** The exposition text (what GET /metrics serves). */
  text(): Promise<string>;
  close(): void;
}

/** The outcome label of a finished contest: the utterance's outcome, else done / stopped / error. */
function outcomeOf(info: ContestInfo, result: ContestResult<unknown>): string {
  if (result.status !== 'done') return result.status;
  if (info.kind !== 'utterance') return 'done';
  const outcome = (result.output as { outcome?: unknown } | null)?.outcome;
  return typeof outcome === 'string' ? outcome : 'done';
}

export function createMetrics(
  system: ContestSystem,
  options: { readonly clients?: () => number; readonly cluster?: () => ClusterView; readonly stageLinkRefused?: () => Readonly<Record<string, number | undefined>> } = {},
): Metrics {
  const registry = new Registry();
  registry.setDefaultLabels({ service: 'ovos-contests' });
  collectDefaultMetrics({ register: registry });
  const { stageLinkRefused } = options;
  if (stageLinkRefused !== undefined) {
    new Counter({
      name: 'ovos_stage_link_refused_total',
      help: "What the stage link (the ovos-core plugin's connection) refused, by reason: connections (unauthorized, not_local, too_many_links) and requests (too_many_in_flight, slow_reader, malformed, …).",
      labelNames: ['reason'],
      registers: [registry],
      collect() {
        this.reset();
        for (const [reason, count] of Object.entries(stageLinkRefused())) if (count !== undefined) this.inc({ reason }, count);
      },
    });
  }
  const { supervisor, fallback, orchestrator } = system;
  const now = (): number => supervisor.clock.now();

  const started = new Counter({ name: 'ovos_contests_started_total', help: 'Contests started, by kind (utterance, fallback, common_query).', labelNames: ['kind'], registers: [registry] });
  const ended = new Counter({
    name: 'ovos_contests_ended_total',
    help: 'Contests ended, by kind and outcome (an utterance: completed, unmatched, handler_error, handler_timeout; others: done; or stopped / error).',
    labelNames: ['kind', 'outcome'],
    registers: [registry],
  });
  const duration = new Histogram({ name: 'ovos_contest_duration_seconds', help: 'How long each contest ran, by kind and stage.', labelNames: ['kind', 'stage'], buckets: SECONDS, registers: [registry] });
  const decision = new Histogram({
    name: 'ovos_decision_seconds',
    help: 'From an utterance reaching the orchestrator to its decision: ovos.intent.matched (stage = the pipeline_id that matched), or no match (stage = "unmatched").',
    labelNames: ['stage'],
    buckets: SECONDS,
    registers: [registry],
  });
  const drops = new Counter({ name: 'ovos_messages_dropped_total', help: 'Messages dropped, by reason code (the same codes as the logs).', labelNames: ['reason'], registers: [registry] });
  const pingTimeouts = new Counter({ name: 'ovos_fallback_ping_timeouts_total', help: 'Fallback pings not answered within fallback.pingTimeoutMs, by skill.', labelNames: ['skill_id'], registers: [registry] });
  const suspensions = new Counter({ name: 'ovos_fallback_suspensions_total', help: 'Fallback skills suspended by the circuit breaker, by skill.', labelNames: ['skill_id'], registers: [registry] });
  new Gauge({
    name: 'ovos_live_contests',
    help: 'Contests running right now.',
    registers: [registry],
    collect() {
      this.set(supervisor.size);
    },
  });
  new Gauge({
    name: 'ovos_utterances_in_flight',
    help: 'Utterances between their arrival and their ovos.utterance.handled.',
    registers: [registry],
    collect() {
      this.set(orchestrator.inFlight);
    },
  });
  const clients = options.clients;
  if (clients !== undefined) {
    new Gauge({
      name: 'ovos_bus_clients',
      help: 'Websocket clients connected to the embedded bus.',
      registers: [registry],
      collect() {
        this.set(clients());
      },
    });
  }

  new Gauge({
    name: 'ovos_fallback_registrations',
    help: 'Fallback registrations known (every session, both dialects; away and dormant ones included).',
    registers: [registry],
    collect() {
      this.set(fallback.registry.entries().length);
    },
  });
  const cluster = options.cluster;
  if (cluster !== undefined) {
    // A daemon of a cluster (src/cluster/): its own share and the cluster as it sees it.
    new Gauge({
      name: 'ovos_cluster_members',
      help: 'Daemons of the cluster alive and taking partitions, as this daemon sees them (itself included).',
      registers: [registry],
      collect() {
        this.set(cluster().members.length);
      },
    });
    new Gauge({
      name: 'ovos_cluster_partitions_owned',
      help: 'Partitions (of cluster.partitions) whose sessions run on this daemon.',
      registers: [registry],
      collect() {
        this.set(cluster().owned.length);
      },
    });
    new Gauge({
      name: 'ovos_cluster_entries_waiting',
      help: "Utterance entries waiting for their partition's next owner (a partition moving or its daemon lost).",
      registers: [registry],
      collect() {
        this.set(cluster().waiting);
      },
    });
    new Counter({
      name: 'ovos_cluster_failovers_total',
      help: 'Utterances of a lost daemon this daemon ran again or ended.',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(cluster().failovers);
      },
    });
    new Counter({
      name: 'ovos_cluster_fenced_total',
      help: 'Frames dropped as said by a daemon taken for gone, of utterances taken over from it.',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(cluster().fenced);
      },
    });
    new Counter({
      name: 'ovos_cluster_frames_lost_total',
      help: "Other daemons' messages missed on NATS and not to be had again.",
      registers: [registry],
      collect() {
        this.reset();
        this.inc(cluster().framesLost);
      },
    });
    new Counter({
      name: 'ovos_cluster_messages_invalid_total',
      help: 'Messages and bucket entries read from NATS that do not read as a daemon\'s (cluster_message_invalid, cluster_frame_invalid, cluster_ends_invalid): dropped.',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(cluster().invalid);
      },
    });
    // The NATS client's own counts of this daemon's traffic, by direction.
    const traffic = (name: string, help: string, of: (nats: ClusterView['nats']) => { readonly out: number; readonly in: number }): void => {
      new Counter({
        name,
        help,
        labelNames: ['direction'],
        registers: [registry],
        collect() {
          const counts = of(cluster().nats);
          this.reset();
          this.inc({ direction: 'out' }, counts.out);
          this.inc({ direction: 'in' }, counts.in);
        },
      });
    };
    traffic(
      'ovos_cluster_nats_messages_total',
      "Messages this daemon published on NATS (direction out: frames, notes, KV writes) and received (in), as its NATS client counts them; the heartbeats' own connection not included.",
      (nats) => ({ out: nats.messagesOut, in: nats.messagesIn }),
    );
    traffic('ovos_cluster_nats_bytes_total', 'Bytes of those messages, published (direction out) and received (in).', (nats) => ({ out: nats.bytesOut, in: nats.bytesIn }));
    new Counter({
      name: 'ovos_cluster_deadline_waits_total',
      help: "Waits of this daemon's due deadlines for the word of the other daemons with clients (outcome: answered, or timed_out after cluster.deadAfterMs).",
      labelNames: ['outcome'],
      registers: [registry],
      collect() {
        this.reset();
        const waits = cluster().deadlineWaits;
        this.inc({ outcome: 'answered' }, waits.answered);
        this.inc({ outcome: 'timed_out' }, waits.timedOut);
      },
    });
    new Counter({
      name: 'ovos_cluster_frames_kept_here_total',
      help: "Frames of this daemon's utterances kept off NATS: no other daemon had a client to hand them to.",
      registers: [registry],
      collect() {
        this.reset();
        this.inc(cluster().keptHere);
      },
    });
  }

  const startedAt = new Map<string, number>();
  /** Utterances awaiting their decision: session + utterance_id → arrival (clock ms). */
  const awaiting = new Map<string, number>();
  const key = (sessionId: string, utteranceId: string): string => `${sessionId}\u0000${utteranceId}`;
  const decided = (stage: string, t0: number): void => {
    decision.observe({ stage: stage === 'unmatched' || system.orchestrator.stages.some((s) => s.pipelineId === stage) ? stage : 'other' }, (now() - t0) / 1000);
  };
  const unobserve = supervisor.observe({
    contestStarted: (info) => {
      started.inc({ kind: info.kind });
      startedAt.set(info.id, now());
      if (info.kind === 'utterance' && info.utteranceId !== undefined) awaiting.set(key(info.sessionId, info.utteranceId), now());
    },
    contestEnded: (info, result) => {
      ended.inc({ kind: info.kind, outcome: outcomeOf(info, result) });
      const t0 = startedAt.get(info.id);
      startedAt.delete(info.id);
      if (t0 !== undefined) duration.observe({ kind: info.kind, stage: info.label }, (now() - t0) / 1000);
      if (info.kind === 'utterance' && info.utteranceId !== undefined) {
        // Unmatched: the utterance ends the moment it is decided (its ovos.intent.unmatched is still on its way).
        // A match whose message has not come through yet (an in-process handler that finished at once) is counted
        // here too, at its end.
        const k = key(info.sessionId, info.utteranceId);
        const t = awaiting.get(k);
        awaiting.delete(k);
        const output = result.status === 'done' ? (result.output as { outcome?: unknown; stage?: unknown } | null) : null;
        if (t !== undefined && output !== null) decided(output.outcome === 'unmatched' ? 'unmatched' : String(output.stage), t);
      }
    },
    dropped: (drop) => drops.inc({ reason: drop.reason }),
  });
  // A match is decided when its ovos.intent.matched goes out (the handler runs after).
  const unsubscribe: Unsubscribe = supervisor.bus.subscribe((message: Message) => {
    if (message.type !== 'ovos.intent.matched') return;
    const utteranceId = utteranceIdOf(message);
    const sessionId = sessionIdOf(message);
    if (utteranceId === undefined || sessionId === undefined) return;
    const t0 = awaiting.get(key(sessionId, utteranceId));
    if (t0 === undefined) return; // not one of ours, or already counted
    awaiting.delete(key(sessionId, utteranceId));
    decided(stringField(message.data, 'pipeline_id') ?? 'other', t0);
  });
  const unlisten = fallback.onSkillEvent((event) => {
    if (event.type === 'ping_timeout') pingTimeouts.inc({ skill_id: event.skill_id });
    else if (event.type === 'suspended') suspensions.inc({ skill_id: event.skill_id });
  });

  return {
    registry,
    text: () => registry.metrics(),
    close: () => {
      unobserve();
      unsubscribe();
      unlisten();
    },
  };
}

/** GET /metrics on 127.0.0.1:`port` (0: any free port; read `url`). */
export async function serveMetrics(metrics: Metrics, port: number): Promise<{ readonly url: string; close(): Promise<void> }> {
  const server: Server = createServer((request, response) => {
    // Process details and skill ids: for this machine's programs, never a page the user visits (src/bus/loopback.ts).
    const refused = nonLocalRequest(request.headers);
    if (refused !== undefined) {
      response.writeHead(403, { 'content-type': 'text/plain' }).end(`refused (${refused}): the metrics answer this machine's programs only\n`);
      return;
    }
    if (request.method !== 'GET' || new URL(request.url ?? '/', 'http://127.0.0.1').pathname !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found: GET /metrics\n');
      return;
    }
    metrics.text().then(
      (body) => response.writeHead(200, { 'content-type': metrics.registry.contentType }).end(body),
      () => response.writeHead(500, { 'content-type': 'text/plain' }).end('metrics failed\n'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // Exclusive: a worker of `--workers` serves its own metrics, never a port shared across the workers.
    server.listen({ port, host: '127.0.0.1', exclusive: true }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const bound = typeof address === 'object' && address !== null ? address.port : port;
  return {
    url: `http://127.0.0.1:${bound}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
