/**
 * Child-process entry of the noisy-neighbour benchmark (`noisy-neighbour.ts`): one loud but well-formed bus client.
 * `frames`: it sends `total` ordinary ~200-byte frames as fast as its socket takes them (never more than 8 MB queued
 * on its side), reading everything the bus sends it, as an ordinary client does, until the bus has echoed its last. `utterances`: it publishes `total`
 * utterances at once, over `sessions` sessions, and counts their `ovos.utterance.handled` — answered, or ended with
 * an error (which one) — until every one has its handled.
 */
import { performance } from 'node:perf_hooks';
import { WebSocket } from 'ws';

export interface NoisyPlan {
  readonly url: string;
  readonly mode: 'frames' | 'utterances';
  readonly total: number;
  readonly sessions?: number;
  readonly timeoutMs?: number;
}

export type ToNoisy = { readonly type: 'run'; readonly plan: NoisyPlan };
export type FromNoisy =
  | { readonly type: 'done'; readonly sent: number; readonly ms: number; readonly handled: number; readonly doubled: number; readonly errors: Readonly<Record<string, number>> }
  | { readonly type: 'failed'; readonly message: string };

const pad = 'x'.repeat(120);

async function open(url: string): Promise<WebSocket> {
  const socket = new WebSocket(url, { perMessageDeflate: false });
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  return socket;
}

async function run(plan: NoisyPlan): Promise<void> {
  const socket = await open(plan.url);
  const started = performance.now();
  const seen = new Map<string, number>();
  const errors: Record<string, number> = {};
  let handled = 0;
  let doubled = 0;
  // Frames: done when the bus has echoed the last one back (it re-broadcasts to the sender too) — sent is not read.
  let echoed = -1;
  const last = `"i":${plan.total - 1},`;
  socket.on('message', (data) => {
    const text = String(data);
    if (plan.mode === 'frames') {
      if (text.includes('"noisy.chatter"') && text.includes(last)) echoed = plan.total - 1;
      return;
    }
    if (!text.includes('"ovos.utterance.handled"')) return;
    const message = JSON.parse(text) as { type: string; data: { error?: string }; context: { utterance_id?: string } };
    const id = message.context.utterance_id;
    if (message.type !== 'ovos.utterance.handled' || id === undefined || !id.startsWith('noisy-')) return;
    const count = (seen.get(id) ?? 0) + 1;
    seen.set(id, count);
    if (count > 1) doubled += 1;
    else {
      handled += 1;
      const error = message.data.error;
      if (error !== undefined) errors[error] = (errors[error] ?? 0) + 1;
    }
  });
  if (plan.mode === 'frames') {
    for (let i = 0; i < plan.total; i++) {
      socket.send(JSON.stringify({ type: 'noisy.chatter', data: { i, text: pad }, context: { session: { session_id: 'noisy' } } }));
      while (socket.bufferedAmount > 8 * 1024 * 1024) await new Promise((resolve) => setTimeout(resolve, 1));
      if (i % 1_000 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    const deadline = performance.now() + (plan.timeoutMs ?? 120_000);
    while (echoed < plan.total - 1 && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 2));
  } else {
    const sessions = plan.sessions ?? 100;
    for (let i = 0; i < plan.total; i++) {
      socket.send(
        JSON.stringify({
          type: 'ovos.utterance.handle',
          data: { utterances: ['what is the meaning of life'], lang: 'en-US' },
          context: { session: { session_id: `noisy-s${i % sessions}` }, utterance_id: `noisy-${i}` },
        }),
      );
    }
    const deadline = performance.now() + (plan.timeoutMs ?? 120_000);
    while (handled < plan.total && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const ms = performance.now() - started;
  socket.close();
  process.send?.({ type: 'done', sent: plan.total, ms, handled, doubled, errors } satisfies FromNoisy);
}

process.on('message', (message: ToNoisy) => {
  run(message.plan).catch((error: unknown) => process.send?.({ type: 'failed', message: String(error) } satisfies FromNoisy));
});
