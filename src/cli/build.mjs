/**
 * What `npm start`, `npm run say`, `test-timing`, `replay-trace` (and, with `--all`, the benchmarks and generators)
 * run first: the code compiled into dist/ — only what changed since the last build (`tsc --incremental`, its state in
 * dist/), and one build at a time in a checkout, so commands started together never read a half-written dist/.
 *
 * Plain JavaScript, run by node as it is: it is what makes the TypeScript runnable.
 *
 *   node src/cli/build.mjs          the shipped code (tsconfig.build.json: src/, machines/)
 *   node src/cli/build.mjs --all    everything (tsconfig.json: the tests, benchmarks and generators too)
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const root = fileURLToPath(new URL('../..', import.meta.url));
const all = process.argv.includes('--all');
const dist = join(root, 'dist');
const lock = join(dist, '.build-lock');
/** A lock older than this was left behind (a build takes seconds); one whose process is gone is taken at once. */
const STALE_MS = 300_000;
const sleeper = new Int32Array(new SharedArrayBuffer(4));

/** Whether the build holding the lock is gone: its process has exited (killed mid-build), or the lock is stale. */
function abandoned() {
  let pid;
  try {
    pid = Number(readFileSync(join(lock, 'pid'), 'utf8'));
  } catch {
    // Not written yet (its holder is between mkdir and write), or gone: judged by age alone.
    try {
      return Date.now() - statSync(lock).mtimeMs > STALE_MS;
    } catch {
      return false;
    }
  }
  try {
    process.kill(pid, 0);
    return Date.now() - statSync(lock).mtimeMs > STALE_MS;
  } catch (error) {
    return error.code === 'ESRCH';
  }
}

function release() {
  rmSync(lock, { recursive: true, force: true });
}

mkdirSync(dist, { recursive: true });
// One build at a time: mkdir is atomic, whoever makes the folder builds; the others wait for it to go.
for (let waited = 0; ; waited += 50) {
  try {
    mkdirSync(lock);
    writeFileSync(join(lock, 'pid'), String(process.pid));
    break;
  } catch (error) {
    if (error.code !== 'EEXIST') throw error;
    if (abandoned()) {
      release();
      continue;
    }
    if (waited === 2_000) process.stderr.write('waiting for another build of this checkout to finish…\n');
    Atomics.wait(sleeper, 0, 0, 50);
  }
}
// Stopped mid-build (a Ctrl-C, a service stopped while it starts): the lock goes with it.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    release();
    process.exit(1);
  });
}

let status = 1;
try {
  // The checkout's own TypeScript (a dev dependency; its bin is not among the package's exports).
  const tsc = join(dirname(createRequire(import.meta.url).resolve('typescript')), '..', 'bin', 'tsc');
  const project = all ? 'tsconfig.json' : 'tsconfig.build.json';
  const info = join('dist', all ? '.tsbuildinfo-all' : '.tsbuildinfo-shipped');
  // tsc's incremental state does not notice outputs removed since (a part of dist/ deleted by hand): one of them
  // missing, everything is built again.
  const sentinel = join(dist, all ? 'test/integration/spawn-daemon.js' : 'src/daemon/main.js');
  if (!existsSync(sentinel)) rmSync(join(root, info), { force: true });
  const result = spawnSync(process.execPath, [tsc, '-p', project, '--incremental', '--tsBuildInfoFile', info], { cwd: root, stdio: 'inherit' });
  status = result.status ?? 1;
} finally {
  release();
}
process.exit(status);
