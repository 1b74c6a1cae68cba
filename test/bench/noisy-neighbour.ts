/**
 * The noisy neighbour: one client of the daemon is loud — well-formed, just far more than its share — while another
 * asks a question every 50 ms, as a handful of users at satellites do. The daemon as `npm start` runs it (`mixed-load.ts`),
 * the mixed-load skills in another process, each over its own connection (as ovos-workshop skills are), the quiet
 * client in a third (`driver-process.ts`, one session), the loud one in a fourth (`noisy-process.ts`).
 *
 * Three phases, the quiet client's latency (published → its `ovos.utterance.handled`) measured in each: alone;
 * while the loud client sends 60,000 ordinary 200-byte frames as fast as the daemon takes them; while it publishes
 * 5,000 utterances at once (its share: `orchestrator.maxInFlightPerConnection` running, as many waiting, the rest
 * ended at once with `too_many_in_flight`). Also: the daemon's peak RSS in each phase, the loud client's utterances
 * handled, lost or doubled, and the daemon's `fair_share` lines (the loud client slowed).
 */
import { fork } from 'node:child_process';
import type { DriverResult } from './driver-process.js';
import { rssOf, startDaemonProcess, startDriver, startMixedSkills } from './mixed-load.js';
import type { FromNoisy, NoisyPlan, ToNoisy } from './noisy-process.js';
import { profileArgv } from './remote-skills.js';
import type { Section } from './report.js';
import { summarize, type Summary } from './stats.js';

const FRAMES = Number(process.env['BENCH_NOISY_FRAMES'] ?? 60_000);
const BURST = Number(process.env['BENCH_NOISY_BURST'] ?? 5_000);
const MB = 1024 * 1024;

function noisy(plan: NoisyPlan): Promise<Extract<FromNoisy, { type: 'done' }>> {
  const child = fork(new URL('./noisy-process.js', import.meta.url), [], { execArgv: profileArgv(), stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise<Extract<FromNoisy, { type: 'done' }>>((resolve, reject) => {
    child.on('message', (message: FromNoisy) => (message.type === 'done' ? resolve(message) : reject(new Error(message.message))));
    child.once('exit', (code) => reject(new Error(`noisy client exited (code ${code})`)));
    child.send({ type: 'run', plan } satisfies ToNoisy);
  }).finally(() => child.kill());
}

const latencies = (runs: readonly DriverResult[]): Summary => summarize(runs.flatMap((r) => Object.values(r.latencies).flat()));
const fmt = (s: Summary): string => `p50 ${s.p50.toFixed(1)} ms, p90 ${s.p90.toFixed(1)} ms, max ${s.max.toFixed(1)} ms (n ${s.n})`;

export async function benchNoisyNeighbour(): Promise<Section> {
  const daemon = await startDaemonProcess();
  const closers: Array<() => Promise<void>> = [() => daemon.stop()];
  try {
    const skills = await startMixedSkills(daemon, 'per-skill');
    closers.unshift(() => skills.stop());
    const quiet = await startDriver(daemon.url);
    closers.unshift(() => quiet.stop());
    await quiet.run({ runId: 'warmup', total: 300, concurrency: 1 });

    /**
     * The quiet client: a question every 50 ms (open load, so a stall shows in every question asked during it, not
     * only in the one it caught), over 4 sessions, in rounds of one second for as long as `busy` says.
     */
    const ask = (label: string): Promise<DriverResult> => quiet.run({ runId: label, total: 20, concurrency: 4, ratePerSecond: 20 });
    const askWhile = async (label: string, busy: () => boolean): Promise<DriverResult[]> => {
      const runs: DriverResult[] = [];
      for (let round = 0; busy() || round === 0; round++) runs.push(await ask(`${label}-${round}`));
      return runs;
    };
    const peakDuring = async <T>(work: Promise<T>): Promise<{ result: T; peak: number }> => {
      let peak = rssOf(daemon.pid);
      const sampler = setInterval(() => (peak = Math.max(peak, rssOf(daemon.pid))), 100);
      try {
        return { result: await work, peak };
      } finally {
        clearInterval(sampler);
      }
    };

    const baselineRss = rssOf(daemon.pid);
    const alone: DriverResult[] = [];
    for (let round = 0; round < 10; round++) alone.push(await ask(`alone-${round}`));

    const warnsBefore = daemon.warnings();
    let flooding = true;
    const frames = peakDuring(noisy({ url: daemon.url, mode: 'frames', total: FRAMES }).finally(() => (flooding = false)));
    const duringFrames = await askWhile('frames', () => flooding);
    const framesDone = await frames;

    let bursting = true;
    const burst = peakDuring(noisy({ url: daemon.url, mode: 'utterances', total: BURST, sessions: 100 }).finally(() => (bursting = false)));
    const duringBurst = await askWhile('burst', () => bursting);
    const burstDone = await burst;
    const warns = daemon.warnings() - warnsBefore;

    const all = [...alone, ...duringFrames, ...duringBurst];
    const lost = all.reduce((n, r) => n + r.lost, 0);
    const doubled = all.reduce((n, r) => n + r.doubled, 0);
    const a = latencies(alone);
    const f = latencies(duringFrames);
    const b = latencies(duringBurst);
    const loudLost = burstDone.result.sent - burstDone.result.handled;
    const errors = Object.entries(burstDone.result.errors).map(([error, n]) => `${n} ${error}`).join(', ') || 'none';
    return {
      id: 'noisy',
      title: 'The noisy neighbour: one client asking a question every 50 ms while another is loud',
      params: { frames: FRAMES, burst: BURST },
      columns: [
        { key: 'what', header: 'what', unit: 'text' },
        { key: 'value', header: 'value', unit: 'text' },
      ],
      rows: [
        { what: 'quiet client alone', value: fmt(a) },
        { what: `while the loud one sends ${FRAMES.toLocaleString('en')} 200-byte frames`, value: `${fmt(f)}; the bus took ${(framesDone.result.ms / 1000).toFixed(1)} s to carry them; daemon RSS peak ${(framesDone.peak / MB).toFixed(0)} MB` },
        { what: `while it sends ${BURST.toLocaleString('en')} utterances at once`, value: `${fmt(b)}; all ${BURST.toLocaleString('en')} had their handled in ${(burstDone.result.ms / 1000).toFixed(1)} s (ended early: ${errors}); daemon RSS peak ${(burstDone.peak / MB).toFixed(0)} MB` },
        { what: 'quiet client lost / doubled', value: `${lost} / ${doubled}` },
        { what: "loud client's utterances without a handled / doubled", value: `${loudLost} / ${burstDone.result.doubled}` },
        { what: 'daemon RSS before', value: `${(baselineRss / MB).toFixed(0)} MB` },
        { what: 'daemon warn lines meanwhile', value: String(warns) },
      ],
      notes: [
        'the loud client is slowed (its socket paused) only while the bus is busy, and only as far as it exceeds its share; see src/bus/fair-share.ts',
        ...all.flatMap((r) => r.examples).slice(0, 5),
      ],
      checks: [
        { name: 'no utterance lost or doubled (quiet and loud)', ok: lost === 0 && doubled === 0 && loudLost === 0 && burstDone.result.doubled === 0, detail: `quiet ${lost}/${doubled}, loud ${loudLost}/${burstDone.result.doubled}` },
        { name: "the quiet client's p90 while the loud one sends frames stays under 50 ms (or 5× its p90 alone)", ok: f.p90 <= Math.max(5 * a.p90, 50), detail: `${a.p90.toFixed(1)} → ${f.p90.toFixed(1)} ms` },
        { name: "the quiet client's p90 while the loud one sends a burst of utterances stays under 250 ms", ok: b.p90 <= 250, detail: `${b.p90.toFixed(1)} ms` },
        { name: 'no question of the quiet client waits more than 1 s', ok: Math.max(f.max, b.max) <= 1_000, detail: `max ${f.max.toFixed(0)} / ${b.max.toFixed(0)} ms` },
      ],
    };
  } finally {
    for (const close of closers) await close();
  }
}
