/**
 * Child-process entry of the flood benchmark (`flood.ts`): a hostile bus client. It sends `total` frames as fast as
 * the socket takes them (never more than 8 MB queued on its side) — bad JSON, wrong types, `null` fields, 100 KB
 * topics, 50 KB of nesting, spoofed replies for contests that do not exist — and one 30 MB frame (over the daemon's
 * 10 MB frame limit, so the daemon closes that connection: it reconnects and goes on). It reads nothing it does not
 * have to: every valid frame comes back to it too (the bus re-broadcasts to every client), so it is also the slowest
 * consumer the daemon will meet.
 */
import { WebSocket } from 'ws';

export interface FloodPlan {
  readonly url: string;
  readonly total: number;
}

export type ToFlood = { readonly type: 'run'; readonly plan: FloodPlan };
export type FromFlood = { readonly type: 'done'; readonly sent: number; readonly reconnects: number; readonly ms: number } | { readonly type: 'failed'; readonly message: string };

const NEST = 25_000;
const KINDS: ReadonlyArray<(i: number) => string> = [
  () => '{"type": "ovos.utterance.handle", "data": {',
  () => 'not json at all',
  () => '[1, 2, 3]',
  () => 'null',
  (i) => JSON.stringify({ type: i, data: {} }),
  () => JSON.stringify({ type: 'ovos.utterance.handle', data: 'a string', context: {} }),
  () => JSON.stringify({ type: 'ovos.utterance.handle', data: { utterances: null }, context: { session: null } }),
  () => JSON.stringify({ type: 'ovos.utterance.handle', data: { utterances: [null, 5] }, context: { session: { session_id: 7 } } }),
  (i) => JSON.stringify({ type: 'ovos.skills.fallback.ping', data: { skill_id: null }, context: { session: { session_id: `flood-${i % 50}` } } }),
  (i) => JSON.stringify({ type: 'x.fallback.pong', data: { skill_id: 'x', can_handle: 'yes' }, context: { session: { session_id: `flood-${i % 50}` }, utterance_id: `u${i}` } }),
  (i) => JSON.stringify({ type: 'ovos.common_query.pong', data: { utterance: 'spoof', skill_id: 'x', can_answer: true }, context: { session: { session_id: `flood-${i % 50}` } } }),
  (i) => JSON.stringify({ type: 'x.common_query.response', data: { utterance: 'spoof', skill_id: 'x', answer: 'no', conf: 2 }, context: { session: { session_id: `flood-${i % 50}` } } }),
  () => JSON.stringify({ type: 'a'.repeat(100_000), data: {} }),
  () => `{"type": "deep", "data": {"x": ${'['.repeat(NEST)}${']'.repeat(NEST)}}}`,
];

async function connect(url: string): Promise<WebSocket> {
  for (;;) {
    const socket = new WebSocket(url, { perMessageDeflate: false, maxPayload: 64 * 1024 * 1024 });
    const ok = await new Promise<boolean>((resolve) => {
      socket.once('open', () => resolve(true));
      socket.once('error', () => resolve(false));
    });
    if (ok) {
      socket.on('error', () => {});
      return socket;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function run(plan: FloodPlan): Promise<void> {
  const started = performance.now();
  let socket = await connect(plan.url);
  let reconnects = 0;
  const big = JSON.stringify({ type: 'huge', data: { blob: 'x'.repeat(30 * 1024 * 1024) } });
  for (let i = 0; i < plan.total; i++) {
    if (socket.readyState !== WebSocket.OPEN) {
      socket.terminate();
      socket = await connect(plan.url);
      reconnects += 1;
    }
    // The one 30 MB frame, half-way through: the daemon refuses it and closes this connection (1009).
    const frame = i === Math.floor(plan.total / 2) ? big : KINDS[i % KINDS.length]!(i);
    socket.send(frame);
    while (socket.bufferedAmount > 8 * 1024 * 1024 && socket.readyState === WebSocket.OPEN) await new Promise((resolve) => setTimeout(resolve, 1));
    if (i % 1_000 === 0) await new Promise((resolve) => setImmediate(resolve));
  }
  while (socket.bufferedAmount > 0 && socket.readyState === WebSocket.OPEN) await new Promise((resolve) => setTimeout(resolve, 5));
  socket.close();
  process.send?.({ type: 'done', sent: plan.total, reconnects, ms: performance.now() - started } satisfies FromFlood);
}

process.on('message', (message: ToFlood) => {
  run(message.plan).catch((error: unknown) => process.send?.({ type: 'failed', message: String(error) } satisfies FromFlood));
});
