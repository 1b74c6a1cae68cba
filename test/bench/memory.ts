/**
 * Benchmark 4 — memory of live contests: 10k utterances in 10k sessions, in-process (`LocalBus`, system clock),
 * against one registered fallback skill that never answers, so every fallback contest stays alive until its ping
 * timeout (200 ms). Heap is measured after a full GC (`--expose-gc`): before (baseline), while all 10k are live,
 * and after all 10k have run out and been handled (retained vs baseline).
 *
 * "While live" is read in the same macrotask that spawned them: the bus delivers from microtasks and timers only
 * fire between macrotasks, so no contest can time out before the reading, however long spawning 10k takes here.
 * Afterwards the supervisor must be empty: its live count and its routing index (its public counters), and behaviourally — a reply for any of the 10k sessions is dropped as `no_live_contest`.
 *
 * The burst runs twice. What the first leaves behind can be a high-water mark (a table that grew to hold 10k entries
 * and keeps its capacity) or a leak; a second identical burst tells them apart: a leak grows again, a high-water
 * mark does not.
 */
import { pino } from 'pino';
import { createMessage } from '../../src/bus/message.js';
import type { Supervisor } from '../../src/supervisor/supervisor.js';
import type { Cell, Check, Section } from './report.js';
import { canCollectGarbage, collectGarbage, fallbackConfig, heapUsed, settle, startInProcess, waitUntil } from './rig.js';
import { formatBytes, formatCount, watchGc, type GcActivity } from './stats.js';

const CONTESTS = 10_000;
const WARMUP = 1_000;
const PING_TIMEOUT_MS = 200;
const SILENT_SKILL = 'never-answers';
const UTTERANCE = 'tell me something nobody else can';
const ROUNDS = 2;

/** The supervisor's routing index and live-contest table sizes. */
function indexSizes(supervisor: { readonly routeKeys: number; readonly size: number }): Record<string, number> {
  return { '#routes': supervisor.routeKeys, '#live': supervisor.size };
}

interface BurstResult {
  readonly before: number;
  readonly live: number;
  readonly after: number;
  readonly liveActors: number;
  readonly stillLive: number;
  readonly pings: number;
  readonly afterSize: number;
  readonly liveRoutes: Record<string, number>;
  readonly routes: Record<string, number>;
  readonly noLiveContest: number;
  readonly spawnMs: number;
  readonly spawnGc: GcActivity;
  readonly totalMs: number;
}

export async function benchMemory(): Promise<Section> {
  if (!canCollectGarbage) {
    return {
      id: 'memory',
      title: '4. Memory per live fallback contest',
      params: {},
      columns: [{ key: 'measure', header: 'skipped', unit: 'text' }],
      rows: [{ measure: 'run node with --expose-gc (npm run bench does)' }],
      notes: [],
      checks: [],
    };
  }
  // Drop reasons reach this sink only while the probe after each burst raises the level.
  let noLiveContest = 0;
  const sink = {
    write(line: string): void {
      if (line.includes('"no_live_contest"')) noLiveContest += 1;
    },
  };
  const logger = pino({ level: 'silent' }, sink);
  // The skill never answers on purpose: keep the circuit breaker from suspending it (it would empty the pool).
  const base = fallbackConfig(PING_TIMEOUT_MS);
  const config = { ...base, fallback: { ...base.fallback, suspendAfterTimeouts: Number.MAX_SAFE_INTEGER } };
  const rig = await startInProcess(config, [], { logger });
  const { bus, system } = rig;
  const supervisor: Supervisor = system.supervisor;
  const gc = (globalThis as { gc?: () => void }).gc!;
  let pings = 0;
  let handled = 0;
  const unsubscribe = bus.subscribe((message) => {
    if (message.type === `${SILENT_SKILL}.fallback.ping`) pings += 1;
    else if (message.type === 'ovos.utterance.handled') handled += 1;
  });
  const utter = (prefix: string, i: number): void =>
    bus.publish(createMessage('ovos.utterance.handle', { utterances: [UTTERANCE] }, { session: { session_id: `${prefix}-s${i}` }, utterance_id: `${prefix}-u${i}` }));

  const burst = async (prefix: string): Promise<BurstResult> => {
    pings = 0;
    handled = 0;
    noLiveContest = 0;
    await settle();
    await collectGarbage();
    const before = heapUsed();

    const spawnGc = watchGc();
    const spawnStarted = performance.now();
    for (let i = 0; i < CONTESTS; i++) utter(prefix, i);
    // Microtasks only (see the header): delivery, spawning and the first pings all complete here.
    for (let round = 0; round < 100 && pings < CONTESTS; round++) await bus.idle();
    const spawnMs = performance.now() - spawnStarted;
    const liveActors = supervisor.size;
    gc();
    gc();
    const live = heapUsed();
    const stillLive = supervisor.size;
    // Only now may a macrotask run (and the first timers fire).
    const liveRoutes = indexSizes(supervisor);
    const spawnGcActivity = await spawnGc.stop(spawnStarted + spawnMs);

    await waitUntil(() => handled === CONTESTS, 60_000, `${CONTESTS} utterances handled`);
    const totalMs = performance.now() - spawnStarted;
    await settle();
    await collectGarbage();
    const after = heapUsed();
    const afterSize = supervisor.size;
    const routes = indexSizes(supervisor);

    // Behavioural probe: a late pong and a late handler signal for every session find no contest.
    logger.level = 'info';
    for (let i = 0; i < CONTESTS; i++) {
      const context = { session: { session_id: `${prefix}-s${i}` }, utterance_id: `${prefix}-u${i}`, skill_id: SILENT_SKILL };
      supervisor.receive(createMessage(`${SILENT_SKILL}.fallback.pong`, { skill_id: SILENT_SKILL, can_handle: true }, context));
      supervisor.receive(createMessage('mycroft.skill.handler.complete', {}, context));
    }
    logger.level = 'silent';
    return { before, live, after, liveActors, stillLive, pings, afterSize, liveRoutes, routes, noLiveContest, spawnMs, spawnGc: spawnGcActivity, totalMs };
  };

  try {
    bus.publish(createMessage('ovos.fallback.register', { skill_id: SILENT_SKILL, priority: 50 }, { skill_id: SILENT_SKILL, session: { session_id: 'default' } }));
    await waitUntil(() => system.fallback.registry.availableFor('default').size === 1, 5_000, 'the silent skill registration');
    // Warm up the same path (JIT, the shared machine's memoised transitions) so the baseline already holds it.
    for (let i = 0; i < WARMUP; i++) utter('warm', i);
    await waitUntil(() => handled === WARMUP, 30_000, 'warm-up utterances handled');

    const bursts: BurstResult[] = [];
    for (let round = 1; round <= ROUNDS; round++) bursts.push(await burst(`mem${round}`));
    const first = bursts[0]!;
    const last = bursts[bursts.length - 1]!;
    const baseline = first.before;
    const perUtterance = (first.live - baseline) / CONTESTS;
    const growthAfterFirst = last.after - first.after;

    const checks: Check[] = bursts.flatMap((b, i): Check[] => {
      const round = `burst ${i + 1}`;
      return [
        {
          name: `${round}: all ${formatCount(CONTESTS)} contests live when measured`,
          ok: b.liveActors === 2 * CONTESTS && b.stillLive === 2 * CONTESTS && b.pings === CONTESTS,
          detail: `supervisor.size ${b.liveActors} (utterance + fallback actors), pings ${b.pings}`,
        },
        { name: `${round}: supervisor live contest count back to 0`, ok: b.afterSize === 0, detail: `supervisor.size = ${b.afterSize}` },
        {
          name: `${round}: supervisor routing index empty`,
          ok: b.routes['#routes'] === 0 && b.routes['#live'] === 0,
          detail: `#routes ${b.routes['#routes'] ?? '?'} keys (${b.liveRoutes['#routes'] ?? '?'} while live), #live ${b.routes['#live'] ?? '?'}`,
        },
        {
          name: `${round}: late replies for every session dropped as no_live_contest`,
          ok: b.noLiveContest === 2 * CONTESTS,
          detail: `${b.noLiveContest}/${2 * CONTESTS}`,
        },
      ];
    });
    checks.push(
      { name: 'common-query early-start cache empty', ok: system.commonQuery.cacheSize === 0, detail: `cacheSize = ${system.commonQuery.cacheSize}` },
      { name: 'common-query plugin keeps no legacy winner', ok: system.commonQuery.pendingDispatches === 0, detail: `pendingDispatches = ${system.commonQuery.pendingDispatches}` },
      { name: 'fallback plugin tracks no contest', ok: system.fallback.liveContests === 0, detail: `liveContests = ${system.fallback.liveContests}` },
      {
        name: `no leak: burst ${ROUNDS} leaves < 1 MiB more than burst 1`,
        ok: growthAfterFirst < 1024 * 1024,
        detail: `${formatBytes(growthAfterFirst)} (${formatBytes(growthAfterFirst / CONTESTS)} per utterance)`,
      },
    );
    const row = (measure: string, bytes: number): Record<string, Cell> => ({ measure, value: formatBytes(bytes), bytes });
    const rows: Array<Record<string, Cell>> = [
      row('heap before (baseline, after GC)', baseline),
      row(`heap with ${formatCount(CONTESTS)} live contests`, first.live),
      row('per live utterance (utterance actor + fallback contest)', perUtterance),
      row('per live actor', (first.live - baseline) / first.liveActors),
      row('heap after all finished (after GC)', first.after),
      row('retained vs baseline after burst 1', first.after - baseline),
      row(`retained after burst ${ROUNDS} vs after burst 1`, growthAfterFirst),
      { measure: `time to spawn ${formatCount(CONTESTS)} (publish → every first ping)`, value: `${first.spawnMs.toFixed(0)} ms`, bytes: null, ms: first.spawnMs },
      {
        measure: '  of which GC (pauses, max pause)',
        value: `${first.spawnGc.totalMs.toFixed(0)} ms, ${first.spawnGc.maxMs.toFixed(0)} ms`,
        bytes: null,
        ms: first.spawnGc.totalMs,
      },
      { measure: `publish → all ${formatCount(CONTESTS)} timed out (${PING_TIMEOUT_MS} ms) and handled`, value: `${first.totalMs.toFixed(0)} ms`, bytes: null, ms: first.totalMs },
    ];
    return {
      id: 'memory',
      title: `4. Memory: ${formatCount(CONTESTS)} concurrent fallback contests in-process (one skill that never answers)`,
      params: {
        contests: CONTESTS,
        sessions: CONTESTS,
        bursts: ROUNDS,
        warmup: WARMUP,
        pingTimeoutMs: PING_TIMEOUT_MS,
        clock: 'systemClock',
        gc: 'global.gc() (--expose-gc)',
        perBurst: bursts.map((b) => ({ before: b.before, live: b.live, after: b.after, spawnMs: b.spawnMs, totalMs: b.totalMs })),
      },
      columns: [
        { key: 'measure', header: 'measure', unit: 'text' },
        { key: 'value', header: 'value', unit: 'text' },
      ],
      rows,
      notes: [
        'the 10k arrive in one burst and are spawned from microtasks, so the "live" reading is taken before any timer can fire; spawning takes longer than the ping timeout, so every timer is already due when the event loop next runs timers',
        'each utterance is two live actors: the orchestrator\'s utterance actor (waiting on the stage) and the fallback contest (waiting on the pong)',
        'A bare contest actor measures ~5 KB; both machines here are provided once, so each live actor holds only its own snapshot, context and timers',
        growthAfterFirst < 1024 * 1024
          ? `what burst 1 leaves is a high-water mark, not a leak (burst 2 adds ${formatBytes(growthAfterFirst)}); tables that grew to hold 10k entries keep their capacity`
          : `burst 2 left ${formatBytes(growthAfterFirst)} more than burst 1: memory grows with every burst — a leak to investigate (heap snapshots before and after a burst)`,
      ],
      checks,
    };
  } finally {
    unsubscribe();
    rig.close();
  }
}
