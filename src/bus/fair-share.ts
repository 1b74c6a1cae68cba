/**
 * Fair share of the embedded bus between its client connections, as a broker gives it: a connection that sends far
 * more than its share while the bus is busy is slowed — its socket paused, so TCP holds its frames back in its own
 * buffers — instead of slowing every other client. Everything a connection sends is re-broadcast to every client, so
 * one loud sender fills every other client's socket too (a skill process must read through it before it sees its
 * next ping); pausing it is the only remedy that keeps the bus's order and loses nothing.
 *
 * The server charges each frame to its connection (`charge`) and closes a window every `WINDOW_MS` (`roll`), saying
 * whether the daemon was saturated in it (its event loop busy, or a client's outgoing backlog past a bound). A window
 * is busy when the last one was saturated or it has carried more than `BUSY_COST`. Only then, only a connection whose
 * cost in the window goes over its share — twice the mean over every connected client, and at least `MIN_COST` — is
 * paused: at once (a burst is cut short, not broadcast whole), and at the window's end for as long as sending its
 * excess at its share would have taken (at least the next window, at most `maxPauseMs`). So a bus that keeps up slows nobody, and neither does a bus with two clients (a load driver and a
 * skills process), where no one can exceed twice the mean; a loud client is held near its share; and a paused one is
 * never held long enough for its heartbeat pongs to look dead.
 *
 * Pure bookkeeping: the server owns the sockets, the timer and the saturation signal (tests give their own).
 */

/** Window length (ms): the server measures and decides this often while frames arrive. */
export const WINDOW_MS = 100;
/** Bytes that cost as much as one more frame: a connection sending large frames uses its share sooner. */
export const COST_BYTES = 4096;
/**
 * The least cost in a window for which a connection is ever paused (a frame costs 1): 10,000 frames a second — a
 * flood, never a client doing its work. A skill answering every ping of a saturated daemon sends about 1,200, in
 * bursts of a few hundred per window after a pause of the daemon's loop: pausing it makes its pongs late, and its
 * contests decide without it (measured with `npm run bench -- mixed`, one connection per skill).
 */
export const MIN_COST = 1_000;
/**
 * A window carrying more than this (10,000 frames a second over the bus) is busy even while the daemon keeps up: a
 * daemon deciding 800 utterances a second with a dozen skills carries about 6,000.
 */
export const BUSY_COST = 1_000;
/** The longest a loud connection stays paused at a time (ms), unless the server is given another bound. */
export const MAX_PAUSE_MS = 1_000;

export interface ShareChange<K> {
  /** Connections to pause now, with their cost in the window, the share they exceeded and for how long (ms). */
  readonly pause: ReadonlyArray<{ readonly key: K; readonly cost: number; readonly share: number; readonly ms: number }>;
  readonly resume: readonly K[];
}

export class FairShare<K> {
  readonly #maxPauseMs: number;
  readonly #costs = new Map<K, number>();
  /** Paused connections → until when (ms). */
  readonly #paused = new Map<K, number>();
  /** Paused in this window by `charge`, until `roll` says for how long. */
  readonly #over = new Set<K>();
  /** Cost charged in this window, every connection. */
  #total = 0;
  /** The last window closed was saturated. */
  #saturated = false;

  constructor(maxPauseMs: number) {
    this.#maxPauseMs = maxPauseMs;
  }

  /**
   * One frame of `bytes` from `key` in the current window. True when it has just gone over its share while the
   * window is busy (more than `BUSY_COST` so far, or the last one was saturated): the server pauses it at once, so a
   * loud client's burst is cut short rather than broadcast whole; `roll` then sets how long it stays paused.
   */
  charge(key: K, bytes: number, connected: number): boolean {
    const unit = 1 + Math.floor(bytes / COST_BYTES);
    const cost = (this.#costs.get(key) ?? 0) + unit;
    this.#costs.set(key, cost);
    this.#total += unit;
    if (cost <= MIN_COST || this.#paused.has(key) || this.#over.has(key)) return false;
    if (!this.#saturated && this.#total <= BUSY_COST) return false;
    if (cost <= this.#share(this.#total, connected)) return false;
    this.#over.add(key);
    return true;
  }

  #share(total: number, connected: number): number {
    return Math.max(MIN_COST, (2 * total) / Math.max(1, connected));
  }

  /** Frames were charged in the current window (the server keeps its window timer only while there are). */
  get charged(): boolean {
    return this.#costs.size > 0;
  }

  isPaused(key: K): boolean {
    return this.#paused.has(key) || this.#over.has(key);
  }

  get paused(): number {
    return this.#paused.size + this.#over.size;
  }

  /** A connection closed. */
  forget(key: K): void {
    this.#costs.delete(key);
    this.#paused.delete(key);
    this.#over.delete(key);
  }

  /** Close the window: who to pause and who to resume. `connected`: client connections open (every one a potential sender). */
  roll(now: number, saturated: boolean, connected: number): ShareChange<K> {
    const resume: K[] = [];
    for (const [key, until] of this.#paused) {
      if (now >= until) {
        this.#paused.delete(key);
        resume.push(key);
      }
    }
    const total = this.#total;
    const pause: Array<{ key: K; cost: number; share: number; ms: number }> = [];
    const busy = (saturated || total > BUSY_COST) && connected > 0;
    const share = this.#share(total, connected);
    for (const [key, cost] of this.#costs) {
      const early = this.#over.has(key);
      // Resumed just now: what it cost here was read before its pause ended, not sent since.
      if (!early && (!busy || cost <= share || this.#paused.has(key) || resume.includes(key))) continue;
      const ms = Math.min(this.#maxPauseMs, Math.max(WINDOW_MS, Math.round((WINDOW_MS * (cost - share)) / share)));
      this.#paused.set(key, now + ms);
      pause.push({ key, cost, share: Math.round(share), ms });
    }
    this.#over.clear();
    this.#costs.clear();
    this.#total = 0;
    this.#saturated = saturated;
    return { pause, resume };
  }
}
