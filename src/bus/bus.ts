/**
 * The one narrow interface every component talks to. The embedded server, the client of an existing OVOS
 * messagebus and (later) a NATS transport all implement it; nothing else in the project knows which it is.
 *
 * Delivery contract: every participant sees every message exactly once, in one order, including its own
 * publications (ovos-messagebus re-broadcasts to the sender too).
 */
import type { Message } from './message.js';

export type Unsubscribe = () => void;

export type BusStatus = { readonly up: true } | { readonly up: false; readonly reason: string };

export interface Bus {
  publish(message: Message): void;
  subscribe(listener: (message: Message) => void): Unsubscribe;
  /** Connection changes (a client's socket dropping); in-process buses never go down. */
  onStatus(listener: (status: BusStatus) => void): Unsubscribe;
}
