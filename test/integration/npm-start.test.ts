/**
 * The README's commands, run the way a user runs them: `npm start -- --port P --no-example-skills` in its own
 * process group (it builds with tsc first, so allow for that), a bad flag value, and the `say` CLI against a
 * daemon with the example skills. The only retry loop waits for the spawned bus to accept a connection; it is
 * bounded, and its pause paces connection attempts, it asserts nothing.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon } from '../../src/daemon/daemon.js';
import { silentLogger } from '../../src/log/logger.js';
import { Probe, configWith, freePort } from './probe.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const START_BUDGET_MS = 30_000;
const SLOW_MS = 60_000;

const run = promisify(execFile);

interface Spawned {
  readonly child: ChildProcess;
  readonly output: () => string;
  readonly exited: Promise<number | null>;
}

function npmStart(args: readonly string[]): Spawned {
  // detached: its own process group, so npm, the shell and node can be signalled together.
  const child = spawn('npm', ['start', '--', ...args], {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1' },
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

async function killGroup(spawned: Spawned): Promise<void> {
  const { child } = spawned;
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, 'SIGTERM');
  } catch {
    return; // the group is already gone
  }
  const guard = setTimeout(() => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // gone in the meantime
    }
  }, 5_000);
  await spawned.exited;
  clearTimeout(guard);
}

/** Connect attempts until the bus answers, the process dies, or the budget runs out. */
async function connectWhenUp(url: string, spawned: Spawned): Promise<Probe> {
  const deadline = Date.now() + START_BUDGET_MS;
  let lastError = 'no attempt yet';
  while (Date.now() < deadline) {
    if (spawned.child.exitCode !== null) throw new Error(`npm start exited (${spawned.child.exitCode}): ${spawned.output()}`);
    try {
      return await Probe.connect(url, 1_000);
    } catch (error) {
      lastError = error instanceof Error ? error.message : String(error);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`no bus at ${url} within ${START_BUDGET_MS} ms (${lastError}): ${spawned.output()}`);
}

describe('npm start (README)', () => {
  let daemon: Spawned | undefined;
  let probe: Probe | undefined;

  beforeAll(async () => {
    const port = await freePort();
    daemon = npmStart(['--port', String(port), '--no-example-skills']);
    probe = await connectWhenUp(`ws://127.0.0.1:${port}/core`, daemon);
  }, SLOW_MS);

  afterAll(async () => {
    await probe?.close();
    if (daemon !== undefined) await killGroup(daemon);
  }, SLOW_MS);

  it('serves the bus; an utterance with no skills ends with ovos.intent.unmatched and exactly one ovos.utterance.handled', async () => {
    const bus = probe!;
    bus.utter('smoke test nobody answers', { utteranceId: 'npm-start-1', session: { session_id: 'smoke' }, lang: 'en-US' });
    await bus.handled('npm-start-1');
    await bus.barrier();
    const types = bus.typesOf('npm-start-1');
    // Whether the question gate lets common query ping first is incidental here; the end is not.
    expect(types.slice(-2)).toEqual(['ovos.intent.unmatched', 'ovos.utterance.handled']);
    expect(types.filter((type) => type === 'ovos.utterance.handled')).toHaveLength(1);
    expect(types.filter((type) => type === 'ovos.intent.unmatched')).toHaveLength(1);
  });

  it('stops with a non-zero exit and a message naming bus.port when --port is not a number', async () => {
    const bad = npmStart(['--port', 'abc']);
    try {
      const code = await bad.exited;
      expect(code).not.toBe(0);
      expect(code).not.toBeNull();
      expect(bad.output()).toContain('bus.port');
    } finally {
      await killGroup(bad);
    }
  }, SLOW_MS);

  // Runs after beforeAll, whose `npm start` has just built dist/ with tsc.
  it('`say "do a barrel roll" --bus URL` prints the timeline and the catch-all\'s answer against a daemon with the example skills', async () => {
    const withSkills = await startDaemon(configWith({ bus: { port: 0 }, exampleSkills: true, log: { level: 'silent' } }), silentLogger());
    try {
      // Asynchronous on purpose: the daemon answering lives in this very event loop.
      const { stdout } = await run('node', ['dist/src/cli/say.js', 'do a barrel roll', '--bus', withSkills.url], { cwd: ROOT, timeout: 30_000 });
      const timeline = stdout
        .split('\n')
        .map((line) => /^\s*\d+\.\d ms {2}(\S+)/.exec(line)?.[1])
        .filter((type): type is string => type !== undefined);
      expect(timeline).toEqual([
        'ovos.utterance.handle',
        'meaning-of-life.example.fallback.ping',
        'meaning-of-life.example.fallback.pong',
        'dont-know.example.fallback.ping',
        'dont-know.example.fallback.pong',
        'ovos.intent.matched',
        'dont-know.example:fallback',
        'ovos.intent.handler.start',
        'ovos.utterance.speak',
        'mycroft.skill.handler.complete',
        'ovos.intent.handler.complete',
        'ovos.utterance.handled',
      ]);
      expect(stdout).toMatch(/ovos\.intent\.matched\s+skill_id="dont-know\.example" intent_name="fallback" pipeline_id="fallback_low"/);
      expect(stdout).toContain("spoken: I don't know how to answer that");
    } finally {
      await withSkills.close();
    }
  }, SLOW_MS);
});
