/**
 * The README's commands, run the way a user runs them: `npm start -- --port P --no-example-skills` in its own
 * process group (it builds with tsc first, so allow for that), a bad flag value, and the `say` CLI against a
 * daemon with the example skills. The spawned daemon is connected to once its own log says the bus listens.
 */
import { execFile, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon } from '../../src/daemon/daemon.js';
import { silentLogger } from '../../src/log/logger.js';
import { BARREL_ROLL_TIMELINE, Probe, configWith, freePort } from './probe.js';
import { ROOT, killGroup, npmStart, type Spawned } from './spawn-daemon.js';

const START_BUDGET_MS = 30_000;
const SLOW_MS = 60_000;

const run = promisify(execFile);

/** Connect once the daemon says its bus listens — or fail when it exits first or the budget runs out. */
async function connectWhenUp(url: string, spawned: Spawned): Promise<Probe> {
  let guard: ReturnType<typeof setTimeout> | undefined;
  const outcome = await Promise.race([
    spawned.printed('OVOS bus listening').then(() => 'up' as const),
    spawned.exited.then((code) => `npm start exited (${String(code)})`),
    new Promise<string>((resolve) => (guard = setTimeout(() => resolve(`no bus at ${url} within ${START_BUDGET_MS} ms`), START_BUDGET_MS))),
  ]);
  clearTimeout(guard);
  if (outcome !== 'up') throw new Error(`${outcome}: ${spawned.output()}`);
  return Probe.connect(url);
}

describe('npm start (src/plugins/README.md)', () => {
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
    expect(types.slice(-4)).toEqual(['ovos.intent.unmatched', 'mycroft.audio.play_sound', 'complete_intent_failure', 'ovos.utterance.handled']);
    expect(types.filter((type) => type === 'ovos.utterance.handled')).toHaveLength(1);
    expect(types.filter((type) => type === 'ovos.intent.unmatched')).toHaveLength(1);
  });

  it('stops with a non-zero exit and a message naming bus.port when --port is not a number', async () => {
    const bad = npmStart(['--port', 'abc']);
    try {
      const code = await bad.exited;
      expect(code).not.toBe(0);
      expect(code).not.toBeNull();
      // The key once, at the start of the message (not `(CONFIG_INVALID, bus.port): bus.port: …`).
      const line = bad.output().split('\n').find((l) => l.startsWith('config error'));
      expect(line).toMatch(/^config error \(CONFIG_INVALID\): bus\.port: /);
      expect(line!.split('bus.port')).toHaveLength(2);
    } finally {
      await killGroup(bad);
    }
  }, SLOW_MS);

  it('a bus port already in use: one line naming it and the way out (--port, --bus), no stack trace, exit 1', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    const taken = npmStart(['--port', String(port), '--no-example-skills', '--inspector-port', '0']);
    try {
      expect(await taken.exited).toBe(1);
      const lines = taken.output().split('\n').filter((line) => line.startsWith('cannot start the bus'));
      expect(lines).toEqual([`cannot start the bus: 127.0.0.1:${port} is already in use. Start with --port <free port>, or join the running bus with --bus ws://127.0.0.1:${port}/core`]);
      expect(taken.output()).not.toMatch(/^\s+at /m);
    } finally {
      await killGroup(taken);
      await new Promise<void>((resolve) => blocker.close(() => resolve()));
    }
  }, SLOW_MS);

  it('a Ctrl-C during the tests leaves no daemon behind: SIGINT to the process group reaches the npm start daemon, which exits', async () => {
    // The stand-in runs compiled from test/ (npm start compiles only the shipped code): built here, what changed only.
    await run(process.execPath, ['src/cli/build.mjs', '--all'], { cwd: ROOT, timeout: SLOW_MS });
    const port = await freePort();
    // A stand-in for the test runner, in its own group as a terminal's foreground job is; it starts the daemon the
    // way these tests do (spawn-daemon.ts) and prints the daemon's pid once it listens.
    const runner = spawn(process.execPath, ['dist/test/integration/spawn-daemon.js', String(port)], { cwd: ROOT, detached: true, stdio: ['ignore', 'pipe', 'inherit'] });
    let printed = '';
    const pid = await new Promise<number>((resolve) => runner.stdout!.on('data', (chunk: Buffer) => {
      printed += chunk.toString('utf8');
      const found = /daemon pid (\d+)/.exec(printed)?.[1];
      if (found !== undefined) resolve(Number(found));
    }));
    // Running: it exists and is not a zombie waiting for its parent to reap it.
    const alive = (p: number): boolean => {
      try {
        process.kill(p, 0);
      } catch {
        return false;
      }
      try {
        return readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
      } catch {
        return false;
      }
    };
    expect(alive(pid)).toBe(true);
    process.kill(-runner.pid!, 'SIGINT'); // what the terminal does on Ctrl-C
    try {
      await expect.poll(() => alive(pid), { timeout: 15_000, interval: 50 }).toBe(false).catch(async (error: unknown) => {
        const ps = await run('ps', ['-o', 'pid,ppid,stat,args', '-p', String(pid)]).catch(() => ({ stdout: '(ps failed)' }));
        throw new Error(`${String(error)}\n${ps.stdout}\nrunner printed: ${printed}`);
      });
    } finally {
      if (alive(pid)) process.kill(pid, 'SIGKILL');
    }
  }, SLOW_MS);

  // Runs after beforeAll, whose `npm start` has just built dist/ with tsc. The daemon process itself (what
  // `npm start` execs, and what a service manager signals).
  it('SIGTERM: the daemon closes its clients with 1001 and exits 0 — also when the reader of its stdout has gone', async () => {
    for (const stdoutGone of [false, true]) {
      const port = await freePort();
      const daemon = spawn(process.execPath, ['dist/src/daemon/main.js', '--port', String(port), '--no-example-skills', '--inspector-port', '0', '--no-registry-file'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => daemon.once('exit', (code, signal) => resolve({ code, signal })));
      try {
        let output = '';
        await new Promise<void>((resolve) => daemon.stdout!.on('data', (chunk: Buffer) => {
          output += chunk.toString('utf8');
          if (output.includes('OVOS bus listening')) resolve();
        }));
        const probe = await Probe.connect(`ws://127.0.0.1:${port}/core`);
        if (stdoutGone) {
          daemon.stdout!.destroy(); // like `npm start | head -1` after head exits
          // Make it log into the closed pipe: an utterance (nobody answers it) is logged on arrival and on its end.
          probe.utter('anyone there', { utteranceId: 'into-the-void' });
          await probe.handled('into-the-void');
        }
        daemon.kill('SIGTERM');
        expect(await probe.closed()).toBe(1001);
        expect(await exited).toEqual({ code: 0, signal: null });
      } finally {
        daemon.kill('SIGKILL');
      }
    }
  }, SLOW_MS);

  // Runs after beforeAll, whose `npm start` has just built dist/ with tsc. What hung the Ctrl-C test above under
  // load: a Ctrl-C stops the reader of the daemon's stdout with the daemon; the daemon logs "shutting down", then
  // "stopped", and exits. With pino's asynchronous destination the second line waited behind the first write, and
  // the flush on exit retried its EPIPE for ever. Two lines into a closed pipe and an exit, every time.
  it('the daemon\'s logger lets the process exit when the reader of its stdout has gone (two lines, then process.exit)', async () => {
    const script = `const { createLogger } = await import('./dist/src/log/logger.js');
      const logger = createLogger({ level: 'info', pretty: false });
      setTimeout(() => { logger.info('shutting down'); logger.info('stopped'); process.exit(0); }, 200);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.destroy(); // the reader is gone before the first line
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    // A guard, not a timing assertion: the failure this catches is a process that never exits.
    const guard = setTimeout(() => child.kill('SIGKILL'), 15_000);
    try {
      expect(await exited, stderr).toEqual({ code: 0, signal: null });
    } finally {
      clearTimeout(guard);
    }
  }, SLOW_MS);

  it('a signal during start-up (still waiting for a foreign bus) exits 0 at once', async () => {
    const unreachable = await freePort();
    const daemon = spawn(process.execPath, ['dist/src/daemon/main.js', '--bus', `ws://127.0.0.1:${unreachable}/core`, '--inspector-port', '0', '--no-mycroft-conf', '--no-registry-file'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => daemon.once('exit', (code, signal) => resolve({ code, signal })));
    try {
      let output = '';
      await new Promise<void>((resolve) => daemon.stdout!.on('data', (chunk: Buffer) => {
        output += chunk.toString('utf8');
        if (output.includes('connecting to an existing OVOS messagebus')) resolve();
      }));
      daemon.kill('SIGTERM');
      expect(await exited).toEqual({ code: 0, signal: null });
      expect(output).not.toContain('OVOS bus listening');
    } finally {
      daemon.kill('SIGKILL');
    }
  }, SLOW_MS);

  // Runs after beforeAll, whose `npm start` has just built dist/ with tsc.
  it('`say -h` and `say --help` print the usage (not an utterance) and exit 0', async () => {
    for (const flag of ['-h', '--help']) {
      const { stdout } = await run('node', ['dist/src/cli/say.js', flag], { cwd: ROOT, timeout: 10_000 });
      expect(stdout).toMatch(/^usage: ovos-say "utterance" \[options\] +\(in a clone: npm run say -- "utterance" \[options\]\)/);
      expect(stdout).toContain('--timeout MS');
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
      expect(timeline).toEqual(BARREL_ROLL_TIMELINE);
      expect(stdout).toMatch(/ovos\.intent\.matched\s+skill_id="dont-know\.example" intent_name="fallback" pipeline_id="fallback_low"/);
      expect(stdout).toContain("spoken: I don't know how to answer that");
    } finally {
      await withSkills.close();
    }
  }, SLOW_MS);
});
