/**
 * A TCP proxy on loopback for the cluster tests: a daemon that talks to NATS through it can be cut off — the proxy
 * stops reading both ways, the connections stay open and silent, as across a network partition — and let through
 * again, everything that waited then flowing on; or its connections can be dropped and new ones refused (a NATS
 * server out of reach: the client notices at once and keeps reconnecting) until healed. NATS itself is untouched.
 */
import { connect, createServer, type Socket } from 'node:net';

export interface TcpProxy {
  readonly url: string;
  cut(): void;
  /** Every connection closed, and every new one, until `heal`. */
  drop(): void;
  heal(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  const pairs = new Set<{ readonly client: Socket; readonly upstream: Socket; readonly waiting: Array<[Socket, Buffer]> }>();
  let cut = false;
  let refusing = false;
  const server = createServer((client) => {
    if (refusing) {
      client.destroy();
      return;
    }
    const upstream = connect(targetPort, '127.0.0.1');
    const pair = { client, upstream, waiting: [] as Array<[Socket, Buffer]> };
    pairs.add(pair);
    const forward = (to: Socket) => (chunk: Buffer): void => {
      if (cut) pair.waiting.push([to, chunk]);
      else to.write(chunk);
    };
    client.on('data', forward(upstream));
    upstream.on('data', forward(client));
    for (const socket of [client, upstream]) {
      socket.on('error', () => {});
      socket.on('close', () => {
        pairs.delete(pair);
        client.destroy();
        upstream.destroy();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `nats://127.0.0.1:${port}`,
    cut: () => {
      cut = true;
    },
    drop: () => {
      refusing = true;
      for (const pair of pairs) {
        pair.client.destroy();
        pair.upstream.destroy();
      }
    },
    heal: () => {
      cut = false;
      refusing = false;
      for (const pair of pairs) for (const [to, chunk] of pair.waiting.splice(0)) to.write(chunk);
    },
    close: async () => {
      for (const pair of pairs) {
        pair.client.destroy();
        pair.upstream.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
