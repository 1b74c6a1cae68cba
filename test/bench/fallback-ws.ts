/**
 * Benchmark 2 — fallback contests over the websocket bus: `BusServer` on 127.0.0.1 (ephemeral port) with the
 * contest system attached in-process, the fallback skills as separate `BusClient` connections in one child process
 * (core on one core, skills on the other), and a driver `BusClient` here publishing utterances and timing the
 * dispatch as it arrives on its own socket: utterance in → dispatch out, what the ovos-core figure measures
 * (~69 ms median for 5 fallback skills answering at once, measured on this machine).
 *
 * Every frame is re-broadcast to every client (ovos-messagebus semantics), so each contest costs
 * (messages × clients) socket writes: that, not the contest machinery, is what the throughput row measures.
 */
import { runLoad, type LoadResult } from './load-driver.js';
import { loadColumns, loadRow, type Cell, type Section } from './report.js';
import { summarize } from './stats.js';
import { collectGarbage, fallbackConfig, fallbackPlan, isFallbackDispatch, startWsRig } from './rig.js';

const CONCURRENCY = 100;
const TOTAL = 5_000;
const WARMUP = 300;
const SEQUENTIAL = 500;
const UTTERANCE = 'tell me something nobody else can';
const MARKS = { dispatch: (m: { type: string }) => isFallbackDispatch(m.type) };
const OVOS_CORE_MEDIAN_MS = 69;

interface ScenarioResult {
  readonly skills: number;
  /** Only when asked for: the throughput run with CONCURRENCY sessions in flight. */
  readonly concurrent: LoadResult | undefined;
  readonly sequential: LoadResult;
}

async function scenario(skills: number, withConcurrent: boolean): Promise<ScenarioResult> {
  const rig = await startWsRig(fallbackConfig(), { fallback: fallbackPlan(skills) });
  try {
    const load = (runId: string, concurrency: number, total: number) =>
      runLoad({ bus: rig.driver, total, concurrency, utterance: UTTERANCE, runId, marks: MARKS, timeoutMs: 120_000 });
    await load('warmup', withConcurrent ? CONCURRENCY : 1, WARMUP);
    await collectGarbage();
    const concurrent = withConcurrent ? await load('concurrent', CONCURRENCY, TOTAL) : undefined;
    await collectGarbage();
    const sequential = await load('sequential', 1, SEQUENTIAL);
    return { skills, concurrent, sequential };
  } finally {
    await rig.close();
  }
}

export async function benchFallbackWs(): Promise<Section> {
  const scenarios = [await scenario(3, true), await scenario(5, false)];
  const marks = ['dispatch', 'handled'];
  // How many times faster than ovos-core's median decision, at the median.
  const vsOvos = (result: LoadResult): Cell => `${(OVOS_CORE_MEDIAN_MS / summarize(result.latencies['dispatch'] ?? []).p50).toFixed(0)}× faster`;
  const rows: Array<Record<string, Cell>> = [];
  for (const { skills, concurrent, sequential } of scenarios) {
    if (concurrent !== undefined) rows.push(loadRow(`${skills} skills, ${CONCURRENCY} sessions in flight`, CONCURRENCY, concurrent, marks, { vsOvosCore: null }));
    rows.push(loadRow(`${skills} skills, one at a time`, 1, sequential, marks, { vsOvosCore: vsOvos(sequential) }));
  }
  const runs = scenarios.flatMap((s) => (s.concurrent === undefined ? [s.sequential] : [s.concurrent, s.sequential]));
  const missed = runs.reduce((n, r) => n + (r.missed['dispatch'] ?? 0), 0);
  return {
    id: 'fallback-ws',
    title: '2. Fallback contests over the websocket bus (skills: one BusClient each, in a child process; driver: a BusClient)',
    params: {
      concurrency: CONCURRENCY,
      total: TOTAL,
      warmup: WARMUP,
      sequential: SEQUENTIAL,
      skills: { three: fallbackPlan(3), five: fallbackPlan(5) },
      topology: 'this process: BusServer 127.0.0.1:0 + contest system + driver BusClient; child process: one BusClient per skill',
      ovosCoreMedianMs: OVOS_CORE_MEDIAN_MS,
    },
    columns: [...loadColumns([['dispatch', 'dispatch'], ['handled', 'handled']]), { key: 'vsOvosCore', header: 'vs ovos-core 69 ms', unit: 'text' }],
    rows,
    notes: [
      'dispatch = driver publishes ovos.utterance.handle → driver receives <skill>:fallback (two socket hops on top of the contest\'s n ping/pong round trips)',
      'skills are queried in priority order and only the last is willing: n sequential round trips per contest (the worst case)',
      'the in-flight row is bound by this process\'s CPU: the server writes every frame to every client, one socket write per client per message (a CPU profile of it puts about 30% of this process in writev)',
      `ovos-core 2.1 on the real ovos-messagebus, 5 fallback skills answering at once: ~${OVOS_CORE_MEDIAN_MS} ms median (~30–34 ms with TCP_NODELAY), measured on this machine`,
    ],
    checks: [{ name: 'every utterance dispatched to the willing skill', ok: missed === 0, detail: `missed ${missed}` }],
  };
}
