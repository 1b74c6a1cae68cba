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
import { mkdirSync, rmdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const root = fileURLToPath(new URL('../..', import.meta.url));
const all = process.argv.includes('--all');
const dist = join(root, 'dist');
const lock = join(dist, '.build-lock');
/** A lock older than this was left by a build that died (a build takes seconds). */
const STALE_MS = 300_000;
const sleeper = new Int32Array(new SharedArrayBuffer(4));

mkdirSync(dist, { recursive: true });
// One build at a time: mkdir is atomic, whoever makes the folder builds; the others wait for it to go.
for (let waited = 0; ; waited += 50) {
  try {
    mkdirSync(lock);
    break;
  } catch (error) {
    if (error.code !== 'EEXIST') throw error;
    let age = 0;
    try {
      age = Date.now() - statSync(lock).mtimeMs;
    } catch {
      continue; // gone meanwhile: try again
    }
    if (age > STALE_MS) {
      try {
        rmdirSync(lock);
      } catch {
        // another waiter took it away first
      }
      continue;
    }
    if (waited === 2_000) process.stderr.write('waiting for another build of this checkout to finish…\n');
    Atomics.wait(sleeper, 0, 0, 50);
  }
}

let status = 1;
try {
  // The checkout's own TypeScript (a dev dependency; its bin is not among the package's exports).
  const tsc = join(dirname(createRequire(import.meta.url).resolve('typescript')), '..', 'bin', 'tsc');
  const project = all ? 'tsconfig.json' : 'tsconfig.build.json';
  const info = join('dist', all ? '.tsbuildinfo-all' : '.tsbuildinfo-shipped');
  const result = spawnSync(process.execPath, [tsc, '-p', project, '--incremental', '--tsBuildInfoFile', info], { cwd: root, stdio: 'inherit' });
  status = result.status ?? 1;
} finally {
  rmdirSync(lock);
}
process.exit(status);
