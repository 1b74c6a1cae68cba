/**
 * The fallback skill registry, session-scoped per OVOS-FALLBACK-1 §3.4 (OVOS-INTENT-4 §11.1): entries are keyed
 * by the registering message's session_id; "default" entries are available to every session, a session's own
 * entries extend (and, for the same skill, override) them for that session only.
 *
 * Liveness. FALLBACK-1 never asks a skill to register again, so a registration outlives the connection it was made
 * over (src/plugins/README.md, "Liveness and restarts"); what changes is whether pools hold it:
 *   - heard: bound to the connection the skill speaks over (or, with no connection identity — in process, a foreign
 *     bus — simply heard): in the pools;
 *   - away: its connection closed (or it was restored from disk) and no client connection it might be on is open: in
 *     no pool, nobody waits for it;
 *   - maybe back (`backSince`, or restored on a bus without connection identity): not heard from since, but it may be
 *     on a connection that is open — in the pools on probation (`unheard`). A missed ping sends it away again at once,
 *     `dormant`;
 *   - dormant: away, and only being heard from (a pong, a registration, any message of its own) brings it back —
 *     connections opening do not. So a skill gone for good costs at most one ping timeout, and a live one is never
 *     lost: the next thing it says brings it back.
 * Binding. A registration bound to a connection over which its skill has answered since (a pong, any message of its
 * own but a registration) is held by that connection (`holder`): the plugin refuses its registration,
 * deregistration and pongs from any other. It is let go when the connection closes (`releaseConnection`) or the skill
 * misses a ping (`lapse`); a lapsed registration is bound to the next connection its skill is heard over
 * (`answered`), so a skill restarted in a new process takes over from an old one that hangs with its socket open. A
 * registration alone holds nothing: a skill whose bus client reconnected registers again over the new connection.
 * Session ids come off the bus, so the registry is bounded: at most `maxSkillsPerSession` skills per session (at most
 * `maxSkillsPerConnection` of them bound to one client connection) and at most `maxSessions` sessions other than
 * "default" holding registrations; a registration away gives its place up to a new one when the bound is reached.
 */
import { DEFAULT_SESSION_ID } from '../../bus/session.js';

export interface RegistryEntry {
  readonly priority: number;
  /** The client connection the skill was registered or last heard over, while it is open; undefined when unbound. */
  readonly connection: string | undefined;
  /** Registered in the legacy dialect (ovos-workshop FallbackSkill): asked by broadcast, dispatched the legacy way. */
  readonly legacy: boolean;
  /** Not heard from since its connection closed or it was restored: one missed ping makes it `dormant`. */
  readonly unheard?: true;
  /** In no pool: it cannot be on the bus (no connection it might be on is open), or it is `dormant`. */
  readonly away?: true;
  /** Away, and brought back only by being heard from (it missed its ping while maybe back, or a spec one restored). */
  readonly dormant?: true;
  /**
   * Maybe back: in the pools, and it may be on any client connection still open whose open number
   * (`connectionOpened` numbers them in order) is at least this one — those opened since it went away, or within the
   * reconnect window before the close. It is away again when the last of them closes before it was heard on one (a
   * short-lived client, say, was not its reconnect).
   */
  readonly backSince?: number;
}

/** A registration `releaseConnection` unbound, or sent away again. */
export interface ReleasedEntry {
  readonly sessionId: string;
  readonly skillId: string;
  /** False for a registration that was only maybe on that connection (`backSince`), away again now. */
  readonly bound: boolean;
}

/** How a registration restored from disk starts (`restore`). */
export interface RestoredRegistration {
  readonly legacy: boolean;
  /** It missed its ping while maybe back before the restart, or nobody answered for it after it registered: dormant. */
  readonly dormant: boolean;
}

export interface RegistryBounds {
  readonly maxSkillsPerSession?: number;
  readonly maxSessions?: number;
  /** Registrations of one session bound to one client connection. */
  readonly maxSkillsPerConnection?: number;
  /**
   * Bytes of registrations one client connection may make while it is open, in every session together (each costs
   * its session id, its skill id and `REGISTRATION_OVERHEAD_BYTES`): what one client can make the registry — and its
   * file — hold.
   */
  readonly maxRegistrationBytesPerConnection?: number;
  /** A registration away gave its place up to a new one (the bounds were reached): told once per registration. */
  readonly onEvict?: (evicted: EntryRef) => void;
}

/** What a registration costs beside its ids: its entry here, its line in the file, its key in a cluster's state. */
export const REGISTRATION_OVERHEAD_BYTES = 128;

/** The bytes a registration is counted for against its connection's budget. */
export function registrationBytes(sessionId: string, skillId: string): number {
  return sessionId.length + skillId.length + REGISTRATION_OVERHEAD_BYTES;
}

export type RegisterResult = 'registered' | 'registry_full' | 'connection_quota';

/** A registration whose liveness changed, by session and skill. */
export interface EntryRef {
  readonly sessionId: string;
  readonly skillId: string;
}

export class FallbackRegistry {
  readonly #bySession = new Map<string, Map<string, RegistryEntry>>();
  readonly #maxSkillsPerSession: number;
  readonly #maxSessions: number;
  readonly #maxSkillsPerConnection: number;
  readonly #maxRegistrationBytesPerConnection: number;
  /** The registrations each open connection made (`session\0skill`) and their bytes: its budget across sessions. */
  readonly #madeOver = new Map<string, { readonly keys: Set<string>; bytes: number }>();
  readonly #onEvict: (evicted: EntryRef) => void;
  /** Client connections open, with their open number and time, in open order (a Map keeps insertion order). */
  readonly #open = new Map<string, { readonly number: number; readonly at: number }>();
  #opened = 0;
  /**
   * Registrations held by their connection: the skill answered over it since it was bound there, and missed no ping
   * since. Kept beside the entries, by identity: any change to an entry makes a new one, which is not held.
   */
  readonly #answers = new WeakSet<RegistryEntry>();
  /** Registrations bound to a connection whose skill missed a ping since: the next connection it is heard over binds them. */
  readonly #lapsed = new WeakSet<RegistryEntry>();
  /*
   * Indexes, kept by `#set` and `#remove` (every change to an entry goes through them): what a connection opening or
   * closing, a skill speaking or a new registration at the bound touches is found without walking every registration
   * — a full registry holds 64,000 of them, and a flood of connections or registrations would otherwise cost that
   * many steps each.
   */
  /** skill → the sessions holding a registration of it. */
  readonly #bySkill = new Map<string, Set<string>>();
  /** connection → the registrations bound to it (`entry.connection`). */
  readonly #byConnection = new Map<string, Map<string, EntryRef>>();
  /** Registrations maybe back, by their `backSince` (a connection opening gives every one it brings back the same). */
  readonly #maybeBack = new Map<number, Map<string, EntryRef>>();
  /** Registrations away and not dormant: a connection opening may bring them back. */
  readonly #awayNotDormant = new Map<string, EntryRef>();
  /** Dormant registrations, legacy and spec. */
  readonly #dormant = { legacy: 0, spec: 0 };
  /** session → its registrations away, and dormant (which session may give its place up). */
  readonly #sessionAway = new Map<string, { away: number; dormant: number }>();
  /** Sessions (not "default") whose every registration is away, and those whose every one is dormant. */
  readonly #evictable = { away: new Set<string>(), dormant: new Set<string>() };
  /** session → the order it was made in (the order `#bySession` iterates in). */
  readonly #sessionOrder = new Map<string, number>();
  #sessionsMade = 0;

  constructor(bounds: RegistryBounds = {}) {
    this.#maxSkillsPerSession = bounds.maxSkillsPerSession ?? Infinity;
    this.#maxSessions = bounds.maxSessions ?? Infinity;
    this.#maxSkillsPerConnection = bounds.maxSkillsPerConnection ?? Infinity;
    this.#maxRegistrationBytesPerConnection = bounds.maxRegistrationBytesPerConnection ?? Infinity;
    this.#onEvict = bounds.onEvict ?? (() => {});
  }

  /**
   * §3.1: re-registration with the same skill_id replaces the prior entry (always allowed, whatever the bounds). A
   * new skill beyond `maxSkillsPerSession`, or a new session beyond `maxSessions`, takes the place of a registration
   * away — a dormant one first, then the oldest — or, when none is, is refused. A registration is heard from: in the
   * pools at once, bound to `connection` but not held by it until the skill answers there (`answered`). A skill new to
   * `connection` in the session is refused when the session already holds `maxSkillsPerConnection` registrations bound
   * to it (one client cannot take every place), and so is one past the `maxRegistrationBytesPerConnection` the
   * connection made in every session together.
   */
  register(sessionId: string, skillId: string, priority: number, connection?: string, legacy = false): RegisterResult {
    if (connection === undefined) return this.#put(sessionId, skillId, { priority, connection, legacy });
    const key = `${sessionId}\u0000${skillId}`;
    const cost = registrationBytes(sessionId, skillId);
    const made = this.#madeOver.get(connection);
    if (made?.keys.has(key) !== true && (made?.bytes ?? 0) + cost > this.#maxRegistrationBytesPerConnection) return 'connection_quota';
    if (this.#boundTo(sessionId, connection, skillId) >= this.#maxSkillsPerConnection) return 'connection_quota';
    const result = this.#put(sessionId, skillId, { priority, connection, legacy });
    if (result === 'registered' && made?.keys.has(key) !== true) {
      if (made === undefined) this.#madeOver.set(connection, { keys: new Set([key]), bytes: cost });
      else {
        made.keys.add(key);
        made.bytes += cost;
      }
    }
    return result;
  }

  /** Registrations of `sessionId` bound to `connection`, `skillId`'s own not counted. */
  #boundTo(sessionId: string, connection: string, skillId: string): number {
    let bound = 0;
    for (const [other, entry] of this.#bySession.get(sessionId) ?? []) if (other !== skillId && entry.connection === connection) bound++;
    return bound;
  }

  /**
   * A registration kept on disk, after a restart. A spec one is dormant until its skill is heard from (the skill SDK
   * registers again when it reconnects, and is asked to with `ovos.fallback.reregister`); a legacy one (ovos-workshop
   * never registers again) is away until a client connection opens — `withConnections` false (a foreign bus shows
   * none): maybe back at once —, unless it is `dormant` (it missed its ping while maybe back, or was never heard from).
   */
  restore(sessionId: string, skillId: string, priority: number, restored: RestoredRegistration, withConnections: boolean): RegisterResult {
    const base = { priority, connection: undefined, legacy: restored.legacy, unheard: true } as const;
    const entry: RegistryEntry = !restored.legacy || restored.dormant ? { ...base, away: true, dormant: true } : withConnections ? { ...base, away: true } : base;
    return this.#put(sessionId, skillId, entry);
  }

  #put(sessionId: string, skillId: string, entry: RegistryEntry): RegisterResult {
    let skills = this.#bySession.get(sessionId);
    if (skills === undefined) {
      if (sessionId !== DEFAULT_SESSION_ID && this.sessionCount >= this.#maxSessions && !this.#evictAwaySession()) return 'registry_full';
      if (this.#maxSkillsPerSession < 1) return 'registry_full';
      this.#bySession.set(sessionId, (skills = new Map()));
      this.#sessionOrder.set(sessionId, ++this.#sessionsMade);
      this.#sessionAway.set(sessionId, { away: 0, dormant: 0 });
    } else if (!skills.has(skillId) && skills.size >= this.#maxSkillsPerSession && !this.#evictAway(sessionId, skills)) {
      return 'registry_full';
    }
    this.#set(sessionId, skills, skillId, entry);
    return 'registered';
  }

  /** Every change to an entry: the map and its indexes. */
  #set(sessionId: string, skills: Map<string, RegistryEntry>, skillId: string, entry: RegistryEntry): void {
    const old = skills.get(skillId);
    if (old !== undefined) this.#unindex(sessionId, skillId, old);
    skills.set(skillId, entry);
    this.#index(sessionId, skillId, entry, 1);
    this.#classify(sessionId);
  }

  /** Every removal of an entry (a session left empty goes too). */
  #remove(sessionId: string, skills: Map<string, RegistryEntry>, skillId: string): boolean {
    const old = skills.get(skillId);
    if (old === undefined) return false;
    this.#unindex(sessionId, skillId, old);
    skills.delete(skillId);
    if (skills.size === 0) this.#dropSession(sessionId);
    else this.#classify(sessionId);
    return true;
  }

  #dropSession(sessionId: string): void {
    this.#bySession.delete(sessionId);
    this.#sessionOrder.delete(sessionId);
    this.#sessionAway.delete(sessionId);
    this.#evictable.away.delete(sessionId);
    this.#evictable.dormant.delete(sessionId);
  }

  /** Whether `sessionId` may give its place up now, every registration of it away (or dormant). */
  #classify(sessionId: string): void {
    const size = this.#bySession.get(sessionId)?.size ?? 0;
    const counts = this.#sessionAway.get(sessionId);
    if (sessionId === DEFAULT_SESSION_ID || counts === undefined) return;
    for (const kind of ['away', 'dormant'] as const) {
      if (size > 0 && counts[kind] >= size) this.#evictable[kind].add(sessionId);
      else this.#evictable[kind].delete(sessionId);
    }
  }

  #unindex(sessionId: string, skillId: string, entry: RegistryEntry): void {
    this.#index(sessionId, skillId, entry, -1);
  }

  /** Add (`by` 1) or take away (-1) `entry` from the indexes. */
  #index(sessionId: string, skillId: string, entry: RegistryEntry, by: 1 | -1): void {
    const key = `${sessionId}\u0000${skillId}`;
    const ref: EntryRef = { sessionId, skillId };
    const keep = <K, V>(map: Map<K, V>, k: K, v: V): void => void (by === 1 ? map.set(k, v) : map.delete(k));
    let sessions = this.#bySkill.get(skillId);
    if (by === 1) {
      if (sessions === undefined) this.#bySkill.set(skillId, (sessions = new Set()));
      sessions.add(sessionId);
    } else if (sessions !== undefined) {
      sessions.delete(sessionId);
      if (sessions.size === 0) this.#bySkill.delete(skillId);
    }
    if (entry.connection !== undefined) {
      let bound = this.#byConnection.get(entry.connection);
      if (bound === undefined && by === 1) this.#byConnection.set(entry.connection, (bound = new Map()));
      if (bound !== undefined) {
        keep(bound, key, ref);
        if (bound.size === 0) this.#byConnection.delete(entry.connection);
      }
    }
    if (entry.backSince !== undefined) {
      let since = this.#maybeBack.get(entry.backSince);
      if (since === undefined && by === 1) this.#maybeBack.set(entry.backSince, (since = new Map()));
      if (since !== undefined) {
        keep(since, key, ref);
        if (since.size === 0) this.#maybeBack.delete(entry.backSince);
      }
    }
    if (entry.away === true && entry.dormant !== true) keep(this.#awayNotDormant, key, ref);
    if (entry.dormant === true) this.#dormant[entry.legacy ? 'legacy' : 'spec'] += by;
    const away = this.#sessionAway.get(sessionId);
    if (away !== undefined) {
      if (entry.away === true) away.away += by;
      if (entry.dormant === true) away.dormant += by;
    }
  }

  /** `refs` in the order the registry iterates in: by session as made, then by skill as registered in it. */
  #inOrder(refs: Iterable<EntryRef>): EntryRef[] {
    const bySession = new Map<string, Set<string>>();
    for (const { sessionId, skillId } of refs) {
      let skills = bySession.get(sessionId);
      if (skills === undefined) bySession.set(sessionId, (skills = new Set()));
      skills.add(skillId);
    }
    const sessions = [...bySession.keys()].sort((a, b) => (this.#sessionOrder.get(a) ?? 0) - (this.#sessionOrder.get(b) ?? 0));
    const ordered: EntryRef[] = [];
    for (const sessionId of sessions) {
      const wanted = bySession.get(sessionId)!;
      for (const skillId of this.#bySession.get(sessionId)?.keys() ?? []) if (wanted.has(skillId)) ordered.push({ sessionId, skillId });
    }
    return ordered;
  }

  /** The sessions holding `skillId`, in the registry's order, with their session's entries. */
  #sessionsOf(skillId: string): Array<[string, Map<string, RegistryEntry>]> {
    const sessions = [...(this.#bySkill.get(skillId) ?? [])].sort((a, b) => (this.#sessionOrder.get(a) ?? 0) - (this.#sessionOrder.get(b) ?? 0));
    return sessions.map((sessionId) => [sessionId, this.#bySession.get(sessionId)!]);
  }

  /** A session (not "default") whose every registration is away gives its place up: one all dormant first. */
  #evictAwaySession(): boolean {
    for (const gone of ['dormant', 'away'] as const) {
      let sessionId: string | undefined;
      for (const candidate of this.#evictable[gone]) if (sessionId === undefined || this.#sessionOrder.get(candidate)! < this.#sessionOrder.get(sessionId)!) sessionId = candidate;
      if (sessionId === undefined) continue;
      const skills = this.#bySession.get(sessionId)!;
      for (const [skillId, entry] of skills) this.#unindex(sessionId, skillId, entry);
      this.#dropSession(sessionId);
      for (const skillId of skills.keys()) this.#onEvict({ sessionId, skillId });
      return true;
    }
    return false;
  }

  /** A registration away in `skills` gives its place up: a dormant one first, then the oldest away. */
  #evictAway(sessionId: string, skills: Map<string, RegistryEntry>): boolean {
    const victim = [...skills].find(([, entry]) => entry.dormant === true) ?? [...skills].find(([, entry]) => entry.away === true);
    if (victim === undefined) return false;
    this.#unindex(sessionId, victim[0], victim[1]);
    skills.delete(victim[0]);
    this.#classify(sessionId);
    this.#onEvict({ sessionId, skillId: victim[0] });
    return true;
  }

  /** §3.2: unknown skill_id is a no-op. */
  deregister(sessionId: string, skillId: string): boolean {
    const skills = this.#bySession.get(sessionId);
    if (skills === undefined) return false;
    const removed = this.#remove(sessionId, skills, skillId);
    if (removed) {
      for (const made of this.#madeOver.values()) if (made.keys.delete(`${sessionId}\u0000${skillId}`)) made.bytes -= registrationBytes(sessionId, skillId);
    }
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
   * `connection` closed. Registrations made or last heard over it, in every session, are kept, unbound (FALLBACK-1
   * never asks a skill to register again: a skill whose bus client reconnects is asked over its new connection). With
   * `reconnectSince` (a time: the close may have been noticed after its bus client reconnected), the connections still
   * open that opened after this one and at or after that time may be its own: it stays in the pools, maybe back
   * (`backSince` the first of them); otherwise it is away.
   * A registration maybe back that can be on no open connection any more is away again.
   */
  releaseConnection(connection: string, reconnectSince?: number): ReleasedEntry[] {
    // A connection opened before this one cannot be its reconnect.
    const closed = this.#open.get(connection)?.number ?? 0;
    this.#open.delete(connection);
    this.#madeOver.delete(connection);
    let since: number | undefined;
    let newest = 0;
    for (const { number, at } of this.#open.values()) {
      if (since === undefined && reconnectSince !== undefined && at >= reconnectSince && number > closed) since = number;
      newest = number;
    }
    const released: ReleasedEntry[] = [];
    const touched = [...(this.#byConnection.get(connection)?.values() ?? [])];
    for (const [backSince, refs] of this.#maybeBack) if (backSince > newest) touched.push(...refs.values());
    for (const { sessionId, skillId } of this.#inOrder(touched)) {
      const skills = this.#bySession.get(sessionId)!;
      const entry = skills.get(skillId)!;
      if (entry.connection === connection) {
        released.push({ sessionId, skillId, bound: true });
        this.#set(sessionId, skills, skillId, unbound(entry, since));
      } else if (entry.backSince !== undefined && entry.backSince > newest) {
        this.#set(sessionId, skills, skillId, unbound(entry, undefined));
        released.push({ sessionId, skillId, bound: false });
      }
    }
    return released;
  }

  /**
   * `skillId` was heard from (`connection`: the one it spoke over; undefined without connection identity). Its
   * registrations not heard from since they were restored or their connection closed — away, dormant or maybe back —
   * are back in the pools, bound to that connection. Those that changed.
   */
  heard(skillId: string, connection: string | undefined): EntryRef[] {
    const changed: EntryRef[] = [];
    for (const [sessionId, skills] of this.#sessionsOf(skillId)) {
      const entry = skills.get(skillId);
      if (entry?.unheard !== true) continue;
      this.#set(sessionId, skills, skillId, { priority: entry.priority, connection, legacy: entry.legacy });
      changed.push({ sessionId, skillId });
    }
    return changed;
  }

  /**
   * The connection holding `skillId`'s registration in `sessionId`, if one does. `available`: the registration that
   * puts it in the session's pools — its own unless that one is away, else "default"'s (§3.4).
   */
  holder(sessionId: string, skillId: string, available = false): string | undefined {
    let entry = this.entry(sessionId, skillId);
    if (available && (entry === undefined || entry.away === true)) entry = this.entry(DEFAULT_SESSION_ID, skillId) ?? entry;
    return entry !== undefined && this.#answers.has(entry) ? entry.connection : undefined;
  }

  /**
   * Whether `connection` may not speak for `skillId`: a registration of it is held by another connection (it answers
   * its pings there) and none is bound to `connection`. What it sends then teaches nothing about the skill.
   */
  heldElsewhere(skillId: string, connection: string): boolean {
    let elsewhere = false;
    for (const [, skills] of this.#sessionsOf(skillId)) {
      const entry = skills.get(skillId);
      if (entry === undefined) continue;
      if (entry.connection === connection) return false;
      if (this.#answers.has(entry)) elsewhere = true;
    }
    return elsewhere;
  }

  /**
   * `skillId` spoke over `connection` (a pong, any message of its own but a registration): its registrations bound
   * there answer now, held by it; those whose binding lapsed are bound to it — their old connection (it answers
   * again) or another (it took over). Those that moved to another connection.
   */
  answered(skillId: string, connection: string): EntryRef[] {
    const moved: EntryRef[] = [];
    for (const [sessionId, skills] of this.#sessionsOf(skillId)) {
      let entry = skills.get(skillId);
      if (entry === undefined || entry.unheard === true || (entry.connection !== connection && !this.#lapsed.has(entry))) continue;
      if (entry.connection !== connection) {
        this.#set(sessionId, skills, skillId, (entry = { priority: entry.priority, connection, legacy: entry.legacy }));
        moved.push({ sessionId, skillId });
      }
      this.#lapsed.delete(entry);
      this.#answers.add(entry);
    }
    return moved;
  }

  /**
   * A ping to `skillId` went unanswered (§6.1): its registrations bound to a connection lapse (they stay in the
   * pools), so a skill restarted in a new process while the old one hangs with its socket open can take over.
   */
  lapse(skillId: string): void {
    for (const [, skills] of this.#sessionsOf(skillId)) {
      const entry = skills.get(skillId);
      if (entry?.connection === undefined || entry.unheard === true) continue;
      this.#answers.delete(entry);
      this.#lapsed.add(entry);
    }
  }

  /**
   * A ping to `skillId` went unanswered (§6.1). Its registrations in the pools but not heard from since they went
   * away or were restored (maybe back) cannot be told from a skill gone for good: dormant now, in no pool until it is
   * heard from. Those that changed.
   */
  missed(skillId: string): EntryRef[] {
    const changed: EntryRef[] = [];
    for (const [sessionId, skills] of this.#sessionsOf(skillId)) {
      const entry = skills.get(skillId);
      if (entry?.unheard !== true || entry.away === true) continue;
      this.#set(sessionId, skills, skillId, { priority: entry.priority, connection: undefined, legacy: entry.legacy, unheard: true, away: true, dormant: true });
      changed.push({ sessionId, skillId });
    }
    return changed;
  }

  /**
   * Client connection `connection` opened at `at`: every registration away (not dormant) may be back on it (its bus
   * client reconnecting). How many were away.
   */
  connectionOpened(connection: string, at: number): number {
    this.#open.delete(connection);
    this.#open.set(connection, { number: ++this.#opened, at });
    let back = 0;
    for (const { sessionId, skillId } of this.#inOrder(this.#awayNotDormant.values())) {
      const skills = this.#bySession.get(sessionId)!;
      this.#set(sessionId, skills, skillId, unbound(skills.get(skillId)!, this.#opened));
      back++;
    }
    return back;
  }

  /** Whether any session (including "default") still holds a registration of `skillId`. */
  holds(skillId: string): boolean {
    return this.#bySkill.has(skillId);
  }

  /** Whether any registration of that dialect is dormant (a legacy one: only a broadcast ping it answers brings it back). */
  hasDormant(legacy: boolean): boolean {
    return this.#dormant[legacy ? 'legacy' : 'spec'] > 0;
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

/** A registration without its connection, not heard from since: maybe back on the connections from `backSince` on; away without. */
function unbound(entry: RegistryEntry, backSince: number | undefined): RegistryEntry {
  const base = { priority: entry.priority, connection: undefined, legacy: entry.legacy, unheard: true } as const;
  return backSince === undefined ? { ...base, away: true } : { ...base, backSince };
}
