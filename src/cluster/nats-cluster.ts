/**
 * A daemon of a cluster on NATS (src/cluster/README.md). Every daemon serves the OVOS websocket endpoint; what its
 * clients send and what its contests publish travels on NATS (`ovos.bus.<topic>`) — all but what no other daemon needs
 * (`#keptHere`) — and every daemon hands every frame to its own clients, so a client of any daemon sees the whole bus,
 * as on one ovos-messagebus.
 *
 * Contests are partitioned by session: a session's partition (`partitionOf`) is owned by one daemon at a time, and
 * only that daemon's orchestrator is handed the session's utterance entries; every other message reaches every
 * daemon's contest system (registrations, connection changes and replies, which a daemon without the contest drops
 * quietly). Ownership is a JetStream KV entry per partition, taken by compare-and-set, so two daemons never own one
 * partition; which daemon should own it is rendezvous hashing over the live daemons (heartbeats), so a daemon joining
 * or leaving moves only its share. A daemon gives a partition up only after that partition's utterances in flight on
 * it have ended; entries arriving meanwhile wait, on every daemon, for the next owner, which takes them in order.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { connect, credsAuthenticator, nanos, nkeyAuthenticator, type Msg, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { jetstreamManager, StorageType, type JetStreamManager } from '@nats-io/jetstream';
import { Kvm, KvWatchInclude, type KV, type KvEntry, type KvWatchEntry } from '@nats-io/kv';
import type { BusRelay, BusServer } from '../bus/ws-server.js';
import type { Bus, BusStatus } from '../bus/bus.js';
import { createMessage, decodeFrame, encodeMessage, reply, utteranceIdOf, withContext, type Message } from '../bus/message.js';
import { LogRateLimiter } from '../log/rate-limit.js';
import { sessionIdOf, DEFAULT_SESSION_ID } from '../bus/session.js';
import { systemClock, type Clock, type TimerId } from '../clock/clock.js';
import { barrierClock } from '../clock/barrier-clock.js';
import { isLoopbackHost } from '../bus/loopback.js';
import type { Logger } from '../log/logger.js';
import { Admissions } from './admissions.js';
import { DeadlineBarrier } from './deadline-barrier.js';
import { Membership } from './membership.js';
import { StateWriter } from './state-writer.js';
import { Publisher } from './publisher.js';
import {
  parseJson,
  readBreakerNote,
  readConnectionNote,
  readNodeNote,
  readNote,
  readOrphan,
  readRegistrationValue,
  readResendNote,
  readSyncNote,
  readTableValue,
  type BreakerNote,
  type ConnectionNote,
  type NodeNote,
  type Note,
  type Orphan,
  type Read,
  type RegistrationValue,
  type ResendNote,
} from './notes.js';
import { startHeartbeat, type Heartbeat } from './heartbeat.js';
import { connectOptions, encrypted, hostOf, NatsAccessError, natsExposure, natsRefusal, type NatsAccess } from './nats-auth.js';
import { InOrder, SentRing } from './redelivery.js';
import { topics, utteranceRefused } from '../dialect/spec-dialect.js';
import { legacyTopics } from '../dialect/legacy-dialect.js';
import type { FallbackPlugin, FallbackRegistrationChange } from '../plugins/fallback/fallback.plugin.js';
import {
  BREAKER_SUBJECT,
  BUS_PREFIX,
  busSubject,
  CONNECTION_SUBJECT,
  ENDS_SUBJECT,
  openEnvelope,
  NODE_SUBJECT,
  type Opened,
  PARTITION_BUCKET,
  PARTITION_SUBJECT,
  partitionOf,
  preferredOwner,
  RESEND_SUBJECT,
  RESENT_PREFIX,
  FORMER_STATE_STREAM,
  STATE_BUCKET,
  stateKey,
  SYNC_SUBJECT,
  SYNCED_SUBJECT,
} from './subjects.js';

export interface ClusterOptions {
  /** The NATS servers (any of one NATS cluster) and how to authenticate to them (`natsAccess`). */
  readonly access: NatsAccess;
  /** How many partitions the sessions are spread over; every daemon of a cluster must agree. */
  readonly partitions: number;
  /** How often a daemon says it is alive (and checks its partitions). */
  readonly heartbeatMs: number;
  /** A daemon not heard from for this long is gone: its partitions are taken over. */
  readonly deadAfterMs: number;
  /** The longest a daemon waits for a partition's utterances to end before it gives the partition up anyway. */
  readonly drainMs: number;
  readonly logger: Logger;
  readonly clock?: Clock;
  /** This daemon's name in the cluster (default: random). */
  readonly nodeId?: string;
  /** How long a lost daemon's dispatched skill has to end its handler before its utterance ends with an error. */
  readonly handlerMs: number;
  /** JetStream replicas of the partition table and the state bucket (up to the NATS cluster's size; 3 survives a node). */
  readonly replicas?: number;
  /** How long a registration or suspension is kept in the state bucket after it was written (`fallback.forgetAfterMs`). */
  readonly stateTtlMs: number;
}

/** What one daemon knows of the cluster (the inspector and the metrics show it). */
export interface ClusterView {
  readonly node: string;
  readonly members: readonly string[];
  readonly partitions: number;
  /** Partitions this daemon owns. */
  readonly owned: readonly number[];
  /** Owner of every partition, as the table reads here (null: none). */
  readonly owners: ReadonlyArray<string | null>;
  /** Utterance entries waiting for their partition's next owner. */
  readonly waiting: number;
  /** Utterances of a lost daemon this one ended or took over. */
  readonly failovers: number;
  /** Frames dropped here as said by a daemon taken for gone of an utterance taken over from it (fencing). */
  readonly fenced: number;
  /** Messages of other daemons missed and not to be had again (redelivery gave up). */
  readonly framesLost: number;
  /** Messages and bucket entries read from NATS and dropped as not a daemon's (`cluster_message_invalid`, …). */
  readonly invalid: number;
  /** Client connections open on the other daemons (while there are none, `keptHere` grows). */
  readonly connectionsElsewhere: number;
  /** Frames of this daemon's utterances no other daemon needed, kept off NATS (no other daemon had a client; their ends in digests). */
  readonly keptHere: number;
  /**
   * Waits of this daemon's due deadlines for the other daemons' word (src/cluster/README.md, "Deadlines"): how many,
   * how many every daemon asked answered, and how many ran out (`cluster.deadAfterMs`) first.
   */
  readonly deadlineWaits: { readonly asked: number; readonly answered: number; readonly timedOut: number };
  /**
   * This daemon's traffic with its NATS server since it started, as its NATS client counts it: messages and bytes
   * published (`out`: bus frames, notes, what is published again, the KV writes) and received (`in`). The heartbeats
   * travel on a connection of their own and are not counted.
   */
  readonly nats: { readonly messagesOut: number; readonly messagesIn: number; readonly bytesOut: number; readonly bytesIn: number };
  /** The sessions of the latest utterance entries heard (any daemon's), newest last, at most `RECENT_SESSIONS`. */
  readonly recentSessions: readonly string[];
}

/**
 * The family of a subject or bucket key a dropped message came on, for its log line's limit: the bus's frames are one
 * family whatever their topic, what is published again one whatever it names, a bucket one whatever its key.
 */
function subjectFamily(where: string): string {
  for (const family of [`${BUS_PREFIX}.`, `${RESENT_PREFIX}.`, `${STATE_BUCKET}.`, `${PARTITION_BUCKET}.`]) if (where.startsWith(family)) return family;
  return NOTE_SUBJECTS.has(where) ? where : 'other';
}

const NOTE_SUBJECTS: ReadonlySet<string> = new Set([NODE_SUBJECT, RESEND_SUBJECT, PARTITION_SUBJECT, CONNECTION_SUBJECT, BREAKER_SUBJECT, SYNC_SUBJECT, SYNCED_SUBJECT, ENDS_SUBJECT]);

/** How many recent sessions a daemon lists in its view (the inspector shows which daemon runs each). */
const RECENT_SESSIONS = 100;

/**
 * The registrations (both dialects): the daemon a skill registers through keeps the registration in the state bucket
 * with the connections open, so a daemon that joins replays them through its own plugins and knows every skill the
 * others know, bound to the same connections.
 */
const REGISTRY_TOPICS: ReadonlySet<string> = new Set([topics.fallbackRegister, topics.fallbackDeregister, legacyTopics.fallbackRegister, legacyTopics.fallbackDeregister]);

/** The utterance entries: the only messages partitioned; the rest reach every daemon. */
const ENTRY_TOPICS: ReadonlySet<string> = new Set([topics.utteranceHandle, legacyTopics.recognizerUtterance]);

/** The messages that end an utterance, by the name an ends digest gives them (`ENDS_SUBJECT`). */
type End = 'matched' | 'unmatched' | 'complete' | 'error' | 'handled';
const ENDS: ReadonlyMap<string, End> = new Map<string, End>([
  [topics.intentMatched, 'matched'],
  [topics.intentUnmatched, 'unmatched'],
  [topics.skillHandlerComplete, 'complete'],
  [topics.skillHandlerError, 'error'],
  [topics.utteranceHandled, 'handled'],
]);

/**
 * The subjects every daemon reads whatever partition they name: the entries, how utterances end, the registrations
 * (one that names an utterance too is every daemon's), and the common-query claims (spec pongs and legacy
 * `question:query.response`): every daemon's roster learns from every poll on the bus, as on one bus, so a daemon that
 * has run no poll yet already knows which skills answer.
 */
const READ_EVERYWHERE: ReadonlySet<string> = new Set(
  [...ENTRY_TOPICS, ...ENDS.keys(), topics.commonQueryPong, legacyTopics.questionQueryResponse, ...REGISTRY_TOPICS].map(busSubject),
);
/** The topic of each end (`ENDS`, the other way). */
const END_TOPICS: ReadonlyMap<string, string> = new Map([...ENDS].map(([topic, end]) => [end, topic]));
/** An end in a digest: how, of which utterance, its partition, and the client connection that said it (not the contests). */
type DigestedEnd = readonly [End, string, number] | readonly [End, string, number, string];

/** How many utterance entries a daemon hands its contests in one turn of its event loop (admissions.ts). */
const ADMIT_PER_TURN = 16;

/** How long a daemon keeps an entry that waits for an owner, or a note heard before its entry. */
const REMEMBER_MS = 10 * 60_000;
/** How long a daemon remembers an utterance it saw end, for a taken note that arrives after its handled. */
const ENDED_MS = 60_000;
/** The most handler ends of unknown utterances a daemon remembers at once (`#handlerEnds`). */
const MAX_HANDLER_ENDS = 100_000;

interface Waiting {
  readonly partition: number;
  readonly message: Message;
  readonly connection: string | undefined;
  readonly at: number;
  /** The daemon that took it, in which run (`boot`; unknown from a daemon of an earlier version), and the utterance_id it runs under. */
  taken?: Taker;
  /** Its match was decided (ovos.intent.matched or .unmatched went out): a matched skill may have been dispatched. */
  decided?: 'matched' | 'unmatched';
  /** The dispatched skill said its handler ended (mycroft.skill.handler.complete / .error). */
  handler?: 'complete' | 'error';
  /** Adopted after its daemon was lost: waiting for the skill's handler to end (cleared by its handled). */
  adopted?: TimerId;
  /** Its daemon's run is gone and another daemon owns the partition: handed to that daemon (`<node> <boot>`). */
  handedTo?: string;
}

interface Taker {
  readonly node: string;
  readonly boot: string | undefined;
  readonly utteranceId: string;
}

interface Owned {
  revision: number;
  readonly epoch: number;
  /** Giving it up: no new entry is taken; released once `inFlight` is 0 (or `drainMs` passed). */
  drainingSince: number | undefined;
  inFlight: number;
}

/** A registration as the fallback plugin would have heard it: what a daemon writes for a registry entry it rewrites. */
function registrationMessage(sessionId: string, skillId: string, priority: number, legacy: boolean): Message {
  return legacy
    ? createMessage(legacyTopics.fallbackRegister, { skill_id: skillId, priority }, { session: { session_id: sessionId } })
    : createMessage(topics.fallbackRegister, { skill_id: skillId, priority }, { skill_id: skillId, session: { session_id: sessionId } });
}

/**
 * A KV bucket, created if missing, with the settings asked for: `Kvm.create` only reads a bucket that exists, so a
 * change of `cluster.replicas` or `fallback.forgetAfterMs` is applied to its stream here.
 */
async function bucket(kvm: Kvm, jsm: JetStreamManager, name: string, options: { readonly replicas: number; readonly ttl?: number; readonly storage?: StorageType }, forming: Forming): Promise<KV> {
  const { logger } = forming;
  const kv = await whilePlacing(() => kvm.create(name, { history: 1, ...options }), forming);
  const stream = `KV_${name}`;
  const { config } = await whilePlacing(() => jsm.streams.info(stream), forming);
  const maxAge = options.ttl === undefined ? config.max_age : nanos(options.ttl);
  if (config.num_replicas !== options.replicas || config.max_age !== maxAge) {
    await whilePlacing(() => jsm.streams.update(stream, { ...config, num_replicas: options.replicas, max_age: maxAge }), forming);
    logger.info({ bucket: name, replicas: options.replicas, ttl_ms: options.ttl }, 'cluster: bucket settings changed');
  }
  return kv;
}
/** A replay of the state bucket that hears nothing for this long has nothing more to hear (its last entries went meanwhile). */
const REPLAY_QUIET_MS = 5_000;
/**
 * How long a daemon that joined goes on reading the state bucket's new writes (`#catchUp`), at least: a change whose
 * frame reached NATS before the daemon subscribed is written a moment later, or once NATS takes writes again.
 */
const CATCH_UP_MS = 10_000;

/**
 * How much a daemon keeps of what it published, to publish again (redelivery.ts): long enough for a receiver to see
 * the gap (a heartbeat or two) and ask until it gives up (`deadAfterMs`), three times over; at most this many bytes.
 */
const RESEND_KEEP_BYTES = 32 * 1024 * 1024;
const RESEND_KEEP_MS = 3_000;
/** The most numbers one resend note asks for. */
const RESEND_MAX = 100_000;

const encoder = new TextEncoder();

/** How long a daemon waits for a NATS cluster still forming (JetStream not up yet, or its peers not all known) to serve it. */
const PLACEMENT_WAIT_MS = 30_000;

/**
 * What JetStream answers while a NATS cluster started with the daemons is still forming: no answer yet (its
 * metadata leader not elected, or just elected and not serving), "temporarily unavailable", or "no suitable peers for
 * placement" (the leader elected before every server has joined, so `cluster.replicas` more than one cannot be
 * placed for a moment).
 */
const FORMING = /no suitable peers|temporarily unavailable|timeout|503|no responders/i;

/** One start's wait for a NATS cluster still forming: `PLACEMENT_WAIT_MS` in all, said once. */
interface Forming {
  readonly logger: Logger;
  readonly deadline: number;
  said: boolean;
}

/** `call`, tried again while JetStream answers that its NATS cluster is still forming, until the start's deadline. */
async function whilePlacing<T>(call: () => Promise<T>, forming: Forming): Promise<T> {
  for (;;) {
    try {
      return await call();
    } catch (error) {
      const detail = `${(error as { name?: unknown }).name} ${String(error)}`;
      if (!FORMING.test(detail) || Date.now() > forming.deadline) throw error;
      if (!forming.said) forming.logger.info({ reason: 'jetstream_forming', detail, wait_ms: PLACEMENT_WAIT_MS }, 'cluster: JetStream of the NATS cluster is not ready yet; waiting for it');
      forming.said = true;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

/**
 * How often the client pings its NATS server: a server gone silent (its machine lost, not its process) is noticed
 * after two unanswered pings — NATS's default of two minutes apart would leave the daemon cut off for four.
 */
function pingsFor(deadAfterMs: number): { readonly pingInterval: number; readonly maxPingOut: number } {
  return { pingInterval: Math.max(2_000, deadAfterMs), maxPingOut: 2 };
}



export class NatsCluster implements BusRelay {
  readonly node: string;
  readonly #nc: NatsConnection;
  readonly #kv: KV;
  /** What a joining daemon replays (`STATE_BUCKET`). */
  readonly #state: KV;
  /** What this daemon writes to the state bucket (state-writer.ts). */
  readonly #stateWriter: StateWriter;
  /** Registrations this daemon relayed for its clients and its own skills (the others' daemons keep theirs). */
  readonly #ownRegistrations = new WeakSet<Message>();
  /** The client connections open on this daemon (their keys are this daemon's to keep). */
  readonly #ownConnections = new Set<string>();
  /** Keys of registrations made through this daemon by its in-process skills (no connection), while they stand. */
  readonly #inProcessRegistrations = new Set<string>();
  #refresh: TimerId | undefined;
  readonly #options: ClusterOptions;
  readonly #clock: Clock;
  readonly #logger: Logger;
  #server: BusServer | undefined;
  /** The fallback plugin whose registrations and suspensions the cluster shares (`shareFallback`). */
  #fallback: FallbackPlugin | undefined;
  #sub: Subscription | undefined;
  #tick: TimerId | undefined;
  /** This run of the daemon (a restart numbers its messages from 1 again, in a run of its own). */
  readonly #boot = randomBytes(4).toString('hex');
  /** What this daemon publishes: numbered, kept for redelivery, sent once a turn (publisher.ts). */
  readonly #out: Publisher;
  /** The entries taken here, to the contests at most `ADMIT_PER_TURN` a turn of the event loop (admissions.ts). */
  readonly #admissions = new Admissions<{ readonly message: Message; readonly connection: string | undefined }>({
    perTurn: ADMIT_PER_TURN,
    admit: ({ message, connection }) => this.#server?.admit(message, connection),
    nextTurn: (run) => setImmediate(run),
  });
  /** What this daemon's contests said of an utterance, published and waiting for the NATS server's confirmation (`#confirm`). */
  readonly #held: Array<{ readonly subject: string; readonly opened: Opened; readonly message: Message }> = [];
  /** Since when the NATS connection has been lost (monotonic ms; undefined while connected). */
  #disconnectedAt: number | undefined;
  /** One `cluster_unreachable` warn a minute. */
  readonly #unreachableLog = new LogRateLimiter(60_000);
  /** What was read from NATS and dropped as not a daemon's (`#invalid`), and its log lines' limiter. */
  #invalidCount = 0;
  readonly #invalidLog = new LogRateLimiter(60_000);
  /** Servers beyond loopback reconnected to in clear, warned of once (`#warnInClear`). */
  readonly #inClear = new Set<string>();
  #confirmedThrough = 0;
  /** The last number handed to the NATS client: what the heartbeat says this daemon published. */
  #handedThrough = 0;
  readonly #resentSubject: string;
  /** The partition table is being read before held output goes on (`#recheck`); asked again meanwhile. */
  #rechecking = false;
  #recheckAgain = false;
  /** While the state is replayed (`attach`): what arrives, and what this daemon hands on itself, in order. */
  #waitingForReplay: Array<() => void> | undefined;
  /** The state keys changed by what this daemon heard live, while it catches up on the state bucket's writes (`#catchUp`). */
  #heardLive: Set<string> | undefined;
  /** What this daemon published lately, to publish again for a receiver that missed it. */
  readonly #ring: SentRing;
  /** Every other daemon's messages, once each, in the order it numbered them. */
  readonly #order: InOrder<{ readonly subject: string; readonly opened: Opened }>;
  /**
   * Other daemons by the round of this daemon's own heartbeats in which they were last heard, and whether they are
   * leaving. Liveness is counted in this daemon's own heartbeats coming back through the same subscription, not in
   * milliseconds: a backlog of frames on this daemon delays its own heartbeats as much as the others', so a busy
   * daemon never takes a live one for gone.
   */
  /** Who is in the cluster, from the heartbeats (membership.ts). */
  readonly #members: Membership;
  readonly #table = new Map<number, { readonly owner: string | null; readonly epoch: number; readonly revision: number; readonly at: number }>();
  readonly #owned = new Map<number, Owned>();
  readonly #claiming = new Set<number>();
  /** Utterance entries by frame id, until they end (all of them, on every daemon). */
  readonly #entries = new Map<string, Waiting>();
  readonly #frameOf = new Map<string, string>();
  /** Taken notes heard before their entry. */
  readonly #early = new Map<string, Taker & { readonly at: number }>();
  /** Utterances this daemon runs: utterance_id → partition. */
  readonly #mine = new Map<string, number>();
  /**
   * Fenced: what a daemon taken for gone still says of the utterances it had taken, and of partitions taken over from
   * it, is dropped (src/cluster/README.md "Fencing"). That daemon → its utterance_ids (and since when); partition →
   * that daemon, until it owns the partition again.
   */
  readonly #fencedUtterances = new Map<string, Map<string, number>>();
  readonly #takenOverFrom = new Map<number, string>();
  readonly #ended = new Map<string, number>();
  /**
   * Handler ends heard of utterances this daemon knows no entry of (its own contests' included), for `ENDED_MS`: an
   * utterance of a gone run handed here (`#adoptOrphans`) by a daemon that had not heard its end yet.
   */
  readonly #handlerEnds = new Map<string, { readonly handler: 'complete' | 'error'; readonly at: number }>();
  /**
   * Client connections open on the cluster's daemons (ids start with their daemon's name and "/"), each with when its
   * opening was heard here (monotonic): what its daemon said within `deadAfterMs` shows that daemon was alive then.
   */
  readonly #open = new Map<string, number>();
  /**
   * How many of `#open` each daemon has: those with none relay no replies (a deadline waits for no word of theirs),
   * and while no other daemon has one, the frames of this daemon's utterances stay here (`#keptHere`).
   */
  readonly #openOn = new Map<string, number>();
  /** Deadlines waiting for the other daemons' word (deadline-barrier.ts). */
  readonly #barrier: DeadlineBarrier;
  /**
   * Until when (monotonic ms) the clients of a daemon taken for gone still count as open elsewhere: it may be cut off,
   * not dead, and its clients get what it missed once it is back — within what redelivery keeps (`#resendKeepMs`).
   */
  #othersGoneUntil = -Infinity;
  readonly #resendKeepMs: number;
  /** Frames of this daemon's utterances kept off NATS (`#keptHere`), since start. */
  #keptFrames = 0;
  #failovers = 0;
  #fencedFrames = 0;
  #framesLost = 0;
  #closing = false;
  #beat: Heartbeat | undefined;
  readonly #recent = new Set<string>();
  #saidOwned = '';
  #leaving = false;
  readonly #status: Array<(status: BusStatus) => void> = [];

  private constructor(nc: NatsConnection, kv: KV, state: KV, jsm: JetStreamManager, options: ClusterOptions) {
    this.#nc = nc;
    this.#kv = kv;
    this.#state = state;
    this.#stateWriter = new StateWriter({ state, jsm, clock: options.clock ?? systemClock, logger: options.logger, retryMs: options.heartbeatMs });
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger;
    this.node = options.nodeId ?? randomBytes(4).toString('hex');
    this.#resentSubject = `${RESENT_PREFIX}.${this.node}`;
    this.#members = new Membership(this.node, Math.max(2, Math.ceil(options.deadAfterMs / options.heartbeatMs)));
    this.#resendKeepMs = Math.max(RESEND_KEEP_MS, 3 * options.deadAfterMs);
    this.#ring = new SentRing({ clock: this.#clock, keepMs: this.#resendKeepMs, maxBytes: RESEND_KEEP_BYTES, againMs: options.heartbeatMs / 2 });
    this.#out = new Publisher({
      node: this.node,
      boot: this.#boot,
      logger: this.#logger,
      ring: this.#ring,
      maxPayload: () => this.maxPayload,
      publish: (subject, data) => this.#nc.publish(subject, data),
      closing: () => this.#closing,
      handed: (through) => {
        this.#handedThrough = through;
        if (this.#held.length > 0) this.#confirm();
      },
    });
    this.#order = new InOrder({
      clock: this.#clock,
      giveUpMs: options.deadAfterMs,
      askEveryMs: options.heartbeatMs,
      deliver: ({ subject, opened }) => this.#delivered(subject, opened),
      ask: (to, boot, from, through) => {
        this.#logger.debug({ reason: 'frames_missed', node: to, from, through }, 'cluster: messages of a daemon missed; asked again');
        this.#nc.publish(RESEND_SUBJECT, encoder.encode(JSON.stringify({ to, boot, from, through, by: this.node } satisfies ResendNote)));
      },
      lost: (node, boot, from, through) => {
        this.#framesLost += through - from + 1;
        this.#logger.warn({ reason: 'frames_lost', node, boot, from, through, count: through - from + 1 }, 'cluster: messages of a daemon missed and not to be had again; going on without them');
      },
    });
    this.#barrier = new DeadlineBarrier({
      node: this.node,
      boot: this.#boot,
      clock: this.#clock,
      logger: this.#logger,
      deadAfterMs: options.deadAfterMs,
      // The others that have clients, are alive and know the question (an earlier version does not: it is not asked);
      // none while this daemon's NATS connection is down (no reply from another daemon can reach it then: its contests
      // go on as on a bus of its own, their output held) or it is closing.
      toAsk: () => {
        if (this.#closing || this.#disconnectedAt !== undefined) return [];
        return [...this.#openOn.keys()].filter((node) => node !== this.node && this.#members.of(node)?.sync === true && this.#members.alive(node));
      },
      publish: (kind, note) => this.#publish(kind === 'ask' ? SYNC_SUBJECT : SYNCED_SUBJECT, undefined, undefined, encoder.encode(JSON.stringify(note))),
      closing: () => this.#closing,
    });
  }

  /** Connects to NATS and opens (or creates) the partition table. Rejects when no server answers. */
  static async connect(options: ClusterOptions): Promise<NatsCluster> {
    const { access } = options;
    const nc = await connect({ ...connectOptions(access, { nkeyAuthenticator, credsAuthenticator }), name: 'ovos-contests', maxReconnectAttempts: -1, reconnectTimeWait: 250, noEcho: true, ...pingsFor(options.deadAfterMs) }).catch((error: unknown) => {
      throw natsRefusal(error, access);
    });
    try {
      if (access.tls !== undefined && !encrypted(nc)) throw new NatsAccessError('nats_tls_unavailable', `the connection to ${access.shown} is not encrypted, and this daemon demands TLS`);
      for (const note of access.notes) options.logger.warn({ reason: note.reason }, note.message);
      for (const exposure of natsExposure(access, nc)) options.logger.warn({ reason: exposure.reason, nats: access.shown }, exposure.message);
      const replicas = options.replicas ?? 1;
      const kvm = new Kvm(nc);
      const forming: Forming = { logger: options.logger, deadline: Date.now() + PLACEMENT_WAIT_MS, said: false };
      const jsm = await whilePlacing(() => jetstreamManager(nc), forming);
      const kv = await bucket(kvm, jsm, PARTITION_BUCKET, { replicas }, forming);
      const state = await bucket(kvm, jsm, STATE_BUCKET, { replicas, storage: StorageType.File, ttl: options.stateTtlMs }, forming);
      // Earlier versions kept every change in a stream (it grew with every connection opened and closed, and its size
      // bound dropped the oldest registrations first): nothing reads it any more, and it would go on storing.
      if (await jsm.streams.delete(FORMER_STATE_STREAM).catch(() => false)) {
        options.logger.warn({ reason: 'former_state_removed', stream: FORMER_STATE_STREAM, bucket: STATE_BUCKET }, 'cluster: the history stream of an earlier version was removed; skills that never register again (legacy) are known once they speak');
      }
      return new NatsCluster(nc, kv, state, jsm, options);
    } catch (error) {
      await nc.close().catch(() => {});
      throw error;
    }
  }

  /**
   * A server reconnected to — possibly one a NATS cluster announced, not one given — beyond this machine without TLS:
   * warned once per server (what crosses the network is readable on its path).
   */
  #warnInClear(server: string): void {
    if (server === '' || this.#options.access.tls !== undefined || isLoopbackHost(hostOf(server)) || encrypted(this.#nc) || this.#inClear.has(server)) return;
    this.#inClear.add(server);
    this.#logger.warn({ reason: 'nats_unencrypted', server }, 'NATS is joined beyond this machine without TLS: anyone on the network path reads every utterance and the credentials, and can forge messages (use tls:// and cluster.tlsCaFile)');
  }

  /** Largest frame the NATS servers take (their `max_payload`). */
  get maxPayload(): number {
    return this.#nc.info?.max_payload ?? 1024 * 1024;
  }

  /**
   * The fallback plugin's state, shared by the cluster. One circuit breaker: a fallback skill this daemon's breaker
   * suspends (its pings kept timing out here) or hears again is suspended or resumed on every daemon at once. The
   * registrations accepted here of what this daemon relayed, and the suspensions decided here, are kept in the state
   * bucket, so a daemon joining knows them. Before `attach`.
   */
  shareFallback(fallback: FallbackPlugin): void {
    this.#fallback = fallback;
    fallback.onSkillEvent((event) => {
      // What replaying the state does to the breaker (a registration there resumes a skill) was decided long ago.
      if (event.type === 'ping_timeout' || this.#waitingForReplay !== undefined) return;
      const note: BreakerNote = { type: event.type, skill_id: event.skill_id, node: this.node, at: this.#clock.now(), ...(event.for_ms === undefined ? {} : { for_ms: event.for_ms }) };
      const data = encoder.encode(JSON.stringify(note));
      this.#publish(BREAKER_SUBJECT, undefined, undefined, data);
      this.#live(stateKey.suspension(event.skill_id));
      this.#writeState(stateKey.suspension(event.skill_id), event.type === 'suspended' ? data : null);
    });
    fallback.onRegistration((change) => this.#registration(change));
  }

  /** A register or deregister the fallback plugin accepted: kept in the state bucket by the daemon it came through. */
  #registration(change: FallbackRegistrationChange): void {
    const key = stateKey.registration(change.session_id, change.skill_id);
    this.#live(key);
    // Made or removed through another daemon (or replayed): that daemon keeps the key now.
    if (change.type === 'deregistered' || change.connection !== undefined || !this.#ownRegistrations.has(change.message)) this.#inProcessRegistrations.delete(key);
    if (!this.#ownRegistrations.has(change.message)) return;
    if (change.type === 'deregistered') this.#writeState(key, null);
    else {
      if (change.connection === undefined) this.#inProcessRegistrations.add(key);
      this.#writeRegistration(key, change.message, change.connection);
    }
  }

  #writeRegistration(key: string, message: Message, connection: string | undefined): void {
    const value: RegistrationValue = { frame: encodeMessage(message), ...(connection === undefined ? {} : { connection }) };
    const data = encoder.encode(JSON.stringify(value));
    // Larger than NATS takes: it could never be written (the daemons that hear it still know it).
    if (data.length > this.maxPayload - 1024) {
      this.#logger.warn({ reason: 'frame_over_cluster_limit', key: key.slice(0, 200), bytes: data.length }, 'cluster: registration too large for the state bucket; not kept');
      return;
    }
    this.#writeState(key, data);
  }

  /**
   * What this daemon keeps in the state bucket, written again: the connections open on it, and every registration
   * that is live on it — bound to one of its connections, or its in-process skills' — as the registry has it now. A key
   * written no more (its daemon gone, its skill not heard from) leaves the bucket after its age limit
   * (`fallback.forgetAfterMs`); one written again stays. Every quarter of that limit, and when this daemon is back from
   * being cut off (the others removed its connections meanwhile).
   */
  #refreshState(): void {
    for (const connection of this.#ownConnections) this.#writeState(stateKey.connection(connection), encoder.encode(JSON.stringify({ connection } satisfies ConnectionNote)));
    const registry = this.#fallback?.registry;
    if (registry === undefined) return;
    for (const entry of registry.entries()) {
      const key = stateKey.registration(entry.sessionId, entry.skillId);
      const own = entry.connection === undefined ? this.#inProcessRegistrations.has(key) : this.#ownConnections.has(entry.connection);
      if (own && entry.away !== true) this.#writeRegistration(key, registrationMessage(entry.sessionId, entry.skillId, entry.priority, entry.legacy), entry.connection);
    }
  }

  /** This daemon's connections said open again, and what is live on it written again (back from being taken for gone). */
  #reassert(): void {
    for (const connection of this.#ownConnections) this.#publish(CONNECTION_SUBJECT, undefined, undefined, encoder.encode(JSON.stringify({ connection } satisfies ConnectionNote)));
    this.#refreshState();
  }

  #scheduleRefresh(): void {
    this.#refresh = this.#clock.setTimeout(() => {
      this.#refreshState();
      this.#scheduleRefresh();
    }, Math.max(1_000, this.#options.stateTtlMs / 4));
  }

  /** The state bucket's key `key` becomes `value` (null: removed). */
  #writeState(key: string, value: Uint8Array | null): void {
    this.#stateWriter.write(key, value);
  }

  /**
   * What the state keeps besides registrations, heard live (from daemon `by`) or replayed: a connection opened or
   * closed, a suspension.
   */
  #stateNote(subject: string, json: string, by?: string): void {
    if (subject === CONNECTION_SUBJECT) this.#read(subject, readConnectionNote(parseJson(json), by), (note) => this.#connection(note), by);
    else if (subject === BREAKER_SUBJECT) this.#read(subject, readBreakerNote(parseJson(json), by), (note) => this.#breakerNote(note), by);
    else this.#invalid(subject, 'no subject a daemon publishes on', 'cluster_message_invalid', by);
  }

  /** A note that reads as one is acted on; one that does not is dropped, counted and logged with why. */
  #read<T>(subject: string, read: Read<T>, act: (note: T) => void, by?: string): void {
    if (read.ok) act(read.note);
    else this.#invalid(subject, read.why, 'cluster_message_invalid', by);
  }

  /**
   * Something read from NATS that does not read as what a daemon publishes (a faulty or foreign publisher): dropped,
   * counted (`invalid` in the view, `ovos_cluster_messages_invalid_total`), and logged with why — at most once a
   * minute per reason and subject family, with how many were dropped meanwhile.
   */
  #invalid(where: string, why: string, reason: 'cluster_message_invalid' | 'cluster_frame_invalid' | 'cluster_ends_invalid' = 'cluster_message_invalid', by?: string): void {
    this.#invalidCount++;
    // Keyed by what the publisher cannot vary at will (a bus topic, a bucket key and a daemon's name are its choice):
    // the reason and the subject's family, a bounded set.
    const key = `${reason} ${subjectFamily(where)}`;
    const { log, suppressed } = this.#invalidLog.shouldLog(key, this.#clock.monotonic());
    if (!log) return;
    this.#logger.warn({ reason, subject: where.slice(0, 200), ...(by === undefined ? {} : { node: by }), why: why.slice(0, 300), ...(suppressed > 0 ? { suppressed } : {}) }, 'cluster message dropped');
  }

  /** Another daemon's suspension or resumption of a skill (heard, or replayed from the state): the same here. */
  #breakerNote(note: BreakerNote): void {
    const fallback = this.#fallback;
    // This daemon's own notes come back only from the state (NATS echoes nothing): its suspensions before a restart.
    if (fallback === undefined || typeof note !== 'object' || note === null || typeof note.skill_id !== 'string' || typeof note.node !== 'string') return;
    this.#live(stateKey.suspension(note.skill_id));
    if (note.type === 'resumed') fallback.resumedElsewhere(note.skill_id, note.node);
    else if (note.type === 'suspended' && typeof note.for_ms === 'number' && typeof note.at === 'number') {
      // What is left of it: a suspension replayed from the state has partly run already.
      fallback.suspendedElsewhere(note.skill_id, Math.min(note.for_ms, note.at + note.for_ms - this.#clock.now()), note.node);
    }
  }

  /** Start relaying for `server` (created with this cluster as its `relay`), heartbeats and partition claims. */
  async attach(server: BusServer): Promise<void> {
    this.#server = server;
    // One subscription for the bus and the cluster's notes: NATS keeps one publisher's messages in order on it, so a
    // daemon's taken notes always arrive before its release of that partition. What arrives while the state is
    // replayed waits behind it.
    // This daemon's own frames (its clients may connect meanwhile) wait too, in the order they came with the others.
    const live: Array<() => void> = [];
    this.#waitingForReplay = live;
    this.#sub = this.#nc.subscribe('ovos.>', {
      callback: (error, msg) => {
        if (error !== null) return;
        // Checked here rather than through #afterReplay: no closure per message once the state is in.
        if (this.#waitingForReplay !== undefined) this.#waitingForReplay.push(() => this.#inbound(msg));
        else this.#inbound(msg);
      },
    });
    await this.#nc.flush();
    const replayed = await this.#replay(server);
    this.#waitingForReplay = undefined;
    for (const handle of live) handle();
    this.#logger.info({ node: this.node, replayed, connections_open: this.#open.size }, 'cluster: registrations and connections replayed');
    this.#stateWriter.sweepMarkers();
    this.#scheduleRefresh();
    const watch = await this.#kv.watch({ key: 'p.*' });
    void (async () => {
      for await (const entry of watch) this.#tableEntry(entry);
    })().catch((error: unknown) => this.#logger.warn({ reason: 'cluster_watch_failed', err: error }, 'partition table watch ended'));
    void (async () => {
      // A NATS server gone: the client reconnects to another of the cluster at once. The contests run on; what this
      // daemon published meanwhile, or was lost on the way, is asked for again by the numbers (redelivery.ts).
      for await (const status of this.#nc.status()) {
        if (status.type === 'disconnect') {
          this.#disconnectedAt ??= this.#clock.monotonic();
          // The answers the deadlines wait for cannot come now (nor the replies they would follow).
          this.#barrier.passAll();
          this.#logger.warn({ reason: 'nats_disconnected', server: String(status.server ?? '') }, 'cluster: NATS connection lost; reconnecting');
        } else if (status.type === 'reconnect') {
          // Cut off long enough to be taken for gone: the others closed this daemon's connections and removed them
          // from the state. They are open: said again, and kept again.
          if (this.#cutOff()) {
            this.#reassert();
            // Again once every daemon has heard this one's heartbeats again: one that still took it for gone when the
            // first came closes its connections once more.
            this.#clock.setTimeout(() => {
              if (!this.#closing) this.#reassert();
            }, 2 * this.#options.deadAfterMs);
          }
          this.#disconnectedAt = undefined;
          this.#logger.info({ server: String(status.server ?? '') }, 'cluster: NATS connection back');
          this.#warnInClear(String(status.server ?? ''));
          if (this.#held.length > 0) void this.#recheck();
        }
      }
    })();
    // Closed for good (never while it reconnects, as this daemon's client does for ever): no contest can go on.
    void this.#nc.closed().then(() => {
      if (!this.#closing) this.#emitStatus({ up: false, reason: 'nats_closed' });
    });
    await this.#nc.flush();
    // Beats from a thread of its own (heartbeat.ts): a busy event loop here is not a dead daemon.
    this.#beat = await startHeartbeat({
      access: this.#options.access,
      pings: pingsFor(this.#options.deadAfterMs),
      node: this.node,
      boot: this.#boot,
      subject: NODE_SUBJECT,
      heartbeatMs: this.#options.heartbeatMs,
      stallMs: Math.max(60_000, 5 * this.#options.deadAfterMs),
    });
    this.#heartbeat();
    this.#schedule();
  }

  /** The bus the contest system runs on: the server's, with the cluster's status. */
  busOf(server: BusServer): Bus {
    return {
      publish: (message) => server.publish(message),
      subscribe: (listener) => server.subscribe(listener),
      onStatus: (listener) => {
        this.#status.push(listener);
        return () => {
          const at = this.#status.indexOf(listener);
          if (at >= 0) this.#status.splice(at, 1);
        };
      },
      connectionOf: (message) => server.connectionOf(message),
      onConnectionClosed: (listener) => server.onConnectionClosed(listener),
      onConnectionOpened: (listener) => server.onConnectionOpened(listener),
      answeredElsewhere: (message) => server.answeredElsewhere(message),
    } satisfies Bus;
  }

  view(): ClusterView {
    const owners: Array<string | null> = [];
    for (let p = 0; p < this.#options.partitions; p++) owners.push(this.#table.get(p)?.owner ?? null);
    let waiting = 0;
    for (const entry of this.#entries.values()) if (entry.taken === undefined) waiting++;
    return {
      node: this.node,
      members: this.#members.members(this.#leaving),
      partitions: this.#options.partitions,
      owned: [...this.#owned.keys()].sort((a, b) => a - b),
      owners,
      waiting,
      failovers: this.#failovers,
      fenced: this.#fencedFrames,
      framesLost: this.#framesLost,
      invalid: this.#invalidCount,
      connectionsElsewhere: this.#othersOpen(),
      deadlineWaits: this.#barrier.counts(),
      keptHere: this.#keptFrames,
      nats: this.#natsTraffic(),
      recentSessions: [...this.#recent],
    };
  }

  #natsTraffic(): ClusterView['nats'] {
    const stats = this.#nc.stats();
    return { messagesOut: stats.outMsgs, messagesIn: stats.inMsgs, bytesOut: stats.outBytes, bytesIn: stats.inBytes };
  }

  // --- BusRelay: this daemon's traffic onto NATS -----------------------------------------------------------------

  /**
   * Published for the other daemons, and handed on here at once (NATS does not echo a connection's own messages:
   * `noEcho`) — except what this daemon's contests say of an utterance, which waits for the NATS server to confirm
   * it (`#held`): a daemon cut off from NATS may have been taken for gone, and its clients must not hear its contests
   * answer what another daemon answers again.
   */
  send(frame: Buffer, message: Message, connection: string | undefined): void {
    if (connection !== undefined && ENTRY_TOPICS.has(message.type) && this.#cutOff()) {
      this.#refuseCutOff(message, connection);
      return;
    }
    const partition = this.#partitionOfFrame(message);
    if (connection === undefined && partition !== undefined && this.#fenced(this.node, partition, message)) return;
    const subject = busSubject(message.type);
    let seq: number | undefined;
    const kept = partition === undefined ? false : this.#keptHere(subject, partition, message);
    // An end too large for a digest (an utterance_id near `max_payload`) travels as its frame.
    const digested = kept === 'end' ? this.#digestEnd(message, partition!, connection) : undefined;
    if (kept === 'frame') {
      // Unnumbered (no daemon misses it). Contest output is held (below) like what is published, until the server
      // answers the ping the publisher sends after everything published before it.
      this.#keptFrames++;
      seq = this.#out.seq;
      if (connection === undefined) this.#out.schedule();
    } else if (digested !== undefined) {
      this.#keptFrames++;
      seq = digested;
    } else {
      seq = this.#publish(subject, connection, partition, frame);
      if (seq === undefined) {
        this.#logger.warn({ reason: 'frame_over_cluster_limit', type: message.type.slice(0, 200), bytes: frame.length, max_payload: this.maxPayload }, 'message dropped: larger than the NATS servers take');
        return;
      }
    }
    const opened: Opened = { node: this.node, boot: this.#boot, seq, connection, partition, frame };
    if (REGISTRY_TOPICS.has(message.type)) this.#ownRegistrations.add(message);
    if (connection === undefined && partition !== undefined) this.#held.push({ subject, opened, message });
    else this.#local(subject, opened, message);
  }

  /**
   * Cut off from NATS for longer than `deadAfterMs`: the other daemons have taken this one for gone and its partitions
   * over, so nothing it runs now could be told to its clients before NATS is back (and much of it would be fenced
   * then). (A connection gone silent is noticed by the client's pings, `pingsFor`, and counts from then.)
   */
  #cutOff(): boolean {
    return this.#disconnectedAt !== undefined && this.#clock.monotonic() - this.#disconnectedAt > this.#options.deadAfterMs;
  }

  /**
   * An utterance from a client of this daemon while it is cut off: not taken, not published (no daemon runs it, then
   * or later), and ended at once with its handled (`error: "cluster_unreachable"`) to this daemon's clients — never a
   * silence, nor an answer minutes late. So what this daemon keeps while cut off is bounded by what was in flight.
   */
  #refuseCutOff(message: Message, connection: string): void {
    const handled = utteranceRefused(message, 'cluster_unreachable');
    const now = this.#clock.monotonic();
    const { log, suppressed } = this.#unreachableLog.shouldLog('cluster_unreachable', now);
    if (log) {
      this.#logger.warn(
        { reason: 'cluster_unreachable', connection, session_id: sessionIdOf(message), utterance_id: utteranceIdOf(message), cut_off_ms: now - this.#disconnectedAt!, suppressed },
        'utterance refused: this daemon is cut off from NATS (its handled says so; warned once a minute)',
      );
    }
    if (handled !== null) this.#server?.relayedToClients(Buffer.from(encodeMessage(handled), 'utf8'));
  }

  /** Numbered in this daemon's run, kept to publish again, published: its number; undefined (not numbered) when larger than NATS takes. */
  #publish(subject: string, connection: string | undefined, partition: number | undefined, payload: Uint8Array): number | undefined {
    return this.#out.publish(subject, connection, partition, payload);
  }

  /** An end kept here, in the digest (`Publisher.digestEnd`). */
  #digestEnd(message: Message, partition: number, connection: string | undefined): number | undefined {
    const end = ENDS.get(message.type)!;
    const utteranceId = utteranceIdOf(message)!;
    return this.#out.digestEnd(JSON.stringify(connection === undefined ? [end, utteranceId, partition] : [end, utteranceId, partition, connection]));
  }

  /**
   * The NATS server has everything published so far once it answers a ping sent after it (`flush`): the contest
   * output held until then is handed on here. A confirmation that took longer than half of `deadAfterMs`, or a
   * connection lost meanwhile, may mean this daemon was taken for gone: the partition table is read first
   * (`#recheck`), so what it fences is dropped rather than told to this daemon's clients.
   */
  #confirm(): void {
    const through = this.#handedThrough;
    const started = this.#clock.monotonic();
    this.#nc.flush().then(
      () => {
        if (this.#clock.monotonic() - started > this.#options.deadAfterMs / 2) void this.#recheck();
        this.#confirmedThrough = Math.max(this.#confirmedThrough, through);
        this.#deliverHeld();
      },
      // The connection was lost: kept, and confirmed after it is back (`#recheck` on reconnect).
      () => {},
    );
  }

  // --- Deadlines: a reply that reached the cluster before a deadline fell due is read before it acts ------------------

  /**
   * The clock of this daemon's contests: `base`, whose timers, once due, wait until every other daemon with a client
   * has said it has published what its clients had sent it by then (`#barrier`). The system clock already reads what
   * reached this daemon's own sockets first; a reply a skill sent in time to another daemon that has fallen behind
   * would otherwise reach the contest after the deadline and count as late.
   */
  contestClock(base: Clock = systemClock): Clock {
    return barrierClock(base, (passed) => this.#barrier.wait(passed));
  }

  /** How many of `#open` are another daemon's. */
  #othersOpen(): number {
    return this.#open.size - (this.#openOn.get(this.node) ?? 0);
  }

  /** The held contest output the server has confirmed, in order, unless the partition table is being read again. */
  #deliverHeld(): void {
    if (this.#rechecking) return;
    let ready = 0;
    while (ready < this.#held.length && this.#held[ready]!.opened.seq <= this.#confirmedThrough) ready++;
    for (const held of this.#held.splice(0, ready)) this.#local(held.subject, held.opened, held.message);
  }

  /** Who owns the partitions of the held contest output, read from the table itself; then confirmed again. */
  async #recheck(): Promise<void> {
    if (this.#rechecking) {
      this.#recheckAgain = true;
      return;
    }
    this.#rechecking = true;
    try {
      do {
        this.#recheckAgain = false;
        try {
          for (const partition of new Set(this.#held.map((held) => held.opened.partition!))) {
            const entry = await this.#kv.get(`p.${partition}`);
            if (entry !== null) this.#tableEntry(entry);
          }
        } catch (error) {
          if (this.#closing) return;
          this.#logger.warn({ reason: 'cluster_table_unread', err: error }, 'cluster: the partition table could not be read; contest output held, read again shortly');
          this.#recheckAgain = true;
          await new Promise<void>((resolve) => this.#clock.setTimeout(resolve, this.#options.heartbeatMs));
        }
      } while (this.#recheckAgain && !this.#closing);
    } finally {
      this.#rechecking = false;
    }
    // What the server had confirmed is handed on now that the table has been read (a confirmation slow again would
    // otherwise start another read, and nothing would go on while the event loop lags); the rest is confirmed anew.
    this.#deliverHeld();
    if (this.#held.length > 0) this.#confirm();
  }

  /** This daemon's own frame, handed on here (a throw is logged, as for a frame heard from another daemon). */
  #local(subject: string, opened: Opened, message: Message): void {
    this.#afterReplay(() => {
      try {
        this.#busFrame(subject, opened, message);
      } catch (error) {
        this.#invalid(subject, String(error));
      }
    });
  }

  /** Now, or after the state while it is replayed (`attach`), in the order it came with the rest. */
  #afterReplay(act: () => void): void {
    if (this.#waitingForReplay !== undefined) this.#waitingForReplay.push(act);
    else act();
  }

  /** Another daemon missed some of what this one published: published again for it alone, each with its subject (it drops what it has). */
  #resend(note: ResendNote): void {
    if (note.to !== this.node || note.boot !== this.#boot || !Number.isInteger(note.from) || !Number.isInteger(note.through)) return;
    const through = Math.min(note.through, note.from + RESEND_MAX - 1, this.#out.seq);
    const again = this.#ring.resend(note.from, through);
    try {
      // A daemon of an earlier version names no `by`: for it, on their own subjects, as it expects.
      if (typeof note.by !== 'string') for (const kept of again) this.#nc.publish(kept.subject, kept.data);
      else for (const kept of again) this.#nc.publish(`${RESENT_PREFIX}.${note.by}`, Buffer.concat([Buffer.from(`${kept.subject}\n`, 'utf8'), kept.data]));
    } catch (error) {
      this.#logger.warn({ reason: 'cluster_publish_failed', err: error }, 'cluster: could not publish again what a daemon missed');
    }
    this.#logger.debug({ by: note.by, from: note.from, through, resent: again.length }, 'cluster: messages published again for a daemon that missed them');
  }

  /**
   * Whether `node`'s contest output of `partition` is fenced: the partition was taken over from it (it was taken for
   * gone) and it does not own it again, or the utterance is one it had taken before that.
   */
  #fenced(node: string, partition: number, message: Message): boolean {
    if (this.#takenOverFrom.get(partition) !== node && !this.#fencedUtterances.has(node)) return false;
    return this.#fencedSaid(node, partition, utteranceIdOf(message), message.type, sessionIdOf(message));
  }

  /** The same for what `node` said of an utterance (`type`: a frame's, or an end in a digest). */
  #fencedSaid(node: string, partition: number, utteranceId: string | undefined, type: string, sessionId?: string): boolean {
    const fenced = this.#takenOverFrom.get(partition) === node || (utteranceId !== undefined && this.#fencedUtterances.get(node)?.has(utteranceId) === true);
    if (!fenced) return false;
    this.#fencedFrames++;
    this.#logger.warn(
      { reason: 'fenced', node, partition, type: type.slice(0, 200), utterance_id: utteranceId, session_id: sessionId },
      'cluster: dropped what a daemon taken for gone said of an utterance another daemon has taken over',
    );
    return true;
  }

  /** A contest frame (`message`, when known, else decoded only when its daemon has been fenced): fenced? */
  #fencedFrame(opened: Opened, message: Message | undefined): boolean {
    if (this.#takenOverFrom.get(opened.partition!) !== opened.node && !this.#fencedUtterances.has(opened.node)) return false;
    if (message === undefined) {
      const decoded = decodeFrame(opened.frame.toString('utf8'));
      if (!decoded.ok) return false;
      message = decoded.message;
    }
    return this.#fenced(opened.node, opened.partition!, message);
  }

  /**
   * A frame of an utterance this daemon runs, said by its own clients or its contests, that no other daemon needs: no
   * other daemon has a client to hand it to (nor had one when it was taken for gone, for as long as redelivery would
   * give that daemon what it missed), it is not one every daemon reads (`READ_EVERYWHERE`: entries, ends,
   * claims, registrations), and no other daemon runs the utterance — the partition is this daemon's and was not taken
   * over from it (a `takenOver` note comes before anything its new owner says of the partition). It stays here: NATS
   * carries what another daemon needs, not every frame (src/cluster/README.md "Kept where it is needed"). One that ends
   * the utterance (`ENDS`) stays here too, when every daemon alive reads ends digests: what the others need of it —
   * which utterance ended how — travels in this turn's digest (`'end'`).
   */
  #keptHere(subject: string, partition: number, message: Message): 'frame' | 'end' | false {
    if (this.#othersOpen() > 0 || this.#clock.monotonic() < this.#othersGoneUntil) return false;
    const kept = !READ_EVERYWHERE.has(subject) ? 'frame' : ENDS.has(message.type) && this.#endsReadEverywhere() ? 'end' : false;
    if (kept === false) return false;
    const utteranceId = utteranceIdOf(message);
    if (utteranceId === undefined || this.#mine.get(utteranceId) !== partition || !this.#owned.has(partition)) return false;
    return this.#takenOverFrom.get(partition) !== this.node && this.#fencedUtterances.get(this.node)?.has(utteranceId) !== true ? kept : false;
  }

  /** Whether every other daemon alive reads ends digests (`ENDS_SUBJECT`; its heartbeat says so, an earlier version's does not). */
  #endsReadEverywhere(): boolean {
    for (const [node, heard] of this.#members.known()) if (!heard.ends && this.#members.alive(node)) return false;
    return true;
  }

  /**
   * The partition of the utterance a message belongs to — it carries an utterance_id and names its session — or
   * undefined (registrations, discovery, connection traffic, a reply that names no session: every daemon reads those).
   */
  #partitionOfFrame(message: Message): number | undefined {
    if (utteranceIdOf(message) === undefined) return undefined;
    const carrier = message.context['session'];
    if (typeof carrier !== 'object' || carrier === null || Array.isArray(carrier)) return undefined;
    const id = (carrier as Record<string, unknown>)['session_id'];
    return typeof id === 'string' && id !== '' ? partitionOf(id, this.#options.partitions) : undefined;
  }

  opened(connection: string): void {
    const note: ConnectionNote = { connection };
    const data = encoder.encode(JSON.stringify(note));
    this.#publish(CONNECTION_SUBJECT, undefined, undefined, data);
    this.#ownConnections.add(connection);
    this.#writeState(stateKey.connection(connection), data);
    this.#afterReplay(() => this.#connection(note));
  }

  closed(connection: string, late: boolean, heldBack: boolean): void {
    const note: ConnectionNote = { connection, closed: true, late, heldBack };
    this.#publish(CONNECTION_SUBJECT, undefined, undefined, encoder.encode(JSON.stringify(note)));
    this.#ownConnections.delete(connection);
    this.#writeState(stateKey.connection(connection), null);
    this.#afterReplay(() => this.#connection(note));
  }

  // --- NATS → this daemon ----------------------------------------------------------------------------------------

  #inbound(msg: Msg): void {
    try {
      if (msg.subject === NODE_SUBJECT) this.#read(msg.subject, readNodeNote(parseJson(msg.string())), (note) => this.#nodeNote(note));
      else if (msg.subject === RESEND_SUBJECT) this.#read(msg.subject, readResendNote(parseJson(msg.string())), (note) => this.#resend(note));
      else if (msg.subject.startsWith(`${RESENT_PREFIX}.`)) {
        if (msg.subject === this.#resentSubject) this.#resent(msg.data);
      } else this.#numbered(msg.subject, msg.data);
    } catch (error) {
      this.#invalid(msg.subject, String(error));
    }
  }

  /** What another daemon published again for this one: its original subject, then the message as first published. */
  #resent(data: Uint8Array): void {
    const end = data.indexOf(10);
    if (end <= 0) return;
    this.#numbered(Buffer.from(data.buffer, data.byteOffset, end).toString('utf8'), data.subarray(end + 1));
  }

  /** A numbered message of another daemon (an `envelope`): handed on in its daemon's order, once. */
  #numbered(subject: string, data: Uint8Array): void {
    const opened = openEnvelope(data);
    // Only a foreign publisher on our subjects gets here.
    if (opened === undefined) this.#invalid(subject, 'no envelope a daemon writes', 'cluster_frame_invalid');
    else this.#order.accept(opened.node, opened.boot, opened.seq, { subject, opened });
  }

  /** A daemon's message, in its order, once. */
  #delivered(subject: string, opened: Opened): void {
    try {
      if (subject.startsWith(`${BUS_PREFIX}.`)) this.#busFrame(subject, opened);
      else if (subject === PARTITION_SUBJECT) this.#read(subject, readNote(parseJson(opened.frame.toString('utf8')), this.#options.partitions, opened.node), (note) => this.#note(note), opened.node);
      else if (subject === ENDS_SUBJECT) this.#endsHeard(opened, parseJson(opened.frame.toString('utf8')));
      else if (subject === SYNC_SUBJECT) this.#read(subject, readSyncNote(parseJson(opened.frame.toString('utf8')), opened.node), (note) => this.#barrier.asked(note), opened.node);
      else if (subject === SYNCED_SUBJECT) this.#read(subject, readSyncNote(parseJson(opened.frame.toString('utf8')), opened.node), (note) => this.#barrier.answered(note), opened.node);
      else this.#stateNote(subject, opened.frame.toString('utf8'), opened.node);
    } catch (error) {
      this.#invalid(subject, String(error), 'cluster_message_invalid', opened.node);
    }
  }

  /** A bus frame of any daemon, this one's (`known`: its message) included, in its daemon's order. */
  #busFrame(subject: string, opened: Opened, known?: Message): void {
    const server = this.#server;
    if (server === undefined) return;
    const { frame, connection } = opened;
    // What a daemon's contests say (not its clients) of a partition or an utterance taken over from it: fenced.
    if (connection === undefined && opened.partition !== undefined && this.#fencedFrame(opened, known)) return;
    // An utterance's traffic (its pings, replies, dispatch, speech) matters in process only to the daemon running it:
    // the others hand the frame to their clients without reading it. What the cluster itself follows is read anyway.
    if (opened.partition !== undefined && !this.#owned.has(opened.partition) && !READ_EVERYWHERE.has(subject)) {
      server.relayedToClients(frame);
      return;
    }
    let message = known;
    if (message === undefined) {
      const decoded = decodeFrame(frame.toString('utf8'));
      if (!decoded.ok) {
        // The daemon that relayed it had already checked it: only a foreign publisher on our subjects gets here.
        this.#logger.warn({ reason: decoded.reason, subject: subject.slice(0, 200) }, 'cluster frame dropped');
        return;
      }
      message = decoded.message;
    }
    const end = ENDS.get(message.type);
    const utteranceId = end === undefined ? undefined : utteranceIdOf(message);
    // What another daemon's contests say to end an utterance this daemon neither runs nor owns the partition of: no
    // contest here waits for it (it is read above, for failover, and handed to the clients).
    const elsewhere = end !== undefined && connection === undefined && opened.node !== this.node && opened.partition !== undefined && !this.#owned.has(opened.partition) && (utteranceId === undefined || !this.#mine.has(utteranceId));
    if (utteranceId !== undefined) this.#heardEnd(end!, utteranceId);
    if (!ENTRY_TOPICS.has(message.type)) {
      // The end of an utterance a client said goes to the contests whichever daemon owns its partition now: the daemon
      // that ran it may have given the partition up meanwhile (its last utterance just ended, or a leave's grace ran
      // out), and its pipeline still waits for it (an ovos-workshop skill's own handled, a handler's end).
      if (elsewhere) server.relayedToClients(frame);
      else {
        // What it asks for is answered by the daemon that relayed it when that daemon read it too: a frame of no
        // partition, or one every daemon reads (`Bus.answeredElsewhere`); else by the partition's owner, this one.
        const answeredThere = opened.node !== this.node && (opened.partition === undefined || READ_EVERYWHERE.has(subject));
        server.relayed(frame, message, connection, true, answeredThere);
      }
      return;
    }
    const frameId = `${opened.node}.${opened.boot}.${opened.seq}`;
    const taken = this.#intake(frameId, message, connection);
    if (taken === undefined) server.relayed(frame, message, connection, false, false);
    else {
      server.relayedToClients(frame);
      this.#admissions.push({ message: taken, connection });
    }
  }

  /** An utterance entry: taken here (the stamped message) when this daemon owns its partition, else it waits. */
  #intake(frameId: string, message: Message, connection: string | undefined): Message | undefined {
    const session = sessionIdOf(message) ?? DEFAULT_SESSION_ID;
    const partition = partitionOf(session, this.#options.partitions);
    this.#recent.delete(session);
    this.#recent.add(session);
    if (this.#recent.size > RECENT_SESSIONS) this.#recent.delete(this.#recent.values().next().value!);
    const waiting: Waiting = { partition, message, connection, at: this.#clock.monotonic() };
    this.#entries.set(frameId, waiting);
    const early = this.#early.get(frameId);
    if (early !== undefined) {
      this.#early.delete(frameId);
      this.#markTaken(frameId, waiting, early);
      return undefined;
    }
    const owned = this.#owned.get(partition);
    if (owned === undefined || owned.drainingSince !== undefined || this.#leaving) return undefined;
    return this.#take(frameId, waiting, owned);
  }

  #take(frameId: string, waiting: Waiting, owned: Owned): Message {
    // MSG-1 §4.2: stamped once, here, so every daemon knows the id its handled will carry.
    const utteranceId = utteranceIdOf(waiting.message) ?? randomUUID();
    const message = utteranceIdOf(waiting.message) === undefined ? withContext(waiting.message, { utterance_id: utteranceId }) : waiting.message;
    owned.inFlight++;
    this.#mine.set(utteranceId, waiting.partition);
    this.#markTaken(frameId, waiting, { node: this.node, boot: this.#boot, utteranceId });
    this.#publishNote({ kind: 'taken', partition: waiting.partition, node: this.node, boot: this.#boot, frame: frameId, utterance_id: utteranceId });
    return message;
  }

  #markTaken(frameId: string, waiting: Waiting, taken: Taker): void {
    if (this.#ended.has(taken.utteranceId)) {
      this.#entries.delete(frameId);
      return;
    }
    waiting.taken = taken;
    const utteranceId = taken.utteranceId;
    this.#frameOf.set(utteranceId, frameId);
  }

  /** How an utterance ended, heard as a frame or in a digest. */
  #heardEnd(end: End, utteranceId: string): void {
    if (end === 'handled') this.#handled(utteranceId);
    else if (end === 'matched' || end === 'unmatched') this.#decided(utteranceId, end);
    else this.#handlerEnded(utteranceId, end);
  }

  /**
   * Another daemon's ends digest: each end read as its frame would be here (`#busFrame`), fenced alike. Only daemons
   * publish on the subject: a malformed one is dropped whole, with a warning.
   */
  #endsHeard(opened: Opened, ends: unknown): void {
    const valid =
      Array.isArray(ends) &&
      ends.every((end) => Array.isArray(end) && END_TOPICS.has(end[0] as string) && typeof end[1] === 'string' && Number.isInteger(end[2]) && (end.length === 3 || (end.length === 4 && typeof end[3] === 'string')));
    if (!valid) {
      this.#invalid(ENDS_SUBJECT, 'an ends digest is [end, utterance_id, partition, connection?] each', 'cluster_ends_invalid', opened.node);
      return;
    }
    for (const [end, utteranceId, partition, connection] of ends as DigestedEnd[]) {
      // What its clients said (a handler's end) is never fenced, as their frames are not.
      if (connection === undefined && this.#fencedSaid(opened.node, partition, utteranceId, END_TOPICS.get(end)!)) continue;
      this.#heardEnd(end, utteranceId);
    }
  }

  #handled(utteranceId: string): void {
    this.#ended.set(utteranceId, this.#clock.monotonic());
    const frameId = this.#frameOf.get(utteranceId);
    if (frameId !== undefined) {
      const adopted = this.#entries.get(frameId)?.adopted;
      if (adopted !== undefined) this.#clock.clearTimeout(adopted); // its legacy skill ended it itself
      this.#frameOf.delete(utteranceId);
      this.#entries.delete(frameId);
    }
    const partition = this.#mine.get(utteranceId);
    if (partition === undefined) return;
    this.#mine.delete(utteranceId);
    const owned = this.#owned.get(partition);
    if (owned === undefined) return;
    owned.inFlight = Math.max(0, owned.inFlight - 1);
    if (owned.drainingSince !== undefined && owned.inFlight === 0) void this.#release(partition);
  }

  /**
   * The cluster's state (registrations, the connections open, suspensions) as the state bucket has it now, through
   * this daemon's own plugins, in the order it was written: it then knows what the daemons before it know. Replayed in
   * process only; the clients saw it when it happened. A registration whose connection has closed since is replayed
   * bound to it, and the connection closed after (its skill is known, and not taken for connected).
   */
  async #replay(server: BusServer): Promise<number> {
    // Opened first, read after the replay: what is written from now on (`#catchUp`).
    const updates = await this.#state.watch({ include: KvWatchInclude.UpdatesOnly });
    this.#catchUp(server, updates);
    if ((await this.#state.status()).values === 0) return 0;
    const watch = await this.#state.watch();
    const referenced = new Set<string>();
    const suspensions: KvWatchEntry[] = [];
    let count = 0;
    let ended = false;
    let quiet = this.#clock.setTimeout(() => watch.stop(), REPLAY_QUIET_MS);
    for await (const entry of watch) {
      this.#clock.clearTimeout(quiet);
      if (entry.operation === 'PUT') {
        count++;
        if (entry.key.startsWith('s.')) suspensions.push(entry);
        else this.#replayed(server, entry, referenced);
      }
      if (entry.delta === 0 || entry.isUpdate) {
        ended = true;
        break;
      }
      quiet = this.#clock.setTimeout(() => watch.stop(), REPLAY_QUIET_MS);
    }
    this.#clock.clearTimeout(quiet);
    watch.stop();
    if (!ended) this.#logger.warn({ reason: 'cluster_replay_quiet', replayed: count, quiet_ms: REPLAY_QUIET_MS }, 'cluster: the state bucket went quiet before its last entry (removed meanwhile?); going on with what was read');
    for (const connection of referenced) if (!this.#open.has(connection)) server.relayedConnection(connection, { late: false, heldBack: false });
    // Suspensions last, once the registrations are in (a suspension of a skill not registered here is not kept): the
    // bucket's order between keys is not always the order of the changes (a write that failed is written later).
    await new Promise<void>((resolve) => setImmediate(resolve));
    for (const entry of suspensions) this.#replayed(server, entry, referenced);
    // Connections this daemon's name had in an earlier run (it crashed, or stopped before NATS took their removal):
    // closed, here and on every daemon (started again before they missed it, they still count them open), and removed.
    // Not this run's own: a client that connected as the bus began to answer is in the bucket already.
    for (const connection of [...this.#open.keys()]) {
      if (!connection.startsWith(`${this.node}/`) || this.#ownConnections.has(connection)) continue;
      const note: ConnectionNote = { connection, closed: true, late: true };
      this.#publish(CONNECTION_SUBJECT, undefined, undefined, encoder.encode(JSON.stringify(note)));
      this.#connection(note);
      this.#writeState(stateKey.connection(connection), null);
    }
    return count;
  }

  /**
   * The state bucket's writes after this daemon began to read it, for `CATCH_UP_MS` (or twice `deadAfterMs`): a change
   * whose frame reached NATS before this daemon subscribed, written after it read the bucket, is not missed. Only
   * new values of keys it has not heard change live since (`#heardLive`): what it heard live is as new, or newer.
   * Removals are not read (what a removal would remove the daemon knows from the bucket only if it was written before
   * it read it: the frame that removed it came before this daemon subscribed, and the key is removed a moment after).
   */
  #catchUp(server: BusServer, updates: AsyncIterable<KvWatchEntry> & { stop(): void }): void {
    const heardLive = new Set<string>();
    this.#heardLive = heardLive;
    // Counted from the end of the replay (a large bucket takes a while).
    let stop: TimerId | undefined;
    this.#afterReplay(() => {
      stop = this.#clock.setTimeout(() => updates.stop(), Math.max(CATCH_UP_MS, 2 * this.#options.deadAfterMs));
    });
    void (async () => {
      // In the order they came with the frames heard live: behind the replay, and behind a key's live change.
      for await (const entry of updates) {
        if (entry.operation === 'PUT') this.#afterReplay(() => void (heardLive.has(entry.key) || this.#replayed(server, entry, new Set())));
      }
    })()
      .catch((error: unknown) => {
        if (!this.#closing) this.#logger.warn({ reason: 'cluster_watch_failed', err: error }, 'cluster: the state bucket\'s new writes could not be read');
      })
      .finally(() => {
        if (stop !== undefined) this.#clock.clearTimeout(stop);
        this.#heardLive = undefined;
      });
  }

  /** A state key changed by what this daemon heard (not by the replay of the bucket itself), while it catches up. */
  #live(key: string): void {
    if (this.#waitingForReplay === undefined) this.#heardLive?.add(key);
  }

  /** One entry of the state bucket, replayed (one that does not parse is logged and skipped). */
  #replayed(server: BusServer, entry: KvWatchEntry, referenced: Set<string>): void {
    try {
      const text = entry.string();
      if (entry.key.startsWith('c.')) this.#stateNote(CONNECTION_SUBJECT, text);
      else if (entry.key.startsWith('s.')) this.#stateNote(BREAKER_SUBJECT, text);
      else if (entry.key.startsWith('r.')) {
        this.#read(`${STATE_BUCKET}.${entry.key}`, readRegistrationValue(parseJson(text)), (value: RegistrationValue) => {
          const decoded = decodeFrame(value.frame);
          if (!decoded.ok || !REGISTRY_TOPICS.has(decoded.message.type)) {
            this.#invalid(`${STATE_BUCKET}.${entry.key}`, 'a registration holds a register or deregister frame');
            return;
          }
          if (value.connection !== undefined) referenced.add(value.connection);
          server.admit(decoded.message, value.connection, true);
        });
      } else this.#invalid(`${STATE_BUCKET}.${entry.key}`, 'no key a daemon writes');
    } catch (error) {
      this.#invalid(`${STATE_BUCKET}.${entry.key}`, String(error));
    }
  }

  #decided(utteranceId: string, decided: 'matched' | 'unmatched'): void {
    const frameId = this.#frameOf.get(utteranceId);
    const waiting = frameId === undefined ? undefined : this.#entries.get(frameId);
    if (waiting !== undefined) waiting.decided = decided;
  }

  /** A skill's handler ended: an adopted utterance ends with its handled here (its own daemon is gone). */
  #handlerEnded(utteranceId: string, handler: 'complete' | 'error'): void {
    const frameId = this.#frameOf.get(utteranceId);
    const waiting = frameId === undefined ? undefined : this.#entries.get(frameId);
    if (waiting === undefined) {
      if (this.#handlerEnds.size < MAX_HANDLER_ENDS) this.#handlerEnds.set(utteranceId, { handler, at: this.#clock.monotonic() });
      return;
    }
    if (waiting.handler !== undefined) return;
    waiting.handler = handler;
    if (waiting.adopted !== undefined) this.#endAdopted(frameId!, waiting);
  }

  /** One handled for an utterance whose daemon was lost after its skill was dispatched (error unless its handler completed). */
  #endAdopted(frameId: string, waiting: Waiting): void {
    if (waiting.adopted !== undefined) this.#clock.clearTimeout(waiting.adopted);
    waiting.adopted = undefined;
    this.#entries.delete(frameId);
    const utteranceId = waiting.taken?.utteranceId;
    if (utteranceId !== undefined) {
      this.#frameOf.delete(utteranceId);
      // Ended now, though its handled waits for the NATS server: the same utterance handed here again meanwhile is not
      // ended a second time.
      this.#ended.set(utteranceId, this.#clock.monotonic());
    }
    const stamped = utteranceId === undefined ? waiting.message : withContext(waiting.message, { utterance_id: utteranceId });
    const completed = waiting.handler === 'complete';
    const outcome = completed ? 'handler_completed' : waiting.handler === 'error' ? 'handler_error' : waiting.decided === 'unmatched' ? 'unmatched' : 'handler_unheard';
    this.#logger.warn(
      { reason: 'daemon_lost', node: waiting.taken?.node, utterance_id: utteranceId, session_id: sessionIdOf(waiting.message), outcome },
      'cluster: an utterance of a lost daemon ends here',
    );
    this.#server?.publish(reply(stamped, topics.utteranceHandled, completed ? {} : { error: 'daemon_lost' }));
  }

  #connection(note: ConnectionNote): void {
    if (typeof note.connection !== 'string') return;
    this.#live(stateKey.connection(note.connection));
    const closed = note.closed === true;
    // Once each way, whether heard live or replayed (a change can be both while a daemon joins).
    if (closed ? !this.#open.delete(note.connection) : this.#open.has(note.connection)) return;
    if (!closed) this.#open.set(note.connection, this.#clock.monotonic());
    const node = note.connection.slice(0, Math.max(0, note.connection.indexOf('/')));
    const open = (this.#openOn.get(node) ?? 0) + (closed ? -1 : 1);
    if (open > 0) this.#openOn.set(node, open);
    else {
      this.#openOn.delete(node);
      // Its closed notes come after everything its clients sent (its own numbering): nothing more to wait for.
      this.#barrier.noLongerRelays(node);
    }
    this.#server?.relayedConnection(note.connection, closed ? { late: note.late === true, heldBack: note.heldBack === true } : false);
  }

  /**
   * The connections of daemons that are gone closed with them (late: their skills may be back on another daemon). A
   * connection whose opening was heard within `deadAfterMs` is not: its daemon said it then, so it was alive — a
   * daemon that is joining (its clients connect as its bus answers, before its first heartbeat is heard here) or that
   * started again after it was missed keeps its connections, and their records in the state.
   */
  #closeConnectionsOfGone(): void {
    if (!this.#members.settled()) return;
    const now = this.#clock.monotonic();
    for (const [connection, heardAt] of [...this.#open]) {
      const node = connection.slice(0, connection.indexOf('/'));
      if (this.#members.alive(node) || now - heardAt <= this.#options.deadAfterMs) continue;
      this.#othersGoneUntil = this.#clock.monotonic() + this.#resendKeepMs;
      this.#connection({ connection, closed: true, late: true });
      // Every daemon that sees it gone removes it (the same removal, in any order).
      this.#writeState(stateKey.connection(connection), null);
    }
  }

  #nodeNote(note: NodeNote): void {
    // This daemon's own messages never come back (noEcho): its heartbeat only counts a round.
    if (note.node !== this.node && typeof note.boot === 'string' && typeof note.seq === 'number' && note.seq > 0) this.#order.sentThrough(note.node, note.boot, note.seq);
    if (note.node === this.node) {
      this.#members.ownBeat();
      return;
    }
    // A leaving daemon is no one's preferred owner any more, but it still owns what it has not given up yet.
    const leaving = note.leaving === true;
    const change = this.#members.heard(note.node, { leaving, boot: typeof note.boot === 'string' ? note.boot : undefined, ends: note.ends === true, sync: note.sync === true });
    if (change === 'unchanged') return;
    // Started again under the same name before it was missed: its earlier run is gone, and what that run had taken
    // and not ended is handed to the partitions' owners (`#handOrphans`).
    const said = { 'started again': 'cluster: a daemon started again', leaving: 'cluster: a daemon is leaving', joined: 'cluster: a daemon joined', back: 'cluster: a daemon joined' }[change];
    this.#logger.info({ node: note.node }, said);
    this.#reconcile();
  }

  #note(note: Note): void {
    if (note.kind === 'takenOver') {
      // Heard here sooner than the table's watch may say it (a JetStream leader lost with a NATS server slows it).
      if (typeof note.from === 'string' && note.node !== this.node && this.#table.get(note.partition)?.owner !== note.node) this.#takenOver(note.partition, note.from);
      return;
    }
    if (note.kind === 'orphans') {
      if (note.to === this.node && note.node !== this.node && Array.isArray(note.entries)) this.#adoptOrphans(note.partition, note.entries);
      return;
    }
    if (note.kind === 'taken') {
      if (note.node === this.node) return;
      const waiting = this.#entries.get(note.frame);
      const taken: Taker = { node: note.node, boot: typeof note.boot === 'string' ? note.boot : undefined, utteranceId: note.utterance_id };
      if (waiting === undefined) this.#early.set(note.frame, { ...taken, at: this.#clock.monotonic() });
      else this.#markTaken(note.frame, waiting, taken);
      return;
    }
    // Released after its last utterance ended: everything its daemon took of it has been heard of before this note.
    if (note.node !== this.node && preferredOwner(note.partition, this.#members.members(this.#leaving)) === this.node) void this.#claim(note.partition);
  }

  // --- Ownership ---------------------------------------------------------------------------------------------------

  #tableEntry(entry: KvEntry): void {
    const partition = Number(entry.key.slice(2));
    if (!Number.isInteger(partition)) return;
    // Read by `#recheck` as well as watched: an entry older than what the table holds changes nothing.
    if (entry.revision < (this.#table.get(partition)?.revision ?? 0)) return;
    if (entry.operation !== 'PUT') {
      this.#table.delete(partition);
      return;
    }
    const read = readTableValue(parseJson(entry.string()));
    if (!read.ok) {
      this.#invalid(`${PARTITION_BUCKET}.${entry.key}`, read.why);
      return;
    }
    const value = read.note;
    const before = this.#table.get(partition)?.owner ?? null;
    this.#table.set(partition, { owner: value.owner, epoch: value.epoch, revision: entry.revision, at: this.#clock.monotonic() });
    if (value.owner !== null && before !== null && before !== value.owner) this.#takenOver(partition, before);
    else if (value.owner !== null && this.#takenOverFrom.get(partition) === value.owner) this.#takenOverFrom.delete(partition);
    const owned = this.#owned.get(partition);
    if (owned !== undefined && value.owner !== this.node) {
      // Taken over while this daemon was cut off (it was counted as gone): it runs no new utterance of it, and what
      // its contests still say of it is fenced (also when its own claim had not reached its table yet).
      if (value.owner !== null && this.#takenOverFrom.get(partition) !== this.node) this.#takenOver(partition, this.node);
      this.#owned.delete(partition);
      this.#logger.warn({ reason: 'partition_lost', partition, owner: value.owner }, 'cluster: a partition this daemon owned was taken over');
    }
  }

  /**
   * A partition went from one owner straight to another: the first was taken for gone (a daemon gives a partition up
   * through "no owner"). It may still run, cut off: what it says of the partition's utterances from now on — the ones
   * it had taken run again or end on the new owner — is dropped, here and at its source once it learns it.
   */
  #takenOver(partition: number, from: string): void {
    this.#takenOverFrom.set(partition, from);
    const now = this.#clock.monotonic();
    const fenced = this.#fencedUtterances.get(from) ?? new Map<string, number>();
    for (const waiting of this.#entries.values()) if (waiting.partition === partition && waiting.taken?.node === from) fenced.set(waiting.taken.utteranceId, now);
    if (fenced.size > 0) this.#fencedUtterances.set(from, fenced);
  }

  /**
   * Whether the run that took an utterance is gone: its daemon missed, or heard since in another run (started again
   * under the same name; this daemon's own earlier run included).
   */
  #runGone(taken: Taker): boolean {
    if (taken.node === this.node) return taken.boot !== undefined && taken.boot !== this.#boot;
    if (!this.#members.alive(taken.node)) return true;
    const boot = this.#members.of(taken.node)?.boot;
    return taken.boot !== undefined && boot !== undefined && boot !== taken.boot;
  }

  #schedule(): void {
    this.#tick = this.#clock.setTimeout(() => {
      this.#heartbeat();
      this.#order.tick();
      this.#reconcile();
      this.#closeConnectionsOfGone();
      this.#handOrphans();
      this.#prune();
      this.#sayOwned();
      if (!this.#leaving || this.#owned.size > 0) this.#schedule();
    }, this.#options.heartbeatMs);
  }

  /** One line when what this daemon owns changed since the last tick. */
  #sayOwned(): void {
    const owned = [...this.#owned.keys()].sort((x, y) => x - y).join(',');
    if (owned === this.#saidOwned) return;
    this.#saidOwned = owned;
    this.#logger.info({ node: this.node, members: this.#members.members(this.#leaving), owned: owned === '' ? [] : owned.split(',').map(Number) }, 'cluster: partitions owned here');
  }

  #heartbeat(): void {
    // Only what is on its way: a number still in the outbox, named by a heartbeat that overtakes it, would be taken for missed.
    this.#beat?.alive(this.#leaving, this.#handedThrough);
  }

  /** Claim what should be ours and is free; give up what should be another's. */
  #reconcile(): void {
    const members = this.#members.members(this.#leaving);
    // A daemon just started has not heard the others yet: it takes free partitions, and takes over none.
    const settled = this.#members.settled();
    const now = this.#clock.monotonic();
    for (let partition = 0; partition < this.#options.partitions; partition++) {
      const preferred = this.#leaving ? undefined : preferredOwner(partition, members);
      const owned = this.#owned.get(partition);
      if (owned !== undefined) {
        if (preferred !== this.node && owned.drainingSince === undefined) {
          owned.drainingSince = now;
          if (owned.inFlight === 0) void this.#release(partition);
        } else if (owned.drainingSince !== undefined && preferred === this.node && !this.#leaving) {
          owned.drainingSince = undefined; // wanted back before it was given up
          this.#takeWaiting(partition, owned);
        } else if (owned.drainingSince !== undefined && now - owned.drainingSince > this.#options.drainMs) {
          this.#logger.warn({ reason: 'partition_drain_elapsed', partition, in_flight: owned.inFlight }, 'cluster: a partition is given up with utterances still running');
          void this.#release(partition);
        }
        continue;
      }
      const row = this.#table.get(partition);
      if (preferred !== this.node) {
        // Owned in the table under this daemon's name by an earlier run (it was started again under the same name),
        // and another daemon's now: no one else would claim it from a name that is alive.
        if (row?.owner === this.node && !this.#leaving) void this.#releaseEarlier(partition, row);
        continue;
      }
      const free =
        row === undefined ||
        // Released: claimed on its note; here only when the note was missed (the release is a second old).
        (row.owner === null && now - row.at >= this.#options.deadAfterMs) ||
        (row.owner !== null && row.owner !== this.node && settled && !this.#members.alive(row.owner));
      if (free || row?.owner === this.node) void this.#claim(partition);
    }
  }

  async #claim(partition: number): Promise<void> {
    if (this.#owned.has(partition) || this.#claiming.has(partition) || this.#leaving) return;
    this.#claiming.add(partition);
    try {
      const key = `p.${partition}`;
      const current = await this.#kv.get(key);
      let previous: { owner: string | null; epoch: number } | undefined;
      let revision: number;
      if (current === null || current.operation !== 'PUT') {
        const epoch = 1;
        revision = await this.#kv.create(key, JSON.stringify({ owner: this.node, epoch }));
        this.#own(partition, revision, epoch, undefined);
        return;
      }
      const read = readTableValue(parseJson(current.string()));
      // A row no daemon wrote is taken as free (and overwritten by compare-and-set like any other).
      if (!read.ok) this.#invalid(`${PARTITION_BUCKET}.${key}`, read.why);
      previous = read.ok ? read.note : { owner: null, epoch: 0 };
      const settled = this.#members.settled();
      const ownerGone = previous.owner !== null && previous.owner !== this.node && settled && !this.#members.alive(previous.owner);
      if (previous.owner !== null && previous.owner !== this.node && !ownerGone) return;
      const epoch = previous.epoch + 1;
      revision = await this.#kv.update(key, JSON.stringify({ owner: this.node, epoch }), current.revision);
      if (ownerGone && previous.owner !== null) {
        // Fenced from now on, here and on every daemon (the note comes before anything the lost one says after).
        this.#takenOver(partition, previous.owner);
        this.#publishNote({ kind: 'takenOver', partition, node: this.node, from: previous.owner });
      }
      this.#own(partition, revision, epoch, ownerGone ? (previous.owner ?? undefined) : undefined);
    } catch (error) {
      // Lost a race (another daemon wrote first) or NATS is away: the next tick looks again.
      this.#logger.debug({ reason: 'partition_claim_failed', partition, err: error }, 'cluster: partition not claimed');
    } finally {
      this.#claiming.delete(partition);
    }
  }

  #own(partition: number, revision: number, epoch: number, lostOwner: string | undefined): void {
    const owned: Owned = { revision, epoch, drainingSince: undefined, inFlight: 0 };
    this.#owned.set(partition, owned);
    this.#logger.debug({ partition, epoch, ...(lostOwner === undefined ? {} : { from: lostOwner }) }, 'cluster: partition owned');
    this.#takeWaiting(partition, owned);
  }

  /** The entries of a partition that waited for an owner, in the order they arrived. */
  #takeWaiting(partition: number, owned: Owned): void {
    const server = this.#server;
    if (server === undefined) return;
    for (const [frameId, waiting] of [...this.#entries]) {
      if (waiting.partition !== partition) continue;
      if (waiting.taken === undefined) {
        this.#admissions.push({ message: this.#take(frameId, waiting, owned), connection: waiting.connection });
        continue;
      }
      if (!this.#runGone(waiting.taken) || waiting.adopted !== undefined) continue;
      // Taken by a daemon that is gone, and not ended. Undecided (no skill dispatched yet): it runs again here, under
      // the same utterance_id — the skills are asked again, nothing was said. Decided, a second run could answer
      // twice: it ends here, with one handled, never silence.
      this.#failovers++;
      if (waiting.decided === undefined) {
        const utteranceId = waiting.taken.utteranceId;
        this.#logger.warn({ reason: 'daemon_lost', node: waiting.taken.node, utterance_id: utteranceId, session_id: sessionIdOf(waiting.message), outcome: 'run_again' }, 'cluster: an utterance of a lost daemon runs again here');
        const again: Waiting = { partition, message: withContext(waiting.message, { utterance_id: utteranceId }), connection: waiting.connection, at: waiting.at };
        this.#entries.set(frameId, again);
        this.#admissions.push({ message: this.#take(frameId, again, owned), connection: again.connection });
        continue;
      }
      // Matched: the winner may be running its handler. A legacy skill ends the utterance with its own handled; a
      // spec skill says its handler ended and the handled is sent here; unheard within the handler bound, it ends
      // with an error. Unmatched: only its handled was missing.
      if (waiting.handler !== undefined || waiting.decided === 'unmatched') this.#endAdopted(frameId, waiting);
      else {
        // In flight here until its handled: the partition is not given up (to a daemon that may be handed it again)
        // before it ends.
        owned.inFlight++;
        this.#mine.set(waiting.taken.utteranceId, partition);
        waiting.adopted = this.#clock.setTimeout(() => this.#endAdopted(frameId, waiting), this.#options.handlerMs);
      }
    }
  }

  /**
   * Utterances taken by a daemon's run that is gone, not ended, in a partition another live daemon owns now: handed to
   * it. It may not have heard them — it joined after they were taken, or it is that daemon started again — and it is
   * the one to run them again or end them (`#takeWaiting`). Every daemon that heard them hands them on; the owner
   * takes each once.
   */
  #handOrphans(): void {
    const batches = new Map<string, { partition: number; owner: string; entries: Orphan[]; bytes: number }>();
    const now = this.#clock.monotonic();
    for (const [frameId, waiting] of this.#entries) {
      const taken = waiting.taken;
      const row = this.#table.get(waiting.partition);
      const owner = row?.owner;
      if (row === undefined || owner === undefined || owner === null || owner === this.node || !this.#members.alive(owner)) continue;
      let orphan: Orphan;
      if (taken === undefined) {
        // No daemon took it, though the partition has had an owner for `deadAfterMs` and the entry waited as long: that
        // owner never heard it — it joined after the entry arrived (a daemon started again under a new name, before the
        // one it replaces was missed). Handed on, it runs there (the owner drops one it has, by frame or utterance).
        const utteranceId = utteranceIdOf(waiting.message);
        if (utteranceId === undefined || now - waiting.at <= this.#options.deadAfterMs || now - row.at <= this.#options.deadAfterMs) continue;
        orphan = { frame: frameId, message: encodeMessage(waiting.message), ...(waiting.connection === undefined ? {} : { connection: waiting.connection }), node: this.node, utterance_id: utteranceId, untaken: true };
      } else {
        if (waiting.adopted !== undefined || !this.#runGone(taken)) continue;
        orphan = {
          frame: frameId,
          message: encodeMessage(waiting.message),
          ...(waiting.connection === undefined ? {} : { connection: waiting.connection }),
          node: taken.node,
          ...(taken.boot === undefined ? {} : { boot: taken.boot }),
          utterance_id: taken.utteranceId,
          ...(waiting.decided === undefined ? {} : { decided: waiting.decided }),
          ...(waiting.handler === undefined ? {} : { handler: waiting.handler }),
        };
      }
      const run = `${owner} ${this.#members.of(owner)?.boot ?? ''}`;
      if (waiting.handedTo === run) continue;
      waiting.handedTo = run;
      const key = `${run} ${waiting.partition}`;
      let batch = batches.get(key);
      // One note stays under the servers' max_payload (an entry larger than a frame can be never reached NATS).
      const bytes = Buffer.byteLength(JSON.stringify(orphan)) + 1;
      if (batch !== undefined && batch.bytes + bytes > this.maxPayload - 1024) {
        this.#publishNote({ kind: 'orphans', partition: batch.partition, node: this.node, to: batch.owner, entries: batch.entries });
        batch = undefined;
      }
      if (batch === undefined) batches.set(key, (batch = { partition: waiting.partition, owner, entries: [], bytes: 200 }));
      batch.entries.push(orphan);
      batch.bytes += bytes;
    }
    for (const batch of batches.values()) this.#publishNote({ kind: 'orphans', partition: batch.partition, node: this.node, to: batch.owner, entries: batch.entries });
  }

  /** Utterances of a gone run handed to this daemon (`#handOrphans`): each taken once, run again or ended if it owns the partition. */
  #adoptOrphans(partition: number, orphans: readonly Orphan[]): void {
    let adopted = 0;
    let invalid = 0;
    for (const entry of orphans) {
      const read = readOrphan(entry);
      const decoded = read.ok ? decodeFrame(read.note.message) : undefined;
      if (!read.ok || decoded?.ok !== true) {
        invalid++;
        continue;
      }
      const orphan = read.note;
      if (this.#entries.has(orphan.frame) || this.#ended.has(orphan.utterance_id)) continue;
      if (orphan.untaken === true) {
        // An entry no daemon took, that this daemon never heard: it waits here as if it had come now.
        this.#entries.set(orphan.frame, { partition, message: decoded.message, connection: orphan.connection, at: this.#clock.monotonic() });
        adopted++;
        continue;
      }
      const waiting: Waiting = {
        partition,
        message: decoded.message,
        connection: typeof orphan.connection === 'string' ? orphan.connection : undefined,
        at: this.#clock.monotonic(),
        taken: { node: orphan.node, boot: typeof orphan.boot === 'string' ? orphan.boot : undefined, utteranceId: orphan.utterance_id },
        ...(orphan.decided === 'matched' || orphan.decided === 'unmatched' ? { decided: orphan.decided } : {}),
        ...(orphan.handler === 'complete' || orphan.handler === 'error' ? { handler: orphan.handler } : {}),
      };
      // Its handler's end, heard here before the daemon that handed it on heard it.
      waiting.handler ??= this.#handlerEnds.get(orphan.utterance_id)?.handler;
      this.#entries.set(orphan.frame, waiting);
      this.#frameOf.set(orphan.utterance_id, orphan.frame);
      adopted++;
    }
    if (invalid > 0) this.#invalid(PARTITION_SUBJECT, `${invalid} utterances handed here do not read as such`);
    if (adopted === 0) return;
    this.#logger.info({ partition, adopted }, 'cluster: utterances handed here by a daemon that heard them (of a daemon gone, or that arrived before this one joined)');
    const owned = this.#owned.get(partition);
    if (owned !== undefined && owned.drainingSince === undefined) this.#takeWaiting(partition, owned);
  }

  /** A partition an earlier run of this daemon's name owned, written free for the daemon that should have it now. */
  async #releaseEarlier(partition: number, row: { readonly epoch: number; readonly revision: number }): Promise<void> {
    if (this.#claiming.has(partition)) return;
    this.#claiming.add(partition);
    try {
      if (await this.#writeFree(partition, row.epoch, row.revision)) this.#publishNote({ kind: 'released', partition, node: this.node });
    } finally {
      this.#claiming.delete(partition);
    }
  }

  async #release(partition: number): Promise<void> {
    const owned = this.#owned.get(partition);
    if (owned === undefined) return;
    this.#owned.delete(partition);
    await this.#writeFree(partition, owned.epoch, owned.revision);
    this.#publishNote({ kind: 'released', partition, node: this.node });
  }

  /** The partition's entry written free (compare-and-set on `revision`): whether it was. */
  async #writeFree(partition: number, epoch: number, revision: number): Promise<boolean> {
    try {
      await this.#kv.update(`p.${partition}`, JSON.stringify({ owner: null, epoch }), revision);
      this.#logger.debug({ partition }, 'cluster: partition given up');
      return true;
    } catch (error) {
      this.#logger.debug({ reason: 'partition_release_failed', partition, err: error }, 'cluster: partition release not written');
      return false;
    }
  }

  #publishNote(note: Note): void {
    // After the ends kept so far: a partition's release never overtakes how its utterances ended.
    this.#out.flushEnds();
    this.#publish(PARTITION_SUBJECT, undefined, undefined, encoder.encode(JSON.stringify(note)));
  }

  #prune(): void {
    const now = this.#clock.monotonic();
    // Both in the order they were heard: the first young one ends the sweep.
    for (const [id, at] of this.#ended) {
      if (now - at <= ENDED_MS) break;
      this.#ended.delete(id);
    }
    for (const [frame, early] of this.#early) {
      if (now - early.at <= REMEMBER_MS) break;
      this.#early.delete(frame);
    }
    for (const [id, end] of this.#handlerEnds) {
      if (now - end.at <= ENDED_MS) break;
      this.#handlerEnds.delete(id);
    }
    for (const [node, fenced] of this.#fencedUtterances) {
      for (const [utteranceId, at] of fenced) {
        if (now - at <= REMEMBER_MS) break;
        fenced.delete(utteranceId);
      }
      if (fenced.size === 0) this.#fencedUtterances.delete(node);
    }
    for (const [frame, waiting] of this.#entries) {
      if (now - waiting.at <= REMEMBER_MS) continue;
      this.#entries.delete(frame);
      if (waiting.taken !== undefined) this.#frameOf.delete(waiting.taken.utteranceId);
      else this.#logger.warn({ reason: 'entry_never_taken', session_id: sessionIdOf(waiting.message), partition: waiting.partition }, 'cluster: an utterance waited ten minutes for its partition\'s owner and is forgotten');
    }
    for (const [id, partition] of this.#mine) if (!this.#owned.has(partition)) this.#mine.delete(id);
  }

  #emitStatus(status: BusStatus): void {
    for (const listener of [...this.#status]) listener(status);
  }

  /**
   * Leave the cluster gracefully: take no new utterance, let those running here end (at most `graceMs`), give every
   * partition up, say goodbye. The entries that arrive meanwhile are taken by the partitions' next owners.
   */
  async leave(graceMs: number): Promise<void> {
    if (this.#leaving) return;
    this.#leaving = true;
    const now = this.#clock.monotonic();
    for (const owned of this.#owned.values()) owned.drainingSince = now;
    this.#heartbeat();
    const deadline = now + graceMs;
    while (this.#owned.size > 0 && this.#clock.monotonic() < deadline) {
      for (const [partition, owned] of [...this.#owned]) if (owned.inFlight === 0) await this.#release(partition);
      if (this.#owned.size === 0) break;
      await new Promise<void>((resolve) => this.#clock.setTimeout(resolve, 20));
    }
    for (const partition of [...this.#owned.keys()]) await this.#release(partition);
    this.#out.send();
    await this.#nc.flush().catch(() => {});
  }

  async close(): Promise<void> {
    // Its connections close with it (the bus server closes them without a word): removed from the state if NATS takes
    // it now; else the others remove them when they miss this daemon, or it does when it starts again under its name.
    for (const connection of this.#ownConnections) this.#writeState(stateKey.connection(connection), null);
    this.#ownConnections.clear();
    await this.#stateWriter.close(2_000);
    this.#closing = true;
    // Deadlines waiting for word that can no longer come act now.
    this.#barrier.passAll();
    if (this.#refresh !== undefined) this.#clock.clearTimeout(this.#refresh);
    await this.#beat?.stop();
    if (this.#tick !== undefined) this.#clock.clearTimeout(this.#tick);
    this.#sub?.unsubscribe();
    this.#out.send();
    await this.#nc.drain().catch(() => {});
  }
}
