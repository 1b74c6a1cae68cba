/**
 * The ready daemon: the embedded OVOS-compatible bus (or a client of an existing messagebus), the actor system on
 * it, and — unless switched off — the example skills as real websocket clients of that bus.
 */
import { BusClient } from '../bus/ws-client.js';
import { BusServer } from '../bus/ws-server.js';
import type { Config } from '../config/defaults.js';
import type { Logger } from '../log/logger.js';
import { runFallbackSkill } from '../skills/fallback-skill.js';
import { runCommonQuerySkill } from '../skills/common-query-skill.js';
import { dontKnowSkill, localKnowledgeSkill, meaningOfLifeSkill } from '../skills/example-skills.js';
import { createContestSystem, type ContestSystem } from '../system.js';

export interface Daemon {
  /** The bus URL skills connect to. */
  readonly url: string;
  readonly system: ContestSystem;
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
  });
}

export async function startDaemon(config: Config, logger: Logger): Promise<Daemon> {
  const closers: Array<() => Promise<void>> = [];
  let url: string;
  let system: ContestSystem;
  if (config.bus.url !== null) {
    const client = clientOf(config.bus.url, config, logger.child({ component: 'bus-client' }));
    url = config.bus.url;
    // The system subscribes before the first connection so it sees that first "up" too.
    system = createContestSystem({ bus: client, config, logger });
    closers.push(() => client.close());
    logger.info({ url }, 'connecting to an existing OVOS messagebus');
    client.connect();
    // Serve as soon as the bus is there; an unreachable bus is retried for ever (with backoff), and said so.
    await client.waitUntilUp(5_000).catch(() => logger.warn({ url, reason: 'bus_unreachable' }, 'bus not reachable yet; still retrying'));
  } else {
    const server = await BusServer.start({ ...config.bus, logger: logger.child({ component: 'bus' }) }); // heartbeatMs included
    url = server.url;
    system = createContestSystem({ bus: server, config, logger });
    closers.push(() => server.close());
    logger.info({ url }, 'OVOS bus listening');
  }
  logger.info({ pipeline: config.pipeline, stages: system.orchestrator.stages.map((s) => s.pipelineId) }, 'pipeline ready');

  if (config.exampleSkills) {
    // Each example skill is its own websocket client of the bus, as a skill in another process would be.
    const connectSkill = async (skillId: string, run: (client: BusClient) => () => void): Promise<void> => {
      const client = clientOf(url, config, logger.child({ component: 'skill', skill_id: skillId }));
      client.connect();
      // The embedded bus is up at once. A foreign bus may not be up yet (a daemon started before ovos-messagebus
      // under systemd): the skill keeps retrying and registers whenever the bus comes up — nothing to wait for here.
      if (config.bus.url === null) await client.waitUntilUp(5_000);
      const stop = run(client);
      closers.unshift(async () => {
        stop();
        await client.close();
      });
    };
    for (const skill of [meaningOfLifeSkill, dontKnowSkill]) await connectSkill(skill.skillId, (client) => runFallbackSkill(client, skill));
    await connectSkill(localKnowledgeSkill.skillId, (client) => runCommonQuerySkill(client, localKnowledgeSkill));
    logger.info({ skills: [meaningOfLifeSkill.skillId, dontKnowSkill.skillId, localKnowledgeSkill.skillId] }, 'example skills connected');
  }

  return {
    url,
    system,
    close: async () => {
      system.close();
      for (const close of closers) await close();
    },
  };
}
