// The suite as Stryker runs it against each mutant: the same tests and settings as `npm test`
// (test/vitest.config.ts), in a cheap-first order. Stryker runs the tests covering a mutant one file after another
// and stops at the first failure (bail), so a mutant a unit test kills should not wait for the model suites first.
// Vitest's own order puts the longest file first (by its cache, which the mutant runs themselves keep rewriting).
// Order: unit tests, then the whole-system suites (model, integration, harness, end-to-end), then the two slowest
// (the package test and `npm start`, which run child processes); by file size within each tier. The order changes which test kills a mutant, never whether one does.
import { statSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig, mergeConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import base from '../vitest.config.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const tier = (file: string): number => {
  const path = relative(root, file);
  if (/^test\/(package\/|integration\/npm-start)/.test(path)) return 2;
  if (/^test\/(model|integration|testing)\/|\.e2e\.test\.ts$/.test(path)) return 1;
  return 0;
};
const size = (file: string): number => {
  try {
    return statSync(file).size;
  } catch {
    return Number.MAX_SAFE_INTEGER;
  }
};

class CheapFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const weight = new Map(files.map((spec) => [spec.moduleId, [tier(spec.moduleId), size(spec.moduleId)] as const]));
    return [...files].sort((a, b) => {
      const [ta, sa] = weight.get(a.moduleId)!;
      const [tb, sb] = weight.get(b.moduleId)!;
      return ta - tb || sa - sb;
    });
  }
}

// Not the generated-docs tests (test/docs/): they test no decision code, and the ledger's one reads the sandbox's
// instrumented sources as changed since their results (every file STALE), which would fail Stryker's initial run.
export default mergeConfig(base, defineConfig({ test: { exclude: ['test/docs/**'], sequence: { sequencer: CheapFirst } } }));
