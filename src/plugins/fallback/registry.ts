/**
 * The fallback skill registry, session-scoped per OVOS-FALLBACK-1 §3.4 (OVOS-INTENT-4 §11.1): entries are keyed
 * by the registering message's session_id; "default" entries are available to every session, a session's own
 * entries extend (and, for the same skill, override) them for that session only.
 *
 * Each entry remembers the client connection it was registered over (undefined in-process, on a foreign bus, or for a
 * legacy registration whose connection closed), so a closed connection takes its spec registrations with it and a
 * connection-bound deregistration can be checked.
 * Session ids come off the bus, so the registry is bounded: at most `maxSkillsPerSession` skills per session and
 * at most `maxSessions` sessions other than "default" holding registrations.
 */
import { DEFAULT_SESSION_ID } from '../../bus/session.js';

export interface RegistryEntry {
  readonly priority: number;
  readonly connection: string | undefined;
  /** Registered in the legacy dialect (ovos-workshop FallbackSkill): asked by broadcast, dispatched the legacy way. */
  readonly legacy: boolean;
  /**
   * Legacy, its connection closed, and no client connection has opened since: it cannot be on the bus, so no pool
   * holds it (nobody waits for it) until a connection opens — which may be its bus client reconnecting.
   */
  readonly away?: true;
  /**
   * Legacy and unbound since its connection closed, yet in the pools: the client connections opened since (or within
   * the reconnect window before) that are still open — one of them may be its bus client's. It is away again when the
   * last of them closes before the skill was heard on one (a short-lived client, say, is not its reconnect).
   */
  readonly maybeOn?: readonly string[];
}

/** A registration `releaseConnection` let go of or kept, and whether it was bound to the closed connection. */
export interface ReleasedEntry {
  readonly sessionId: string;
  readonly skillId: string;
  /** Legacy: kept, unbound (spec ones are removed). */
  readonly kept: boolean;
  /** False for a legacy registration only maybe on that connection (`maybeOn`), away again now that it closed. */
  readonly bound: boolean;
}

export interface RegistryBounds {
  readonly maxSkillsPerSession?: number;
  readonly maxSessions?: number;
}

export type RegisterResult = 'registered' | 'registry_full';

export class FallbackRegistry {
  readonly #bySession = new Map<string, Map<string, RegistryEntry>>();
  readonly #maxSkillsPerSession: number;
  readonly #maxSessions: number;

  constructor(bounds: RegistryBounds = {}) {
    this.#maxSkillsPerSession = bounds.maxSkillsPerSession ?? Infinity;
    this.#maxSessions = bounds.maxSessions ?? Infinity;
  }

  /**
   * §3.1: re-registration with the same skill_id replaces the prior entry (always allowed, whatever the bounds).
   * A new skill beyond `maxSkillsPerSession`, or a new session beyond `maxSessions`, is refused.
   */
  register(sessionId: string, skillId: string, priority: number, connection?: string, legacy = false): RegisterResult {
    let skills = this.#bySession.get(sessionId);
    if (skills === undefined) {
      if (sessionId !== DEFAULT_SESSION_ID && this.sessionCount >= this.#maxSessions) return 'registry_full';
      if (this.#maxSkillsPerSession < 1) return 'registry_full';
      this.#bySession.set(sessionId, (skills = new Map()));
    } else if (!skills.has(skillId) && skills.size >= this.#maxSkillsPerSession) {
      return 'registry_full';
    }
    skills.set(skillId, { priority, connection, legacy });
    return 'registered';
  }

  /** §3.2: unknown skill_id is a no-op. */
  deregister(sessionId: string, skillId: string): boolean {
    const skills = this.#bySession.get(sessionId);
    if (skills === undefined) return false;
    const removed = skills.delete(skillId);
    if (skills.size === 0) this.#bySession.delete(sessionId);
    return removed;
  }

  /** The entry `skillId` holds in `sessionId` itself (not inherited from "default"). */
  entry(sessionId: string, skillId: string): RegistryEntry | undefined {
    return this.#bySession.get(sessionId)?.get(skillId);
  }

  /** The entry that makes `skillId` available to `sessionId`: its own, else the "default" one (§3.4). */
  effectiveEntry(sessionId: string, skillId: string): RegistryEntry | undefined {
    return this.entry(sessionId, skillId) ?? this.entry(DEFAULT_SESSION_ID, skillId);
  }

  /**
   * `connection` closed. Spec registrations made over it, in every session, are removed (the skill SDK registers
   * again when it reconnects). Legacy ones are kept, unbound, as after a restart: ovos-workshop never registers again
   * by itself, so its first pong over a new connection binds them again (`bindUnbound`). `reconnects` are the open
   * connections that may already be its bus client's (opened within the reconnect window): with none, they are
   * `away`; otherwise they stay in the pools, `maybeOn` those. A legacy registration unbound and `maybeOn` this
   * connection alone is away again. A skill that registered again over another connection since keeps that newer
   * registration.
   */
  releaseConnection(connection: string, reconnects: readonly string[] = []): ReleasedEntry[] {
    const released: ReleasedEntry[] = [];
    for (const [sessionId, skills] of this.#bySession) {
      for (const [skillId, entry] of skills) {
        if (entry.connection === connection) {
          released.push({ sessionId, skillId, kept: entry.legacy, bound: true });
          if (entry.legacy) skills.set(skillId, unbound(entry, reconnects));
        } else if (entry.maybeOn?.includes(connection) === true) {
          const maybeOn = entry.maybeOn.filter((other) => other !== connection);
          skills.set(skillId, unbound(entry, maybeOn));
          if (maybeOn.length === 0) released.push({ sessionId, skillId, kept: true, bound: false });
        }
      }
    }
    for (const { sessionId, skillId, kept } of released) if (!kept) this.deregister(sessionId, skillId);
    return released;
  }

  /**
   * Registrations of `skillId` made over no known connection (restored after a restart, or legacy ones whose
   * connection closed) now belong to `connection`, the one the skill was just heard on.
   */
  bindUnbound(skillId: string, connection: string): number {
    let bound = 0;
    for (const skills of this.#bySession.values()) {
      const entry = skills.get(skillId);
      if (entry === undefined || entry.connection !== undefined) continue;
      skills.set(skillId, { priority: entry.priority, connection, legacy: entry.legacy });
      bound++;
    }
    return bound;
  }

  /**
   * Client connection `connection` opened: every registration away may be back (its bus client reconnecting), and it
   * may be on this one as well as on those it was maybe on. How many were away.
   */
  connectionOpened(connection: string): number {
    let back = 0;
    for (const skills of this.#bySession.values()) {
      for (const [skillId, entry] of skills) {
        if (entry.away === true) back++;
        else if (entry.maybeOn === undefined) continue;
        skills.set(skillId, unbound(entry, [...(entry.maybeOn ?? []), connection]));
      }
    }
    return back;
  }

  /** Whether any session (including "default") still holds a registration of `skillId`. */
  holds(skillId: string): boolean {
    for (const skills of this.#bySession.values()) if (skills.has(skillId)) return true;
    return false;
  }

  /** Every registration, "default" first (for inspection). */
  entries(): Array<RegistryEntry & { readonly sessionId: string; readonly skillId: string }> {
    const all: Array<RegistryEntry & { sessionId: string; skillId: string }> = [];
    for (const [sessionId, skills] of this.#bySession) for (const [skillId, entry] of skills) all.push({ sessionId, skillId, ...entry });
    return all.sort((a, b) => Number(b.sessionId === DEFAULT_SESSION_ID) - Number(a.sessionId === DEFAULT_SESSION_ID));
  }

  /** Sessions other than "default" holding registrations. */
  get sessionCount(): number {
    return this.#bySession.size - (this.#bySession.has(DEFAULT_SESSION_ID) ? 1 : 0);
  }

  /**
   * skill_id → registered priority for everything available to `sessionId` (§5 step 3). A registration away is not
   * (a session's own one away leaves the "default" one, another instance, available).
   */
  availableFor(sessionId: string): Map<string, number> {
    const available = new Map<string, number>();
    const add = (skills: ReadonlyMap<string, RegistryEntry> | undefined): void => {
      for (const [skillId, entry] of skills ?? []) if (entry.away !== true) available.set(skillId, entry.priority);
    };
    add(this.#bySession.get(DEFAULT_SESSION_ID));
    if (sessionId !== DEFAULT_SESSION_ID) add(this.#bySession.get(sessionId));
    return available;
  }
}

/** A legacy registration without its connection: in the pools `maybeOn` the connections given, away with none. */
function unbound(entry: RegistryEntry, maybeOn: readonly string[]): RegistryEntry {
  return maybeOn.length === 0 ? { priority: entry.priority, connection: undefined, legacy: true, away: true } : { priority: entry.priority, connection: undefined, legacy: true, maybeOn };
}
