/**
 * What one daemon writes to the cluster's state bucket (src/cluster/README.md, "Registrations and liveness"): each key's
 * latest value (null: removed), written in the order of the changes, a batch at a time on one connection (JetStream
 * stores them in that order); what cannot be written now (NATS out of reach) is written again once it can, before what
 * changed since unless the same key changed again. And the bucket's delete markers, which its age limit never
 * removes: those older than `MARKER_KEEP_MS` go every `MARKER_SWEEP_MS` (a joining daemon reads a missing key as a
 * removed one), each purged up to itself only, so a key written again meanwhile stays.
 */
import type { JetStreamManager } from '@nats-io/jetstream';
import type { KV, KvEntry } from '@nats-io/kv';
import type { Clock, TimerId } from '../clock/clock.js';
import type { Logger } from '../log/logger.js';
import { STATE_BUCKET } from './subjects.js';

const MARKER_SWEEP_MS = 3_600_000;
const MARKER_KEEP_MS = 30 * 60_000;

export interface StateWriterLinks {
  readonly state: KV;
  readonly jsm: JetStreamManager;
  readonly clock: Clock;
  readonly logger: Logger;
  /** How long to wait before writing again what could not be written (at least 250 ms). */
  readonly retryMs: number;
}

export class StateWriter {
  readonly #links: StateWriterLinks;
  readonly #pending = new Map<string, Uint8Array | null>();
  #writing: Promise<void> | undefined;
  #retry: { readonly timer: TimerId; readonly resolve: () => void } | undefined;
  #sweep: TimerId | undefined;
  #closing = false;

  constructor(links: StateWriterLinks) {
    this.#links = links;
  }

  /** The key `key` becomes `value` (null: removed). */
  write(key: string, value: Uint8Array | null): void {
    this.#pending.delete(key);
    this.#pending.set(key, value);
    this.#writing ??= this.#flush();
  }

  /** Sweeps the delete markers every `MARKER_SWEEP_MS` from now on. */
  sweepMarkers(): void {
    this.#sweep = this.#links.clock.setTimeout(() => {
      this.#sweepNow().catch((error: unknown) => {
        if (!this.#closing) this.#links.logger.warn({ reason: 'cluster_markers_unswept', err: error }, 'cluster: delete markers of the state bucket not removed; tried again later');
      });
      this.sweepMarkers();
    }, MARKER_SWEEP_MS);
  }

  /**
   * Waits up to `boundMs` for what is being written, then stops: the marker sweep ends, and a write waiting to be tried
   * again is tried at once, once, and not again if it fails.
   */
  async close(boundMs: number): Promise<void> {
    const { clock } = this.#links;
    if (this.#writing !== undefined) {
      let bound: TimerId | undefined;
      await Promise.race([this.#writing, new Promise<void>((resolve) => (bound = clock.setTimeout(resolve, boundMs)))]);
      if (bound !== undefined) clock.clearTimeout(bound);
    }
    this.#closing = true;
    if (this.#sweep !== undefined) clock.clearTimeout(this.#sweep);
    if (this.#retry !== undefined) {
      clock.clearTimeout(this.#retry.timer);
      this.#retry.resolve();
    }
  }

  async #flush(): Promise<void> {
    try {
      await this.#writeNow();
    } finally {
      this.#writing = undefined;
    }
    // Changed between the last write and now (a microtask after it): written too.
    if (this.#pending.size > 0 && !this.#closing) this.#writing = this.#flush();
  }

  async #writeNow(): Promise<void> {
    const { state, clock, logger, retryMs } = this.#links;
    while (this.#pending.size > 0) {
      const batch = [...this.#pending];
      this.#pending.clear();
      // Sent together, in order, on one connection: JetStream stores them in that order.
      const results = await Promise.allSettled(batch.map(([key, value]) => (value === null ? state.purge(key) : state.put(key, value))));
      const failed = batch.filter((_, i) => results[i]!.status === 'rejected');
      if (failed.length === 0) continue;
      if (this.#closing) return;
      const error = (results.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason as unknown;
      logger.warn({ reason: 'cluster_state_unwritten', keys: failed.length, err: error }, 'cluster: state not written to the bucket; written again shortly');
      // Before what changed since, unless a key changed again.
      const newer = [...this.#pending];
      this.#pending.clear();
      for (const [key, value] of failed) if (!newer.some(([k]) => k === key)) this.#pending.set(key, value);
      for (const [key, value] of newer) this.#pending.set(key, value);
      await new Promise<void>((resolve) => {
        const timer = clock.setTimeout(() => {
          this.#retry = undefined;
          resolve();
        }, Math.max(250, retryMs));
        this.#retry = { timer, resolve };
      });
    }
  }

  async #sweepNow(): Promise<void> {
    const { state, jsm } = this.#links;
    if ((await state.status()).values === 0) return;
    const markers: KvEntry[] = [];
    const watch = await state.watch();
    for await (const entry of watch) {
      if (entry.operation !== 'PUT' && Date.now() - entry.created.getTime() > MARKER_KEEP_MS) markers.push(entry);
      if (entry.delta === 0 || entry.isUpdate) break;
    }
    watch.stop();
    for (const marker of markers) await jsm.streams.purge(`KV_${STATE_BUCKET}`, { filter: `$KV.${STATE_BUCKET}.${marker.key}`, seq: marker.revision + 1 });
  }
}
