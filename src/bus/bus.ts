/**
 * The one narrow interface every component talks to. The embedded server, the client of an existing OVOS
 * messagebus and any other transport implement it; nothing else in the project knows which it is.
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
  /**
   * Connection identity, where the bus has it (the embedded server; `LocalBus` for tests): the id of the client
   * connection a delivered message arrived on, or undefined (published in-process, or a foreign bus, which shows
   * no identity). Absent on buses that never know.
   */
  connectionOf?(message: Message): string | undefined;
  /**
   * A client connection closed. Reported after every message that arrived on it has been delivered, so a listener
   * never sees a message from a connection it was already told is gone. `late`: the close may have been noticed
   * after the peer's bus client connected again over a new connection — noticed only by the server's heartbeat (up
   * to two heartbeats after the peer was gone), or a peer not connected over loopback (another host, a container: a
   * network outage can deliver its close after its new connection); false for a peer over loopback that closed it,
   * or whose process died, as it happened. `heldBack`: what it sent last may have gone unread with it — the bus was
   * holding its frames back when or shortly before it closed (fair share paused its socket, now or within the longest
   * pause and the windows around it), or cut it (an oversized frame, a slow consumer); false when everything it sent
   * was read as it came.
   */
  onConnectionClosed?(listener: (connection: string, late: boolean, heldBack: boolean) => void): Unsubscribe;
  /** A client connection opened (before anything it sends is delivered). */
  onConnectionOpened?(listener: (connection: string) => void): Unsubscribe;
  /**
   * True when what a delivered message asks for (an introspection request, a registration to refuse, a carrier to
   * reject) is answered by another process on the same bus: in a cluster, a message this daemon heard from another
   * daemon, whose own plugins read it first and answer it (src/cluster/README.md). Absent, or false: answered here.
   */
  answeredElsewhere?(message: Message): boolean;
}
