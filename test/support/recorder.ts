/** Recording what arrives over a socket, and waiting on it without sleeping: shared by the websocket tests. */

/** How long a test waits for something before it fails (a failure guard only, never a pause). */
export const GUARD_MS = 10_000;

/** Everything seen so far, plus promises that resolve on the first matching item (already seen or yet to come). */
export class Recorder<T> {
  readonly items: T[] = [];
  readonly #waiters = new Set<{ readonly predicate: (item: T) => boolean; readonly resolve: (item: T) => void }>();

  readonly #listeners: Array<(item: T) => void> = [];

  /** Call `listener` with every item pushed from now on (a scripted peer reacting to what arrives). */
  subscribe(listener: (item: T) => void): void {
    this.#listeners.push(listener);
  }

  push(item: T): void {
    this.items.push(item);
    for (const listener of this.#listeners) listener(item);
    for (const waiter of [...this.#waiters]) {
      if (waiter.predicate(item)) {
        this.#waiters.delete(waiter);
        waiter.resolve(item);
      }
    }
  }

  /** Resolves with the first item at or after index `since` matching `predicate`; rejects after `timeoutMs`. */
  waitFor(predicate: (item: T) => boolean, label: string, since = 0, timeoutMs = GUARD_MS): Promise<T> {
    const seen = this.items.slice(since).find(predicate);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise<T>((resolve, reject) => {
      const waiter = {
        predicate,
        resolve: (item: T) => {
          clearTimeout(timer);
          resolve(item);
        },
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(waiter);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${label}`));
      }, timeoutMs);
      this.#waiters.add(waiter);
    });
  }
}
