/**
 * What the benchmarks set up and tear down: configs derived from DEFAULT_CONFIG, the in-process system with
 * in-process skills, the websocket system (server + contest system here, skills in a child process, a driver
 * client), and the small waits and GC helpers. Every `start…` returns a `close` that releases every socket,
 * child process and timer it made, so the suite exits on its own.
 */
import { setImmediate as nextMacrotask } from 'node:timers/promises';
import { LocalBus } from '../../src/bus/local-bus.js';
import { BusClient } from '../../src/bus/ws-client.js';
import { BusServer } from '../../src/bus/ws-server.js';
import type { Clock } from '../../src/clock/clock.js';
import { DEFAULT_CONFIG, type Config } from '../../src/config/defaults.js';
import { createRecordedSystem, InspectorRecorder } from '../../src/inspect/recorder.js';
import { startDaemon, type Daemon } from '../../src/daemon/daemon.js';
import { silentLogger, type Logger } from '../../src/log/logger.js';
import { runFallbackSkill } from '../../src/skills/fallback-skill.js';
import { createContestSystem, type ContestSystem } from '../../src/system.js';
import { startRemoteSkills, type CommonQuerySkillPlan, type FallbackSkillPlan, type RemoteSkills } from './remote-skills.js';

/**
 * A deep copy of the defaults, so a benchmark can never alter what another one reads. The inspector stays on, as
 * for `npm start` (a daemon rig serves it), on any free port; no registry file is kept.
 */
function defaults(): Config {
  const base = structuredClone(DEFAULT_CONFIG) as Config;
  return { ...base, inspector: { ...base.inspector, port: 0 }, fallback: { ...base.fallback, registryFile: null } };
}

/** One fallback stage covering every priority, so a single contest sees the whole pool. */
export function fallbackConfig(pingTimeoutMs = DEFAULT_CONFIG.fallback.pingTimeoutMs): Config {
  const base = defaults();
  return {
    ...base,
    pipeline: ['fallback_high'],
    fallback: { ...base.fallback, pingTimeoutMs, stages: { fallback_high: [0, 100] } },
  };
}

/** Common query only (the fallback stages stay configured but are not in the pipeline). */
export function commonQueryConfig(pollClaimBoundMs: number): Config {
  const base = defaults();
  return { ...base, pipeline: ['common_query'], commonQuery: { ...base.commonQuery, pollClaimBoundMs } };
}

/**
 * The daemon exactly as `npm start` configures it (pipeline, stages, timeouts, poll and collection bounds), except
 * that it listens on an ephemeral port and starts no example skills: the benchmark brings its own, in a child process.
 */
export function daemonConfig(): Config {
  const base = defaults();
  return { ...base, bus: { ...base.bus, port: 0 }, exampleSkills: false };
}

/** `n` fallback skills with priorities 10, 20, …: all decline except the last (the worst case: n round trips). */
export function fallbackPlan(n: number): FallbackSkillPlan[] {
  return Array.from({ length: n }, (_, i) => ({ skillId: `fb-${(i + 1) * 10}`, priority: (i + 1) * 10, willing: i === n - 1 }));
}

export const isFallbackDispatch = (type: string): boolean => type.endsWith(':fallback');

export interface InProcessRig {
  readonly bus: LocalBus;
  readonly system: ContestSystem;
  close(): void;
}

/** The system on a `LocalBus` with the fallback skills registered in-process (they answer at once). */
export async function startInProcess(
  config: Config,
  skills: readonly FallbackSkillPlan[],
  options: { clock?: Clock; logger?: Logger; recorder?: InspectorRecorder } = {},
): Promise<InProcessRig> {
  const bus = new LocalBus();
  const systemOptions = {
    bus,
    config,
    logger: options.logger ?? silentLogger(),
    ...(options.clock === undefined ? {} : { clock: options.clock }),
  };
  // With a recorder: wired as the daemon wires its inspector's (the inspector benchmark).
  const system = options.recorder === undefined ? createContestSystem(systemOptions) : createRecordedSystem(options.recorder, systemOptions).system;
  const stops = skills.map((skill) =>
    runFallbackSkill(bus, {
      skillId: skill.skillId,
      priority: skill.priority,
      canHandle: () => skill.willing,
      answer: () => `${skill.skillId} handled it`,
    }),
  );
  await waitForRegistrations(system, skills.length);
  return {
    bus,
    system,
    close: () => {
      for (const stop of stops) stop();
      system.close();
    },
  };
}

export interface WsRig {
  readonly server: BusServer;
  readonly system: ContestSystem;
  /** The front end's own connection: it publishes utterances and observes everything. */
  readonly driver: BusClient;
  readonly skillsPid: number;
  close(): Promise<void>;
}

/** Bus server + contest system in this process, skills in a child process, a driver client here. */
export async function startWsRig(config: Config, skills: { fallback?: readonly FallbackSkillPlan[]; commonQuery?: readonly CommonQuerySkillPlan[] }): Promise<WsRig> {
  const logger = silentLogger();
  const server = await BusServer.start({ host: '127.0.0.1', port: 0, route: config.bus.route, maxFrameBytes: config.bus.maxFrameBytes, logger });
  const system = createContestSystem({ bus: server, config, logger });
  const closers: Array<() => Promise<void> | void> = [() => server.close(), () => system.close()];
  const close = async (): Promise<void> => {
    for (const closer of [...closers].reverse()) await closer();
  };
  try {
    const fallback = skills.fallback ?? [];
    const remote = await startRemoteSkills({ url: server.url, fallback, commonQuery: skills.commonQuery ?? [] });
    closers.push(() => remote.stop());
    await waitForRegistrations(system, fallback.length);
    const driver = await connectDriver(server.url, config, logger);
    closers.push(() => driver.close());
    return { server, system, driver, skillsPid: remote.pid, close };
  } catch (error) {
    await close();
    throw error;
  }
}

export interface DaemonRig {
  readonly daemon: Daemon;
  readonly system: ContestSystem;
  /** The front end's own connection: it publishes utterances and observes everything. */
  readonly driver: BusClient;
  readonly skills: RemoteSkills;
  close(): Promise<void>;
}

/** The real daemon (`startDaemon`: embedded bus server + contest system) here, skills in a child process, a driver client here. */
export async function startDaemonRig(
  config: Config,
  skills: { fallback?: readonly FallbackSkillPlan[]; commonQuery?: readonly CommonQuerySkillPlan[] },
  logger: Logger = silentLogger(),
): Promise<DaemonRig> {
  const daemon = await startDaemon(config, logger);
  const closers: Array<() => Promise<void> | void> = [() => daemon.close()];
  const close = async (): Promise<void> => {
    for (const closer of [...closers].reverse()) await closer();
  };
  try {
    const fallback = skills.fallback ?? [];
    const remote = await startRemoteSkills({ url: daemon.url, fallback, commonQuery: skills.commonQuery ?? [] });
    closers.push(() => remote.stop());
    await waitForRegistrations(daemon.system, fallback.length);
    const driver = await connectDriver(daemon.url, config, silentLogger());
    closers.push(() => driver.close());
    return { daemon, system: daemon.system, driver, skills: remote, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** The front end's own bus connection (it publishes utterances and observes everything), up. */
export async function connectDriver(url: string, config: Config, logger: Logger): Promise<BusClient> {
  const driver = new BusClient({
    url,
    heartbeatMs: config.bus.heartbeatMs,
    reconnectInitialMs: config.bus.reconnectInitialMs,
    reconnectMaxMs: config.bus.reconnectMaxMs,
    maxFrameBytes: config.bus.maxFrameBytes,
    logger,
  });
  driver.connect();
  await driver.waitUntilUp(5_000);
  return driver;
}

export async function waitForRegistrations(system: ContestSystem, count: number): Promise<void> {
  await waitUntil(() => system.fallback.registry.availableFor('default').size === count, 5_000, `${count} fallback registrations`);
}

/** Poll `condition` between macrotasks (so I/O and timers run) until it holds. */
export async function waitUntil(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise<void>((resolve) => setTimeout(resolve, 1));
  }
}

/** Let queued microtasks, immediates and I/O callbacks run. */
export async function settle(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await nextMacrotask();
}

const gcFunction = (globalThis as { gc?: () => void }).gc;

/** True when the process runs with --expose-gc. */
export const canCollectGarbage = typeof gcFunction === 'function';

/** Full GC, repeated (3 by default) so weak callbacks and finalizers queued by one pass are collected by the next. */
export async function collectGarbage(passes = 3): Promise<void> {
  if (gcFunction === undefined) return;
  for (let i = 0; i < passes; i++) {
    gcFunction();
    await nextMacrotask();
  }
}

export function heapUsed(): number {
  return process.memoryUsage().heapUsed;
}
