/**
 * The utterance broadcasts of the legacy fallback skills (src/plugins/README.md "Legacy fallback skills"): every
 * ovos-workshop skill answers every `ovos.skills.fallback.ping` with what its `can_answer` says of the utterance,
 * whichever stage sent it, so the plugin sends one per utterance — when it arrives, or at its first fallback stage
 * with a legacy skill — and every fallback stage of the utterance takes its answers. This is their bookkeeping: which
 * broadcast a stage of an utterance takes, which answers it holds and over which connection they came; no bus, no
 * timers (times are the caller's monotonic ms).
 */
import type { Message } from '../../bus/message.js';

/** One utterance's broadcast: an arrival recorded (not sent yet) or a ping that went out. */
export interface UtteranceBroadcast<TContest> {
  /** Stamped on the ping as its `contest_id`: its pongs name it. */
  readonly id: string;
  readonly sessionId: string;
  /** The utterance's id; unset for an arrival without one (ovos-core's, seen on the bus): the first stage's binds it. */
  utteranceId: string | undefined;
  readonly utterances: readonly string[];
  readonly lang: string;
  /** The message the ping derives from: the arriving utterance, or the first stage's request. */
  readonly origin: Message;
  /** When it was recorded (monotonic ms). */
  readonly recordedAt: number;
  /** When it went out (monotonic ms); unset: an arrival recorded, nothing sent. */
  sentAt: number | undefined;
  /** The legacy skills it could reach when it went out, each with the connection it was bound to (none: unknown). */
  reached: ReadonlyMap<string, string | undefined>;
  /** Each skill's first answer within its ping timeout, with the connection it came over. */
  readonly said: Map<string, { readonly canHandle: boolean; readonly connection: string | undefined }>;
  /** The stage contests taking its answers now. */
  readonly contests: Set<TContest>;
  /** A stage has compared its utterances with this arrival's (whether early broadcasts ask what stages ask). */
  checked: boolean;
}

export interface BroadcastLimits {
  /** Broadcasts kept per session (utterances of one session may overlap); the oldest goes first. */
  readonly perSession: number;
  /** Sessions kept; the one heard from least recently goes first (their utterances end where we do not see it). */
  readonly sessions: number;
  /** An arrival without an utterance_id is taken for a stage's utterance only this long after it arrived. */
  readonly bindWindowMs: number;
}

export const BROADCAST_LIMITS: BroadcastLimits = { perSession: 4, sessions: 1_024, bindWindowMs: 10_000 };

/** What a stage of an utterance finds: the broadcast it takes, and the arrival it was compared with, if any. */
export interface Found<TContest> {
  readonly broadcast: UtteranceBroadcast<TContest> | undefined;
  /** The first comparison of an arrival with what a stage asks: whether they were the same. */
  readonly compared?: { readonly arrival: UtteranceBroadcast<TContest>; readonly same: boolean };
}

const sameQuery = (a: { readonly utterances: readonly string[]; readonly lang: string }, utterances: readonly string[], lang: string): boolean =>
  a.lang === lang && a.utterances.length === utterances.length && a.utterances.every((u, i) => u === utterances[i]);

export class UtteranceBroadcasts<TContest> {
  /** session → its broadcasts, oldest first; the Map itself least recently used first. */
  readonly #bySession = new Map<string, Array<UtteranceBroadcast<TContest>>>();
  /** Every broadcast kept, and those let go while a stage contest still takes their answers. */
  readonly #byId = new Map<string, UtteranceBroadcast<TContest>>();
  readonly #limits: BroadcastLimits;
  readonly #released: (broadcast: UtteranceBroadcast<TContest>) => void;

  /** `released`: told of each broadcast no stage will take any more (its utterance over, or it was replaced). */
  constructor(released: (broadcast: UtteranceBroadcast<TContest>) => void, limits: BroadcastLimits = BROADCAST_LIMITS) {
    this.#released = released;
    this.#limits = limits;
  }

  /** Broadcasts kept (for tests and inspection). */
  get size(): number {
    return this.#byId.size;
  }

  /** The broadcast recorded for this very arrival message (the orchestrator tells every stage of it). */
  ofArrival(sessionId: string, entry: Message): UtteranceBroadcast<TContest> | undefined {
    return this.#bySession.get(sessionId)?.find((b) => b.origin === entry);
  }

  /** The broadcast a pong names by its contest_id, in the session the pong carries. */
  byId(id: string | undefined, sessionId: string | undefined): UtteranceBroadcast<TContest> | undefined {
    const broadcast = id === undefined ? undefined : this.#byId.get(id);
    return broadcast !== undefined && broadcast.sessionId === sessionId ? broadcast : undefined;
  }

  /** Every broadcast sent less than `timeoutMs` ago (any session, or `sessionId`'s) that `skillId` has not answered. */
  awaiting(skillId: string, sessionId: string | undefined, now: number, timeoutMs: number): Array<UtteranceBroadcast<TContest>> {
    return [...this.#byId.values()].filter((b) => (sessionId === undefined || b.sessionId === sessionId) && b.sentAt !== undefined && now - b.sentAt < timeoutMs && !b.said.has(skillId));
  }

  /** Whether a broadcast kept reached `skillId`, went unanswered by it for `timeoutMs`, and ended less than `owedMs` ago. */
  owed(skillId: string, sessionId: string | undefined, now: number, timeoutMs: number, owedMs: number): boolean {
    for (const b of this.#byId.values()) {
      if (sessionId !== undefined && b.sessionId !== sessionId) continue;
      if (b.sentAt === undefined || !b.reached.has(skillId) || b.said.has(skillId)) continue;
      const expired = now - b.sentAt - timeoutMs;
      if (expired >= 0 && expired < owedMs) return true;
    }
    return false;
  }

  add(broadcast: UtteranceBroadcast<TContest>): void {
    const list = this.#bySession.get(broadcast.sessionId) ?? [];
    this.#bySession.delete(broadcast.sessionId); // most recently used last
    list.push(broadcast);
    this.#bySession.set(broadcast.sessionId, list);
    this.#byId.set(broadcast.id, broadcast);
    while (list.length > this.#limits.perSession) this.#let(list.shift()!);
    while (this.#bySession.size > this.#limits.sessions) {
      const [oldest, broadcasts] = this.#bySession.entries().next().value!;
      this.#bySession.delete(oldest);
      for (const b of broadcasts) this.#let(b);
    }
  }

  /** The utterance is over (handled here): its broadcasts go, but for contests still taking their answers. */
  handled(sessionId: string, utteranceId: string | undefined): void {
    if (utteranceId === undefined) return;
    const list = this.#bySession.get(sessionId);
    if (list === undefined) return;
    for (const b of list.filter((b) => b.utteranceId === utteranceId)) this.remove(b);
  }

  /** No stage takes `broadcast` any more (another replaced it). */
  remove(broadcast: UtteranceBroadcast<TContest>): void {
    const list = this.#bySession.get(broadcast.sessionId);
    const at = list?.indexOf(broadcast) ?? -1;
    if (list !== undefined && at !== -1) {
      list.splice(at, 1);
      if (list.length === 0) this.#bySession.delete(broadcast.sessionId);
    }
    this.#let(broadcast);
  }

  /**
   * The broadcast a stage of an utterance (`utteranceId`, asking `utterances` in `lang`) takes: the one bound to that
   * utterance when it asked the same; else an arrival without an id in the session, not yet taken, recorded within
   * `bindWindowMs`, that asked the same (the newest), which is bound to it. The first stage that meets an arrival
   * compares it with what it asks (`compared`): with one arrival of its own (its id), or the only arrival without an id
   * waiting in the session.
   */
  find(sessionId: string, utteranceId: string | undefined, utterances: readonly string[], lang: string, now: number): Found<TContest> {
    const list = this.#bySession.get(sessionId) ?? [];
    const own = utteranceId === undefined ? undefined : [...list].reverse().find((b) => b.utteranceId === utteranceId);
    if (own !== undefined) {
      const same = sameQuery(own, utterances, lang);
      const compared = own.checked ? undefined : { arrival: own, same };
      own.checked = true;
      return { broadcast: same ? own : undefined, ...(compared === undefined ? {} : { compared }) };
    }
    const waiting = list.filter((b) => b.utteranceId === undefined && !b.checked && now - b.recordedAt <= this.#limits.bindWindowMs);
    const match = [...waiting].reverse().find((b) => sameQuery(b, utterances, lang));
    if (match !== undefined) {
      match.utteranceId = utteranceId;
      match.checked = true;
      return { broadcast: match, compared: { arrival: match, same: true } };
    }
    if (waiting.length === 1) {
      waiting[0]!.checked = true;
      return { broadcast: undefined, compared: { arrival: waiting[0]!, same: false } };
    }
    return { broadcast: undefined };
  }

  /** Whether the utterance `find` would bind to a broadcast has had one sent (no binding here). */
  sentFor(sessionId: string, utteranceId: string | undefined, utterances: readonly string[], lang: string, now: number): boolean {
    const list = this.#bySession.get(sessionId) ?? [];
    if (utteranceId !== undefined && list.some((b) => b.utteranceId === utteranceId && b.sentAt !== undefined)) return true;
    return list.some((b) => b.utteranceId === undefined && !b.checked && b.sentAt !== undefined && now - b.recordedAt <= this.#limits.bindWindowMs && sameQuery(b, utterances, lang));
  }

  /** A stage contest takes `broadcast`'s answers until `done`. */
  take(broadcast: UtteranceBroadcast<TContest>, contest: TContest, done: Promise<unknown>): void {
    broadcast.contests.add(contest);
    void done.then(() => {
      broadcast.contests.delete(contest);
      if (broadcast.contests.size === 0 && !this.#kept(broadcast)) this.#byId.delete(broadcast.id);
    });
  }

  #kept(broadcast: UtteranceBroadcast<TContest>): boolean {
    return this.#bySession.get(broadcast.sessionId)?.includes(broadcast) === true;
  }

  /** Out of its session's list: no stage takes it any more; gone, unless a contest still takes its answers. */
  #let(broadcast: UtteranceBroadcast<TContest>): void {
    this.#released(broadcast);
    if (broadcast.contests.size === 0) this.#byId.delete(broadcast.id);
  }
}
