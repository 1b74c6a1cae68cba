/**
 * Child-process entry of `remote-skills.ts`: the project's own skill runtimes (`runFallbackSkill`,
 * `runCommonQuerySkill`), each on its own `BusClient` connection, answering at once unless the plan says otherwise
 * (a common-query skill that declines, stays silent or answers after a random delay; a fallback skill whose process
 * dies when it is pinged).
 */
import { BusClient } from '../../src/bus/ws-client.js';
import { DEFAULT_CONFIG } from '../../src/config/defaults.js';
import { silentLogger } from '../../src/log/logger.js';
import { runCommonQuerySkill } from '../../src/skills/common-query-skill.js';
import { runFallbackSkill } from '../../src/skills/fallback-skill.js';
import type { FromSkills, SkillsPlan, ToSkills } from './remote-skills.js';

const logger = silentLogger();
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const running: Array<{ client: BusClient; stop: () => void }> = [];
/** Per common-query skill: each answer's time in this process (request in → response out, ms), until collected. */
const answerDelays = new Map<string, number[]>();

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
  const shared = plan.connections === 'shared' ? await connect(plan.url) : undefined;
  if (shared !== undefined) running.push({ client: shared, stop: () => {} });
  const connection = async (): Promise<BusClient> => shared ?? (await connect(plan.url));
  for (const skill of plan.fallback) {
    const client = await connection();
    const stop = runFallbackSkill(client, {
      skillId: skill.skillId,
      priority: skill.priority,
      canHandle: () => {
        // A crash with a question in flight: the kernel closes this process's sockets, nothing is sent.
        if (skill.onPing === 'die') process.kill(process.pid, 'SIGKILL');
        return skill.willing;
      },
      answer: () => `${skill.skillId} handled it`,
    });
    running.push({ client, stop });
  }
  for (const skill of plan.commonQuery) {
    const client = await connection();
    const mode = skill.mode ?? 'claim';
    const delay = skill.answerDelayMs;
    const stop =
      mode === 'silent'
        ? () => {}
        : runCommonQuerySkill(client, {
            skillId: skill.skillId,
            latencyMs: skill.latencyMs,
            canAnswer: () => mode === 'claim',
            answer: async () => {
              const started = performance.now();
              if (delay !== undefined) await sleep(delay[0] + Math.random() * (delay[1] - delay[0]));
              const list = answerDelays.get(skill.skillId) ?? [];
              list.push(performance.now() - started); // the response goes out as this resolves
              answerDelays.set(skill.skillId, list);
              return { answer: `answer from ${skill.skillId}`, conf: skill.conf };
            },
          });
    running.push({ client, stop });
  }
  send({ type: 'ready', clients: new Set(running.map(({ client }) => client)).size });
}

async function stopAll(): Promise<void> {
  for (const { stop } of running) stop();
  await Promise.all([...new Set(running.map(({ client }) => client))].map((client) => client.close()));
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
  } else if (message.type === 'answerDelays') {
    send({ type: 'answerDelays', delays: Object.fromEntries(answerDelays) });
    answerDelays.clear();
  }
});
// The parent went away without saying stop: don't linger.
process.on('disconnect', () => {
  if (running.length > 0) void stopAll().catch(() => {});
});
