/**
 * The timing model of the harness: what a deployment MUST do with one question, computed from the spec text and the
 * choices this project documents where the spec leaves one (README "Decisions the specs leave to us") — never from
 * the machines. Pure: a config, a roster, the gate's verdict in; the expected outcome and the reasoning trail (each
 * step naming its clause) out.
 *
 * Time semantics (the same as the system's, documented in the README): a deadline at T fires when the clock reaches
 * T, before a message a skill sends at T — so a pong at exactly the ping timeout is late. A skill's connection that
 * closes at d (`disconnectAtMs`) closes before anything else due at d, and the skill sends nothing from d on.
 */
import type { Config } from '../config/defaults.js';
import type { CommonQuerySkillScript, FallbackSkillScript, TimingScenario } from './scenario.js';

type CollectionConfig = Pick<Config['commonQuery'], 'collectionAllowanceMs' | 'collectionInitialMs' | 'collectionCeilingMs'>;

/** §7.2 (README, the collection window): the bus's round trip to one claimant — its pong's delay, at least the allowance. */
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

/** Questions the harness asks before the measured one so the roster is what a running deployment has learnt. */
export const WARM_UPS = 4;

export interface Expected {
  /** The stage that answered (`fallback_*`, the common-query pipeline id) or `unmatched`. */
  readonly decidedBy: string;
  /** The winning skill: the fallback skill, or the common-query skill whose answer is spoken; null when unmatched. */
  readonly skill_id: string | null;
  /** ms after the utterance: `ovos.intent.matched` or `ovos.intent.unmatched`. */
  readonly decidedAt: number;
  /** A fallback winner's handler: complete, error at the handler timeout, or error when its connection closed. */
  readonly handler: 'complete' | 'timeout' | 'disconnected' | null;
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
  return skills
    .filter((s) => {
      const p = effectivePriority(config, s);
      if (p < range[0] || p > range[1]) return false;
      if (mode === 'whitelist' && !whitelist.includes(s.skill_id)) return false;
      if (mode === 'blacklist' && blacklist.includes(s.skill_id)) return false;
      return true;
    })
    .sort((a, b) => effectivePriority(config, a) - effectivePriority(config, b) || (a.skill_id < b.skill_id ? -1 : a.skill_id > b.skill_id ? 1 : 0));
}

/** Where each fallback skill's turn began (ms after the utterance), and when its stage began. */
export type FallbackTurns = Map<string, { readonly stageStart: number; readonly turn: number }>;

/**
 * OVOS-FALLBACK-1 §6.1–§6.2: skills asked one at a time in pool order; a pong before the ping timeout decides
 * (willing wins, a decline moves on at once), silence moves on at the timeout. PIPELINE-1 §4.4: the stage's match
 * is cut at its bound (a cut at the same instant as a timeout comes first: it was armed first).
 *
 * Legacy skills (README "Legacy fallback skills") are all asked by one broadcast when the stage starts, so a legacy
 * skill's pong is due `pongAfterMs` after the stage's start, not after its turn; the order of decision stays the
 * pool's: a pong that came before the skill's turn decides at its turn, one that comes during its turn decides when
 * it comes, and the skill has the same ping timeout from its turn as any other.
 */
function fallbackStage(config: Config, stage: string, start: number, skills: readonly FallbackSkillScript[], trail: string[], turns: FallbackTurns): StageEnd {
  const T = config.fallback.pingTimeoutMs;
  const cut = start + config.orchestrator.matchTimeoutMs;
  let t = start;
  const pool = fallbackPool(config, stage, skills);
  if (pool.some((s) => s.dialect === 'legacy' && (s.disconnectAtMs ?? Infinity) > start)) trail.push(`${stage}: one broadcast ovos.skills.fallback.ping at ${start} ms asks its legacy skills at once (README, Legacy fallback skills)`);
  for (const skill of pool) {
    if (t >= cut) break;
    const gone = skill.disconnectAtMs ?? Infinity;
    if (gone <= t) {
      // README "Dead skills": a closed connection takes its registrations with it — no longer in the pool.
      trail.push(`${stage}: ${skill.skill_id}'s connection closed at ${gone} ms, before its turn — not asked (README, Dead skills)`);
      continue;
    }
    turns.set(skill.skill_id, { stageStart: start, turn: t });
    const pong = skill.pongAfterMs ?? FALLBACK_DEFAULTS.pongAfterMs;
    const legacy = skill.dialect === 'legacy';
    const sent = pong === 'never' ? Infinity : (legacy ? start : t) + pong;
    const arrives = Math.max(sent, t);
    const deadline = t + T;
    if (sent < gone && arrives < deadline && arrives < cut) {
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
      trail.push(`${stage}: ${skill.skill_id}'s connection closes at ${gone} ms while it is awaited — the next skill is asked at once (§6.1; README, Dead skills)`);
      t = gone;
      continue;
    }
    if (cut <= deadline) {
      trail.push(`${stage}: the match bound cuts the stage at ${cut} ms while ${skill.skill_id} is awaited (OVOS-PIPELINE-1 §4.4)`);
      return { winner: null, at: cut };
    }
    trail.push(`${stage}: ${skill.skill_id} silent until its ping timeout ${deadline} ms — treated as can_handle false (§6.1)`);
    t = deadline;
  }
  if (t >= cut) {
    trail.push(`${stage}: cut by the match bound at ${cut} ms (OVOS-PIPELINE-1 §4.4)`);
    return { winner: null, at: cut };
  }
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
}

/**
 * OVOS-COMMON-QUERY-1 §6–§8 for a contest that starts at `c0` and whose `match` joins at `join` (early start: the
 * contest runs from the utterance's arrival, and survival / fast win are judged only once `match` has joined, §5.1).
 */
function commonQueryContest(config: Config, c0: number, join: number, skills: readonly CommonQuerySkillScript[], trail: string[]): { winner: Response | null; at: number } {
  const cq = config.commonQuery;
  const bound = c0 + Math.min(cq.pollClaimBoundMs, cq.pollWindowMs);
  const ceiling = c0 + cq.pollWindowMs;
  // The roster after the warm-ups (README "Common-query poll"): every skill that pongs is known, even late; one that
  // declines is known to answer every poll once it has answered the last 3 polls it was known for in time — before
  // the claim bound, since until then nobody waits for it past the bound. A skill whose connection closed before the
  // contest began has left the roster.
  const goneAt = (s: CommonQuerySkillScript): number => s.disconnectAtMs ?? Infinity;
  const present = skills.filter((s) => goneAt(s) > c0);
  const known = present.filter((s) => (s.pong ?? 'claim') !== 'silent').map((s) => s.skill_id);
  const answering = present.filter((s) => s.pong === 'decline' && (s.pongAfterMs ?? 0) < bound - c0).map((s) => s.skill_id);
  // What the contest hears, in order: pongs (none at or after the skill's disconnect) and disconnects (a closed
  // connection counts as heard from — README "Common-query poll"; at the same ms, a disconnect comes first).
  type PollEvent = { readonly at: number; readonly skill: CommonQuerySkillScript; readonly gone: boolean };
  const events: PollEvent[] = [
    ...present.filter((s) => goneAt(s) < Infinity).map((s) => ({ at: goneAt(s), skill: s, gone: true })),
    ...present
      .filter((s) => (s.pong ?? 'claim') !== 'silent' && c0 + (s.pongAfterMs ?? 0) < goneAt(s))
      .map((s) => ({ at: c0 + (s.pongAfterMs ?? 0), skill: s, gone: false })),
  ].sort((a, b) => a.at - b.at || Number(b.gone) - Number(a.gone));
  const heard = new Set<string>();
  const departed = new Set<string>();
  const claims: CommonQuerySkillScript[] = [];
  // A claim from a skill that is gone will never be answered: it is not a claim in hand.
  const liveClaims = (): number => claims.filter((c) => !departed.has(c.skill_id)).length;
  const outstandingAt = (id: string, at: number): boolean => !events.some((e) => e.skill.skill_id === id && (e.gone ? e.at <= at : e.at < at));
  const answeringOutstandingAt = (at: number): boolean => answering.some((id) => outstandingAt(id, at));
  // Before the claim bound: a pong before it, a disconnect at it or before (its timer was armed first).
  const beforeBound = (e: PollEvent): boolean => (e.gone ? e.at <= bound : e.at < bound);
  let closeAt: number | null = null;
  for (const e of events) {
    if (e.gone ? e.at > ceiling : e.at >= ceiling) break;
    if (!beforeBound(e) && !answeringOutstandingAt(bound)) break;
    heard.add(e.skill.skill_id);
    if (e.gone) departed.add(e.skill.skill_id);
    else if ((e.skill.pong ?? 'claim') === 'claim') claims.push(e.skill);
    if (beforeBound(e)) {
      if (liveClaims() > 0 && known.every((id) => heard.has(id))) {
        closeAt = e.at;
        trail.push(`poll: a claim in hand and every known skill heard${e.gone ? ' or gone' : ''} at ${e.at} ms — closed at once (§6.3 rule 1)`);
        break;
      }
    } else if (answering.every((id) => heard.has(id))) {
      closeAt = e.at;
      trail.push(`poll: the last skill known to answer every poll ${e.gone ? 'gone' : 'heard'} at ${e.at} ms — closed (§6.3 rule 2)`);
      break;
    }
  }
  if (closeAt === null) {
    closeAt = answeringOutstandingAt(bound) ? ceiling : bound;
    trail.push(`poll: closed at ${closeAt} ms (§6.3 ${closeAt === ceiling ? 'ceiling' : 'claim bound'})`);
  }
  for (const id of departed) trail.push(`poll: ${id}'s connection closed — it counts as heard from (README, Common-query poll)`);
  if (liveClaims() === 0) {
    trail.push(claims.length === 0 ? 'poll: no claimant → None (§9)' : 'poll: every claimant is gone → None (§7.2: a gone claimant counts as declining; §9)');
    return { winner: null, at: closeAt };
  }
  const P = closeAt;
  const windowEnd = P + initialWindowOf(cq, claims);
  const hardEnd = P + cq.collectionCeilingMs;
  trail.push(`collection: requests at ${P} ms; initial window ends ${windowEnd} ms, ceiling ${hardEnd} ms (§7.2)`);
  // A claimant's answer, unless its connection closes first: then it counts as declining at that moment (§7.2,
  // README "Common-query poll"), a response without an answer.
  const arrivals: Response[] = claims
    .map((c): Response | null => {
      const gone = Math.max(goneAt(c), P);
      const at = c.answerAfterMs === 'never' ? Infinity : P + (c.answerAfterMs ?? 0);
      if (at < gone) return { skill_id: c.skill_id, at, answer: c.answer === undefined ? `${c.skill_id} answer` : c.answer, conf: c.conf ?? 0.7 };
      return gone < Infinity ? { skill_id: c.skill_id, at: gone, answer: null, conf: 0, gone: true } : null;
    })
    .filter((r): r is Response => r !== null && r.at < hardEnd)
    .sort((a, b) => a.at - b.at || Number(b.gone === true) - Number(a.gone === true));
  for (const r of arrivals) if (r.gone === true) trail.push(`collection: ${r.skill_id}'s connection closed at ${r.at} ms before it answered — it counts as declining (§7.2)`);
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
  const inHand: Response[] = [];
  // §7.2 settle: the window stays open one round trip after the first surviving answer, counted from its arrival
  // (one that came before the join started its round trip when it arrived).
  const roundTrip = settleOf(cq, claims);
  const joinAt = Math.max(join, P);
  let settleEnd: number | null = null;
  const arm = (t: number): void => {
    const first = inHand.find(survives);
    if (settleEnd === null && first !== undefined && join <= t) {
      settleEnd = Math.max(first.at + roundTrip, t);
      trail.push(`collection: first surviving answer ${first.skill_id} (${first.at} ms) — the window stays open until ${settleEnd} ms at least (§7.2 settle)`);
    }
  };
  const closes = (t: number): boolean => t >= windowEnd && settleEnd !== null && t >= settleEnd;
  // Instants at which the collection may close: each arrival, the window's end, the join, the settle's end.
  let t = P - 1;
  for (;;) {
    const next = Math.min(...[...arrivals.map((r) => r.at), windowEnd, joinAt, settleEnd ?? Infinity].filter((x) => x > t));
    if (!(next < hardEnd)) break;
    t = next;
    // At one instant: the timers first (window, settle), then what arrives (a bus round trip), then the join.
    if (closes(t)) return decided('the window and the round trip since the first survivor have both run out', t);
    for (const r of arrivals.filter((a) => a.at === t)) {
      inHand.push(r);
      if (join <= t && fast(r)) return decided('fast win (§8 step 3)', t);
      if (inHand.length === claims.length) return decided('every claimant responded', t);
      arm(t);
      if (closes(t)) return decided('window passed and a survivor arrived, no round trip to wait', t);
    }
    if (t === joinAt) {
      if (inHand.some(fast)) return decided('fast win on join', t);
      arm(t);
      if (closes(t)) return decided('window passed, survivor in hand on join, its round trip run', t);
    }
  }
  return decided('ceiling', hardEnd);

  function decided(why: string, at: number): { winner: Response | null; at: number } {
    const winner = select(inHand);
    trail.push(`collection: closed at ${at} ms — ${why} (§7.2); winner ${winner === null ? 'none' : `${winner.skill_id} (${winner.conf})`} (§8)`);
    return { winner, at };
  }
}

/** The expected outcome of `scenario` on `config`, the gate's verdict given. */
export function expectedOutcome(config: Config, scenario: TimingScenario, gateAccepts: boolean): Expected {
  return evaluate(config, scenario, gateAccepts, new Map());
}

/** When each fallback skill's turn came in the expected run (a skill never asked is absent). */
export function fallbackTurns(config: Config, scenario: TimingScenario, gateAccepts: boolean): FallbackTurns {
  const turns: FallbackTurns = new Map();
  evaluate(config, scenario, gateAccepts, turns);
  return turns;
}

function evaluate(config: Config, scenario: TimingScenario, gateAccepts: boolean, turns: FallbackTurns): Expected {
  const trail: string[] = [];
  const fallbackSkills = scenario.skills.filter((s): s is FallbackSkillScript => s.kind === 'fallback');
  const cqSkills = scenario.skills.filter((s): s is CommonQuerySkillScript => s.kind === 'common_query');
  const cqId = config.commonQuery.pipelineId;
  const cqIndex = config.pipeline.indexOf(cqId);
  let t = 0;
  for (const [index, stage] of config.pipeline.entries()) {
    if (stage === cqId) {
      if (!gateAccepts) {
        trail.push(`${stage}: the gate rejects the utterance — no ping, the stage declines (§4.1)`);
        continue;
      }
      const c0 = config.commonQuery.earlyStart && index === cqIndex ? 0 : t;
      const result = commonQueryContest(config, c0, t, cqSkills, trail);
      const end = Math.max(result.at, t);
      const cut = t + config.orchestrator.matchTimeoutMs;
      if (end >= cut) {
        trail.push(`${stage}: cut by the match bound at ${cut} ms (OVOS-PIPELINE-1 §4.4)`);
        t = cut;
        continue;
      }
      if (result.winner !== null) {
        trail.push(`${stage}: answered at ${end} ms; the handler speaks "${result.winner.answer}" (§9, §10)`);
        return { decidedBy: stage, skill_id: result.winner.skill_id, decidedAt: end, handler: null, handledAt: end, trail };
      }
      t = end;
      continue;
    }
    if (config.fallback.stages[stage] === undefined) continue;
    const result = fallbackStage(config, stage, t, fallbackSkills, trail, turns);
    t = result.at;
    if (result.winner !== null) {
      const skill = fallbackSkills.find((s) => s.skill_id === result.winner)!;
      const handlerMs = skill.handlerMs ?? FALLBACK_DEFAULTS.handlerMs;
      const H = config.orchestrator.handlerTimeoutMs;
      const completes = handlerMs === 'never' || handlerMs >= H ? Infinity : t + handlerMs;
      const gone = skill.disconnectAtMs ?? Infinity;
      if (gone <= t + H && gone <= completes) {
        trail.push(`${skill.skill_id}: its connection closes at ${gone} ms before its handler completed — ovos.intent.handler.error (SkillDisconnected) at once (OVOS-PIPELINE-1 §8; README, Dead skills)`);
        return { decidedBy: stage, skill_id: skill.skill_id, decidedAt: t, handler: 'disconnected', handledAt: gone, trail };
      }
      const timedOut = completes === Infinity;
      trail.push(
        timedOut
          ? `${skill.skill_id}: handler runs past the handler timeout — ovos.intent.handler.error at ${t + H} ms (OVOS-PIPELINE-1 §8)${skill.dialect === 'legacy' ? ', ovos.skills.fallback.force_timeout, our ovos.utterance.handled' : ''}`
          : skill.dialect === 'legacy'
            ? `${skill.skill_id}: .response {result: true} and the skill's own ovos.utterance.handled at ${completes} ms — the utterance's one (OVOS-PIPELINE-1 §6, §8; README, Legacy fallback skills)`
            : `${skill.skill_id}: handler completes at ${completes} ms (OVOS-PIPELINE-1 §8)`,
      );
      return { decidedBy: stage, skill_id: skill.skill_id, decidedAt: t, handler: timedOut ? 'timeout' : 'complete', handledAt: timedOut ? t + H : completes, trail };
    }
  }
  trail.push(`no stage matched → ovos.intent.unmatched at ${t} ms (OVOS-PIPELINE-1 §6)`);
  return { decidedBy: 'unmatched', skill_id: null, decidedAt: t, handler: null, handledAt: t, trail };
}
