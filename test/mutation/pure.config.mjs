// The pure decision functions only (pool, gate, selection): `npx stryker run test/mutation/pure.config.mjs`.
import base from './stryker.config.mjs';

export default {
  ...base,
  mutate: ['src/plugins/fallback/pool.ts', 'machines/common-query/selection.ts', 'src/plugins/common-query/gate.ts'],
  incrementalFile: 'test/mutation/stryker-incremental.pure.json',
  htmlReporter: { fileName: 'test/mutation/report/pure.html' },
  jsonReporter: { fileName: 'test/mutation/report/pure.json' },
  thresholds: { high: 95, low: 90, break: 90 },
};
