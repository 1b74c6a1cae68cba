/**
 * `npm run bench`: every benchmark in turn, each printed as a table as it finishes, then the whole run written to
 * test/bench/results/local/latest.json (untracked) with the machine it ran on and the commit measured —
 * `npm run bench -- --update` writes the committed test/bench/results/latest.json instead, from which (with the
 * committed partial-*.json) `npm run bench:docs` generates the tables of test/bench/README.md. A benchmark that throws is reported and the others
 * still run; the exit code says whether everything ran and every check held.
 *
 * Run with --expose-gc (the npm script does): the memory benchmark needs `global.gc`, and the others collect
 * between phases so one phase's garbage is not billed to the next.
 */
import { mkdirSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { benchAdversarial } from './adversarial.js';
import { benchAttacks } from './attacks.js';
import { benchBusFloor } from './bus-floor.js';
import { benchCommonQueryWs } from './common-query-ws.js';
import { benchFallbackInProcess } from './fallback-inprocess.js';
import { benchMachinesFloor } from './machines-floor.js';
import { benchFallbackWs } from './fallback-ws.js';
import { benchInspector } from './inspector.js';
import { benchMemory } from './memory.js';
import { benchFlood } from './flood.js';
import { benchMixedLoad } from './mixed-load.js';
import { benchNoisyNeighbour } from './noisy-neighbour.js';
import { benchOvosCore } from './ovos-core.js';
import { benchCluster } from './cluster.js';
import { type BenchmarkId, BENCHMARKS } from './catalogue.js';
import { gitCommit, machineInfo, renderMachine, renderSection, writeResults, type Section } from './report.js';
import { canCollectGarbage, collectGarbage, settle } from './rig.js';
import { benchRestartMemory } from './restart-memory.js';
import { benchRouting } from './routing.js';
import { benchSloppySkills } from './sloppy-skills.js';
import { benchTimingUnderLoad } from './timing-under-load.js';


const RUNS: Readonly<Record<BenchmarkId, () => Promise<Section>>> = {
  'fallback-inprocess': benchFallbackInProcess,
  'machines-floor': benchMachinesFloor,
  'fallback-ws': benchFallbackWs,
  'bus-floor': benchBusFloor,
  'common-query-ws': benchCommonQueryWs,
  memory: benchMemory,
  routing: benchRouting,
  'timing-under-load': benchTimingUnderLoad,
  inspector: benchInspector,
  'mixed-load': benchMixedLoad,
  flood: benchFlood,
  noisy: benchNoisyNeighbour,
  adversarial: benchAdversarial,
  attacks: benchAttacks,
  restart: benchRestartMemory,
  sloppy: benchSloppySkills,
  'ovos-core': benchOvosCore,
  cluster: benchCluster,
};
// `npm run bench -- inspector memory`: only the benchmarks named (by a word of their name). Results go to the
// untracked test/bench/results/local/; `--update` writes the committed files the README's tables come from instead.
const args = process.argv.slice(2);
const update = args.includes('--update');
const only = args.filter((arg) => arg !== '--update');
const selected = only.length === 0 ? BENCHMARKS : BENCHMARKS.filter(({ name }) => only.some((word) => name.includes(word)));
// A partial run keeps its own results file: latest.json always holds a whole run.
const resultsName = `${update ? '' : 'local/'}${only.length === 0 ? 'latest' : `partial-${only.join('-').replace(/[^A-Za-z0-9-]/g, '_')}`}`;
const RESULTS = new URL(`../../../test/bench/results/${resultsName}.json`, import.meta.url);
mkdirSync(new URL('.', RESULTS), { recursive: true });

const machine = machineInfo();
// The code measured: HEAD, `-dirty` when tracked files differ from it (read before anything runs).
const commit = gitCommit();
const started = performance.now();
// Handles open before any benchmark (stdio pipes, the terminal) are not theirs to close. Node opens stdout and
// stderr lazily, on first use: touch both so they are counted here rather than reported as left open at the end.
void process.stdout.writable;
void process.stderr.writable;
const openAtStart = process.getActiveResourcesInfo();
console.log(`ovos-contests benchmarks — ${renderMachine(machine)}${commit === undefined ? '' : `, code at ${commit}`}`);
if (!canCollectGarbage) console.log('warning: global.gc unavailable (run node with --expose-gc); the memory benchmark is skipped');

const sections: Section[] = [];
const failures: string[] = [];
for (const { name, id } of selected) {
  const benchStarted = performance.now();
  try {
    await collectGarbage();
    const section = await RUNS[id]();
    if (section.id !== id) failures.push(`${name}: reported section "${section.id}", catalogue.ts says "${id}"`);
    sections.push(section);
    console.log(`\n${renderSection(section)}`);
    console.log(`  (${((performance.now() - benchStarted) / 1000).toFixed(1)} s)`);
    for (const check of section.checks) if (!check.ok) failures.push(`${section.id}: ${check.name} — ${check.detail}`);
  } catch (error) {
    failures.push(`${name}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    console.error(`\n${name} FAILED:`, error);
  }
}

const wallSeconds = (performance.now() - started) / 1000;
writeResults(RESULTS, {
  ...(commit === undefined ? {} : { commit }),
  machine,
  command: `node ${process.execArgv.join(' ')} dist/test/bench/run.js ${args.join(' ')} (npm run bench${args.length === 0 ? '' : ` -- ${args.join(' ')}`})`.replace(/\s+/g, ' '),
  wallSeconds,
  sections,
  failures,
});
console.log(`\n${failures.length === 0 ? 'all checks OK' : `${failures.length} failure(s):\n  ${failures.join('\n  ')}`}`);
console.log(`results: test/bench/results/${resultsName}.json — ${wallSeconds.toFixed(0)} s in all`);

// Everything each benchmark opened must be closed by now, or the process would not exit on its own.
await settle();
const open = process.getActiveResourcesInfo();
for (const kind of openAtStart) {
  const at = open.indexOf(kind);
  if (at >= 0) open.splice(at, 1);
}
console.log(open.length === 0 ? 'no handle left open: the process exits on its own' : `WARNING still open after the run: ${open.join(', ')}`);
if (failures.length > 0) process.exitCode = 1;
