/**
 * The fallback contest machine alone (OVOS-FALLBACK-1 §6), on the deterministic ManualClock: no bus, `sendPing`
 * provided as a recorder. Times are relative to the contest start (the clock starts at 0).
 */
import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { createMessage } from '../../src/bus/message.js';
import { ManualClock } from '../../src/clock/manual-clock.js';
import { fallbackMachine, type FallbackEmitted, type FallbackOutput } from '../../machines/fallback/fallback.machine.js';

const T = 500;

const QUERY = {
  origin: createMessage('ovos.utterance.handle', { utterances: ['what is love'] }, { session: { session_id: 's1' }, utterance_id: 'u1' }),
  utterances: ['what is love'],
  lang: 'en-US',
};

type Ignored = Extract<FallbackEmitted, { type: 'pong.ignored' }>;
type TimedOut = Extract<FallbackEmitted, { type: 'ping.timeout' }>;

function contest(pool: readonly string[], pingTimeoutMs = T) {
  const clock = new ManualClock(0);
  const pings: Array<{ skill_id: string; at: number; utterances: readonly string[]; lang: string }> = [];
  const ignored: Ignored[] = [];
  const timeouts: Array<TimedOut & { at: number }> = [];
  const errors: unknown[] = [];
  const machine = fallbackMachine.provide({
    actions: {
      sendPing: ({ context }, { skill_id }) => {
        pings.push({ skill_id, at: clock.now(), utterances: context.query.utterances, lang: context.query.lang });
      },
    },
  });
  const actor = createActor(machine, { input: { pool, pingTimeoutMs, query: QUERY }, clock });
  actor.on('pong.ignored', (event) => ignored.push(event));
  actor.on('ping.timeout', (event) => timeouts.push({ ...event, at: clock.now() }));
  actor.subscribe({ error: (error) => errors.push(error) });
  actor.start();
  const pong = (skill_id: string, can_handle: boolean): void => actor.send({ type: 'PONG', skill_id, can_handle });
  return {
    clock,
    actor,
    pings,
    pinged: () => pings.map((p) => p.skill_id),
    ignored,
    timeouts,
    errors,
    pong,
    done: (): boolean => actor.getSnapshot().status === 'done',
    output: (): FallbackOutput | undefined => actor.getSnapshot().output,
  };
}

describe('OVOS-FALLBACK-1 §6.1 per-skill query', () => {
  it('§6.1: the first skill is pinged at once with the query’s utterances and lang', () => {
    const c = contest(['a', 'b']);
    expect(c.pings).toEqual([{ skill_id: 'a', at: 0, utterances: ['what is love'], lang: 'en-US' }]);
    expect(c.done()).toBe(false);
  });

  it('§6.1: a willing pong before the timeout wins', () => {
    const c = contest(['a', 'b']);
    c.clock.advance(100);
    c.pong('a', true);
    expect(c.done()).toBe(true);
    expect(c.output()).toEqual({ skill_id: 'a' });
    expect(c.pinged()).toEqual(['a']);
    expect(c.errors).toEqual([]);
  });

  it('§6.1 timeout boundary: a pong at T-1 still counts', () => {
    const c = contest(['a', 'b']);
    c.clock.advance(T - 1);
    expect(c.timeouts).toEqual([]);
    c.pong('a', true);
    expect(c.output()).toEqual({ skill_id: 'a' });
    expect(c.pinged()).toEqual(['a']);
  });

  it('§6.1 timeout boundary: at exactly T the timeout fires first; the skill is skipped and its pong ignored as late', () => {
    const c = contest(['a', 'b']);
    c.clock.advance(T);
    expect(c.timeouts).toEqual([{ type: 'ping.timeout', skill_id: 'a', after_ms: T, at: T }]);
    expect(c.pings.map((p) => [p.skill_id, p.at])).toEqual([
      ['a', 0],
      ['b', T],
    ]);
    c.pong('a', true);
    expect(c.ignored).toEqual([{ type: 'pong.ignored', skill_id: 'a', reason: 'late' }]);
    expect(c.done()).toBe(false);
    c.pong('b', false);
    expect(c.output()).toBeNull();
  });

  it('§6.1: silent skills are skipped — A and B silent, C willing wins at exactly 2T (pings at 0, T, 2T)', () => {
    const c = contest(['a', 'b', 'c']);
    c.clock.advance(2 * T - 1);
    expect(c.pinged()).toEqual(['a', 'b']);
    c.clock.advance(1);
    expect(c.pings.map((p) => [p.skill_id, p.at])).toEqual([
      ['a', 0],
      ['b', T],
      ['c', 2 * T],
    ]);
    c.pong('c', true);
    expect(c.clock.now()).toBe(2 * T);
    expect(c.output()).toEqual({ skill_id: 'c' });
    expect(c.timeouts.map((t) => [t.skill_id, t.at])).toEqual([
      ['a', T],
      ['b', 2 * T],
    ]);
  });

  it('§6.1: the timeout comes from input (deployment-defined)', () => {
    const c = contest(['a', 'b'], 50);
    c.clock.advance(49);
    expect(c.pinged()).toEqual(['a']);
    c.clock.advance(1);
    expect(c.pings.map((p) => [p.skill_id, p.at])).toEqual([
      ['a', 0],
      ['b', 50],
    ]);
  });

  it('§6.1: a decline advances immediately, without waiting for the timeout', () => {
    const c = contest(['a', 'b', 'c']);
    c.clock.advance(10);
    c.pong('a', false);
    expect(c.pings.map((p) => [p.skill_id, p.at])).toEqual([
      ['a', 0],
      ['b', 10],
    ]);
    c.pong('b', false);
    expect(c.pings.map((p) => [p.skill_id, p.at])).toEqual([
      ['a', 0],
      ['b', 10],
      ['c', 10],
    ]);
    expect(c.timeouts).toEqual([]);
  });

  it('§6.1: after a decline the next skill gets a fresh full timeout', () => {
    const c = contest(['a', 'b', 'c']);
    c.clock.advance(400);
    c.pong('a', false);
    c.clock.advance(T - 1); // 899: b's timeout is due at 900, not at a's old 500
    expect(c.pinged()).toEqual(['a', 'b']);
    c.clock.advance(1);
    expect(c.pings.map((p) => [p.skill_id, p.at])).toEqual([
      ['a', 0],
      ['b', 400],
      ['c', 400 + T],
    ]);
  });
});

describe('OVOS-FALLBACK-1 §6.2 selection', () => {
  it('§6.2: the first willing skill wins; later skills are never pinged', () => {
    const c = contest(['a', 'b', 'c']);
    c.pong('a', false);
    c.pong('b', true);
    expect(c.output()).toEqual({ skill_id: 'b' });
    expect(c.pinged()).toEqual(['a', 'b']);
    c.clock.advance(10 * T);
    expect(c.pinged()).toEqual(['a', 'b']);
  });

  it('§6.2: an exhausted pool (all decline) outputs null', () => {
    const c = contest(['a', 'b']);
    c.pong('a', false);
    c.pong('b', false);
    expect(c.done()).toBe(true);
    expect(c.output()).toBeNull();
  });

  it('§6.2: an exhausted pool (all silent) outputs null after n × T, not before', () => {
    const c = contest(['a', 'b']);
    c.clock.advance(2 * T - 1);
    expect(c.done()).toBe(false);
    c.clock.advance(1);
    expect(c.done()).toBe(true);
    expect(c.output()).toBeNull();
  });

  it('§5: an empty pool outputs null at once, without any ping', () => {
    const c = contest([]);
    expect(c.done()).toBe(true);
    expect(c.output()).toBeNull();
    expect(c.pings).toEqual([]);
    expect(c.clock.pending).toBe(0);
  });
});

describe('OVOS-FALLBACK-1 §6.1 stray pongs change nothing', () => {
  it('§6.1: a spoofed willing pong from a skill not yet asked is ignored (not_awaited) and does not win', () => {
    const c = contest(['a', 'b']);
    c.pong('b', true);
    expect(c.ignored).toEqual([{ type: 'pong.ignored', skill_id: 'b', reason: 'not_awaited' }]);
    expect(c.done()).toBe(false);
    expect(c.pinged()).toEqual(['a']);
    c.pong('a', false);
    expect(c.pinged()).toEqual(['a', 'b']);
    c.clock.advance(T); // b never answers its own ping
    expect(c.output()).toBeNull();
  });

  it('§6.1: a pong from a skill outside the pool is ignored (not_awaited)', () => {
    const c = contest(['a']);
    c.pong('intruder', true);
    expect(c.ignored).toEqual([{ type: 'pong.ignored', skill_id: 'intruder', reason: 'not_awaited' }]);
    c.pong('a', true);
    expect(c.output()).toEqual({ skill_id: 'a' });
  });

  it('§6.1: a second pong from a skill that already declined is ignored as duplicate', () => {
    const c = contest(['a', 'b']);
    c.pong('a', false);
    c.pong('a', true);
    expect(c.ignored).toEqual([{ type: 'pong.ignored', skill_id: 'a', reason: 'duplicate' }]);
    expect(c.done()).toBe(false);
    c.pong('b', false);
    expect(c.output()).toBeNull();
  });

  it('§6.1: a late pong from a timed-out skill cannot win even if it is willing', () => {
    const c = contest(['a', 'b', 'c']);
    c.clock.advance(T); // a timed out, b asked
    c.pong('b', false); // c asked
    c.pong('a', true);
    expect(c.ignored).toEqual([{ type: 'pong.ignored', skill_id: 'a', reason: 'late' }]);
    c.pong('c', true);
    expect(c.output()).toEqual({ skill_id: 'c' });
  });
});

describe('timer hygiene (STYLE 3, ENGINEERING-NOTES)', () => {
  it('a contest won by a pong leaves no pending timer', () => {
    const c = contest(['a', 'b', 'c']);
    c.clock.advance(T); // one timer fired, a new one armed for b
    c.pong('b', true);
    expect(c.done()).toBe(true);
    expect(c.clock.pending).toBe(0);
  });

  it('a contest exhausted by declines leaves no pending timer', () => {
    const c = contest(['a', 'b']);
    c.pong('a', false);
    c.pong('b', false);
    expect(c.clock.pending).toBe(0);
  });

  it('a contest exhausted by timeouts leaves no pending timer', () => {
    const c = contest(['a', 'b', 'c']);
    c.clock.advance(3 * T);
    expect(c.done()).toBe(true);
    expect(c.clock.pending).toBe(0);
  });

  it('exactly one timer is pending while a skill is awaited', () => {
    const c = contest(['a', 'b', 'c']);
    expect(c.clock.pending).toBe(1);
    c.pong('a', false);
    expect(c.clock.pending).toBe(1);
    c.clock.advance(T);
    expect(c.clock.pending).toBe(1);
  });

  it('stopping the actor mid-contest clears its timer', () => {
    const c = contest(['a', 'b']);
    c.actor.stop();
    expect(c.clock.pending).toBe(0);
    expect(c.errors).toEqual([]);
  });
});
