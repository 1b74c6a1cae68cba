// The suites that run alone, after the rest of `npm test` (SOLO in test/vitest.config.ts). Not mergeConfig: it
// would concatenate `include` and `exclude` with the base's.
import { defineConfig } from 'vitest/config';
import base, { SOLO } from './vitest.config.js';

export default defineConfig({ test: { ...base.test, include: SOLO, exclude: ['node_modules/**', 'dist/**'] } });
