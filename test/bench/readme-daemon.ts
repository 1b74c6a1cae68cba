/**
 * The daemon exactly as the README starts it (`node --max-semi-space-size=64 dist/src/daemon/main.js`, example skills on), for benchmarks that
 * measure what a user meets: on a given port, with a state directory of its own (`XDG_STATE_HOME`), its JSON log
 * lines parsed as they come.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { daemonArgv } from './remote-skills.js';

const DAEMON_MAIN = fileURLToPath(new URL('../../src/daemon/main.js', import.meta.url));

export interface ReadmeDaemon {
  readonly url: string;
  /** Parsed JSON log lines so far. */
  readonly lines: Array<Record<string, unknown>>;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export async function until(condition: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`benchmark: ${what} not seen within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export interface DaemonProcess {
  readonly child: ChildProcess;
  /** Parsed JSON log lines so far. */
  readonly lines: Array<Record<string, unknown>>;
  /** SIGTERM, SIGKILL after `graceMs`; resolves at its exit. */
  stop(): Promise<void>;
}

/** `node <main> ...args` with `state` as its XDG state directory, its JSON log lines parsed as they come. */
export function spawnDaemon(main: string, args: readonly string[], state: string, graceMs = 15_000): DaemonProcess {
  const child: ChildProcess = spawn(process.execPath, [...daemonArgv(), main, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, XDG_STATE_HOME: state, OVOS_CONTESTS_LOG_LEVEL: 'info' },
  });
  const lines: Array<Record<string, unknown>> = [];
  let rest = '';
  // pino writes synchronously: the pipe is drained all along, or the daemon would block on a full pipe.
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    const parts = (rest + chunk).split('\n');
    rest = parts.pop() ?? '';
    for (const part of parts) {
      try {
        lines.push(JSON.parse(part) as Record<string, unknown>);
      } catch {
        // not a log line
      }
    }
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    lines,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** The README's daemon on `port`, with `state` as its XDG state directory; ready once its example skills are connected. */
export async function startReadmeDaemon(port: number, state: string): Promise<ReadmeDaemon> {
  const { child, lines, stop } = spawnDaemon(DAEMON_MAIN, ['--port', String(port), '--inspector-port', '0', '--no-mycroft-conf'], state);
  await until(() => lines.some((l) => l['msg'] === 'example skills connected') || child.exitCode !== null, 'the daemon ready');
  if (child.exitCode !== null) throw new Error(`benchmark: the daemon exited at start (code ${child.exitCode})`);
  return { url: `ws://127.0.0.1:${port}/core`, lines, stop };
}
