/**
 * Minimal log rate limiter: at most one line per key per `windowMs`, reporting how many were suppressed since the
 * last one logged. Used wherever a `warn` could otherwise repeat per utterance (skill timeouts, refused
 * registrations, unknown pipeline ids): the first occurrence is logged, the rest are counted into the next line.
 * Keys come off the bus (skill ids), so at most `maxKeys` are remembered; the oldest are forgotten first.
 */
export class LogRateLimiter {
  readonly #windowMs: number;
  readonly #maxKeys: number;
  readonly #keys = new Map<string, { at: number; suppressed: number }>();

  constructor(windowMs: number, maxKeys = 1024) {
    this.#windowMs = windowMs;
    this.#maxKeys = maxKeys;
  }

  shouldLog(key: string, now: number): { readonly log: boolean; readonly suppressed: number } {
    const entry = this.#keys.get(key);
    if (entry !== undefined && now - entry.at < this.#windowMs) {
      entry.suppressed += 1;
      return { log: false, suppressed: entry.suppressed };
    }
    const suppressed = entry?.suppressed ?? 0;
    this.#keys.delete(key); // re-insert: Map order is then oldest-logged first
    this.#keys.set(key, { at: now, suppressed: 0 });
    if (this.#keys.size > this.#maxKeys) {
      const oldest = this.#keys.keys().next();
      if (oldest.done !== true) this.#keys.delete(oldest.value);
    }
    return { log: true, suppressed };
  }
}
