/**
 * Skills in a child process: the websocket benchmarks run the contest system (and the bus server) in this process
 * and every skill as its own `BusClient` connection in one child process, so the two cores are used the way a
 * deployment uses them — core on one, skills on another — and every skill reply crosses a real socket.
 *
 * The parent sends one `start` with the plan, the child answers `ready` once every skill's connection is up and its
 * registration is sent; `stop` closes every client and the child exits on its own.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { withDaemonFlags } from '../../src/daemon/node-flags.js';

export interface FallbackSkillPlan {
  readonly skillId: string;
  readonly priority: number;
  /** Pong `can_handle` for every utterance. */
  readonly willing: boolean;
  /** `die`: the skill's process kills itself (SIGKILL) the moment it is pinged, a crash with a question in flight. */
  readonly onPing?: 'pong' | 'die';
}

export interface CommonQuerySkillPlan {
  readonly skillId: string;
  /** Sent in the pong (sizes the collection window). */
  readonly latencyMs: number;
  readonly conf: number;
  /**
   * `claim` (default): pong `can_answer: true`, then answer; `decline`: pong `can_answer: false` to every ping;
   * `silent`: connected to the bus but never pongs (a skill that cannot answer in time, or does not say no).
   */
  readonly mode?: 'claim' | 'decline' | 'silent';
  /** Answer after a uniformly random delay in [min, max] ms (default: at once). */
  readonly answerDelayMs?: readonly [min: number, max: number];
}

export interface SkillsPlan {
  readonly url: string;
  /**
   * `per-skill` (default): one bus connection per skill, the worst case for the bus (every frame is sent to every
   * connection); `shared`: one connection for every skill of the process, as ovos-core's skill manager runs them.
   */
  readonly connections?: 'per-skill' | 'shared';
  readonly fallback: readonly FallbackSkillPlan[];
  readonly commonQuery: readonly CommonQuerySkillPlan[];
}

export type ToSkills = { readonly type: 'start'; readonly plan: SkillsPlan } | { readonly type: 'stop' } | { readonly type: 'answerDelays' };
export type FromSkills =
  | { readonly type: 'ready'; readonly clients: number }
  | { readonly type: 'answerDelays'; readonly delays: Readonly<Record<string, readonly number[]>> }
  | { readonly type: 'stopped' }
  | { readonly type: 'failed'; readonly message: string };

export interface RemoteSkills {
  readonly pid: number;
  /**
   * Per common-query skill, how long each answer took inside the skill process (request received → response
   * sent, ms) since the previous call: what the skill itself did, before any bus or daemon delay.
   */
  answerDelays(): Promise<Readonly<Record<string, readonly number[]>>>;
  stop(): Promise<void>;
}

/** `BENCH_PROFILE_DIR=DIR`: the benchmark's child processes write a CPU profile there (`--cpu-prof`). */
export function profileArgv(): string[] {
  const dir = process.env['BENCH_PROFILE_DIR'];
  return dir === undefined || dir === '' ? [] : ['--cpu-prof', '--cpu-prof-dir', dir];
}

/**
 * Node's flags for a daemon the benchmarks start: those `npm start` gives it (src/daemon/node-flags.ts), or, with
 * `BENCH_NODE_DEFAULTS=1`, node's defaults — what `npx ovos-contests` runs with — to measure what the flags change.
 */
export function daemonArgv(): string[] {
  return process.env['BENCH_NODE_DEFAULTS'] === '1' ? profileArgv() : withDaemonFlags(profileArgv());
}

const READY_TIMEOUT_MS = 10_000;
const STOP_TIMEOUT_MS = 5_000;

export async function startRemoteSkills(plan: SkillsPlan): Promise<RemoteSkills> {
  const child: ChildProcess = fork(new URL('./skills-process.js', import.meta.url), [], {
    execArgv: profileArgv(),
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const kill = (): void => {
    if (child.exitCode === null && child.signalCode === null) child.kill();
  };

  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`skills process not ready after ${READY_TIMEOUT_MS} ms`)), READY_TIMEOUT_MS);
      child.on('message', (message: FromSkills) => {
        if (message.type === 'ready') {
          clearTimeout(timer);
          resolve();
        } else if (message.type === 'failed') {
          clearTimeout(timer);
          reject(new Error(`skills process failed: ${message.message}`));
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`skills process exited early (code ${code})`));
      });
      child.send({ type: 'start', plan } satisfies ToSkills);
    });
  } catch (error) {
    kill();
    await exited;
    throw error;
  }

  return {
    pid: child.pid ?? -1,
    answerDelays: () =>
      new Promise((resolve, reject) => {
        const onMessage = (message: FromSkills): void => {
          if (message.type !== 'answerDelays') return;
          child.off('message', onMessage);
          resolve(message.delays);
        };
        child.on('message', onMessage);
        child.send({ type: 'answerDelays' } satisfies ToSkills, (error) => {
          if (error === null) return;
          child.off('message', onMessage);
          reject(error);
        });
      }),
    stop: async () => {
      // A child that died (or was killed) may still look connected until its exit is processed: a failed send is
      // that, not news — with a callback it is not raised as an 'error' event.
      if (child.connected) child.send({ type: 'stop' } satisfies ToSkills, () => {});
      const timer = setTimeout(kill, STOP_TIMEOUT_MS);
      await exited;
      clearTimeout(timer);
    },
  };
}
