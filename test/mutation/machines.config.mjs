// The machines alone (the ≥ 90 % target, and every survivor read): `npx stryker run test/mutation/machines.config.mjs`.
import base from './stryker.config.mjs';

export default {
  ...base,
  mutate: ['machines/**/*.ts'],
  incrementalFile: 'test/mutation/stryker-incremental.machines.json',
  htmlReporter: { fileName: 'test/mutation/report/machines.html' },
  jsonReporter: { fileName: 'test/mutation/report/machines.json' },
  thresholds: { high: 95, low: 90, break: 90 },
};
