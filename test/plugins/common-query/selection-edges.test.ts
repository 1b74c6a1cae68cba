/**
 * OVOS-COMMON-QUERY-1 §8 edge cases found by mutation testing (npm run test:mutation:pure): answers without a usable
 * conf, and rerankers that return what a JavaScript reranker can return — each ignored with its stable code and a
 * message naming what was wrong, the conf ranking deciding instead.
 */
import { describe, expect, it } from 'vitest';
import { selectWithReranker, survivors, type CandidateResponse, type Reranker, type SelectionPolicy } from '../../../src/plugins/common-query/selection.js';

const POLICY: SelectionPolicy = { minConfidence: 0.5, fastWinConfidence: 0.9, blacklistedSkills: [] };
const arrived = (...list: Array<{ skill_id: string; answer?: string; conf?: number }>): CandidateResponse[] =>
  list.map((response, order) => ({ ...response, order, receivedAt: 1_000 + order * 10 }));

describe('§8 step 1: an answer without a usable conf never survives', () => {
  it.each([
    ['missing', undefined],
    ['NaN', Number.NaN],
    ['Infinity', Number.POSITIVE_INFINITY],
  ])('conf %s → discarded (Appendix B: conf MUST accompany an answer)', (_what, conf) => {
    const list = arrived({ skill_id: 'odd', answer: 'A', ...(conf === undefined ? {} : { conf }) }, { skill_id: 'ok', answer: 'B', conf: 0.6 });
    expect(survivors(list, POLICY).map((s) => s.skill_id)).toEqual(['ok']);
  });
});

describe('§8 step 4: a reranker returning something unusable is ignored with a reason', () => {
  const responses = arrived({ skill_id: 'wiki', answer: 'W', conf: 0.8 }, { skill_id: 'ddg', answer: 'D', conf: 0.6 });

  it('an empty ranking: RERANKER_EMPTY, not reranked, conf order decides', async () => {
    const outcome = await selectWithReranker('q', 'en', responses, POLICY, () => []);
    expect(outcome).toEqual({ winner: expect.objectContaining({ skill_id: 'wiki' }), reranked: false, rerankerError: 'RERANKER_EMPTY: the reranker returned no entries' });
  });

  it('a thrown Error and a thrown string are both reported with their message', async () => {
    const error = await selectWithReranker('q', 'en', responses, POLICY, () => {
      throw new Error('model offline');
    });
    expect(error.rerankerError).toBe('RERANKER_THREW: model offline');
    const text = await selectWithReranker('q', 'en', responses, POLICY, () => {
      throw 'plain text'; // eslint-disable-line no-throw-literal -- a JavaScript reranker may
    });
    expect(text.rerankerError).toBe('RERANKER_THREW: plain text');
  });

  it.each<[string, unknown, string]>([
    ['a skill nobody heard from', { skill_id: 'invented', answer: 'I', conf: 1, order: 9 }, 'invented'],
    ['a bare string', 'wiki', 'wiki'],
    ['a number', 42, '42'],
    ['null', null, 'null'],
    ['an object without order', { skill_id: 'wiki', answer: 'W', conf: 0.8 }, 'wiki'],
    ['an object without answer', { skill_id: 'wiki', conf: 0.8, order: 0 }, 'wiki'],
    ['an object without skill_id', { answer: 'W', conf: 0.8, order: 0 }, '[object Object]'],
    ['the right skill with another arrival', { skill_id: 'ddg', answer: 'D', conf: 0.6, order: 0 }, 'ddg'],
  ])('first entry %s → RERANKER_UNKNOWN_ENTRY naming it; the conf ranking decides', async (_what, first, named) => {
    const reranker = (() => [first]) as unknown as Reranker;
    const outcome = await selectWithReranker('q', 'en', responses, POLICY, reranker);
    expect(outcome.winner?.skill_id).toBe('wiki');
    expect(outcome.reranked).toBe(false);
    expect(outcome.rerankerError).toBe(`RERANKER_UNKNOWN_ENTRY: ${named} is not one of the survivors`);
  });

  it('a usable first entry wins even when it is not the conf leader (reranked: true)', async () => {
    const outcome = await selectWithReranker('q', 'en', responses, POLICY, (_u, _l, list) => [...list].reverse());
    expect(outcome).toEqual({ winner: expect.objectContaining({ skill_id: 'ddg' }), reranked: true });
  });
});
