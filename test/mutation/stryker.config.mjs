// StrykerJS: mutation testing of the decision code. `npm run test:mutation` (all four folders) or
// `npm run test:mutation:core` (machines + the pure decision functions) or
// `npm run test:mutation:pure` (pool, gate, selection). Not part of `npm test`.
// Incremental: results are kept in test/mutation/stryker-incremental*.json (git-ignored: 18 MB for the pure set), so
// a re-run after a small change only tests the mutants it touches. The HTML report goes to test/mutation/report/.
// `--ignoreStatic` skips the mutants of module-level tables (the gate's vocabulary, the machines' definitions), each
// of which needs the whole suite (~40 s): the fast score; without it, the full one (hours on 2 cores).
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  packageManager: 'npm',
  testRunner: 'vitest',
  vitest: { configFile: 'test/mutation/vitest.config.ts' },
  plugins: ['@stryker-mutator/vitest-runner'],
  mutate: ['machines/**/*.ts', 'src/plugins/**/*.ts', 'src/supervisor/**/*.ts', 'src/orchestrator/**/*.ts'],
  coverageAnalysis: 'perTest',
  incremental: true,
  incrementalFile: 'test/mutation/stryker-incremental.json',
  reporters: ['html', 'json', 'clear-text', 'progress'],
  htmlReporter: { fileName: 'test/mutation/report/index.html' },
  jsonReporter: { fileName: 'test/mutation/report/mutation.json' },
  // Stryker rewrites tsconfig references with the TypeScript JS API, which typescript@7 (the native compiler) does not
  // have; vitest transpiles on its own, so there is nothing for Stryker to rewrite: point it at no tsconfig.
  tsconfigFile: 'test/mutation/no-tsconfig.json',
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
  concurrency: 2,
  timeoutMS: 20000,
  // The first run of the whole suite, niced on 2 cores beside other work, takes longer than Stryker's default 5 minutes.
  dryRunTimeoutMinutes: 15,
  thresholds: { high: 90, low: 80, break: 80 },
};
