/**
 * A circuit breaker per fallback skill, as pure state with an injected `now`.
 *
 * OVOS-FALLBACK-1 §6.1 treats a skill that does not answer within the ping timeout as `can_handle: false`, so a
 * dead skill costs every utterance the whole timeout, in every stage that holds it. A registration whose skill is not
 * heard from after its connection closed or a restart costs at most one ping timeout (registry.ts: dormant); this
 * breaker is for a skill that is heard — connected — and still does not answer, on any bus.
 *
 * The rule (per skill_id):
 *   - closed: count consecutive ping timeouts; any pong (willing or not, even a late one) or a re-registration
 *     resets the count. At `suspendAfterTimeouts` consecutive timeouts the breaker opens. Timeouts less than
 *     `pingTimeoutMs` after the last one counted are the same observation (contests that asked at once, while the
 *     skill was away for a moment — a bus client reconnecting) and count once: a burst of utterances during a
 *     reconnect does not suspend a skill that is back a moment later.
 *   - open: the skill is suspended for `suspendMs` — left out of every pool — until `suspendMs` has elapsed
 *     (at `suspendMs - 1` it is still out, at `suspendMs` it is back).
 *   - half-open (the suspension has elapsed): the skill is in pools again, on probation. Its next pong (or a
 *     re-registration) closes the breaker; its next timeout opens it again at once, for twice the previous period,
 *     capped at `maxSuspendMs` (5 minutes, never below `suspendMs`).
 *   - a timeout while open (a contest whose pool was built before the suspension) changes nothing.
 * Each transition into open or back to closed is reported once (the caller logs it), never per utterance.
 */

/** Ceiling of the doubled suspension after failed probes. */
export const MAX_SUSPEND_MS = 5 * 60_000;

export interface BreakerSettings {
  /** Consecutive ping timeouts that suspend a skill (≥ 1). */
  readonly suspendAfterTimeouts: number;
  /** First suspension period, ms. */
  readonly suspendMs: number;
  /** Ceiling of the doubled period; defaults to MAX_SUSPEND_MS, and is never below `suspendMs`. */
  readonly maxSuspendMs?: number;
  /** Timeouts closer than this to the last one counted count once (OVOS-FALLBACK-1 §6.1's ping timeout). Default 0. */
  readonly pingTimeoutMs?: number;
}

export type BreakerState = 'closed' | 'open' | 'half_open';

export type BreakerTransition =
  | { readonly type: 'suspended'; readonly skill_id: string; readonly timeouts: number; readonly for_ms: number }
  | { readonly type: 'resumed'; readonly skill_id: string };

type Entry =
  | { readonly state: 'closed'; readonly timeouts: number; readonly countedAt: number }
  | { readonly state: 'open'; readonly timeouts: number; readonly until: number; readonly periodMs: number };

export class SkillBreaker {
  /** Only skills with something to remember: a closed breaker with no timeouts has no entry. */
  readonly #skills = new Map<string, Entry>();
  readonly #threshold: number;
  readonly #suspendMs: number;
  readonly #capMs: number;
  readonly #sameWithinMs: number;
  readonly #now: () => number;

  constructor(settings: BreakerSettings, now: () => number) {
    this.#threshold = Math.max(1, settings.suspendAfterTimeouts);
    this.#suspendMs = settings.suspendMs;
    this.#capMs = Math.max(settings.suspendMs, settings.maxSuspendMs ?? MAX_SUSPEND_MS);
    this.#sameWithinMs = settings.pingTimeoutMs ?? 0;
    this.#now = now;
  }

  /** A ping to `skillId` went unanswered for the whole ping timeout. */
  timeout(skillId: string): BreakerTransition | undefined {
    const entry = this.#skills.get(skillId);
    const now = this.#now();
    if (entry?.state === 'open') {
      if (now < entry.until) return undefined;
      // Half-open probe failed: out again at once, for twice as long.
      const periodMs = Math.min(entry.periodMs * 2, this.#capMs);
      return this.#open(skillId, entry.timeouts + 1, periodMs, now);
    }
    if (entry !== undefined && now - entry.countedAt < this.#sameWithinMs) return undefined;
    const timeouts = (entry?.timeouts ?? 0) + 1;
    if (timeouts < this.#threshold) {
      this.#skills.set(skillId, { state: 'closed', timeouts, countedAt: now });
      return undefined;
    }
    return this.#open(skillId, timeouts, this.#suspendMs, now);
  }

  /** `skillId` answered a ping (any pong, even a late one) or registered again: it is alive. */
  alive(skillId: string): BreakerTransition | undefined {
    const entry = this.#skills.get(skillId);
    if (entry === undefined) return undefined;
    this.#skills.delete(skillId);
    return entry.state === 'open' ? { type: 'resumed', skill_id: skillId } : undefined;
  }

  /**
   * Suspended for `periodMs` from now by a decision made elsewhere (another daemon of a cluster counted the timeouts):
   * open as if this breaker had counted them; a suspension here that lasts longer stays.
   */
  suspend(skillId: string, periodMs: number): void {
    const entry = this.#skills.get(skillId);
    const now = this.#now();
    if (entry?.state === 'open' && entry.until >= now + periodMs) return;
    this.#open(skillId, Math.max(this.#threshold, entry?.timeouts ?? 0), periodMs, now);
  }

  /** Left out of pools right now (open and not yet elapsed). */
  suspended(skillId: string): boolean {
    const entry = this.#skills.get(skillId);
    return entry?.state === 'open' && this.#now() < entry.until;
  }

  state(skillId: string): BreakerState {
    const entry = this.#skills.get(skillId);
    if (entry?.state !== 'open') return 'closed';
    return this.#now() < entry.until ? 'open' : 'half_open';
  }

  /** The skill is registered nowhere any more: nothing to remember. */
  forget(skillId: string): void {
    this.#skills.delete(skillId);
  }

  #open(skillId: string, timeouts: number, periodMs: number, now: number): BreakerTransition {
    this.#skills.set(skillId, { state: 'open', timeouts, until: now + periodMs, periodMs });
    return { type: 'suspended', skill_id: skillId, timeouts, for_ms: periodMs };
  }
}
