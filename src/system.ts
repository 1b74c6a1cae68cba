/**
 * Assemble the actor system on any bus: one supervisor (shared clock, shared inspection hook), the orchestrator,
 * and the plugins registered as pipeline stages. This is the library API the daemon itself uses.
 */
import type { Bus } from './bus/bus.js';
import { systemClock, type Clock } from './clock/clock.js';
import { configWarnings, type ConfigWarning } from './config/config.js';
import { DEFAULT_CONFIG, type Config } from './config/defaults.js';
import { silentLogger, type Logger } from './log/logger.js';
import { Orchestrator } from './orchestrator/orchestrator.js';
import { CommonQueryPlugin } from './plugins/common-query/common-query.plugin.js';
import type { Reranker } from '../machines/common-query/selection.js';
import { FallbackPlugin } from './plugins/fallback/fallback.plugin.js';
import type { RegistryStore } from './plugins/fallback/registry-store.js';
import { StageService } from './stage-service/stage-service.js';
import { Supervisor, type InspectionHook } from './supervisor/supervisor.js';

export interface SystemOptions {
  readonly bus: Bus;
  readonly config?: Config;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Sees every event of every contest actor (XState inspection protocol). */
  readonly inspect?: InspectionHook;
  /** Replaces raw `conf` ordering in common query (OVOS-COMMON-QUERY-1 §8 step 4). */
  readonly reranker?: Reranker;
  /** Fallback registrations kept across restarts (the daemon opens `fallback.registryFile`). */
  readonly registryStore?: RegistryStore;
}

export interface ContestSystem {
  readonly config: Config;
  /** `configWarnings(config)`: each was logged at warn when the system was created. */
  readonly configWarnings: readonly ConfigWarning[];
  readonly supervisor: Supervisor;
  readonly orchestrator: Orchestrator;
  readonly fallback: FallbackPlugin;
  readonly commonQuery: CommonQueryPlugin;
  /** Answers ovos-core's pipeline plugin (src/ovos-plugin/): one stage's decision per request. */
  readonly stageService: StageService;
  /**
   * Graceful shutdown: take no new utterance (each is answered with its handled, `error: "shutting_down"`) and
   * wait up to `graceMs` for those in flight — contests and skills' handlers — to end on their own. Resolves with
   * how many were still in flight when the bound ran out (0: all ended); `close` then stops them.
   */
  drain(graceMs: number): Promise<number>;
  close(): void;
}

export function createContestSystem(options: SystemOptions): ContestSystem {
  const config = options.config ?? DEFAULT_CONFIG;
  const supervisorOptions = {
    bus: options.bus,
    clock: options.clock ?? systemClock,
    logger: options.logger ?? silentLogger(),
    dialects: config.dialects,
    ...(options.inspect === undefined ? {} : { inspect: options.inspect }),
  };
  const supervisor = new Supervisor(supervisorOptions);
  // One mechanism for the daemon and every embedder: what the config already says will cut a contest short.
  const warnings = configWarnings(config);
  for (const warning of warnings) supervisor.logger.warn({ reason: warning.reason, key: warning.key, ...warning.details }, warning.message);
  const orchestrator = new Orchestrator(supervisor, config);
  const fallback = new FallbackPlugin(supervisor, config.fallback, {
    matchTimeoutMs: config.orchestrator.matchTimeoutMs,
    // The embedded bus server notices a dead peer within two heartbeats (a missed pong, then the next ping).
    reconnectWindowMs: 2 * config.bus.heartbeatMs,
    forgetAfterMs: config.fallback.forgetAfterMs,
    ...(options.registryStore === undefined ? {} : { store: options.registryStore }),
  });
  for (const stage of fallback.stages()) orchestrator.register(stage);
  const commonQuery = new CommonQueryPlugin(supervisor, config.commonQuery, {
    dialects: config.dialects,
    ...(options.reranker === undefined ? {} : { reranker: options.reranker }),
  });
  orchestrator.register(commonQuery);
  const stageService = new StageService({ config, supervisor, orchestrator, fallback, commonQuery });
  // A dropped connection ends every contest cleanly: no hang, no leaked timer, the reason logged.
  const unsubscribeStatus = options.bus.onStatus((status) => {
    if (!status.up) supervisor.stopAll(`bus_down:${status.reason}`);
  });
  return {
    config,
    configWarnings: warnings,
    supervisor,
    orchestrator,
    fallback,
    commonQuery,
    stageService,
    drain: async (graceMs) => {
      let timer: unknown;
      const bound = new Promise<void>((resolve) => (timer = supervisor.clock.setTimeout(resolve, graceMs)));
      await Promise.race([orchestrator.drain(), bound]);
      supervisor.clock.clearTimeout(timer);
      return orchestrator.inFlight;
    },
    close: () => {
      unsubscribeStatus();
      stageService.close();
      fallback.close();
      commonQuery.close();
      orchestrator.close();
      supervisor.close();
    },
  };
}
