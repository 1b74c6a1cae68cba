/**
 * Which machine goes to which diagram, and what its named delays are set to by default. `npm run viz` writes, per
 * machine, `<name>.machine.md` (Mermaid, renders on code hosts, with a table of the named delays) and
 * `<name>.machine.svg` (Graphviz `dot`, as WebAssembly, on the DOT export: generate.ts). test/inspect/diagram.test.ts
 * fails when a committed file — or machines/README.md's embedded fallback diagram — drifts from the machines.
 */
import type { AnyStateMachine } from 'xstate';
import { commonQueryMachine } from '../machines/common-query/common-query.machine.js';
import { fallbackMachine } from '../machines/fallback/fallback.machine.js';
import { utteranceMachine } from '../machines/utterance/utterance.machine.js';
import { DEFAULT_CONFIG } from '../src/config/defaults.js';
import { machineGraph, toDot, toMermaid } from '../src/inspect/diagram.js';
import { stageBoundMs } from '../src/plugins/fallback/stage-bound.js';

const { fallback, orchestrator, commonQuery } = DEFAULT_CONFIG;

/** Every named delay of every machine: its config key, default value, and the clause that asks for it. */
export const DELAYS: Readonly<Record<string, { readonly key: string; readonly ms: number; readonly clause: string }>> = {
  pingTimeout: { key: 'fallback.pingTimeoutMs', ms: fallback.pingTimeoutMs, clause: 'OVOS-FALLBACK-1 §6.1' },
  matchTimeout: { key: 'orchestrator.matchTimeoutMs', ms: orchestrator.matchTimeoutMs, clause: 'OVOS-PIPELINE-1 §4.4' },
  stageBound: { key: 'orchestrator.matchTimeoutMs less 5 ms (at most a tenth)', ms: stageBoundMs(orchestrator.matchTimeoutMs), clause: 'OVOS-PIPELINE-1 §4.4 × OVOS-FALLBACK-1 §6.2 (our choice, src/plugins/README.md: the match bound never throws a yes away)' },
  handlerTimeout: { key: 'orchestrator.handlerTimeoutMs', ms: orchestrator.handlerTimeoutMs, clause: 'OVOS-PIPELINE-1 §8' },
  pollClaimBound: { key: 'commonQuery.pollClaimBoundMs', ms: commonQuery.pollClaimBoundMs, clause: 'OVOS-COMMON-QUERY-1 §6.3' },
  pollWindow: { key: 'commonQuery.pollWindowMs', ms: commonQuery.pollWindowMs, clause: 'OVOS-COMMON-QUERY-1 §6.3, Appendix A' },
  collectionWindow: { key: 'the largest claimant latency_ms + its pong delay (at least commonQuery.collectionAllowanceMs), else commonQuery.collectionInitialMs', ms: commonQuery.collectionInitialMs, clause: 'OVOS-COMMON-QUERY-1 §7.2' },
  settle: { key: 'after the first surviving answer: the largest claimant pong delay, at least commonQuery.collectionAllowanceMs', ms: commonQuery.collectionAllowanceMs, clause: 'OVOS-COMMON-QUERY-1 §7.2 (our choice, src/plugins/README.md: the collection window)' },
  collectionCeiling: { key: 'commonQuery.collectionCeilingMs', ms: commonQuery.collectionCeilingMs, clause: 'OVOS-COMMON-QUERY-1 §7.2, Appendix A' },
};

export const MACHINES: Readonly<Record<string, { readonly machine: AnyStateMachine; readonly source: string }>> = {
  fallback: { machine: fallbackMachine, source: 'machines/fallback/fallback.machine.ts' },
  'common-query': { machine: commonQueryMachine, source: 'machines/common-query/common-query.machine.ts' },
  utterance: { machine: utteranceMachine, source: 'machines/utterance/utterance.machine.ts' },
};

const delayValues = Object.fromEntries(Object.entries(DELAYS).map(([name, d]) => [name, d.ms]));

export function dotOf(name: string): string {
  return toDot(MACHINES[name]!.machine, delayValues);
}

export function markdownOf(name: string): string {
  const { machine, source } = MACHINES[name]!;
  const graph = machineGraph(machine);
  const rows = graph.delays.map((delay) => {
    const d = DELAYS[delay];
    return d === undefined ? `| \`${delay}\` | ? | ? | ? |` : `| \`${delay}\` | ${d.ms} ms | ${d.key} | ${d.clause} |`;
  });
  return [
    `# The ${name} machine`,
    '',
    `Generated from \`${source}\` by \`npm run viz\` — do not edit. The same diagram as SVG: [${name}.machine.svg](${name}.machine.svg).`,
    '',
    '```mermaid',
    toMermaid(machine).trimEnd(),
    '```',
    '',
    ...(rows.length === 0 ? [] : ['Named delays (default values):', '', '| delay | default | set by | clause |', '| --- | --- | --- | --- |', ...rows, '']),
  ].join('\n');
}
