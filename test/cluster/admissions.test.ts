/**
 * The entries a daemon takes reach its contests a few a turn (src/cluster/admissions.ts, src/cluster/README.md
 * "Taking a burst"): a burst never starts all its contests in one turn of the event loop, while every entry still
 * runs, once, in the order taken — a session's utterances stay in order (PIPELINE-1 §6: each ends with its handled).
 * The turns are the test's own.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { Admissions } from '../../src/cluster/admissions.js';

describe('PIPELINE-1 §6 across daemons — Admissions: a burst of entries reaches the contests a few a turn, each once, in order', () => {
  let admitted: string[];
  let turns: Array<() => void>;
  let admissions: Admissions<string>;

  /** The event loop's next turn: what was scheduled for it runs. */
  const nextTurn = (): void => {
    for (const run of turns.splice(0)) run();
  };

  beforeEach(() => {
    admitted = [];
    turns = [];
    admissions = new Admissions<string>({ perTurn: 4, admit: (entry) => admitted.push(entry), nextTurn: (run) => turns.push(run) });
  });

  const entries = (count: number): string[] => [...Array(count).keys()].map((i) => `e${i}`);

  it('entries up to the turn\'s share reach the contests at once', () => {
    for (const entry of entries(4)) admissions.push(entry);
    expect(admitted).toEqual(entries(4));
    nextTurn();
    expect(admitted).toEqual(entries(4));
  });

  it('a burst of 10: 4 in the turn it arrived, 4 in the next, 2 in the one after — in the order taken, each once', () => {
    for (const entry of entries(10)) admissions.push(entry);
    expect(admitted).toEqual(entries(4));
    nextTurn();
    expect(admitted).toEqual(entries(8));
    nextTurn();
    expect(admitted).toEqual(entries(10));
    nextTurn();
    expect(admitted).toEqual(entries(10));
    expect(turns).toEqual([]);
  });

  it('an entry taken while others wait goes behind them (a session stays in order); one taken once none waits, in a turn with room, goes at once', () => {
    for (const entry of entries(10)) admissions.push(entry);
    nextTurn(); // e4 … e7; e8, e9 wait
    admissions.push('late');
    expect(admitted).toEqual(entries(8));
    nextTurn(); // e8, e9, late: one place left in this turn
    expect(admitted).toEqual([...entries(10), 'late']);
    admissions.push('at once');
    expect(admitted).toEqual([...entries(10), 'late', 'at once']);
    admissions.push('next turn');
    expect(admitted).toEqual([...entries(10), 'late', 'at once']);
    nextTurn();
    expect(admitted).toEqual([...entries(10), 'late', 'at once', 'next turn']);
  });

  it('each turn has its own share: entries that come turn after turn are never held', () => {
    for (let turn = 0; turn < 5; turn++) {
      for (const entry of entries(4)) admissions.push(`${turn}.${entry}`);
      expect(admitted).toHaveLength(4 * (turn + 1));
      nextTurn();
    }
  });
});
