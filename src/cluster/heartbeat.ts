/**
 * A daemon's heartbeat, sent from a thread of its own with a NATS connection of its own: the cluster counts a daemon
 * as alive while its process runs, not only while its event loop is free. A daemon busy with a burst keeps its
 * partitions (its utterances just take longer); one that is killed stops beating at once and its partitions move.
 * A daemon whose main thread stops answering the thread for `stallMs` (hung) stops beating too.
 *
 * The thread is plain CommonJS given as text (`eval`), so it runs the same from the TypeScript sources under the tests
 * and from the build; it loads the NATS client from the path this module resolves.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { NatsAccess } from './nats-auth.js';

const THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
const { connect, nkeyAuthenticator, credsAuthenticator } = require(workerData.client);
(async () => {
  // The same access as the daemon's own connection (nats-auth.ts connectOptions), rebuilt from plain data.
  const a = workerData.access;
  const encoder = new TextEncoder();
  const auth = {
    ...(a.user === undefined ? {} : { user: a.user, pass: a.pass }),
    ...(a.token === undefined ? {} : { token: a.token }),
    ...(a.nkeySeed === undefined ? {} : { authenticator: nkeyAuthenticator(encoder.encode(a.nkeySeed)) }),
    ...(a.creds === undefined ? {} : { authenticator: credsAuthenticator(encoder.encode(a.creds)) }),
    ...(a.tls === undefined ? {} : { tls: { ...a.tls } }),
  };
  const nc = await connect({ servers: a.servers, ...auth, name: 'ovos-contests-heartbeat', maxReconnectAttempts: -1, reconnectTimeWait: 250, ...workerData.pings });
  let leaving = false;
  let boot = workerData.boot;
  let seq = 0;
  let lastSeen = Date.now();
  const beat = () => {
    if (Date.now() - lastSeen > workerData.stallMs) return;
    nc.publish(workerData.subject, JSON.stringify({ node: workerData.node, leaving, boot, seq, ends: true, sync: true }));
  };
  const timer = setInterval(beat, workerData.heartbeatMs);
  parentPort.on('message', (message) => {
    if (message === 'stop') {
      clearInterval(timer);
      nc.drain().catch(() => {}).finally(() => process.exit(0));
      return;
    }
    lastSeen = Date.now();
    seq = message.seq;
    if (message.leaving && !leaving) {
      leaving = true;
      beat();
    }
  });
  beat();
  parentPort.postMessage('ready');
})().catch((error) => parentPort.postMessage({ error: String(error) }));
`;

export interface Heartbeat {
  /**
   * The main thread is alive (call every heartbeat); `leaving`: the daemon is handing its partitions on; `seq`: the
   * last number it published in its run (redelivery.ts: a receiver that has not had it asks for it).
   */
  alive(leaving: boolean, seq: number): void;
  stop(): Promise<void>;
}

export async function startHeartbeat(options: { readonly access: NatsAccess; readonly pings: { readonly pingInterval: number; readonly maxPingOut: number }; readonly node: string; readonly boot: string; readonly subject: string; readonly heartbeatMs: number; readonly stallMs: number }): Promise<Heartbeat> {
  const client = createRequire(import.meta.url).resolve('@nats-io/transport-node');
  const worker = new Worker(THREAD, { eval: true, workerData: { ...options, access: { ...options.access, servers: [...options.access.servers], notes: [] }, client } });
  worker.unref();
  await new Promise<void>((resolve, reject) => {
    worker.once('message', (message: unknown) => (message === 'ready' ? resolve() : reject(new Error(`heartbeat thread: ${JSON.stringify(message)}`))));
    worker.once('error', reject);
  });
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  return {
    alive: (leaving, seq) => worker.postMessage({ leaving, seq }),
    stop: async () => {
      worker.postMessage('stop');
      const timer = setTimeout(() => void worker.terminate(), 2_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
