// The machines and the pure decision functions (the ≥ 90 % target): `npm run test:mutation:core`.
import base from './stryker.config.mjs';

export default {
  ...base,
  mutate: ['machines/**/*.ts', 'src/plugins/fallback/pool.ts', 'src/plugins/common-query/gate.ts'],
  incrementalFile: 'test/mutation/stryker-incremental.core.json',
  htmlReporter: { fileName: 'test/mutation/report/core.html' },
  jsonReporter: { fileName: 'test/mutation/report/core.json' },
  thresholds: { high: 95, low: 90, break: 90 },
};
