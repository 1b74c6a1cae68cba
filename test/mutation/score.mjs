// Adds up the mutation reports in test/mutation/report/*.json into the scores issue 9 asks for: the machines, the
// pure decision functions (pool, gate, selection), and all four folders (machines, plugins, supervisor,
// orchestrator). For each file the newest report that covers it counts; a report of a file that has changed since
// it was taken is marked stale (its source no longer matches), and a file no report covers is listed as missing.
// Score = (killed + timeout) / (killed + timeout + survived + no coverage), Stryker's own; static mutants skipped
// with --ignoreStatic are not in it. `node test/mutation/score.mjs` (exit 1 when a target is not met).
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('../../', import.meta.url).pathname;
const reportDir = join(root, 'test/mutation/report');
const reports = readdirSync(reportDir)
  .filter((name) => name.endsWith('.json'))
  .map((name) => ({ name, mtime: statSync(join(reportDir, name)).mtimeMs }))
  .sort((a, b) => a.mtime - b.mtime);

const files = new Map();
for (const { name, mtime } of reports) {
  const report = JSON.parse(readFileSync(join(reportDir, name), 'utf8'));
  for (const [file, entry] of Object.entries(report.files ?? {})) files.set(file, { report: name, mtime, entry });
}

const PURE = ['src/plugins/fallback/pool.ts', 'src/plugins/common-query/selection.ts', 'src/plugins/common-query/gate.ts'];
const tsUnder = (dir) => readdirSync(join(root, dir), { recursive: true }).filter((f) => String(f).endsWith('.ts')).map((f) => `${dir}/${f}`);
const ALL = ['machines', 'src/plugins', 'src/supervisor', 'src/orchestrator'].flatMap(tsUnder).sort();
const GROUPS = [
  { name: 'machines', target: 90, files: ALL.filter((f) => f.startsWith('machines/')) },
  { name: 'pure decision functions', target: 90, files: PURE },
  { name: 'all four folders', target: 80, files: ALL },
];

function tally(entry) {
  const t = { killed: 0, timeout: 0, survived: 0, noCoverage: 0, ignored: 0 };
  for (const m of entry.mutants) {
    if (m.status === 'Killed') t.killed++;
    else if (m.status === 'Timeout') t.timeout++;
    else if (m.status === 'Survived') t.survived++;
    else if (m.status === 'NoCoverage') t.noCoverage++;
    else t.ignored++;
  }
  return t;
}
const score = (t) => (100 * (t.killed + t.timeout)) / Math.max(1, t.killed + t.timeout + t.survived + t.noCoverage);

let ok = true;
for (const group of GROUPS) {
  const sum = { killed: 0, timeout: 0, survived: 0, noCoverage: 0, ignored: 0 };
  console.log(`\n${group.name} (target ${group.target} %)`);
  const missing = [];
  for (const file of group.files) {
    const found = files.get(file);
    if (found === undefined) {
      missing.push(file);
      continue;
    }
    const current = readFileSync(join(root, file), 'utf8');
    const stale = found.entry.source !== current ? '  STALE: changed since this report' : '';
    const t = tally(found.entry);
    for (const key of Object.keys(sum)) sum[key] += t[key];
    console.log(`  ${file.padEnd(52)} ${score(t).toFixed(1).padStart(5)} %  killed ${t.killed}, timeout ${t.timeout}, survived ${t.survived}, no coverage ${t.noCoverage}, static/ignored ${t.ignored}  [${found.report}]${stale}`);
  }
  const complete = missing.length === 0;
  console.log(`  ${'= all'.padEnd(52)} ${score(sum).toFixed(1).padStart(5)} %  killed ${sum.killed}, timeout ${sum.timeout}, survived ${sum.survived}, no coverage ${sum.noCoverage}${complete ? '' : `  — INCOMPLETE: no report for ${missing.join(', ')}`}`);
  if (!complete || score(sum) < group.target) ok = false;
}
process.exit(ok ? 0 : 1);
