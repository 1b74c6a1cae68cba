// Adds up the mutation results into the scores we hold the decision code to: the machines, the pure decision functions (pool,
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
//   npm run test:mutation:stale                 re-runs (incrementally) exactly the files this reports STALE or MISSING
import { writeFileSync } from 'node:fs';
import { GROUPS, currentResult, ledgerFile, readLedger, results, root, score, valid } from './ledger.mjs';

const record = process.argv.includes('--record');
const ledger = readLedger();
const files = results(ledger);

const percent = (t) => (valid(t) === 0 ? '  n/a' : score(t).toFixed(1).padStart(5));

let ok = true;
for (const group of GROUPS) {
  const sum = { killed: 0, timeout: 0, survived: 0, noCoverage: 0, ignored: 0, errors: 0 };
  console.log(`\n${group.name} (target ${group.target} %)`);
  const missing = [];
  const stale = [];
  for (const file of group.files) {
    const all = files.get(file) ?? [];
    const found = currentResult(file, files);
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
