/**
 * The orchestrator: enough of OVOS-PIPELINE-1 to run the plugins for real. It consumes `ovos.utterance.handle`,
 * stamps `context.utterance_id` if absent (MSG-1 §4.2), resolves `lang` once (SESSION-1 §3.2.7), composes the
 * effective pipeline (§5.5) and runs one utterance actor per utterance (machines/utterance). Many utterances are
 * in flight at once; nothing here blocks the bus (§6.5).
 *
 * Completion of a bus skill's handler (another process) is observed as `mycroft.skill.handler.complete` or
 * `mycroft.skill.handler.error` carrying the dispatched `context.skill_id`, the session and the utterance_id —
 * which a skill gets for free by deriving the signal from the dispatch message. No signal within
 * `handlerTimeoutMs` → `ovos.intent.handler.error` (timeout) then `ovos.utterance.handled`. On a bus with connection
 * identity (the embedded server), a dispatched skill whose connection closes ends its handler at once with
 * `ovos.intent.handler.error` (skill disconnected) then `ovos.utterance.handled`.
 *
 * Exactly one `ovos.utterance.handled` per accepted `ovos.utterance.handle` (§6), on every path: the machine sends
 * it on each of its final states; an utterance actor that is stopped (bus down, shutdown) or fails before sending
 * it gets one here, with an `error` field naming why. Entries refused before they start (the supervisor's refusals
 * of `ovos.utterance.handle`) are answered here too (`utteranceRefused`) — except one whose utterance_id is in flight
 * in its session (a duplicate): that utterance's own handled is the one.
 *
 * Fair share between clients (embedded bus): one client connection runs at most `maxInFlightPerConnection`
 * utterances at once, and while another connection is active too it begins at most `SHARED_STARTS_PER_SECOND` a second;
 * `WAITING_PER_RUNNING` × `maxInFlightPerConnection` more wait their turn in arrival order (`#admit`), and past that
 * an utterance ends at once with its handled (`error: "too_many_in_flight"`). A client sending thousands at once then
 * holds a bounded share of the daemon, another client's utterances start as they arrive, and a client asking steadily
 * — a hub, a busy front end — is never held back.
 */
import { randomUUID } from 'node:crypto';
import { assign, fromPromise } from 'xstate';
import { MAX_PAUSE_MS } from '../bus/fair-share.js';
import { forward, reply, response, utteranceIdOf, withContext, type JsonObject, type Message } from '../bus/message.js';
import { pushActiveHandler, readSession, resolveLang, sessionFromObject, sessionIdOf, type SessionView } from '../bus/session.js';
import { canonicalPipelineId, type Config } from '../config/defaults.js';
import { topics, utteranceRefused } from '../dialect/spec-dialect.js';
import { isLegacyFallbackRequest, legacyTopics, legacyUnmatched } from '../dialect/legacy-dialect.js';
import type { Match, PipelineStage } from '../pipeline/plugin.js';
import type { Contest, Supervisor } from '../supervisor/supervisor.js';
import { delegate } from '../supervisor/delegate.js';
import type { TimerId } from '../clock/clock.js';
import { clip } from '../log/logger.js';
import { LogRateLimiter } from '../log/rate-limit.js';
import {
  handlesInProcess,
  stageOf,
  utteranceMachine,
  type UtteranceContext,
  type UtteranceEvent,
  type UtteranceOutput,
  type UtteranceRequest,
} from '../../machines/utterance/utterance.machine.js';

/**
 * How long a legacy skill that answered its handler has to send the utterance's `ovos.utterance.handled` itself
 * (ovos-workshop sends it right after `.response`); after that the orchestrator sends it. A skill seen once to leave
 * it to us (ovos-workshop with ovos-core ≥ 2.3.0a1 installed next to it: "core owns it") gets ours at once after
 * that — see `#leavesHandled`. Twice the longest pause the bus's fair share gives a loud connection (src/bus/fair-share.ts):
 * a busy skill (it answers every broadcast ping) can be paused between its `.response` and its handled, and a grace
 * that ended within the pause would put two handled on the wire; the rest is for a loaded daemon's delays.
 */
export const SKILL_HANDLED_GRACE_MS = 2 * MAX_PAUSE_MS;

/**
 * By this long after a legacy skill's `.response`, a handled it sent right after has been read from its connection —
 * unless the bus was holding the connection back (fair share; its close says `heldBack`): the skill's next frame
 * follows at once, and a socket the bus reads as frames come has it read within an event-loop turn or two. A
 * connection that closes sooner, or held back, may have taken an unread handled with it.
 */
export const SKILL_HANDLED_READ_MS = 100;

/** A handled left to a legacy skill for the grace: ours, sent at its end unless the skill's comes first. */
interface PendingHandled {
  readonly timer: TimerId;
  readonly handled: Message;
  readonly skill: string;
  /** The connection the skill was dispatched over. */
  readonly connection: string | undefined;
  /** When the grace began (monotonic ms). */
  readonly since: number;
  /** How far into the grace that connection closed, if it did. */
  closedAfterMs: number | undefined;
}

/** Skills remembered as leaving the handled to us, and utterances ended with ours at once for them (oldest forgotten). */
const MAX_LEARNT = 1024;
const MAX_ENDED_FOR = 256;

/** Utterances of one connection that may wait their turn, per one it may have running alone (`#admit`). */
export const WAITING_PER_RUNNING = 8;
/** Utterances one connection may begin a second (and at once) while another client connection is active (`#mayStart`). */
export const SHARED_STARTS_PER_SECOND = 50;
/** A connection that began an utterance this recently (ms) is active: the others share with it. */
export const ACTIVE_MS = 10_000;

/** Distinct unknown pipeline ids warned about; beyond this, ids from the bus are no longer remembered (nor warned). */
const MAX_UNKNOWN_WARNED = 256;

/**
 * OVOS-PIPELINE-1 §7.3: reserved intent names whose dispatch to the plugin itself does not push `active_handlers`
 * (a legacy common-query winner is a skill, activated as ovos-core activates it).
 */
const NON_ACTIVATING = new Set(['common_query']);

export interface UtteranceRecord {
  readonly utteranceId: string;
  readonly sessionId: string;
  readonly done: Promise<UtteranceOutput | null>;
}

export class Orchestrator {
  readonly #supervisor: Supervisor;
  readonly #config: Config;
  readonly #stages = new Map<string, PipelineStage>();
  /** Live utterances by `keyOf(session, utterance_id)`. */
  readonly #inFlight = new Map<string, InFlight>();
  /** Connection → the utterances awaiting the handler of a skill dispatched while it spoke over that connection. */
  readonly #awaitingOn = new Map<string, Set<string>>();
  /** Utterances (ended) whose handled is the skill's to send: ours goes out if it has not come when the timer fires. */
  readonly #pendingHandled = new Map<string, PendingHandled>();
  /**
   * Legacy skills seen to leave the utterance's handled to the pipeline (no handled of their own within the grace):
   * their next utterances get our handled the moment their handler completes — no grace to wait out. Kept across
   * reconnects (a bus client that reconnects runs the same ovos-workshop); forgotten when the skill sends a handled
   * of its own. Bounded (`MAX_LEARNT`, oldest forgotten: it then costs the grace once more).
   */
  readonly #leavesHandled = new Set<string>();
  /** Utterances whose handled went out at once for a skill learnt above → that skill (to tell its late handled). */
  readonly #endedFor = new Map<string, string>();
  /** Graceful shutdown: no new utterance is taken; these wait for the last one in flight to end. */
  #draining = false;
  #drained: Array<() => void> = [];
  /** Unknown pipeline ids already warned about (bounded): one warn per id, not per utterance. */
  readonly #unknownWarned = new Set<string>();
  readonly #machine: UtteranceLogic;
  /** Client connection → its utterances running and waiting (only while it has any). */
  readonly #shares = new Map<string, ConnectionShare>();
  /** One `too_many_in_flight` warn a minute per connection. */
  readonly #overLog = new LogRateLimiter(60_000);

  constructor(supervisor: Supervisor, config: Config) {
    this.#supervisor = supervisor;
    this.#config = config;
    this.#machine = this.#provide();
    // ovos-core takes the utterances (orchestrator.takesUtterances false: it asks our stages, src/stage-service/).
    if (config.orchestrator.takesUtterances) supervisor.on('utterance.handle', (inbound, message) => {
      if (inbound.dropped > 0) {
        supervisor.logger.warn(
          { reason: 'utterances_filtered', dropped: inbound.dropped, kept: inbound.utterances.length, session_id: sessionIdOf(message), utterance_id: utteranceIdOf(message) },
          'utterance entries dropped (not non-blank strings); the rest are handled',
        );
      }
      this.#admit(message, inbound.utterances);
    });
    // PIPELINE-1 §6: a refused entry still ends with its one handled — unless its utterance_id is in flight in
    // that session (a duplicate), whose own handled is the one.
    if (config.orchestrator.takesUtterances) supervisor.onRefused('utterance.handle', (message, reason) => {
      const sessionId = sessionIdOf(message);
      const utteranceId = utteranceIdOf(message);
      if (utteranceId !== undefined && this.#utteranceInFlight(sessionId, utteranceId)) return;
      const handled = utteranceRefused(message, reason);
      if (handled !== null) supervisor.bus.publish(handled);
    });
    // Which instance said yes: a skill_id may speak over more than one connection (a reconnect race, two instances).
    supervisor.on('fallback.pong', (inbound, message) => {
      const connection = supervisor.connectionOf(message);
      if (inbound.can_handle && connection !== undefined) this.#liveOf(message)?.willingVia.set(inbound.skill_id, connection);
    });
    // A legacy skill's own ovos.utterance.handled (our own echoes come here too, and change nothing).
    supervisor.on('utterance.handled', (_inbound, message) => {
      this.#skillSendsHandled(message);
      const key = keyOfMessage(message);
      const timer = key === undefined ? undefined : this.#pendingHandled.get(key)?.timer;
      if (key === undefined || timer === undefined) {
        // Before its handler's end reached us (not ovos-workshop's order, but possible): ours is not to be sent.
        const live = this.#liveOf(message);
        if (live !== undefined && live.skillEnds && !live.handledSent) live.skillSaidHandled = true;
        return;
      }
      supervisor.clock.clearTimeout(timer);
      this.#pendingHandled.delete(key);
      this.#checkDrained();
      supervisor.logger.info({ session_id: sessionIdOf(message), utterance_id: utteranceIdOf(message), reason: 'handled_by_skill' }, 'utterance handled by the skill itself');
    });
    // A dispatched skill whose connection closed will never complete its handler: end it now — the utterances that
    // dispatched to it while it spoke over that connection (the same skill_id over another one is another instance).
    supervisor.onConnectionClosed((connection, _skills, _spoke, late, heldBack) => {
      for (const key of this.#awaitingOn.get(connection) ?? []) {
        const live = this.#inFlight.get(key);
        if (live?.awaited !== undefined) live.contest?.send({ type: 'SKILL_GONE', skill_id: live.awaited.skill });
      }
      // A grace whose skill's connection closes: whether its handled could have gone with it is told at its end. A late
      // close (its daemon was lost, and is heard of only now) says nothing of when the connection ended, and one the
      // bus was holding back may have left what it sent last unread: as at once.
      for (const pending of this.#pendingHandled.values()) {
        if (pending.connection === connection) pending.closedAfterMs ??= late || heldBack ? 0 : supervisor.clock.monotonic() - pending.since;
      }
    });
    // OVOS-PIPELINE-1 §10: each plugin answers its introspection request (in a cluster, on the daemon that heard it).
    supervisor.on('intents.list', (inbound, message) => {
      const stage = this.#stages.get(canonicalPipelineId(inbound.pipeline_id));
      if (stage === undefined || !supervisor.answersHere(message)) return; // not ours: another daemon's plugin may answer
      const session = readSession(message);
      const sessionId = session.ok ? session.session.sessionId : 'default';
      const intents = stage.intents(sessionId).map((i) => ({ ...i }));
      supervisor.bus.publish(response(message, { pipeline_id: stage.pipelineId, intents }));
    });
  }

  /** Make a stage available under its pipeline_id (and aliases resolve to it). */
  register(stage: PipelineStage): void {
    this.#stages.set(stage.pipelineId, stage);
  }

  get stages(): readonly PipelineStage[] {
    return [...this.#stages.values()];
  }

  /**
   * An utterance off the bus: begun now if its connection has fewer than `maxInFlightPerConnection` running, else it
   * waits its turn (`WAITING_PER_RUNNING` times as many may wait), else it ends at once with its handled (`too_many_in_flight`). Utterances with no
   * connection (published in process, or a foreign bus, which shows none) begin at once.
   */
  #admit(entry: Message, utterances: readonly string[]): void {
    const connection = this.#supervisor.connectionOf(entry);
    if (connection === undefined || this.#draining) {
      this.handle(entry, utterances);
      return;
    }
    const now = this.#supervisor.clock.monotonic();
    let share = this.#shares.get(connection);
    if (share === undefined) {
      share = { live: 0, waiting: [], lastStart: now - ACTIVE_MS, tokens: SHARED_STARTS_PER_SECOND, refilledAt: now, timer: undefined };
      this.#shares.set(connection, share);
    }
    if (share.waiting.length === 0 && this.#mayStart(connection, share, now)) {
      this.#begin(connection, share, entry, utterances);
      return;
    }
    const sessionId = sessionIdOf(entry);
    const utteranceId = utteranceIdOf(entry);
    const key = utteranceId === undefined || sessionId === undefined ? undefined : keyOf(sessionId, utteranceId);
    const log = this.#supervisor.logger;
    if (key !== undefined && (this.#inFlight.has(key) || share.waiting.some((w) => w.key === key))) {
      log.warn({ reason: 'duplicate_utterance_id', session_id: sessionId, utterance_id: utteranceId }, 'message dropped');
      return;
    }
    if (share.waiting.length < this.#config.orchestrator.maxInFlightPerConnection * WAITING_PER_RUNNING) {
      share.waiting.push({ entry, utterances, key });
      this.#drainLater(connection, share);
      return;
    }
    const { log: warn, suppressed } = this.#overLog.shouldLog(connection, Date.now());
    if (warn) {
      log.warn(
        { reason: 'too_many_in_flight', connection, running: share.live, waiting: share.waiting.length, suppressed, session_id: sessionId, utterance_id: utteranceId },
        'utterance refused: its client has as many utterances in flight and waiting as it may (orchestrator.maxInFlightPerConnection)',
      );
    }
    const handled = utteranceRefused(entry, 'too_many_in_flight');
    if (handled !== null) this.#supervisor.bus.publish(handled);
  }

  /**
   * Whether `connection` may begin an utterance now (taking a start token when another connection is active): never
   * past `maxInFlightPerConnection` running; while another client connection has utterances running or waiting, or
   * began one within `ACTIVE_MS`, at most `SHARED_STARTS_PER_SECOND` a second (a bucket of as many) — a client
   * asking now and then is never queued behind another's burst, and one that asks steadily is not slowed.
   */
  #mayStart(connection: string, share: ConnectionShare, now: number): boolean {
    if (share.live >= this.#config.orchestrator.maxInFlightPerConnection) return false;
    share.tokens = Math.min(SHARED_STARTS_PER_SECOND, share.tokens + ((now - share.refilledAt) * SHARED_STARTS_PER_SECOND) / 1000);
    share.refilledAt = now;
    if (!this.#othersActive(connection, now)) return true;
    if (share.tokens < 1) return false;
    share.tokens -= 1;
    return true;
  }

  /** Another client connection is active: utterances running or waiting, or one begun within `ACTIVE_MS`. Idle ones are forgotten. */
  #othersActive(connection: string, now: number): boolean {
    for (const [other, share] of this.#shares) {
      if (other === connection) continue;
      if (share.live > 0 || share.waiting.length > 0 || now - share.lastStart < ACTIVE_MS) return true;
      this.#shares.delete(other);
    }
    return false;
  }

  /** Waiting utterances begin as soon as their connection may start one: when a token is due (a timer), or one of its own ends. */
  #drainLater(connection: string, share: ConnectionShare): void {
    if (share.timer !== undefined) return;
    const wait = Math.max(1, Math.ceil(((1 - share.tokens) * 1000) / SHARED_STARTS_PER_SECOND));
    share.timer = this.#supervisor.clock.setTimeout(() => {
      share.timer = undefined;
      this.#drain(connection, share);
    }, wait);
  }

  #drain(connection: string, share: ConnectionShare): void {
    while (share.waiting.length > 0 && !this.#draining && this.#mayStart(connection, share, this.#supervisor.clock.monotonic())) {
      const next = share.waiting.shift()!;
      this.#begin(connection, share, next.entry, next.utterances);
    }
    if (share.waiting.length > 0 && share.live < this.#config.orchestrator.maxInFlightPerConnection) this.#drainLater(connection, share);
  }

  #begin(connection: string, share: ConnectionShare, entry: Message, utterances: readonly string[]): void {
    share.lastStart = this.#supervisor.clock.monotonic();
    const record = this.handle(entry, utterances);
    if (record === null) return;
    share.live += 1;
    void record.done.then(() => this.#release(connection, share));
  }

  /** One of the connection's utterances ended: the next waiting ones begin, as many as its share allows now. */
  #release(connection: string, share: ConnectionShare): void {
    share.live -= 1;
    this.#drain(connection, share);
  }

  /** Begin one utterance lifecycle. Returns null when the message was dropped (logged with a reason). */
  handle(entry: Message, utterances: readonly string[]): UtteranceRecord | null {
    const log = this.#supervisor.logger;
    if (this.#draining) {
      // PIPELINE-1 §6: even now, exactly one handled — at once, saying why.
      log.warn({ reason: 'shutting_down', session_id: sessionIdOf(entry), utterance_id: utteranceIdOf(entry) }, 'utterance refused: the daemon is shutting down');
      const handled = utteranceRefused(entry, 'shutting_down');
      if (handled !== null) this.#supervisor.bus.publish(handled);
      return null;
    }
    const parsed = readSession(entry);
    if (!parsed.ok) {
      log.warn({ reason: parsed.reason, type: entry.type }, 'message dropped');
      const handled = utteranceRefused(entry, parsed.reason);
      if (handled !== null) this.#supervisor.bus.publish(handled);
      return null;
    }
    const session = parsed.session;
    const utteranceId = utteranceIdOf(entry) ?? randomUUID(); // MSG-1 §4.2: stamped once, never overwritten
    const key = keyOf(session.sessionId, utteranceId);
    if (this.#inFlight.has(key)) {
      log.warn({ reason: 'duplicate_utterance_id', session_id: session.sessionId, utterance_id: utteranceId }, 'message dropped');
      return null;
    }
    // Everything derived from the utterance carries its session without null fields (OVOS-SESSION-1 §2).
    // The entry as every stage sees it: its own candidates only (a mixed list was filtered by the dialect).
    const stamped: Message = {
      ...withContext(entry, { utterance_id: utteranceId, session: { ...session.raw, session_id: session.sessionId } }),
      data: { ...entry.data, utterances: [...utterances] },
    };
    const lang = resolveLang(stamped, session, this.#config.lang);
    const stages = this.effectivePipeline(session);
    const request: UtteranceRequest = { entry: stamped, utterances, lang, session };

    // OVOS-COMMON-QUERY-1 §5.2: every stage hears of the new utterance (eviction), not only those in its pipeline.
    for (const stage of this.#stages.values()) this.#hook(stage, 'onUtterance', () => stage.onUtterance?.(stamped, lang, session, stages.includes(stage.pipelineId)));

    // Registered before the actor starts: its actions (the dispatch, the handled) look the utterance up here.
    const live: InFlight = { contest: undefined, handledSent: false, willingVia: new Map(), awaited: undefined, skillEnds: false, skillSaidHandled: false, dispatchMessages: undefined };
    this.#inFlight.set(key, live);
    const contest = this.#supervisor.spawn({
      kind: 'utterance',
      label: 'pipeline',
      sessionId: session.sessionId,
      utteranceId,
      logic: this.#machine,
      input: {
        request,
        stages,
        inProcessHandlers: stages.filter((id) => this.#stages.get(id)?.handle !== undefined),
        matchTimeoutMs: this.#config.orchestrator.matchTimeoutMs,
        handlerTimeoutMs: this.#config.orchestrator.handlerTimeoutMs,
      },
      routes: ['skill.handler.done'],
      correlate: (inbound): UtteranceEvent | 'not_awaited' => {
        if (inbound.kind !== 'skill.handler.done') return 'not_awaited';
        const event = { type: 'HANDLER_DONE' as const, skill_id: inbound.skill_id, ok: inbound.ok };
        return inbound.exception === undefined ? event : { ...event, exception: inbound.exception };
      },
    });
    live.contest = contest;
    // The walk through the stages begins once everything published before this utterance reached us has been
    // delivered (the in-process bus delivers from a microtask): a skill registered just before is in its stage's pool.
    queueMicrotask(() => contest.send({ type: 'BEGIN' }));
    // Utterances come off the bus: at most 10 of them, each clipped, in the log line.
    contest.logger.info({ utterances: utterances.slice(0, 10).map((u) => clip(u)), lang, stages }, 'utterance received');

    const done = contest.done.then((result) => {
      this.#inFlight.delete(key);
      this.#checkDrained();
      this.#forgetAwaiting(key, live);
      if (!live.handledSent) {
        // Stopped (bus down, shutdown) or failed before the machine sent it: PIPELINE-1 §6 still owes one handled.
        const error = result.status === 'stopped' ? result.reason : 'utterance_error';
        contest.logger.warn({ reason: error }, 'utterance ended early; ovos.utterance.handled sent with an error');
        try {
          this.#supervisor.bus.publish(reply(stamped, topics.utteranceHandled, { error }));
        } catch (err) {
          contest.logger.error({ err, reason: 'publish_failed' }, 'ovos.utterance.handled could not be sent');
        }
      }
      for (const id of new Set(stages)) {
        const stage = this.#stages.get(id);
        if (stage !== undefined) this.#hook(stage, 'onHandled', () => stage.onHandled?.(stamped, session));
      }
      if (result.status === 'done') {
        contest.logger.info({ outcome: result.output.outcome, skill_id: result.output.match?.skill_id, stage: result.output.stage }, 'utterance handled');
        return result.output;
      }
      return null;
    });
    return { utteranceId, sessionId: session.sessionId, done };
  }

  /**
   * Graceful shutdown, first step: from now on every new utterance is answered at once with its handled
   * (`error: "shutting_down"`); resolves when no utterance is in flight any more. The caller bounds the wait.
   */
  drain(): Promise<void> {
    this.#draining = true;
    // Utterances waiting their connection's turn are not begun any more: each ends now with its handled.
    for (const share of this.#shares.values()) {
      if (share.timer !== undefined) this.#supervisor.clock.clearTimeout(share.timer);
      share.timer = undefined;
      for (const waiting of share.waiting.splice(0)) this.handle(waiting.entry, waiting.utterances);
    }
    const drained = new Promise<void>((resolve) => this.#drained.push(resolve));
    this.#checkDrained();
    return drained;
  }

  /** Drained: nothing in flight, and no handled waiting for its skill (the skill's own, or ours after the grace). */
  #checkDrained(): void {
    if (this.#draining && this.#inFlight.size === 0 && this.#pendingHandled.size === 0) for (const resolve of this.#drained.splice(0)) resolve();
  }

  /** Utterances in flight right now. */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  /** Shutdown: a handled still waiting for its skill goes out now (it would otherwise never be sent). */
  close(): void {
    for (const share of this.#shares.values()) if (share.timer !== undefined) this.#supervisor.clock.clearTimeout(share.timer);
    for (const { timer, handled } of this.#pendingHandled.values()) {
      this.#supervisor.clock.clearTimeout(timer);
      try {
        this.#supervisor.bus.publish(handled);
      } catch (err) {
        this.#supervisor.logger.error({ err, reason: 'publish_failed' }, 'ovos.utterance.handled could not be sent');
      }
    }
    this.#pendingHandled.clear();
  }

  /**
   * Give the skill `SKILL_HANDLED_GRACE_MS` to send the utterance's handled; send ours if it does not — and from then
   * on at once for that skill (`#leavesHandled`), its other utterances still waiting included.
   */
  #awaitSkillHandled(key: string, handled: Message, skill: string, connection: string | undefined): void {
    const timer = this.#supervisor.clock.setTimeout(() => {
      const closedAfterMs = this.#pendingHandled.get(key)?.closedAfterMs;
      this.#sendPendingHandled(key);
      // A skill whose connection closed before a handled sent right after its .response had surely been read
      // (`SKILL_HANDLED_READ_MS`; at once when the bus was holding it back, or heard of late) may have lost it with the
      // connection: nothing learnt. (It is not learnt yet: its utterances wait only while it is not, and learning it
      // sends all of theirs.) One whose connection lived past that sends none: learnt, even if it reconnects more
      // often than the grace lasts.
      if (closedAfterMs !== undefined ? closedAfterMs < SKILL_HANDLED_READ_MS : connection !== undefined && !this.#supervisor.isOpen(connection)) return;
      this.#leavesHandled.add(skill);
      if (this.#leavesHandled.size > MAX_LEARNT) this.#leavesHandled.delete(this.#leavesHandled.values().next().value!);
      this.#supervisor.logger.info(
        { skill_id: skill, session_id: sessionIdOf(handled), utterance_id: utteranceIdOf(handled), reason: 'skill_leaves_handled', grace_ms: SKILL_HANDLED_GRACE_MS },
        'the skill sent no ovos.utterance.handled of its own; from now on ours goes out as soon as its handler completes',
      );
      for (const [other, pending] of this.#pendingHandled) if (pending.skill === skill) this.#sendPendingHandled(other);
    }, SKILL_HANDLED_GRACE_MS);
    this.#pendingHandled.set(key, { timer, handled, skill, connection, since: this.#supervisor.clock.monotonic(), closedAfterMs: undefined });
  }

  /** The handled left to a skill goes out now (ours). */
  #sendPendingHandled(key: string): void {
    const pending = this.#pendingHandled.get(key);
    if (pending === undefined) return;
    this.#supervisor.clock.clearTimeout(pending.timer);
    this.#pendingHandled.delete(key);
    this.#supervisor.bus.publish(pending.handled);
    this.#checkDrained();
  }

  /**
   * A handled sent by a skill — its context names it, as ovos-workshop's does, for an utterance dispatched to it; on a
   * bus with connection identity it came over a client connection (our own echo did not) — so that skill sends its
   * own after all.
   */
  #skillSendsHandled(message: Message): void {
    const skill = message.context['skill_id'];
    if (typeof skill !== 'string' || !this.#leavesHandled.has(skill)) return;
    if (this.#supervisor.bus.connectionOf !== undefined && this.#supervisor.connectionOf(message) === undefined) return;
    const key = keyOfMessage(message);
    const dispatchedTo = key === undefined ? undefined : (this.#inFlight.get(key)?.awaited?.skill ?? this.#endedFor.get(key));
    if (dispatchedTo !== skill) return;
    this.#leavesHandled.delete(skill);
    // Ours already went out for this utterance unless it is still running: say so, it is a doubled handled.
    if (this.#inFlight.get(key!)?.handledSent !== false) {
      this.#supervisor.logger.warn(
        { skill_id: skill, session_id: sessionIdOf(message), utterance_id: utteranceIdOf(message), reason: 'skill_handled_after_ours' },
        'a skill that had left the handled to us sent its own: the grace is back for it',
      );
    }
  }

  /** The live utterance a message belongs to (by its session and utterance_id). */
  #liveOf(message: Message): InFlight | undefined {
    const key = keyOfMessage(message);
    return key === undefined ? undefined : this.#inFlight.get(key);
  }

  /** Whether `utteranceId` is in flight in that session — in any session when the session is unreadable. */
  #utteranceInFlight(sessionId: string | undefined, utteranceId: string): boolean {
    if (sessionId !== undefined) return this.#inFlight.has(keyOf(sessionId, utteranceId));
    const suffix = `\u0000${utteranceId}`;
    for (const key of this.#inFlight.keys()) if (key.endsWith(suffix)) return true;
    return false;
  }

  /**
   * A plugin's hook that throws is logged and otherwise ignored (`otherwise` stands in for its result): one plugin
   * never costs an utterance its handled.
   */
  #hook<T>(stage: PipelineStage, name: string, call: () => T, otherwise: T): T;
  #hook(stage: PipelineStage, name: string, call: () => void): void;
  #hook<T>(stage: PipelineStage, name: string, call: () => T, otherwise?: T): T | undefined {
    try {
      return call();
    } catch (err) {
      this.#supervisor.logger.error({ err, reason: 'plugin_hook_threw', stage: stage.pipelineId, hook: name }, 'pipeline plugin hook threw');
      return otherwise;
    }
  }

  /** The utterance machine with the orchestrator's effects, built once (a `provide` per utterance costs ~19 KB). */
  #provide() {
    const bus = this.#supervisor.bus;
    const clock = this.#supervisor.clock;
    const stage = (id: string): PipelineStage => this.#stages.get(id)!;
    const trio = (context: UtteranceContext, type: string, extra: JsonObject = {}): void => {
      const match = context.match!;
      bus.publish(forward(context.dispatched!, type, { skill_id: match.skill_id, intent_name: match.intent_name, ...extra }));
    };
    // The time a stage held the pipeline: what early start (OVOS-COMMON-QUERY-1 §5) exists to shrink.
    const stageMatched = (request: UtteranceRequest, pipelineId: string, started: number, match: Match | null, aborted: boolean): void => {
      this.#supervisor.logger.info(
        { session_id: request.session.sessionId, utterance_id: utteranceIdOf(request.entry), contest: 'utterance/pipeline', stage: pipelineId, match_ms: clock.now() - started, matched: match !== null, aborted },
        'stage matched',
      );
    };
    const matchByPromise = fromPromise<Match | null, { pipelineId: string; request: UtteranceRequest }>(async ({ input, signal }) => {
      const { request } = input;
      const started = clock.now();
      const match = await stage(input.pipelineId).match({ ...request, message: request.entry, signal });
      stageMatched(request, input.pipelineId, started, match, signal.aborted);
      return match;
    });
    // A plugin whose `matchLogic` threw: the stage declines with an error (PIPELINE-1 §6), as a `match` that throws.
    const failedMatch = fromPromise<Match | null>(() => Promise.reject(new Error('the stage could not start its match')));
    return utteranceMachine.provide({
      actors: {
        // The stage's contest as the utterance actor's own child when its plugin offers one (`matchLogic`), else
        // its `match` in a promise actor. (The machine declares a promise actor; it reads only the output and the
        // error of whatever runs there.)
        matchStage: delegate<{ pipelineId: string; request: UtteranceRequest }, Match | null>((input, self) => {
          const { request, pipelineId } = input;
          // Nothing here may throw: it runs as the utterance actor enters the stage, and would fail the utterance.
          const current = this.#stages.get(pipelineId);
          if (current === undefined) return { logic: failedMatch, input };
          const logic = current.matchLogic === undefined ? undefined : this.#hook(current, 'matchLogic', () => current.matchLogic!({ ...request, message: request.entry }), null);
          if (logic === null) return { logic: failedMatch, input };
          if (logic === undefined) return { logic: matchByPromise, input };
          const started = clock.now();
          self.subscribe({
            complete: () => {
              const snapshot = self.getSnapshot() as { status: string; output: Match | null };
              stageMatched(request, pipelineId, started, snapshot.status === 'done' ? snapshot.output : null, snapshot.status !== 'done');
            },
            // The contest failed (logged by the supervisor): the stage declines with an error (PIPELINE-1 §6).
            error: () => stageMatched(request, pipelineId, started, null, false),
          });
          return { logic, input: undefined };
        }) as unknown as typeof matchByPromise,
        runHandler: fromPromise(async ({ input }) => {
          await stage(input.pipelineId).handle!(input.dispatched, input.match);
        }),
      },
      actions: {
        prepareDispatch: assign({
          dispatched: ({ context }: { context: UtteranceContext }) => {
            const spec = this.#dispatchMessage(context.request, context.match!, context.matchedStage!);
            const stage = this.#stages.get(context.matchedStage!);
            const messages = stage?.dispatchFor?.(spec, context.match!, context.request) ?? [spec];
            const dispatched = messages[messages.length - 1] ?? spec;
            // A skill dispatched in another dialect announces the end of the utterance itself (ovos-workshop does).
            const live = this.#inFlight.get(requestKey(context.request));
            if (live !== undefined) {
              live.dispatchMessages = messages.length === 0 ? [spec] : messages;
              if (dispatched.type !== spec.type) live.skillEnds = true;
            }
            return dispatched;
          },
        }),
        dispatch: ({ context }) => {
          const match = context.match!;
          if (!handlesInProcess(context)) this.#await(context.request, match.skill_id);
          // PIPELINE-1 §6: ovos.intent.matched, the dispatch (§7), ovos.intent.handler.start (§8).
          bus.publish(
            reply(context.request.entry, topics.intentMatched, {
              skill_id: match.skill_id,
              intent_name: match.intent_name,
              lang: match.lang,
              utterance: match.utterance,
              slots: { ...match.slots },
              pipeline_id: context.matchedStage!,
            }),
          );
          // The dispatch, with what its dialect sends before it (a legacy common-query winner is activated first).
          const live = this.#inFlight.get(requestKey(context.request));
          for (const message of live?.dispatchMessages ?? [context.dispatched!]) bus.publish(message);
          trio(context, topics.handlerStart);
        },
        handlerComplete: ({ context }) => trio(context, topics.handlerComplete),
        handlerError: ({ context }, { exception }) => trio(context, topics.handlerError, { exception }),
        unmatched: ({ context }) => {
          const { entry, utterances, lang } = context.request;
          bus.publish(reply(entry, topics.intentUnmatched, { utterances: [...utterances], lang }));
          // OVOS clients of today wait for the error sound and complete_intent_failure (ovos-wire-today.md).
          if (this.#config.dialects.legacy) for (const message of legacyUnmatched(entry, utterances, lang)) bus.publish(message);
        },
        handled: ({ context }) => {
          const key = requestKey(context.request);
          const live = this.#inFlight.get(key);
          if (live !== undefined) live.handledSent = true;
          // The last message of the lifecycle carries the session as it now is (with any activation pushed).
          const built = reply(context.request.entry, topics.utteranceHandled, {});
          const session = context.dispatched?.context['session'];
          const handled = session === undefined ? built : withContext(built, { session });
          // PIPELINE-1 §6, exactly one handled on the wire whoever sends it: a skill that ends the utterance itself
          // (legacy; ovos-workshop does after a successful handler) gets a moment to send its own — or already did.
          const skillEnds = live?.skillEnds === true;
          if (skillEnds && live?.skillSaidHandled === true) return;
          if (skillEnds && context.outcome === 'completed') {
            const skill = context.match!.skill_id;
            if (!this.#leavesHandled.has(skill)) {
              this.#awaitSkillHandled(key, handled, skill, live?.awaited?.connection);
              return;
            }
            this.#endedFor.set(key, skill);
            if (this.#endedFor.size > MAX_ENDED_FOR) this.#endedFor.delete(this.#endedFor.keys().next().value!);
          }
          // A legacy handler that ran past its timeout is told to stop, as ovos-core does (it would end the utterance
          // a second time otherwise).
          if (skillEnds && context.outcome === 'handler_timeout' && context.dispatched !== null && context.match !== null && isLegacyFallbackRequest(context.dispatched)) {
            bus.publish(forward(context.dispatched, legacyTopics.fallbackForceTimeout, { skill_id: context.match.skill_id }));
          }
          bus.publish(handled);
        },
      },
      guards: {
        // A stage that says `match` would return None at once is passed over (PipelineStage.declines); one whose
        // `declines` throws is asked as usual.
        stageDeclines: ({ context }) => {
          const current = stage(stageOf(context));
          if (current.declines === undefined) return false;
          const { utterances, lang, session, entry } = context.request;
          return this.#hook(current, 'declines', () => current.declines!({ utterances, lang, session, message: entry }) === true, false);
        },
      },
    });
  }

  /** OVOS-PIPELINE-1 §5: preference (session, else the default-session config) → loaded → not blacklisted. */
  effectivePipeline(session: SessionView): string[] {
    const preference = session.pipeline ?? this.#config.pipeline;
    const blacklisted = new Set(session.blacklistedPipelines.map(canonicalPipelineId));
    const effective: string[] = [];
    for (const raw of preference) {
      const id = canonicalPipelineId(raw);
      if (!this.#stages.has(id)) {
        // PIPELINE-1 §5: skipped with a warning, never aborting the utterance — once per id: a real OVOS session
        // names a dozen stages we do not run (stop, converse, padatious, adapt, ocp, …) in every utterance.
        if (!this.#unknownWarned.has(raw) && this.#unknownWarned.size < MAX_UNKNOWN_WARNED) {
          this.#unknownWarned.add(raw);
          const source = session.pipeline === undefined ? 'config' : 'session';
          this.#supervisor.logger.warn({ reason: 'unknown_pipeline', pipeline_id: raw, source, session_id: session.sessionId }, 'pipeline stage skipped (warned once per id)');
        }
        continue;
      }
      if (blacklisted.has(id) || effective.includes(id)) continue;
      effective.push(id);
    }
    return effective;
  }

  /** The dispatched bus skill's handler is now awaited; a skill already gone is told to the utterance at once. */
  #await(request: UtteranceRequest, skillId: string): void {
    const key = requestKey(request);
    const live = this.#inFlight.get(key);
    if (live === undefined) return;
    // The instance whose willing pong won, else (a foreign bus, a pong without utterance_id) the latest one heard.
    const connection = live.willingVia.get(skillId) ?? this.#supervisor.latestConnectionOf(skillId);
    live.awaited = { skill: skillId, connection };
    if (connection !== undefined) {
      let keys = this.#awaitingOn.get(connection);
      if (keys === undefined) this.#awaitingOn.set(connection, (keys = new Set()));
      keys.add(key);
    }
    // Its connection closed between its willing reply and this dispatch: nobody will complete the handler.
    const gone = connection === undefined ? this.#supervisor.isGone(skillId) : !this.#supervisor.isOpen(connection);
    if (gone) queueMicrotask(() => live.contest?.send({ type: 'SKILL_GONE', skill_id: skillId }));
  }

  #forgetAwaiting(key: string, live: InFlight): void {
    const connection = live.awaited?.connection;
    if (connection === undefined) return;
    const keys = this.#awaitingOn.get(connection);
    if (keys !== undefined && keys.delete(key) && keys.size === 0) this.#awaitingOn.delete(connection);
  }

  /** PIPELINE-1 §7: reply-derived from the utterance, ids stamped, activation pushed unless suppressed (§7.3). */
  #dispatchMessage(request: UtteranceRequest, match: Match, pipelineId: string): Message {
    let session: JsonObject = match.updated_session ?? request.session.raw;
    if (!NON_ACTIVATING.has(match.intent_name) || match.skill_id !== pipelineId) {
      const base = match.updated_session === undefined ? request.session : sessionFromObject(match.updated_session);
      session = pushActiveHandler(base, match.skill_id, Math.floor(this.#supervisor.clock.now() / 1000));
    }
    const dispatched = reply(request.entry, topics.dispatch(match.skill_id, match.intent_name), {
      lang: match.lang,
      utterance: match.utterance,
      slots: { ...match.slots },
    });
    return withContext(dispatched, { session, skill_id: match.skill_id, pipeline_id: pipelineId });
  }
}

type UtteranceLogic = typeof utteranceMachine;

/** One live utterance: its actor and what the orchestrator has learnt about it while it runs. */
/** An utterance waiting for its connection's turn (`#admit`). */
interface Waiting {
  readonly entry: Message;
  readonly utterances: readonly string[];
  /** `keyOf(session, utterance_id)` when it carries an utterance_id: a second copy of it while it waits is a duplicate. */
  readonly key: string | undefined;
}

/** One client connection's utterances: how many run, those waiting their turn, when it last began one, its start tokens. */
interface ConnectionShare {
  live: number;
  readonly waiting: Waiting[];
  lastStart: number;
  tokens: number;
  refilledAt: number;
  /** Set while waiting utterances wait for a start token. */
  timer: TimerId | undefined;
}

interface InFlight {
  /** Set right after spawning (the record exists first: an utterance without stages ends inside spawn). */
  contest: Contest<UtteranceLogic> | undefined;
  /** Its ovos.utterance.handled went out, or is left to the skill. */
  handledSent: boolean;
  /** skill → the connection its willing fallback pong for this utterance came over (embedded bus). */
  readonly willingVia: Map<string, string>;
  /** The dispatched bus skill, and the connection of the instance it was dispatched to. */
  awaited: { readonly skill: string; readonly connection: string | undefined } | undefined;
  /** Dispatched in another dialect (legacy): the skill announces the end of the utterance itself. */
  skillEnds: boolean;
  /** What `dispatch` sends: the dispatch, preceded by what its dialect sends first. */
  dispatchMessages: readonly Message[] | undefined;
  /** That skill's handled came before the utterance actor ended: ours is not sent. */
  skillSaidHandled: boolean;
}

const keyOf = (sessionId: string, utteranceId: string): string => `${sessionId}\u0000${utteranceId}`;
const requestKey = (request: UtteranceRequest): string => keyOf(request.session.sessionId, utteranceIdOf(request.entry) ?? '');
/** The key of the utterance a message belongs to, when it names one. */
function keyOfMessage(message: Message): string | undefined {
  const sessionId = sessionIdOf(message);
  const utteranceId = utteranceIdOf(message);
  return sessionId === undefined || utteranceId === undefined ? undefined : keyOf(sessionId, utteranceId);
}
