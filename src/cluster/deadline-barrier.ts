/**
 * The deadline barrier of a cluster (src/cluster/README.md, "Deadlines"): a contest's deadline that falls due on one
 * daemon acts only once every other daemon with a client has said it has published what its clients had sent it by
 * then — so a reply a skill sent in time to a daemon that has fallen behind reaches the contest before its deadline,
 * as it would on one bus. A round asks the daemons `ask` names (`sync`), each answers after its own turn's I/O
 * (`synced`), and the round passes when all have answered, or after `deadAfterMs`: those that did not answer are then
 * silent — asked still, their answer to any round ends it, but not waited for — so one silent daemon holds the
 * deadlines up once, not at every round.
 */
import type { Clock, TimerId } from '../clock/clock.js';
import type { Logger } from '../log/logger.js';
import { LogRateLimiter } from '../log/rate-limit.js';
import type { SyncNote } from './notes.js';

export interface BarrierLinks {
  /** This daemon's name and this run's boot id (an answer to an earlier run of it answers nothing now). */
  readonly node: string;
  readonly boot: string;
  readonly clock: Clock;
  readonly logger: Logger;
  /** How long a round waits for a daemon's answer. */
  readonly deadAfterMs: number;
  /** The daemons to ask now: the others that have clients, are alive and read the question; none while cut off or closing. */
  readonly toAsk: () => string[];
  /** Publishes a question (`ask`) or an answer (`answer`) to the other daemons. */
  readonly publish: (kind: 'ask' | 'answer', note: SyncNote) => void;
  /** Whether the daemon is closing (no answer is sent then). */
  readonly closing: () => boolean;
}

export interface BarrierCounts {
  readonly asked: number;
  readonly answered: number;
  readonly timedOut: number;
}

export class DeadlineBarrier {
  readonly #links: BarrierLinks;
  readonly #rounds = new Map<number, { readonly waiting: Set<string>; readonly passed: () => void; timer: TimerId | undefined }>();
  readonly #silent = new Set<string>();
  readonly #timeoutLog = new LogRateLimiter(60_000);
  #round = 0;
  #answered = 0;
  #timedOut = 0;

  constructor(links: BarrierLinks) {
    this.#links = links;
  }

  /** Rounds asked, answered by every daemon asked, and run out. */
  counts(): BarrierCounts {
    return { asked: this.#round, answered: this.#answered, timedOut: this.#timedOut };
  }

  /**
   * A deadline fell due: `passed` runs once the daemons asked have answered, or after `deadAfterMs` at most; at once
   * with none to ask (or none but silent ones).
   */
  wait(passed: () => void): void {
    const { clock, logger, deadAfterMs } = this.#links;
    const ask = this.#links.toAsk();
    if (ask.length === 0) return passed();
    const round = ++this.#round;
    this.#links.publish('ask', { by: this.#links.node, boot: this.#links.boot, round, ask });
    const waiting = new Set(ask.filter((node) => !this.#silent.has(node)));
    if (waiting.size === 0) return passed();
    const sync = { waiting, passed, timer: undefined as TimerId | undefined };
    this.#rounds.set(round, sync);
    sync.timer = clock.setTimeout(() => {
      sync.timer = undefined;
      this.#timedOut++;
      for (const node of waiting) this.#silent.add(node);
      const { log, suppressed } = this.#timeoutLog.shouldLog('cluster_sync_timeout', clock.monotonic());
      if (log) {
        logger.warn(
          { reason: 'cluster_sync_timeout', waited_ms: deadAfterMs, silent: [...waiting], suppressed },
          'cluster: deadlines acted without word from daemons that have clients (replies they hold may count as late; not waited for until they answer again; warned once a minute)',
        );
      }
      this.#pass(round);
    }, deadAfterMs);
  }

  /**
   * Another daemon's deadlines fell due: answered after this turn's I/O, so the answer follows everything this
   * daemon's clients had sent until then (published in order before it: NATS keeps one publisher's order).
   */
  asked(note: SyncNote): void {
    const { node } = this.#links;
    if (typeof note.by !== 'string' || typeof note.boot !== 'string' || typeof note.round !== 'number' || note.by === node) return;
    if (Array.isArray(note.ask) && !note.ask.includes(node)) return;
    setImmediate(() => {
      if (!this.#links.closing()) this.#links.publish('answer', { to: note.by, boot: note.boot, round: note.round, by: node });
    });
  }

  /** An answer to one of this daemon's rounds. */
  answered(note: SyncNote): void {
    if (note.to !== this.#links.node || note.boot !== this.#links.boot || typeof note.round !== 'number' || typeof note.by !== 'string') return;
    this.#silent.delete(note.by);
    this.#answer(note.round, note.by);
  }

  /** `node` has no client left (its last closed, or it was missed): no reply of a skill can come through it. */
  noLongerRelays(node: string): void {
    this.#silent.delete(node);
    for (const round of [...this.#rounds.keys()]) this.#answer(round, node);
  }

  /** The answers cannot come (NATS lost, or closing): every round waiting passes now. */
  passAll(): void {
    for (const round of [...this.#rounds.keys()]) this.#pass(round);
  }

  /** `node` said it has published what its clients had sent (or has none left to send): the round passes when all have. */
  #answer(round: number, node: string): void {
    const sync = this.#rounds.get(round);
    if (sync === undefined || sync.timer === undefined || !sync.waiting.delete(node) || sync.waiting.size > 0) return;
    this.#answered++;
    this.#links.clock.clearTimeout(sync.timer);
    sync.timer = undefined;
    // The frames that came before the answer are delivered to the contests from a microtask: after them.
    setImmediate(() => this.#pass(round));
  }

  #pass(round: number): void {
    const sync = this.#rounds.get(round);
    if (sync === undefined) return;
    this.#rounds.delete(round);
    if (sync.timer !== undefined) this.#links.clock.clearTimeout(sync.timer);
    sync.passed();
  }
}
