// What score.mjs, docs.mjs and stale.config.mjs share: every mutation result of each file, from the committed ledger
// (test/mutation/results.json) and the reports of runs on this machine (test/mutation/report/*.json, git-ignored),
// which files of the four folders have none for their current source, and the groups the scores are given for.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('../../', import.meta.url));
export const reportDir = join(root, 'test/mutation/report');
export const ledgerFile = join(root, 'test/mutation/results.json');
export const sha = (text) => createHash('sha256').update(text).digest('hex');

/** The reports of runs on this machine, oldest first: `{ name, mtime }`. */
export function reports() {
  return (existsSync(reportDir) ? readdirSync(reportDir) : [])
    .filter((name) => name.endsWith('.json'))
    .map((name) => ({ name, mtime: statSync(join(reportDir, name)).mtimeMs }))
    .sort((a, b) => a.mtime - b.mtime);
}

export function readReport(name) {
  return JSON.parse(readFileSync(join(reportDir, name), 'utf8'));
}

export function tally(entry) {
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

export function readLedger() {
  return existsSync(ledgerFile) ? JSON.parse(readFileSync(ledgerFile, 'utf8')) : {};
}

/** Per file: every result of it — the ledger's first, then the reports', newest last. */
export function results(ledger = readLedger()) {
  const files = new Map();
  for (const [file, result] of Object.entries(ledger)) files.set(file, [{ ...result, report: `ledger: ${result.run}` }]);
  for (const { name, mtime } of reports()) {
    const report = readReport(name);
    for (const [file, entry] of Object.entries(report.files ?? {})) {
      const result = { ...summarise(entry, name, mtime), report: name };
      files.set(file, [...(files.get(file) ?? []), result]);
    }
  }
  return files;
}

export const PURE = ['src/plugins/fallback/pool.ts', 'machines/common-query/selection.ts', 'src/plugins/common-query/gate.ts'];
const tsUnder = (dir) => readdirSync(join(root, dir), { recursive: true }).filter((f) => String(f).endsWith('.ts')).map((f) => `${dir}/${f}`);
export const ALL = ['machines', 'src/plugins', 'src/supervisor', 'src/orchestrator'].flatMap(tsUnder).sort();

/** The groups the scores are given for, each with its target (%). */
export const GROUPS = [
  { name: 'machines', target: 90, files: ALL.filter((f) => f.startsWith('machines/')) },
  { name: 'pure decision functions', target: 90, files: PURE },
  { name: 'all four folders', target: 80, files: ALL },
];

/** The mutants a score counts: detected or not, static ones skipped and those that did not compile or run left out. */
export const valid = (t) => t.killed + t.timeout + t.survived + t.noCoverage;
/** Stryker's score, %: (killed + timeout) / (killed + timeout + survived + no coverage). */
export const score = (t) => (valid(t) === 0 ? NaN : (100 * (t.killed + t.timeout)) / valid(t));

/** The newest result of `file`'s current source, or undefined (stale: only results of older sources; missing: none). */
export function currentResult(file, files) {
  const current = sha(readFileSync(join(root, file), 'utf8'));
  return (files.get(file) ?? []).filter((r) => r.sha256 === current).at(-1);
}

/** Files of the four folders with no result for their current source. */
export function staleFiles(files = results()) {
  return ALL.filter((file) => currentResult(file, files) === undefined);
}

/**
 * Stryker's incremental file for a run over `mutate`: for each file, its entry in the newest report that has one
 * (Stryker re-tests only the mutants whose code or covering tests changed since), test ids renumbered across reports.
 * Returns how many files it found a previous result for.
 */
export function incrementalSeed(mutate) {
  const newest = new Map();
  for (const { name } of reports()) {
    const report = readReport(name);
    for (const file of mutate) if (report.files?.[file] !== undefined) newest.set(file, { name, report });
  }
  let seed;
  const testIds = new Map();
  const testFiles = {};
  const files = {};
  let mutantId = 0;
  for (const [file, { report }] of newest) {
    seed ??= Object.fromEntries(Object.entries(report).filter(([key]) => key !== 'files' && key !== 'testFiles'));
    const renumbered = new Map();
    for (const [testFile, { tests, ...rest }] of Object.entries(report.testFiles ?? {})) {
      testFiles[testFile] ??= { ...rest, tests: [] };
      for (const test of tests) {
        const key = `${testFile}\u0000${test.name}`;
        if (!testIds.has(key)) {
          testIds.set(key, String(testIds.size));
          testFiles[testFile].tests.push({ ...test, id: testIds.get(key) });
        }
        renumbered.set(test.id, testIds.get(key));
      }
    }
    const renumber = (ids) => (ids ?? []).filter((id) => renumbered.has(id)).map((id) => renumbered.get(id));
    files[file] = {
      ...report.files[file],
      mutants: report.files[file].mutants.map((m) => ({ ...m, id: String(mutantId++), killedBy: renumber(m.killedBy), coveredBy: renumber(m.coveredBy) })),
    };
  }
  return { found: newest.size, seed: seed === undefined ? undefined : { ...seed, files, testFiles } };
}
