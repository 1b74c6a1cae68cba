/**
 * Diagrams generated from the machines: every committed `.md` and `.svg` in visualizations/ and machines/README.md's embedded
 * fallback diagram match the machines as they are now. Regenerate with `npm run viz`.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { machineGraph, toMermaid } from '../../src/inspect/diagram.js';
import { DELAYS, dotOf, MACHINES, markdownOf } from '../../visualizations/diagrams.js';
import { renderSvg } from '../../visualizations/generate.js';

const read = (file: string): string => readFileSync(new URL(`../../visualizations/${file}`, import.meta.url), 'utf8');

describe('diagrams generated from the machines (run `npm run viz` after changing a machine)', () => {
  it.each(Object.keys(MACHINES))('visualizations/%s.machine.md matches its machine', (name) => {
    expect(read(`${name}.machine.md`)).toBe(markdownOf(name));
  });

  // The pinned WebAssembly Graphviz draws the same bytes on every machine: no system Graphviz, nothing skipped.
  it.each(Object.keys(MACHINES))('visualizations/%s.machine.svg is, byte for byte, what Graphviz draws from the machine as it is now', async (name) => {
    expect(read(`${name}.machine.svg`)).toBe(await renderSvg(dotOf(name)));
  });

  it.each(Object.keys(MACHINES))('visualizations/%s.machine.svg names every state\'s node or cluster after its DOT name (what the inspector highlights)', (name) => {
    const svg = read(`${name}.machine.svg`);
    const titles = (kind: string): string[] => [...svg.matchAll(new RegExp(`<g id="[^"]+" class="${kind}">\\n<title>([^<]+)</title>`, 'g'))].map((m) => m[1]!);
    const graph = machineGraph(MACHINES[name]!.machine);
    expect(titles('node')).toEqual(expect.arrayContaining(graph.states.filter((st) => !st.compound).map((st) => st.name)));
    expect(titles('cluster').sort()).toEqual(graph.states.filter((st) => st.compound).map((st) => `cluster_${st.name}`).sort());
  });

  it('machines/README.md embeds the fallback diagram exactly as generated', () => {
    const readme = readFileSync(new URL('../../machines/README.md', import.meta.url), 'utf8');
    const section = readme.slice(readme.indexOf('## The fallback contest'));
    const block = section.slice(section.indexOf('```mermaid\n') + '```mermaid\n'.length, section.indexOf('\n```', section.indexOf('```mermaid\n')) + 1);
    expect(block).toBe(toMermaid(MACHINES['fallback']!.machine));
  });

  it.each(Object.keys(MACHINES))('every named delay of %s has its default value and clause in the delay table', (name) => {
    for (const delay of machineGraph(MACHINES[name]!.machine).delays) expect(DELAYS[delay], delay).toBeDefined();
  });

  it('renders every named delay, always edge and guard of the fallback contest (OVOS-FALLBACK-1 §6.1)', () => {
    const text = toMermaid(MACHINES['fallback']!.machine);
    expect(text).toContain('after pingTimeout [hasNext]');
    expect(text).toContain('always [poolEmpty]');
    expect(text).toContain('PONG [fromAwaitedSkill && willing]');
    expect(text).toContain('PONG / reportIgnored (stays)');
    expect(dotOf('fallback')).toContain('after pingTimeout (500 ms) [hasNext]');
  });

  it('renders the common-query windows as named delays with their defaults (OVOS-COMMON-QUERY-1 §6.3, §7.2)', () => {
    const md = markdownOf('common-query');
    for (const delay of ['after pollWindow', 'after pollClaimBound', 'after collectionWindow', 'after collectionCeiling']) expect(md).toContain(delay);
    expect(md).toContain('| `collectionCeiling` | 5000 ms | commonQuery.collectionCeilingMs | OVOS-COMMON-QUERY-1 §7.2, Appendix A |');
    expect(dotOf('common-query')).toContain('lhead=cluster_commonQuery_polling');
  });
});
