/**
 * In-process bus: the delivery core of the embedded server, and the bus unit tests run on.
 *
 * Publication is queued and drained in FIFO order, never re-entrantly: if a listener publishes while a message is
 * being delivered, every listener still sees the first message before the second. A listener that throws is
 * reported through `onListenerError` and never stops delivery to the others.
 */
import type { Bus, BusStatus, Unsubscribe } from './bus.js';
import type { Message } from './message.js';

export class LocalBus implements Bus {
  #listeners: Array<(message: Message) => void> = [];
  #queue: Message[] = [];
  #draining = false;
  readonly #onListenerError: (error: unknown, message: Message) => void;

  constructor(options: { onListenerError?: (error: unknown, message: Message) => void } = {}) {
    this.#onListenerError = options.onListenerError ?? (() => {});
  }

  publish(message: Message): void {
    this.#queue.push(message);
    if (this.#draining) return;
    this.#draining = true;
    try {
      for (let i = 0; i < this.#queue.length; i++) {
        const next = this.#queue[i]!;
        for (const listener of this.#listeners) {
          try {
            listener(next);
          } catch (error) {
            this.#onListenerError(error, next);
          }
        }
      }
    } finally {
      this.#queue = [];
      this.#draining = false;
    }
  }

  subscribe(listener: (message: Message) => void): Unsubscribe {
    // Copy on write: a listener added or removed during delivery takes effect from the next message.
    this.#listeners = [...this.#listeners, listener];
    return () => {
      this.#listeners = this.#listeners.filter((l) => l !== listener);
    };
  }

  onStatus(_listener: (status: BusStatus) => void): Unsubscribe {
    return () => {};
  }
}
