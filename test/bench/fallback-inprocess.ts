/**
 * Benchmark 1 — fallback contests in-process: `LocalBus` + the system clock, three fallback skills registered
 * in-process (priorities 10/20/30 in one stage; the first two decline, the third is willing; all answer at once),
 * driven through the real orchestrator by `ovos.utterance.handle` and timed to the `<skill>:fallback` dispatch and
 * to `ovos.utterance.handled`.
 *
 * Two loads: 100 sessions in flight (throughput; its latency is mostly queueing — Little's law: in flight ÷
 * throughput) and one at a time (the cost of one contest through the machinery, no queue).
 */
import { runLoad } from './load-driver.js';
import { loadColumns, loadRow, type Section } from './report.js';
import { DEFAULT_CONFIG, type Config } from '../../src/config/defaults.js';
import { collectGarbage, fallbackConfig, fallbackPlan, isFallbackDispatch, startInProcess } from './rig.js';

const SKILLS = 3;
const CONCURRENCY = 100;
const TOTAL = 20_000;
const WARMUP = 2_000;
const SEQUENTIAL = 2_000;
const UTTERANCE = 'tell me something nobody else can';
/** A command on the default pipeline (fallback_high, common_query, fallback_medium, fallback_low): the gate turns it away. */
const COMMAND = 'do a barrel roll';

/** The default pipeline and stages, the same three skills in fallback_low (priorities 80/85/90). */
function defaultPipelineConfig(): Config {
  const base = structuredClone(DEFAULT_CONFIG) as Config;
  return { ...base, inspector: { ...base.inspector, port: 0 }, fallback: { ...base.fallback, registryFile: null } };
}
const lowPlan = () => fallbackPlan(SKILLS).map((plan, i) => ({ ...plan, skillId: `fb-${80 + 5 * i}`, priority: 80 + 5 * i }));
const MARKS = { dispatch: (m: { type: string }) => isFallbackDispatch(m.type) };

export async function benchFallbackInProcess(): Promise<Section> {
  const config = fallbackConfig();
  const rig = await startInProcess(config, fallbackPlan(SKILLS));
  try {
    const load = (runId: string, concurrency: number, total: number) =>
      runLoad({ bus: rig.bus, total, concurrency, utterance: UTTERANCE, runId, marks: MARKS, timeoutMs: 120_000 });

    await load('warmup', CONCURRENCY, WARMUP);
    await collectGarbage();
    const concurrent = await load('concurrent', CONCURRENCY, TOTAL);
    await collectGarbage();
    const sequential = await load('sequential', 1, SEQUENTIAL);

    // The same contest behind three stages that have nothing to ask (two empty pools, a gate that rejects).
    const defaults = await startInProcess(defaultPipelineConfig(), lowPlan());
    let behind: Awaited<ReturnType<typeof runLoad>>;
    try {
      const run = (runId: string, total: number) =>
        runLoad({ bus: defaults.bus, total, concurrency: CONCURRENCY, utterance: COMMAND, runId, marks: MARKS, timeoutMs: 120_000 });
      await run('warmup-default', WARMUP);
      await collectGarbage();
      behind = await run('default-pipeline', TOTAL);
    } finally {
      defaults.close();
    }

    const queueingMs = (CONCURRENCY / concurrent.perSecond) * 1000;
    const perUtteranceUs = (1000 / concurrent.perSecond) * 1000;
    return {
      id: 'fallback-inprocess',
      title: `1. Fallback contests in-process (LocalBus, ${SKILLS} skills 10/20/30: decline, decline, willing)`,
      params: {
        skills: SKILLS,
        concurrency: CONCURRENCY,
        total: TOTAL,
        warmup: WARMUP,
        sequential: SEQUENTIAL,
        pipeline: config.pipeline,
        stages: config.fallback.stages,
        pingTimeoutMs: config.fallback.pingTimeoutMs,
        clock: 'systemClock',
      },
      columns: loadColumns([['dispatch', 'dispatch'], ['handled', 'handled']]),
      rows: [
        loadRow(`${CONCURRENCY} sessions in flight`, CONCURRENCY, concurrent, ['dispatch', 'handled']),
        loadRow('one at a time', 1, sequential, ['dispatch', 'handled']),
        loadRow(`default pipeline, a command (3 stages passed over, then fallback_low), ${CONCURRENCY} in flight`, CONCURRENCY, behind, ['dispatch', 'handled']),
      ],
      notes: [
        `latency at ${CONCURRENCY} in flight is queueing: ${CONCURRENCY} ÷ ${Math.round(concurrent.perSecond)}/s = ${queueingMs.toFixed(1)} ms per utterance in the queue (Little's law); the one-at-a-time row is the machinery`,
        'contests/s = utterances from ovos.utterance.handle to ovos.utterance.handled per second (1 utterance actor + 1 fallback contest + 3 ping/pong round trips + dispatch + handler completion each)',
        'default pipeline: fallback_high and fallback_medium have empty pools and the gate turns the command away, so the orchestrator passes over those three stages without a match actor (PipelineStage.declines)',
        `each utterance costs ${perUtteranceUs.toFixed(0)} µs of this process at ${CONCURRENCY} in flight, GC included`,
      ],
      checks: [
        {
          name: 'every utterance dispatched to the willing skill',
          ok: concurrent.missed['dispatch'] === 0 && sequential.missed['dispatch'] === 0 && behind.missed['dispatch'] === 0,
          detail: `missed ${concurrent.missed['dispatch']} + ${sequential.missed['dispatch']} + ${behind.missed['dispatch']}`,
        },
        { name: 'no contest left alive', ok: rig.system.supervisor.size === 0, detail: `supervisor.size = ${rig.system.supervisor.size}` },
      ],
    };
  } finally {
    rig.close();
  }
}
