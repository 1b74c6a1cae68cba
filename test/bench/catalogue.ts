/**
 * The benchmarks in the order `npm run bench` runs them: the name `npm run bench -- <words>` selects by (a word of
 * it) and the id of the section each one reports. run.ts runs them in this order and the generated tables of
 * test/bench/README.md (docs.ts) follow it.
 */
export const BENCHMARKS = [
  { name: 'fallback in-process', id: 'fallback-inprocess' },
  { name: 'machines floor', id: 'machines-floor' },
  { name: 'fallback over websocket', id: 'fallback-ws' },
  { name: 'bus floor', id: 'bus-floor' },
  { name: 'common query over websocket', id: 'common-query-ws' },
  { name: 'memory', id: 'memory' },
  { name: 'routing', id: 'routing' },
  { name: 'timing under load', id: 'timing-under-load' },
  { name: 'inspector', id: 'inspector' },
  { name: 'mixed load', id: 'mixed-load' },
  { name: 'flood', id: 'flood' },
  { name: 'noisy neighbour', id: 'noisy' },
  { name: 'adversarial', id: 'adversarial' },
  { name: 'attacks on every entrance', id: 'attacks' },
  { name: 'restart memory', id: 'restart' },
  { name: 'sloppy skills', id: 'sloppy' },
  { name: 'ovos-core side by side', id: 'ovos-core' },
  { name: 'cluster', id: 'cluster' },
] as const;

export type BenchmarkId = (typeof BENCHMARKS)[number]['id'];
