/**
 * Fair share of the embedded bus between its client connections, as a broker gives it: a connection that sends far
 * more than its share while the daemon is saturated is slowed — its socket paused, so TCP holds its frames back in
 * its own buffers — instead of slowing every other client. Everything a connection sends is re-broadcast to every
 * client, so one loud sender fills every other client's socket too; pausing it is the only remedy that keeps the
 * bus's order and loses nothing.
 *
 * The server charges each frame to its connection (`charge`) and closes a window every `WINDOW_MS` (`roll`), saying
 * whether the daemon was saturated in it (its event loop busy, or a client's outgoing backlog past a bound). Only
 * then, only a connection whose cost in the window is more than twice the mean over every connected client (and
 * over `MIN_COST`) is paused: a bus that keeps up slows nobody, and neither does a bus with two clients (a load
 * driver and a skills process), where no one can exceed twice the mean. A paused connection resumes at the first
 * window that is not saturated, and after `maxPauseMs` at the latest — for at least one window — so its heartbeat
 * pongs and its own answers are never held long enough to look dead.
 *
 * Pure bookkeeping: the server owns the sockets, the timer and the saturation signal (tests give their own).
 */

/** Window length (ms): the server measures and decides this often while frames arrive. */
export const WINDOW_MS = 100;
/** Bytes that cost as much as one more frame: a connection sending large frames uses its share sooner. */
export const COST_BYTES = 4096;
/** The least cost in a window for which a connection is ever paused (a frame costs 1): 500 frames a second. */
export const MIN_COST = 50;

export interface ShareChange<K> {
  /** Connections to pause now, with their cost in the window and the share they exceeded. */
  readonly pause: ReadonlyArray<{ readonly key: K; readonly cost: number; readonly share: number }>;
  readonly resume: readonly K[];
}

export class FairShare<K> {
  readonly #maxPauseMs: number;
  readonly #costs = new Map<K, number>();
  /** Paused connections → since when (ms). */
  readonly #paused = new Map<K, number>();

  constructor(maxPauseMs: number) {
    this.#maxPauseMs = maxPauseMs;
  }

  /** One frame of `bytes` from `key` in the current window. */
  charge(key: K, bytes: number): void {
    this.#costs.set(key, (this.#costs.get(key) ?? 0) + 1 + Math.floor(bytes / COST_BYTES));
  }

  /** Frames were charged in the current window (the server keeps its window timer only while there are). */
  get charged(): boolean {
    return this.#costs.size > 0;
  }

  isPaused(key: K): boolean {
    return this.#paused.has(key);
  }

  get paused(): number {
    return this.#paused.size;
  }

  /** A connection closed. */
  forget(key: K): void {
    this.#costs.delete(key);
    this.#paused.delete(key);
  }

  /** Close the window: who to pause and who to resume. `connected`: client connections open (every one a potential sender). */
  roll(now: number, saturated: boolean, connected: number): ShareChange<K> {
    const resume: K[] = [];
    for (const [key, since] of this.#paused) {
      if (!saturated || now - since >= this.#maxPauseMs) {
        this.#paused.delete(key);
        resume.push(key);
      }
    }
    const pause: Array<{ key: K; cost: number; share: number }> = [];
    if (saturated && connected > 0) {
      let total = 0;
      for (const cost of this.#costs.values()) total += cost;
      const share = Math.max(MIN_COST, (2 * total) / connected);
      for (const [key, cost] of this.#costs) {
        // Just resumed after its longest pause: it gets this window whatever it sends.
        if (cost > share && !this.#paused.has(key) && !resume.includes(key)) {
          this.#paused.set(key, now);
          pause.push({ key, cost, share: Math.round(share) });
        }
      }
    }
    this.#costs.clear();
    return { pause, resume };
  }
}
