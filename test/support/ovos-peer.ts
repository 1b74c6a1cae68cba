/**
 * The real OVOS programs as child processes, for the suites and benchmarks that run against them: ovos-messagebus,
 * ovos-core's intent service (test/integration/ovos-core/core.py) and unmodified ovos-workshop skills
 * (test/integration/ovos-core/skills.py), from the OVOS peer built under ~/.ovos-peer (or $OVOS_PEER_ROOT) as
 * test/integration/ovos-peer/README.md describes. CI has none: callers check `peerHas` and skip with a message.
 *
 * Every process gets configuration and state folders of its own (XDG_CONFIG_HOME, XDG_STATE_HOME): a run never reads
 * or changes a user's OVOS install.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { watchOutput } from '../integration/spawn-daemon.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/dist\/$/, '/');
export const PEER = process.env['OVOS_PEER_ROOT'] ?? join(homedir(), '.ovos-peer');
export const PY = join(PEER, 'venv', 'bin', 'python');
const HARNESS = join(ROOT, 'test', 'integration', 'ovos-core');
/** rapidfuzz's compiled build is not in the peer; its pure-Python one is. */
const PY_ENV = { RAPIDFUZZ_IMPLEMENTATION: 'python', PYTHONUNBUFFERED: '1' };

/** Whether the peer's Python imports every module named. */
export function peerHas(modules: readonly string[]): boolean {
  try {
    return spawnSync(PY, ['-c', `import ${modules.join(', ')}`], { env: { ...process.env, ...PY_ENV }, timeout: 60_000 }).status === 0;
  } catch {
    return false;
  }
}

const OVOS_CORE_MODULES = ['ovos_core', 'ovos_messagebus', 'ovos_bus_client', 'ovos_workshop', 'padacioso'] as const;

/** Why a real ovos-core cannot be run here, or undefined when it can. */
export function ovosCoreAbsent(): string | undefined {
  if (peerHas(OVOS_CORE_MODULES)) return undefined;
  return `no real ovos-core (${PY} does not import ${OVOS_CORE_MODULES.join(', ')}); install ovos-core 2.1.1, ovos-messagebus, ovos-bus-client, ovos-workshop and padacioso into the virtual environment ~/.ovos-peer/venv (or set OVOS_PEER_ROOT): test/integration/ovos-peer/README.md`;
}

export interface PyProcess {
  readonly child: ChildProcess;
  readonly output: () => string;
  readonly printed: (text: string) => Promise<void>;
  /** Resolves once the output so far satisfies `test` (checked as each chunk arrives). */
  readonly until: (test: (output: string) => boolean) => Promise<void>;
  /** SIGKILL (it works on a SIGSTOPped process too) and wait for the exit. */
  readonly stop: () => Promise<void>;
}

export function startPython(args: readonly string[], env: NodeJS.ProcessEnv): PyProcess {
  const child = spawn(PY, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...PY_ENV, ...env } });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  };
  return { child, stop, ...watchOutput(child) };
}

/** A folder to use as XDG_CONFIG_HOME, holding `mycroft/mycroft.conf` with `conf`. */
export function mycroftHome(conf: Record<string, unknown>): { readonly home: string; readonly file: string } {
  const home = mkdtempSync(join(tmpdir(), 'ovos-peer-xdg-'));
  mkdirSync(join(home, 'mycroft'), { recursive: true });
  const file = join(home, 'mycroft', 'mycroft.conf');
  writeFileSync(file, JSON.stringify(conf, null, 2));
  return { home, file };
}

const stateHome = (): string => mkdtempSync(join(tmpdir(), 'ovos-peer-state-'));

/** ovos-messagebus on `port`; resolves once it serves. */
export async function startMessagebus(port: number): Promise<PyProcess> {
  const { home } = mycroftHome({ websocket: { host: '127.0.0.1', port } });
  const bus = startPython(['-m', 'ovos_messagebus'], { XDG_CONFIG_HOME: home, XDG_STATE_HOME: stateHome() });
  await bus.printed('Message bus service started');
  return bus;
}

/**
 * `pip install` of src/ovos-plugin, as the README tells users, into a fresh folder to put on PYTHONPATH (from a copy of
 * the source: pip's build leaves files beside the sources). Returns that folder.
 */
export function installPipelinePlugin(): string {
  const work = mkdtempSync(join(tmpdir(), 'ovos-contests-plugin-'));
  cpSync(join(ROOT, 'src', 'ovos-plugin'), join(work, 'src'), { recursive: true, filter: (path) => !/__pycache__|\.pytest_cache/.test(path) });
  const target = join(work, 'site');
  const pip = spawnSync(PY, ['-m', 'pip', 'install', '-q', '--no-deps', '--no-build-isolation', '--no-index', '--target', target, join(work, 'src')], { encoding: 'utf8', timeout: 120_000 });
  if (pip.status !== 0) throw new Error(`pip install of src/ovos-plugin failed: ${pip.stderr}`);
  return target;
}

/** The pipeline names of ovos-core 2.1's shipped order, reduced to what the suites use. */
export const OVOS_CORE_PIPELINE = [
  'ovos-padacioso-pipeline-plugin-high',
  'ovos-fallback-pipeline-plugin-high',
  'ovos-common-query-pipeline-plugin',
  'ovos-fallback-pipeline-plugin-medium',
  'ovos-fallback-pipeline-plugin-low',
] as const;
/** The same with our four stages in place of ovos-core's (src/ovos-plugin/README.md "Switch the stages"). */
export const CONTESTS_PIPELINE = [
  'ovos-padacioso-pipeline-plugin-high',
  'ovos-contests-fallback-pipeline-plugin-high',
  'ovos-contests-common-query-pipeline-plugin',
  'ovos-contests-fallback-pipeline-plugin-medium',
  'ovos-contests-fallback-pipeline-plugin-low',
] as const;

export interface Core extends PyProcess {
  /** The pipeline plugin ids ovos-core loaded. */
  readonly plugins: readonly string[];
}

export interface StageCall {
  readonly utteranceId: string;
  readonly plugin: string;
  readonly method: string;
  readonly ms: number;
  readonly matched: boolean;
}

/** The `--time-stages` lines of core.py so far: each match_* call ovos-core made, timed where it made it. */
export function stageCalls(core: Pick<PyProcess, 'output'>): StageCall[] {
  return [...core.output().matchAll(/^STAGE (\S+) (\S+) (\S+) ([\d.]+) ([01])$/gm)].map(([, utteranceId, plugin, method, ms, matched]) => ({
    utteranceId: utteranceId!,
    plugin: plugin!,
    method: method!,
    ms: Number(ms),
    matched: matched === '1',
  }));
}

/**
 * ovos-core's intent service on the bus at `port`, configured by the mycroft.conf under `configHome`; with
 * `timeStages`, each match_* call is timed (stageCalls).
 */
export async function startCore(port: number, configHome: string, pythonPath: string | null, timeStages = false): Promise<Core> {
  const core = startPython([join(HARNESS, 'core.py'), String(port), ...(timeStages ? ['--time-stages'] : [])], {
    XDG_CONFIG_HOME: configHome,
    XDG_STATE_HOME: stateHome(),
    ...(pythonPath === null ? {} : { PYTHONPATH: pythonPath }),
  });
  await core.printed('CORE UP');
  const line = /PLUGINS([^\n]*)/.exec(core.output())?.[1] ?? '';
  return { ...core, plugins: line.trim().split(/\s+/) };
}

export interface SkillPlan {
  readonly fallbacks?: ReadonlyArray<{ readonly skill_id: string; readonly priority: number; readonly words?: readonly string[] }>;
  readonly common_query?: ReadonlyArray<{ readonly skill_id: string; readonly answers: Readonly<Record<string, string>>; readonly conf?: number }>;
  readonly intent?: boolean;
}

/** Unmodified ovos-workshop skills in one Python process on the bus at `port`; resolves once all are built. */
export async function startSkills(port: number, plan: SkillPlan): Promise<PyProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'ovos-peer-skills-'));
  const skills = startPython([join(HARNESS, 'skills.py'), String(port), JSON.stringify(plan)], { XDG_CONFIG_HOME: dir, XDG_STATE_HOME: dir });
  await skills.printed('SKILLS UP');
  return skills;
}
