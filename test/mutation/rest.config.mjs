// The rest of the decision code — the plugins beyond the pure functions, the supervisor, the orchestrator — one
// piece at a time, each with its own result and report files, short enough to finish on 2 cores (all of it in one
// run is hours). `npm run test:mutation` is the whole thing in one run; `node test/mutation/score.mjs` adds up the
// pieces' reports into the score over all four folders:
//   PIECE=supervisor npm run test:mutation:piece      (= npx stryker run test/mutation/rest.config.mjs --ignoreStatic)
//   PIECE=orchestrator …    PIECE=fallback-plugin …    PIECE=common-query-plugin …
import base from './stryker.config.mjs';

const PIECES = {
  supervisor: ['src/supervisor/**/*.ts'],
  orchestrator: ['src/orchestrator/**/*.ts'],
  'fallback-plugin': ['src/plugins/fallback/**/*.ts', '!src/plugins/fallback/pool.ts'],
  'common-query-plugin': ['src/plugins/common-query/**/*.ts', '!src/plugins/common-query/gate.ts'],
};
const piece = process.env.PIECE ?? '';
const mutate = Object.hasOwn(PIECES, piece) ? PIECES[piece] : undefined;
if (mutate === undefined) throw new Error(`PIECE must be one of ${Object.keys(PIECES).join(', ')} (got "${piece}")`);

export default {
  ...base,
  mutate,
  incrementalFile: `test/mutation/stryker-incremental.${piece}.json`,
  htmlReporter: { fileName: `test/mutation/report/${piece}.html` },
  jsonReporter: { fileName: `test/mutation/report/${piece}.json` },
};
