/**
 * The load generator every latency/throughput benchmark shares: it plays the part of the voice front end on any
 * `Bus` (the in-process `LocalBus` or a `BusClient` of the websocket server). It keeps `concurrency` utterances in
 * flight — one per session, a new one published the moment the previous one's `ovos.utterance.handled` arrives —
 * until `total` have been handled, and times named marks (e.g. "utterance published → dispatch observed") per
 * utterance, correlated by the `context.utterance_id` it sets itself.
 */
import { performance } from 'node:perf_hooks';
import type { Bus } from '../../src/bus/bus.js';
import { createMessage, utteranceIdOf, type Message } from '../../src/bus/message.js';
import { watchGc, type GcActivity } from './stats.js';

export interface LoadOptions {
  readonly bus: Bus;
  /** Utterances to run to `ovos.utterance.handled`. */
  readonly total: number;
  /** Utterances in flight at once; each slot is its own session. */
  readonly concurrency: number;
  readonly utterance: string;
  /** Distinguishes runs on one system (utterance and session ids must not repeat across runs). */
  readonly runId: string;
  /** Named marks: the first message of this utterance matching the predicate stops that mark's clock. */
  readonly marks: Readonly<Record<string, (message: Message) => boolean>>;
  /** Sees every message of an utterance in flight (for per-utterance counters). */
  readonly observe?: (utteranceId: string, message: Message) => void;
  /** The run fails instead of hanging when it has not finished by then. */
  readonly timeoutMs: number;
}

export interface LoadResult {
  readonly completed: number;
  readonly wallMs: number;
  /** Handled utterances per second over the whole run. */
  readonly perSecond: number;
  /** Per mark, one latency sample (ms) per utterance that reached it; `handled` is always present. */
  readonly latencies: Readonly<Record<string, number[]>>;
  /** Utterances handled without reaching a mark (a contest that matched nothing, say), per mark. */
  readonly missed: Readonly<Record<string, number>>;
  /** This process's GC pauses during the run. */
  readonly gc: GcActivity;
}

interface InFlight {
  readonly slot: number;
  readonly startedAt: number;
  readonly pending: Set<string>;
}

const HANDLED = 'ovos.utterance.handled';

export function runLoad(options: LoadOptions): Promise<LoadResult> {
  const { bus, total, concurrency, runId, marks } = options;
  const markNames = Object.keys(marks);
  const latencies: Record<string, number[]> = { handled: [] };
  const missed: Record<string, number> = {};
  for (const name of markNames) {
    latencies[name] = [];
    missed[name] = 0;
  }
  const inFlight = new Map<string, InFlight>();
  let published = 0;
  let completed = 0;
  const gcWatch = watchGc();
  const startedAt = performance.now();

  return new Promise<LoadResult>((resolve, reject) => {
    let unsubscribe = (): void => {};
    const finish = (error?: Error): void => {
      const wallMs = performance.now() - startedAt;
      clearTimeout(guard);
      unsubscribe();
      void gcWatch.stop().then((gc) => {
        if (error) reject(error);
        else resolve({ completed, wallMs, perSecond: (completed / wallMs) * 1000, latencies, missed, gc });
      });
    };
    const guard = setTimeout(
      () => finish(new Error(`load ${runId}: ${completed}/${total} handled after ${options.timeoutMs} ms (${inFlight.size} in flight)`)),
      options.timeoutMs,
    );

    const publishNext = (slot: number): void => {
      if (published >= total) return;
      const utteranceId = `${runId}-u${published++}`;
      const context = {
        source: 'bench-driver',
        destination: 'orchestrator',
        session: { session_id: `${runId}-s${slot}` },
        utterance_id: utteranceId,
      };
      inFlight.set(utteranceId, { slot, startedAt: performance.now(), pending: new Set(markNames) });
      bus.publish(createMessage('ovos.utterance.handle', { utterances: [options.utterance], lang: 'en-US' }, context));
    };

    unsubscribe = bus.subscribe((message) => {
      const utteranceId = utteranceIdOf(message);
      if (utteranceId === undefined) return;
      const flight = inFlight.get(utteranceId);
      if (flight === undefined) return;
      const now = performance.now();
      options.observe?.(utteranceId, message);
      for (const name of flight.pending) {
        if (marks[name]!(message)) {
          latencies[name]!.push(now - flight.startedAt);
          flight.pending.delete(name);
        }
      }
      if (message.type !== HANDLED) return;
      latencies['handled']!.push(now - flight.startedAt);
      for (const name of flight.pending) missed[name]! += 1;
      inFlight.delete(utteranceId);
      completed += 1;
      if (completed === total) finish();
      else publishNext(flight.slot);
    });

    for (let slot = 0; slot < Math.min(concurrency, total); slot++) publishNext(slot);
  });
}
