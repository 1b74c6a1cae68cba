/**
 * The supervisor: receives every bus message once, classifies it through the dialect adapter, hands service
 * messages (registrations, utterances, introspection) to their owners, and routes contest replies in O(1) to the
 * live contest they belong to — by (inbound kind, session_id), then by utterance_id and the contest's own
 * correlation check.
 *
 * Contests are independent root actors (`createActor` each), not children of a router machine: with
 * XState 5, spawning children into one parent costs time quadratic in their number. The one exception is a contest that belongs to one utterance's stage:
 * it runs as the utterance actor's own child (`child`, invoked by the utterance machine's `matchStage`), one XState
 * system per utterance, hosted and routed here the same way. Every actor gets the shared clock, the shared inspection
 * hook and an error observer; it is forgotten (routes removed) the moment it finishes, so a late reply finds no
 * contest and is dropped here with a reason — it never reaches an actor that is gone.
 */
import { randomBytes } from 'node:crypto';
import { createActor, type ActorLogic, type AnyActorLogic, type AnyActorRef, type EventFromLogic, type EventObject, type InputFrom, type InspectionEvent, type OutputFrom, type Snapshot, type SnapshotFrom } from 'xstate';
import type { Bus, Unsubscribe } from '../bus/bus.js';
import { reply, stringField, utteranceIdOf, type Message } from '../bus/message.js';
import { DEFAULT_SESSION_ID, sessionIdOf } from '../bus/session.js';
import type { Clock } from '../clock/clock.js';
import { classifyLegacy, legacyTopics } from '../dialect/legacy-dialect.js';
import { classify, registrationRefused, topics, type Classified, type Defect, type DropReason, type Inbound, type InboundKind, type InboundOf } from '../dialect/spec-dialect.js';
import { boundedJson, clip, type Logger } from '../log/logger.js';
import { delegate } from './delegate.js';
import { LogRateLimiter } from '../log/rate-limit.js';

export type InspectionHook = (event: InspectionEvent) => void;

/** What a contest reports for inspection besides XState's own events: its identity. */
export interface ContestInfo {
  /**
   * Unique per contest run, daemon-wide. Every query a plugin contest (fallback, common query) sends carries it as
   * `context.contest_id`, and a reply derived from it (`reply` keeps context keys) names the run it answers: a reply
   * to a discarded run (a §5.1 re-run, the same question asked twice) never reaches another run. (The utterance
   * lifecycle's messages do not carry it: handler signals are matched by utterance_id and skill_id.)
   */
  readonly id: string;
  readonly kind: string;
  readonly label: string;
  readonly sessionId: string;
  readonly utteranceId: string | undefined;
  /** Run by another contest's actor as its child (`Supervisor.child`), in that actor's XState system. */
  readonly child?: true;
}

/**
 * Watches the supervisor from outside (the live inspector, metrics): contests as they start and end, and every
 * message dropped with its reason — by the supervisor's routing or by a contest's machine (`*.ignored`). Observers
 * are called synchronously and must be cheap; one that throws is logged and never disturbs a contest.
 */
export interface SupervisorObserver {
  /** Before the actor starts, so its first inspection events find it known. */
  contestStarted?(info: ContestInfo, actor: AnyActorRef, input: unknown): void;
  contestEnded?(info: ContestInfo, result: ContestResult<unknown>): void;
  dropped?(drop: Drop): void;
}

export interface Drop {
  readonly reason: string;
  /** The topic of the dropped message, or the machine's `*.ignored` event. */
  readonly type: string;
  readonly message: Message | undefined;
  /** The contest whose machine ignored it, for a drop inside a contest. */
  readonly contest: ContestInfo | undefined;
  readonly skillId: string | undefined;
  readonly detail: string | undefined;
}

export type ContestResult<T> =
  | { readonly status: 'done'; readonly output: T }
  | { readonly status: 'stopped'; readonly reason: string }
  | { readonly status: 'error'; readonly error: unknown };

export interface ContestOptions<TLogic extends AnyActorLogic> {
  /** Family, e.g. "fallback", "common_query", "utterance". */
  readonly kind: string;
  /** Human label within the family, e.g. the stage id. */
  readonly label: string;
  readonly sessionId: string;
  readonly utteranceId: string | undefined;
  readonly logic: TLogic;
  readonly input: InputFrom<TLogic>;
  /** Inbound kinds this contest listens to, routed for its session. */
  readonly routes: readonly InboundKind[];
  /** Turn a routed inbound message into an event for this contest, or say why it is not for it. */
  readonly correlate?: (inbound: Inbound, message: Message) => EventFromLogic<TLogic> | DropReason;
  /**
   * Whether this contest is waiting for exactly this reply's sender right now (given its current snapshot): an
   * uncorrelated reply — no utterance_id, no contest_id — is taken by the one contest awaiting its sender, in any
   * session (`#routeUncorrelated`). Absent: never.
   */
  readonly awaits?: (inbound: Inbound, snapshot: SnapshotFrom<TLogic>) => boolean;
}

export interface Contest<TLogic extends AnyActorLogic> {
  readonly info: ContestInfo;
  readonly actor: AnyActorRef;
  readonly logger: Logger;
  readonly done: Promise<ContestResult<OutputFrom<TLogic>>>;
  /** `done`, stopping the contest ('match_aborted') if `signal` aborts first (the orchestrator's match bound). */
  until(signal: AbortSignal): Promise<ContestResult<OutputFrom<TLogic>>>;
  send(event: EventFromLogic<TLogic>): void;
  stop(reason: string): void;
}

interface Live {
  readonly info: ContestInfo;
  readonly routes: readonly InboundKind[];
  /** Side-effect free: the event this contest would take, or why it would not. */
  readonly correlate: (inbound: Inbound, message: Message) => { readonly type: string } | DropReason;
  readonly awaits: (inbound: Inbound) => boolean;
  readonly deliver: (event: { readonly type: string }) => void;
  readonly stop: (reason: string) => void;
}

export interface SupervisorOptions {
  readonly bus: Bus;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly inspect?: InspectionHook;
  /** The dialects this supervisor understands (src/dialect/); both by default. */
  readonly dialects?: { readonly spec: boolean; readonly legacy: boolean };
}

const CONTEST_KINDS: ReadonlySet<InboundKind> = new Set<InboundKind>([
  'fallback.pong',
  'common_query.pong',
  'common_query.response',
  'skill.handler.done',
]);

/** The skill a message names (its payload's `skill_id`, else its context's), if any. */
const namedSkill = (message: Message): string | undefined => stringField(message.data, 'skill_id') ?? stringField(message.context, 'skill_id');

/**
 * What a handler may say of a message: an observer of a contest kind of a reply it owns (the answers to the fallback
 * plugin's utterance broadcasts): `'taken'`, it took the reply itself; `{ drop }`, the reply is dropped with that
 * reason — either way it is not routed to a contest; anything else: routed. The owner of a service kind, `{ drop }`:
 * the message is refused with that reason, logged, counted and answered as the supervisor's own drops are (a fallback
 * registration is answered with its refusal).
 */
export type ServiceVerdict = 'taken' | { readonly drop: DropReason };
type ServiceHandler<K extends InboundKind> = (inbound: InboundOf<K>, message: Message) => ServiceVerdict | void;

/**
 * A client connection closed. `skills`: the skill_ids that spoke over it and over no other open connection — now
 * unreachable. `spoke`: every skill_id that spoke over it (one that also speaks over another connection is another
 * instance, still there; what this connection's instance was doing is gone). `late`: the close may have been noticed
 * after the peer's bus client reconnected; `heldBack`: what it sent last may have gone unread with it (both: see
 * `Bus.onConnectionClosed`).
 */
export type ConnectionClosedHandler = (connection: string, skills: readonly string[], spoke: readonly string[], late: boolean, heldBack: boolean) => void;

/** At most this many skill_ids are remembered per connection (one client may host several skills). */
const MAX_SKILLS_PER_CONNECTION = 256;
/** Reasons a machine ignores an event for that are expected traffic (a broadcast answered by skills of other pools). */
/** A contest id as any supervisor makes it (`reserveId`): kind, then a 6-hex-digit prefix and a sequence number. */
const FOREIGN_RUN = /:[0-9a-f]{6}\.\d+$/;

const QUIET_REASONS: ReadonlySet<string> = new Set(['not_in_pool']);

/** At most this many gone skill_ids are remembered (`isGone`). */
const MAX_GONE = 4096;

export class Supervisor {
  readonly bus: Bus;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly #inspect: InspectionHook | undefined;
  readonly #classify: (message: Message) => Classified;
  readonly #routes = new Map<string, Set<Live>>();
  readonly #live = new Map<string, Live>();
  readonly #services = new Map<InboundKind, Array<(inbound: Inbound, message: Message) => ServiceVerdict | void>>();
  readonly #unsubscribe: Unsubscribe;
  readonly #unsubscribeClosed: Unsubscribe;
  /** connection → skill_ids seen speaking over it (only on a bus with connection identity). */
  readonly #peers = new Map<string, Set<string>>();
  /** skill_id → the connection it spoke over most recently (a reconnected skill moves to its new one). */
  readonly #latest = new Map<string, string>();
  /** skill_ids whose latest connection closed and that have not spoken since (bounded, oldest forgotten first). */
  readonly #gone = new Set<string>();
  #closedHandlers: ConnectionClosedHandler[] = [];
  #speaksFor: (skillId: string, connection: string) => boolean = () => true;
  #heardHandlers: Array<(inbound: Extract<Inbound, { readonly skill_id: string }>, connection: string | undefined) => void> = [];
  #observers: SupervisorObserver[] = [];
  readonly #refusalHandlers = new Map<InboundKind, Array<(message: Message, reason: DropReason) => void>>();
  /** Inbound kinds some contest has said it can take uncorrelated (`ContestOptions.awaits`). */
  readonly #awaitsKinds = new Set<InboundKind>();
  /** Replies with an unusable field: at most one warn per reason and skill per minute. */
  readonly #defectLog = new LogRateLimiter(60_000);
  /** Refused fallback registrations: at most one warn per reason and skill per minute. */
  readonly #refusalLog = new LogRateLimiter(60_000);
  /** Drop lines (`#drop`): ten a minute per level, reason and sender. */
  readonly #dropLog = new LogRateLimiter(60_000, 1024, 10);
  /** Distinguishes this daemon's contest ids from another's on a shared bus. */
  readonly #prefix = randomBytes(3).toString('hex');
  #seq = 0;
  /** A contest's actor → the child contests it runs (`child`) that have not ended (its actor may not be hosted yet when they start). */
  readonly #childrenOf = new WeakMap<AnyActorRef, Set<Live>>();
  /** A child contest's actor → its contest id (its actor id is its parent's name for it; a root's is its contest id). */
  readonly #ids = new WeakMap<AnyActorRef, string>();

  constructor(options: SupervisorOptions) {
    this.bus = options.bus;
    this.clock = options.clock;
    this.logger = options.logger;
    this.#inspect = options.inspect;
    const { spec, legacy } = options.dialects ?? { spec: true, legacy: true };
    // Every dialect maps its topics onto the same Inbound kinds. Legacy first: `ovos.skills.fallback.pong` would
    // otherwise read as the spec pong of a skill named "ovos.skills".
    this.#classify = (message) => (legacy ? classifyLegacy(message) : null) ?? (spec ? classify(message) : null);
    this.#unsubscribe = this.bus.subscribe((message) => this.receive(message));
    this.#unsubscribeClosed = this.bus.onConnectionClosed?.((connection, late, heldBack) => this.#connectionClosed(connection, late, heldBack)) ?? (() => {});
  }

  /** The client connection a message arrived on, when the bus knows (the embedded server). */
  connectionOf(message: Message): string | undefined {
    return this.bus.connectionOf?.(message);
  }

  /**
   * Whether what `message` asks for is answered here: not when another daemon of a cluster heard it first and
   * answers it (`Bus.answeredElsewhere`) — one answer per request, as on one bus.
   */
  answersHere(message: Message): boolean {
    return this.bus.answeredElsewhere?.(message) !== true;
  }

  /** Hear about closed client connections (embedded bus only: a foreign bus shows no connection identity). */
  onConnectionClosed(handler: ConnectionClosedHandler): Unsubscribe {
    this.#closedHandlers = [...this.#closedHandlers, handler];
    return () => {
      this.#closedHandlers = this.#closedHandlers.filter((h) => h !== handler);
    };
  }

  /**
   * Who may speak for a skill (the fallback plugin says: not a connection while another holds the skill's
   * registration). A message of a skill over a connection that may not speak for it is routed as usual — its contest
   * drops it — but teaches nothing: the skill is not learnt on that connection, nor heard (`onSkillHeard`).
   */
  speaksFor(check: (skillId: string, connection: string) => boolean): void {
    this.#speaksFor = check;
  }

  /**
   * Hear of every skill that speaks for itself (any message we consume that names its skill_id, but a deregistration;
   * valid or not for its session), with the connection it arrived on (undefined without connection identity): it is on the bus.
   */
  onSkillHeard(handler: (inbound: Extract<Inbound, { readonly skill_id: string }>, connection: string | undefined) => void): Unsubscribe {
    this.#heardHandlers = [...this.#heardHandlers, handler];
    return () => {
      this.#heardHandlers = this.#heardHandlers.filter((h) => h !== handler);
    };
  }

  /** Watch contests start and end and messages being dropped (the inspector); see `SupervisorObserver`. */
  observe(observer: SupervisorObserver): Unsubscribe {
    this.#observers = [...this.#observers, observer];
    return () => {
      this.#observers = this.#observers.filter((o) => o !== observer);
    };
  }

  #notify<K extends keyof SupervisorObserver>(method: K, ...args: Parameters<NonNullable<SupervisorObserver[K]>>): void {
    for (const observer of this.#observers) {
      try {
        (observer[method] as ((...a: typeof args) => void) | undefined)?.call(observer, ...args);
      } catch (error) {
        this.logger.error({ err: error, reason: 'observer_threw' }, 'supervisor observer threw');
      }
    }
  }

  /** Hear about refused messages of a service kind you own (after the refusal is logged). */
  onRefused(kind: InboundKind, handler: (message: Message, reason: DropReason) => void): Unsubscribe {
    this.#refusalHandlers.set(kind, [...(this.#refusalHandlers.get(kind) ?? []), handler]);
    return () => {
      this.#refusalHandlers.set(kind, (this.#refusalHandlers.get(kind) ?? []).filter((h) => h !== handler));
    };
  }

  /** The connection `skillId` spoke over most recently, while it is open (embedded bus only). */
  latestConnectionOf(skillId: string): string | undefined {
    return this.#latest.get(skillId);
  }

  /** skill_ids seen speaking over `connection`. */
  skillsOn(connection: string): readonly string[] {
    return [...(this.#peers.get(connection) ?? [])];
  }

  #learnPeer(inbound: Inbound, message: Message): void {
    if (!('skill_id' in inbound)) return;
    const connection = this.connectionOf(message);
    if (connection === undefined) return;
    let skills = this.#peers.get(connection);
    if (skills === undefined) this.#peers.set(connection, (skills = new Set()));
    if (skills.size >= MAX_SKILLS_PER_CONNECTION && !skills.has(inbound.skill_id)) return;
    skills.add(inbound.skill_id);
    this.#latest.set(inbound.skill_id, connection);
    this.#gone.delete(inbound.skill_id);
  }

  /**
   * Whether every connection `skillId` spoke over has closed and it has not spoken since: a message sent to it now
   * reaches nobody. False for a skill never seen over a connection (a foreign bus shows none).
   */
  isGone(skillId: string): boolean {
    return this.#gone.has(skillId);
  }

  /** Whether `connection` is a client connection that has spoken as a skill and is still open. */
  isOpen(connection: string): boolean {
    return this.#peers.has(connection);
  }

  /**
   * Reported as gone: the skills that spoke over this connection and over no other open one. A skill that also
   * speaks over another connection (it reconnected before the old one was noticed dead, or runs twice) is not gone.
   */
  #connectionClosed(connection: string, late: boolean, heldBack: boolean): void {
    const spoke = this.skillsOn(connection);
    this.#peers.delete(connection);
    const elsewhere = (skill: string): string | undefined => {
      for (const [other, skills] of this.#peers) if (skills.has(skill)) return other;
      return undefined;
    };
    const skills: string[] = [];
    for (const skill of spoke) {
      const other = elsewhere(skill);
      if (other === undefined) {
        skills.push(skill);
        this.#latest.delete(skill);
        this.#gone.add(skill);
      } else if (this.#latest.get(skill) === connection) {
        this.#latest.set(skill, other);
      }
    }
    for (const oldest of this.#gone) {
      if (this.#gone.size <= MAX_GONE) break;
      this.#gone.delete(oldest);
    }
    if (spoke.length > 0) this.logger.info({ connection, skills, spoke }, 'skill connection closed');
    for (const handler of this.#closedHandlers) {
      try {
        handler(connection, skills, spoke, late, heldBack);
      } catch (error) {
        this.logger.error({ err: error, reason: 'service_threw', connection }, 'connection-closed handler threw');
      }
    }
  }

  /** Live contests right now. */
  get size(): number {
    return this.#live.size;
  }

  /** Keys in the routing index right now ((inbound kind, session) pairs with a live contest): 0 when idle. */
  get routeKeys(): number {
    return this.#routes.size;
  }

  /** Register the owner of a service message kind (registrations, utterances, introspection), or an observer of a
   *  contest kind (called before the message is routed to its contest; one that says `'taken'` keeps it from routing). */
  on<K extends InboundKind>(kind: K, handler: ServiceHandler<K>): Unsubscribe {
    const list = this.#services.get(kind) ?? [];
    const wrapped = handler as (inbound: Inbound, message: Message) => ServiceVerdict | void;
    list.push(wrapped);
    this.#services.set(kind, list);
    return () => {
      const current = this.#services.get(kind);
      if (current) this.#services.set(kind, current.filter((h) => h !== wrapped));
    };
  }

  /** Every bus message passes here exactly once. Never throws: a fault routing one message is logged, not raised. */
  receive(message: Message): void {
    try {
      this.#receive(message);
    } catch (error) {
      this.logger.error({ err: error, reason: 'routing_threw', type: message.type }, 'message dropped');
    }
  }

  #receive(message: Message): void {
    const classified = this.#classify(message);
    if (classified === null) return; // not a topic we consume
    if (!classified.ok) {
      this.#drop(classified.reason, message, classified.detail, classified.kind);
      return;
    }
    const { inbound } = classified;
    if (classified.defect !== undefined) this.#defect(classified.defect, inbound, message);
    const connection = this.connectionOf(message);
    const vouched = !('skill_id' in inbound) || connection === undefined || this.#speaksFor(inbound.skill_id, connection);
    if (vouched) this.#learnPeer(inbound, message);
    // A deregistration is a skill leaving, not a sign that it is there.
    if (vouched && 'skill_id' in inbound && inbound.kind !== 'fallback.deregister' && this.#heardHandlers.length > 0) {
      for (const handler of this.#heardHandlers) {
        try {
          handler(inbound, connection);
        } catch (error) {
          this.logger.error({ err: error, reason: 'service_threw', type: message.type }, 'skill-heard handler threw');
        }
      }
    }
    const sessionId = sessionIdOf(message);
    if (sessionId === undefined) {
      // OVOS-SESSION-1 §2.5: never substitute the default session; tell the sender why its message went nowhere
      // (and, for an utterance, end it with its handled: `#drop`).
      const { session: _malformed, ...context } = reply(message, topics.sessionRejected).context;
      if (this.answersHere(message)) this.bus.publish({ type: topics.sessionRejected, data: { msg_type: message.type, reason: 'malformed_carrier' }, context });
      this.#drop('malformed_carrier', message, undefined, inbound.kind);
      return;
    }
    // Owners of service kinds act on them; observers of contest kinds (the common-query roster) see them before
    // they are routed, and may take one (the answers to the fallback plugin's utterance broadcasts).
    let verdict: ServiceVerdict | void = undefined;
    for (const handler of this.#services.get(inbound.kind) ?? []) {
      try {
        verdict = handler(inbound, message) ?? verdict;
      } catch (error) {
        this.logger.error({ err: error, type: message.type, reason: 'service_threw' }, 'service handler threw');
      }
    }
    if (typeof verdict === 'object') this.#drop(verdict.drop, message, undefined, inbound.kind);
    else if (verdict !== 'taken' && CONTEST_KINDS.has(inbound.kind)) this.#route(inbound, message, sessionId);
  }

  #route(inbound: Inbound, message: Message, sessionId: string): void {
    const contestId = stringField(message.context, 'contest_id');
    // A reply to one of our runs that has finished (late, or to the fallback plugin's broadcast of an utterance that
    // is over), or to an id no contest has (`reserveId`): dropped as such, before any live contest is asked.
    if (contestId !== undefined && contestId.includes(`:${this.#prefix}.`) && !this.#live.has(contestId)) {
      this.#drop('finished_contest', message);
      return;
    }
    const utteranceId = utteranceIdOf(message);
    if (contestId === undefined && utteranceId === undefined && this.#awaitsKinds.has(inbound.kind) && this.#routeUncorrelated(inbound, message, sessionId)) return;
    const candidates = this.#routes.get(routeKey(inbound.kind, sessionId));
    if (candidates === undefined || candidates.size === 0) {
      // Another daemon's run (its own prefix) in a session with no contest here: in a cluster every daemon hears every
      // reply, and the daemon that owns the session takes it (src/cluster/).
      const foreign = contestId !== undefined && !contestId.includes(`:${this.#prefix}.`) && FOREIGN_RUN.test(contestId);
      this.#drop(foreign ? 'other_daemon' : 'no_live_contest', message);
      return;
    }
    let accepted: { live: Live; event: { readonly type: string } } | undefined;
    let acceptedCount = 0;
    let firstDrop: DropReason | undefined;
    for (const live of candidates) {
      // MSG-1 §4.2: when both carry an utterance_id they must agree.
      if (utteranceId !== undefined && live.info.utteranceId !== undefined && utteranceId !== live.info.utteranceId) {
        firstDrop ??= 'wrong_utterance_id';
        continue;
      }
      // A reply that names the run it answers goes to that run only (a discarded run's replies go nowhere).
      if (contestId !== undefined && contestId !== live.info.id) {
        firstDrop ??= 'wrong_contest';
        continue;
      }
      const outcome = live.correlate(inbound, message);
      if (typeof outcome === 'string') {
        firstDrop ??= outcome;
        continue;
      }
      accepted = { live, event: outcome };
      acceptedCount++;
    }
    if (accepted === undefined) {
      this.#drop(firstDrop ?? 'no_live_contest', message);
      return;
    }
    // A reply that more than one contest could take (no utterance_id to tell them apart) is not guessed at.
    if (acceptedCount > 1) {
      this.#drop('ambiguous_correlation', message, `${acceptedCount} contests`);
      return;
    }
    accepted.live.deliver(accepted.event);
  }

  /**
   * A reply that names neither its utterance nor its contest (a skill that built it as a fresh message, not derived
   * from what it answers): taken by the one live contest that awaits its sender now (`awaits`: which may also say no
   * when the sender still owes an earlier reply, so a stale one cannot be taken for this one, ovos-core #859); with
   * several, not guessed at (`ambiguous_correlation`). A spec reply that carries a session goes the usual way, by
   * session; without one, every session is searched. A legacy one (ovos-bus-client stamps the "default" session on
   * anything it sends) is searched for in the session it names, or every one for "default". With none awaiting, a
   * legacy reply is dropped (`uncorrelated`) and a spec one goes the usual way. Whether it was handled here.
   */
  #routeUncorrelated(inbound: Inbound, message: Message, sessionId: string): boolean {
    const legacy = 'legacy' in inbound && inbound.legacy === true;
    if (!legacy && message.context['session'] !== undefined) return false;
    const anySession = !legacy || sessionId === DEFAULT_SESSION_ID;
    const awaiting: Live[] = [];
    for (const live of this.#live.values()) {
      if (live.routes.includes(inbound.kind) && (anySession || live.info.sessionId === sessionId) && live.awaits(inbound)) awaiting.push(live);
    }
    if (awaiting.length > 1) {
      this.#drop('ambiguous_correlation', message, `${awaiting.length} contests await this sender`);
      return true;
    }
    const [only] = awaiting;
    if (only === undefined) {
      if (!('legacy' in inbound && inbound.legacy === true)) return false;
      this.#drop('uncorrelated', message);
      return true;
    }
    const event = only.correlate(inbound, message);
    if (typeof event === 'string') this.#drop(event, message);
    else only.deliver(event);
    return true;
  }

  /**
   * A reply with a field that cannot be used: it counts as the skill's decline, or the field is ignored — said once a
   * minute per reason and sender (its connection, else the skill it names).
   */
  #defect(defect: Defect, inbound: Inbound, message: Message): void {
    const skillId = 'skill_id' in inbound ? inbound.skill_id : undefined;
    const { log, suppressed } = this.#defectLog.shouldLog(`${defect.reason}\u0000${this.connectionOf(message) ?? skillId ?? ''}`, this.clock.now());
    if (!log) return;
    this.logger.warn(
      { reason: defect.reason, type: clip(message.type), skill_id: skillId, session_id: clipped(sessionIdOf(message)), utterance_id: clipped(utteranceIdOf(message)), detail: defect.detail, suppressed },
      defect.effect === 'decline' ? "a reply's field cannot be used: it counts as the skill's decline" : "a reply's optional field cannot be used: ignored",
    );
  }

  #drop(reason: DropReason, message: Message, detail?: string, kind?: InboundKind): void {
    if (this.#observers.length > 0) {
      this.#notify('dropped', { reason, type: message.type, message, contest: undefined, skillId: namedSkill(message), detail });
    }
    // Heard first by another daemon of a cluster, which answers it and logs the drop at its level: here, debug.
    const here = this.answersHere(message);
    // A refused fallback register/deregister — malformed here, or refused by the fallback plugin (its verdict) — is
    // answered so the skill sees why (our extension, spec-dialect `topics`), and logged at most once a minute per
    // reason, type and sender — its connection, else its session: the skill ids a sender names are its own choice, so
    // a flood of distinct ids is one line a minute. A malformed carrier is answered with ovos.session.rejected instead.
    if ((kind === 'fallback.register' || kind === 'fallback.deregister') && reason !== 'malformed_carrier') {
      const skillId = namedSkill(message);
      const connection = this.connectionOf(message);
      const by = connection !== undefined ? `connection ${connection}` : `session ${sessionIdOf(message) ?? ''}`;
      const { log, suppressed } = this.#refusalLog.shouldLog(`${reason}\u0000${message.type}\u0000${by}`, this.clock.now());
      if (log) {
        this.logger[here ? 'warn' : 'debug'](
          { reason, type: clip(message.type), skill_id: clipped(skillId), session_id: clipped(sessionIdOf(message)), connection, detail: clipped(detail), suppressed, payload: boundedJson(message.data) },
          'message dropped',
        );
      }
      if (here) this.bus.publish(registrationRefused(message, reason));
      return;
    }
    // Every legacy skill answers every broadcast, also one of an utterance that is over: those late pongs are expected traffic.
    const expected = (reason === 'finished_contest' && message.type === legacyTopics.fallbackPong) || reason === 'other_daemon';
    const quiet = reason === 'no_live_contest' || reason === 'finished_contest' || reason === 'not_awaited' || reason === 'duplicate';
    const level = expected || !here ? 'debug' : quiet ? 'info' : 'warn';
    // At most ten lines a minute per level, reason and sender (its connection, else its session); the others are
    // counted into the next window's first line (`suppressed`). Every drop still reaches the observers (the inspector) and the metrics.
    const connection = this.connectionOf(message);
    const sender = connection ?? `session:${sessionIdOf(message) ?? ''}`;
    const { log, suppressed } = this.#dropLog.shouldLog(`${level}\u0000${reason}\u0000${sender}`, this.clock.now());
    if (log) {
      this.logger[level](
        { reason, type: clip(message.type), session_id: clipped(sessionIdOf(message)), utterance_id: clipped(utteranceIdOf(message)), connection, detail: clipped(detail), suppressed, payload: boundedJson(message.data) },
        'message dropped',
      );
    }
    // The owner of a service kind may answer a refusal (the orchestrator ends a refused utterance with its handled).
    for (const handler of kind === undefined ? [] : (this.#refusalHandlers.get(kind) ?? [])) {
      try {
        handler(message, reason);
      } catch (error) {
        this.logger.error({ err: error, type: message.type, reason: 'service_threw' }, 'refusal handler threw');
      }
    }
  }

  /**
   * An id in this supervisor's contest-id space that no contest will ever have: a message stamped with it (a probe
   * that expects answers but no contest) gets its replies dropped quietly as `finished_contest`.
   */
  reserveId(kind: string): string {
    return `${kind}:${this.#prefix}.${++this.#seq}`;
  }

  /** Spawn one contest actor (a root actor, a system of its own), route its replies, forget it when it finishes. */
  spawn<TLogic extends AnyActorLogic>(options: ContestOptions<TLogic>): Contest<TLogic> {
    const id = `${options.kind}:${this.#prefix}.${++this.#seq}`;
    const actorOptions = this.#inspect === undefined
      ? { input: options.input, clock: this.clock, id }
      : { input: options.input, clock: this.clock, id, inspect: this.#inspect };
    const actor = createActor(options.logic, actorOptions);
    const contest = this.#host(options, id, actor, undefined);
    actor.start();
    return contest;
  }

  /**
   * The same contest as `spawn`, as actor logic another actor runs as its child (the orchestrator invokes a stage's
   * contest as the utterance actor's match): one XState system with its parent — no system, scheduler and promise
   * actor of its own. Routed, logged and observed as a spawned contest from the moment its parent creates it;
   * `started` then receives it (to listen to what it emits). What the parent reads as its output is `output(…)` of
   * the machine's; `done` resolves with the machine's own. A child is stopped by its parent: leaving the state that
   * invoked it ends the contest as stopped (`match_aborted`); a parent contest that ends first (stopped, failed, or
   * before it ever started the child) ends it with its own reason. Its `stop` and `until` end its routing at once;
   * its machine stops with its parent (XState stops no child on its own).
   */
  child<TLogic extends AnyActorLogic, TOut>(
    options: ContestOptions<TLogic>,
    output: (output: OutputFrom<TLogic>) => TOut,
    started: (contest: Contest<TLogic>) => void,
  ): ActorLogic<Snapshot<TOut>, EventObject, unknown> {
    return delegate<unknown, TOut>((_input, self) => {
      const id = `${options.kind}:${this.#prefix}.${++this.#seq}`;
      // The machine's own output, before `output` rewrites it for the parent: what `done` resolves with.
      let own: OutputFrom<TLogic> | undefined;
      started(this.#host(options, id, self, { output: () => own as OutputFrom<TLogic> }));
      return {
        logic: options.logic,
        input: options.input,
        output: (value) => output((own = value as OutputFrom<TLogic>)),
      };
    });
  }

  /** The contest id of a contest's actor (`ContestInfo.id`: what its queries carry as `context.contest_id`). */
  contestIdOf(actor: AnyActorRef): string {
    return this.#ids.get(actor) ?? actor.id;
  }

  /** Route a contest's replies to `actor`, log what it emits, tell the observers, forget it when it ends. */
  #host<TLogic extends AnyActorLogic>(
    options: ContestOptions<TLogic>,
    id: string,
    actor: AnyActorRef,
    child: { readonly output: () => OutputFrom<TLogic> } | undefined,
  ): Contest<TLogic> {
    if (child !== undefined) this.#ids.set(actor, id);
    const info: ContestInfo = {
      id,
      kind: options.kind,
      label: options.label,
      sessionId: options.sessionId,
      utteranceId: options.utteranceId,
      ...(child === undefined ? {} : { child: true }),
    };
    const logger = this.logger.child({ session_id: clip(options.sessionId), utterance_id: clipped(options.utteranceId), contest: `${options.kind}/${options.label}` });
    // A child's siblings: what its parent's actor runs.
    const parent = actor._parent;
    let siblings: Set<Live> | undefined;
    if (child !== undefined && parent !== undefined) {
      siblings = this.#childrenOf.get(parent);
      if (siblings === undefined) this.#childrenOf.set(parent, (siblings = new Set()));
    }

    let settle!: (result: ContestResult<OutputFrom<TLogic>>) => void;
    const done = new Promise<ContestResult<OutputFrom<TLogic>>>((resolve) => (settle = resolve));
    let ended = false;
    const end = (result: ContestResult<OutputFrom<TLogic>>): void => {
      if (ended) return;
      ended = true;
      this.#forget(live);
      siblings?.delete(live);
      if (this.#observers.length > 0) this.#notify('contestEnded', info, result);
      settle(result);
      // Its children end with it: stopped with its reason, or because it ended (one its actor never started, or
      // still running after it failed, is ended here; every other ended already, when its parent stopped it).
      const reason = result.status === 'stopped' ? result.reason : `${options.kind}_${result.status === 'done' ? 'ended' : 'failed'}`;
      const children = this.#childrenOf.get(actor);
      if (children !== undefined) for (const running of [...children]) running.stop(reason);
    };

    if (options.awaits !== undefined) for (const kind of options.routes) this.#awaitsKinds.add(kind);
    const live: Live = {
      info,
      routes: options.routes,
      correlate: (inbound, message) => {
        if (ended) return 'no_live_contest';
        return options.correlate ? options.correlate(inbound, message) : 'not_awaited';
      },
      awaits: (inbound) => !ended && options.awaits !== undefined && options.awaits(inbound, actor.getSnapshot() as SnapshotFrom<TLogic>),
      deliver: (event) => {
        if (!ended) actor.send(event as EventFromLogic<TLogic>);
      },
      stop: (reason) => {
        if (ended) return;
        logger.info({ reason }, 'contest stopped');
        end({ status: 'stopped', reason });
        // A child is stopped by its parent (XState refuses `stop()` on it); its routes are gone already, and its
        // parent — a contest too, stopped after it (`stopAll` goes newest first) — takes it down.
        if (child === undefined) actor.stop();
      },
    };
    siblings?.add(live);

    // Machines report notable moments with emit(); the edge turns them into log lines.
    // A machine that ignores an event says why (`*.ignored` with a `reason`): a drop, logged like the supervisor's
    // own. Other reported moments with a reason (a rejected Match) are logged under their own name.
    actor.on('*', (emitted: { type: string; reason?: string; skill_id?: string }) => {
      if (emitted.reason === undefined || QUIET_REASONS.has(emitted.reason)) logger.debug(emitted, emitted.type);
      else logger.info(emitted, emitted.type.endsWith('.ignored') ? 'message dropped' : emitted.type);
      if (emitted.reason !== undefined && emitted.type.endsWith('.ignored') && this.#observers.length > 0) {
        const drop: Drop = { reason: emitted.reason, type: emitted.type, message: undefined, contest: info, skillId: emitted.skill_id, detail: undefined };
        this.#notify('dropped', drop);
      }
    });
    actor.subscribe({
      complete: () => {
        const snapshot = actor.getSnapshot() as { status: string; output: OutputFrom<TLogic> };
        // Done; or, for a child, stopped by its parent (it completes its observers then too).
        if (snapshot.status === 'done') end({ status: 'done', output: child === undefined ? snapshot.output : child.output() });
        else live.stop('match_aborted');
      },
      error: (error) => {
        logger.error({ err: error, reason: 'contest_error' }, 'contest failed');
        end({ status: 'error', error });
      },
    });

    this.#live.set(id, live);
    for (const kind of options.routes) {
      const key = routeKey(kind, options.sessionId);
      let set = this.#routes.get(key);
      if (set === undefined) this.#routes.set(key, (set = new Set()));
      set.add(live);
    }
    if (this.#observers.length > 0) this.#notify('contestStarted', info, actor, options.input);

    return {
      info,
      actor,
      logger,
      done,
      until: async (signal) => {
        const abort = (): void => live.stop('match_aborted');
        if (signal.aborted) abort();
        signal.addEventListener('abort', abort, { once: true });
        try {
          return await done;
        } finally {
          signal.removeEventListener('abort', abort);
        }
      },
      send: (event) => {
        if (!ended) actor.send(event);
      },
      stop: (reason) => live.stop(reason),
    };
  }

  #forget(live: Live): void {
    this.#live.delete(live.info.id);
    for (const kind of live.routes) {
      const key = routeKey(kind, live.info.sessionId);
      const set = this.#routes.get(key);
      if (set === undefined) continue;
      set.delete(live);
      if (set.size === 0) this.#routes.delete(key);
    }
  }

  /** End every live contest (bus connection lost, shutdown); each resolves as stopped with the reason. */
  stopAll(reason: string): void {
    // Newest first: a plugin's contest ends with this reason before the utterance that awaited it is stopped
    // (which would otherwise abort the plugin's match and log `match_aborted` instead).
    for (const live of [...this.#live.values()].reverse()) live.stop(reason);
  }

  close(): void {
    this.#unsubscribe();
    this.#unsubscribeClosed();
    this.stopAll('supervisor_closed');
  }
}

const clipped = (text: string | undefined): string | undefined => (text === undefined ? undefined : clip(text));

function routeKey(kind: InboundKind, sessionId: string): string {
  return `${kind}\u0000${sessionId}`;
}
