/**
 * The fallback skill registry, session-scoped per OVOS-FALLBACK-1 §3.4 (OVOS-INTENT-4 §11.1): entries are keyed
 * by the registering message's session_id; "default" entries are available to every session, a session's own
 * entries extend (and, for the same skill, override) them for that session only.
 */
import { DEFAULT_SESSION_ID } from '../../bus/session.js';

export class FallbackRegistry {
  readonly #bySession = new Map<string, Map<string, number>>();

  /** §3.1: re-registration with the same skill_id replaces the prior entry. */
  register(sessionId: string, skillId: string, priority: number): void {
    let skills = this.#bySession.get(sessionId);
    if (skills === undefined) this.#bySession.set(sessionId, (skills = new Map()));
    skills.set(skillId, priority);
  }

  /** §3.2: unknown skill_id is a no-op. */
  deregister(sessionId: string, skillId: string): boolean {
    const skills = this.#bySession.get(sessionId);
    if (skills === undefined) return false;
    const removed = skills.delete(skillId);
    if (skills.size === 0) this.#bySession.delete(sessionId);
    return removed;
  }

  /** skill_id → registered priority for everything available to `sessionId` (§5 step 3). */
  availableFor(sessionId: string): Map<string, number> {
    const available = new Map(this.#bySession.get(DEFAULT_SESSION_ID) ?? []);
    if (sessionId !== DEFAULT_SESSION_ID) {
      for (const [skillId, priority] of this.#bySession.get(sessionId) ?? []) available.set(skillId, priority);
    }
    return available;
  }
}
