/**
 * The fallback pipeline plugin, OVOS-FALLBACK-1: one registry, any number of stages (§8.2), each stage a
 * `PipelineStage` whose `match` builds the pool (§5) and runs one contest actor (§6) through the supervisor — or,
 * through `matchLogic`, hands the same contest to the orchestrator to run as the utterance actor's own child.
 */
import type { Unsubscribe } from '../../bus/bus.js';
import type { Config, PriorityRange } from '../../config/defaults.js';
import { createMessage, reply, stringField, utteranceIdOf, withContext, type Message } from '../../bus/message.js';
import { DEFAULT_SESSION_ID, sessionIdOf, type SessionView } from '../../bus/session.js';
import { legacyFallbackPing, legacyFallbackRequest } from '../../dialect/legacy-dialect.js';
import { topics, type DropReason } from '../../dialect/spec-dialect.js';
import { clipList, type Logger } from '../../log/logger.js';
import type { Contest, ContestOptions, ServiceVerdict, Supervisor } from '../../supervisor/supervisor.js';
import { NO_MATCH, type IntentListing, type Match, type MatchLogic, type MatchRequest, type PipelineStage } from '../../pipeline/plugin.js';
import { awaitsPong, fallbackMachine, type FallbackContext, type FallbackEmitted, type FallbackEvent, type FallbackOutput } from '../../../machines/fallback/fallback.machine.js';
import type { RegistryStore } from './registry-store.js';
import { FallbackRegistry } from './registry.js';
import { buildPool, stageTakes } from './pool.js';
import { stageBoundMs } from './stage-bound.js';
import { UtteranceBroadcasts, type UtteranceBroadcast } from './utterance-broadcasts.js';

export { stageBoundMs };
import { LogRateLimiter } from '../../log/rate-limit.js';
import { SkillBreaker, type BreakerTransition } from './breaker.js';

export type FallbackSettings = Config['fallback'];

export interface FallbackPluginOptions {
  /**
   * The orchestrator's match bound (OVOS-PIPELINE-1 §4.4, `orchestrator.matchTimeoutMs`), known only to warn when a
   * stage's pool cannot be asked within it; absent, that warning is off. The bound itself arrives as the match's
   * abort signal.
   */
  readonly matchTimeoutMs?: number;
  /** Registrations kept across restarts: restored now, and kept up to date (registry-store.ts). */
  readonly store?: RegistryStore;
  /**
   * How long before a connection is noticed closed its skill's bus client may already have reconnected: the bus
   * server's dead-peer detection (two heartbeats). A skill whose connection is noticed closed by the heartbeat within
   * this of another connection opening is not taken for away (until that one closes too). Default 0.
   */
  readonly reconnectWindowMs?: number;
  /** Registrations in `store` not heard from for this long are forgotten, at start and while the daemon runs. */
  readonly forgetAfterMs?: number;
}

/**
 * The priority given to a legacy skill learnt from its pong (it never registered with us), unless `fallback.priorities`
 * names it: ovos-workshop's own default (`@fallback_handler(priority=50)`).
 */
export const LEARNED_PRIORITY = 50;

/** `ovos.fallback.reregister` is asked at most this often. */
const REREGISTER_EVERY_MS = 1_000;

/**
 * While legacy registrations are dormant: an utterance broadcast (a probe) with every utterance for this long after one went dormant,
 * then at most once per this long (besides after a connection opens or the bus comes up).
 */
export const PROBE_EVERY_MS = 60_000;

/** How often registrations are checked against `forgetAfterMs` while the daemon runs (at most). */
const SWEEP_EVERY_MS = 3_600_000;

type Ref = { readonly sessionId: string; readonly skillId: string };
const sessionsOf = (entries: readonly Ref[]): string[] => [...new Set(entries.map((entry) => entry.sessionId))];
const skillsOf = (entries: readonly Ref[]): string[] => [...new Set(entries.map((entry) => entry.skillId))];
const ref = (entry: { readonly session_id: string; readonly skill_id: string }): Ref => ({ sessionId: entry.session_id, skillId: entry.skill_id });
/** The sessions or skills of a log line: at most 20 named (what one connection registered is unbounded in count). */
const named = clipList;

/**
 * Registrations and deregistrations accepted, and the registrations they evicted, are logged at most this many times a
 * minute per client connection, the rest counted into the next line: ovos-core's skill manager registers every skill
 * of an install at once, a flood of registrations is a line a second. Without connection identity (in process, on a
 * foreign bus) they count as one connection's: session ids are the sender's to vary.
 */
const REGISTRATION_LINES_PER_MINUTE = 64;
const NO_CONNECTION = 'no connection';

/** A per-skill ping timeout or a legacy skill that could not be learned is logged at most once per key per minute. */
const LOG_WINDOW_MS = 60_000;

/** The legacy `range` when no stage has one (a single-stage deployment). */
const FULL_RANGE: PriorityRange = [0, 100];

/** What `FallbackPlugin.onSkillEvent` reports. */
export interface FallbackSkillEvent {
  readonly type: 'ping_timeout' | 'suspended' | 'resumed';
  readonly skill_id: string;
  /** For `suspended`: how long the skill is left out of every pool. */
  readonly for_ms?: number;
}

/**
 * What `FallbackPlugin.onRegistration` reports: a register or deregister it accepted (§3.1, §3.2), with the message
 * and the client connection it came over — and a registration evicted by the registry bounds (§3.4), reported as
 * deregistered with the register message that took its place. A cluster keeps these to tell a daemon that joins
 * (src/cluster/).
 */
export type FallbackRegistrationChange =
  | { readonly type: 'registered'; readonly session_id: string; readonly skill_id: string; readonly message: Message; readonly connection: string | undefined }
  | { readonly type: 'deregistered'; readonly session_id: string; readonly skill_id: string; readonly message: Message };

/** Listeners of one kind, told in turn: one that throws is logged and costs the others nothing. */
class Listeners<T> {
  #listeners: Array<(value: T) => void> = [];
  readonly #logger: Logger;
  readonly #what: string;

  constructor(logger: Logger, what: string) {
    this.#logger = logger;
    this.#what = what;
  }

  /** Added; the function returned removes it. */
  add(listener: (value: T) => void): () => void {
    this.#listeners = [...this.#listeners, listener];
    return () => {
      this.#listeners = this.#listeners.filter((l) => l !== listener);
    };
  }

  tell(value: T): void {
    for (const listener of this.#listeners) {
      try {
        listener(value);
      } catch (err) {
        this.#logger.error({ err, reason: 'observer_threw' }, `fallback ${this.#what} listener threw`);
      }
    }
  }
}

/** This plugin's contest machine, with its effects. */
type FallbackLogic = ReturnType<typeof fallbackMachine.provide>;

/** One contest of a stage: what it runs, what its start sets up, and its output as the stage's Match. */
interface StageContest {
  readonly options: ContestOptions<FallbackLogic>;
  readonly started: (contest: Contest<FallbackLogic>) => void;
  readonly toMatch: (output: FallbackOutput) => Match | null;
}

export class FallbackPlugin {
  readonly registry: FallbackRegistry;
  /** Suspends skills that keep timing out (breaker.ts); the only protection on a foreign bus. */
  readonly breaker: SkillBreaker;
  readonly #supervisor: Supervisor;
  readonly #settings: FallbackSettings;
  readonly #machine: FallbackLogic;
  readonly #timeoutLog = new LogRateLimiter(LOG_WINDOW_MS);
  readonly #learnRefusalLog = new LogRateLimiter(LOG_WINDOW_MS);
  /** A pool the match bound cannot cover: logged at most once a minute per (stage, pool size). */
  readonly #poolBoundLog = new LogRateLimiter(LOG_WINDOW_MS);
  readonly #registrationLog = new LogRateLimiter(LOG_WINDOW_MS, 1024, REGISTRATION_LINES_PER_MINUTE);
  readonly #matchTimeoutMs: number | undefined;
  /** Hear of skills' ping timeouts and circuit-breaker transitions (metrics). */
  readonly #skillListeners: Listeners<FallbackSkillEvent>;
  /** The register message being applied (a registration it evicts is reported with it). */
  #registering: Message | undefined;
  /** Hear of the registrations and deregistrations accepted (a cluster's shared state). */
  readonly #registrationListeners: Listeners<FallbackRegistrationChange>;
  /** Live contests of every stage: told when a skill becomes unreachable. */
  readonly #contests = new Set<Contest<typeof fallbackMachine>>();
  readonly #reconnectWindowMs: number;
  /** What this plugin hears from the bus directly (not through the supervisor): let go by `close`. */
  readonly #unsubscribe: Unsubscribe[] = [];
  readonly #store: RegistryStore | undefined;
  #sweepTimer: unknown;
  /** The legacy skills' utterance broadcasts (utterance-broadcasts.ts). */
  readonly #broadcasts = new UtteranceBroadcasts<Contest<typeof fallbackMachine>>((broadcast) => this.#released(broadcast));
  /**
   * Early broadcasts are sent while the stages get the utterances that arrived: ovos-core's utterance transformers
   * (a normalizer) may change them before its pipeline, and then an early broadcast asks the skills about an utterance
   * no stage will ask about. The last comparison decides; every arrival is still compared.
   */
  #earlyUseful = true;
  readonly #earlyLog = new LogRateLimiter(LOG_WINDOW_MS);
  readonly #broadcastRange: PriorityRange;
  /**
   * The bus came (back) up and no broadcast ping has gone out since: a legacy skill may have registered while we were
   * not there (it never registers again), so the next utterance probes for it.
   */
  #discover = false;
  #reregisteredAt = -Infinity;
  #reregisterTimer: unknown;
  /** When the last utterance broadcast went out, monotonic ms. */
  #broadcastAt = -Infinity;
  /** When a legacy registration last went dormant (or was restored dormant), monotonic ms. */
  #dormantSince = -Infinity;
  /** skill → until when a pong of it without ids may be a late one (monotonic ms): `#owe`. */
  readonly #owes = new Map<string, number>();
  /** A priority no stage covers, placed in the nearest stage: warned at most once a minute per skill. */
  readonly #placedLog = new LogRateLimiter(LOG_WINDOW_MS);
  /** A legacy skill learnt from its pong: warned at most once a minute per skill. */
  readonly #learnLog = new LogRateLimiter(LOG_WINDOW_MS);

  constructor(supervisor: Supervisor, settings: FallbackSettings, options: FallbackPluginOptions = {}) {
    this.#supervisor = supervisor;
    this.#settings = settings;
    // The utterance broadcast asks for every stage at once: its `range` spans them all (ovos-workshop reads none).
    const ranges = Object.values(settings.stages);
    this.#broadcastRange = ranges.length === 0 ? FULL_RANGE : [Math.min(...ranges.map((r) => r[0])), Math.max(...ranges.map((r) => r[1]))];
    this.#matchTimeoutMs = options.matchTimeoutMs;
    this.#reconnectWindowMs = options.reconnectWindowMs ?? 0;
    this.#store = options.store;
    this.#skillListeners = new Listeners(supervisor.logger, 'skill');
    this.#registrationListeners = new Listeners(supervisor.logger, 'registration');
    this.registry = new FallbackRegistry({
      maxSkillsPerSession: settings.maxSkillsPerSession,
      maxSessions: settings.maxSessions,
      maxSkillsPerConnection: settings.maxSkillsPerConnection,
      maxRegistrationBytesPerConnection: settings.maxRegistrationBytesPerConnection,
      // A registration away gave its place up to a new skill: gone from the file too (it would come back at a restart).
      onEvict: ({ sessionId, skillId }) => {
        options.store?.deregister(sessionId, skillId);
        if (this.#registering !== undefined) this.#tellRegistration({ type: 'deregistered', session_id: sessionId, skill_id: skillId, message: this.#registering });
        if (!this.registry.holds(skillId)) this.breaker.forget(skillId);
        // Counted with the registrations of who registered: a flood evicting others is a line a second, not one each.
        const by = this.#registering === undefined ? undefined : supervisor.connectionOf(this.#registering);
        const line = this.#registrationLog.shouldLog(by ?? NO_CONNECTION, supervisor.clock.monotonic());
        if (line.log) supervisor.logger.info({ reason: 'registry_evicted', skill_id: skillId, session_id: sessionId, by, ...(line.suppressed > 0 ? { suppressed: line.suppressed } : {}) }, 'fallback registration away gave its place up to a new one (registry bound reached)');
      },
    });
    // Intervals on the monotonic clock: a wall-clock step at boot neither widens nor shrinks a suspension.
    this.breaker = new SkillBreaker(settings, () => supervisor.clock.monotonic());
    const bus = supervisor.bus;
    // §6.1: `<skill_id>.fallback.ping`, derived via reply from the inbound utterance message, {utterances, lang}.
    this.#machine = fallbackMachine.provide({
      actions: {
        sendPing: ({ context, self }, { skill_id }) => {
          const ping = reply(context.query.origin, topics.fallbackPing(skill_id), { utterances: [...context.query.utterances], lang: context.query.lang });
          bus.publish(withContext(ping, { contest_id: supervisor.contestIdOf(self) }));
        },
      },
    });
    // §3.1 / §3.2 (the dialect already refused a payload skill_id ≠ context.skill_id). A refusal is returned as the
    // verdict: the supervisor answers it, logs it and counts it, as it does a malformed registration.
    supervisor.on('fallback.register', (inbound, message): ServiceVerdict | void => {
      const sessionId = sessionIdOf(message)!;
      const connection = supervisor.connectionOf(message);
      // A legacy registration (no context.skill_id to check) never takes over a spec skill's from elsewhere.
      const existing = this.registry.entry(sessionId, inbound.skill_id);
      if (inbound.legacy === true && existing !== undefined && !existing.legacy && existing.connection !== connection) {
        return { drop: 'legacy_over_spec' };
      }
      // Not rebound from another connection while it answers over its own (src/plugins/README.md, "Who speaks for a
      // fallback skill").
      if (this.#heldElsewhere(sessionId, inbound.skill_id, message) !== undefined) {
        return { drop: 'skill_bound_elsewhere' };
      }
      this.#registering = message;
      let registered: ReturnType<FallbackRegistry['register']>;
      try {
        registered = this.registry.register(sessionId, inbound.skill_id, inbound.priority, connection, inbound.legacy === true);
      } finally {
        this.#registering = undefined;
      }
      if (registered !== 'registered') return { drop: registered };
      const line = this.#registrationLog.shouldLog(connection ?? NO_CONNECTION, supervisor.clock.monotonic());
      if (line.log) supervisor.logger.info({ skill_id: inbound.skill_id, priority: inbound.priority, session_id: sessionId, connection, dialect: inbound.legacy === true ? 'legacy' : 'spec', ...(line.suppressed > 0 ? { suppressed: line.suppressed } : {}) }, 'fallback skill registered');
      // Not heard from yet: a registration alone, never answered for, is restored dormant after a restart.
      options.store?.register(sessionId, inbound.skill_id, inbound.priority, inbound.legacy === true, false);
      this.#tellRegistration({ type: 'registered', session_id: sessionId, skill_id: inbound.skill_id, message, connection });
      this.#report(this.breaker.alive(inbound.skill_id)); // a skill that registers again is given a fresh start
      this.#warnIfPlaced(inbound.skill_id, inbound.priority);
    });
    // After (re)connecting to an existing bus the registry may be empty while skills stay connected: ask them.
    // Legacy skills know no such request: the next utterance's broadcast ping finds them (`#probeDue`).
    this.#unsubscribe.push(supervisor.bus.onStatus((status) => {
      if (!status.up) return;
      this.#sendReregister();
      this.#discover = true;
    }));
    supervisor.on('fallback.deregister', (inbound, message): ServiceVerdict | void => {
      const sessionId = sessionIdOf(message)!;
      // Legacy skills deregister with only {skill_id}, and on a foreign bus there is no connection to check: as
      // ovos-core does, a legacy deregistration of a legacy registration is accepted — unless the skill answers over
      // another connection (both dialects).
      const entry = this.registry.entry(sessionId, inbound.skill_id);
      const legacyOwn = inbound.legacy === true && entry?.legacy === true;
      const refusal =
        (legacyOwn ? undefined : this.#deregisterRefusal(inbound.skill_id, inbound.context_skill_id, sessionId, message)) ??
        (this.#heldElsewhere(sessionId, inbound.skill_id, message) !== undefined ? 'skill_bound_elsewhere' : undefined);
      if (refusal !== undefined) return { drop: refusal };
      const removed = this.registry.deregister(sessionId, inbound.skill_id);
      options.store?.deregister(sessionId, inbound.skill_id);
      if (removed && !this.registry.holds(inbound.skill_id)) this.breaker.forget(inbound.skill_id);
      this.#tellRegistration({ type: 'deregistered', session_id: sessionId, skill_id: inbound.skill_id, message });
      const connection = supervisor.connectionOf(message);
      const line = this.#registrationLog.shouldLog(connection ?? NO_CONNECTION, supervisor.clock.monotonic());
      if (line.log) supervisor.logger.info({ skill_id: inbound.skill_id, session_id: sessionId, removed, ...(line.suppressed > 0 ? { suppressed: line.suppressed } : {}) }, 'fallback skill deregistered');
    });
    // Embedded bus: a closed connection unbinds every registration made or heard over it, in every session (FALLBACK-1
    // never asks a skill to register again: a spec skill may come back without registering, and ovos-workshop never
    // registers again). Kept where the skill is: bound to its other connection when it already speaks over one; in
    // the pools, maybe back, when the close may have been noticed after its reconnect (`late`: by the heartbeat, or a
    // peer not on loopback) and a client connection opened after it, within the reconnect window before the close;
    // otherwise away — in no pool — until one opens. Maybe back, it is away again once every connection it might be
    // on has closed (a short-lived client, say the `say` command, was not its bus client), and dormant after one
    // missed ping: a dead skill costs at most one ping timeout, a live one is back the moment it is heard.
    supervisor.onConnectionClosed((connection, gone, _spoke, late) => {
      // A close noticed as it happened (see `Bus.onConnectionClosed`): its bus client can only reconnect after it.
      const released = this.registry.releaseConnection(connection, late ? supervisor.clock.monotonic() - this.#reconnectWindowMs : undefined);
      if (released.length === 0) return;
      const skills = [...new Set(released.map((entry) => entry.skillId))];
      for (const skill of skills) {
        const elsewhere = gone.includes(skill) ? undefined : supervisor.latestConnectionOf(skill);
        if (elsewhere !== undefined) this.registry.heard(skill, elsewhere);
      }
      this.#passOverUnavailable(skills);
      const unbound = released.filter((entry) => entry.bound);
      const awayAgain = released.filter((entry) => !entry.bound && this.registry.entry(entry.sessionId, entry.skillId)?.away === true);
      if (unbound.length > 0) {
        const away = unbound.filter((entry) => this.registry.entry(entry.sessionId, entry.skillId)?.away === true);
        supervisor.logger.info(
          { reason: 'connection_closed', connection, skills: named(skillsOf(unbound)), sessions: named(sessionsOf(unbound)), away: named(skillsOf(away)) },
          'fallback registrations kept, unbound: asked again once their skill is heard from or may be back (those away: once a client connection opens)',
        );
      }
      if (awayAgain.length > 0) {
        supervisor.logger.info(
          { reason: 'connection_closed', connection, skills: named(skillsOf(awayAgain)), sessions: named(sessionsOf(awayAgain)) },
          'fallback skills away again: every connection they might have been on has closed without them being heard',
        );
      }
    });
    // A registration away (its connection closed) may be back on any connection that opens: pools hold it again on
    // probation (maybe back), until it is heard from, misses a ping, or every connection it might be on closes.
    // It may also be a dormant skill's: the next utterance probes for legacy ones, and spec ones are asked to register
    // again (`ovos.fallback.reregister`: the skill SDK answers it).
    const unsubscribeOpened = supervisor.bus.onConnectionOpened?.((connection) => {
      const back = this.registry.connectionOpened(connection, supervisor.clock.monotonic());
      if (back > 0) supervisor.logger.debug({ registrations: back }, 'a client connection opened: fallback skills away may be back on it');
      if (this.registry.hasDormant(true)) this.#discover = true;
      if (this.registry.hasDormant(false)) this.#requestReregister();
    });
    if (unsubscribeOpened !== undefined) this.#unsubscribe.push(unsubscribeOpened);
    // Any message a skill sends for itself shows it is on the bus: registrations not heard from since they were
    // restored or their connection closed are back in the pools, bound to the connection it spoke over. Anything but a
    // registration is an answer: registrations bound to that connection are held by it, and those whose binding
    // lapsed (a missed ping) move to it.
    // A connection another holds the skill for (it answers there) does not speak for it: what it sends, refused or
    // dropped, does not make it where the skill is — not when the holder's connection closes either.
    supervisor.speaksFor((skillId, connection) => !this.registry.heldElsewhere(skillId, connection));
    this.#unsubscribe.push(supervisor.onSkillHeard((inbound, connection) => {
      const skillId = inbound.skill_id;
      // A legacy registration is checked first (it never takes over a spec skill's from elsewhere): its handler.
      if ((inbound.kind === 'fallback.register' && inbound.legacy === true) || !this.registry.holds(skillId)) return;
      options.store?.seen(skillId);
      const answer = inbound.kind !== 'fallback.register';
      if (answer) options.store?.heard(skillId);
      const back = this.registry.heard(skillId, connection);
      if (back.length > 0) supervisor.logger.info({ skill_id: skillId, connection, sessions: named(sessionsOf(back)) }, 'fallback skill heard from: back in the pools');
      const moved = connection === undefined || !answer ? [] : this.registry.answered(skillId, connection);
      if (moved.length > 0) {
        supervisor.logger.info(
          { reason: 'skill_taken_over', skill_id: skillId, connection, sessions: named(sessionsOf(moved)) },
          'fallback skill heard over a new connection after it missed a ping over its old one: bound to the new one',
        );
      }
    }));
    // Circuit breaker: any pong — willing or not, late or unsolicited — shows the skill is alive. A legacy pong of a
    // skill that never registered with us (it registered before the daemon joined the bus) teaches us the skill.
    supervisor.on('fallback.pong', (inbound, message) => {
      if (this.#heldElsewhere(sessionIdOf(message)!, inbound.skill_id, message, true) !== undefined) {
        // Not its pong: dropped — here when it answers an utterance broadcast, else by the contest's `correlate`.
        return this.#broadcasts.byId(stringField(message.context, 'contest_id'), sessionIdOf(message)) === undefined ? undefined : { drop: 'skill_bound_elsewhere' };
      }
      this.#report(this.breaker.alive(inbound.skill_id));
      if (inbound.legacy === true && !this.registry.holds(inbound.skill_id)) this.#learn(inbound.skill_id, message);
      return inbound.legacy === true ? this.#answeredBroadcast(inbound.skill_id, inbound.can_handle, message) : undefined;
    });
    // After a restart: every registration the daemon had (registry.restore says how each starts). None is waited for
    // before its skill may be on the bus, and one that misses its ping while maybe back goes dormant.
    const restored = options.store?.entries() ?? [];
    const withConnections = supervisor.bus.onConnectionOpened !== undefined;
    for (const entry of restored) {
      // Registered and never heard from (embedded bus): dormant, so registrations nobody answers for cost nothing.
      const dormant = entry.dormant === true || (withConnections && entry.heard === false);
      this.registry.restore(entry.session_id, entry.skill_id, entry.priority, { legacy: entry.legacy, dormant }, withConnections);
    }
    if (this.registry.hasDormant(true)) this.#dormantSince = supervisor.clock.monotonic();
    if (options.store !== undefined) {
      const dormant = restored.filter((e) => this.registry.entry(e.session_id, e.skill_id)?.dormant === true);
      const neverHeard = withConnections ? restored.filter((e) => e.heard === false) : [];
      supervisor.logger.info(
        {
          reason: 'registry_restored',
          file: options.store.file,
          restored: restored.length,
          skills: named(skillsOf(restored.map(ref))),
          dormant: named(skillsOf(dormant.map(ref))),
          never_heard: named(skillsOf(neverHeard.map(ref))),
        },
        `fallback registrations restored: ${restored.length} from ${options.store.file} (asked once their skill is heard from or may be back)`,
      );
    }
    // Registrations not heard from for `forgetAfterMs` are forgotten while the daemon runs too.
    if (options.store !== undefined && options.forgetAfterMs !== undefined) this.#scheduleSweep(options.store, options.forgetAfterMs);
  }

  /**
   * Who may deregister (§3.2 requires only skill_id): a sender whose context.skill_id is the skill_id, or — without
   * context.skill_id — the connection the registration was made over (embedded bus). An unknown skill_id is a
   * no-op (§3.2), so there is nothing to refuse.
   */
  #deregisterRefusal(skillId: string, contextSkillId: string | undefined, sessionId: string, message: Message): DropReason | undefined {
    if (contextSkillId !== undefined) return contextSkillId === skillId ? undefined : 'context_skill_id_mismatch';
    const entry = this.registry.entry(sessionId, skillId);
    if (entry === undefined) return undefined;
    const connection = this.#supervisor.connectionOf(message);
    return connection !== undefined && connection === entry.connection ? undefined : 'deregister_not_owner';
  }

  /**
   * The connection holding `skillId`'s registration in `sessionId` (`registry.holder`; `available`: the one that puts
   * it in the session's pools) when `message` came over another one; undefined when it came over that one, when no
   * connection holds it, or when the bus shows no connection (a foreign bus, in process).
   */
  #heldElsewhere(sessionId: string, skillId: string, message: Message, available = false): string | undefined {
    const connection = this.#supervisor.connectionOf(message);
    const holder = connection === undefined ? undefined : this.registry.holder(sessionId, skillId, available);
    return holder === connection ? undefined : holder;
  }

  /** Stop listening to the bus (the system closes): a closed plugin publishes nothing when the bus comes back. */
  close(): void {
    for (const unsubscribe of this.#unsubscribe.splice(0)) unsubscribe();
    this.#supervisor.clock.clearTimeout(this.#sweepTimer);
    this.#sweepTimer = undefined;
    this.#supervisor.clock.clearTimeout(this.#reregisterTimer);
    this.#reregisterTimer = undefined;
  }

  /** Ask every spec skill on the bus to register again (the skill SDK answers `ovos.fallback.reregister`). */
  #sendReregister(): void {
    this.#reregisteredAt = this.#supervisor.clock.monotonic();
    this.#supervisor.bus.publish(createMessage(topics.fallbackReregister, {}, { source: 'fallback', session: { session_id: 'default' } }));
  }

  /**
   * A spec registration is dormant and its skill may be on the bus (a connection opened, or it missed a ping while
   * maybe back): ask again — at most once a second; a request within the second is sent at its end if a spec
   * registration is still dormant then.
   */
  #requestReregister(): void {
    if (this.#reregisterTimer !== undefined) return;
    const wait = this.#reregisteredAt + REREGISTER_EVERY_MS - this.#supervisor.clock.monotonic();
    if (wait <= 0) {
      this.#sendReregister();
      return;
    }
    this.#reregisterTimer = this.#supervisor.clock.setTimeout(() => {
      this.#reregisterTimer = undefined;
      if (this.registry.hasDormant(false)) this.#sendReregister();
    }, wait);
  }

  /**
   * A legacy skill answered a broadcast ping without having registered with us (it registered before the daemon
   * joined the bus, or before a registry file was kept): registered now, in "default", at its `fallback.priorities`
   * entry or `LEARNED_PRIORITY`, bound to the connection it spoke over — warned, with the way to place it.
   */
  #learn(skillId: string, message: Message): void {
    const connection = this.#supervisor.connectionOf(message);
    const configured = Object.hasOwn(this.#settings.priorities, skillId);
    const priority = configured ? this.#settings.priorities[skillId]! : LEARNED_PRIORITY;
    const registered = this.registry.register(DEFAULT_SESSION_ID, skillId, priority, connection, true);
    if (registered !== 'registered') {
      const limitBy = registered === 'connection_quota' ? `connection ${connection}` : skillId;
      const { log, suppressed } = this.#learnRefusalLog.shouldLog(`${registered}\u0000learn\u0000${limitBy}`, this.#supervisor.clock.now());
      if (log) this.#supervisor.logger.warn({ reason: registered, skill_id: skillId, connection, suppressed }, 'a legacy fallback skill answered a broadcast ping without having registered with us: not learned');
      return;
    }
    this.#store?.register(DEFAULT_SESSION_ID, skillId, priority, true);
    if (connection !== undefined) this.registry.answered(skillId, connection); // learnt from an answer: held there
    this.#warnIfPlaced(skillId, priority);
    const { log, suppressed } = this.#learnLog.shouldLog(skillId, this.#supervisor.clock.now());
    if (log) {
      this.#supervisor.logger.warn(
        {
          reason: 'fallback_skill_learned',
          skill_id: skillId,
          priority,
          connection,
          suppressed,
          ...(configured ? {} : { hint: `set fallback.priorities.${skillId} (or skills.fallbacks.fallback_priorities in mycroft.conf) to place it` }),
        },
        'a legacy fallback skill answered a broadcast ping without having registered with us: learned',
      );
    }
  }

  /**
   * §5 step 2 × our placement rule (pool.ts `stageTakes`): a skill whose effective priority no stage covers is asked by
   * the nearest stage — said once, at warn, with the stage and how to place it on purpose.
   */
  #warnIfPlaced(skillId: string, registered: number): void {
    const priority = Object.hasOwn(this.#settings.priorities, skillId) ? this.#settings.priorities[skillId]! : registered;
    const stages = Object.entries(this.#settings.stages);
    const ranges = stages.map(([, range]) => range);
    if (ranges.length === 0 || ranges.some(([min, max]) => priority >= min && priority <= max)) return;
    const stage = stages.find(([, range]) => stageTakes(priority, range, ranges))?.[0];
    const { log, suppressed } = this.#placedLog.shouldLog(skillId, this.#supervisor.clock.now());
    if (!log) return;
    this.#supervisor.logger.warn(
      { skill_id: skillId, priority, reason: 'priority_outside_stages', stage, stages: this.#settings.stages, suppressed, hint: `set fallback.priorities.${skillId} or fallback.stages to place it` },
      `no fallback stage covers the skill's priority: asked by the nearest stage, ${String(stage)}`,
    );
  }

  /** §6.1: a skill no longer available to a live contest's session is passed over there now, not after its timeout. */
  #passOverUnavailable(skills: readonly string[]): void {
    for (const contest of this.#contests) {
      const available = this.registry.availableFor(contest.info.sessionId);
      for (const skill_id of skills) if (!available.has(skill_id)) contest.send({ type: 'GONE', skill_id });
    }
    for (const skill of skills) if (!this.registry.holds(skill)) this.breaker.forget(skill);
  }

  /**
   * Registrations not heard from for `forgetAfterMs` are forgotten (a skill uninstalled without deregistering); one
   * heard (its skill is on the bus) is kept fresh instead, so a quiet skill that stays connected is never forgotten.
   */
  #scheduleSweep(store: RegistryStore, forgetAfterMs: number): void {
    this.#sweepTimer = this.#supervisor.clock.setTimeout(() => {
      this.#sweep(store, forgetAfterMs);
      this.#scheduleSweep(store, forgetAfterMs);
    }, Math.min(forgetAfterMs, SWEEP_EVERY_MS));
  }

  #sweep(store: RegistryStore, forgetAfterMs: number): void {
    const forgotten: Ref[] = [];
    for (const stale of store.staleSince(store.now() - forgetAfterMs)) {
      const entry = this.registry.entry(stale.session_id, stale.skill_id);
      if (entry !== undefined && entry.unheard !== true) {
        store.seen(stale.skill_id);
        continue;
      }
      this.registry.deregister(stale.session_id, stale.skill_id);
      store.deregister(stale.session_id, stale.skill_id);
      forgotten.push({ sessionId: stale.session_id, skillId: stale.skill_id });
    }
    if (forgotten.length === 0) return;
    this.#passOverUnavailable(skillsOf(forgotten));
    this.#supervisor.logger.info(
      { reason: 'registry_forgotten', skills: named(skillsOf(forgotten)), sessions: named(sessionsOf(forgotten)), forget_after_ms: forgetAfterMs, file: store.file },
      'fallback registrations not heard from for too long were forgotten',
    );
  }


  /** Ping timeouts and circuit-breaker transitions of fallback skills, as they happen (metrics). */
  onSkillEvent(listener: (event: FallbackSkillEvent) => void): () => void {
    return this.#skillListeners.add(listener);
  }

  #tell(event: FallbackSkillEvent): void {
    this.#skillListeners.tell(event);
  }

  /** Hear of every register and deregister this plugin accepts (not of those it refuses, nor of a restored registry). */
  onRegistration(listener: (change: FallbackRegistrationChange) => void): () => void {
    return this.#registrationListeners.add(listener);
  }

  #tellRegistration(change: FallbackRegistrationChange): void {
    this.#registrationListeners.tell(change);
  }

  /** Breaker transitions are logged once each: suspension at warn, resumption at info. */
  #report(transition: BreakerTransition | undefined): void {
    if (transition !== undefined) this.#tell(transition.type === 'suspended' ? { type: 'suspended', skill_id: transition.skill_id, for_ms: transition.for_ms } : { type: 'resumed', skill_id: transition.skill_id });
    if (transition?.type === 'suspended') {
      const { skill_id, timeouts, for_ms } = transition;
      this.#supervisor.logger.warn({ reason: 'skill_suspended', skill_id, timeouts, for_ms }, 'fallback skill suspended: its pings keep timing out');
    } else if (transition?.type === 'resumed') {
      this.#supervisor.logger.info({ reason: 'skill_resumed', skill_id: transition.skill_id }, 'fallback skill resumed');
    }
  }

  /**
   * Another daemon of the cluster suspended a registered skill for `forMs` more (its breaker counted the timeouts) or
   * heard it again (src/cluster/): the same here at once, rather than after this daemon's own utterances wait out the
   * same timeouts. Logged at info; not reported to `onSkillEvent` (the daemon that decided reports it).
   */
  suspendedElsewhere(skillId: string, forMs: number, by: string): void {
    if (forMs <= 0 || !this.registry.holds(skillId)) return;
    this.breaker.suspend(skillId, forMs);
    this.#supervisor.logger.info({ reason: 'skill_suspended', skill_id: skillId, for_ms: forMs, by }, 'fallback skill suspended by another daemon of the cluster');
  }

  resumedElsewhere(skillId: string, by: string): void {
    if (this.breaker.alive(skillId) === undefined) return;
    this.#supervisor.logger.info({ reason: 'skill_resumed', skill_id: skillId, by }, 'fallback skill resumed by another daemon of the cluster');
  }

  /**
   * A ping of `skillId` went unanswered: a pong of it without ids, for the next two ping timeouts, may be that late
   * one — not taken by any contest then (`awaits`).
   */
  #owe(skillId: string): void {
    this.#owes.set(skillId, this.#supervisor.clock.monotonic() + 2 * this.#settings.pingTimeoutMs);
  }

  /** A broadcast kept reached `skillId` and went unanswered by it less than two ping timeouts ago (any session). */
  #owesBroadcast(skillId: string): boolean {
    const T = this.#settings.pingTimeoutMs;
    return this.#broadcasts.owed(skillId, undefined, this.#supervisor.clock.monotonic(), T, 2 * T);
  }

  #owesPong(skillId: string): boolean {
    const until = this.#owes.get(skillId);
    if (until === undefined) return false;
    if (this.#supervisor.clock.monotonic() < until) return true;
    this.#owes.delete(skillId);
    return false;
  }

  /**
   * A ping went unanswered (§6.1): warn (at most once a minute per skill), count it against the skill, and let its
   * binding lapse — another connection it is heard over takes it (a restarted skill whose old process hangs).
   */
  #pingTimedOut(skillId: string, afterMs: number, logger: Logger): void {
    this.#owe(skillId);
    const { log, suppressed } = this.#timeoutLog.shouldLog(skillId, this.#supervisor.clock.now());
    if (log) logger.warn({ reason: 'ping_timeout', skill_id: skillId, after_ms: afterMs, suppressed }, 'fallback skill did not answer its ping');
    this.#tell({ type: 'ping_timeout', skill_id: skillId });
    this.#report(this.breaker.timeout(skillId));
    this.registry.lapse(skillId);
    this.#missed(skillId);
  }

  /**
   * `skillId` stayed silent when asked (its ping timed out, or the stage bound came first): a registration of it maybe
   * back (not heard from since its connection closed or a restart) is dormant now — so in the file too, across
   * restarts —, in no pool until the skill is heard from. A spec skill is asked to register again (a live one answers
   * that; a dead one costs nothing more).
   */
  #missed(skillId: string): void {
    const dormant = this.registry.missed(skillId);
    if (dormant.length === 0) return;
    for (const { sessionId } of dormant) this.#store?.dormant(sessionId, skillId);
    if (dormant.some(({ sessionId }) => this.registry.entry(sessionId, skillId)?.legacy === true)) this.#dormantSince = this.#supervisor.clock.monotonic();
    this.#passOverUnavailable([skillId]);
    if (dormant.some(({ sessionId }) => this.registry.entry(sessionId, skillId)?.legacy === false)) this.#requestReregister();
    this.#supervisor.logger.info(
      { reason: 'maybe_back_missed', skill_id: skillId, sessions: named(sessionsOf(dormant)) },
      'fallback skill not heard from since its connection closed (or a restart) stayed silent when asked: dormant, asked again once it is heard from',
    );
  }

  /**
   * Dormant legacy registrations come back only by being heard from, an ovos-workshop skill speaks only when pinged,
   * and one that registered before the daemon joined the bus (or whose registration was lost) is known only once it
   * answers a ping. So an utterance's broadcast goes out even with no legacy skill in its pools when either the bus
   * came up, or a client connection opened while legacy registrations are dormant, since the last broadcast (the skill
   * may be on it), or legacy registrations are dormant — every utterance within `PROBE_EVERY_MS` of one going
   * dormant (a live skill that was only slow is back at once), then once per `PROBE_EVERY_MS`. A skill that is alive
   * answers — heard (or learnt), it is in the pools from the next utterance on.
   */
  #probeDue(): boolean {
    if (this.#discover) return true;
    if (!this.registry.hasDormant(true)) return false;
    const now = this.#supervisor.clock.monotonic();
    return now - this.#dormantSince < PROBE_EVERY_MS || now - this.#broadcastAt >= PROBE_EVERY_MS;
  }

  /**
   * The utterance arrived (the orchestrator's entry, or ovos-core's seen on the bus by the stage service): with
   * `fallback.earlyStart`, and a legacy skill in the session's pools (or a probe due), its broadcast goes out now, so
   * the answers are in hand when a fallback stage is reached. The orchestrator tells every stage; the plugin acts
   * once per arrival.
   */
  onUtterance(entry: Message, lang: string, session: SessionView, inPipeline: boolean): void {
    const known = this.#broadcasts.ofArrival(session.sessionId, entry);
    if (known !== undefined) {
      if (inPipeline) this.#sendEarly(known);
      return;
    }
    const raw = entry.data['utterances'];
    const utterances = Array.isArray(raw) ? raw.filter((u): u is string => typeof u === 'string') : [];
    if (!this.#settings.earlyStart || utterances.length === 0 || !(this.#legacyIn(session) || this.#probeDue())) return;
    const arrival = this.#newBroadcast(session.sessionId, utteranceIdOf(entry), utterances, lang, entry, false);
    this.#broadcasts.add(arrival);
    if (inPipeline) this.#sendEarly(arrival);
  }

  /** The utterance was handled here: its broadcast is done with (a stage contest still taking answers keeps it). */
  onHandled(entry: Message, session: SessionView): void {
    this.#broadcasts.handled(session.sessionId, utteranceIdOf(entry));
  }

  /** Whether the registration `skillId` answers for in the session is an ovos-workshop skill's. */
  #isLegacy(sessionId: string, skillId: string): boolean {
    return this.registry.effectiveEntry(sessionId, skillId)?.legacy === true;
  }

  #legacyIn(session: Pick<SessionView, 'sessionId' | 'blacklistedSkills' | 'fallbackHandlers'>): boolean {
    return this.pool(session).some((skillId) => this.#isLegacy(session.sessionId, skillId));
  }

  #sendEarly(arrival: UtteranceBroadcast<Contest<typeof fallbackMachine>>): void {
    if (arrival.sentAt === undefined && this.#earlyUseful) this.#sendBroadcast(arrival);
  }

  #newBroadcast(sessionId: string, utteranceId: string | undefined, utterances: readonly string[], lang: string, origin: Message, checked: boolean): UtteranceBroadcast<Contest<typeof fallbackMachine>> {
    return {
      id: this.#supervisor.reserveId('fallback-broadcast'),
      sessionId,
      utteranceId,
      utterances: [...utterances],
      lang,
      origin,
      recordedAt: this.#supervisor.clock.monotonic(),
      sentAt: undefined,
      reached: new Map(),
      said: new Map(),
      contests: new Set(),
      checked,
    };
  }

  /**
   * The broadcast a stage of `request`'s utterance takes answers from: the one sent for it (at its arrival or an
   * earlier stage) when it asked the same utterances in the same language and reached every legacy skill of `legacy`
   * (this stage's) as it is bound now; else one sent now — keeping the answers still good. A stage that meets an
   * arrival first says whether early broadcasts ask what the stages ask (`#earlyUseful`).
   */
  #broadcastFor(request: Omit<MatchRequest, 'signal'>, legacy: readonly string[]): UtteranceBroadcast<Contest<typeof fallbackMachine>> {
    const sessionId = request.session.sessionId;
    const utteranceId = utteranceIdOf(request.message);
    const found = this.#broadcasts.find(sessionId, utteranceId, request.utterances, request.lang, this.#supervisor.clock.monotonic());
    if (found.compared !== undefined) this.#earlyChecked(found.compared.same, found.compared.arrival, request);
    const last = found.broadcast;
    if (last !== undefined && last.sentAt === undefined) {
      this.#sendBroadcast(last);
      return last;
    }
    if (last !== undefined && !legacy.some((skillId) => this.#unreached(last, sessionId, skillId))) return last;
    // None yet, or a skill it could not reach (registered, or bound to another connection, since it went out).
    const broadcast = this.#newBroadcast(sessionId, utteranceId, request.utterances, request.lang, request.message, true);
    if (last !== undefined) {
      for (const [skillId, said] of last.said) if (said.connection === this.#connectionOf(sessionId, skillId)) broadcast.said.set(skillId, said);
      this.#broadcasts.remove(last);
    }
    this.#broadcasts.add(broadcast);
    this.#sendBroadcast(broadcast);
    return broadcast;
  }

  #connectionOf(sessionId: string, skillId: string): string | undefined {
    return this.registry.effectiveEntry(sessionId, skillId)?.connection;
  }

  /** `skillId` as it is bound now neither answered `broadcast` nor could hear it when it went out. */
  #unreached(broadcast: UtteranceBroadcast<Contest<typeof fallbackMachine>>, sessionId: string, skillId: string): boolean {
    const connection = this.#connectionOf(sessionId, skillId);
    const said = broadcast.said.get(skillId);
    if (said !== undefined) return said.connection !== connection;
    return !broadcast.reached.has(skillId) || broadcast.reached.get(skillId) !== connection;
  }

  /** The answers of `broadcast` good for `skills` as they are bound now. */
  #answersOf(broadcast: UtteranceBroadcast<Contest<typeof fallbackMachine>> | undefined, sessionId: string, skills: readonly string[]): Record<string, boolean> {
    const answered: Record<string, boolean> = {};
    for (const skillId of skills) {
      const said = broadcast?.said.get(skillId);
      if (said !== undefined && said.connection === this.#connectionOf(sessionId, skillId)) answered[skillId] = said.canHandle;
    }
    return answered;
  }

  #earlyChecked(same: boolean, arrival: UtteranceBroadcast<Contest<typeof fallbackMachine>>, request: Omit<MatchRequest, 'signal'>): void {
    const wasted = !same && arrival.sentAt !== undefined;
    if (same !== this.#earlyUseful || wasted) {
      const { log, suppressed } = this.#earlyLog.shouldLog(same ? 'useful' : 'unused', this.#supervisor.clock.now());
      if (log && !same) {
        this.#supervisor.logger.info(
          { reason: 'early_broadcast_unused', arrived: arrival.utterances.slice(0, 3), asked: request.utterances.slice(0, 3), arrived_lang: arrival.lang, lang: request.lang, suppressed },
          'the fallback stages got other utterances than arrived (an utterance transformer?): no early broadcast until they match again',
        );
      } else if (log) {
        this.#supervisor.logger.info({ reason: 'early_broadcast_useful', suppressed }, 'the fallback stages get the utterances that arrive again: early broadcasts resume');
      }
    }
    this.#earlyUseful = same;
  }

  #sendBroadcast(broadcast: UtteranceBroadcast<Contest<typeof fallbackMachine>>): void {
    broadcast.sentAt = this.#supervisor.clock.monotonic();
    const reached = new Map<string, string | undefined>();
    for (const skillId of this.registry.availableFor(broadcast.sessionId).keys()) {
      const entry = this.registry.effectiveEntry(broadcast.sessionId, skillId);
      if (entry?.legacy === true) reached.set(skillId, entry.connection);
    }
    broadcast.reached = reached;
    this.#broadcastAt = broadcast.sentAt;
    this.#discover = false;
    const ping = legacyFallbackPing(broadcast.origin, broadcast.utterances, broadcast.lang, this.#broadcastRange);
    this.#supervisor.bus.publish(withContext(ping, { contest_id: broadcast.id }));
  }

  /**
   * No stage takes `broadcast` any more: a skill it reached that has not answered owes it a pong, which a pong of it
   * without ids could be (ovos-core #859, `#owe`).
   */
  #released(broadcast: UtteranceBroadcast<Contest<typeof fallbackMachine>>): void {
    if (broadcast.sentAt === undefined) return;
    for (const skillId of broadcast.reached.keys()) if (!broadcast.said.has(skillId)) this.#owe(skillId);
  }

  /**
   * A legacy pong, when it answers an utterance's broadcast: kept (within its ping timeout: a later one is late, §6.1)
   * with the connection it came over, and handed to the stage contests taking that broadcast's answers — taken from
   * the supervisor's routing. A pong built as a fresh message (no contest_id, no utterance_id) answers the one
   * broadcast still awaiting that skill — in the session it names, or any for "default" (ovos-bus-client's stamp) —
   * unless the skill owes a pong it may be (ovos-core #859: a broadcast it left unanswered); with none or several, the
   * supervisor's routing has it (src/plugins/README.md "Replies without utterance_id").
   */
  #answeredBroadcast(skillId: string, canHandle: boolean, message: Message): 'taken' | undefined {
    const id = stringField(message.context, 'contest_id');
    const sessionId = sessionIdOf(message);
    const now = this.#supervisor.clock.monotonic();
    const T = this.#settings.pingTimeoutMs;
    let broadcast = this.#broadcasts.byId(id, sessionId);
    if (id === undefined && utteranceIdOf(message) === undefined) {
      const scope = sessionId === DEFAULT_SESSION_ID ? undefined : sessionId;
      const awaiting = this.#owesPong(skillId) || this.#broadcasts.owed(skillId, scope, now, T, 2 * T) ? [] : this.#broadcasts.awaiting(skillId, scope, now, T);
      if (awaiting.length === 1) broadcast = awaiting[0];
    }
    if (broadcast === undefined) return undefined;
    const late = broadcast.sentAt === undefined || now - broadcast.sentAt >= T;
    if (!late && !broadcast.said.has(skillId)) broadcast.said.set(skillId, { canHandle, connection: this.#supervisor.connectionOf(message) });
    for (const contest of broadcast.contests) {
      if ((contest.actor.getSnapshot() as { context: FallbackContext }).context.pool.includes(skillId)) contest.send({ type: 'PONG', skill_id: skillId, can_handle: canHandle });
    }
    return 'taken';
  }

  /** Whether `request`'s utterance had its broadcast already. */
  #broadcastSentFor(request: Omit<MatchRequest, 'signal'>): boolean {
    return this.#broadcasts.sentFor(request.session.sessionId, utteranceIdOf(request.message), request.utterances, request.lang, this.#supervisor.clock.monotonic());
  }

  /** Stage ids configured for this plugin, each with its range. */
  stages(): PipelineStage[] {
    return Object.entries(this.#settings.stages).map(([id, range]) => this.stage(id, range));
  }

  /** One pipeline entry (§8.2); `range` absent = a single-stage deployment with no restriction. */
  stage(pipelineId: string, range?: PriorityRange): PipelineStage {
    return {
      pipelineId,
      match: (request) => this.#match(pipelineId, range, request),
      matchLogic: (request) => this.#matchLogic(pipelineId, range, request),
      // §5: an empty pool returns None immediately — but `match` runs when this utterance is due a probe (it sends it).
      declines: (request) => this.pool(request.session, range).length === 0 && !(this.#probeDue() && !this.#broadcastSentFor(request)),
      onUtterance: (entry, lang, session, inPipeline) => this.onUtterance(entry, lang, session, inPipeline),
      onHandled: (entry, session) => this.onHandled(entry, session),
      intents: (sessionId) => this.#intents(sessionId, range),
      // A legacy winner is dispatched the way ovos-workshop's FallbackSkill listens for it.
      dispatchFor: (dispatch, match, utterance) => {
        if (!this.#isLegacy(utterance.session.sessionId, match.skill_id)) return [dispatch];
        return [legacyFallbackRequest(dispatch, match.skill_id, utterance.utterances, range ?? FULL_RANGE)];
      },
    };
  }

  /** The effective pool for a session and stage (§5). */
  pool(session: Pick<SessionView, 'sessionId' | 'blacklistedSkills' | 'fallbackHandlers'>, range?: PriorityRange): string[] {
    const input = {
      available: this.registry.availableFor(session.sessionId),
      priorityOverrides: this.#settings.priorities,
      blacklistedSkills: session.blacklistedSkills,
      mode: this.#settings.mode,
      whitelist: this.#settings.whitelist,
      blacklist: this.#settings.blacklist,
      ...(session.fallbackHandlers === undefined ? {} : { preference: session.fallbackHandlers }),
      ...(range === undefined ? {} : { range, stages: Object.values(this.#settings.stages) }),
    };
    // After §5 (like a policy filter, so the others keep their order): skills the breaker has suspended.
    return buildPool(input)
      .map((entry) => entry.skill_id)
      .filter((skillId) => !this.breaker.suspended(skillId));
  }

  /**
   * §6.1 × PIPELINE-1 §4.4: asking every skill of `pool` may take pool × pingTimeoutMs, the match bound cuts the
   * stage before that — the skills at the end (where the catch-all sits, §3.3) go unasked when the ones before them
   * stay silent. Warn, at most once a minute per (stage, pool size).
   */
  #checkPoolAgainstBound(pipelineId: string, poolSize: number): void {
    const bound = this.#matchTimeoutMs;
    const pingTimeoutMs = this.#settings.pingTimeoutMs;
    if (bound === undefined || poolSize * pingTimeoutMs <= bound) return;
    const { log, suppressed } = this.#poolBoundLog.shouldLog(`${pipelineId}\u0000${poolSize}`, this.#supervisor.clock.now());
    if (!log) return;
    this.#supervisor.logger.warn(
      {
        reason: 'pool_exceeds_match_bound',
        stage: pipelineId,
        pool_size: poolSize,
        ping_timeout_ms: pingTimeoutMs,
        worst_case_ms: poolSize * pingTimeoutMs,
        match_timeout_ms: bound,
        // Skill k is asked at k × pingTimeoutMs when every one before it stays silent; the bound fires first at a tie.
        asked_if_all_silent: Math.ceil(bound / pingTimeoutMs),
        hint: 'lower fallback.pingTimeoutMs or raise orchestrator.matchTimeoutMs',
        suppressed,
      },
      'fallback stage pool cannot be asked within the match bound: silent skills would leave the last ones unasked',
    );
  }

  /**
   * The match bound (the request's abort signal, PIPELINE-1 §4.4) stopped the contest while it was still asking:
   * one warn naming the skill it was waiting for and every skill that was never asked. Never silent.
   */
  #reportCut(pipelineId: string, context: FallbackContext, startedAt: number, logger: Logger): void {
    const awaiting = context.pool[context.index];
    const chose = context.cut ? (context.outcomes.find((o) => o.outcome === 'willing')?.skill_id ?? null) : null;
    // Asked by the broadcast or pinged in turn, or gone: not "never asked".
    const neverAsked = context.pool.slice(context.index + 1).filter((skillId) => !context.gone.includes(skillId) && !context.broadcast.includes(skillId));
    logger.warn(
      {
        reason: 'match_bound_cut',
        stage: pipelineId,
        awaiting,
        chose,
        never_asked: neverAsked,
        asked: (context.cut ? context.outcomes.slice(0, context.decidedBeforeCut) : context.outcomes).map((o) => o.skill_id),
        after_ms: this.#supervisor.clock.now() - startedAt,
        ...(this.#matchTimeoutMs === undefined ? {} : { match_timeout_ms: this.#matchTimeoutMs }),
        ping_timeout_ms: this.#settings.pingTimeoutMs,
        hint: 'lower fallback.pingTimeoutMs or raise orchestrator.matchTimeoutMs',
      },
      chose === null
        ? 'fallback stage cut by the match bound: skills never asked'
        : 'fallback stage cut by the match bound: the first skill that had said yes was chosen over silent ones ahead of it',
    );
  }

  async #match(pipelineId: string, range: PriorityRange | undefined, request: MatchRequest): Promise<Match | null> {
    // Messages already published when match was called are delivered first (the in-process bus delivers from a
    // microtask): a skill that registered just before is in the pool — an embedder needs no `await bus.idle()`.
    await Promise.resolve();
    const contest = this.#contest(pipelineId, range, request);
    if (contest === null) return null;
    const run = this.#supervisor.spawn(contest.options);
    contest.started(run);
    const result = await run.until(request.signal);
    return result.status === 'done' ? contest.toMatch(result.output) : null;
  }

  /**
   * `match` as the contest machine itself, for the orchestrator to run as the utterance actor's child (the
   * orchestrator begins an utterance one microtask after it arrives, so what was published before is delivered).
   */
  #matchLogic(pipelineId: string, range: PriorityRange | undefined, request: Omit<MatchRequest, 'signal'>): MatchLogic {
    const contest = this.#contest(pipelineId, range, request);
    if (contest === null) return NO_MATCH;
    return this.#supervisor.child(contest.options, contest.toMatch, contest.started);
  }

  /** One contest of a stage (§6), as `match` and `matchLogic` run it; null when the stage returns None at once. */
  #contest(pipelineId: string, range: PriorityRange | undefined, request: Omit<MatchRequest, 'signal'>): StageContest | null {
    const pool = this.pool(request.session, range);
    const broadcast = pool.filter((skillId) => this.#isLegacy(request.session.sessionId, skillId));
    // The utterance's one broadcast asks the legacy skills (sent now unless at its arrival or an earlier stage); with
    // none in the pool it still goes out as a probe when one is due.
    const shared = broadcast.length > 0 || (this.#probeDue() && !this.#broadcastSentFor(request)) ? this.#broadcastFor(request, broadcast) : undefined;
    if (pool.length === 0) return null; // §5: an empty pool returns None immediately
    this.#checkPoolAgainstBound(pipelineId, pool.length);
    const startedAt = this.#supervisor.clock.now();
    const answered = this.#answersOf(shared, request.session.sessionId, broadcast);
    const options: ContestOptions<FallbackLogic> = {
      kind: 'fallback',
      label: pipelineId,
      sessionId: request.session.sessionId,
      utteranceId: utteranceIdOf(request.message),
      logic: this.#machine,
      input: {
        pool,
        pingTimeoutMs: this.#settings.pingTimeoutMs,
        query: { origin: request.message, utterances: request.utterances, lang: request.lang },
        broadcast,
        broadcastAgoMs: shared?.sentAt === undefined ? 0 : Math.max(0, this.#supervisor.clock.monotonic() - shared.sentAt),
        answered,
        ...(this.#matchTimeoutMs === undefined ? {} : { boundMs: stageBoundMs(this.#matchTimeoutMs) }),
      },
      routes: ['fallback.pong'],
      // A pong for a skill that answers over another connection is not its pong: never counted.
      correlate: (inbound, message): FallbackEvent | DropReason =>
        inbound.kind !== 'fallback.pong' ? 'not_awaited'
        : this.#heldElsewhere(request.session.sessionId, inbound.skill_id, message, true) !== undefined ? 'skill_bound_elsewhere'
        : { type: 'PONG', skill_id: inbound.skill_id, can_handle: inbound.can_handle },
      // A pong built as a fresh message (no utterance or contest id) is this contest's if it alone awaits that skill —
      // and the skill owes no earlier pong, which that one could be (ovos-core #859): to a ping of its own, or to an
      // utterance broadcast it left unanswered, in any session (one still kept whose utterance never reached the
      // skill's stage owes it too).
      awaits: (inbound, snapshot) =>
        inbound.kind === 'fallback.pong' && !this.#owesPong(inbound.skill_id) && !this.#owesBroadcast(inbound.skill_id) && awaitsPong(snapshot.context, inbound.skill_id),
    };
    const started = (contest: Contest<FallbackLogic>): void => {
      // As it happens (not after the contest), so a late pong that follows a timeout resets the count after it.
      contest.actor.on('ping.timeout', (event: FallbackEmitted) => {
        if (event.type === 'ping.timeout') this.#pingTimedOut(event.skill_id, event.after_ms, contest.logger);
      });
      contest.actor.on('ping.timeouts', (event: FallbackEmitted) => {
        if (event.type !== 'ping.timeouts') return;
        for (const skillId of event.skill_ids) this.#pingTimedOut(skillId, event.after_ms, contest.logger);
        for (const skillId of event.silent) {
          if (event.skill_ids.includes(skillId)) continue;
          this.#owe(skillId);
          this.#missed(skillId);
        }
      });
      this.#contests.add(contest);
      if (shared !== undefined && broadcast.length > 0) this.#broadcasts.take(shared, contest, contest.done);
      void contest.done.then((result) => {
        this.#contests.delete(contest);
        // The stage bound decided (skills still silent), or — without one — the match bound stopped the contest
        // (`match_aborted`); any other stop (bus down, shutdown) has its own reason, logged by the supervisor. A
        // contest that failed as it began has no context to report from.
        const context = (contest.actor.getSnapshot() as { context?: FallbackContext }).context;
        if (context !== undefined && (context.cut || (result.status === 'stopped' && result.reason === 'match_aborted'))) this.#reportCut(pipelineId, context, startedAt, contest.logger);
      });
    };
    // §6.3 Match shape: the selected skill, reserved intent_name "fallback", empty slots.
    const toMatch = (output: FallbackOutput): Match | null =>
      output === null ? null : { skill_id: output.skill_id, intent_name: 'fallback', lang: request.lang, utterance: request.utterances[0]!, slots: {} };
    return { options, started, toMatch };
  }

  /** Utterance broadcasts this plugin still keeps (for tests and inspection): at most one a session, and a bounded number. */
  get utteranceBroadcasts(): number {
    return this.#broadcasts.size;
  }

  /** Fallback contests this plugin still tracks (live ones only: a finished contest is let go; for tests and benchmarks). */
  get liveContests(): number {
    return this.#contests.size;
  }

  /** PIPELINE-1 §10: what this stage could dispatch to for the session (its pool without session preferences). */
  #intents(sessionId: string, range: PriorityRange | undefined): IntentListing[] {
    return this.pool({ sessionId, blacklistedSkills: [] }, range).map((skill_id) => ({ intent_name: 'fallback', skill_id, lang: '*' }));
  }
}
