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
   * Legacy, its connection closed, and no client connection it might be on is open (none opened since, or every one
   * that did closed before it was heard on it): it cannot be on the bus, so no pool holds it (nobody waits for it)
   * until a connection opens — which may be its bus client reconnecting.
   */
  readonly away?: true;
  /**
   * Legacy and unbound since its connection closed, yet in the pools: it may be on any client connection still open
   * whose open number (`connectionOpened` numbers them in order) is at least this one — those opened since, or within
   * the reconnect window before the close. It is away again when the last of them closes before it was heard on one
   * (a short-lived client, say, was not its reconnect).
   */
  readonly backSince?: number;
}

/** A registration `releaseConnection` let go of or kept, and whether it was bound to the closed connection. */
export interface ReleasedEntry {
  readonly sessionId: string;
  readonly skillId: string;
  /** Legacy: kept, unbound (spec ones are removed). */
  readonly kept: boolean;
  /** False for a legacy registration that was only maybe on that connection (`backSince`), away again now. */
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
  /** Client connections open, with their open number and time, in open order (a Map keeps insertion order). */
  readonly #open = new Map<string, { readonly number: number; readonly at: number }>();
  #opened = 0;

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
   * by itself, so its first pong over a new connection binds them again (`bindUnbound`). With `reconnectSince` (a
   * time: the close may have been noticed after its bus client reconnected), the connections still open that opened
   * after this one and at or after that time may be its own: they stay in the pools, `backSince` the first of them;
   * otherwise they are `away`.
   * A legacy registration back in the pools that can be on no open connection any more is away again. A skill that
   * registered again over another connection since keeps that newer registration.
   */
  releaseConnection(connection: string, reconnectSince?: number): ReleasedEntry[] {
    // A connection opened before this one cannot be its reconnect.
    const closed = this.#open.get(connection)?.number ?? 0;
    this.#open.delete(connection);
    let since: number | undefined;
    let newest = 0;
    for (const { number, at } of this.#open.values()) {
      if (since === undefined && reconnectSince !== undefined && at >= reconnectSince && number > closed) since = number;
      newest = number;
    }
    const released: ReleasedEntry[] = [];
    for (const [sessionId, skills] of this.#bySession) {
      for (const [skillId, entry] of skills) {
        if (entry.connection === connection) {
          released.push({ sessionId, skillId, kept: entry.legacy, bound: true });
          if (entry.legacy) skills.set(skillId, unbound(entry, since));
        } else if (entry.backSince !== undefined && entry.backSince > newest) {
          skills.set(skillId, unbound(entry, undefined));
          released.push({ sessionId, skillId, kept: true, bound: false });
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
   * Client connection `connection` opened at `at`: every registration away may be back on it (its bus client
   * reconnecting). How many were away.
   */
  connectionOpened(connection: string, at: number): number {
    this.#open.delete(connection);
    this.#open.set(connection, { number: ++this.#opened, at });
    let back = 0;
    for (const skills of this.#bySession.values()) {
      for (const [skillId, entry] of skills) {
        if (entry.away !== true) continue;
        skills.set(skillId, unbound(entry, this.#opened));
        back++;
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

/** A legacy registration without its connection: in the pools, maybe on the connections from `backSince` on; away without. */
function unbound(entry: RegistryEntry, backSince: number | undefined): RegistryEntry {
  return backSince === undefined ? { priority: entry.priority, connection: undefined, legacy: true, away: true } : { priority: entry.priority, connection: undefined, legacy: true, backSince };
}
