/**
 * What a local attacker does to the daemon's entrances, for the attack tests (test/integration/attacks.test.ts) and
 * the attack benchmark (test/bench/attacks.ts): raw websocket clients of the bus and of the stage link, and plain
 * HTTP requests. Each attack resolves once the daemon has taken all of it (or cut the attacker off) and says what
 * happened.
 */
import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { WebSocket } from 'ws';

const MB = 1024 * 1024;

/** A websocket opened with `headers`; rejects with `HTTP <status>` when the upgrade is refused. */
export async function open(url: string, headers: Record<string, string> = {}): Promise<WebSocket> {
  const socket = new WebSocket(url, { perMessageDeflate: false, headers });
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
    socket.once('unexpected-response', (_request, response) => reject(new Error(`HTTP ${String(response.statusCode)}`)));
  });
  return socket;
}

/**
 * Sends `frame`; while more than 4 MB waits on this side, resolves once this frame has gone to the kernel (its send
 * callback) or the socket closed — the sender waits for the reader, not for a time.
 */
export function sendPaced(socket: WebSocket, frame: string): Promise<void> | undefined {
  if (socket.bufferedAmount <= 4 * MB) {
    socket.send(frame);
    return undefined;
  }
  return new Promise<void>((resolve) => {
    const closed = (): void => resolve();
    socket.once('close', closed);
    socket.send(frame, () => {
      socket.off('close', closed);
      resolve();
    });
  });
}

/** Send every frame (never more than 4 MB queued on this side), then wait until the bus has read them all. */
export async function pour(socket: WebSocket, frames: Iterable<string>): Promise<void> {
  for (const frame of frames) await sendPaced(socket, frame);
  // The bus sends every message to its sender too: the marker back means everything before it was read.
  const marker = randomUUID();
  const back = new Promise<void>((resolve) => {
    const on = (data: unknown): void => {
      if (!String(data).includes(marker)) return;
      socket.off('message', on);
      resolve();
    };
    socket.on('message', on);
  });
  const closed = new Promise<never>((_resolve, reject) => socket.once('close', (code) => reject(new Error(`the bus closed the connection (${code})`))));
  socket.send(JSON.stringify({ type: 'attack.marker', data: { marker }, context: {} }));
  await Promise.race([back, closed]);
}

/** GET `url` with `headers`: its status, the bytes of its body and how long it took. */
export function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; bytes: number; ms: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers }, (response) => {
      let bytes = 0;
      response.on('data', (chunk: Buffer) => (bytes += chunk.length));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, bytes, ms: performance.now() - started }));
    });
    req.on('error', reject);
    req.end();
  });
}

const legacyRegister = (skillId: string, sessionId?: string): string =>
  JSON.stringify({ type: 'ovos.skills.fallback.register', data: { skill_id: skillId, priority: 50 }, context: sessionId === undefined ? {} : { session: { session_id: sessionId } } });

/**
 * A registry flood inside every count bound: `connections` connections one after another, each registering 32 skills
 * with 256-character ids in 250 sessions with 256-character ids (past its byte budget; together past maxSessions).
 */
export async function registryFlood(url: string, connections = 12): Promise<string> {
  const sessions = Array.from({ length: connections * 170 + 80 }, (_, s) => `s${String(s).padStart(4, '0')}-${'x'.repeat(250)}`);
  for (let a = 0; a < connections; a++) {
    const socket = await open(url);
    const frames = function* (): Generator<string> {
      for (const session of sessions.slice(a * 170, a * 170 + 250)) for (let k = 0; k < 32; k++) yield legacyRegister(`c${a}k${k}-${'y'.repeat(248)}`, session);
    };
    await pour(socket, frames());
    socket.close();
  }
  return `${connections} connections × 8,000 registrations with 256-character ids`;
}

/** Registrations whose ids are past the bound: 200 of 100 kB, then 5,000 distinct ones of 300 characters. */
export async function longIdFlood(url: string): Promise<string> {
  const socket = await open(url);
  await pour(socket, Array.from({ length: 200 }, (_, i) => legacyRegister(`${i}-${'z'.repeat(100_000)}`)));
  await pour(socket, Array.from({ length: 5_000 }, (_, i) => legacyRegister(`${i}-${'w'.repeat(300)}`)));
  socket.close();
  return '200 registrations with 100 kB ids, 5,000 with distinct 300-character ids';
}

/** `count` connections opened at once, held until `hold` resolves (none: closed at once), closed: how many were accepted. */
export async function connectionFlood(url: string, count: number, headers: Record<string, string> = {}, hold: () => Promise<unknown> = async () => {}): Promise<{ opened: number; refused: Readonly<Record<string, number>> }> {
  const attempts = await Promise.allSettled(Array.from({ length: count }, () => open(url, headers)));
  const opened = attempts.flatMap((a) => (a.status === 'fulfilled' ? [a.value] : []));
  const refused: Record<string, number> = {};
  for (const a of attempts) if (a.status === 'rejected') refused[String((a.reason as Error).message)] = (refused[String((a.reason as Error).message)] ?? 0) + 1;
  await hold();
  for (const socket of opened) socket.close();
  return { opened: opened.length, refused };
}

/** A stage request (OVOS-PIPELINE-1 stage match over the plugin's link) for `stage`, padded to about `bytes`. */
export const stageRequest = (requestId: string, stage: string, bytes = 0): string =>
  JSON.stringify({
    type: 'ovos.contests.stage.match',
    data: { version: 1, request_id: requestId, stage, utterances: [bytes > 0 ? 'x'.repeat(bytes) : 'do a barrel roll'], lang: 'en-US', timeout_ms: 600 },
    context: { session: { session_id: `attack-${requestId}` }, utterance_id: `u-${requestId}`, source: 'IntentService', destination: 'ovos-contests' },
  });

/**
 * A stage link client that sends requests and never reads a reply, until the daemon closes it (or `maxBytes` are
 * sent): how much it sent, and whether it was closed.
 */
export async function slowLinkReader(url: string, headers: Record<string, string>, maxBytes = 40 * MB): Promise<{ sentBytes: number; closed: boolean }> {
  const slow = await open(url, headers);
  (slow as unknown as { _socket: { pause(): void } })._socket.pause(); // never reads
  const closed = new Promise<void>((resolve) => slow.once('close', () => resolve()));
  const frame = stageRequest('r', 'unknown_stage_here', 400);
  let sentBytes = 0;
  for (; sentBytes < maxBytes && slow.readyState === slow.OPEN; sentBytes += frame.length) await sendPaced(slow, frame);
  // A guard only: the daemon closes a reader that leaves replies unread within 10 s (endpoint.ts SLOW_READER_MS).
  const guard = new Promise<'open'>((resolve) => setTimeout(() => resolve('open'), 30_000).unref());
  const outcome = await Promise.race([closed.then(() => 'closed' as const), guard]);
  if (outcome === 'open') slow.terminate();
  return { sentBytes, closed: outcome === 'closed' };
}

