/**
 * At least once between daemons (src/cluster/redelivery.ts, src/cluster/README.md "Redelivery"), on the manual clock:
 * each daemon's messages reach every other once and in its order (PIPELINE-1 §6 across daemons: a lost frame would
 * be a lost reply or a lost handled), whatever NATS lost on the way, as long as the sender still keeps them.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock/manual-clock.js';
import { InOrder, SentRing } from '../../src/cluster/redelivery.js';

const GIVE_UP = 1_000;
const EVERY = 100;

describe('PIPELINE-1 §6 across daemons — InOrder: every daemon\'s messages once, in its order (nothing lost, nothing twice)', () => {
  let clock: ManualClock;
  let delivered: string[];
  let asked: Array<[string, string, number, number]>;
  let lost: Array<[string, string, number, number]>;
  let order: InOrder<string>;

  beforeEach(() => {
    clock = new ManualClock();
    delivered = [];
    asked = [];
    lost = [];
    order = new InOrder<string>({
      clock,
      giveUpMs: GIVE_UP,
      askEveryMs: EVERY,
      deliver: (item) => delivered.push(item),
      ask: (node, boot, from, through) => asked.push([node, boot, from, through]),
      lost: (node, boot, from, through) => lost.push([node, boot, from, through]),
    });
  });

  const tickFor = (ms: number): void => {
    for (let t = 0; t < ms; t += EVERY) {
      clock.advance(EVERY);
      order.tick();
    }
  };

  it('hands on in order what comes in order, from where it first heard a daemon, and never the same number twice', () => {
    order.accept('a', 'r1', 41, 'a41');
    order.accept('a', 'r1', 42, 'a42');
    order.accept('b', 'r9', 7, 'b7');
    order.accept('a', 'r1', 42, 'a42 again');
    order.accept('a', 'r1', 40, 'a40, before it was first heard');
    tickFor(2 * GIVE_UP);
    expect(delivered).toEqual(['a41', 'a42', 'b7']);
    expect(asked).toEqual([]);
    expect(lost).toEqual([]);
  });

  it('a gap holds what comes after it and asks the sender for the missing numbers; what is sent again fills it, in order, and the copies are dropped', () => {
    order.accept('a', 'r1', 1, 'a1');
    order.accept('a', 'r1', 4, 'a4');
    order.accept('a', 'r1', 5, 'a5');
    expect(delivered).toEqual(['a1']);
    expect(asked).toEqual([['a', 'r1', 2, 3]]);
    order.accept('a', 'r1', 2, 'a2');
    order.accept('a', 'r1', 3, 'a3');
    // The sender publishes again what several receivers asked for: the ones this one has are dropped.
    order.accept('a', 'r1', 4, 'a4 again');
    order.accept('a', 'r1', 5, 'a5 again');
    order.accept('a', 'r1', 6, 'a6');
    expect(delivered).toEqual(['a1', 'a2', 'a3', 'a4', 'a5', 'a6']);
    tickFor(2 * GIVE_UP);
    expect(asked).toHaveLength(1);
    expect(lost).toEqual([]);
  });

  it('another daemon\'s gap holds only that daemon\'s messages', () => {
    order.accept('a', 'r1', 1, 'a1');
    order.accept('b', 'r1', 1, 'b1');
    order.accept('a', 'r1', 3, 'a3');
    order.accept('b', 'r1', 2, 'b2');
    expect(delivered).toEqual(['a1', 'b1', 'b2']);
  });

  it('a gap unfilled is asked for again every askEveryMs, then given up after giveUpMs: logged as lost, and what it held goes on in order', () => {
    order.accept('a', 'r1', 1, 'a1');
    order.accept('a', 'r1', 3, 'a3');
    order.accept('a', 'r1', 4, 'a4');
    tickFor(GIVE_UP - EVERY);
    expect(delivered).toEqual(['a1']);
    expect(asked.length).toBe(GIVE_UP / EVERY);
    expect(asked.every((ask) => JSON.stringify(ask) === JSON.stringify(['a', 'r1', 2, 2]))).toBe(true);
    expect(lost).toEqual([]);
    tickFor(EVERY);
    expect(lost).toEqual([['a', 'r1', 2, 2]]);
    expect(delivered).toEqual(['a1', 'a3', 'a4']);
    order.accept('a', 'r1', 2, 'a2, too late');
    expect(delivered).toEqual(['a1', 'a3', 'a4']);
  });

  it('the sender\'s heartbeat names a number that has not come: missed only once it is still missing askEveryMs later (it may be on its way), then asked for', () => {
    order.accept('a', 'r1', 1, 'a1');
    order.sentThrough('a', 'r1', 3);
    clock.advance(EVERY - 1);
    order.tick();
    order.accept('a', 'r1', 2, 'a2');
    expect(asked).toEqual([]);
    clock.advance(1);
    order.tick();
    expect(asked).toEqual([['a', 'r1', 3, 3]]);
    order.accept('a', 'r1', 3, 'a3');
    tickFor(2 * GIVE_UP);
    expect(delivered).toEqual(['a1', 'a2', 'a3']);
    expect(lost).toEqual([]);
  });

  it('a number a heartbeat named that arrives within askEveryMs is never asked for', () => {
    order.accept('a', 'r1', 1, 'a1');
    order.sentThrough('a', 'r1', 2);
    clock.advance(EVERY - 1);
    order.tick();
    order.accept('a', 'r1', 2, 'a2');
    tickFor(2 * GIVE_UP);
    expect(asked).toEqual([]);
    expect(delivered).toEqual(['a1', 'a2']);
  });

  it('the tail a sender published last and the receiver never heard (no later message shows the gap) is missed through its heartbeat, and given up if never had', () => {
    order.accept('a', 'r1', 1, 'a1');
    order.sentThrough('a', 'r1', 2);
    tickFor(EVERY);
    expect(asked).toEqual([['a', 'r1', 2, 2]]);
    tickFor(GIVE_UP);
    expect(lost).toEqual([['a', 'r1', 2, 2]]);
    order.accept('a', 'r1', 3, 'a3');
    expect(delivered).toEqual(['a1', 'a3']);
  });

  it('a heartbeat of a daemon never heard from sets nothing: its first message is where its numbering is taken up', () => {
    order.sentThrough('a', 'r1', 50);
    tickFor(GIVE_UP);
    order.accept('a', 'r1', 51, 'a51');
    expect(delivered).toEqual(['a51']);
    expect(asked).toEqual([]);
  });

  it('a daemon started again (a new run) is taken from its number 1: what its old run held goes on first, and its first numbers missed are asked for', () => {
    order.accept('a', 'r1', 10, 'old a10');
    order.accept('a', 'r1', 12, 'old a12');
    order.accept('a', 'r2', 2, 'new a2');
    expect(delivered).toEqual(['old a10', 'old a12']);
    expect(asked.at(-1)).toEqual(['a', 'r2', 1, 1]);
    order.accept('a', 'r2', 1, 'new a1');
    expect(delivered).toEqual(['old a10', 'old a12', 'new a1', 'new a2']);
  });

  it('two gaps: the second is asked for once the first is filled, and given up on its own', () => {
    order.accept('a', 'r1', 1, 'a1');
    order.accept('a', 'r1', 3, 'a3');
    order.accept('a', 'r1', 5, 'a5');
    expect(asked).toEqual([['a', 'r1', 2, 2]]);
    order.accept('a', 'r1', 2, 'a2');
    expect(delivered).toEqual(['a1', 'a2', 'a3']);
    tickFor(EVERY);
    expect(asked.at(-1)).toEqual(['a', 'r1', 4, 4]);
    tickFor(GIVE_UP);
    expect(lost).toEqual([['a', 'r1', 4, 4]]);
    expect(delivered).toEqual(['a1', 'a2', 'a3', 'a5']);
  });
});

describe('PIPELINE-1 §6 across daemons — SentRing: what a daemon published, kept to publish again', () => {
  const data = (text: string): Uint8Array => Buffer.from(text);

  it('gives back what is asked for, in order, while kept; not what is no longer kept; and not twice within againMs (several receivers asking at once)', () => {
    const clock = new ManualClock();
    const ring = new SentRing({ clock, keepMs: 1_000, maxBytes: 1_000_000, againMs: 50 });
    for (let seq = 1; seq <= 5; seq++) {
      ring.push(seq, `s${seq}`, data(`d${seq}`));
      clock.advance(300);
    }
    // Pushed at 0, 300, 600, 900, 1200: the first is older than keepMs at the fifth push.
    expect(ring.size).toBe(4);
    expect(ring.resend(1, 3).map((kept) => kept.subject)).toEqual(['s2', 's3']);
    expect(ring.resend(2, 4).map((kept) => kept.subject)).toEqual(['s4']);
    clock.advance(50);
    expect(ring.resend(2, 9).map((kept) => Buffer.from(kept.data).toString())).toEqual(['d2', 'd3', 'd4', 'd5']);
  });

  it('keeps at most maxBytes', () => {
    const clock = new ManualClock();
    const ring = new SentRing({ clock, keepMs: 60_000, maxBytes: 10, againMs: 0 });
    for (let seq = 1; seq <= 5; seq++) ring.push(seq, 's', data('1234'));
    expect(ring.size).toBe(2);
    expect(ring.resend(1, 5)).toHaveLength(2);
  });

  it('still finds every number after thousands have been dropped from its front', () => {
    const clock = new ManualClock();
    const ring = new SentRing({ clock, keepMs: 10, maxBytes: 1_000_000, againMs: 0 });
    for (let seq = 1; seq <= 5_000; seq++) {
      ring.push(seq, 's', data('x'));
      clock.advance(1);
    }
    expect(ring.size).toBe(11);
    expect(ring.resend(4_995, 4_995).map((kept) => Buffer.from(kept.data).toString())).toEqual(['x']);
    expect(ring.resend(4_990, 4_992)).toHaveLength(3);
    expect(ring.resend(1, 4_989)).toHaveLength(0);
  });
});
