/**
 * Benchmark 8 — the daemon under a mixed load, three processes as a deployment runs them:
 *
 *  - the daemon: `node --max-semi-space-size=64 dist/src/daemon/main.js` exactly as `npm start` runs it (default
 *    config: pipeline fallback_high, common_query, fallback_medium, fallback_low; inspector on; log level info, stdout
 *    read by this process), except `--port P --no-example-skills --inspector-port 0 --no-registry-file
 *    --no-mycroft-conf`;
 *  - the skills (`skills-process.ts`), one websocket connection each: five fallback skills at priorities 80, 85,
 *    90, 95, 99 (fallback_low; only the fifth willing, so a command costs five sequential ping round trips) and three
 *    common-query skills claiming every question (latency_ms 0) with confidences 0.6, 0.7 and 0.8 (under the 0.9
 *    fast win, so every contest waits for all three answers and picks the 0.8 one);
 *  - the driver (`driver-process.ts`): 200 sessions back to back, alternating a command the common-query gate turns
 *    away ("do a barrel roll" → the fifth fallback skill) and a question ("what is the speed of light" → the 0.8
 *    answer); then one at a time; then open loads — 500 and 1,000 utterances/s published at a steady rate for 5 s,
 *    latency counted from when each was due — the latency below saturation.
 *
 * Lost: an utterance that was not handled or whose expected answer was not spoken; doubled: more than one handled or
 * spoken line. `BENCH_PROFILE_DIR=DIR` writes a CPU profile of each of the three processes there (`--cpu-prof`).
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DriverPlan, DriverResult, FromDriver, ToDriver, UtteranceKind } from './driver-process.js';
import { daemonArgv, profileArgv, startRemoteSkills, type CommonQuerySkillPlan, type FallbackSkillPlan, type SkillsPlan } from './remote-skills.js';
import type { Cell, Section } from './report.js';
import { summarize } from './stats.js';

const CONCURRENCY = 200;
const TOTAL = 10_000;
const WARMUP = 2_000;
const SEQUENTIAL = 400;
const GRACE_MS = 1_000;

export const FALLBACK: readonly FallbackSkillPlan[] = [80, 85, 90, 95, 99].map((priority, i) => ({ skillId: `fb-${priority}`, priority, willing: i === 4 }));
export const COMMON_QUERY: readonly CommonQuerySkillPlan[] = [0.6, 0.7, 0.8].map((conf, i) => ({ skillId: `cq-${i + 1}`, latencyMs: 0, conf }));
const KINDS: readonly UtteranceKind[] = [
  { name: 'fallback', utterance: 'do a barrel roll', expect: 'fb-99 handled it' },
  { name: 'common query', utterance: 'what is the speed of light', expect: 'answer from cq-3' },
];
const TARGET = { perSecond: 2_000, p99Ms: 50 };
/** Open load (utterances/s published at a steady rate, 200 sessions in turn): the latency below saturation. */
const OPEN_RATES = [500, 1_000] as const;
const OPEN_SECONDS = 5;

/** `BENCH_DAEMON_MAIN=<dist/src/daemon/main.js of another build>` measures that build's daemon with these drivers. */
const DAEMON_MAIN = process.env['BENCH_DAEMON_MAIN'] ?? fileURLToPath(new URL('../../src/daemon/main.js', import.meta.url));

/** CPU time a process has used so far (user + system, ms), from /proc; 0 where there is no /proc. */
export function cpuMsOf(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    // After "pid (comm) ": state is field 3, utime 14 and stime 15 (clock ticks, 100 per second on Linux).
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
}

/** A process's peak resident memory since it started (VmHWM), in MiB; 0 when it cannot be read. */
export function peakRssMbOf(pid: number): number {
  try {
    const kb = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? 0 : Number(kb) / 1024;
  } catch {
    return 0;
  }
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (typeof address !== 'object' || address === null) throw new Error('no port');
  return address.port;
}

export interface DaemonProcess {
  readonly url: string;
  readonly pid: number;
  /** Fallback skills the daemon has logged as registered. */
  registered(): number;
  /** Log lines at warn or above (`level` ≥ 40), for the report. */
  warnings(): number;
  /** Log lines with this `reason`. */
  logged(reason: string): number;
  /** Bytes the daemon has written to its stdout so far. */
  bytesLogged(): number;
  /** The `url` of the first log line whose msg starts with `msg` (the inspector, the stage link), if logged. */
  urlOf(msg: string): string | undefined;
  /** Its state folder (`XDG_STATE_HOME`). */
  readonly state: string;
  stop(): Promise<void>;
}

/**
 * The daemon as `npm start` runs it, on a state directory of its own; `nats`: one daemon of a cluster on that NATS
 * server; `registryFile`: keep its registry file (default: none, so runs are alike); `args`: more flags.
 */
export async function startDaemonProcess(options: { readonly nats?: string; readonly registryFile?: boolean; readonly args?: readonly string[] } = {}): Promise<DaemonProcess> {
  const port = await freePort();
  const execArgv = daemonArgv();
  const state = mkdtempSync(join(tmpdir(), 'ovos-bench-'));
  const child: ChildProcess = spawn(
    process.execPath,
    [...execArgv, DAEMON_MAIN, '--port', String(port), '--no-example-skills', '--inspector-port', '0', ...(options.registryFile === true ? [] : ['--no-registry-file']), '--no-mycroft-conf', ...(options.nats === undefined ? [] : ['--nats', options.nats]), ...(options.args ?? [])],
    { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, XDG_STATE_HOME: state } },
  );
  let registered = 0;
  let warnings = 0;
  const reasons = new Map<string, number>();
  let listening = false;
  let rest = '';
  // pino writes synchronously: the pipe must be drained all along, or the daemon would block on a full pipe.
  let bytes = 0;
  const urls = new Map<string, string>();
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    bytes += Buffer.byteLength(chunk);
    const lines = (rest + chunk).split('\n');
    rest = lines.pop() ?? '';
    for (const line of lines) {
      if (line.includes('"fallback skill registered"')) registered += 1;
      else if (line.includes('"msg":"inspector page at this address"')) listening = true;
      if (/"level":(4|5|6)\d/.test(line)) warnings += 1;
      const url = /"url":"([^"]+)","msg":"([^"]+)"/.exec(line);
      if (url !== null && !urls.has(url[2]!)) urls.set(url[2]!, url[1]!);
      const reason = /"reason":"([^"]+)"/.exec(line)?.[1];
      if (reason !== undefined) reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
    }
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + 15_000;
  while (!listening) {
    const failure = child.exitCode !== null ? `daemon exited at start (code ${child.exitCode})` : Date.now() > deadline ? 'daemon not listening after 15 s' : undefined;
    if (failure !== undefined) {
      child.kill('SIGKILL');
      rmSync(state, { recursive: true, force: true });
      throw new Error(failure);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return {
    url: `ws://127.0.0.1:${port}/core`,
    pid: child.pid ?? -1,
    registered: () => registered,
    warnings: () => warnings,
    logged: (reason) => reasons.get(reason) ?? 0,
    bytesLogged: () => bytes,
    urlOf: (msg) => [...urls].find(([m]) => m.startsWith(msg))?.[1],
    state,
    stop: async () => {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
      rmSync(state, { recursive: true, force: true });
    },
  };
}

/** The mixed-load skills in another process, connected to `daemon`; resolves once every fallback skill registered. */
export async function startMixedSkills(daemon: DaemonProcess, connections: Connections): Promise<Awaited<ReturnType<typeof startRemoteSkills>>> {
  const skills = await startRemoteSkills({ url: daemon.url, connections, fallback: FALLBACK, commonQuery: COMMON_QUERY });
  const deadline = Date.now() + 10_000;
  while (daemon.registered() < FALLBACK.length) {
    if (Date.now() > deadline) {
      await skills.stop();
      throw new Error(`only ${daemon.registered()} fallback registrations after 10 s`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return skills;
}

/** A process's resident memory (VmRSS from /proc), bytes. */
export function rssOf(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return kb === undefined ? 0 : Number(kb) * 1024;
}

export interface Driver {
  readonly pid: number;
  run(plan: Omit<DriverPlan, 'url' | 'kinds' | 'graceMs' | 'timeoutMs'>): Promise<DriverResult>;
  stop(): Promise<void>;
}

export async function startDriver(url: string): Promise<Driver> {
  const child = fork(new URL('./driver-process.js', import.meta.url), [], { execArgv: profileArgv(), stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    child.once('message', (message: FromDriver) => (message.type === 'ready' ? resolve() : reject(new Error('driver failed to start'))));
    child.once('exit', (code) => reject(new Error(`driver exited early (code ${code})`)));
  });
  return {
    pid: child.pid ?? -1,
    run: (plan) =>
      new Promise<DriverResult>((resolve, reject) => {
        const settle = (): void => {
          child.off('message', onMessage);
          child.off('exit', onExit);
        };
        const onMessage = (message: FromDriver): void => {
          if (message.type === 'result') {
            settle();
            resolve(message.result);
          } else if (message.type === 'failed') {
            settle();
            reject(new Error(`driver: ${message.message}`));
          }
        };
        const onExit = (code: number | null): void => {
          settle();
          reject(new Error(`driver exited mid-run (code ${code})`));
        };
        child.on('message', onMessage);
        child.once('exit', onExit);
        child.send({ type: 'run', plan: { ...plan, url, kinds: KINDS, graceMs: GRACE_MS, timeoutMs: 120_000 } } satisfies ToDriver);
      }),
    stop: async () => {
      if (child.connected) child.send({ type: 'stop' } satisfies ToDriver, () => {});
      const timer = setTimeout(() => child.kill(), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

function row(name: string, concurrency: number, result: DriverResult, cpu: { readonly daemon: number; readonly skills: number; readonly driver: number }): Record<string, Cell> {
  const all = Object.values(result.latencies).flat();
  const total = summarize(all);
  const byKind = (kind: string): number => summarize(result.latencies[kind] ?? []).p50;
  return {
    run: name,
    concurrency,
    handled: result.handled,
    perSecond: Math.round(result.perSecond),
    p50: total.p50,
    p99: total.p99,
    max: total.max,
    fallbackP50: byKind('fallback'),
    commonQueryP50: byKind('common query'),
    lost: result.lost,
    doubled: result.doubled,
    cpu: `${cpu.daemon.toFixed(2)} / ${cpu.skills.toFixed(2)} / ${cpu.driver.toFixed(2)}`,
  };
}

interface ScenarioRun {
  readonly label: string;
  readonly concurrency: number;
  readonly result: DriverResult;
  /** CPU time (user + system) per handled utterance, ms — of the daemon, the skills, the driver. */
  readonly cpu: { readonly daemon: number; readonly skills: number; readonly driver: number };
}

interface ScenarioResult {
  readonly connections: Connections;
  /** Warm-up, load (closed, 200 sessions back to back), one at a time, then the open loads. */
  readonly runs: readonly ScenarioRun[];
  readonly warnings: number;
}

type Connections = NonNullable<SkillsPlan['connections']>;

async function scenario(connections: Connections): Promise<ScenarioResult> {
  const daemon = await startDaemonProcess();
  const closers: Array<() => Promise<void>> = [() => daemon.stop()];
  try {
    const skills = await startMixedSkills(daemon, connections);
    closers.unshift(() => skills.stop());
    const driver = await startDriver(daemon.url);
    closers.unshift(() => driver.stop());
    const warningsAtStart = daemon.warnings();
    const runs: ScenarioRun[] = [];
    const plans: ReadonlyArray<{ label: string; runId: string; total: number; concurrency: number; ratePerSecond?: number }> = [
      { label: 'warm-up (cold daemon)', runId: 'warmup', total: WARMUP, concurrency: CONCURRENCY },
      { label: 'load', runId: 'load', total: TOTAL, concurrency: CONCURRENCY },
      { label: 'one at a time', runId: 'sequential', total: SEQUENTIAL, concurrency: 1 },
      ...OPEN_RATES.map((rate) => ({ label: `open load ${rate}/s`, runId: `open-${rate}`, total: rate * OPEN_SECONDS, concurrency: CONCURRENCY, ratePerSecond: rate })),
    ];
    for (const { label, ...plan } of plans) {
      const before = [cpuMsOf(daemon.pid), cpuMsOf(skills.pid), cpuMsOf(driver.pid)] as const;
      const result = await driver.run(plan);
      const per = (now: number, then: number): number => (now - then) / Math.max(1, result.handled);
      const cpu = { daemon: per(cpuMsOf(daemon.pid), before[0]), skills: per(cpuMsOf(skills.pid), before[1]), driver: per(cpuMsOf(driver.pid), before[2]) };
      runs.push({ label, concurrency: plan.concurrency, result, cpu });
    }
    return { connections, runs, warnings: daemon.warnings() - warningsAtStart };
  } finally {
    for (const close of closers) await close();
  }
}

const TOPOLOGY: Record<Connections, string> = {
  shared: 'skills on one connection (as ovos-core runs them)',
  'per-skill': 'one connection per skill',
};

export async function benchMixedLoad(): Promise<Section> {
  const scenarios = [await scenario('shared'), await scenario('per-skill')];
  const all = scenarios.flatMap((s) => s.runs.map((r) => r.result));
  const lost = all.reduce((n, r) => n + r.lost, 0);
  const doubled = all.reduce((n, r) => n + r.doubled, 0);
  const targetMet = (r: DriverResult): string => {
    const p99 = summarize(Object.values(r.latencies).flat()).p99;
    return `${Math.round(r.perSecond)}/s, p99 ${p99.toFixed(1)} ms — ${r.perSecond >= TARGET.perSecond && p99 <= TARGET.p99Ms ? 'met' : 'not met'}`;
  };
  return {
    id: 'mixed-load',
    title: '8. Mixed load over the websocket: daemon, skills and driver in three processes (default config)',
    params: {
      concurrency: CONCURRENCY,
      total: TOTAL,
      warmup: WARMUP,
      sequential: SEQUENTIAL,
      fallback: FALLBACK,
      commonQuery: COMMON_QUERY,
      kinds: KINDS,
      topology: 'daemon: node --max-semi-space-size=64 dist/src/daemon/main.js, as npm start runs it (default config, inspector on, log level info); skills: one child process; driver: one child process, one BusClient',
      target: TARGET,
      openLoad: { ratesPerSecond: OPEN_RATES, seconds: OPEN_SECONDS, sessions: CONCURRENCY },
      cpuProfileDir: process.env['BENCH_PROFILE_DIR'] ?? null,
    },
    columns: [
      { key: 'run', header: 'run', unit: 'text' },
      { key: 'concurrency', header: 'sessions', unit: 'count' },
      { key: 'handled', header: 'handled', unit: 'count' },
      { key: 'perSecond', header: 'utterances/s', unit: 'count' },
      { key: 'p50', header: 'handled p50', unit: 'ms' },
      { key: 'p99', header: 'p99', unit: 'ms' },
      { key: 'max', header: 'max', unit: 'ms' },
      { key: 'fallbackP50', header: 'fallback p50', unit: 'ms' },
      { key: 'commonQueryP50', header: 'common query p50', unit: 'ms' },
      { key: 'lost', header: 'lost', unit: 'count' },
      { key: 'doubled', header: 'doubled', unit: 'count' },
      { key: 'cpu', header: 'CPU ms/utterance daemon / skills / driver', unit: 'text' },
    ],
    rows: scenarios.flatMap(({ connections, runs }) => runs.map((r) => row(`${TOPOLOGY[connections]}: ${r.label}`, r.concurrency, r.result, r.cpu))),
    notes: [
      'latency = driver publishes ovos.utterance.handle → driver receives ovos.utterance.handled (both over the websocket)',
      'a command: fallback_high (empty), common_query (the gate turns it away), fallback_medium (empty), fallback_low: five sequential ping round trips, the fifth willing',
      'a question: common_query: three claims, three answers (latency_ms 0), the 0.8 answer spoken',
      'CPU ms/utterance: user + system time of each process during the run (/proc/<pid>/stat) ÷ utterances handled: the load is bound by the sum (three processes on two cores), not by any one of them',
      `open load: ${OPEN_SECONDS} s of utterances published at a steady rate over ${CONCURRENCY} sessions in turn, whatever the daemon's pace — the latency a user sees below saturation. The closed load keeps ${CONCURRENCY} in flight, so its mean latency is ${CONCURRENCY} ÷ throughput (Little's law): p99 ≤ ${TARGET.p99Ms} ms there needs ≥ ${(CONCURRENCY / TARGET.p99Ms) * 1000}/s`,
      ...scenarios.map((s) => `${TOPOLOGY[s.connections]}: target ≥ ${TARGET.perSecond}/s with p99 ≤ ${TARGET.p99Ms} ms under load: ${targetMet(s.runs[1]!.result)}; daemon log lines at warn or above during the runs: ${s.warnings}`),
      ...scenarios.flatMap((s) => s.runs.flatMap((r) => r.result.examples.map((example) => `${TOPOLOGY[s.connections]}, ${r.result.runId}: ${example}`))),
    ],
    checks: [{ name: 'no utterance lost or doubled', ok: lost === 0 && doubled === 0, detail: `lost ${lost}, doubled ${doubled}` }],
  };
}
