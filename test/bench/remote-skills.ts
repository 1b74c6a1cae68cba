/**
 * Skills in a child process: the websocket benchmarks run the contest system (and the bus server) in this process
 * and every skill as its own `BusClient` connection in one child process, so the two cores are used the way a
 * deployment uses them — core on one, skills on another — and every skill reply crosses a real socket.
 *
 * The parent sends one `start` with the plan, the child answers `ready` once every skill's connection is up and its
 * registration is sent; `stop` closes every client and the child exits on its own.
 */
import { fork, type ChildProcess } from 'node:child_process';

export interface FallbackSkillPlan {
  readonly skillId: string;
  readonly priority: number;
  /** Pong `can_handle` for every utterance. */
  readonly willing: boolean;
}

export interface CommonQuerySkillPlan {
  readonly skillId: string;
  /** Sent in the pong (sizes the collection window). */
  readonly latencyMs: number;
  readonly conf: number;
}

export interface SkillsPlan {
  readonly url: string;
  readonly fallback: readonly FallbackSkillPlan[];
  readonly commonQuery: readonly CommonQuerySkillPlan[];
}

export type ToSkills = { readonly type: 'start'; readonly plan: SkillsPlan } | { readonly type: 'stop' };
export type FromSkills =
  | { readonly type: 'ready'; readonly clients: number }
  | { readonly type: 'stopped' }
  | { readonly type: 'failed'; readonly message: string };

export interface RemoteSkills {
  readonly pid: number;
  stop(): Promise<void>;
}

const READY_TIMEOUT_MS = 10_000;
const STOP_TIMEOUT_MS = 5_000;

export async function startRemoteSkills(plan: SkillsPlan): Promise<RemoteSkills> {
  const child: ChildProcess = fork(new URL('./skills-process.js', import.meta.url), [], {
    execArgv: [],
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
    stop: async () => {
      if (child.connected) child.send({ type: 'stop' } satisfies ToSkills);
      const timer = setTimeout(kill, STOP_TIMEOUT_MS);
      await exited;
      clearTimeout(timer);
    },
  };
}
