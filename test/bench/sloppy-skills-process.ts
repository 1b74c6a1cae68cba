/**
 * Skills that conform to the letter but not to our habits, in a child process of their own (`fork`, IPC), each over
 * its own connection to the daemon (`argv[2]`, the bus URL):
 *  - `thinker` (common query): claims every "what is …" question 200 ms after the ping (a model call before it claims; §6.3
 *    allows the whole 500 ms poll), `latency_ms` 50, then answers "thinker: <question>" at conf 0.8 after 10 ms;
 *  - `sloppy` (common query): claims "who painted …" at once with `latency_ms` 300, and responds 30 ms after its
 *    request with an answer but no `conf`;
 *  - `fresh.fb` (fallback, priority 40): pongs — `can_handle: true` to "do a barrel roll …", false to anything else —
 *    with a pong built as a fresh message (no session, no utterance or contest id), and completes its handler.
 * Sends `{ ready: true }` once every skill is connected and registered.
 */
import { WebSocket } from 'ws';

type Frame = { type: string; data: Record<string, unknown>; context: Record<string, unknown> };

const open = (url: string, onFrame: (socket: WebSocket, frame: Frame) => void): Promise<WebSocket> =>
  new Promise((resolve, reject) => {
    const socket = new WebSocket(url);
    socket.once('open', () => resolve(socket));
    socket.once('error', reject);
    socket.on('message', (raw) => onFrame(socket, JSON.parse(String(raw)) as Frame));
  });
const send = (socket: WebSocket, type: string, data: Record<string, unknown>, context: Record<string, unknown>): void => {
  if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ type, data, context }));
};
const later = (ms: number, fn: () => void): void => void setTimeout(fn, ms);

async function main(): Promise<void> {
  const url = process.argv[2]!;
  await open(url, (socket, m) => {
    const utterance = m.data['utterance'];
    if (m.type === 'ovos.common_query.ping' && typeof utterance === 'string' && utterance.startsWith('what is')) {
      later(200, () => send(socket, 'ovos.common_query.pong', { utterance, skill_id: 'thinker', can_answer: true, latency_ms: 50 }, m.context));
    }
    if (m.type === 'thinker:common_query') later(10, () => send(socket, 'thinker.common_query.response', { utterance, skill_id: 'thinker', answer: `thinker: ${String(utterance)}`, conf: 0.8 }, m.context));
  });
  await open(url, (socket, m) => {
    const utterance = m.data['utterance'];
    if (m.type === 'ovos.common_query.ping' && typeof utterance === 'string' && utterance.startsWith('who painted')) {
      send(socket, 'ovos.common_query.pong', { utterance, skill_id: 'sloppy', can_answer: true, latency_ms: 300 }, m.context);
    }
    if (m.type === 'sloppy:common_query') later(30, () => send(socket, 'sloppy.common_query.response', { utterance, skill_id: 'sloppy', answer: 'Leonardo, I think' }, m.context));
  });
  const fresh = await open(url, (socket, m) => {
    const utterances = m.data['utterances'];
    if (m.type === 'fresh.fb.fallback.ping' && Array.isArray(utterances)) {
      send(socket, 'fresh.fb.fallback.pong', { skill_id: 'fresh.fb', can_handle: String(utterances[0]).startsWith('do a barrel roll') }, {});
    }
    if (m.type === 'fresh.fb:fallback') send(socket, 'mycroft.skill.handler.complete', {}, { ...m.context, skill_id: 'fresh.fb' });
  });
  send(fresh, 'ovos.fallback.register', { skill_id: 'fresh.fb', priority: 40 }, { skill_id: 'fresh.fb', session: { session_id: 'default' } });
  process.send?.({ ready: true });
}

void main();
