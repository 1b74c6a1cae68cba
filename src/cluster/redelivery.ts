/**
 * At least once between daemons (src/cluster/README.md, "Redelivery"). Core NATS delivers at most once: a NATS
 * server that dies takes with it what was passing through it, and a daemon reconnecting to another server misses
 * what was published meanwhile. Every daemon numbers what it publishes on its cluster connection, per run (subjects.ts
 * `envelope`), and keeps the last seconds of it (`SentRing`); a receiver hands each daemon's messages on in their
 * order, once (`InOrder`): a gap in the numbers — seen when a later message arrives, or when the sender's heartbeat
 * names a number that has not come — holds that sender's later messages and asks it for the missing ones
 * (`ovos.contests.resend`); it publishes them again on their subjects, and every receiver that already has them drops
 * them by their number. What cannot be had again within `giveUpMs` (the sender's ring no longer holds it, or the sender
 * is gone) is given up, logged, and the held messages go on.
 *
 * Nothing is stored on the NATS servers for this: the cost while nothing is lost is a number and a reference per
 * message. Pure (no connection, time from the injected clock).
 */
import type { Clock } from '../clock/clock.js';

interface Kept {
  readonly seq: number;
  readonly subject: string;
  readonly data: Uint8Array;
  readonly at: number;
  resentAt: number;
}

/** What this daemon published recently, by sequence number (contiguous: every number is published once). */
export class SentRing {
  readonly #kept: Kept[] = [];
  #head = 0;
  #bytes = 0;
  readonly #clock: Clock;
  readonly #keepMs: number;
  readonly #maxBytes: number;
  readonly #againMs: number;

  /** Kept for `keepMs`, at most `maxBytes` of payload; a number resent within `againMs` is not sent again (several receivers asking at once). */
  constructor(options: { readonly clock: Clock; readonly keepMs: number; readonly maxBytes: number; readonly againMs: number }) {
    this.#clock = options.clock;
    this.#keepMs = options.keepMs;
    this.#maxBytes = options.maxBytes;
    this.#againMs = options.againMs;
  }

  get size(): number {
    return this.#kept.length - this.#head;
  }

  push(seq: number, subject: string, data: Uint8Array): void {
    const now = this.#clock.monotonic();
    this.#kept.push({ seq, subject, data, at: now, resentAt: -Infinity });
    this.#bytes += data.byteLength;
    while (this.size > 1) {
      const oldest = this.#kept[this.#head]!;
      if (now - oldest.at <= this.#keepMs && this.#bytes <= this.#maxBytes) break;
      this.#bytes -= oldest.data.byteLength;
      this.#kept[this.#head++] = undefined as unknown as Kept;
    }
    if (this.#head > 1024 && this.#head * 2 > this.#kept.length) {
      this.#kept.splice(0, this.#head);
      this.#head = 0;
    }
  }

  #at(seq: number): Kept | undefined {
    if (this.size === 0) return undefined;
    const kept = this.#kept[this.#head + seq - this.#kept[this.#head]!.seq];
    return kept?.seq === seq ? kept : undefined;
  }

  /** What of `from`..`through` is still kept and was not resent within `againMs`: to publish again, in order. */
  resend(from: number, through: number): Array<{ readonly subject: string; readonly data: Uint8Array }> {
    if (this.size === 0) return [];
    const now = this.#clock.monotonic();
    const out: Array<{ subject: string; data: Uint8Array }> = [];
    const first = Math.max(from, this.#kept[this.#head]!.seq);
    const last = Math.min(through, this.#kept[this.#kept.length - 1]!.seq);
    for (let seq = first; seq <= last; seq++) {
      const kept = this.#at(seq);
      if (kept === undefined || now - kept.resentAt < this.#againMs) continue;
      kept.resentAt = now;
      out.push({ subject: kept.subject, data: kept.data });
    }
    return out;
  }
}

interface Run<T> {
  readonly boot: string;
  next: number;
  readonly held: Map<number, T>;
  /** Since when numbers before what is held (or before `claimed`) are missing, and when they were last asked for. */
  gap: { since: number; askedAt: number } | undefined;
  /** The oldest number the sender's heartbeat said it had sent that had not arrived then. */
  claimed: { readonly seq: number; readonly at: number } | undefined;
  lastAt: number;
}

export interface InOrderOptions<T> {
  readonly clock: Clock;
  /** How long a gap is asked for before it is given up. */
  readonly giveUpMs: number;
  /** How often a gap is asked for again, and how long a number a heartbeat named may be on its way before it is missed. */
  readonly askEveryMs: number;
  readonly deliver: (item: T) => void;
  readonly ask: (node: string, boot: string, from: number, through: number) => void;
  readonly lost: (node: string, boot: string, from: number, through: number) => void;
}

/** A sender silent for this long (and owing nothing) is forgotten. */
const FORGET_MS = 10 * 60_000;

/** Each sender's messages handed on once, in the order it numbered them (a gap asked for, then given up). */
export class InOrder<T> {
  readonly #runs = new Map<string, Run<T>>();
  readonly #o: InOrderOptions<T>;

  constructor(options: InOrderOptions<T>) {
    this.#o = options;
  }

  /**
   * A message `node` numbered `seq` in its run `boot`. The first heard of a sender sets where its numbering is taken
   * up; a new run of a sender heard before is expected from 1 (what the old run held behind a gap goes on first).
   */
  accept(node: string, boot: string, seq: number, item: T): void {
    const now = this.#o.clock.monotonic();
    let run = this.#runs.get(node);
    if (run === undefined || run.boot !== boot) run = this.#start(node, boot, run === undefined ? seq : 1, now);
    run.lastAt = now;
    if (seq < run.next || run.held.has(seq)) return; // heard already: a resend, or a number asked for twice
    if (seq > run.next) {
      run.held.set(seq, item);
      if (run.gap === undefined) this.#open(node, run, now);
      return;
    }
    this.#o.deliver(item);
    run.next++;
    this.#drain(node, run, now);
  }

  /** `node`'s heartbeat: it had published up to `seq` in run `boot`. */
  sentThrough(node: string, boot: string, seq: number): void {
    const now = this.#o.clock.monotonic();
    let run = this.#runs.get(node);
    if (run === undefined) return; // nothing heard of it yet: its next message sets where its numbering is taken up
    if (run.boot !== boot) run = this.#start(node, boot, 1, now);
    if (seq < run.next) return;
    if (run.claimed === undefined || run.claimed.seq < run.next) run.claimed = { seq, at: now };
  }

  /** Every heartbeat: a number a heartbeat named that is still missing opens a gap; gaps are asked for again, or given up. */
  tick(): void {
    const now = this.#o.clock.monotonic();
    for (const [node, run] of this.#runs) {
      if (run.claimed !== undefined && run.claimed.seq < run.next) run.claimed = undefined;
      if (run.gap === undefined && run.claimed !== undefined && now - run.claimed.at >= this.#o.askEveryMs) this.#open(node, run, now);
      const gap = run.gap;
      if (gap === undefined) {
        if (now - run.lastAt > FORGET_MS && run.held.size === 0) this.#runs.delete(node);
        continue;
      }
      if (now - gap.since >= this.#o.giveUpMs) {
        const through = this.#missingThrough(run);
        this.#o.lost(node, run.boot, run.next, through);
        run.next = through + 1;
        run.gap = undefined;
        this.#drain(node, run, now);
      } else if (now - gap.askedAt >= this.#o.askEveryMs) {
        gap.askedAt = now;
        this.#o.ask(node, run.boot, run.next, this.#missingThrough(run));
      }
    }
  }

  #start(node: string, boot: string, next: number, now: number): Run<T> {
    const old = this.#runs.get(node);
    if (old !== undefined) for (const seq of [...old.held.keys()].sort((a, b) => a - b)) this.#o.deliver(old.held.get(seq)!);
    const run: Run<T> = { boot, next, held: new Map(), gap: undefined, claimed: undefined, lastAt: now };
    this.#runs.set(node, run);
    return run;
  }

  /** The last number of the gap at `next`: just before the first held, or the number a heartbeat named. */
  #missingThrough(run: Run<T>): number {
    let first = Infinity;
    for (const seq of run.held.keys()) if (seq < first) first = seq;
    return first === Infinity ? run.claimed!.seq : first - 1;
  }

  #open(node: string, run: Run<T>, now: number): void {
    run.gap = { since: now, askedAt: now };
    this.#o.ask(node, run.boot, run.next, this.#missingThrough(run));
  }

  #drain(node: string, run: Run<T>, now: number): void {
    while (run.held.has(run.next)) {
      const item = run.held.get(run.next)!;
      run.held.delete(run.next);
      run.next++;
      this.#o.deliver(item);
    }
    if (run.held.size > 0) {
      // Another gap behind this one: asked for now if none was open (an open one is asked for again at its time).
      if (run.gap === undefined) this.#open(node, run, now);
      return;
    }
    if (run.gap !== undefined && (run.claimed === undefined || run.claimed.seq < run.next)) run.gap = undefined;
  }
}
