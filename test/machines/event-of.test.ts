/** The machines' named guards and actions each serve one event type; wired to another, they throw (machines/event-of.ts). */
import { describe, expect, it } from 'vitest';
import { eventOf } from '../../machines/event-of.js';

type E = { type: 'PONG'; skill_id: string } | { type: 'GONE'; skill_id: string } | { type: 'BEGIN' };

describe('eventOf', () => {
  it('returns the event when it is of the type the guard or action is wired to', () => {
    const event = { type: 'PONG', skill_id: 'a' } as E;
    expect(eventOf(event, 'PONG')).toBe(event);
  });

  it('throws, naming both types, when a guard or action gets another event', () => {
    const event = { type: 'GONE', skill_id: 'a' } as E;
    expect(() => eventOf(event, 'PONG')).toThrow(/PONG.*GONE|GONE.*PONG/);
  });

  it('wired to several types: returns an event of any of them, throws for another', () => {
    const gone = { type: 'GONE', skill_id: 'a' } as E;
    expect(eventOf(gone, ['PONG', 'GONE'])).toBe(gone);
    expect(() => eventOf({ type: 'BEGIN' } as E, ['PONG', 'GONE'])).toThrow(/BEGIN/);
  });
});
