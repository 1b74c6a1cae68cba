import { describe, expect, it } from 'vitest';
import { LocalBus } from '../../src/bus/local-bus.js';
import { createMessage, type Message } from '../../src/bus/message.js';

const msg = (type: string): Message => createMessage(type);

describe('LocalBus', () => {
  it('Bus delivery contract (bus.ts): every subscriber sees every message exactly once, in publication order', async () => {
    const bus = new LocalBus();
    const seen: string[][] = [[], [], []];
    for (const log of seen) bus.subscribe((m) => log.push(m.type));
    for (const type of ['a', 'b', 'c', 'd']) bus.publish(msg(type));
    await bus.idle();
    for (const log of seen) expect(log).toEqual(['a', 'b', 'c', 'd']);
  });

  it('Bus delivery contract (bus.ts): the publisher sees its own publications (ovos-messagebus echoes to the sender)', async () => {
    const bus = new LocalBus();
    const seen: string[] = [];
    bus.subscribe((m) => {
      seen.push(m.type);
      if (m.type === 'ping') bus.publish(msg('pong'));
    });
    bus.publish(msg('ping'));
    await bus.idle();
    expect(seen).toEqual(['ping', 'pong']);
  });

  it('Bus delivery contract (bus.ts): the delivered message is the published object', async () => {
    const bus = new LocalBus();
    const message = createMessage('t', { a: 1 }, { source: 'x' });
    let received: Message | undefined;
    bus.subscribe((m) => (received = m));
    bus.publish(message);
    await bus.idle();
    expect(received).toBe(message);
  });

  it('Bus delivery contract (bus.ts): publishing with no subscriber is a no-op', async () => {
    const bus = new LocalBus();
    expect(() => bus.publish(msg('nobody'))).not.toThrow();
  });

  it('Bus delivery contract (bus.ts): FIFO and non-reentrant — a listener publishing B while handling A: every listener sees A before B', async () => {
    const bus = new LocalBus();
    const log: string[] = [];
    bus.subscribe((m) => {
      log.push(`1:${m.type}`);
      if (m.type === 'A') bus.publish(msg('B'));
    });
    bus.subscribe((m) => log.push(`2:${m.type}`));
    bus.subscribe((m) => log.push(`3:${m.type}`));
    bus.publish(msg('A'));
    await bus.idle();
    expect(log).toEqual(['1:A', '2:A', '3:A', '1:B', '2:B', '3:B']);
  });

  it('Bus delivery contract (bus.ts): nested publications are delivered breadth-first in publication order', async () => {
    const bus = new LocalBus();
    const log: string[] = [];
    bus.subscribe((m) => {
      log.push(m.type);
      if (m.type === 'A') {
        bus.publish(msg('B'));
        bus.publish(msg('C'));
      }
      if (m.type === 'B') bus.publish(msg('D'));
    });
    bus.subscribe((m) => {
      if (m.type === 'A') bus.publish(msg('E'));
    });
    bus.publish(msg('A'));
    await bus.idle();
    expect(log).toEqual(['A', 'B', 'C', 'E', 'D']);
  });

  it('Bus delivery contract (bus.ts): publish returns before delivery (no re-entrancy into the publisher); the queue drains in order', async () => {
    const bus = new LocalBus();
    const log: string[] = [];
    bus.subscribe((m) => {
      log.push(m.type);
      if (m.type === 'A') bus.publish(msg('B'));
    });
    bus.publish(msg('A'));
    log.push('after-publish');
    bus.publish(msg('C'));
    await bus.idle();
    expect(log).toEqual(['after-publish', 'A', 'C', 'B']);
  });

  it('OVOS-MSG-1 §6.1: a throwing listener does not stop the others and is reported to onListenerError', async () => {
    const errors: Array<[unknown, string]> = [];
    const bus = new LocalBus({ onListenerError: (error, message) => errors.push([error, message.type]) });
    const boom = new Error('boom');
    const seen: string[] = [];
    bus.subscribe((m) => seen.push(`before:${m.type}`));
    bus.subscribe((m) => {
      if (m.type === 'A') throw boom;
    });
    bus.subscribe((m) => seen.push(`after:${m.type}`));
    bus.publish(msg('A'));
    bus.publish(msg('B'));
    await bus.idle();
    expect(seen).toEqual(['before:A', 'after:A', 'before:B', 'after:B']);
    expect(errors).toEqual([[boom, 'A']]);
  });

  it('OVOS-MSG-1 §6.1: a throwing listener does not lose messages queued during the same drain', async () => {
    const errors: unknown[] = [];
    const bus = new LocalBus({ onListenerError: (error) => errors.push(error) });
    const seen: string[] = [];
    bus.subscribe((m) => {
      seen.push(m.type);
      if (m.type === 'A') {
        bus.publish(msg('B'));
        throw new Error('after publishing');
      }
    });
    bus.publish(msg('A'));
    await bus.idle();
    expect(seen).toEqual(['A', 'B']);
    expect(errors).toHaveLength(1);
  });

  it('OVOS-MSG-1 §6.1: without onListenerError a throwing listener is swallowed, not rethrown', async () => {
    const bus = new LocalBus();
    const seen: string[] = [];
    bus.subscribe(() => {
      throw new Error('boom');
    });
    bus.subscribe((m) => seen.push(m.type));
    expect(() => bus.publish(msg('A'))).not.toThrow();
    await bus.idle();
    expect(seen).toEqual(['A']);
  });

  it('Bus delivery contract (bus.ts): unsubscribe stops delivery', async () => {
    const bus = new LocalBus();
    const seen: string[] = [];
    const unsubscribe = bus.subscribe((m) => seen.push(m.type));
    bus.publish(msg('A'));
    await bus.idle();
    unsubscribe();
    bus.publish(msg('B'));
    await bus.idle();
    expect(seen).toEqual(['A']);
  });

  it('Bus delivery contract (bus.ts): unsubscribe during delivery takes effect from the next message', async () => {
    const bus = new LocalBus();
    const log: string[] = [];
    let unsubscribeLater: () => void = () => {};
    bus.subscribe((m) => {
      log.push(`first:${m.type}`);
      if (m.type === 'A') {
        unsubscribeLater();
        bus.publish(msg('B'));
      }
    });
    unsubscribeLater = bus.subscribe((m) => log.push(`second:${m.type}`));
    bus.publish(msg('A'));
    await bus.idle();
    expect(log).toEqual(['first:A', 'second:A', 'first:B']);
  });

  it('Bus delivery contract (bus.ts): a listener unsubscribing itself still completes the current message for everyone', async () => {
    const bus = new LocalBus();
    const log: string[] = [];
    const unsubscribeSelf = bus.subscribe((m) => {
      log.push(`self:${m.type}`);
      unsubscribeSelf();
    });
    bus.subscribe((m) => log.push(`other:${m.type}`));
    bus.publish(msg('A'));
    bus.publish(msg('B'));
    await bus.idle();
    expect(log).toEqual(['self:A', 'other:A', 'other:B']);
  });

  it('Bus delivery contract (bus.ts): a listener subscribed during delivery sees messages from the next one on', async () => {
    const bus = new LocalBus();
    const log: string[] = [];
    bus.subscribe((m) => {
      log.push(`first:${m.type}`);
      if (m.type === 'A') {
        bus.subscribe((n) => log.push(`late:${n.type}`));
        bus.publish(msg('B'));
      }
    });
    bus.publish(msg('A'));
    await bus.idle();
    expect(log).toEqual(['first:A', 'first:B', 'late:B']);
  });

  it('Bus delivery contract (bus.ts): unsubscribing one listener leaves the others subscribed', async () => {
    const bus = new LocalBus();
    const seen: string[] = [];
    const offA = bus.subscribe((m) => seen.push(`a:${m.type}`));
    bus.subscribe((m) => seen.push(`b:${m.type}`));
    offA();
    offA();
    bus.publish(msg('X'));
    await bus.idle();
    expect(seen).toEqual(['b:X']);
  });

  it('Bus status: an in-process bus never reports going down', async () => {
    const bus = new LocalBus();
    const statuses: unknown[] = [];
    const off = bus.onStatus((status) => statuses.push(status));
    bus.publish(msg('A'));
    off();
    await bus.idle();
    expect(statuses).toEqual([]);
  });
});

describe('LocalBus connection identity', () => {
  it('opens and closes are heard in order with the messages published around them; a listener that throws is reported, the others still hear', async () => {
    const errors: string[] = [];
    const bus = new LocalBus({ onListenerError: (_error, message) => errors.push(message.type) });
    const heard: string[] = [];
    bus.subscribe((m) => heard.push(`message ${m.type} from ${bus.connectionOf(m) ?? 'in-process'}`));
    bus.onConnectionOpened(() => {
      throw new Error('listener bug');
    });
    bus.onConnectionOpened((c) => heard.push(`opened ${c}`));
    const unsubscribe = bus.onConnectionClosed((c, late) => heard.push(`closed ${c}${late ? ' late' : ''}`));
    bus.publish(createMessage('before', {}));
    bus.openConnection('c1');
    bus.publish(createMessage('hello', {}), 'c1');
    bus.closeConnection('c1');
    bus.openConnection('c3');
    bus.closeConnection('c3', true);
    await bus.idle();
    expect(heard).toEqual(['message before from in-process', 'opened c1', 'message hello from c1', 'closed c1', 'opened c3', 'closed c3 late']);
    expect(errors).toEqual(['bus.connection.opened', 'bus.connection.opened']);
    unsubscribe();
    bus.closeConnection('c2');
    await bus.idle();
    expect(heard).toHaveLength(6);
  });
});
