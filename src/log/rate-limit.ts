/**
 * Minimal log rate limiter: at most `burst` lines (default one) per key per `windowMs`, reporting how many were
 * suppressed since the last window's lines. Used wherever a `warn` could otherwise repeat per utterance (skill timeouts, refused
 * registrations, unknown pipeline ids): the first occurrence is logged, the rest are counted into the next line.
 * Keys come off the bus (skill ids), so at most `maxKeys` are remembered; the oldest are forgotten first.
 */
export class LogRateLimiter {
  readonly #windowMs: number;
  readonly #maxKeys: number;
  readonly #burst: number;
  readonly #keys = new Map<string, { at: number; lines: number; suppressed: number }>();

  /** `burst`: lines logged per key in one window before the rest are counted (default 1). */
  constructor(windowMs: number, maxKeys = 1024, burst = 1) {
    this.#windowMs = windowMs;
    this.#maxKeys = maxKeys;
    this.#burst = burst;
  }

  shouldLog(key: string, now: number): { readonly log: boolean; readonly suppressed: number } {
    const entry = this.#keys.get(key);
    if (entry !== undefined && now - entry.at < this.#windowMs) {
      if (entry.lines < this.#burst) {
        entry.lines += 1;
        return { log: true, suppressed: 0 };
      }
      entry.suppressed += 1;
      return { log: false, suppressed: entry.suppressed };
    }
    const suppressed = entry?.suppressed ?? 0;
    this.#keys.delete(key); // re-insert: Map order is then oldest-logged first
    this.#keys.set(key, { at: now, lines: 1, suppressed: 0 });
    if (this.#keys.size > this.#maxKeys) {
      const oldest = this.#keys.keys().next();
      if (oldest.done !== true) this.#keys.delete(oldest.value);
    }
    return { log: true, suppressed };
  }
}
