/**
 * In-process bus: the delivery core of the embedded server, and the bus unit tests run on.
 *
 * Publication is queued and delivered from a microtask, in FIFO order, never re-entrantly: a message published
 * inside an actor's transition (or inside a listener) reaches listeners only after the publisher returns, and every
 * listener sees the first message before the second. This keeps the in-process bus as asynchronous as a socket,
 * so an in-process skill answering at once cannot overtake the messages its trigger was published with.
 * A listener that throws is reported through `onListenerError` and never stops delivery to the others.
 *
 * It also carries connection identity for the embedded server (and for tests that play skills on connections):
 * `publish(message, connection)` marks where a message came from, `openConnection` and `closeConnection` queue the
 * open and the close behind every message already published, so listeners learn of them in order.
 */
import type { Bus, BusStatus, Unsubscribe } from './bus.js';
import type { Message } from './message.js';

type Queued = Message | { readonly closed: string; readonly late: boolean; readonly heldBack: boolean } | { readonly opened: string };
type ClosedListener = (connection: string, late: boolean, heldBack: boolean) => void;

export class LocalBus implements Bus {
  #listeners: Array<(message: Message) => void> = [];
  #closedListeners: ClosedListener[] = [];
  #openedListeners: Array<(connection: string) => void> = [];
  #queue: Queued[] = [];
  readonly #connections = new WeakMap<Message, string>();
  readonly #elsewhere = new WeakSet<Message>();
  #scheduled = false;
  #idle: Array<() => void> = [];
  readonly #onListenerError: (error: unknown, message: Message) => void;

  constructor(options: { onListenerError?: (error: unknown, message: Message) => void } = {}) {
    this.#onListenerError = options.onListenerError ?? (() => {});
  }

  /**
   * `connection`: the client connection the message arrived on (the embedded server sets it). `answeredElsewhere`:
   * another daemon of a cluster heard it first and answers what it asks (`Bus.answeredElsewhere`).
   */
  publish(message: Message, connection?: string, answeredElsewhere = false): void {
    if (connection !== undefined) this.#connections.set(message, connection);
    if (answeredElsewhere) this.#elsewhere.add(message);
    this.#enqueue(message);
  }

  connectionOf(message: Message): string | undefined {
    return this.#connections.get(message);
  }

  answeredElsewhere(message: Message): boolean {
    return this.#elsewhere.has(message);
  }

  /** The client connection `connection` is gone: listeners hear it after everything it sent (`late`, `heldBack`: see `Bus`). */
  closeConnection(connection: string, late = false, heldBack = false): void {
    this.#enqueue({ closed: connection, late, heldBack });
  }

  onConnectionClosed(listener: ClosedListener): Unsubscribe {
    this.#closedListeners = [...this.#closedListeners, listener];
    return () => {
      this.#closedListeners = this.#closedListeners.filter((l) => l !== listener);
    };
  }

  /** A client connection `connection` opened: listeners hear it after everything published before. */
  openConnection(connection: string): void {
    this.#enqueue({ opened: connection });
  }

  onConnectionOpened(listener: (connection: string) => void): Unsubscribe {
    this.#openedListeners = [...this.#openedListeners, listener];
    return () => {
      this.#openedListeners = this.#openedListeners.filter((l) => l !== listener);
    };
  }

  #enqueue(item: Queued): void {
    this.#queue.push(item);
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
      if ('closed' in next) {
        this.#notifyConnection(this.#closedListeners, next.closed, 'bus.connection.closed', next.late, next.heldBack);
        continue;
      }
      if ('opened' in next) {
        this.#notifyConnection(this.#openedListeners, next.opened, 'bus.connection.opened');
        continue;
      }
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

  #notifyConnection(listeners: readonly ClosedListener[], connection: string, type: string, late = false, heldBack = false): void {
    for (const listener of listeners) {
      try {
        listener(connection, late, heldBack);
      } catch (error) {
        try {
          this.#onListenerError(error, { type, data: { connection }, context: {} });
        } catch {
          // as above
        }
      }
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
