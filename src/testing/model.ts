/**
 * The timing model of the harness: what a deployment MUST do with one question, computed from the spec text and the
 * choices this project documents where the spec leaves one (src/plugins/README.md, "Decisions the specs leave to us") — never from
 * the machines. Pure: a config, a roster, the gate's verdict in; the expected outcome and the reasoning trail (each
 * step naming its clause) out.
 *
 * Time semantics (the same as the system's, documented in src/plugins/README.md): a deadline at T fires when the clock reaches
 * T, before a message a skill sends at T — so a pong at exactly the ping timeout is late. A skill's connection that
 * closes at d (`disconnectAtMs`) closes before anything else due at d, and the skill sends nothing from d on.
 */
import type { Config } from '../config/defaults.js';
import { stageBoundMs } from '../plugins/fallback/stage-bound.js';
import type { CommonQuerySkillScript, FallbackSkillScript, TimingScenario } from './scenario.js';

type CollectionConfig = Pick<Config['commonQuery'], 'collectionAllowanceMs' | 'collectionInitialMs' | 'collectionCeilingMs'>;

/** §7.2 (src/plugins/README.md, the collection window): the bus's round trip to one claimant — its pong's delay, at least the allowance. */
const roundTripTo = (cq: CollectionConfig, claimant: CommonQuerySkillScript): number => Math.max(cq.collectionAllowanceMs, claimant.pongAfterMs ?? 0);

/** §7.2 settle: the round trip after the first surviving answer — the largest claimant's, at least the allowance. */
export function settleOf(cq: CollectionConfig, claims: readonly CommonQuerySkillScript[]): number {
  return Math.max(cq.collectionAllowanceMs, ...claims.map((c) => roundTripTo(cq, c)));
}

/**
 * §7.2 initial window: a declared latency_ms is the skill's own time; the answer reaches the plugin a bus round trip
 * later. The largest latency_ms + round trip (omitted → the fixed initial window), clamped to the ceiling.
 */
export function initialWindowOf(cq: CollectionConfig, claims: readonly CommonQuerySkillScript[]): number {
  const window = Math.max(0, ...claims.map((c) => (c.latencyMs === undefined ? cq.collectionInitialMs : c.latencyMs + roundTripTo(cq, c))));
  return Math.min(window, cq.collectionCeilingMs);
}

/**
 * Questions the harness asks before the measured one so the roster is what a running deployment has learnt (after the
 * `commonQuery.warmupPolls` questions of its cold start, which teach no streak).
 */
export const WARM_UPS = 4;

export interface Expected {
  /** The stage that answered (`fallback_*`, the common-query pipeline id) or `unmatched`. */
  readonly decidedBy: string;
  /** The winning skill: the fallback skill, or the common-query skill whose answer is spoken; null when unmatched. */
  readonly skill_id: string | null;
  /** ms after the utterance: `ovos.intent.matched` or `ovos.intent.unmatched`. */
  readonly decidedAt: number;
  /**
   * A fallback winner's handler: complete, failed (its own error), error at the handler timeout, or error when its
   * connection closed.
   */
  readonly handler: 'complete' | 'error' | 'timeout' | 'disconnected' | null;
  /** ms after the utterance: the one `ovos.utterance.handled`. */
  readonly handledAt: number;
  /** Why, step by step, each with its clause. */
  readonly trail: readonly string[];
}

interface StageEnd {
  readonly winner: string | null;
  readonly at: number;
}

const FALLBACK_DEFAULTS = { willing: true, pongAfterMs: 0, handlerMs: 0 } as const;

function effectivePriority(config: Config, skill: FallbackSkillScript): number {
  return config.fallback.priorities[skill.skill_id] ?? skill.priority;
}

/** OVOS-FALLBACK-1 §5: the stage's pool, by priority then skill_id (our documented tie-break). */
export function fallbackPool(config: Config, stage: string, skills: readonly FallbackSkillScript[]): FallbackSkillScript[] {
  const range = config.fallback.stages[stage];
  if (range === undefined) return [];
  const { mode, whitelist, blacklist } = config.fallback;
  const ranges = Object.values(config.fallback.stages);
  const covers = ([min, max]: readonly [number, number], p: number): boolean => p >= min && p <= max;
  // src/plugins/README.md: a priority no stage covers is asked by the nearest stage (at equal distance, the later one).
  const nearest = (p: number): readonly [number, number] | undefined =>
    [...ranges].sort((a, b) => Math.max(a[0] - p, p - a[1]) - Math.max(b[0] - p, p - b[1]) || b[1] - a[1])[0];
  return skills
    .filter((s) => {
      const p = effectivePriority(config, s);
      const near = nearest(p);
      const asks = covers(range, p) || (!ranges.some((r) => covers(r, p)) && near !== undefined && near[0] === range[0] && near[1] === range[1]);
      if (!asks) return false;
      if (mode === 'whitelist' && !whitelist.includes(s.skill_id)) return false;
      if (mode === 'blacklist' && blacklist.includes(s.skill_id)) return false;
      return true;
    })
    .sort((a, b) => effectivePriority(config, a) - effectivePriority(config, b) || (a.skill_id < b.skill_id ? -1 : a.skill_id > b.skill_id ? 1 : 0));
}

/** Where each fallback skill's turn began (ms after the utterance), and when its stage began. */
export type FallbackTurns = Map<string, { readonly stageStart: number; readonly turn: number }>;

/** Instants of the expected run that boundaries are placed against. */
export interface Marks {
  readonly turns: FallbackTurns;
  /** The common-query contest's poll, when one ran. */
  poll?: PollSpan;
}

/**
 * OVOS-FALLBACK-1 §6.1–§6.2: skills asked one at a time in pool order; a pong before the ping timeout decides
 * (willing wins, a decline moves on at once), silence moves on at the timeout. PIPELINE-1 §4.4: the stage decides at
 * its bound, `stageBoundMs(matchTimeoutMs)` after it starts (a bound at the same instant as a timeout comes first: it
 * was armed first): the skills still silent count as can_handle false, and the first skill from the awaited one on, in
 * pool order, that has already said yes wins (src/plugins/README.md "The match bound never throws a yes away"); with none, None.
 *
 * Legacy skills (src/plugins/README.md "Legacy fallback skills") are all asked by the utterance's one broadcast — at
 * its arrival (`broadcast.at` 0, set by `evaluate`), else when the first stage with a legacy skill in its pool starts —
 * so a legacy skill's pong is due `pongAfterMs` after the broadcast, not after its turn, and its ping timeout runs from
 * the broadcast too (§6.1: from its ping); the order of decision stays the pool's: a pong within that timeout that
 * came before the skill's turn decides at its turn, one that comes during its turn decides when it comes, and a silent
 * one is passed when the timeout ends, or at once at its turn if it already has.
 */
function fallbackStage(config: Config, stage: string, start: number, skills: readonly FallbackSkillScript[], broadcast: { at?: number }, trail: string[], { turns }: Marks): StageEnd {
  const T = config.fallback.pingTimeoutMs;
  const cut = start + stageBoundMs(config.orchestrator.matchTimeoutMs);
  let t = start;
  const pool = fallbackPool(config, stage, skills).filter((s) => spoken(config, s));
  if (broadcast.at === undefined && pool.some((s) => s.dialect === 'legacy' && (s.disconnectAtMs ?? Infinity) > start)) {
    broadcast.at = start;
    trail.push(`${stage}: the utterance's one broadcast ovos.skills.fallback.ping at ${start} ms asks every legacy skill at once (src/plugins/README.md, Legacy fallback skills)`);
  }
  /** When the legacy skills were asked. */
  const B = broadcast.at ?? start;
  /** At the bound: the first skill from `from` on that has already answered the broadcast with yes, still connected. */
  const atBound = (from: number, awaited: string | undefined): StageEnd => {
    for (const skill of pool.slice(from)) {
      const pong = skill.pongAfterMs ?? FALLBACK_DEFAULTS.pongAfterMs;
      if (skill.dialect !== 'legacy' || pong === 'never' || (skill.disconnectAtMs ?? Infinity) <= cut) continue;
      if (B + pong >= cut || B + pong >= B + T || !(skill.willing ?? FALLBACK_DEFAULTS.willing)) continue;
      trail.push(`${stage}: the stage bound at ${cut} ms${awaited === undefined ? '' : ` while ${awaited} is awaited`}: ${skill.skill_id} had said yes at ${B + pong} ms — the first willing in pool order, the silent ones ahead count as can_handle false (OVOS-PIPELINE-1 §4.4, OVOS-FALLBACK-1 §6.2)`);
      return { winner: skill.skill_id, at: cut };
    }
    trail.push(`${stage}: the stage bound cuts the stage at ${cut} ms${awaited === undefined ? '' : ` while ${awaited} is awaited`}, nobody has said yes → None (OVOS-PIPELINE-1 §4.4)`);
    return { winner: null, at: cut };
  };
  for (const [index, skill] of pool.entries()) {
    if (t >= cut) return atBound(index, undefined);
    const gone = skill.disconnectAtMs ?? Infinity;
    if (gone <= t) {
      // src/plugins/README.md "Dead skills": a skill whose connection closed is in no pool (away) — not asked.
      trail.push(`${stage}: ${skill.skill_id}'s connection closed at ${gone} ms, before its turn — not asked (src/plugins/README.md, Dead skills)`);
      continue;
    }
    turns.set(skill.skill_id, { stageStart: start, turn: t });
    const pong = skill.pongAfterMs ?? FALLBACK_DEFAULTS.pongAfterMs;
    const legacy = skill.dialect === 'legacy';
    const sent = pong === 'never' ? Infinity : (legacy ? B : t) + pong;
    const arrives = Math.max(sent, t);
    const deadline = legacy ? Math.max(t, B + T) : t + T;
    if (sent < gone && sent < (legacy ? B + T : deadline) && arrives < cut) {
      const early = sent < t ? `, answered the broadcast at ${sent} ms` : '';
      if (skill.willing ?? FALLBACK_DEFAULTS.willing) {
        trail.push(`${stage}: ${skill.skill_id} willing at ${arrives} ms${early}, before its ping timeout ${deadline} ms — the winner (OVOS-FALLBACK-1 §6.2)`);
        return { winner: skill.skill_id, at: arrives };
      }
      trail.push(`${stage}: ${skill.skill_id} declines at ${arrives} ms${early} — the next skill is asked at once (§6.1)`);
      t = arrives;
      continue;
    }
    if (gone <= deadline && gone <= cut) {
      trail.push(`${stage}: ${skill.skill_id}'s connection closes at ${gone} ms while it is awaited — the next skill is asked at once (§6.1; src/plugins/README.md, Dead skills)`);
      t = gone;
      continue;
    }
    if (cut <= deadline) return atBound(index + 1, skill.skill_id);
    trail.push(
      legacy && deadline === t && t > B + T
        ? `${stage}: ${skill.skill_id} silent since the broadcast, its ping timeout ${B + T} ms passed before its turn — passed at once (§6.1)`
        : `${stage}: ${skill.skill_id} silent until its ping timeout ${deadline} ms — treated as can_handle false (§6.1)`,
    );
    t = deadline;
  }
  if (t >= cut) return atBound(pool.length, undefined);
  trail.push(`${stage}: pool exhausted at ${t} ms → None (§6.2)`);
  return { winner: null, at: t };
}

interface Response {
  readonly skill_id: string;
  readonly at: number;
  readonly answer: string | null;
  readonly conf: number;
  /** Not a response: the claimant's connection closed (it counts as declining). */
  readonly gone?: boolean;
  /** When its round trip (the settle) starts counting, if it is the first survivor: its arrival, unless said. */
  readonly settleFrom?: number;
}

/** When a common-query contest polled: from its start to its poll's close (null when the poll never ran). */
export interface PollSpan {
  readonly start: number;
  readonly close: number;
}

const isLegacy = (s: { readonly dialect?: 'spec' | 'legacy' }): boolean => s.dialect === 'legacy';
/** A skill whose dialect the deployment does not speak never reaches the plugins (src/config/README.md: dialects). */
const spoken = (config: Config, s: { readonly dialect?: 'spec' | 'legacy' }): boolean => (isLegacy(s) ? config.dialects.legacy : config.dialects.spec);

/**
 * OVOS-COMMON-QUERY-1 §6–§8 for a contest that starts at `c0` and whose `match` joins at `join` (early start: the
 * contest runs from the utterance's arrival, and survival / fast win are judged only once `match` has joined, §5.1).
 *
 * Legacy skills (src/plugins/README.md "Legacy common-query skills"): announced before they are asked, so on the roster; their
 * `searching: true` is a claim made without a request, and their answer follows unasked — kept when it comes while
 * the poll is still open (a fast win under the live session then ends the contest at once); a `conf` above 1 competes
 * as 1; no `latency_ms`, so the fixed initial window; they reply to every question, so once they have answered in
 * time they are known to answer every poll; the round trip after an answer that came during the poll counts from the
 * poll's close (when `match` has joined by then; otherwise from its arrival, which the join tells the contest).
 */
function commonQueryContest(config: Config, c0: number, join: number, skills: readonly CommonQuerySkillScript[], trail: string[], marks: Marks): { winner: Response | null; at: number } {
  const cq = config.commonQuery;
  const bound = c0 + Math.min(cq.pollClaimBoundMs, cq.pollWindowMs);
  const ceiling = c0 + cq.pollWindowMs;
  const pongOf = (s: CommonQuerySkillScript): 'claim' | 'decline' | 'silent' => s.pong ?? 'claim';
  // The roster after the warm-ups (src/plugins/README.md "Common-query poll"): every skill that pongs is known, even late (a legacy
  // skill announces itself: known even when it never replies); one that declines (legacy: any that replies) is known
  // to answer every poll once it has answered the last 3 polls it was known for in time — before the claim bound,
  // since until then nobody waits for it past the bound; one that claims late is waited for from its first late
  // claim on. A skill whose connection closed before the contest began has left the roster.
  const goneAt = (s: CommonQuerySkillScript): number => s.disconnectAtMs ?? Infinity;
  const present = skills.filter((s) => spoken(config, s) && goneAt(s) > c0);
  const known = present.filter((s) => isLegacy(s) || pongOf(s) !== 'silent').map((s) => s.skill_id);
  // A claim that came at or after the claim bound but before the ceiling (in a warm-up) makes a skill known to claim
  // late: waited for up to the ceiling too (src/plugins/README.md "Common-query poll").
  const claimsLate = (s: CommonQuerySkillScript): boolean => pongOf(s) === 'claim' && (s.pongAfterMs ?? 0) >= bound - c0 && (s.pongAfterMs ?? 0) < ceiling - c0;
  const answering = present
    .filter((s) => ((isLegacy(s) ? pongOf(s) !== 'silent' : pongOf(s) === 'decline') && (s.pongAfterMs ?? 0) < bound - c0) || claimsLate(s))
    .map((s) => s.skill_id);
  // With only the legacy dialect spoken no unknown skill can claim: rule 1 needs no claim in hand (src/plugins/README.md).
  const rosterComplete = !config.dialects.spec;
  /** A claimant's answer as the plugin gets it; a legacy one's counts from the question and follows its claim. */
  const answerAt = (c: CommonQuerySkillScript, P: number): number =>
    c.answerAfterMs === 'never' ? Infinity : isLegacy(c) ? c0 + Math.max(c.answerAfterMs ?? 0, c.pongAfterMs ?? 0) : P + (c.answerAfterMs ?? 0);
  const responseOf = (c: CommonQuerySkillScript, at: number): Response => ({
    skill_id: c.skill_id,
    at,
    answer: c.answer === undefined ? `${c.skill_id} answer` : c.answer,
    conf: isLegacy(c) ? Math.min(1, c.conf ?? 0.7) : (c.conf ?? 0.7),
  });
  const survives = (r: Response): boolean => r.answer !== null && r.conf >= cq.minConfidence;
  const fast = (r: Response): boolean => survives(r) && cq.fastWinConfidence !== null && r.conf >= cq.fastWinConfidence;
  const select = (rs: readonly Response[]): Response | null => {
    const alive = rs.filter(survives);
    const quick = alive.find(fast);
    if (quick !== undefined) return quick;
    let best: Response | null = null;
    for (const r of alive) if (best === null || r.conf > best.conf) best = r;
    return best;
  };
  // A legacy skill speaks its answer itself: gone by the time `match` selects (the contest's end, or the join when
  // that is later), its answer cannot win (src/plugins/README.md "Legacy common-query skills").
  const dispatchable = (r: Response, at: number): boolean => {
    const skill = present.find((s) => s.skill_id === r.skill_id);
    return skill === undefined || !isLegacy(skill) || goneAt(skill) > Math.max(at, join);
  };
  const decided = (why: string, at: number, inHand: readonly Response[]): { winner: Response | null; at: number } => {
    const winner = select(inHand.filter((r) => dispatchable(r, at)));
    trail.push(`collection: closed at ${at} ms — ${why} (§7.2); winner ${winner === null ? 'none' : `${winner.skill_id} (${winner.conf})`} (§8)`);
    return { winner, at };
  };
  // What the contest hears, in order: disconnects (a closed connection counts as heard from — src/plugins/README.md "Common-query
  // poll"), pongs (none at or after the skill's disconnect), then legacy answers (after their claim); at one ms in
  // that order.
  // The join (`match` with the live session) comes last at its ms.
  type Heard = { readonly at: number; readonly skill: CommonQuerySkillScript; readonly kind: 'gone' | 'pong' | 'answer' };
  type PollEvent = Heard | { readonly at: number; readonly kind: 'join' };
  const rank = { gone: 0, pong: 1, answer: 2, join: 3 } as const;
  /** Disconnects and pongs: what decides whether a skill is still outstanding. */
  const replies: Heard[] = [
    ...present.filter((s) => goneAt(s) < Infinity).map((s) => ({ at: goneAt(s), skill: s, kind: 'gone' as const })),
    ...present
      .filter((s) => pongOf(s) !== 'silent' && c0 + (s.pongAfterMs ?? 0) < goneAt(s))
      .map((s) => ({ at: c0 + (s.pongAfterMs ?? 0), skill: s, kind: 'pong' as const })),
  ];
  const polling: PollEvent[] = [...replies, { at: join, kind: 'join' }];
  for (const s of present) if (isLegacy(s) && pongOf(s) === 'claim' && answerAt(s, c0) < goneAt(s)) polling.push({ at: answerAt(s, c0), skill: s, kind: 'answer' });
  polling.sort((a, b) => a.at - b.at || rank[a.kind] - rank[b.kind]);
  const heard = new Set<string>();
  const departed = new Set<string>();
  const claims: CommonQuerySkillScript[] = [];
  /** Legacy answers that came while the poll was open. */
  const early: Response[] = [];
  // A claim from a skill that is gone will never be answered: it is not a claim in hand.
  const liveClaims = (): number => claims.filter((c) => !departed.has(c.skill_id)).length;
  const outstandingAt = (id: string, at: number): boolean => !replies.some((e) => e.skill.skill_id === id && (e.kind === 'gone' ? e.at <= at : e.at < at));
  const answeringOutstandingAt = (at: number): boolean => answering.some((id) => outstandingAt(id, at));
  // Before the claim bound: a message before it, a disconnect at it or before (its timer was armed first).
  const beforeBound = (e: PollEvent): boolean => (e.kind === 'gone' ? e.at <= bound : e.at < bound);
  let closeAt: number | null = null;
  for (const e of polling) {
    if (e.kind === 'gone' ? e.at > ceiling : e.at >= ceiling) break;
    if (!beforeBound(e) && !answeringOutstandingAt(bound)) break;
    if (e.kind === 'join') {
      // src/plugins/README.md "Fast win": judged once `match` has joined — at once, the poll still open.
      if (early.some(fast)) {
        marks.poll = { start: c0, close: e.at };
        return decided('fast win in hand when match joined (§8 step 3)', e.at, early);
      }
      continue;
    }
    if (e.kind === 'answer') {
      const r = responseOf(e.skill, e.at);
      early.push(r);
      trail.push(`poll: ${e.skill.skill_id} answered unasked at ${e.at} ms, before the poll closed — kept (src/plugins/README.md, Legacy common-query skills)`);
      if (join <= e.at && fast(r)) {
        marks.poll = { start: c0, close: e.at };
        return decided('fast win during the poll (§8 step 3)', e.at, early);
      }
      continue;
    }
    heard.add(e.skill.skill_id);
    if (e.kind === 'gone') departed.add(e.skill.skill_id);
    else if (pongOf(e.skill) === 'claim') claims.push(e.skill);
    if (beforeBound(e)) {
      if ((liveClaims() > 0 || rosterComplete) && known.every((id) => heard.has(id))) {
        closeAt = e.at;
        trail.push(`poll: ${liveClaims() > 0 ? 'a claim in hand and ' : ''}every known skill heard${e.kind === 'gone' ? ' or gone' : ''} at ${e.at} ms — closed at once (§6.3 rule 1)`);
        break;
      }
    } else if (answering.every((id) => heard.has(id))) {
      closeAt = e.at;
      trail.push(`poll: the last skill known to answer every poll ${e.kind === 'gone' ? 'gone' : 'heard'} at ${e.at} ms — closed (§6.3 rule 2)`);
      break;
    }
  }
  if (closeAt === null) {
    closeAt = answeringOutstandingAt(bound) ? ceiling : bound;
    trail.push(`poll: closed at ${closeAt} ms (§6.3 ${closeAt === ceiling ? 'ceiling' : 'claim bound'})`);
  }
  const P = closeAt;
  marks.poll = { start: c0, close: P };
  for (const id of departed) trail.push(`poll: ${id}'s connection closed — it counts as heard from (src/plugins/README.md, Common-query poll)`);
  if (claims.length === 0) {
    trail.push('poll: no claimant → None (§9)');
    return { winner: null, at: P };
  }
  // A legacy answer in hand from the poll starts its round trip at the poll's close when `match` has joined by then.
  const inHand: Response[] = early.map((r) => ({ ...r, settleFrom: join <= P ? P : r.at }));
  const settledAtClose = claims.every((c) => departed.has(c.skill_id) || inHand.some((r) => r.skill_id === c.skill_id));
  if (settledAtClose) {
    if (liveClaims() === 0 && inHand.length === 0) {
      trail.push('poll: every claimant is gone → None (§7.2: a gone claimant counts as declining; §9)');
      return { winner: null, at: P };
    }
    return decided('every claimant answered during the poll or is gone', P, inHand);
  }
  if (join <= P && inHand.some(fast)) return decided('fast win in hand as the poll closed (§8 step 3)', P, inHand);
  const windowEnd = P + initialWindowOf(cq, claims);
  const hardEnd = P + cq.collectionCeilingMs;
  trail.push(`collection: requests at ${P} ms${claims.some(isLegacy) ? ' (none to legacy claimants: their answers follow unasked)' : ''}; initial window ends ${windowEnd} ms, ceiling ${hardEnd} ms (§7.2)`);
  // A claimant's answer, unless its connection closes first: then it counts as declining at that moment (§7.2,
  // src/plugins/README.md "Common-query poll"), a response without an answer.
  const arrivals: Response[] = claims
    .filter((c) => !inHand.some((r) => r.skill_id === c.skill_id))
    .map((c): Response | null => {
      const gone = Math.max(goneAt(c), P);
      const at = answerAt(c, P);
      if (at < gone) return responseOf(c, at);
      return gone < Infinity ? { skill_id: c.skill_id, at: gone, answer: null, conf: 0, gone: true } : null;
    })
    .filter((r): r is Response => r !== null && r.at < hardEnd)
    .sort((a, b) => a.at - b.at || Number(b.gone === true) - Number(a.gone === true));
  for (const r of arrivals) if (r.gone === true) trail.push(`collection: ${r.skill_id}'s connection closed at ${r.at} ms before it answered — it counts as declining (§7.2)`);
  // §7.2 settle: the window stays open one round trip after the first surviving answer, counted from its arrival
  // (one that came before the join started its round trip when it arrived).
  const roundTrip = settleOf(cq, claims);
  const joinAt = Math.max(join, P);
  let settleEnd: number | null = null;
  const arm = (t: number): void => {
    const first = inHand.find(survives);
    if (settleEnd === null && first !== undefined && join <= t) {
      settleEnd = Math.max((first.settleFrom ?? first.at) + roundTrip, t);
      trail.push(`collection: first surviving answer ${first.skill_id} (${first.at} ms) — the window stays open until ${settleEnd} ms at least (§7.2 settle)`);
    }
  };
  const closes = (t: number): boolean => t >= windowEnd && settleEnd !== null && t >= settleEnd;
  arm(P);
  // Instants at which the collection may close: each arrival, the window's end, the join, the settle's end.
  let t = P - 1;
  for (;;) {
    const next = Math.min(...[...arrivals.map((r) => r.at), windowEnd, joinAt, settleEnd ?? Infinity].filter((x) => x > t));
    if (!(next < hardEnd)) break;
    t = next;
    // At one instant: the timers first (window, settle), then what arrives (a bus round trip), then the join.
    if (closes(t)) return decided('the window and the round trip since the first survivor have both run out', t, inHand);
    for (const r of arrivals.filter((a) => a.at === t)) {
      inHand.push(r);
      if (join <= t && fast(r)) return decided('fast win (§8 step 3)', t, inHand);
      if (inHand.length === claims.length) return decided('every claimant responded', t, inHand);
      arm(t);
      if (closes(t)) return decided('window passed and a survivor arrived, no round trip to wait', t, inHand);
    }
    if (t === joinAt) {
      if (inHand.some(fast)) return decided('fast win on join', t, inHand);
      arm(t);
      if (closes(t)) return decided('window passed, survivor in hand on join, its round trip run', t, inHand);
    }
  }
  return decided('ceiling', hardEnd, inHand);
}

/** The expected outcome of `scenario` on `config`, the gate's verdict given. */
export function expectedOutcome(config: Config, scenario: TimingScenario, gateAccepts: boolean): Expected {
  return evaluate(config, scenario, gateAccepts, { turns: new Map() });
}

/** When each fallback skill's turn came and when the common-query poll ran, in the expected run. */
export function expectedMarks(config: Config, scenario: TimingScenario, gateAccepts: boolean): Marks {
  const marks: Marks = { turns: new Map() };
  evaluate(config, scenario, gateAccepts, marks);
  return marks;
}

function evaluate(config: Config, scenario: TimingScenario, gateAccepts: boolean, marks: Marks): Expected {
  const trail: string[] = [];
  const fallbackSkills = scenario.skills.filter((s): s is FallbackSkillScript => s.kind === 'fallback');
  const cqSkills = scenario.skills.filter((s): s is CommonQuerySkillScript => s.kind === 'common_query');
  const cqId = config.commonQuery.pipelineId;
  const cqIndex = config.pipeline.indexOf(cqId);
  let t = 0;
  // The utterance's one broadcast to the legacy fallback skills: at its arrival with fallback.earlyStart when a fallback
  // stage is in the pipeline and a legacy skill is there to answer it, else when the first stage that has one starts.
  const broadcast: { at?: number } = {};
  const fallbackStages = Object.keys(config.fallback.stages);
  const legacyHere = fallbackSkills.filter((s) => isLegacy(s) && spoken(config, s) && (s.disconnectAtMs ?? Infinity) > 0);
  if (config.fallback.earlyStart && config.pipeline.some((id) => fallbackStages.includes(id)) && fallbackStages.some((id) => fallbackPool(config, id, legacyHere).length > 0)) {
    broadcast.at = 0;
    trail.push('the utterance\'s one broadcast ovos.skills.fallback.ping at its arrival (0 ms) asks every legacy fallback skill at once, for every fallback stage (fallback.earlyStart; src/plugins/README.md, Legacy fallback skills)');
  }
  for (const [index, stage] of config.pipeline.entries()) {
    if (stage === cqId) {
      if (!gateAccepts) {
        trail.push(`${stage}: the gate rejects the utterance — no ping, the stage declines (§4.1)`);
        continue;
      }
      const c0 = config.commonQuery.earlyStart && index === cqIndex ? 0 : t;
      const result = commonQueryContest(config, c0, t, cqSkills, trail, marks);
      const end = Math.max(result.at, t);
      const cut = t + config.orchestrator.matchTimeoutMs;
      if (end >= cut) {
        trail.push(`${stage}: cut by the match bound at ${cut} ms (OVOS-PIPELINE-1 §4.4)`);
        t = cut;
        continue;
      }
      if (result.winner !== null) {
        const winner = cqSkills.find((c) => c.skill_id === result.winner?.skill_id);
        trail.push(
          winner !== undefined && isLegacy(winner)
            ? `${stage}: answered at ${end} ms; ${winner.skill_id} is activated and sent ${winner.classic === true ? `the bare question:action naming it (a classic CommonQuerySkill; every classic skill hears it)` : `question:action.${winner.skill_id}`} — it speaks "${result.winner.answer}" and sends the utterance's ovos.utterance.handled (src/plugins/README.md, Legacy common-query skills)`
            : `${stage}: answered at ${end} ms; the handler speaks "${result.winner.answer}" (§9, §10)`,
        );
        // A legacy winner runs its own handler (at once here: the skills file gives it no length).
        return { decidedBy: stage, skill_id: result.winner.skill_id, decidedAt: end, handler: winner !== undefined && isLegacy(winner) ? 'complete' : null, handledAt: end, trail };
      }
      t = end;
      continue;
    }
    if (config.fallback.stages[stage] === undefined) continue;
    const result = fallbackStage(config, stage, t, fallbackSkills, broadcast, trail, marks);
    t = result.at;
    if (result.winner !== null) {
      const skill = fallbackSkills.find((s) => s.skill_id === result.winner)!;
      const handlerMs = skill.handlerMs ?? FALLBACK_DEFAULTS.handlerMs;
      const H = config.orchestrator.handlerTimeoutMs;
      const completes = handlerMs === 'never' || handlerMs >= H ? Infinity : t + handlerMs;
      const gone = skill.disconnectAtMs ?? Infinity;
      if (gone <= t + H && gone <= completes) {
        trail.push(`${skill.skill_id}: its connection closes at ${gone} ms before its handler completed — ovos.intent.handler.error (SkillDisconnected) at once (OVOS-PIPELINE-1 §8; src/plugins/README.md, Dead skills)`);
        return { decidedBy: stage, skill_id: skill.skill_id, decidedAt: t, handler: 'disconnected', handledAt: gone, trail };
      }
      const timedOut = completes === Infinity;
      if (!timedOut && skill.handlerFails === true) {
        trail.push(
          `${skill.skill_id}: handler fails at ${completes} ms — ${skill.dialect === 'legacy' ? '.response {result: false}, no handled of its own: ' : 'mycroft.skill.handler.error: '}ovos.intent.handler.error and our ovos.utterance.handled at once (OVOS-PIPELINE-1 §6, §8)`,
        );
        return { decidedBy: stage, skill_id: skill.skill_id, decidedAt: t, handler: 'error', handledAt: completes, trail };
      }
      trail.push(
        timedOut
          ? `${skill.skill_id}: handler runs past the handler timeout — ovos.intent.handler.error at ${t + H} ms (OVOS-PIPELINE-1 §8)${skill.dialect === 'legacy' ? ', ovos.skills.fallback.force_timeout, our ovos.utterance.handled' : ''}`
          : skill.dialect === 'legacy'
            ? `${skill.skill_id}: .response {result: true} and the skill's own ovos.utterance.handled at ${completes} ms — the utterance's one (OVOS-PIPELINE-1 §6, §8; src/plugins/README.md, Legacy fallback skills)`
            : `${skill.skill_id}: handler completes at ${completes} ms (OVOS-PIPELINE-1 §8)`,
      );
      return { decidedBy: stage, skill_id: skill.skill_id, decidedAt: t, handler: timedOut ? 'timeout' : 'complete', handledAt: timedOut ? t + H : completes, trail };
    }
  }
  trail.push(`no stage matched → ovos.intent.unmatched at ${t} ms (OVOS-PIPELINE-1 §6)`);
  return { decidedBy: 'unmatched', skill_id: null, decidedAt: t, handler: null, handledAt: t, trail };
}
