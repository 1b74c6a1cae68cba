/**
 * Benchmark 5 — routing cost: replies routed by the Supervisor to one of N live contests, N = 100, 1k, 10k.
 *
 * Each N is its own in-process system with N real contests (N utterances in N sessions) that stay alive for the
 * whole measurement: they wait on a skill that never answers, on a `ManualClock` that is never advanced. The events
 * are `<skill>.fallback.pong` from a second pool skill not yet asked, for random sessions, handed straight to
 * `supervisor.receive` (no bus): classify, route by (kind, session), correlate by utterance_id, deliver to the
 * actor, whose machine ignores it (`pong.ignored`, reason `not_awaited`) — the whole path a stray or early reply
 * takes, without the contest ever ending.
 *
 * All systems are alive at once and their passes are interleaved round by round, so every row sees the same heap
 * and the same moment-to-moment machine noise; only N (and how many contests the events touch) differs.
 */
import { createMessage, type Message } from '../../src/bus/message.js';
import { ManualClock } from '../../src/clock/manual-clock.js';
import type { Section } from './report.js';
import { collectGarbage, fallbackConfig, startInProcess, waitUntil, type InProcessRig } from './rig.js';
import { median, watchGc } from './stats.js';
import { seededRandom } from '../support/random.js';

const SIZES = [100, 1_000, 10_000];
const EVENTS = 50_000;
const ROUNDS = 5;
const AWAITED = 'waits-forever';
const EARLY = 'not-asked-yet';
const UTTERANCE = 'tell me something nobody else can';

/** A system with `live` contests that can never end. */
async function liveSystem(live: number, prefix: string): Promise<InProcessRig> {
  const rig = await startInProcess(fallbackConfig(), [], { clock: new ManualClock() });
  const { bus, system } = rig;
  for (const [skill, priority] of [[AWAITED, 10], [EARLY, 20]] as const) {
    bus.publish(createMessage('ovos.fallback.register', { skill_id: skill, priority }, { skill_id: skill, session: { session_id: 'default' } }));
  }
  await waitUntil(() => system.fallback.registry.availableFor('default').size === 2, 5_000, 'registrations');
  for (let i = 0; i < live; i++) {
    bus.publish(createMessage('ovos.utterance.handle', { utterances: [UTTERANCE] }, { session: { session_id: `${prefix}-s${i}` }, utterance_id: `${prefix}-u${i}` }));
  }
  // utterance actor + fallback contest per utterance; time never moves, so none of them can end.
  await waitUntil(() => system.supervisor.size === 2 * live, 60_000, `${live} live contests`);
  return rig;
}

/** Pongs for random sessions among the first `targets` of a system's sessions. */
function pongs(prefix: string, targets: number, seed: number): Message[] {
  const next = seededRandom(seed);
  return Array.from({ length: EVENTS }, () => {
    const i = Math.floor(next() * targets);
    return createMessage(`${EARLY}.fallback.pong`, { skill_id: EARLY, can_handle: true }, { session: { session_id: `${prefix}-s${i}` }, utterance_id: `${prefix}-u${i}`, skill_id: EARLY });
  });
}

interface Scenario {
  readonly live: number;
  readonly targets: number;
  readonly rig: InProcessRig;
  readonly events: readonly Message[];
  readonly runs: number[];
  gcMs: number;
  wallMs: number;
  gcMaxMs: number;
}

export async function benchRouting(): Promise<Section> {
  const rigs = new Map<number, InProcessRig>();
  try {
    for (const size of SIZES) rigs.set(size, await liveSystem(size, `n${size}`));
    const largest = SIZES[SIZES.length - 1]!;
    const smallest = SIZES[0]!;
    const scenario = (live: number, targets: number): Scenario => ({
      live,
      targets,
      rig: rigs.get(live)!,
      events: pongs(`n${live}`, targets, live + targets),
      runs: [],
      gcMs: 0,
      wallMs: 0,
      gcMaxMs: 0,
    });
    // At the largest N, also a hot set of the smallest size: the same index of N entries, a small working set.
    const scenarios = [...SIZES.map((size) => scenario(size, size)), scenario(largest, smallest)];

    const pass = (s: Scenario): void => {
      const { supervisor } = s.rig.system;
      for (const event of s.events) supervisor.receive(event);
    };
    for (const s of scenarios) pass(s); // warm-up
    for (let round = 0; round < ROUNDS; round++) {
      // Rotate the order so no scenario always runs right after the same neighbour.
      for (let k = 0; k < scenarios.length; k++) {
        const s = scenarios[(round + k) % scenarios.length]!;
        await collectGarbage(1); // one full GC of a ~450 MB heap is enough to start each pass level
        const gc = watchGc();
        const started = performance.now();
        pass(s);
        const elapsed = performance.now() - started;
        const activity = await gc.stop(started + elapsed);
        s.runs.push((EVENTS / elapsed) * 1000);
        s.gcMs += activity.totalMs;
        s.wallMs += elapsed;
        s.gcMaxMs = Math.max(s.gcMaxMs, activity.maxMs);
      }
    }
    const stillLive = [...rigs].every(([live, rig]) => rig.system.supervisor.size === 2 * live);

    const rate = (s: Scenario): number => median(s.runs);
    // Relative to N=smallest within each round (the same minute of machine time), then the median over rounds.
    const relative = (s: Scenario): number => median(s.runs.map((run, round) => run / scenarios[0]!.runs[round]!));
    const base = rate(scenarios[0]!);
    const spread = scenarios[SIZES.length - 1]!;
    const hot = scenarios[SIZES.length]!;
    const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
    const liveTotal = SIZES.reduce((a, b) => a + b, 0);
    return {
      id: 'routing',
      title: '5. Routing: replies routed by the Supervisor to one of N live contests (supervisor.receive, no bus)',
      params: {
        sizes: SIZES,
        eventsPerPass: EVENTS,
        rounds: ROUNDS,
        event: `${EARLY}.fallback.pong (pool member not yet asked)`,
        clock: 'ManualClock (never advanced)',
        liveTogether: `${liveTotal} utterances (${2 * liveTotal} actors) in ${SIZES.length} systems, passes interleaved`,
      },
      columns: [
        { key: 'scenario', header: 'N live → events spread over', unit: 'text' },
        { key: 'perSecond', header: 'events/s', unit: 'count' },
        { key: 'nsPerEvent', header: 'ns/event', unit: 'count' },
        { key: 'relative', header: `vs N=${fmt(smallest)} (per round)`, unit: 'text' },
        { key: 'gcShare', header: 'GC % of time', unit: 'text' },
        { key: 'gcMaxMs', header: 'GC max pause ms', unit: 'ms' },
      ],
      rows: scenarios.map((s) => ({
        scenario: `${fmt(s.live)} → ${s.targets === s.live ? 'all of them' : `${fmt(s.targets)} of them`}`,
        live: s.live,
        targets: s.targets,
        perSecond: rate(s),
        nsPerEvent: 1e9 / rate(s),
        relative: `${(relative(s) * 100).toFixed(0)}%`,
        gcShare: `${((s.gcMs / s.wallMs) * 100).toFixed(0)}%`,
        gcMaxMs: s.gcMaxMs,
        runs: s.runs.map((x) => Math.round(x)).join(' / '),
      })),
      notes: [
        'each event: classify → session → route index (kind, session) → utterance_id check → correlate → actor.send → machine (ignored, reason emitted) → drop logged at info (silent logger)',
        `all ${SIZES.length} systems live in one heap (${fmt(liveTotal)} utterances, ${fmt(2 * liveTotal)} actors) and their passes alternate (${ROUNDS} rounds × ${fmt(EVENTS)} events; events/s = median pass, ratio = median of per-round ratios): heap size and machine noise are common to every row`,
        `the index is O(1): N=${fmt(largest)} with events to ${fmt(smallest)} of them routes like N=${fmt(smallest)}. Spreading events over all ${fmt(largest)} costs more per event through memory, not the index: each event touches cold objects (route entry, contest, actor, snapshot) scattered over the heap — cache and TLB misses — and each touched actor's new snapshot is an old→new reference for the scavenger`,
        'Measured apart: a bare Map<key, ActorRef> to one of 10k actors ~190k events/s (one actor alone ~530k/s); through a supervisor machine with sendTo 80–110k/s',
      ],
      checks: [
        {
          name: `index lookup is O(1): N=${fmt(largest)} (events to ${fmt(smallest)} of them) within 25% of N=${fmt(smallest)}`,
          ok: relative(hot) >= 0.75,
          detail: `${fmt(rate(hot))} vs ${fmt(base)} events/s; median per-round ratio ${(relative(hot) * 100).toFixed(0)}%`,
        },
        {
          name: `events spread over all N=${fmt(largest)} vs N=${fmt(smallest)} (reported, not asserted)`,
          ok: true,
          detail: `${fmt(rate(spread))} vs ${fmt(base)} events/s; median per-round ratio ${(relative(spread) * 100).toFixed(0)}%`,
        },
        { name: 'no contest ended during the measurement', ok: stillLive, detail: 'every supervisor.size unchanged' },
      ],
    };
  } finally {
    for (const rig of rigs.values()) rig.close();
  }
}
