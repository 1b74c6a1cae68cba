/**
 * The model-based suites replay every path in `npm test`. Under mutation testing a static mutant (a machine's
 * structure) runs the whole suite, so `MODEL_PATH_SAMPLE=n` (set by `npm run test:mutation:machines:static`) replays
 * every n-th path and the last; the paths are still all generated and their counts and coverage still checked.
 */
export function sampled<T>(paths: readonly T[], env: NodeJS.ProcessEnv = process.env): readonly T[] {
  const n = Number(env['MODEL_PATH_SAMPLE'] ?? '1');
  if (!Number.isInteger(n) || n <= 1) return paths;
  return paths.filter((_, i) => i % n === 0 || i === paths.length - 1);
}
