/**
 * `ovos-contests/testing`: model-based timing tests of a deployment's own configuration and skills. See src/testing/README.md,
 * "Testing your deployment's timing".
 */
export { runScenario, runTimingSuite, type Observed, type PathResult, type TimingReport } from './run.js';
export { expectedOutcome, fallbackPool, WARM_UPS, type Expected } from './model.js';
export { boundaryVariants, DELAY_BOUNDARIES, type Variant } from './boundaries.js';
export type { CommonQuerySkillScript, FallbackSkillScript, SkillScript, SkillsFile, TimingScenario } from './scenario.js';
export { parseSkillsFile, SkillsFileError } from './skills-file.js';
export { parseTrace, replayTrace, traceToScenario, TRACE_FORMAT, TraceError, type Trace, type TraceEntry, type TraceReplay, type RecordedDecision } from './trace.js';
