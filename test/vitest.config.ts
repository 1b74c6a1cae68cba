import { defineConfig } from 'vitest/config';

/**
 * Suites that load both cores on their own for minutes (1,000 sessions × 10 utterances on a NATS cluster): they run
 * alone, after the rest (`test/vitest.solo.config.ts`), so they neither starve the timing of other suites' daemons nor
 * are starved by them.
 */
export const SOLO = ['test/integration/cluster-scale.test.ts'];

export default defineConfig({
  test: {
    root: new URL('..', import.meta.url).pathname,
    include: ['test/**/*.test.ts'],
    exclude: ['test/bench/**', 'node_modules/**', 'dist/**', ...SOLO],
    pool: 'forks',
    testTimeout: 20000,
  },
});
