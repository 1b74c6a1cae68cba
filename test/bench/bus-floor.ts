/**
 * Benchmark 2b — the limit of the bus for one fallback utterance (the target "≤ 3 round trips + 0.3 ms"): the same
 * kind of skills process (a second one, started the same way), connections and frames as benchmark 2's "3 skills,
 * one at a time", with the contest system replaced by a responder that does nothing but publish the next frames. What is left is the bus:
 * the embedded server, every frame to every client (4 here: three skills and the driver), the skills' own work and
 * the kernel's loopback. Benchmark 2's figure minus this one is what the supervisor, the machines, the plugins and
 * the log cost on the critical path.
 *
 * The responder sends the frames the contest system sends, with their shape and size (recorded from it), in the
 * same turns: ping the
 * skills in priority order; on the willing pong `ovos.intent.matched`, the dispatch and
 * `ovos.intent.handler.start`; on the skill's completion `ovos.intent.handler.complete` and
 * `ovos.utterance.handled`. It checks nothing: it is a floor, not a contest.
 *
 * Both run one at a time, alternating rounds so the VM's drift lands on both; each has its own bus server and
 * skills process, started alike. CPU is this process's: the bus server, the contest system or the responder, and
 * the driver client.
 */
import { performance } from 'node:perf_hooks';
import { BusServer } from '../../src/bus/ws-server.js';
import type { BusClient } from '../../src/bus/ws-client.js';
import { forward, reply, utteranceIdOf, withContext, type JsonObject, type Message } from '../../src/bus/message.js';
import { topics } from '../../src/dialect/spec-dialect.js';
import { silentLogger } from '../../src/log/logger.js';
import { runLoad, type LoadResult } from './load-driver.js';
import { startRemoteSkills } from './remote-skills.js';
import type { Cell, Section } from './report.js';
import { collectGarbage, connectDriver, fallbackConfig, fallbackPlan, isFallbackDispatch, startWsRig, waitUntil } from './rig.js';
import { summarize } from './stats.js';

const SKILLS = 3;
const PER_ROUND = 400;
const ROUNDS = 3;
const WARMUP = 300;
const UTTERANCE = 'tell me something nobody else can';
const MARKS = { dispatch: (m: { type: string }) => isFallbackDispatch(m.type) };
/** The stage the skills' priorities put them in (fallbackConfig), named in the frames as the real system names it. */
const PIPELINE = 'fallback_high';

interface Floor {
  readonly driver: BusClient;
  close(): Promise<void>;
}

/** The embedded bus server, the skills process, a driver — and a responder in place of the contest system. */
export async function startFloor(): Promise<Floor> {
  const config = fallbackConfig();
  const logger = silentLogger();
  const server = await BusServer.start({ host: '127.0.0.1', port: 0, route: config.bus.route, maxFrameBytes: config.bus.maxFrameBytes, logger });
  const plans = fallbackPlan(SKILLS);
  const order = plans.map((plan) => plan.skillId);
  let registered = 0;
  let runs = 0;
  const asked = new Map<string, { readonly entry: Message; readonly ping: Message; dispatched: Message | undefined; next: number }>();
  const unsubscribe = server.subscribe((message) => {
    const type = message.type;
    if (type === topics.fallbackRegister) {
      registered += 1;
      return;
    }
    const utteranceId = utteranceIdOf(message);
    if (utteranceId === undefined) return;
    if (type === topics.utteranceHandle) {
      const raw = message.data['utterances'];
      const utterances = Array.isArray(raw) ? raw : [];
      // The frames below have the shape and size of the contest system's (recorded from it): the pings carry the
      // run's contest_id, the dispatch and the handler signals the session with the active handler pushed.
      const ping = withContext(reply(message, topics.fallbackPing(order[0]!), { utterances, lang: 'en-US' }), { contest_id: `fallback:floor.${++runs}` });
      asked.set(utteranceId, { entry: message, ping, dispatched: undefined, next: 1 });
      server.publish(ping);
      return;
    }
    const state = asked.get(utteranceId);
    if (state === undefined) return;
    if (type.endsWith('.fallback.pong')) {
      if (message.data['can_handle'] !== true) {
        const skill = order[state.next++];
        if (skill !== undefined) server.publish({ ...state.ping, type: topics.fallbackPing(skill) });
        return;
      }
      const skillId = String(message.data['skill_id']);
      const match = { skill_id: skillId, intent_name: 'fallback', lang: 'en-US', utterance: UTTERANCE, slots: {}, pipeline_id: PIPELINE };
      server.publish(reply(state.entry, 'ovos.intent.matched', match));
      const session = { ...(state.entry.context['session'] as JsonObject), active_handlers: [{ skill_id: skillId, activated_at: Math.floor(Date.now() / 1000) }] };
      const dispatched = withContext(reply(state.entry, `${skillId}:fallback`, { lang: 'en-US', utterance: UTTERANCE, slots: {} }), { session, skill_id: skillId, pipeline_id: PIPELINE });
      state.dispatched = dispatched;
      server.publish(dispatched);
      server.publish(forward(dispatched, topics.handlerStart, { skill_id: skillId, intent_name: 'fallback' }));
      return;
    }
    if (type === topics.skillHandlerComplete && state.dispatched !== undefined) {
      asked.delete(utteranceId);
      server.publish(forward(state.dispatched, topics.handlerComplete, { skill_id: String(message.data['skill_id']), intent_name: 'fallback' }));
      const { skill_id: _skill, pipeline_id: _pipeline, ...context } = state.dispatched.context;
      server.publish({ type: topics.utteranceHandled, data: {}, context });
    }
  });
  const skills = await startRemoteSkills({ url: server.url, fallback: plans, commonQuery: [] });
  const driver = await connectDriver(server.url, config, logger);
  await waitUntil(() => registered >= SKILLS, 5_000, `${SKILLS} registrations`);
  return {
    driver,
    close: async () => {
      driver.close();
      await skills.stop();
      unsubscribe();
      await server.close();
    },
  };
}

interface Run {
  readonly dispatch: number[];
  readonly handled: number[];
  cpuMs: number;
  count: number;
}

async function round(driver: BusClient, runId: string, into: Run): Promise<void> {
  await collectGarbage();
  const cpu = process.cpuUsage();
  const result: LoadResult = await runLoad({ bus: driver, total: PER_ROUND, concurrency: 1, utterance: UTTERANCE, runId, marks: MARKS, timeoutMs: 60_000 });
  const used = process.cpuUsage(cpu);
  into.cpuMs += (used.user + used.system) / 1000;
  into.count += result.completed;
  into.dispatch.push(...(result.latencies['dispatch'] ?? []));
  into.handled.push(...(result.latencies['handled'] ?? []));
}

export async function benchBusFloor(): Promise<Section> {
  const started = performance.now();
  const rig = await startWsRig(fallbackConfig(), { fallback: fallbackPlan(SKILLS) });
  const floor = await startFloor();
  const ours: Run = { dispatch: [], handled: [], cpuMs: 0, count: 0 };
  const bare: Run = { dispatch: [], handled: [], cpuMs: 0, count: 0 };
  try {
    await runLoad({ bus: rig.driver, total: WARMUP, concurrency: 1, utterance: UTTERANCE, runId: 'warm-ours', marks: MARKS, timeoutMs: 60_000 });
    await runLoad({ bus: floor.driver, total: WARMUP, concurrency: 1, utterance: UTTERANCE, runId: 'warm-floor', marks: MARKS, timeoutMs: 60_000 });
    for (let i = 0; i < ROUNDS; i++) {
      await round(floor.driver, `floor-${i}`, bare);
      await round(rig.driver, `ours-${i}`, ours);
    }
  } finally {
    await floor.close();
    await rig.close();
  }
  const row = (what: string, run: Run): Record<string, Cell> => {
    const dispatch = summarize(run.dispatch);
    const handled = summarize(run.handled);
    return {
      what,
      utterances: run.count,
      dispatchP50: dispatch.p50,
      dispatchP99: dispatch.p99,
      handledP50: handled.p50,
      cpuUs: Math.round((1000 * run.cpuMs) / Math.max(1, run.count)),
    };
  };
  const oursRow = row('the contest system (supervisor, machines, plugins, log)', ours);
  const floorRow = row('a responder that only publishes the next frames (the floor)', bare);
  const gap = (key: string): number => Number(oursRow[key]) - Number(floorRow[key]);
  return {
    id: 'bus-floor',
    title: `2b. The bus floor: one fallback utterance over the websocket, ${SKILLS} skills (the last willing), one at a time — ours vs a responder with no contest logic`,
    params: { skills: SKILLS, connections: SKILLS + 1, perRound: PER_ROUND, rounds: ROUNDS, warmup: WARMUP, wallS: Math.round((performance.now() - started) / 1000) },
    columns: [
      { key: 'what', header: 'in place of ovos-contests', unit: 'text' },
      { key: 'utterances', header: 'utterances', unit: 'count' },
      { key: 'dispatchP50', header: 'dispatch p50 ms', unit: 'ms' },
      { key: 'dispatchP99', header: 'dispatch p99 ms', unit: 'ms' },
      { key: 'handledP50', header: 'handled p50 ms', unit: 'ms' },
      { key: 'cpuUs', header: 'CPU µs per utterance (daemon + driver)', unit: 'count' },
    ],
    rows: [oursRow, floorRow],
    notes: [
      `ours above the floor: dispatch p50 +${gap('dispatchP50').toFixed(2)} ms, CPU +${gap('cpuUs')} µs per utterance`,
      'the same frames and connections for both, each with its own bus server and skills process; rounds alternate; CPU is this process (bus server, contest system or responder, and the driver client)',
    ],
    checks: [
      { name: 'every utterance handled, ours', ok: ours.count === ROUNDS * PER_ROUND, detail: `${ours.count}/${ROUNDS * PER_ROUND}` },
      { name: 'every utterance handled, floor', ok: bare.count === ROUNDS * PER_ROUND, detail: `${bare.count}/${ROUNDS * PER_ROUND}` },
      { name: 'every utterance dispatched, both', ok: ours.dispatch.length === ours.count && bare.dispatch.length === bare.count, detail: `${ours.dispatch.length}, ${bare.dispatch.length}` },
    ],
  };
}
