/**
 * What one daemon publishes on NATS (src/cluster/README.md, "Subjects" and "Redelivery"): every message in an envelope
 * numbered in this run's order (subjects.ts), kept a while for redelivery (redelivery.ts `SentRing`), and handed to
 * the NATS client together with the rest of its turn of the event loop, after the turn's I/O — one socket write for
 * the frames of every client message and NATS delivery the turn handled, where the client alone would write once per
 * microtask checkpoint. The ends of this daemon's utterances that no other daemon needs one by one travel as one
 * digest per turn (`ENDS_SUBJECT`).
 */
import type { Logger } from '../log/logger.js';
import type { SentRing } from './redelivery.js';
import { ENDS_SUBJECT, envelope } from './subjects.js';

/** The most ends one digest carries: a turn that ends more publishes more digests (so does one whose ends come near `max_payload` in bytes). */
const ENDS_PER_DIGEST = 1_000;
const encoder = new TextEncoder();

export interface PublisherLinks {
  readonly node: string;
  readonly boot: string;
  readonly logger: Logger;
  readonly ring: SentRing;
  /** The largest message NATS takes. */
  readonly maxPayload: () => number;
  /** Hands one message to the NATS client. */
  readonly publish: (subject: string, data: Uint8Array) => void;
  /** Whether the daemon is stopping (a failure to publish is expected then). */
  readonly closing: () => boolean;
  /** A turn's messages went to the NATS client, through number `through`. */
  readonly handed: (through: number) => void;
}

export class Publisher {
  readonly #links: PublisherLinks;
  #seq = 0;
  /** Subject, data, subject, data, …: published at the end of the event loop's turn (`send`). */
  readonly #outbox: Array<string | Uint8Array> = [];
  #scheduled = false;
  /** Ends kept here this turn (each a JSON array), published as one digest with the outbox. */
  readonly #ends: string[] = [];
  #endsBytes = 0;

  constructor(links: PublisherLinks) {
    this.#links = links;
  }

  /** The number of the last message published (0 before the first). */
  get seq(): number {
    return this.#seq;
  }

  /**
   * `payload` on `subject`, numbered next, from `connection` and of `partition` when it has them; undefined (not
   * published, not numbered) when its envelope is larger than NATS takes.
   */
  publish(subject: string, connection: string | undefined, partition: number | undefined, payload: Uint8Array): number | undefined {
    const seq = this.#seq + 1;
    const data = envelope(this.#links.node, this.#links.boot, seq, connection, partition, payload);
    if (data.length > this.#links.maxPayload()) return undefined;
    this.#seq = seq;
    this.#links.ring.push(seq, subject, data);
    this.#outbox.push(subject, data);
    this.schedule();
    return seq;
  }

  /**
   * An end kept here, in the digest: the number the digest will have, or undefined when the end alone would not fit in
   * one. Numbered after everything published so far: whatever the server confirms that far was written with the
   * digest, so contest output held as this number waits for the digest too.
   */
  digestEnd(item: string): number | undefined {
    const bytes = Buffer.byteLength(item) + 1;
    const room = this.#links.maxPayload() - 1024;
    if (bytes > room) return undefined;
    if (this.#endsBytes + bytes > room) this.flushEnds();
    this.#ends.push(item);
    this.#endsBytes += bytes;
    const seq = this.#seq + 1;
    if (this.#ends.length >= ENDS_PER_DIGEST) this.flushEnds();
    else this.schedule();
    return seq;
  }

  /** The ends kept so far, as one numbered message every daemon reads; nothing when none is kept. */
  flushEnds(): void {
    if (this.#ends.length === 0) return;
    const digest = `[${this.#ends.splice(0).join(',')}]`;
    this.#endsBytes = 0;
    // Never over `max_payload`: `digestEnd` keeps it within.
    this.publish(ENDS_SUBJECT, undefined, undefined, encoder.encode(digest));
  }

  /** Sends the outbox after this turn's I/O (once, however often asked within the turn). */
  schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(this.send);
  }

  /** What this turn published, to the NATS client now, in order. */
  readonly send = (): void => {
    this.flushEnds();
    this.#scheduled = false;
    const outbox = this.#outbox.splice(0);
    try {
      for (let i = 0; i < outbox.length; i += 2) this.#links.publish(outbox[i] as string, outbox[i + 1] as Uint8Array);
    } catch (error) {
      // Closed for good (the daemon is stopping): what is left cannot travel; redelivery covers nothing after that.
      if (!this.#links.closing()) this.#links.logger.warn({ reason: 'cluster_publish_failed', err: error }, 'cluster: could not hand frames to NATS');
    }
    this.#links.handed(this.#seq);
  };
}
