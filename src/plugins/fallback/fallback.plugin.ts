/**
 * The fallback pipeline plugin, OVOS-FALLBACK-1: one registry, any number of stages (§8.2), each stage a
 * `PipelineStage` whose `match` builds the pool (§5) and runs one contest actor (§6) through the supervisor.
 */
import type { Unsubscribe } from '../../bus/bus.js';
import type { Config, PriorityRange } from '../../config/defaults.js';
import { createMessage, reply, utteranceIdOf, withContext, type Message } from '../../bus/message.js';
import { sessionIdOf, type SessionView } from '../../bus/session.js';
import { legacyFallbackPing, legacyFallbackRequest } from '../../dialect/legacy-dialect.js';
import { registrationRefused, topics, type DropReason } from '../../dialect/spec-dialect.js';
import type { Logger } from '../../log/logger.js';
import type { Contest, Supervisor } from '../../supervisor/supervisor.js';
import type { IntentListing, Match, MatchRequest, PipelineStage } from '../../pipeline/plugin.js';
import { fallbackMachine, type FallbackContext, type FallbackEmitted, type FallbackEvent } from '../../../machines/fallback/fallback.machine.js';
import type { RegistryStore } from './registry-store.js';
import { FallbackRegistry } from './registry.js';
import { buildPool } from './pool.js';
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
   * server's dead-peer detection (two heartbeats). A legacy skill whose connection is noticed closed by the heartbeat
   * within this of another connection opening is not taken for away (until that one closes too). Default 0.
   */
  readonly reconnectWindowMs?: number;
}

/** A per-skill ping timeout or a refused registration is logged at most once per key per minute. */
const LOG_WINDOW_MS = 60_000;

/** The legacy ping's `range` when a stage has none (a single-stage deployment). */
const FULL_RANGE: PriorityRange = [0, 100];

/** What `FallbackPlugin.onSkillEvent` reports. */
export interface FallbackSkillEvent {
  readonly type: 'ping_timeout' | 'suspended' | 'resumed';
  readonly skill_id: string;
}

export class FallbackPlugin {
  readonly registry: FallbackRegistry;
  /** Suspends skills that keep timing out (breaker.ts); the only protection on a foreign bus. */
  readonly breaker: SkillBreaker;
  readonly #supervisor: Supervisor;
  readonly #settings: FallbackSettings;
  readonly #machine;
  readonly #timeoutLog = new LogRateLimiter(LOG_WINDOW_MS);
  readonly #refusalLog = new LogRateLimiter(LOG_WINDOW_MS);
  /** A pool the match bound cannot cover: logged at most once a minute per (stage, pool size). */
  readonly #poolBoundLog = new LogRateLimiter(LOG_WINDOW_MS);
  readonly #matchTimeoutMs: number | undefined;
  /** Hear of skills' ping timeouts and circuit-breaker transitions (metrics). */
  #skillListeners: Array<(event: FallbackSkillEvent) => void> = [];
  /** Live contests of every stage: told when a skill becomes unreachable. */
  readonly #contests = new Set<Contest<typeof fallbackMachine>>();
  readonly #reconnectWindowMs: number;
  /** What this plugin hears from the bus directly (not through the supervisor): let go by `close`. */
  readonly #unsubscribe: Unsubscribe[] = [];

  constructor(supervisor: Supervisor, settings: FallbackSettings, options: FallbackPluginOptions = {}) {
    this.#supervisor = supervisor;
    this.#settings = settings;
    this.#matchTimeoutMs = options.matchTimeoutMs;
    this.#reconnectWindowMs = options.reconnectWindowMs ?? 0;
    this.registry = new FallbackRegistry({ maxSkillsPerSession: settings.maxSkillsPerSession, maxSessions: settings.maxSessions });
    this.breaker = new SkillBreaker(settings, () => supervisor.clock.now());
    const bus = supervisor.bus;
    // §6.1: `<skill_id>.fallback.ping`, derived via reply from the inbound utterance message, {utterances, lang}.
    this.#machine = fallbackMachine.provide({
      actions: {
        sendPing: ({ context, self }, { skill_id }) => {
          const ping = reply(context.query.origin, topics.fallbackPing(skill_id), { utterances: [...context.query.utterances], lang: context.query.lang });
          bus.publish(withContext(ping, { contest_id: self.id }));
        },
        // Legacy dialect: one broadcast asks every legacy skill of the pool; their pongs reply to it, so they carry
        // this contest's session, utterance_id and contest_id.
        sendBroadcast: ({ context, self }) => {
          const ping = legacyFallbackPing(context.query.origin, context.query.utterances, context.query.lang, context.query.range ?? FULL_RANGE);
          bus.publish(withContext(ping, { contest_id: self.id }));
        },
      },
    });
    // §3.1 / §3.2 (the dialect already refused a payload skill_id ≠ context.skill_id).
    supervisor.on('fallback.register', (inbound, message) => {
      const sessionId = sessionIdOf(message)!;
      const connection = supervisor.connectionOf(message);
      // A legacy registration (no context.skill_id to check) never takes over a spec skill's from elsewhere.
      const existing = this.registry.entry(sessionId, inbound.skill_id);
      if (inbound.legacy === true && existing !== undefined && !existing.legacy && existing.connection !== connection) {
        this.#refuse('legacy_over_spec', message, inbound.skill_id);
        return;
      }
      if (this.registry.register(sessionId, inbound.skill_id, inbound.priority, connection, inbound.legacy === true) === 'registry_full') {
        this.#refuse('registry_full', message, inbound.skill_id);
        return;
      }
      supervisor.logger.info({ skill_id: inbound.skill_id, priority: inbound.priority, session_id: sessionId, connection, dialect: inbound.legacy === true ? 'legacy' : 'spec' }, 'fallback skill registered');
      options.store?.register(sessionId, inbound.skill_id, inbound.priority, inbound.legacy === true);
      this.#report(this.breaker.alive(inbound.skill_id)); // a skill that registers again is given a fresh start
      const priority = Object.hasOwn(this.#settings.priorities, inbound.skill_id) ? this.#settings.priorities[inbound.skill_id]! : inbound.priority;
      const ranges = Object.values(this.#settings.stages);
      if (!ranges.some(([min, max]) => priority >= min && priority <= max)) {
        supervisor.logger.warn({ skill_id: inbound.skill_id, priority, reason: 'priority_outside_stages', stages: this.#settings.stages }, 'fallback skill will never be asked: no stage covers its priority');
      }
    });
    // After (re)connecting to an existing bus the registry may be empty while skills stay connected: ask them.
    this.#unsubscribe.push(supervisor.bus.onStatus((status) => {
      if (status.up) bus.publish(createMessage(topics.fallbackReregister, {}, { source: 'fallback', session: { session_id: 'default' } }));
    }));
    supervisor.on('fallback.deregister', (inbound, message) => {
      const sessionId = sessionIdOf(message)!;
      // Legacy skills deregister with only {skill_id}, and on a foreign bus there is no connection to check: as
      // ovos-core does, a legacy deregistration of a legacy registration is accepted.
      const legacyOwn = inbound.legacy === true && this.registry.entry(sessionId, inbound.skill_id)?.legacy === true;
      const refusal = legacyOwn ? undefined : this.#deregisterRefusal(inbound.skill_id, inbound.context_skill_id, sessionId, message);
      if (refusal !== undefined) {
        this.#refuse(refusal, message, inbound.skill_id);
        return;
      }
      const removed = this.registry.deregister(sessionId, inbound.skill_id);
      options.store?.deregister(sessionId, inbound.skill_id);
      if (removed && !this.registry.holds(inbound.skill_id)) this.breaker.forget(inbound.skill_id);
      supervisor.logger.info({ skill_id: inbound.skill_id, session_id: sessionId, removed }, 'fallback skill deregistered');
    });
    // Embedded bus: a closed connection takes every spec registration made over it, in every session, with it; a
    // legacy one is kept (ovos-workshop never registers again by itself: its bus client reconnects, and its first pong
    // binds it to the new connection). Kept where the skill is: bound to its other connection when it already speaks
    // over one; in the pools when the close may have been noticed after its reconnect (`late`: by the heartbeat, or a
    // peer not on loopback) and a client connection opened after it, within the reconnect window before the close (it
    // may be its own); otherwise away — in no pool — until one opens. Back in the pools but not yet heard from, it is
    // away again once every connection it might be on has closed (a short-lived client, say the `say` command, was not
    // its bus client): a dead skill does not cost every contest its ping timeout.
    supervisor.onConnectionClosed((connection, gone, _spoke, late) => {
      // A close noticed as it happened (see `Bus.onConnectionClosed`): its bus client can only reconnect after it.
      const released = this.registry.releaseConnection(connection, late ? supervisor.clock.now() - this.#reconnectWindowMs : undefined);
      if (released.length === 0) return;
      const skills = [...new Set(released.map((entry) => entry.skillId))];
      for (const skill of skills) {
        const elsewhere = gone.includes(skill) ? undefined : supervisor.latestConnectionOf(skill);
        if (elsewhere !== undefined) this.registry.bindUnbound(skill, elsewhere);
      }
      // §6.1: a skill that can no longer answer in a contest's session (the registration that put it in that pool
      // went with the connection, or is away) is passed over now, not after its timeout. The same skill_id registered
      // over another connection, for another session, is another instance and stays.
      for (const contest of this.#contests) {
        const available = this.registry.availableFor(contest.info.sessionId);
        for (const skill_id of skills) if (!available.has(skill_id)) contest.send({ type: 'GONE', skill_id });
      }
      for (const skill of skills) if (!this.registry.holds(skill)) this.breaker.forget(skill);
      const removed = released.filter((entry) => !entry.kept);
      const kept = released.filter((entry) => entry.kept && entry.bound);
      const awayAgain = released.filter((entry) => !entry.bound && this.registry.entry(entry.sessionId, entry.skillId)?.away === true);
      const sessionsOf = (entries: typeof released): string[] => [...new Set(entries.map((entry) => entry.sessionId))];
      const skillsOf = (entries: typeof released): string[] => [...new Set(entries.map((entry) => entry.skillId))];
      if (removed.length > 0) supervisor.logger.info({ reason: 'connection_closed', connection, skills: skillsOf(removed), sessions: sessionsOf(removed) }, 'fallback registrations removed');
      if (kept.length > 0) {
        const away = kept.filter((entry) => this.registry.entry(entry.sessionId, entry.skillId)?.away === true);
        supervisor.logger.info(
          { reason: 'connection_closed', connection, skills: skillsOf(kept), sessions: sessionsOf(kept), away: skillsOf(away) },
          'legacy fallback registrations kept: asked again over the connection their bus client reconnects on (those away: once a client connection opens)',
        );
      }
      if (awayAgain.length > 0) {
        supervisor.logger.info(
          { reason: 'connection_closed', connection, skills: skillsOf(awayAgain), sessions: sessionsOf(awayAgain) },
          'legacy fallback skills away again: every connection they might have been on has closed without them being heard',
        );
      }
    });
    // A legacy skill away (its connection closed) may be back on any connection that opens: pools hold it again, and
    // its first pong binds it.
    const unsubscribeOpened = supervisor.bus.onConnectionOpened?.((connection) => {
      const back = this.registry.connectionOpened(connection, supervisor.clock.now());
      if (back > 0) supervisor.logger.debug({ registrations: back }, 'a client connection opened: legacy fallback skills away are asked again');
    });
    if (unsubscribeOpened !== undefined) this.#unsubscribe.push(unsubscribeOpened);
    // Circuit breaker: any pong — willing or not, late or unsolicited — shows the skill is alive. An unbound
    // registration (restored from the store, or legacy and its connection closed) is bound to the connection its
    // skill is first heard on.
    supervisor.on('fallback.pong', (inbound, message) => {
      this.#report(this.breaker.alive(inbound.skill_id));
      if (!this.registry.holds(inbound.skill_id)) return;
      options.store?.seen(inbound.skill_id);
      const connection = supervisor.connectionOf(message);
      if (connection !== undefined && this.registry.bindUnbound(inbound.skill_id, connection) > 0) {
        supervisor.logger.info({ skill_id: inbound.skill_id, connection }, 'unbound fallback skill heard from: bound to its connection');
      }
    });
    // After a restart: every registration the daemon had, unbound until each skill is heard from (legacy skills never
    // register again by themselves); one that never answers is handled as any silent skill (the circuit breaker).
    const restored = options.store?.entries() ?? [];
    for (const entry of restored) this.registry.register(entry.session_id, entry.skill_id, entry.priority, undefined, entry.legacy);
    if (restored.length > 0) {
      supervisor.logger.info({ reason: 'registry_restored', skills: restored.map((e) => e.skill_id), file: options.store?.file }, 'fallback registrations restored');
    }
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

  /** A refused register/deregister: one warn line (at most once a minute per reason and skill), and the answer. */
  #refuse(reason: DropReason, message: Message, skillId: string): void {
    const { log, suppressed } = this.#refusalLog.shouldLog(`${reason}\u0000${message.type}\u0000${skillId}`, this.#supervisor.clock.now());
    if (log) {
      this.#supervisor.logger.warn(
        { reason, type: message.type, skill_id: skillId, session_id: sessionIdOf(message), connection: this.#supervisor.connectionOf(message), suppressed },
        'message dropped',
      );
    }
    this.#supervisor.bus.publish(registrationRefused(message, reason));
  }

  /** Stop listening to the bus (the system closes): a closed plugin publishes nothing when the bus comes back. */
  close(): void {
    for (const unsubscribe of this.#unsubscribe.splice(0)) unsubscribe();
  }

  /** Ping timeouts and circuit-breaker transitions of fallback skills, as they happen (metrics). */
  onSkillEvent(listener: (event: FallbackSkillEvent) => void): () => void {
    this.#skillListeners = [...this.#skillListeners, listener];
    return () => {
      this.#skillListeners = this.#skillListeners.filter((l) => l !== listener);
    };
  }

  #tell(event: FallbackSkillEvent): void {
    for (const listener of this.#skillListeners) {
      try {
        listener(event);
      } catch (err) {
        this.#supervisor.logger.error({ err, reason: 'observer_threw' }, 'fallback skill listener threw');
      }
    }
  }

  /** Breaker transitions are logged once each: suspension at warn, resumption at info. */
  #report(transition: BreakerTransition | undefined): void {
    if (transition !== undefined) this.#tell({ type: transition.type, skill_id: transition.skill_id });
    if (transition?.type === 'suspended') {
      const { skill_id, timeouts, for_ms } = transition;
      this.#supervisor.logger.warn({ reason: 'skill_suspended', skill_id, timeouts, for_ms }, 'fallback skill suspended: its pings keep timing out');
    } else if (transition?.type === 'resumed') {
      this.#supervisor.logger.info({ reason: 'skill_resumed', skill_id: transition.skill_id }, 'fallback skill resumed');
    }
  }

  /** A ping went unanswered (§6.1): warn (at most once a minute per skill), and count it against the skill. */
  #pingTimedOut(skillId: string, afterMs: number, logger: Logger): void {
    const { log, suppressed } = this.#timeoutLog.shouldLog(skillId, this.#supervisor.clock.now());
    if (log) logger.warn({ reason: 'ping_timeout', skill_id: skillId, after_ms: afterMs, suppressed }, 'fallback skill did not answer its ping');
    this.#tell({ type: 'ping_timeout', skill_id: skillId });
    this.#report(this.breaker.timeout(skillId));
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
      // §5: an empty pool returns None immediately.
      declines: (request) => this.pool(request.session, range).length === 0,
      intents: (sessionId) => this.#intents(sessionId, range),
      // A legacy winner is dispatched the way ovos-workshop's FallbackSkill listens for it.
      dispatchFor: (dispatch, match, utterance) => {
        if (this.registry.effectiveEntry(utterance.session.sessionId, match.skill_id)?.legacy !== true) return [dispatch];
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
      ...(range === undefined ? {} : { range }),
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
   * one warn naming the skill it was waiting for and every skill that was never asked. Never silent (issue 7).
   */
  #reportCut(pipelineId: string, context: FallbackContext, startedAt: number, logger: Logger): void {
    const awaiting = context.pool[context.index];
    const neverAsked = context.pool.slice(context.index + 1).filter((skillId) => !context.gone.includes(skillId));
    logger.warn(
      {
        reason: 'match_bound_cut',
        stage: pipelineId,
        awaiting,
        never_asked: neverAsked,
        asked: context.outcomes.map((o) => o.skill_id),
        after_ms: this.#supervisor.clock.now() - startedAt,
        ...(this.#matchTimeoutMs === undefined ? {} : { match_timeout_ms: this.#matchTimeoutMs }),
        ping_timeout_ms: this.#settings.pingTimeoutMs,
        hint: 'lower fallback.pingTimeoutMs or raise orchestrator.matchTimeoutMs',
      },
      'fallback stage cut by the match bound: skills never asked',
    );
  }

  async #match(pipelineId: string, range: PriorityRange | undefined, request: MatchRequest): Promise<Match | null> {
    // Messages already published when match was called are delivered first (the in-process bus delivers from a
    // microtask): a skill that registered just before is in the pool — an embedder needs no `await bus.idle()`.
    await Promise.resolve();
    const pool = this.pool(request.session, range);
    if (pool.length === 0) return null; // §5: an empty pool returns None immediately
    this.#checkPoolAgainstBound(pipelineId, pool.length);
    const startedAt = this.#supervisor.clock.now();
    const contest = this.#supervisor.spawn({
      kind: 'fallback',
      label: pipelineId,
      sessionId: request.session.sessionId,
      utteranceId: utteranceIdOf(request.message),
      logic: this.#machine,
      input: {
        pool,
        pingTimeoutMs: this.#settings.pingTimeoutMs,
        query: { origin: request.message, utterances: request.utterances, lang: request.lang, range: range ?? FULL_RANGE },
        broadcast: pool.filter((skillId) => this.registry.effectiveEntry(request.session.sessionId, skillId)?.legacy === true),
      },
      routes: ['fallback.pong'],
      correlate: (inbound): FallbackEvent | 'not_awaited' =>
        inbound.kind === 'fallback.pong' ? { type: 'PONG', skill_id: inbound.skill_id, can_handle: inbound.can_handle } : 'not_awaited',
    });
    // As it happens (not after the contest), so a late pong that follows a timeout resets the count after it.
    contest.actor.on('ping.timeout', (event: FallbackEmitted) => {
      if (event.type === 'ping.timeout') this.#pingTimedOut(event.skill_id, event.after_ms, contest.logger);
    });
    this.#contests.add(contest);
    void contest.done.then(() => this.#contests.delete(contest));
    const result = await contest.until(request.signal);
    // `until` stops a contest still running when the signal fires with exactly this reason; any other stop
    // (bus down, shutdown) has its own and is logged by the supervisor.
    if (result.status === 'stopped' && result.reason === 'match_aborted') {
      this.#reportCut(pipelineId, (contest.actor.getSnapshot() as { context: FallbackContext }).context, startedAt, contest.logger);
    }
    if (result.status !== 'done' || result.output === null) return null;
    // §6.3 Match shape: the selected skill, reserved intent_name "fallback", empty slots.
    return {
      skill_id: result.output.skill_id,
      intent_name: 'fallback',
      lang: request.lang,
      utterance: request.utterances[0]!,
      slots: {},
    };
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
