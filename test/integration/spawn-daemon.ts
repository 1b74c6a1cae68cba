/**
 * `npm start` as a child of the test process — in the test's own process group, never detached: a Ctrl-C in the
 * terminal (SIGINT to the whole foreground group) reaches the daemon too, and it shuts down like any interrupted
 * `npm start`. Nothing is left holding a port when a test run is interrupted. To stop one from a test, signal npm:
 * `npm start` execs the daemon, and npm forwards SIGTERM / SIGINT to it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface Spawned {
  readonly child: ChildProcess;
  readonly output: () => string;
  readonly exited: Promise<number | null>;
  /** Resolves when the output first contains `text`. */
  readonly printed: (text: string) => Promise<void>;
  /** Resolves when the output satisfies `test` (checked as each chunk arrives). */
  readonly until: (test: (output: string) => boolean) => Promise<void>;
}

/** `npm start -- ...args`; `stateHome` is its XDG_STATE_HOME (a restart passes the same one again). */
export function npmStart(args: readonly string[], stateHome = mkdtempSync(join(tmpdir(), 'ovos-contests-state-')), env: NodeJS.ProcessEnv = {}): Spawned {
  const child = spawn('npm', ['start', '--', ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own state folder: the registry file of one test's daemon is never another's.
    env: { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1', XDG_STATE_HOME: stateHome, ...env },
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, exited, ...watchOutput(child) };
}

/**
 * A child's stdout and stderr as they come: all of it so far, a wait for a text to appear in it, and a wait for the
 * output to satisfy a test (checked as each chunk arrives).
 */
export function watchOutput(child: ChildProcess): {
  readonly output: () => string;
  readonly printed: (text: string) => Promise<void>;
  readonly until: (test: (output: string) => boolean) => Promise<void>;
} {
  let output = '';
  const waiters: Array<{ test: (output: string) => boolean; resolve: () => void }> = [];
  const append = (chunk: Buffer): void => {
    output += chunk.toString('utf8');
    for (const waiter of waiters.filter((w) => w.test(output))) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  const until = (test: (output: string) => boolean): Promise<void> =>
    test(output) ? Promise.resolve() : new Promise((resolve) => waiters.push({ test, resolve }));
  return { output: () => output, printed: (text) => until((o) => o.includes(text)), until };
}

/**
 * A signal to the daemon's own process (its pid from its log lines), not to npm: npm forwards SIGTERM and SIGINT, but
 * a SIGKILL to npm would leave the daemon running. Resolves once npm has exited after it.
 */
export async function signalDaemon(spawned: Spawned, signal: NodeJS.Signals): Promise<void> {
  const pid = /"pid":(\d+)/.exec(spawned.output())?.[1];
  if (pid === undefined) throw new Error(`no daemon pid in its output: ${spawned.output()}`);
  try {
    process.kill(Number(pid), signal);
  } catch {
    // already gone
  }
  await spawned.exited;
}

/** SIGTERM to npm (forwarded to the daemon: a graceful stop); SIGKILL after 5 s as a guard. */
export async function killGroup(spawned: Spawned): Promise<void> {
  const { child } = spawned;
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const guard = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await spawned.exited;
  clearTimeout(guard);
}

// Run as a script (the interruption test): start one daemon on the port given and print its pid once it listens.
if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const daemon = npmStart(['--port', process.argv[2] ?? '0', '--no-example-skills', '--inspector-port', '0']);
  await daemon.printed('OVOS bus listening');
  const pid = /"pid":(\d+)/.exec(daemon.output())?.[1];
  process.stdout.write(`daemon pid ${pid}\n`);
}
