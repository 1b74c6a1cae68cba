/**
 * OVOS-COMMON-QUERY-1 §8 edge cases found by mutation testing (npm run test:mutation:pure): answers without a usable
 * conf, and rerankers that return what a JavaScript reranker can return — each ignored with its stable code and a
 * message naming what was wrong, the conf ranking deciding instead.
 */
import { describe, expect, it } from 'vitest';
import { fastWinner, selectWithReranker, survivors, type CandidateResponse, type Reranker, type SelectionPolicy } from '../../../machines/common-query/selection.js';

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

describe('§8 step 3: a fast win is a property of one answer alone', () => {
  // The common-query machine relies on this: it checks each answer for a fast win as it arrives (and all of them when
  // `match` joins), so no fast win can first appear when the poll closes.
  it('fastWinner over a list is non-null exactly when it is for one of its answers alone (2,000 seeded lists and policies)', () => {
    let seed = 7;
    const next = (): number => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
    const pick = <T>(values: readonly T[]): T => values[Math.floor(next() * values.length)]!;
    const ids = ['a', 'b', 'c'];
    let fastWins = 0;
    for (let round = 0; round < 2_000; round++) {
      const policy: SelectionPolicy = {
        minConfidence: pick([0, 0.5, 0.8]),
        fastWinConfidence: pick([null, 0.7, 0.9, 1]),
        blacklistedSkills: pick([[], ['a'], ['b', 'c']]),
      };
      const list = arrived(
        ...Array.from({ length: Math.floor(next() * 4) }, () => ({
          skill_id: pick(ids),
          ...(next() < 0.9 ? { answer: pick(['A', ' ', 'B']) } : {}),
          ...(next() < 0.9 ? { conf: pick([0.4, 0.7, 0.9, 0.95, 1, Number.NaN]) } : {}),
        })),
      );
      const whole = fastWinner(list, policy) !== null;
      if (whole) fastWins++;
      expect(whole).toBe(list.some((response) => fastWinner([response], policy) !== null));
    }
    expect(fastWins).toBeGreaterThan(100); // the property was exercised on both sides
  });
});
