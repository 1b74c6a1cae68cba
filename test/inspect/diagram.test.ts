import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { diagrams } from '../../visualizations/diagrams.js';

describe('diagrams generated from the machines', () => {
  it.each(Object.entries(diagrams()))('visualizations/%s matches its machine (run `npm run diagrams` after changing a machine)', (file, text) => {
    const committed = readFileSync(new URL(`../../visualizations/${file}`, import.meta.url), 'utf8');
    expect(committed).toBe(text);
  });

  it('renders every named delay, always edge and guard of the fallback contest (OVOS-FALLBACK-1 §6.1)', () => {
    const text = diagrams()['fallback.machine.mmd']!;
    expect(text).toContain('after pingTimeout [hasNext]');
    expect(text).toContain('always [poolEmpty]');
    expect(text).toContain('PONG [fromAwaitedSkill && willing]');
  });

  it('renders the common-query windows as named delays (OVOS-COMMON-QUERY-1 §6.3, §7.2)', () => {
    const text = diagrams()['common-query.machine.mmd']!;
    for (const delay of ['after pollWindow', 'after pollClaimBound', 'after collectionWindow', 'after collectionCeiling']) expect(text).toContain(delay);
    expect(text).not.toContain('pollQuiet');
  });
});
