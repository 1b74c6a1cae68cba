/**
 * Benchmark 3 — common-query contests over the websocket bus: three CQ skills (one `BusClient` each, in a child
 * process) claim at once with `latency_ms` and answer at once; pipeline `['common_query']`. Timed from the driver:
 * utterance published → `common_query:common_query` dispatch, and → `ovos.utterance.speak` (the answer spoken by
 * the plugin's in-process handler).
 *
 * Variants: confidences 0.6/0.7/0.8 (below the 0.9 fast-win threshold: the collection closes when all three have
 * answered) and 0.6/0.7/0.95 (fast win). The poll closes as soon as every skill on the roster has answered
 * (OVOS-COMMON-QUERY-1 §6.3; the first question, before the roster is learnt, waits the 125 ms claim bound).
 */
import type { Message } from '../../src/bus/message.js';
import { runLoad, type LoadResult } from './load-driver.js';
import type { CommonQuerySkillPlan } from './remote-skills.js';
import { loadColumns, loadRow, type Section } from './report.js';
import { collectGarbage, commonQueryConfig, startWsRig } from './rig.js';
import { summarize } from './stats.js';

const SEQUENTIAL = 500;
const WARMUP = 100;
const CONCURRENCY = 100;
const CONCURRENT_TOTAL = 2_000;
const UTTERANCE = 'what is the speed of light';
const LATENCY_MS = 100;
const DISPATCH = 'common_query:common_query';
const SPEAK = 'ovos.utterance.speak';
const OVOS_CORE_MEDIAN_MS = 69;

interface Variant {
  readonly label: string;
  readonly confs: readonly number[];
  readonly pollClaimBoundMs: number;
  readonly concurrent: boolean;
}

const VARIANTS: readonly Variant[] = [
  { label: 'conf .6/.7/.8 (default claim bound 125 ms)', confs: [0.6, 0.7, 0.8], pollClaimBoundMs: 125, concurrent: true },
  { label: 'conf .6/.7/.95 fast win', confs: [0.6, 0.7, 0.95], pollClaimBoundMs: 125, concurrent: false },
];

const skillsFor = (confs: readonly number[]): CommonQuerySkillPlan[] =>
  confs.map((conf) => ({ skillId: `cq-${Math.round(conf * 100)}`, latencyMs: LATENCY_MS, conf }));

/** Per utterance: how many claimants were asked (= collected in the poll), and which answer was spoken. */
function outcomeTracker(): { observe: (utteranceId: string, message: Message) => void; claimantsAvg: () => number; spoken: () => Map<string, number> } {
  const asked = new Map<string, number>();
  const spoken = new Map<string, number>();
  return {
    observe: (utteranceId, message) => {
      if (message.type.endsWith(':common_query') && message.type !== DISPATCH) asked.set(utteranceId, (asked.get(utteranceId) ?? 0) + 1);
      else if (message.type === SPEAK) {
        const text = typeof message.data['utterance'] === 'string' ? message.data['utterance'] : '?';
        spoken.set(text, (spoken.get(text) ?? 0) + 1);
      }
    },
    claimantsAvg: () => [...asked.values()].reduce((a, b) => a + b, 0) / Math.max(asked.size, 1),
    spoken: () => spoken,
  };
}

interface VariantResult {
  readonly variant: Variant;
  readonly best: string;
  readonly sequential: LoadResult;
  readonly claimantsAvg: number;
  readonly bestShare: number;
  readonly spoken: Record<string, number>;
  readonly concurrent?: LoadResult;
}

async function runVariant(variant: Variant): Promise<VariantResult> {
  const skills = skillsFor(variant.confs);
  const best = `answer from ${skills[skills.length - 1]!.skillId}`;
  const rig = await startWsRig(commonQueryConfig(variant.pollClaimBoundMs), { commonQuery: skills });
  try {
    const marks = { dispatch: (m: Message) => m.type === DISPATCH, speak: (m: Message) => m.type === SPEAK };
    const load = (runId: string, concurrency: number, total: number, observe?: (id: string, m: Message) => void) =>
      runLoad({ bus: rig.driver, total, concurrency, utterance: UTTERANCE, runId, marks, timeoutMs: 120_000, ...(observe ? { observe } : {}) });
    await load('warmup', 1, WARMUP);
    await collectGarbage();
    const tracker = outcomeTracker();
    const sequential = await load('sequential', 1, SEQUENTIAL, tracker.observe);
    const spoken = tracker.spoken();
    let concurrent: LoadResult | undefined;
    if (variant.concurrent) {
      await collectGarbage();
      concurrent = await load('concurrent', CONCURRENCY, CONCURRENT_TOTAL);
    }
    const result = {
      variant,
      best,
      sequential,
      claimantsAvg: tracker.claimantsAvg(),
      bestShare: (spoken.get(best) ?? 0) / Math.max(sequential.completed, 1),
      spoken: Object.fromEntries(spoken),
    };
    return concurrent === undefined ? result : { ...result, concurrent };
  } finally {
    await rig.close();
  }
}

export async function benchCommonQueryWs(): Promise<Section> {
  const results: VariantResult[] = [];
  for (const variant of VARIANTS) results.push(await runVariant(variant));

  const marks = ['dispatch', 'speak', 'handled'];
  const rows = [];
  for (const r of results) {
    rows.push(
      loadRow(`${r.variant.label}, one at a time`, 1, r.sequential, marks, {
        claimants: r.claimantsAvg,
        bestAnswer: `${(r.bestShare * 100).toFixed(0)}%`,
        vsOvosCore: `${(OVOS_CORE_MEDIAN_MS / summarize(r.sequential.latencies['dispatch'] ?? []).p50).toFixed(1)}× faster`,
      }),
    );
    if (r.concurrent !== undefined) {
      rows.push(loadRow(`${r.variant.label}, ${CONCURRENCY} in flight`, CONCURRENCY, r.concurrent, marks, { claimants: null, bestAnswer: null, vsOvosCore: null }));
    }
  }
  const missed = results.reduce((n, r) => n + (r.sequential.missed['dispatch'] ?? 0) + (r.concurrent?.missed['dispatch'] ?? 0), 0);
  return {
    id: 'common-query-ws',
    title: '3. Common-query contests over the websocket bus (3 CQ skills claim and answer at once; skills in a child process)',
    params: {
      sequential: SEQUENTIAL,
      warmup: WARMUP,
      concurrency: CONCURRENCY,
      concurrentTotal: CONCURRENT_TOTAL,
      utterance: UTTERANCE,
      skillLatencyMs: LATENCY_MS,
      variants: VARIANTS,
      ovosCoreMedianMs: OVOS_CORE_MEDIAN_MS,
      fastWinConfidence: commonQueryConfig(20).commonQuery.fastWinConfidence,
      pollWindowMs: commonQueryConfig(20).commonQuery.pollWindowMs,
      spokenAnswers: Object.fromEntries(results.map((r) => [r.variant.label, r.spoken])),
    },
    columns: [
      ...loadColumns([
        ['dispatch', 'dispatch'],
        ['speak', 'speak'],
      ]),
      { key: 'claimants', header: 'claimants asked', unit: 'text' },
      { key: 'bestAnswer', header: 'best answer won', unit: 'text' },
      { key: 'vsOvosCore', header: `vs ovos-core ${OVOS_CORE_MEDIAN_MS} ms`, unit: 'text' },
    ],
    rows,
    notes: [
      'dispatch = driver publishes ovos.utterance.handle → driver receives common_query:common_query; speak = → ovos.utterance.speak',
      'the poll closes as soon as every skill on the roster has answered (all three claim here), else at the 125 ms claim bound',
      `ovos-core 2.1, 3 common-query skills answering at once: ~${OVOS_CORE_MEDIAN_MS} ms median decision (measured on this machine)`,
    ],
    checks: [
      { name: 'every utterance answered through common_query', ok: missed === 0, detail: `missed ${missed}` },
    ],
  };
}
