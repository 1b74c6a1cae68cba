import { describe, expect, it } from 'vitest';
import {
  fastWinner,
  rankSurvivors,
  select,
  selectWithReranker,
  survivors,
  type CandidateResponse,
  type Reranker,
  type SelectionPolicy,
  type Survivor,
} from '../../../machines/common-query/selection.js';

/** Appendix A defaults, empty denylist. */
const POLICY: SelectionPolicy = { minConfidence: 0.5, fastWinConfidence: 0.9, blacklistedSkills: [] };

/** Responses in arrival order: `order` and `receivedAt` follow the list position. */
function arrived(...list: Array<{ skill_id: string; answer?: string; conf?: number }>): CandidateResponse[] {
  return list.map((response, order) => ({ ...response, order, receivedAt: 1_000 + order * 10 }));
}

const ids = (list: readonly Survivor[]): string[] => list.map((survivor) => survivor.skill_id);

describe('§8 step 1: minimum self-confidence', () => {
  it('§8 step 1: conf below minimum is discarded', () => {
    expect(survivors(arrived({ skill_id: 'a', answer: 'A', conf: 0.49 }), POLICY)).toEqual([]);
  });

  it('§8 step 1: conf exactly at the minimum (0.5) survives', () => {
    expect(survivors(arrived({ skill_id: 'a', answer: 'A', conf: 0.5 }), POLICY)).toEqual([
      { skill_id: 'a', answer: 'A', conf: 0.5, order: 0 },
    ]);
  });

  it('§8 step 1: the minimum comes from the policy', () => {
    const responses = arrived({ skill_id: 'a', answer: 'A', conf: 0.3 });
    expect(survivors(responses, { ...POLICY, minConfidence: 0.2 })).toHaveLength(1);
    expect(survivors(responses, { ...POLICY, minConfidence: 0.4 })).toHaveLength(0);
  });

  it.each([
    ['no answer field (§7.1 decline)', { skill_id: 'a', conf: 0.8 }],
    ['a blank answer', { skill_id: 'a', answer: '  ', conf: 0.8 }],
    ['an answer without conf', { skill_id: 'a', answer: 'A' }],
    ['a NaN conf', { skill_id: 'a', answer: 'A', conf: Number.NaN }],
  ])('§8 step 1: a response with %s cannot survive', (_label, response) => {
    expect(survivors(arrived(response), POLICY)).toEqual([]);
  });

  it('§8 steps 1–2: survivors keep arrival order', () => {
    const responses = arrived(
      { skill_id: 'low', answer: 'L', conf: 0.6 },
      { skill_id: 'none' },
      { skill_id: 'high', answer: 'H', conf: 0.8 },
    );
    expect(survivors(responses, POLICY)).toEqual([
      { skill_id: 'low', answer: 'L', conf: 0.6, order: 0 },
      { skill_id: 'high', answer: 'H', conf: 0.8, order: 2 },
    ]);
  });
});

describe('§8 step 2: denylist', () => {
  it('§8 step 2: a skill in the live session.blacklisted_skills is discarded, whatever its conf', () => {
    const responses = arrived({ skill_id: 'banned', answer: 'B', conf: 1 }, { skill_id: 'ok', answer: 'O', conf: 0.6 });
    const policy = { ...POLICY, blacklistedSkills: ['banned'] };
    expect(ids(survivors(responses, policy))).toEqual(['ok']);
    expect(fastWinner(responses, policy)).toBeNull();
    expect(select(responses, policy)?.skill_id).toBe('ok');
  });
});

describe('§8 step 3: fast-win', () => {
  it('§8 step 3: conf exactly at the fast-win threshold (0.9) is a fast win', () => {
    const responses = arrived({ skill_id: 'a', answer: 'A', conf: 0.7 }, { skill_id: 'b', answer: 'B', conf: 0.9 });
    expect(fastWinner(responses, POLICY)).toEqual({ skill_id: 'b', answer: 'B', conf: 0.9, order: 1 });
  });

  it('§8 step 3: conf just below the threshold is not a fast win', () => {
    expect(fastWinner(arrived({ skill_id: 'a', answer: 'A', conf: 0.89 }), POLICY)).toBeNull();
  });

  it('§8 step 3: fast-win disabled (null) never fires', () => {
    const responses = arrived({ skill_id: 'a', answer: 'A', conf: 1 });
    expect(fastWinner(responses, { ...POLICY, fastWinConfidence: null })).toBeNull();
    expect(select(responses, { ...POLICY, fastWinConfidence: null })?.skill_id).toBe('a');
  });

  it('§8 step 3: among several fast-win candidates the highest conf wins', () => {
    const responses = arrived(
      { skill_id: 'first', answer: 'F', conf: 0.92 },
      { skill_id: 'best', answer: 'B', conf: 0.97 },
      { skill_id: 'third', answer: 'T', conf: 0.95 },
    );
    expect(fastWinner(responses, POLICY)?.skill_id).toBe('best');
  });

  it('§8 step 3: fast-win candidates tied on conf: earlier arrival wins', () => {
    const responses = arrived(
      { skill_id: 'z-early', answer: 'Z', conf: 0.95 },
      { skill_id: 'a-late', answer: 'A', conf: 0.95 },
    );
    expect(fastWinner(responses, POLICY)?.skill_id).toBe('z-early');
  });

  it('§8 step 3: a fast-win candidate must first survive the confidence minimum', () => {
    const policy = { ...POLICY, minConfidence: 0.95, fastWinConfidence: 0.9 };
    expect(fastWinner(arrived({ skill_id: 'a', answer: 'A', conf: 0.92 }), policy)).toBeNull();
  });
});

describe('§8 step 4: selection', () => {
  it('§8 step 4: the highest-conf survivor is selected', () => {
    const responses = arrived(
      { skill_id: 'a', answer: 'A', conf: 0.6 },
      { skill_id: 'b', answer: 'B', conf: 0.8 },
      { skill_id: 'c', answer: 'C', conf: 0.7 },
    );
    expect(select(responses, POLICY)).toEqual({ skill_id: 'b', answer: 'B', conf: 0.8, order: 1 });
  });

  it('§8 step 4: ranking is conf descending', () => {
    const list: Survivor[] = [
      { skill_id: 'a', answer: 'A', conf: 0.6, order: 0 },
      { skill_id: 'b', answer: 'B', conf: 0.8, order: 1 },
      { skill_id: 'c', answer: 'C', conf: 0.7, order: 2 },
    ];
    expect(ids(rankSurvivors(list))).toEqual(['b', 'c', 'a']);
  });

  it('§8 step 4: ties are broken by earlier arrival (lower order)', () => {
    const list: Survivor[] = [
      { skill_id: 'a', answer: 'A', conf: 0.7, order: 3 },
      { skill_id: 'z', answer: 'Z', conf: 0.7, order: 1 },
    ];
    expect(ids(rankSurvivors(list))).toEqual(['z', 'a']);
  });

  it('§8 step 4: ties on conf and arrival are broken by skill_id ascending', () => {
    const list: Survivor[] = [
      { skill_id: 'wiki', answer: 'W', conf: 0.7, order: 0 },
      { skill_id: 'ddg', answer: 'D', conf: 0.7, order: 0 },
      { skill_id: 'Wolfram', answer: 'X', conf: 0.7, order: 0 },
    ];
    // Code-unit order, not locale order: upper case sorts before lower case.
    expect(ids(rankSurvivors(list))).toEqual(['Wolfram', 'ddg', 'wiki']);
  });

  it('§8 step 4: ranking does not depend on input order and does not mutate its input', () => {
    const list: Survivor[] = [
      { skill_id: 'b', answer: 'B', conf: 0.7, order: 1 },
      { skill_id: 'a', answer: 'A', conf: 0.7, order: 1 },
      { skill_id: 'c', answer: 'C', conf: 0.9, order: 2 },
      { skill_id: 'd', answer: 'D', conf: 0.7, order: 0 },
    ];
    const before = [...list];
    const expected = ['c', 'd', 'a', 'b'];
    expect(ids(rankSurvivors(list))).toEqual(expected);
    expect(ids(rankSurvivors([...list].reverse()))).toEqual(expected);
    expect(list).toEqual(before);
  });

  it('§8 / §9: no survivor means no winner', () => {
    expect(select([], POLICY)).toBeNull();
    expect(select(arrived({ skill_id: 'a' }, { skill_id: 'b', answer: 'B', conf: 0.1 }), POLICY)).toBeNull();
  });
});

describe('§8 step 4: reranker', () => {
  const responses = arrived(
    { skill_id: 'wiki', answer: 'W', conf: 0.95 },
    { skill_id: 'ddg', answer: 'D', conf: 0.6 },
    { skill_id: 'declined' },
    { skill_id: 'weak', answer: 'X', conf: 0.2 },
  );

  it('§8 step 4: without a reranker the conf ranking (and fast-win) decides', async () => {
    await expect(selectWithReranker('q', 'en-US', responses, POLICY)).resolves.toEqual({
      winner: { skill_id: 'wiki', answer: 'W', conf: 0.95, order: 0 },
      reranked: false,
    });
  });

  it('§8 step 4: the reranker receives all survivors, ranked by conf, with the utterance and lang', async () => {
    const calls: Array<[string, string, string[]]> = [];
    const reranker: Reranker = (utterance, lang, list) => {
      calls.push([utterance, lang, ids(list)]);
      return list;
    };
    await selectWithReranker('who wrote hamlet', 'en-US', responses, POLICY, reranker);
    expect(calls).toEqual([['who wrote hamlet', 'en-US', ['wiki', 'ddg']]]);
  });

  it("§8 step 4: the reranker's ranking replaces conf order, even over a fast-win candidate", async () => {
    const reranker: Reranker = (_u, _l, list) => [...list].reverse();
    await expect(selectWithReranker('q', 'en', responses, POLICY, reranker)).resolves.toEqual({
      winner: { skill_id: 'ddg', answer: 'D', conf: 0.6, order: 1 },
      reranked: true,
    });
  });

  it('§8 step 4: an async reranker may recalibrate conf; the original survivor wins', async () => {
    const reranker: Reranker = async (_u, _l, list) => list.map((s) => ({ ...s, conf: 1 - s.conf })).reverse();
    const outcome = await selectWithReranker('q', 'en', responses, POLICY, reranker);
    expect(outcome).toEqual({ winner: { skill_id: 'ddg', answer: 'D', conf: 0.6, order: 1 }, reranked: true });
  });

  it('§8 step 4: a throwing reranker falls back to conf ranking', async () => {
    const reranker: Reranker = () => {
      throw new Error('model not loaded');
    };
    const outcome = await selectWithReranker('q', 'en', responses, POLICY, reranker);
    expect(outcome.winner?.skill_id).toBe('wiki');
    expect(outcome.reranked).toBe(false);
    expect(outcome.rerankerError).toMatch(/^RERANKER_THREW\b/);
  });

  it('§8 step 4: a rejecting reranker falls back to conf ranking', async () => {
    const reranker: Reranker = () => Promise.reject(new Error('timeout'));
    const outcome = await selectWithReranker('q', 'en', responses, POLICY, reranker);
    expect(outcome.winner?.skill_id).toBe('wiki');
    expect(outcome.rerankerError).toMatch(/^RERANKER_THREW\b/);
  });

  it('§8 step 4: a reranker that puts first an entry that is not a survivor falls back to conf ranking', async () => {
    const cases: Reranker[] = [
      () => [{ skill_id: 'weak', answer: 'X', conf: 0.99, order: 3 }], // filtered out at step 1
      () => [{ skill_id: 'ddg', answer: 'rewritten answer', conf: 0.6, order: 1 }], // answer changed
      () => [{ skill_id: 'invented', answer: 'I', conf: 1, order: 9 }],
    ];
    for (const reranker of cases) {
      const outcome = await selectWithReranker('q', 'en', responses, POLICY, reranker);
      expect(outcome.winner?.skill_id).toBe('wiki');
      expect(outcome.reranked).toBe(false);
      expect(outcome.rerankerError).toMatch(/^RERANKER_UNKNOWN_ENTRY\b/);
    }
  });

  it('§8 step 4: a reranker that returns nothing falls back to conf ranking', async () => {
    const outcome = await selectWithReranker('q', 'en', responses, POLICY, () => []);
    expect(outcome.winner?.skill_id).toBe('wiki');
    expect(outcome.rerankerError).toMatch(/^RERANKER_EMPTY\b/);
  });

  it('§8 step 4: the reranker is not called when nothing survives', async () => {
    let called = false;
    const reranker: Reranker = (_u, _l, list) => {
      called = true;
      return list;
    };
    const outcome = await selectWithReranker('q', 'en', arrived({ skill_id: 'a' }), POLICY, reranker);
    expect(outcome).toEqual({ winner: null, reranked: false });
    expect(called).toBe(false);
  });

  it('§8 step 2 before step 4: the reranker never sees a denylisted skill', async () => {
    const seen: string[][] = [];
    const reranker: Reranker = (_u, _l, list) => {
      seen.push(ids(list));
      return list;
    };
    await selectWithReranker('q', 'en', responses, { ...POLICY, blacklistedSkills: ['wiki'] }, reranker);
    expect(seen).toEqual([['ddg']]);
  });
});
