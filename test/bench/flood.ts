/**
 * Benchmark 9 — a flood of malformed and hostile frames while sessions keep working: the
 * daemon as `npm start` runs it (`mixed-load.ts`), the mixed-load skills on one connection, a driver keeping 10
 * sessions busy, and a hostile client (`flood-process.ts`) sending 200,000 frames — bad JSON, wrong types, `null`
 * fields, spoofed replies, 100 KB topics, 50 KB of nesting, one 30 MB frame — as fast as the daemon takes them.
 *
 * Measured: the daemon's resident memory (VmRSS from /proc, every 100 ms) before, at its peak during the flood, and
 * 10 s and 30 s after it; the sessions' utterances lost or doubled during it; the daemon's warn lines.
 */
import { fork } from 'node:child_process';
import type { DriverResult } from './driver-process.js';
import type { FloodPlan, FromFlood, ToFlood } from './flood-process.js';
import { rssOf, startDaemonProcess, startDriver, startMixedSkills } from './mixed-load.js';
import { profileArgv } from './remote-skills.js';
import type { Section } from './report.js';
import { summarize } from './stats.js';

/** `BENCH_FLOOD_FRAMES=N` for a shorter run (profiling). */
const FRAMES = Number(process.env['BENCH_FLOOD_FRAMES'] ?? 200_000);
const SESSIONS = 10;
const MB = 1024 * 1024;


const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function flood(plan: FloodPlan): Promise<Extract<FromFlood, { type: 'done' }>> {
  const child = fork(new URL('./flood-process.js', import.meta.url), [], { execArgv: profileArgv(), stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  try {
    return await new Promise((resolve, reject) => {
      child.on('message', (message: FromFlood) => (message.type === 'done' ? resolve(message) : reject(new Error(message.message))));
      child.once('exit', (code) => reject(new Error(`flood process exited (code ${code})`)));
      child.send({ type: 'run', plan } satisfies ToFlood);
    });
  } finally {
    child.kill();
  }
}

export async function benchFlood(): Promise<Section> {
  const daemon = await startDaemonProcess();
  const closers: Array<() => Promise<void>> = [() => daemon.stop()];
  try {
    const skills = await startMixedSkills(daemon, 'shared');
    closers.unshift(() => skills.stop());
    const driver = await startDriver(daemon.url);
    closers.unshift(() => driver.stop());
    await driver.run({ runId: 'warmup', total: 1_000, concurrency: SESSIONS });
    await sleep(2_000);
    const baseline = rssOf(daemon.pid);
    const warningsBefore = daemon.warnings();

    let peak = baseline;
    const sampler = setInterval(() => (peak = Math.max(peak, rssOf(daemon.pid))), 100);
    let flooding = true;
    const floodResult = flood({ url: daemon.url, total: FRAMES }).finally(() => (flooding = false));
    const during: DriverResult[] = [];
    for (let round = 0; flooding; round++) during.push(await driver.run({ runId: `during-${round}`, total: 200, concurrency: SESSIONS }));
    const floodDone = await floodResult;
    clearInterval(sampler);
    const atEnd = rssOf(daemon.pid);
    await sleep(10_000);
    const after10 = rssOf(daemon.pid);
    await sleep(20_000);
    const after30 = rssOf(daemon.pid);
    const warnings = daemon.warnings() - warningsBefore;

    const handled = during.reduce((n, r) => n + r.handled, 0);
    const lost = during.reduce((n, r) => n + r.lost, 0);
    const doubled = during.reduce((n, r) => n + r.doubled, 0);
    const latency = summarize(during.flatMap((r) => Object.values(r.latencies).flat()));
    const growth = peak - baseline;
    const settled = after30 - baseline;
    return {
      id: 'flood',
      title: `9. ${FRAMES.toLocaleString('en')} malformed and hostile frames while ${SESSIONS} sessions keep working (daemon RSS)`,
      params: { frames: FRAMES, sessions: SESSIONS, floodMs: Math.round(floodDone.ms), reconnects: floodDone.reconnects },
      columns: [
        { key: 'what', header: 'what', unit: 'text' },
        { key: 'value', header: 'value', unit: 'text' },
      ],
      rows: [
        { what: 'daemon RSS before', value: `${(baseline / MB).toFixed(1)} MB` },
        { what: 'peak during the flood', value: `${(peak / MB).toFixed(1)} MB (+${(growth / MB).toFixed(1)} MB)` },
        { what: 'at its end / 10 s / 30 s after', value: `${(atEnd / MB).toFixed(1)} / ${(after10 / MB).toFixed(1)} / ${(after30 / MB).toFixed(1)} MB (${settled >= 0 ? '+' : ''}${(settled / MB).toFixed(1)} MB)` },
        { what: 'flood', value: `${FRAMES.toLocaleString('en')} frames sent in ${(floodDone.ms / 1000).toFixed(1)} s (until the flooder's own buffer was empty), ${floodDone.reconnects} reconnect(s) of the flooder` },
        { what: 'utterances handled during it', value: `${handled}, lost ${lost}, doubled ${doubled}; handled p50 ${latency.p50.toFixed(1)} ms, p99 ${latency.p99.toFixed(1)} ms` },
        { what: 'daemon warn lines during it', value: String(warnings) },
      ],
      notes: [
        'target: RSS growth < 100 MB during the flood, back within 20 MB of the baseline after; sessions keep working',
        'after: the daemon collects its garbage once its loop is idle (memory.idleReclaimMs, every 5 s; src/daemon/memory-reclaim.ts)',
        'the flooder is slowed by the fair share between clients (src/bus/fair-share.ts) while the sessions keep asking',
        ...during.flatMap((r) => r.examples).slice(0, 5),
      ],
      checks: [
        { name: 'no utterance lost or doubled during the flood', ok: lost === 0 && doubled === 0 && handled > 0, detail: `handled ${handled}, lost ${lost}, doubled ${doubled}` },
        { name: 'RSS growth during the flood < 100 MB', ok: growth < 100 * MB, detail: `+${(growth / MB).toFixed(1)} MB` },
        { name: 'RSS 30 s after within 20 MB of the baseline', ok: settled <= 20 * MB, detail: `${settled >= 0 ? '+' : ''}${(settled / MB).toFixed(1)} MB` },
      ],
    };
  } finally {
    for (const close of closers) await close();
  }
}
