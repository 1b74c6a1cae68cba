/**
 * Filtering and selection, OVOS-COMMON-QUERY-1 §8, as pure functions over the raw responses of one contest.
 * They run at match time with a policy built from the live session and config (§5.1), never from an early-start
 * snapshot, so the caller rebuilds the policy for every match.
 *
 *  - step 1 (with "no answer"): a response without a non-blank `answer`, or without a finite `conf`, cannot win;
 *    one with `conf < minConfidence` is discarded, so `conf === minConfidence` (0.5 by default) survives.
 *  - step 2: a response whose `skill_id` is in `blacklistedSkills` (live `session.blacklisted_skills`) is discarded.
 *  - step 3: a survivor with `conf >= fastWinConfidence` (0.9 by default) is a fast win; `null` disables it. With
 *    several fast-win candidates the ranking below picks among them.
 *  - step 4: highest `conf` wins. Ties ("any deployer-defined heuristic") are broken deterministically: earlier
 *    arrival (lower `order`) first, then `skill_id` by code-unit order — never by locale, never by sort stability.
 *
 * A reranker (§8 step 4) replaces conf ordering among all survivors, fast-win candidates included: fast-win
 * still closes the collection window early (§7.2), but when a reranker is configured its first entry wins. A
 * reranker that throws, rejects, returns nothing, or puts first an entry that is not one of the survivors it was
 * given (same `skill_id`, `order` and `answer`; a recalibrated `conf` is fine) is ignored and conf ordering
 * decides; the outcome says so (`reranked: false`, `rerankerError`).
 *
 * `conf` is taken as reported: range checking belongs to the decoder at the edge, not here.
 */
import type { JsonObject } from '../../src/bus/message.js';

/** One skill's full-answer response (§7.1) as collected; `order` is its arrival index (0, 1, 2 …) in the contest. */
export interface CandidateResponse {
  readonly skill_id: string;
  readonly answer?: string;
  readonly conf?: number;
  readonly receivedAt: number;
  readonly order: number;
  /** Opaque to selection: the reply as a legacy skill sent it (handed back to it if it wins). */
  readonly reply?: JsonObject;
}

export interface SelectionPolicy {
  /** Appendix A: minimum self-confidence (§8 step 1). */
  readonly minConfidence: number;
  /** Appendix A: fast-win threshold (§8 step 3); null switches fast-win off. */
  readonly fastWinConfidence: number | null;
  /** The live `session.blacklisted_skills` (§8 step 2). */
  readonly blacklistedSkills: readonly string[];
}

/** A response that passed §8 steps 1–2: it has an answer and a confidence. */
export interface Survivor {
  readonly skill_id: string;
  readonly answer: string;
  readonly conf: number;
  readonly order: number;
}

/** §8 step 4: returns the survivors best first. Only its first entry is used. */
export type Reranker = (
  utterance: string,
  lang: string,
  survivors: readonly Survivor[],
) => readonly Survivor[] | Promise<readonly Survivor[]>;

export interface RerankedSelection {
  readonly winner: Survivor | null;
  /** True when the reranker's ranking chose the winner; false with no reranker, no survivors, or a fallback. */
  readonly reranked: boolean;
  /** Why the reranker was ignored. Starts with a stable code: RERANKER_THREW, RERANKER_EMPTY or
   *  RERANKER_UNKNOWN_ENTRY; tests assert the code, not the text. */
  readonly rerankerError?: string;
}

/** §8 steps 1–2, in arrival order as given. */
export function survivors(responses: readonly CandidateResponse[], policy: SelectionPolicy): Survivor[] {
  const kept: Survivor[] = [];
  for (const { skill_id, answer, conf, order } of responses) {
    if (answer === undefined || answer.trim() === '') continue;
    if (conf === undefined || !Number.isFinite(conf) || conf < policy.minConfidence) continue;
    if (policy.blacklistedSkills.includes(skill_id)) continue;
    kept.push(Object.freeze({ skill_id, answer, conf, order }));
  }
  return kept;
}

function byRank(a: Survivor, b: Survivor): number {
  if (a.conf !== b.conf) return b.conf - a.conf;
  if (a.order !== b.order) return a.order - b.order;
  if (a.skill_id === b.skill_id) return 0;
  return a.skill_id < b.skill_id ? -1 : 1;
}

/** §8 step 4: conf descending, then earlier arrival, then skill_id ascending. Returns a new array. */
export function rankSurvivors(list: readonly Survivor[]): Survivor[] {
  return [...list].sort(byRank);
}

/** §8 step 3: the best survivor with conf >= fastWinConfidence, or null (also when fast-win is off). */
export function fastWinner(responses: readonly CandidateResponse[], policy: SelectionPolicy): Survivor | null {
  const threshold = policy.fastWinConfidence;
  if (threshold === null) return null;
  const candidates = survivors(responses, policy).filter((survivor) => survivor.conf >= threshold);
  return rankSurvivors(candidates)[0] ?? null;
}

/** §8 without a reranker: a fast win if there is one, else the top of the conf ranking; null when nothing survives. */
export function select(responses: readonly CandidateResponse[], policy: SelectionPolicy): Survivor | null {
  return fastWinner(responses, policy) ?? rankSurvivors(survivors(responses, policy))[0] ?? null;
}

/** Identity of a reranker entry: same response (skill_id, order, answer); conf may have been recalibrated. */
function isSurvivor(entry: unknown, survivor: Survivor): boolean {
  return (
    typeof entry === 'object' &&
    entry !== null &&
    'skill_id' in entry &&
    'order' in entry &&
    'answer' in entry &&
    entry.skill_id === survivor.skill_id &&
    entry.order === survivor.order &&
    entry.answer === survivor.answer
  );
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** §8 with an optional reranker (step 4); see the header for when the reranker is ignored. Never rejects. */
export async function selectWithReranker(
  utterance: string,
  lang: string,
  responses: readonly CandidateResponse[],
  policy: SelectionPolicy,
  reranker?: Reranker,
): Promise<RerankedSelection> {
  if (reranker === undefined) return { winner: select(responses, policy), reranked: false };
  const ranked = rankSurvivors(survivors(responses, policy));
  const fallback = ranked[0];
  if (fallback === undefined) return { winner: null, reranked: false };

  let result: readonly Survivor[];
  try {
    result = await reranker(utterance, lang, [...ranked]);
  } catch (error) {
    return { winner: fallback, reranked: false, rerankerError: `RERANKER_THREW: ${messageOf(error)}` };
  }
  // Typed as Survivor[], but a JavaScript reranker can return anything.
  const entries: unknown = result;
  const first: unknown = Array.isArray(entries) ? entries[0] : undefined;
  if (first === undefined) {
    return { winner: fallback, reranked: false, rerankerError: 'RERANKER_EMPTY: the reranker returned no entries' };
  }
  const winner = ranked.find((survivor) => isSurvivor(first, survivor));
  if (winner === undefined) {
    const named = typeof first === 'object' && first !== null && 'skill_id' in first ? first.skill_id : first;
    return {
      winner: fallback,
      reranked: false,
      rerankerError: `RERANKER_UNKNOWN_ENTRY: ${String(named)} is not one of the survivors`,
    };
  }
  return { winner, reranked: true };
}
