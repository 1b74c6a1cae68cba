/**
 * In-process bus: the delivery core of the embedded server, and the bus unit tests run on.
 *
 * Publication is queued and delivered from a microtask, in FIFO order, never re-entrantly: a message published
 * inside an actor's transition (or inside a listener) reaches listeners only after the publisher returns, and every
 * listener sees the first message before the second. This keeps the in-process bus as asynchronous as a socket,
 * so an in-process skill answering at once cannot overtake the messages its trigger was published with.
 * A listener that throws is reported through `onListenerError` and never stops delivery to the others.
 */
import type { Bus, BusStatus, Unsubscribe } from './bus.js';
import type { Message } from './message.js';

export class LocalBus implements Bus {
  #listeners: Array<(message: Message) => void> = [];
  #queue: Message[] = [];
  #scheduled = false;
  #idle: Array<() => void> = [];
  readonly #onListenerError: (error: unknown, message: Message) => void;

  constructor(options: { onListenerError?: (error: unknown, message: Message) => void } = {}) {
    this.#onListenerError = options.onListenerError ?? (() => {});
  }

  publish(message: Message): void {
    this.#queue.push(message);
    if (this.#scheduled) return;
    this.#scheduled = true;
    queueMicrotask(() => this.#drain());
  }

  /** Resolves once everything published so far (and everything that publishes in turn) has been delivered. */
  idle(): Promise<void> {
    if (!this.#scheduled) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  #drain(): void {
    for (let i = 0; i < this.#queue.length; i++) {
      const next = this.#queue[i]!;
      for (const listener of this.#listeners) {
        try {
          listener(next);
        } catch (error) {
          try {
            this.#onListenerError(error, next);
          } catch {
            // An error reporter that throws must not lose the rest of the queue.
          }
        }
      }
    }
    this.#queue = [];
    this.#scheduled = false;
    const waiting = this.#idle;
    this.#idle = [];
    for (const resolve of waiting) resolve();
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
