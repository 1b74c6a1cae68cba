// Re-runs exactly the files of the four folders that have no mutation result for their current source (what
// `npm run test:mutation:score` reports STALE or MISSING), in one incremental run: its incremental file is seeded from
// each file's newest report on this machine, so only the mutants whose code or covering tests changed are tested.
//   npm run test:mutation:stale   (= npx stryker run test/mutation/stale.config.mjs --ignoreStatic)
//   FILES=src/plugins/fallback/fallback.plugin.ts npm run test:mutation:stale   (some of them)
// then `npm run test:mutation:score -- --record` writes the results into the ledger (the report, stale.json, is
// replaced by the next stale run).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import base from './stryker.config.mjs';
import { incrementalSeed, root, staleFiles } from './ledger.mjs';

// FILES=a.ts,b.ts: only those of the stale files (a run that fits the time there is). Not `--mutate`: Stryker reports
// every file of the seed, and a file of the seed that was not mutated would be reported with its old results as current.
const only = process.env.FILES?.split(',').filter(Boolean);
const mutate = staleFiles().filter((file) => only === undefined || only.includes(file));
if (mutate.length === 0) throw new Error('nothing to re-run: every file of the four folders has a result of its current source (npm run test:mutation:score)');
const incrementalFile = 'test/mutation/stryker-incremental.stale.json';
const { found, seed } = incrementalSeed(mutate);
if (seed !== undefined) writeFileSync(join(root, incrementalFile), JSON.stringify(seed));
console.log(`test:mutation:stale: ${mutate.length} file(s) — ${mutate.join(', ')}; a previous report for ${found} of them`);

export default {
  ...base,
  mutate,
  incrementalFile,
  htmlReporter: { fileName: 'test/mutation/report/stale.html' },
  jsonReporter: { fileName: 'test/mutation/report/stale.json' },
};
