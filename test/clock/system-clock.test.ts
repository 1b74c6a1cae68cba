/**
 * The daemon's wall clock (src/clock/clock.ts): a deadline never beats a message that reached the daemon before the
 * deadline fired. Node runs expired timers before it reads sockets in each turn of its loop, so after a busy stretch
 * a plain `setTimeout` deadline fires while an answer sent in time is still unread — how bursts of common-query
 * answers were lost (measured over the websocket). No sleeps: a synchronous busy stretch on loopback makes
 * both conditions certain (the deadline has expired, the bytes are in the socket) before the loop turns again.
 */
import { once } from 'node:events';
import { createServer, connect, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock/clock.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

async function loopbackPair(): Promise<{ client: Socket; server: Socket }> {
  const listener = createServer();
  listener.listen(0, '127.0.0.1');
  await once(listener, 'listening');
  const accepted = once(listener, 'connection');
  const client = connect((listener.address() as AddressInfo).port, '127.0.0.1');
  await once(client, 'connect');
  const [server] = (await accepted) as [Socket];
  cleanups.push(() => {
    client.destroy();
    server.destroy();
    listener.close();
  });
  return { client, server };
}

function busyFor(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // the daemon's event loop, stuck on a burst of work
  }
}

/** From a check-phase callback: arm the deadline, send the answer, stall past both; report the order seen. */
async function race(arm: (fn: () => void, ms: number) => void): Promise<string[]> {
  const { client, server } = await loopbackPair();
  const order: string[] = [];
  const both = new Promise<void>((resolve) => {
    const note = (what: string): void => {
      order.push(what);
      if (order.length === 2) resolve();
    };
    server.once('data', () => note('answer read'));
    setImmediate(() => {
      arm(() => note('deadline'), 5);
      client.write('pong');
      busyFor(40);
    });
  });
  await both;
  return order;
}

describe('systemClock (Node event loop phases)', () => {
  it('control: a plain setTimeout deadline that expired during a busy stretch fires before the answer already in the socket is read', async () => {
    expect(await race((fn, ms) => setTimeout(fn, ms))).toEqual(['deadline', 'answer read']);
  });

  it('COMMON-QUERY-1 §6.3 / §7.2: a systemClock deadline that expired during a busy stretch fires after the answer already received is read', async () => {
    expect(await race((fn, ms) => systemClock.setTimeout(fn, ms))).toEqual(['answer read', 'deadline']);
  });

  it('clearTimeout cancels a deadline before it expires and after it expired but before its callback ran', async () => {
    const fired: string[] = [];
    const early = systemClock.setTimeout(() => fired.push('early'), 1);
    systemClock.clearTimeout(early);
    await new Promise<void>((resolve) => {
      setImmediate(() => {
        // Both 1 ms timers expire in the next turn's timers phase, in arming order: the deadline's expiry first, then
        // the cancel — which must also stop the callback already scheduled for after the I/O phase.
        const late = systemClock.setTimeout(() => fired.push('late'), 1);
        setTimeout(() => systemClock.clearTimeout(late), 1);
        busyFor(5);
        setTimeout(() => setImmediate(() => setImmediate(resolve)), 2);
      });
    });
    systemClock.clearTimeout(undefined);
    expect(fired).toEqual([]);
  });
});
