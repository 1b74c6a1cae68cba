/**
 * Child-process entry of `remote-skills.ts`: the project's own skill runtimes (`runFallbackSkill`,
 * `runCommonQuerySkill`), each on its own `BusClient` connection, answering at once.
 */
import { BusClient } from '../../src/bus/ws-client.js';
import { DEFAULT_CONFIG } from '../../src/config/defaults.js';
import { silentLogger } from '../../src/log/logger.js';
import { runCommonQuerySkill } from '../../src/skills/common-query-skill.js';
import { runFallbackSkill } from '../../src/skills/fallback-skill.js';
import type { FromSkills, SkillsPlan, ToSkills } from './remote-skills.js';

const logger = silentLogger();
const running: Array<{ client: BusClient; stop: () => void }> = [];

function send(message: FromSkills): void {
  if (process.connected) process.send?.(message);
}

async function connect(url: string): Promise<BusClient> {
  const client = new BusClient({
    url,
    heartbeatMs: DEFAULT_CONFIG.bus.heartbeatMs,
    reconnectInitialMs: DEFAULT_CONFIG.bus.reconnectInitialMs,
    reconnectMaxMs: DEFAULT_CONFIG.bus.reconnectMaxMs,
    maxFrameBytes: DEFAULT_CONFIG.bus.maxFrameBytes,
    logger,
  });
  client.connect();
  await client.waitUntilUp(5_000);
  return client;
}

async function start(plan: SkillsPlan): Promise<void> {
  for (const skill of plan.fallback) {
    const client = await connect(plan.url);
    const stop = runFallbackSkill(client, {
      skillId: skill.skillId,
      priority: skill.priority,
      canHandle: () => skill.willing,
      answer: () => `${skill.skillId} handled it`,
    });
    running.push({ client, stop });
  }
  for (const skill of plan.commonQuery) {
    const client = await connect(plan.url);
    const stop = runCommonQuerySkill(client, {
      skillId: skill.skillId,
      latencyMs: skill.latencyMs,
      canAnswer: () => true,
      answer: async () => ({ answer: `answer from ${skill.skillId}`, conf: skill.conf }),
    });
    running.push({ client, stop });
  }
  send({ type: 'ready', clients: running.length });
}

async function stopAll(): Promise<void> {
  for (const { stop } of running) stop();
  await Promise.all(running.map(({ client }) => client.close()));
  running.length = 0;
  send({ type: 'stopped' });
  if (process.connected) process.disconnect();
}

process.on('message', (message: ToSkills) => {
  if (message.type === 'start') {
    start(message.plan).catch((error: unknown) => {
      send({ type: 'failed', message: error instanceof Error ? error.message : String(error) });
      void stopAll();
    });
  } else if (message.type === 'stop') {
    void stopAll();
  }
});
// The parent went away without saying stop: don't linger.
process.on('disconnect', () => {
  if (running.length > 0) void stopAll().catch(() => {});
});
