/**
 * The ready daemon: the embedded OVOS-compatible bus (or a client of an existing messagebus), the actor system on
 * it, and — unless switched off — the example skills as real websocket clients of that bus.
 */
import { BusClient } from '../bus/ws-client.js';
import { BusServer } from '../bus/ws-server.js';
import { DEFAULT_CONFIG, type Config } from '../config/defaults.js';
import type { Bus } from '../bus/bus.js';
import { systemClock, type Clock } from '../clock/clock.js';
import { createRecordedSystem, InspectorRecorder } from '../inspect/recorder.js';
import { InspectorServer } from '../inspect/server.js';
import { createMetrics, serveMetrics } from '../metrics/metrics.js';
import { startMemoryReclaimer } from './memory-reclaim.js';
import { RegistryStore } from '../plugins/fallback/registry-store.js';
import { lstatSync, renameSync } from 'node:fs';
import { isLoopbackHost } from '../bus/loopback.js';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Logger } from '../log/logger.js';
import { connectSkill, runCommonQuerySkill, runFallbackSkill } from '../skills/index.js';
import { dontKnowSkill, localKnowledgeSkill, meaningOfLifeSkill } from '../skills/example-skills.js';
import { createContestSystem, type ContestSystem } from '../system.js';
import { startStageEndpoint, type StageEndpoint } from '../stage-service/endpoint.js';
import { linkToken } from '../stage-service/link-token.js';
import type { NatsCluster } from '../cluster/nats-cluster.js';

export { isLoopbackHost };

export interface Daemon {
  /** The bus URL skills connect to. */
  readonly url: string;
  readonly system: ContestSystem;
  /** The live inspector page, unless switched off (or its port was taken: logged, the daemon runs on without it). */
  readonly inspector: InspectorServer | undefined;
  /** Where the ovos-core plugin's stage requests are answered past the bus, when ovos-core takes the utterances. */
  readonly stageLinkUrl: string | undefined;
  /** The Prometheus endpoint, when `metrics.port` is set. */
  readonly metricsUrl: string | undefined;
  /** This daemon's place in a cluster on NATS, when `cluster.nats` is set (src/cluster/). */
  readonly cluster: NatsCluster | undefined;
  /**
   * Graceful shutdown: new utterances are refused with their handled, those in flight get `shutdown.graceMs` to
   * finish (then are stopped, each with its handled), then the skills, the page and the bus close — clients with
   * code 1001 (going away).
   */
  close(): Promise<void>;
}

function clientOf(url: string, config: Config, logger: Logger): BusClient {
  return new BusClient({
    url,
    heartbeatMs: config.bus.heartbeatMs,
    reconnectInitialMs: config.bus.reconnectInitialMs,
    reconnectMaxMs: config.bus.reconnectMaxMs,
    maxFrameBytes: config.bus.maxFrameBytes,
    logger,
    // A joined bus may be ovos-messagebus, which holds frames back until acknowledged (src/bus/README.md).
    quickAck: true,
  });
}

/**
 * The name of a bus in a file name: the embedded bus's host, port (the one bound, for port 0) and route
 * (`127.0.0.1-8181-core`), or the joined bus's URL (`ws-10.0.0.5-8181-core`). Two buses never share one.
 */
export function busKey(bus: { readonly url: string | null; readonly host: string; readonly route: string }, port: number): string {
  let parts: string[];
  if (bus.url === null) parts = [bus.host, String(port), bus.route];
  else {
    const url = new URL(bus.url);
    parts = [url.protocol.replace(/:$/, ''), url.hostname, url.port === '' ? (url.protocol === 'wss:' ? '443' : '80') : url.port, url.pathname + url.search];
  }
  return parts
    .map((part) => part.replace(/[^A-Za-z0-9._]+/g, '_').replace(/^_+|_+$/g, ''))
    .filter((part) => part !== '')
    .join('-');
}

/**
 * `fallback.registryFile` with `$STATE/` expanded to `$XDG_STATE_HOME/ovos-contests/` (default ~/.local/state) and
 * `$BUS` to `busKey`: one registry per bus, so two daemons of one user never restore each other's skills.
 */
export function registryPath(file: string, bus: string, env: NodeJS.ProcessEnv = process.env): string {
  const named = file.replaceAll('$BUS', bus);
  if (!named.startsWith('$STATE/')) return named;
  return join(stateDir(env), named.slice('$STATE/'.length));
}

/** `$STATE`: the daemon's own folder, `$XDG_STATE_HOME/ovos-contests` (default ~/.local/state/ovos-contests). */
export function stateDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env['XDG_STATE_HOME'] !== undefined && env['XDG_STATE_HOME'] !== '' ? env['XDG_STATE_HOME'] : join(homedir(), '.local', 'state');
  return join(base, 'ovos-contests');
}

/**
 * What the bus served or joined exposes beyond this machine, if anything (one warn at start). The bus has no
 * authentication: served on a non-loopback address, anyone who can reach it can drive the assistant and read every
 * message; joined over ws:// beyond loopback, its traffic can be read and forged on the network.
 */
export function busExposure(bus: { readonly url: string | null; readonly host: string }): { readonly reason: 'bus_not_loopback' | 'bus_unencrypted'; readonly message: string } | undefined {
  if (bus.url === null) {
    if (isLoopbackHost(bus.host)) return undefined;
    return {
      reason: 'bus_not_loopback',
      message: 'the bus listens beyond this machine and has no authentication: anyone who can reach this address can drive the assistant and read every message (--host 127.0.0.1, or firewall the port)',
    };
  }
  const url = new URL(bus.url);
  if (url.protocol !== 'ws:' || isLoopbackHost(url.hostname)) return undefined;
  return {
    reason: 'bus_unencrypted',
    message: 'the bus is joined over unencrypted ws:// beyond this machine: anyone on the network path can read every message and forge messages to the assistant; use wss://',
  };
}

/** The one registry file every daemon of a user shared before it was kept per bus. */
const SHARED_FILE = 'fallback-registry.json';

/**
 * After an upgrade, the first daemon that starts with the default registry file and has no file of its own yet adopts
 * the old shared one (renamed: no other daemon takes it too). Workshop skills never register again, so dropping it
 * would lose them; what it holds of other buses costs nothing much — restored spec registrations are dormant, legacy
 * ones cost at most one ping timeout each.
 */
function adoptSharedFile(file: string, logger: Logger): void {
  const shared = join(dirname(file), SHARED_FILE);
  try {
    // lstat, not stat: a link is judged as a link, never by where it leads.
    if (lstatSync(file, { throwIfNoEntry: false }) !== undefined) return;
    const found = lstatSync(shared, { throwIfNoEntry: false });
    if (found === undefined) return;
    if (!found.isFile()) {
      const link = found.isSymbolicLink();
      logger.warn({ reason: link ? 'registry_file_symlink' : 'registry_file_not_adopted', from: shared, file }, `the shared registry file is ${link ? 'a symbolic link' : 'not a regular file'}: not adopted, not followed`);
      return;
    }
    // rename moves the entry itself (were it swapped for a link meanwhile, the store refuses to read through it); the
    // store makes the file 0600 when it opens it.
    renameSync(shared, file);
    logger.info({ reason: 'registry_file_adopted', from: shared, file }, 'the registry file shared by every daemon of this user is now this bus\'s own');
  } catch (error) {
    logger.warn({ reason: 'registry_file_not_adopted', from: shared, file, err: error }, 'the shared registry file could not be adopted; starting without it');
  }
}

export async function startDaemon(config: Config, logger: Logger): Promise<Daemon> {
  const closers: Array<() => Promise<void>> = [];
  // The registry survives restarts, one file per bus: skills that registered before are asked again once they may be
  // on the bus (src/plugins/README.md, "Liveness and restarts").
  let store: RegistryStore | undefined;
  const openStore = (port: number): void => {
    // A daemon of a cluster keeps no file of its own: the cluster's state bucket (src/cluster/README.md) is its memory.
    if (config.fallback.registryFile === null || config.cluster.nats !== null) return;
    const file = registryPath(config.fallback.registryFile, busKey(config.bus, port));
    if (config.fallback.registryFile === DEFAULT_CONFIG.fallback.registryFile) adoptSharedFile(file, logger);
    const privateDir = config.fallback.registryFile.startsWith('$STATE/') ? stateDir() : undefined;
    store = RegistryStore.open(file, { logger: logger.child({ component: 'registry-store' }), forgetAfterMs: config.fallback.forgetAfterMs, ...(privateDir === undefined ? {} : { privateDir }) });
  };
  let url: string;
  let system: ContestSystem;
  let cluster: NatsCluster | undefined;
  let clients: (() => number) | undefined;
  // The inspector's recorder sees every bus message and every contest (createRecordedSystem).
  const recorder = config.inspector.enabled
    ? new InspectorRecorder({ clock: systemClock, maxUtterances: config.inspector.recentUtterances, maxBytes: config.inspector.maxBytes })
    : undefined;
  const systemOn = (bus: Bus, clock: Clock = systemClock): ContestSystem => {
    const options = { bus, config, logger, clock, ...(store === undefined ? {} : { registryStore: store }) };
    if (recorder === undefined) return createContestSystem(options);
    const recorded = createRecordedSystem(recorder, options);
    closers.push(async () => recorded.detach());
    return recorded.system;
  };
  if (config.bus.url !== null) {
    const client = clientOf(config.bus.url, config, logger.child({ component: 'bus-client' }));
    url = config.bus.url;
    openStore(config.bus.port);
    // The system subscribes before the first connection so it sees that first "up" too.
    system = systemOn(client);
    closers.push(() => client.close());
    const exposure = busExposure(config.bus);
    if (exposure !== undefined) logger.warn({ reason: exposure.reason, url }, exposure.message);
    logger.info({ url }, 'connecting to an existing OVOS messagebus');
    client.connect();
    // Serve as soon as the bus is there; an unreachable bus is retried for ever (with backoff), and said so.
    await client.waitUntilUp(5_000).catch(() => logger.warn({ url, reason: 'bus_unreachable' }, 'bus not reachable yet; still retrying'));
  } else if (config.cluster.nats !== null) {
    // One daemon of a cluster: its clients' traffic and its contests' travel on NATS (src/cluster/README.md).
    // Loaded only here: a daemon alone never loads the NATS client.
    const { NatsCluster } = await import('../cluster/nats-cluster.js');
    const { natsAccess } = await import('../cluster/nats-auth.js');
    const access = (() => {
      try {
        return natsAccess({ ...config.cluster, nats: config.cluster.nats }, process.env);
      } catch (error) {
        throw Object.assign(error instanceof Error ? error : new Error(String(error)), { service: 'nats' });
      }
    })();
    const joined = await NatsCluster.connect({
      access,
      partitions: config.cluster.partitions,
      heartbeatMs: config.cluster.heartbeatMs,
      deadAfterMs: config.cluster.deadAfterMs,
      // A partition is given up once its utterances end: at most a whole match and a whole handler.
      drainMs: config.orchestrator.matchTimeoutMs + config.orchestrator.handlerTimeoutMs,
      stateTtlMs: config.fallback.forgetAfterMs,
      replicas: config.cluster.replicas,
      handlerMs: config.orchestrator.handlerTimeoutMs,
      logger: logger.child({ component: 'cluster' }),
      ...(config.cluster.nodeId === null ? {} : { nodeId: config.cluster.nodeId }),
    }).catch((error: unknown) => {
      throw Object.assign(error instanceof Error ? error : new Error(String(error)), { service: 'nats' });
    });
    cluster = joined;
    const server = await BusServer.start({ ...config.bus, relay: joined, connectionPrefix: `${joined.node}/`, logger: logger.child({ component: 'bus' }) }).catch(async (error: unknown) => {
      await joined.close();
      throw error;
    });
    url = server.url;
    openStore(server.port);
    // Its contests' deadlines wait for the replies other daemons' clients sent before they fell due (contestClock).
    system = systemOn(joined.busOf(server), joined.contestClock(systemClock));
    clients = () => server.clientCount;
    // Closed after the bus: the last handled messages still travel on NATS.
    closers.push(() => server.close(), () => joined.close());
    joined.shareFallback(system.fallback);
    await joined.attach(server);
    logger.info({ url, nats: access.shown, node: joined.node, partitions: config.cluster.partitions }, 'OVOS bus listening, one daemon of a cluster on NATS');
  } else {
    const server = await BusServer.start({ ...config.bus, logger: logger.child({ component: 'bus' }) }); // heartbeatMs included
    url = server.url;
    openStore(server.port);
    system = systemOn(server);
    clients = () => server.clientCount;
    closers.push(() => server.close());
    const exposure = busExposure(config.bus);
    if (exposure !== undefined) logger.warn({ reason: exposure.reason, host: config.bus.host, url }, exposure.message);
    logger.info({ url }, 'OVOS bus listening');
  }
  let metricsUrl: string | undefined;
  let stageLink: StageEndpoint | undefined;
  if (config.metrics.port !== null) {
    const joined = cluster;
    const metrics = createMetrics(system, {
      ...(clients === undefined ? {} : { clients }),
      ...(joined === undefined ? {} : { cluster: () => joined.view() }),
      // The stage link starts after the metrics: read when scraped.
      ...(config.orchestrator.takesUtterances ? {} : { stageLinkRefused: () => stageLink?.refused() ?? {} }),
    });
    // Unlike the inspector, metrics were asked for: a port in use stops the start (main.ts says which and why).
    const served = await serveMetrics(metrics, config.metrics.port).catch(async (error: unknown) => {
      metrics.close();
      system.close();
      for (const close of closers) await close();
      throw Object.assign(error instanceof Error ? error : new Error(String(error)), { service: 'metrics' });
    });
    metricsUrl = served.url;
    closers.unshift(async () => {
      await served.close();
      metrics.close();
    });
    logger.info({ url: served.url }, 'Prometheus metrics at this address');
  }
  let inspector: InspectorServer | undefined;
  if (recorder !== undefined) {
    try {
      const joined = cluster;
      inspector = await InspectorServer.start({ recorder, system, port: config.inspector.port, logger: logger.child({ component: 'inspector' }), ...(joined === undefined ? {} : { cluster: () => joined.view() }) });
      const started = inspector;
      closers.unshift(() => started.close());
      logger.info({ url: inspector.url }, 'inspector page at this address');
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      const reason = code === 'EADDRINUSE' ? 'inspector_port_in_use' : 'inspector_failed';
      logger.warn({ reason, port: config.inspector.port, err: code === 'EADDRINUSE' ? undefined : error }, `inspector not served${code === 'EADDRINUSE' ? `: port ${config.inspector.port} is in use (--inspector-port P, or --no-inspector)` : ''}; the daemon runs on without it`);
    }
  }
  // ovos-core takes the utterances and asks our stages: its plugin's direct link (src/stage-service/endpoint.ts).
  let stageLinkUrl: string | undefined;
  if (!config.orchestrator.takesUtterances && config.orchestrator.stagePort !== null) {
    try {
      const named = config.orchestrator.stageTokenFile;
      const token = linkToken(named.startsWith('$STATE/') ? join(stateDir(), named.slice('$STATE/'.length)) : named, named.startsWith('$STATE/'));
      if (token.openToAll) logger.warn({ reason: 'stage_token_open', file: token.file }, 'the stage link\'s token file can be read by every user of this machine: any of them can ask our stages (chmod 600, or 640 with ovos-core\'s group)');
      const endpoint = await startStageEndpoint({ service: system.stageService, port: config.orchestrator.stagePort, token, logger: logger.child({ component: 'stage-link' }) });
      stageLink = endpoint;
      stageLinkUrl = endpoint.url;
      closers.unshift(() => endpoint.close());
      logger.info({ url: endpoint.url }, 'stage requests also answered at this address (the ovos-core plugin\'s daemon_url)');
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      logger.warn(
        { reason: code === 'EADDRINUSE' ? 'stage_port_in_use' : 'stage_link_failed', port: config.orchestrator.stagePort, err: code === 'EADDRINUSE' ? undefined : error },
        `stage link not served${code === 'EADDRINUSE' ? `: port ${config.orchestrator.stagePort} is in use (--stage-port P)` : ''}; the plugin's requests are answered on the bus`,
      );
    }
  }
  logger.info({ pipeline: config.pipeline, stages: system.orchestrator.stages.map((s) => s.pipelineId) }, 'pipeline ready');

  if (config.exampleSkills) {
    // Each example skill is its own websocket client of the bus, as a skill in another process would be, connected
    // with the skill SDK (`ovos-contests/skill`) like any skill of a user's. The embedded bus is up at once; a
    // foreign bus may not be up yet (a daemon started before ovos-messagebus under systemd): the skill keeps
    // retrying and registers whenever the bus comes up — nothing to wait for here.
    const start = async (skillId: string, run: (bus: Bus) => () => void): Promise<void> => {
      const skill = await connectSkill(url, run, {
        logger: logger.child({ component: 'skill', skill_id: skillId }),
        waitMs: config.bus.url === null ? 5_000 : 0,
        bus: config.bus,
      });
      closers.unshift(() => skill.close());
    };
    for (const skill of [meaningOfLifeSkill, dontKnowSkill]) await start(skill.skillId, (bus) => runFallbackSkill(bus, skill));
    await start(localKnowledgeSkill.skillId, (bus) => runCommonQuerySkill(bus, localKnowledgeSkill));
    logger.info({ skills: [meaningOfLifeSkill.skillId, dontKnowSkill.skillId, localKnowledgeSkill.skillId] }, 'example skills connected');
  }

  // Last: nothing after it can fail the start and leave its timer running.
  if (config.memory.idleReclaimMs !== null) {
    const reclaimer = startMemoryReclaimer({ clock: systemClock, logger: logger.child({ component: 'memory' }), intervalMs: config.memory.idleReclaimMs });
    closers.unshift(async () => reclaimer.stop());
  }

  return {
    url,
    system,
    inspector,
    stageLinkUrl,
    metricsUrl,
    cluster,
    close: async () => {
      // A daemon of a cluster hands its sessions on first: what it runs ends here, what comes next runs elsewhere.
      await cluster?.leave(config.shutdown.graceMs);
      // Graceful: utterances in flight may finish (their skills still connected), new ones are refused at once.
      const left = await system.drain(config.shutdown.graceMs);
      if (left > 0) logger.warn({ reason: 'shutdown_grace_elapsed', in_flight: left, grace_ms: config.shutdown.graceMs }, 'utterances still in flight at the end of the shutdown grace: stopped, each ends with its handled');
      system.supervisor.stopAll('shutdown');
      system.close();
      // The stopped utterances' handled are sent from promise continuations: let them out before the bus closes.
      await new Promise<void>((resolve) => setImmediate(resolve));
      for (const close of closers) await close();
      await store?.flush();
    },
  };
}
