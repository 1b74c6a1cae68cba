// The machines with their static mutants (the `setup({...}).createMachine({...})` structure: targets, reenter,
// guards, delays, `after` and `always` tables), which `--ignoreStatic` skips: `npm run test:mutation:machines:static`.
// Each static mutant runs the whole of test/mutation/vitest.machines.config.ts (what can kill a machine's mutant).
import base from './stryker.config.mjs';

export default {
  ...base,
  mutate: ['machines/**/*.ts'],
  vitest: { configFile: 'test/mutation/vitest.machines.config.ts' },
  incrementalFile: 'test/mutation/stryker-incremental.machines-static.json',
  htmlReporter: { fileName: 'test/mutation/report/machines-static.html' },
  jsonReporter: { fileName: 'test/mutation/report/machines-static.json' },
  thresholds: { high: 95, low: 90, break: 90 },
};
