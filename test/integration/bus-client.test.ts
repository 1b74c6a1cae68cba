/**
 * The contest system as a client of a bus it does not own (`npm start -- --bus URL`): a separately started
 * BusServer plays ovos-messagebus, the daemon and its skills connect to it, and a raw `ws` client watches the wire.
 *
 * - The bus echoes every frame to its sender, so a client that also delivered its own publications locally would
 *   see them twice: the watcher and the daemon's own bus subscriber must each see an utterance's messages once.
 * - When the bus goes away mid-contest, every contest ends at once (`bus_down`), the orchestrator's promise
 *   resolves, and no contest timer is left armed.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createMessage, utteranceIdOf } from '../../src/bus/message.js';
import { BusClient } from '../../src/bus/ws-client.js';
import { BusServer } from '../../src/bus/ws-server.js';
import { systemClock, type Clock, type TimerId } from '../../src/clock/clock.js';
import { startDaemon } from '../../src/daemon/daemon.js';
import { silentLogger } from '../../src/log/logger.js';
import { runFallbackSkill } from '../../src/skills/fallback-skill.js';
import { meaningOfLifeSkill } from '../../src/skills/example-skills.js';
import { createContestSystem } from '../../src/system.js';
import { GUARD_MS, Probe, captureLogs, configWith, freePort, spoken, within, type LogLine } from './probe.js';

const SILENT_SKILL = 'silent.test';
const UTTERANCE = 'do a barrel roll'; // the gate rejects it: only the fallback contest runs

/** Far beyond any wait in this file: only the bus going down can end a contest that waits this long. */
const NEVER_MS = 60_000;

const cleanups: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function startBus(): Promise<BusServer> {
  const server = await BusServer.start({ host: '127.0.0.1', port: 0, route: '/core', maxFrameBytes: 1024 * 1024, logger: silentLogger() });
  cleanups.push(() => server.close());
  return server;
}

async function watch(url: string): Promise<Probe> {
  const probe = await Probe.connect(url);
  cleanups.push(() => probe.close());
  return probe;
}

/** A fallback skill that registers (OVOS-FALLBACK-1 §3.1) and then never answers a ping. */
function registerSilentSkill(probe: Probe): void {
  probe.send(
    createMessage(
      'ovos.fallback.register',
      { skill_id: SILENT_SKILL, priority: 10 },
      { skill_id: SILENT_SKILL, source: SILENT_SKILL, session: { session_id: 'default' } },
    ),
  );
}

const registered = (line: LogLine): boolean => line.msg === 'fallback skill registered' && line['skill_id'] === SILENT_SKILL;
const stoppedByBusDown = (line: LogLine): boolean =>
  line.msg === 'contest stopped' && typeof line.reason === 'string' && line.reason.startsWith('bus_down');

/** The config of a contest only the bus going down can end. */
function stuckConfig(url: string): ReturnType<typeof configWith> {
  return configWith({
    bus: { url, reconnectInitialMs: 50, reconnectMaxMs: 200 },
    exampleSkills: false,
    log: { level: 'silent' },
    fallback: { pingTimeoutMs: NEVER_MS },
    orchestrator: { matchTimeoutMs: 2 * NEVER_MS, handlerTimeoutMs: 2 * NEVER_MS },
  });
}

/** A system clock that knows which of its timers are still armed. */
class TrackingClock implements Clock {
  readonly #armed = new Map<number, { readonly handle: ReturnType<typeof setTimeout>; readonly ms: number }>();
  #next = 0;

  get armed(): number[] {
    return [...this.#armed.values()].map((timer) => timer.ms);
  }

  now(): number {
    return systemClock.now();
  }

  monotonic(): number {
    return systemClock.monotonic();
  }

  setTimeout(fn: () => void, ms: number): TimerId {
    const id = ++this.#next;
    const handle = setTimeout(() => {
      this.#armed.delete(id);
      fn();
    }, ms);
    this.#armed.set(id, { handle, ms });
    return id;
  }

  clearTimeout(id: TimerId): void {
    if (typeof id !== 'number') return;
    const timer = this.#armed.get(id);
    if (timer === undefined) return;
    clearTimeout(timer.handle);
    this.#armed.delete(id);
  }
}

describe('the daemon as a client of an existing bus (--bus URL)', () => {
  it('handles an utterance through the client, seeing every message exactly once via the echo', async () => {
    const server = await startBus();
    const config = configWith({ bus: { url: server.url }, exampleSkills: true, log: { level: 'silent' } });
    const daemon = await startDaemon(config, silentLogger());
    cleanups.push(() => daemon.close());
    const bus = daemon.system.supervisor.bus;
    expect(bus).toBeInstanceOf(BusClient);
    if (bus instanceof BusClient) await bus.waitUntilUp(GUARD_MS);
    // What the daemon's own client delivers to its subscribers, for this utterance.
    const delivered: string[] = [];
    bus.subscribe((message) => {
      if (utteranceIdOf(message) === 'echo-1') delivered.push(message.type);
    });

    const watcher = await watch(server.url);
    watcher.utter('what is the meaning of life', { utteranceId: 'echo-1', session: { session_id: 'echo' } });
    await watcher.handled('echo-1');
    await watcher.barrier();

    const seen = watcher.typesOf('echo-1');
    expect(seen.filter((type) => type === 'ovos.utterance.handled')).toHaveLength(1);
    expect(seen.filter((type) => type === 'meaning-of-life.example.fallback.ping')).toHaveLength(1);
    expect(seen.filter((type) => type === 'ovos.common_query.ping')).toHaveLength(1);
    expect(seen.filter((type) => type === 'ovos.intent.matched')).toHaveLength(1);
    expect(watcher.of('echo-1').flatMap((message) => spoken(message) ?? [])).toEqual(['42']);
    // The client's subscribers saw the same wire, once each, its own publications included.
    expect(delivered).toEqual(seen);
  });

  it('a daemon with example skills started before its bus is up waits for it: the skills register when it comes up (no BUS_UP_TIMEOUT)', async () => {
    const port = await freePort();
    const url = `ws://127.0.0.1:${port}/core`;
    const config = configWith({ bus: { url, reconnectInitialMs: 50, reconnectMaxMs: 200 }, exampleSkills: true, log: { level: 'info' } });
    const { logger, lines } = captureLogs('info');
    const daemon = await within(startDaemon(config, logger), GUARD_MS, 'startDaemon with no bus yet');
    cleanups.push(() => daemon.close());
    const server = await BusServer.start({ host: '127.0.0.1', port, route: '/core', maxFrameBytes: 1024 * 1024, logger: silentLogger() });
    cleanups.push(() => server.close());
    await lines.waitFor((line) => line.msg === 'fallback skill registered' && line['skill_id'] === meaningOfLifeSkill.skillId, 'the example skill registered once the bus came up');
    const probe = await watch(server.url);
    probe.utter('what is the meaning of life', { utteranceId: 'late-bus', session: { session_id: 'late-bus' } });
    await probe.handled('late-bus');
    expect(probe.of('late-bus').flatMap((m) => spoken(m) ?? [])).toEqual(['42']);
  });

  it('a daemon joining a bus where skills are already connected gets their registrations (ovos.fallback.reregister)', async () => {
    const server = await startBus();
    // The skill connects and registers first: nobody is listening yet, so that registration is lost.
    const skillClient = new BusClient({ url: server.url, heartbeatMs: 10_000, reconnectInitialMs: 50, reconnectMaxMs: 200, maxFrameBytes: 1024 * 1024, logger: silentLogger() });
    skillClient.connect();
    cleanups.push(() => skillClient.close());
    await skillClient.waitUntilUp(GUARD_MS);
    const stop = runFallbackSkill(skillClient, meaningOfLifeSkill);
    cleanups.push(stop);

    const { logger, lines } = captureLogs('info');
    const daemon = await startDaemon(configWith({ bus: { url: server.url }, exampleSkills: false, log: { level: 'silent' } }), logger);
    cleanups.push(() => daemon.close());
    await lines.waitFor((line) => line.msg === 'fallback skill registered' && line['skill_id'] === meaningOfLifeSkill.skillId, 'the re-registration');

    const watcher = await watch(server.url);
    watcher.utter('what is the meaning of life', { utteranceId: 'late-join-1', session: { session_id: 'late-join' } });
    await watcher.handled('late-join-1');
    expect(watcher.of('late-join-1').flatMap((message) => spoken(message) ?? [])).toEqual(['42']);
  });

  it('ovos-wire-today: a daemon joining a bus asks the common-query skills of today to announce themselves (ovos.common_query.ping without an utterance)', async () => {
    const server = await startBus();
    const watcher = await watch(server.url);
    const daemon = await startDaemon(configWith({ bus: { url: server.url }, exampleSkills: false, log: { level: 'silent' } }), silentLogger());
    cleanups.push(() => daemon.close());
    const ping = await watcher.waitFor((message) => message.type === 'ovos.common_query.ping', 'the discovery ping');
    expect(ping.data).toEqual({});
  });

  it('ends an in-flight contest cleanly when the bus goes down: no live contest, the orchestrator promise resolves, bus_down logged', async () => {
    const server = await startBus();
    const { logger, lines } = captureLogs('info');
    const daemon = await startDaemon(stuckConfig(server.url), logger);
    cleanups.push(() => daemon.close());
    const bus = daemon.system.supervisor.bus;
    if (bus instanceof BusClient) await bus.waitUntilUp(GUARD_MS);

    const skill = await watch(server.url);
    registerSilentSkill(skill);
    await lines.waitFor(registered, 'the silent skill registered');

    const record = daemon.system.orchestrator.handle(
      createMessage('ovos.utterance.handle', { utterances: [UTTERANCE] }, { session: { session_id: 'down' }, utterance_id: 'down-1' }),
      [UTTERANCE],
    );
    expect(record).not.toBeNull();
    await skill.waitFor((message) => message.type === `${SILENT_SKILL}.fallback.ping` && utteranceIdOf(message) === 'down-1', 'the ping');
    expect(daemon.system.supervisor.size).toBe(2); // the utterance and its fallback contest

    const closedAt = performance.now();
    await server.close();
    const outcome = await within(record!.done, GUARD_MS, 'the orchestrator promise');
    const elapsedMs = performance.now() - closedAt;

    expect(outcome).toBeNull(); // stopped: the handled {error} is attempted, but a dead bus cannot carry it
    expect(daemon.system.supervisor.size).toBe(0);
    expect(elapsedMs).toBeLessThan(GUARD_MS); // "promptly": nowhere near the 60 s ping timeout
    expect(lines.items.filter(stoppedByBusDown).length).toBeGreaterThanOrEqual(1);
    expect(lines.items.some((line) => line.msg === 'utterance ended early; ovos.utterance.handled sent with an error' && line['utterance_id'] === 'down-1')).toBe(true);
  });

  it('leaves no contest timer armed after the bus went down mid-contest', async () => {
    const server = await startBus();
    const config = stuckConfig(server.url);
    const { logger, lines } = captureLogs('info');
    const client = new BusClient({
      url: server.url,
      heartbeatMs: config.bus.heartbeatMs,
      reconnectInitialMs: config.bus.reconnectInitialMs,
      reconnectMaxMs: config.bus.reconnectMaxMs,
      maxFrameBytes: config.bus.maxFrameBytes,
      logger: logger.child({ component: 'bus-client' }),
    });
    client.connect();
    cleanups.push(() => client.close());
    await client.waitUntilUp(GUARD_MS);
    const clock = new TrackingClock();
    const system = createContestSystem({ bus: client, config, clock, logger });
    cleanups.push(() => system.close());

    const skill = await watch(server.url);
    registerSilentSkill(skill);
    await lines.waitFor(registered, 'the silent skill registered');

    const record = system.orchestrator.handle(
      createMessage('ovos.utterance.handle', { utterances: [UTTERANCE] }, { session: { session_id: 'timers' }, utterance_id: 'timers-1' }),
      [UTTERANCE],
    );
    await skill.waitFor((message) => message.type === `${SILENT_SKILL}.fallback.ping` && utteranceIdOf(message) === 'timers-1', 'the ping');
    // Armed now: the fallback contest's ping timeout and stage bound (5 ms before it), and the utterance's match bound.
    expect(clock.armed.sort((a, b) => a - b)).toEqual([NEVER_MS, 2 * NEVER_MS - 5, 2 * NEVER_MS]);

    await server.close();
    expect(await within(record!.done, GUARD_MS, 'the orchestrator promise')).toBeNull();

    expect(system.supervisor.size).toBe(0);
    expect(clock.armed).toEqual([]);
    expect(lines.items.filter(stoppedByBusDown).map((line) => line['contest'])).toContain('utterance/pipeline');
  });
});
