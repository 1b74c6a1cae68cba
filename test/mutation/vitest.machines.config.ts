// The test set that can kill a machine's mutants, for `npm run test:mutation:machines:static` (static mutants
// included: each one runs this whole set): the machine tests, the plugins' and the orchestrator's tests (they drive
// the machines through the real system) and the whole-system model suites — cheap first, as
// test/mutation/vitest.config.ts orders them.
import base from './vitest.config.js';

const include = ['test/machines/**/*.test.ts', 'test/plugins/**/*.test.ts', 'test/orchestrator/**/*.test.ts', 'test/model/**/*.test.ts'];
// mergeConfig would add these to the suite's own `include`: this set replaces it.
export default { ...base, test: { ...base.test, include } };
