/**
 * `ovos-contests/skill`: write a fallback or common-query skill in a few typed lines, for our bus or any
 * ovos-messagebus. The skill registers (and registers again whenever its connection comes back, or when the
 * daemon asks with `ovos.fallback.reregister`), answers pings, handles its dispatch and reports the handler's end.
 *
 * ```ts
 * import { connectSkill, runFallbackSkill } from 'ovos-contests/skill';
 *
 * const skill = await connectSkill('ws://127.0.0.1:8181/core', (bus) =>
 *   runFallbackSkill(bus, {
 *     skillId: 'weather-fallback.me',
 *     priority: 60,
 *     canHandle: (utterances) => utterances.some((u) => u.includes('weather')),
 *     answer: async () => `It is ${await fetchTemperature()} degrees.`,
 *   }),
 * );
 * // … later: await skill.close();
 * ```
 */
import type { Bus, Unsubscribe } from '../bus/bus.js';
import { BusClient } from '../bus/ws-client.js';
import { DEFAULT_CONFIG } from '../config/defaults.js';
import { silentLogger, type Logger } from '../log/logger.js';

export { runFallbackSkill, type FallbackSkillSpec } from './fallback-skill.js';
export { runCommonQuerySkill, type CommonQuerySkillSpec } from './common-query-skill.js';
export { createMessage, forward, reply, type JsonObject, type Message } from '../bus/message.js';
export type { Bus, Unsubscribe } from '../bus/bus.js';

export interface ConnectedSkill {
  /** The skill's own connection (a reconnecting client of the bus). */
  readonly bus: Bus;
  /** Deregister (fallback), unsubscribe and close the connection. */
  close(): Promise<void>;
}

export interface ConnectOptions {
  /** pino logger for the connection's events (reconnects, dropped frames); silent by default. */
  readonly logger?: Logger;
  /** How long to wait for the first connection before resolving anyway (it keeps retrying). Default 5 s. */
  readonly waitMs?: number;
  /** The connection's heartbeat, reconnect backoff and largest frame; the daemon's defaults (`bus.*`) otherwise. */
  readonly bus?: {
    readonly heartbeatMs?: number;
    readonly reconnectInitialMs?: number;
    readonly reconnectMaxMs?: number;
    readonly maxFrameBytes?: number;
  };
}

/**
 * Connect to the bus at `url` (ours, or any ovos-messagebus) and run a skill on that connection. The connection
 * reconnects with backoff for as long as the skill runs; the skill re-registers on every reconnect.
 */
export async function connectSkill(url: string, run: (bus: Bus) => Unsubscribe, options: ConnectOptions = {}): Promise<ConnectedSkill> {
  const { heartbeatMs, reconnectInitialMs, reconnectMaxMs, maxFrameBytes } = { ...DEFAULT_CONFIG.bus, ...options.bus };
  const client = new BusClient({ url, heartbeatMs, reconnectInitialMs, reconnectMaxMs, maxFrameBytes, logger: options.logger ?? silentLogger() });
  client.connect();
  await client.waitUntilUp(options.waitMs ?? 5_000).catch(() => undefined); // not up yet: it keeps retrying
  const stop = run(client);
  return {
    bus: client,
    close: async () => {
      stop();
      await client.close();
    },
  };
}
