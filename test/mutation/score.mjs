// Adds up the mutation results into the scores issue 9 asks for: the machines, the pure decision functions (pool,
// gate, selection), and all four folders (machines, plugins, supervisor, orchestrator). Results come from two places:
// the reports of runs on this machine (test/mutation/report/*.json, git-ignored: megabytes, with every test file's
// source) and the committed ledger (test/mutation/results.json: per file, the SHA-256 of the source it was measured
// on, the counts, the run, and each survivor's place) — so the score adds up across sessions and machines, and a
// clean clone can tell where it stands. For each file the newest result of its current source counts; a file whose
// results are all of an older source (it changed since) is STALE and a file no result covers is MISSING: either makes
// its group incomplete, and an incomplete group fails. Score = (killed + timeout) / (killed + timeout + survived + no
// coverage), Stryker's own; static mutants skipped with --ignoreStatic, and mutants that did not compile or run, are
// not in it.
//   npm run test:mutation:score                 the scores (exit 1 when a target is not met or a group is incomplete)
//   npm run test:mutation:score -- --record     also writes each report's results for current sources into the ledger
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const reportDir = join(root, 'test/mutation/report');
const ledgerFile = join(root, 'test/mutation/results.json');
const record = process.argv.includes('--record');
const sha = (text) => createHash('sha256').update(text).digest('hex');
const reports = (existsSync(reportDir) ? readdirSync(reportDir) : [])
  .filter((name) => name.endsWith('.json'))
  .map((name) => ({ name, mtime: statSync(join(reportDir, name)).mtimeMs }))
  .sort((a, b) => a.mtime - b.mtime);

/** A report's entry for one file, as the ledger keeps it. */
function summarise(entry, report, mtime) {
  return {
    sha256: sha(entry.source),
    run: `${report} ${new Date(mtime).toISOString().slice(0, 16)}Z`,
    counts: tally(entry),
    survivors: entry.mutants
      .filter((m) => m.status === 'Survived' || m.status === 'NoCoverage')
      .map((m) => `${m.location.start.line}:${m.location.start.column} ${m.status === 'NoCoverage' ? 'no coverage' : 'survived'} ${m.mutatorName}${m.replacement === undefined ? '' : ` → ${m.replacement.replace(/\s+/g, ' ').slice(0, 60)}`}`),
  };
}

const ledger = existsSync(ledgerFile) ? JSON.parse(readFileSync(ledgerFile, 'utf8')) : {};
// Per file: every result of it — the ledger's first, then the reports', newest last.
const files = new Map();
for (const [file, result] of Object.entries(ledger)) files.set(file, [{ ...result, report: `ledger: ${result.run}` }]);
for (const { name, mtime } of reports) {
  const report = JSON.parse(readFileSync(join(reportDir, name), 'utf8'));
  for (const [file, entry] of Object.entries(report.files ?? {})) {
    const result = { ...summarise(entry, name, mtime), report: name };
    files.set(file, [...(files.get(file) ?? []), result]);
  }
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
  const t = { killed: 0, timeout: 0, survived: 0, noCoverage: 0, ignored: 0, errors: 0 };
  for (const m of entry.mutants) {
    if (m.status === 'Killed') t.killed++;
    else if (m.status === 'Timeout') t.timeout++;
    else if (m.status === 'Survived') t.survived++;
    else if (m.status === 'NoCoverage') t.noCoverage++;
    else if (m.status === 'CompileError' || m.status === 'RuntimeError') t.errors++;
    else t.ignored++;
  }
  return t;
}
const valid = (t) => t.killed + t.timeout + t.survived + t.noCoverage;
const score = (t) => (valid(t) === 0 ? NaN : (100 * (t.killed + t.timeout)) / valid(t));
const percent = (t) => (valid(t) === 0 ? '  n/a' : score(t).toFixed(1).padStart(5));

let ok = true;
for (const group of GROUPS) {
  const sum = { killed: 0, timeout: 0, survived: 0, noCoverage: 0, ignored: 0, errors: 0 };
  console.log(`\n${group.name} (target ${group.target} %)`);
  const missing = [];
  const stale = [];
  for (const file of group.files) {
    const all = files.get(file) ?? [];
    const current = sha(readFileSync(join(root, file), 'utf8'));
    const found = all.filter((r) => r.sha256 === current).at(-1);
    if (found === undefined) {
      (all.length === 0 ? missing : stale).push(file);
      console.log(`  ${file.padEnd(52)} ${all.length === 0 ? 'MISSING: no result covers it' : `STALE: changed since its result [${all.at(-1).report}]`}`);
      continue;
    }
    if (record && !found.report.startsWith('ledger: ')) {
      const { report: _report, ...result } = found;
      ledger[file] = result;
    }
    const t = found.counts;
    for (const key of Object.keys(sum)) sum[key] += t[key];
    console.log(`  ${file.padEnd(52)} ${percent(t)} %  killed ${t.killed}, timeout ${t.timeout}, survived ${t.survived}, no coverage ${t.noCoverage}; static (skipped) / ignored ${t.ignored}, errors ${t.errors}  [${found.report}]`);
  }
  const complete = missing.length === 0 && stale.length === 0;
  const gaps = [...missing.map((f) => `${f} (missing)`), ...stale.map((f) => `${f} (stale)`)];
  console.log(`  ${'= all'.padEnd(52)} ${percent(sum)} %  killed ${sum.killed}, timeout ${sum.timeout}, survived ${sum.survived}, no coverage ${sum.noCoverage}${complete ? '' : `  — INCOMPLETE: ${gaps.join(', ')}`}`);
  if (!complete || !(score(sum) >= group.target)) ok = false;
}
if (record) {
  const sorted = Object.fromEntries(Object.entries(ledger).sort(([a], [b]) => (a < b ? -1 : 1)));
  writeFileSync(ledgerFile, `${JSON.stringify(sorted, null, 1)}\n`);
  console.log(`\nrecorded in ${ledgerFile.slice(root.length)}: ${Object.keys(sorted).length} files`);
}
process.exit(ok ? 0 : 1);
