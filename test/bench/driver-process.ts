/**
 * Child-process entry of the mixed-load benchmark (`mixed-load.ts`): the voice front end, in a process of its own so
 * that neither the daemon nor the skills pay for it. It keeps `concurrency` sessions busy back to back — each
 * session's next utterance is published the moment its previous one's `ovos.utterance.handled` arrives — or, with
 * `ratePerSecond` (open load), publishes at that steady rate over `concurrency` sessions in turn; it cycles
 * through the given kinds of utterance, and counts, per utterance, every `handled` and every spoken line until a
 * grace period after the last one: lost (no `handled`, or not the expected answer) and doubled (more than one
 * `handled` or spoken line) are counted from what a user would hear. (`load-driver.ts` `runLoad` keeps N in flight
 * too, but stops watching an utterance at its first `handled` — a double would go unseen — and asks one text only.)
 */
import { performance } from 'node:perf_hooks';
import { createMessage, utteranceIdOf, type Message } from '../../src/bus/message.js';
import { BusClient } from '../../src/bus/ws-client.js';
import { DEFAULT_CONFIG } from '../../src/config/defaults.js';
import { silentLogger } from '../../src/log/logger.js';

export interface UtteranceKind {
  readonly name: string;
  readonly utterance: string;
  /** What the user must hear (`ovos.utterance.speak` data.utterance) for the utterance to count as answered. */
  readonly expect: string;
}

export interface DriverPlan {
  readonly url: string;
  readonly runId: string;
  readonly total: number;
  readonly concurrency: number;
  readonly kinds: readonly UtteranceKind[];
  /**
   * Open load: publish at this steady rate (utterances/s, spread over `concurrency` sessions in turn) whatever the
   * daemon's pace, instead of keeping `concurrency` sessions busy back to back — the latency a user sees below
   * saturation, where a closed loop only ever measures the queue it builds (Little's law).
   */
  readonly ratePerSecond?: number;
  /** After the last `handled`: how long doubles are still looked for. */
  readonly graceMs: number;
  /** The run gives up (and reports what it has) after this. */
  readonly timeoutMs: number;
}

export interface DriverResult {
  readonly runId: string;
  readonly published: number;
  readonly handled: number;
  readonly wallMs: number;
  readonly perSecond: number;
  /** Per kind: published → first `handled`, ms. */
  readonly latencies: Readonly<Record<string, number[]>>;
  /** Never handled, or handled without the expected answer spoken. */
  readonly lost: number;
  /** More than one `handled` or more than one spoken line. */
  readonly doubled: number;
  /** Up to 5 examples of what went wrong, for the report. */
  readonly examples: readonly string[];
  /** The run hit `timeoutMs` before every utterance was handled (what was in flight counts as lost). */
  readonly timedOut: boolean;
}

export type ToDriver = { readonly type: 'run'; readonly plan: DriverPlan } | { readonly type: 'stop' };
export type FromDriver = { readonly type: 'ready' } | { readonly type: 'result'; readonly result: DriverResult } | { readonly type: 'failed'; readonly message: string };

const HANDLED = 'ovos.utterance.handled';
const SPEAK = 'ovos.utterance.speak';

interface Flight {
  readonly kind: UtteranceKind;
  readonly slot: number;
  readonly startedAt: number;
  handled: number;
  readonly spoken: string[];
}

function send(message: FromDriver): void {
  if (process.connected) process.send?.(message);
}

function run(client: BusClient, plan: DriverPlan): Promise<DriverResult> {
  const flights = new Map<string, Flight>();
  const latencies: Record<string, number[]> = Object.fromEntries(plan.kinds.map((kind) => [kind.name, []]));
  let published = 0;
  let handled = 0;
  let lastHandledAt = 0;
  const startedAt = performance.now();

  const open = plan.ratePerSecond !== undefined;
  // `scheduledAt`: in open load, when the steady rate said this one was due — latency counts from then, so a tick
  // that came late (the driver's own loop busy) does not hide its lag (no coordinated omission).
  const publishNext = (slot: number, scheduledAt = performance.now()): void => {
    if (published >= plan.total) return;
    const kind = plan.kinds[published % plan.kinds.length]!;
    const utteranceId = `${plan.runId}-u${published++}`;
    flights.set(utteranceId, { kind, slot, startedAt: scheduledAt, handled: 0, spoken: [] });
    const context = { source: 'bench-driver', destination: 'orchestrator', session: { session_id: `${plan.runId}-s${slot}` }, utterance_id: utteranceId };
    client.publish(createMessage('ovos.utterance.handle', { utterances: [kind.utterance], lang: 'en-US' }, context));
  };

  return new Promise<DriverResult>((resolve) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const finish = (timedOut: boolean): void => {
      clearTimeout(timer);
      clearInterval(ticker);
      unsubscribe();
      let lost = 0;
      let doubled = 0;
      const examples: string[] = timedOut ? [`timed out after ${plan.timeoutMs} ms: ${handled}/${plan.total} handled, ${published - handled} in flight`] : [];
      for (const [id, flight] of flights) {
        const answered = flight.handled > 0 && flight.spoken.includes(flight.kind.expect);
        if (!answered) {
          lost += 1;
          if (examples.length < 5) examples.push(`${id} (${flight.kind.name}) lost: handled ${flight.handled}, spoke ${JSON.stringify(flight.spoken)}`);
        }
        if (flight.handled > 1 || flight.spoken.length > 1) {
          doubled += 1;
          if (examples.length < 5) examples.push(`${id} (${flight.kind.name}) doubled: handled ${flight.handled}, spoke ${JSON.stringify(flight.spoken)}`);
        }
      }
      const wallMs = lastHandledAt - startedAt;
      resolve({ runId: plan.runId, published, handled, wallMs, perSecond: (handled / wallMs) * 1000, latencies, lost, doubled, examples, timedOut });
    };
    const unsubscribe = client.subscribe((message: Message) => {
      if (message.type !== HANDLED && message.type !== SPEAK) return;
      const utteranceId = utteranceIdOf(message);
      const flight = utteranceId === undefined ? undefined : flights.get(utteranceId);
      if (flight === undefined) return;
      if (message.type === SPEAK) {
        flight.spoken.push(String(message.data['utterance']));
        return;
      }
      flight.handled += 1;
      if (flight.handled > 1) return;
      const now = performance.now();
      latencies[flight.kind.name]!.push(now - flight.startedAt);
      handled += 1;
      lastHandledAt = now;
      if (handled === plan.total) {
        clearTimeout(timer);
        clearInterval(ticker);
        timer = setTimeout(() => finish(false), plan.graceMs);
      } else if (!open) {
        publishNext(flight.slot);
      }
    });
    timer = setTimeout(() => finish(true), plan.timeoutMs);
    // Open load: every millisecond tick publishes what the steady rate owes by now (timers are not exact).
    const ticker = open
      ? setInterval(() => {
          // The k-th (from 0) is due k / rate after the start: the first at once.
          const due = Math.min(plan.total, Math.floor(((performance.now() - startedAt) * plan.ratePerSecond!) / 1000) + 1);
          while (published < due) publishNext(published % plan.concurrency, startedAt + (published * 1000) / plan.ratePerSecond!);
          if (published >= plan.total) clearInterval(ticker);
        }, 1)
      : undefined;
    if (!open) for (let slot = 0; slot < Math.min(plan.concurrency, plan.total); slot++) publishNext(slot);
  });
}

let client: BusClient | undefined;

process.on('message', (message: ToDriver) => {
  if (message.type === 'stop') {
    void client?.close().finally(() => process.disconnect());
    return;
  }
  const { plan } = message;
  const start = async (): Promise<void> => {
    if (client === undefined) {
      client = new BusClient({
        url: plan.url,
        heartbeatMs: DEFAULT_CONFIG.bus.heartbeatMs,
        reconnectInitialMs: DEFAULT_CONFIG.bus.reconnectInitialMs,
        reconnectMaxMs: DEFAULT_CONFIG.bus.reconnectMaxMs,
        maxFrameBytes: DEFAULT_CONFIG.bus.maxFrameBytes,
        logger: silentLogger(),
      });
      client.connect();
      await client.waitUntilUp(5_000);
    }
    send({ type: 'result', result: await run(client, plan) });
  };
  start().catch((error: unknown) => send({ type: 'failed', message: error instanceof Error ? error.message : String(error) }));
});
process.on('disconnect', () => void client?.close());
send({ type: 'ready' });
