/**
 * The fallback contest machine alone (OVOS-FALLBACK-1 §6), on the deterministic ManualClock: no bus, `sendPing`
 * provided as a recorder. Times are relative to the contest start (the clock starts at 0).
 */
import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { createMessage } from '../../src/bus/message.js';
import { ManualClock } from '../../src/clock/manual-clock.js';
import { awaitsPong, fallbackMachine, type FallbackEmitted, type FallbackOutput } from '../../machines/fallback/fallback.machine.js';

const T = 500;

const QUERY = {
  origin: createMessage('ovos.utterance.handle', { utterances: ['what is love'] }, { session: { session_id: 's1' }, utterance_id: 'u1' }),
  utterances: ['what is love'],
  lang: 'en-US',
};

type Ignored = Extract<FallbackEmitted, { type: 'pong.ignored' }>;
type TimedOut = Extract<FallbackEmitted, { type: 'ping.timeout' }>;

interface ContestOptions {
  /** Skills of the pool asked together by one broadcast (the legacy ping, sent by the plugin). */
  readonly broadcast?: readonly string[];
  /** How long before the contest's start that broadcast went out. */
  readonly broadcastAgoMs?: number;
  /** Answers to that broadcast in hand at the start. */
  readonly answered?: Readonly<Record<string, boolean>>;
  /** The stage bound (the match bound less its margin). */
  readonly boundMs?: number;
}

function contest(pool: readonly string[], pingTimeoutMs = T, options: ContestOptions = {}) {
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
  const input = {
    pool,
    pingTimeoutMs,
    query: QUERY,
    ...(options.broadcast === undefined ? {} : { broadcast: options.broadcast }),
    ...(options.broadcastAgoMs === undefined ? {} : { broadcastAgoMs: options.broadcastAgoMs }),
    ...(options.answered === undefined ? {} : { answered: options.answered }),
    ...(options.boundMs === undefined ? {} : { boundMs: options.boundMs }),
  };
  const actor = createActor(machine, { input, clock });
  actor.on('pong.ignored', (event) => ignored.push(event));
  actor.on('ping.timeout', (event) => timeouts.push({ ...event, at: clock.now() }));
  actor.on('ping.timeouts', (event) => {
    for (const skill_id of event.skill_ids) timeouts.push({ type: 'ping.timeout', skill_id, after_ms: event.after_ms, at: clock.now() });
  });
  actor.subscribe({ error: (error) => errors.push(error) });
  actor.start();
  const pong = (skill_id: string, can_handle: boolean): void => actor.send({ type: 'PONG', skill_id, can_handle });
  return {
    clock,
    actor,
    pings,
    pinged: () => pings.map((p) => p.skill_id),
    gone: (skill_id: string): void => actor.send({ type: 'GONE', skill_id }),
    outcomes: () => actor.getSnapshot().context.outcomes,
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

describe('timer hygiene: every delayed transition is cancelled when its state is left', () => {
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

  it('exactly one ping timer is pending while a skill is awaited, beside the one stage bound', () => {
    const c = contest(['a', 'b', 'c']);
    expect(c.clock.pending).toBe(2);
    c.pong('a', false);
    expect(c.clock.pending).toBe(2);
    c.clock.advance(T);
    expect(c.clock.pending).toBe(2);
    c.clock.advance(T);
    expect(c.done()).toBe(true);
    expect(c.clock.pending).toBe(0);
  });

  it('stopping the actor mid-contest clears its timer', () => {
    const c = contest(['a', 'b']);
    c.actor.stop();
    expect(c.clock.pending).toBe(0);
    expect(c.errors).toEqual([]);
  });
});

/**
 * The `broadcast` group (machine header; ovos-wire-today: the legacy dialect polls with ONE broadcast
 * `ovos.skills.fallback.ping {utterances, lang, range}`), under OVOS-FALLBACK-1 §6.1/§6.2: broadcast skills are all
 * asked at the start; an answer from one still ahead in the pool is kept (`early`) and decides at its turn; one not
 * answered by its turn is waited for `pingTimeout` from its turn; the winner is the first willing skill in POOL order.
 */
describe('OVOS-FALLBACK-1 §6.1/§6.2 + ovos-wire-today legacy broadcast', () => {
  const LEGACY = 'OVOS-FALLBACK-1 §6.1/§6.2 + ovos-wire-today legacy broadcast';
  const at = (c: ReturnType<typeof contest>) => c.pings.map((p) => [p.skill_id, p.at]);

  describe('one broadcast, no individual pings for its skills', () => {
    it(`${LEGACY}: with no broadcast group (absent or empty) every skill gets its own ping at its turn`, () => {
      for (const options of [{}, { broadcast: [] }] satisfies ContestOptions[]) {
        const c = contest(['a', 'b'], T, options);
        c.pong('a', false);
        c.pong('b', false);
        expect(c.done()).toBe(true);
        expect(c.pinged()).toEqual(['a', 'b']);
      }
    });

    it(`${LEGACY}: broadcast skills get no individual sendPing; the others get theirs at their turn`, () => {
      const c = contest(['a', 'b', 'c', 'd'], T, { broadcast: ['a', 'c'] });
      expect(c.pings).toEqual([]); // a, first in the pool, was asked by the broadcast
      c.clock.advance(3 * T); // everyone silent
      // a and c were pinged by the broadcast at 0: their timeout is T after it — c, at its turn (2T), is passed at once.
      expect(at(c)).toEqual([
        ['b', T],
        ['d', 2 * T],
      ]);
      expect(c.timeouts.map((t) => [t.skill_id, t.at])).toEqual([
        ['a', T],
        ['b', 2 * T],
        ['c', 2 * T],
        ['d', 3 * T],
      ]);
      expect(c.output()).toBeNull();
      expect(c.clock.pending).toBe(0);
    });

    it(`${LEGACY}: a pool made only of broadcast skills is asked by the broadcast alone`, () => {
      const c = contest(['a', 'b'], T, { broadcast: ['a', 'b'] });
      c.pong('b', true);
      c.pong('a', false);
      expect(c.output()).toEqual({ skill_id: 'b' });
      expect(c.pings).toEqual([]);
      expect(c.clock.pending).toBe(0);
    });
  });

  describe('§6.2 pool order decides, never the first to answer', () => {
    it(`${LEGACY}: a later broadcast skill willing first waits for the earlier spec skill; when it declines, the broadcast skill wins at once`, () => {
      const c = contest(['a', 'b'], T, { broadcast: ['b'] });
      c.clock.advance(10);
      c.pong('b', true); // early: kept, not a win, not ignored
      expect(c.done()).toBe(false);
      expect(c.ignored).toEqual([]);
      c.clock.advance(90);
      c.pong('a', false);
      expect(c.done()).toBe(true);
      expect(c.output()).toEqual({ skill_id: 'b' });
      expect(c.clock.now()).toBe(100);
      expect(c.pinged()).toEqual(['a']);
      expect(c.timeouts).toEqual([]);
      expect(c.outcomes()).toEqual([
        { skill_id: 'a', outcome: 'declined' },
        { skill_id: 'b', outcome: 'willing' },
      ]);
      expect(c.clock.pending).toBe(0);
    });

    it(`${LEGACY}: an early willing broadcast skill wins at exactly T when the earlier spec skill times out`, () => {
      const c = contest(['a', 'b'], T, { broadcast: ['b'] });
      c.clock.advance(10);
      c.pong('b', true);
      c.clock.advance(T - 11);
      expect(c.done()).toBe(false);
      c.clock.advance(1);
      expect(c.timeouts).toEqual([{ type: 'ping.timeout', skill_id: 'a', after_ms: T, at: T }]);
      expect(c.output()).toEqual({ skill_id: 'b' });
      expect(c.clock.pending).toBe(0);
    });

    it(`${LEGACY}: an earlier spec skill willing wins even though the broadcast skill answered willing first`, () => {
      const c = contest(['a', 'b'], T, { broadcast: ['b'] });
      c.clock.advance(10);
      c.pong('b', true);
      c.clock.advance(10);
      c.pong('a', true);
      expect(c.output()).toEqual({ skill_id: 'a' });
      expect(c.outcomes()).toEqual([{ skill_id: 'a', outcome: 'willing' }]);
      expect(c.clock.pending).toBe(0);
    });

    it(`${LEGACY}: an earlier broadcast skill willing wins over a later broadcast skill that answered first`, () => {
      const c = contest(['a', 'b'], T, { broadcast: ['a', 'b'] });
      c.pong('b', true);
      expect(c.done()).toBe(false);
      c.pong('a', true);
      expect(c.output()).toEqual({ skill_id: 'a' });
      expect(c.clock.pending).toBe(0);
    });
  });

  describe('early answers decide at their turn', () => {
    it(`${LEGACY}: an early decline passes at once at its turn, and the next skill is asked then`, () => {
      const c = contest(['a', 'b', 'c'], T, { broadcast: ['b'] });
      c.clock.advance(10);
      c.pong('b', false);
      expect(c.done()).toBe(false);
      c.clock.advance(40);
      c.pong('a', false); // b's turn: its early decline passes at once
      expect(at(c)).toEqual([
        ['a', 0],
        ['c', 50],
      ]);
      expect(c.timeouts).toEqual([]);
      c.pong('c', true);
      expect(c.output()).toEqual({ skill_id: 'c' });
      expect(c.outcomes()).toEqual([
        { skill_id: 'a', outcome: 'declined' },
        { skill_id: 'b', outcome: 'declined' },
        { skill_id: 'c', outcome: 'willing' },
      ]);
      expect(c.clock.pending).toBe(0);
    });

    it(`${LEGACY}: every broadcast skill declined early — the first one's decline exhausts the pool at once`, () => {
      const c = contest(['a', 'b', 'c'], T, { broadcast: ['a', 'b', 'c'] });
      c.pong('c', false);
      c.pong('b', false);
      expect(c.done()).toBe(false);
      c.clock.advance(20);
      c.pong('a', false);
      expect(c.done()).toBe(true);
      expect(c.output()).toBeNull();
      expect(c.timeouts).toEqual([]);
      expect(c.clock.pending).toBe(0);
    });

    it(`${LEGACY}: duplicate early pongs — the first (willing) counts, the second is ignored`, () => {
      const c = contest(['a', 'b'], T, { broadcast: ['b'] });
      c.pong('b', true);
      c.pong('b', false);
      expect(c.ignored.map((i) => i.skill_id)).toEqual(['b']);
      c.pong('a', false);
      expect(c.output()).toEqual({ skill_id: 'b' });
    });

    it(`${LEGACY}: duplicate early pongs — the first (decline) counts, a later willing one cannot win`, () => {
      const c = contest(['a', 'b', 'c'], T, { broadcast: ['b'] });
      c.pong('b', false);
      c.pong('b', true);
      expect(c.ignored.map((i) => i.skill_id)).toEqual(['b']);
      c.pong('a', false);
      expect(c.done()).toBe(false);
      expect(c.pinged()).toEqual(['a', 'c']);
      c.pong('c', false);
      expect(c.output()).toBeNull();
    });

    it(`${LEGACY}: a duplicate early pong is reported with reason 'duplicate' (header: "duplicate (it already answered)")`, () => {
      const c = contest(['a', 'b'], T, { broadcast: ['b'] });
      c.pong('b', false);
      c.pong('b', true); // b already answered (early): a duplicate, not an unsolicited pong
      expect(c.ignored).toEqual([{ type: 'pong.ignored', skill_id: 'b', reason: 'duplicate' }]);
    });

    it(`${LEGACY}: only broadcast skills keep early answers — a spec skill's pong before its ping is still not_awaited`, () => {
      const c = contest(['a', 'b'], T, { broadcast: ['a'] });
      c.pong('b', true);
      expect(c.ignored).toEqual([{ type: 'pong.ignored', skill_id: 'b', reason: 'not_awaited' }]);
      c.clock.advance(10);
      c.pong('a', false);
      expect(at(c)).toEqual([['b', 10]]);
      expect(c.done()).toBe(false); // b's early pong did not count; it must answer its own ping
      c.clock.advance(T);
      expect(c.output()).toBeNull();
    });
  });

  describe('§6.1 a broadcast sent before the contest (one per utterance, for all its stages): answers in hand, timeout from it', () => {
    it(`${LEGACY}: an answer in hand decides at its turn, at once — willing first in the pool wins at the start, nobody pinged`, () => {
      const c = contest(['a', 'b'], T, { broadcast: ['a', 'b'], broadcastAgoMs: 80, answered: { a: true, b: true } });
      expect(c.output()).toEqual({ skill_id: 'a' });
      expect(c.clock.now()).toBe(0);
      expect(c.pings).toEqual([]);
      expect(c.outcomes()).toEqual([{ skill_id: 'a', outcome: 'willing' }]);
      expect(c.clock.pending).toBe(0);
    });

    it(`${LEGACY}: a decline in hand passes its turn at once; a spec skill after it gets its own ping then; pool order still decides`, () => {
      const c = contest(['a', 'b', 'c'], T, { broadcast: ['a', 'c'], broadcastAgoMs: 80, answered: { a: false, c: true } });
      expect(at(c)).toEqual([['b', 0]]);
      c.clock.advance(7);
      c.pong('b', true); // b, ahead of c in the pool, wins though c's yes was in hand
      expect(c.output()).toEqual({ skill_id: 'b' });
      expect(c.outcomes()).toEqual([
        { skill_id: 'a', outcome: 'declined' },
        { skill_id: 'b', outcome: 'willing' },
      ]);
    });

    it(`${LEGACY}: answers of skills outside the pool or not asked by the broadcast are not taken — a spec skill is still pinged and awaited`, () => {
      const c = contest(['a', 'c'], T, { broadcast: ['a'], answered: { a: false, c: true, x: true } });
      expect(at(c)).toEqual([['c', 0]]);
      expect(c.done()).toBe(false);
      expect(awaitsPong(c.actor.getSnapshot().context, 'c')).toBe(true);
      c.pong('c', false);
      expect(c.output()).toBeNull();
    });

    it(`${LEGACY}: a pong from a skill whose answer was in hand is a duplicate, and not awaited`, () => {
      const c = contest(['a', 'b'], T, { broadcast: ['b'], answered: { b: true } });
      expect(awaitsPong(c.actor.getSnapshot().context, 'b')).toBe(false);
      c.pong('b', false);
      expect(c.ignored).toEqual([{ type: 'pong.ignored', skill_id: 'b', reason: 'duplicate' }]);
      c.pong('a', false);
      expect(c.output()).toEqual({ skill_id: 'b' });
    });

    it(`${LEGACY}: boundary — sent 200 ms before the start, a silent broadcast skill's pong at T-200-1 after the start counts`, () => {
      const c = contest(['b', 'c'], T, { broadcast: ['b'], broadcastAgoMs: 200 });
      c.clock.advance(T - 200 - 1);
      expect(c.timeouts).toEqual([]);
      c.pong('b', true);
      expect(c.output()).toEqual({ skill_id: 'b' });
      expect(c.clock.pending).toBe(0);
    });

    it(`${LEGACY}: boundary — sent 200 ms before the start, it times out at T-200 after the start (T after its ping) and the next skill is asked then`, () => {
      const c = contest(['b', 'c'], T, { broadcast: ['b'], broadcastAgoMs: 200 });
      c.clock.advance(T - 200 - 1);
      expect(c.pings).toEqual([]);
      c.clock.advance(1);
      expect(c.timeouts).toEqual([{ type: 'ping.timeout', skill_id: 'b', after_ms: T, at: T - 200 }]);
      expect(at(c)).toEqual([['c', T - 200]]);
      c.pong('b', true); // after its timeout: late
      expect(c.ignored).toEqual([{ type: 'pong.ignored', skill_id: 'b', reason: 'late' }]);
      c.pong('c', true);
      expect(c.output()).toEqual({ skill_id: 'c' });
    });

    it(`${LEGACY}: at the stage bound, a broadcast skill silent for T since the broadcast (sent before the start) is reported timed out; one silent for less only silent`, () => {
      // a (spec) is awaited and silent; b was asked by a broadcast 200 ms before the start and never answered.
      const cut = contest(['a', 'b'], T, { broadcast: ['b'], broadcastAgoMs: 200, boundMs: T - 100 });
      const silent: string[][] = [];
      cut.actor.on('ping.timeouts', (event) => silent.push([...event.silent]));
      cut.clock.advance(T - 100);
      expect(cut.output()).toBeNull();
      expect(silent).toEqual([['a', 'b']]);
      expect(cut.timeouts.map((t) => [t.skill_id, t.at])).toEqual([['b', T - 100]]); // silent 600 ms since its ping
      const fresh = contest(['a', 'b'], T, { broadcast: ['b'], broadcastAgoMs: 99, boundMs: T - 100 });
      fresh.clock.advance(T - 100);
      expect(fresh.timeouts).toEqual([]); // silent 499 ms since its ping: not yet its timeout
    });

    it(`${LEGACY}: sent T or more before the start, a skill still silent is timed out at its turn, at once`, () => {
      for (const ago of [T, T + 1, 3 * T]) {
        const c = contest(['b', 'c'], T, { broadcast: ['b'], broadcastAgoMs: ago });
        c.clock.advance(0);
        expect(c.timeouts.map((t) => [t.skill_id, t.at])).toEqual([['b', 0]]);
        expect(at(c)).toEqual([['c', 0]]);
        expect(awaitsPong(c.actor.getSnapshot().context, 'b')).toBe(false);
      }
    });
  });

  describe('§6.1 a silent broadcast skill\'s ping timeout counts from the broadcast (its ping)', () => {
    it(`${LEGACY}: boundary — awaited from its turn, its pong at T-1 after the broadcast counts`, () => {
      const c = contest(['a', 'b', 'c'], T, { broadcast: ['b'] });
      c.clock.advance(100);
      c.pong('a', false); // b's turn at 100; its ping went out at 0
      c.clock.advance(T - 101); // T - 1
      expect(c.timeouts).toEqual([]);
      expect(c.done()).toBe(false);
      c.pong('b', true);
      expect(c.output()).toEqual({ skill_id: 'b' });
      expect(c.pinged()).toEqual(['a']);
      expect(c.clock.pending).toBe(0);
    });

    it(`${LEGACY}: boundary — at exactly T after the broadcast (not after its turn) it times out and the next skill is asked`, () => {
      const c = contest(['a', 'b', 'c'], T, { broadcast: ['b'] });
      c.clock.advance(100);
      c.pong('a', false); // b's turn at 100
      c.clock.advance(T - 101);
      expect(c.pinged()).toEqual(['a']);
      c.clock.advance(1);
      expect(c.timeouts).toEqual([{ type: 'ping.timeout', skill_id: 'b', after_ms: T, at: T }]);
      expect(at(c)).toEqual([
        ['a', 0],
        ['c', T],
      ]);
      c.pong('c', true);
      expect(c.output()).toEqual({ skill_id: 'c' });
      expect(c.clock.pending).toBe(0);
    });

    it(`${LEGACY}: a broadcast skill whose turn comes after T, silent, is passed at its turn at once — one ping timeout for every silent broadcast skill together`, () => {
      const c = contest(['a', 'b', 'c', 'd'], T, { broadcast: ['a', 'b', 'c'] });
      c.clock.advance(T - 1);
      expect(c.timeouts).toEqual([]);
      c.clock.advance(1);
      expect(c.timeouts.map((t) => [t.skill_id, t.at])).toEqual([
        ['a', T],
        ['b', T],
        ['c', T],
      ]);
      expect(at(c)).toEqual([['d', T]]);
      c.pong('d', true);
      expect(c.output()).toEqual({ skill_id: 'd' });
    });

    it(`${LEGACY}: the first skill of the pool, a broadcast one, times out at exactly T from the start`, () => {
      const c = contest(['a', 'b'], T, { broadcast: ['a'] });
      expect(c.clock.pending).toBe(3); // its turn's ping timer, the broadcast's timeout and the stage bound
      c.clock.advance(T - 1);
      expect(c.pings).toEqual([]);
      c.clock.advance(1);
      expect(c.timeouts).toEqual([{ type: 'ping.timeout', skill_id: 'a', after_ms: T, at: T }]);
      expect(at(c)).toEqual([['b', T]]);
    });

    it(`${LEGACY}: a late pong from a broadcast skill after the broadcast's timeout is ignored as late and cannot win — at its turn or ahead of it`, () => {
      const c = contest(['a', 'b', 'c'], T, { broadcast: ['b', 'c'] });
      c.pong('a', false); // b's turn at 0
      c.clock.advance(T); // b and c timed out, nobody left
      expect(c.done()).toBe(true);
      const d = contest(['a', 'b', 'c'], T, { broadcast: ['c'] });
      d.clock.advance(T); // a times out, b asked at T; c's ping (the broadcast) timed out at T too
      d.pong('c', true);
      expect(d.ignored).toEqual([{ type: 'pong.ignored', skill_id: 'c', reason: 'late' }]);
      d.pong('b', false);
      expect(d.output()).toBeNull(); // c, at its turn: timed out, passed at once
      expect(d.timeouts.map((t) => [t.skill_id, t.at])).toEqual([
        ['a', T],
        ['c', T],
      ]);
      expect(d.clock.pending).toBe(0);
    });

    it(`${LEGACY}: exhausted by a silent last broadcast skill at exactly T after the broadcast leaves no pending timer`, () => {
      const c = contest(['a', 'b'], T, { broadcast: ['b'] });
      c.clock.advance(30);
      c.pong('a', false);
      c.clock.advance(T - 31);
      expect(c.done()).toBe(false);
      c.clock.advance(1);
      expect(c.done()).toBe(true);
      expect(c.output()).toBeNull();
      expect(c.clock.pending).toBe(0);
    });
  });

  describe('GONE and the pool boundary', () => {
    it(`${LEGACY}: a broadcast skill GONE before its turn is skipped — no wait, the next skill asked at once`, () => {
      const c = contest(['a', 'b', 'c'], T, { broadcast: ['b'] });
      c.clock.advance(10);
      c.gone('b');
      c.clock.advance(10);
      c.pong('a', false);
      expect(at(c)).toEqual([
        ['a', 0],
        ['c', 20],
      ]);
      c.pong('c', true);
      expect(c.output()).toEqual({ skill_id: 'c' });
      expect(c.timeouts).toEqual([]);
      expect(c.clock.pending).toBe(0);
    });

    it(`${LEGACY}: a broadcast skill that answered willing early and then went GONE before its turn is skipped`, () => {
      const c = contest(['a', 'b', 'c'], T, { broadcast: ['b'] });
      c.pong('b', true);
      c.gone('b');
      c.pong('a', false);
      expect(c.done()).toBe(false);
      expect(c.pinged()).toEqual(['a', 'c']);
      c.pong('c', false);
      expect(c.output()).toBeNull();
    });

    it(`${LEGACY}: the awaited broadcast skill going GONE at its turn moves on at once`, () => {
      const c = contest(['a', 'b', 'c'], T, { broadcast: ['b'] });
      c.pong('a', false);
      c.clock.advance(40);
      c.gone('b');
      expect(at(c)).toEqual([
        ['a', 0],
        ['c', 40],
      ]);
      expect(c.timeouts).toEqual([]);
    });

    it(`${LEGACY}: broadcast entries not in the pool are ignored — none is taken for asked`, () => {
      const c = contest(['a'], T, { broadcast: ['x'] });
      expect(c.pinged()).toEqual(['a']);
      c.pong('x', true);
      expect(c.ignored).toEqual([{ type: 'pong.ignored', skill_id: 'x', reason: 'not_awaited' }]);
      expect(c.done()).toBe(false);
      c.pong('a', true);
      expect(c.output()).toEqual({ skill_id: 'a' });
    });

    it(`${LEGACY}: broadcast entries not in the pool are ignored — the pool's broadcast skills are still taken for asked`, () => {
      const c = contest(['a', 'b'], T, { broadcast: ['x', 'b'] });
      expect(c.pinged()).toEqual(['a']);
      c.pong('x', true); // not in the pool: ignored, never kept as an early answer (expected traffic of a broadcast)
      expect(c.ignored).toEqual([{ type: 'pong.ignored', skill_id: 'x', reason: 'not_in_pool' }]);
      c.pong('a', false);
      expect(c.done()).toBe(false);
      c.pong('b', true);
      expect(c.output()).toEqual({ skill_id: 'b' });
    });
  });

  describe('mixed pool: spec, broadcast, spec, broadcast', () => {
    it(`${LEGACY}: early answers (d willing, b declining) decide at their turns; c is pinged only at its turn`, () => {
      const c = contest(['a', 'b', 'c', 'd'], T, { broadcast: ['b', 'd'] });
      expect(at(c)).toEqual([['a', 0]]);
      c.clock.advance(5);
      c.pong('d', true);
      c.clock.advance(1);
      c.pong('b', false);
      expect(c.done()).toBe(false);
      c.clock.advance(44);
      c.pong('a', false); // b passes at once, c asked at 50
      expect(at(c)).toEqual([
        ['a', 0],
        ['c', 50],
      ]);
      expect(c.done()).toBe(false);
      c.clock.advance(10);
      c.pong('c', false); // d wins at once at 60
      expect(c.output()).toEqual({ skill_id: 'd' });
      expect(c.clock.now()).toBe(60);
      expect(c.outcomes()).toEqual([
        { skill_id: 'a', outcome: 'declined' },
        { skill_id: 'b', outcome: 'declined' },
        { skill_id: 'c', outcome: 'declined' },
        { skill_id: 'd', outcome: 'willing' },
      ]);
      expect(c.timeouts).toEqual([]);
      expect(c.clock.pending).toBe(0);
    });

    it(`${LEGACY}: all silent but d's early willing — a times out at T (b's broadcast ping with it), c at 2T, and d wins at 2T`, () => {
      const c = contest(['a', 'b', 'c', 'd'], T, { broadcast: ['b', 'd'] });
      c.clock.advance(1);
      c.pong('d', true);
      c.clock.advance(T - 2); // T - 1
      expect(c.done()).toBe(false);
      expect(at(c)).toEqual([['a', 0]]);
      c.clock.advance(1); // T: a timed out; b, pinged by the broadcast at 0, too: c asked
      expect(at(c)).toEqual([
        ['a', 0],
        ['c', T],
      ]);
      c.clock.advance(T - 1); // 2T - 1: c still awaited
      expect(c.done()).toBe(false);
      c.clock.advance(1);
      expect(c.output()).toEqual({ skill_id: 'd' });
      expect(c.timeouts.map((t) => [t.skill_id, t.at])).toEqual([
        ['a', T],
        ['b', T],
        ['c', 2 * T],
      ]);
      expect(c.clock.pending).toBe(0);
    });

    it(`${LEGACY}: a willing spec skill c wins over d, which answered willing before anyone`, () => {
      const c = contest(['a', 'b', 'c', 'd'], T, { broadcast: ['b', 'd'] });
      c.pong('d', true);
      c.pong('a', false); // b's turn, silent
      c.pong('b', false); // c asked
      c.pong('c', true);
      expect(c.output()).toEqual({ skill_id: 'c' });
      expect(c.pinged()).toEqual(['a', 'c']);
      expect(c.clock.pending).toBe(0);
      expect(c.errors).toEqual([]);
    });
  });
});

describe('PIPELINE-1 §4.4 × FALLBACK-1 §6.1–6.2: the stage bound decides with what the skills said by then', () => {
  const BOUND = 1_495;

  it('§6.2 at the bound: a broadcast skill that already said yes wins over silent spec skills ahead of it (they count as timed out, §6.1)', () => {
    const c = contest(['stale.a', 'stale.b', 'stale.c', 'live'], T, { broadcast: ['live'], boundMs: BOUND });
    c.clock.advance(3);
    c.pong('live', true);
    c.clock.advance(BOUND - 3 - 1);
    expect(c.done()).toBe(false);
    expect(c.pinged()).toEqual(['stale.a', 'stale.b', 'stale.c']);
    c.clock.advance(1);
    expect(c.output()).toEqual({ skill_id: 'live' });
    expect(c.outcomes()).toEqual([
      { skill_id: 'stale.a', outcome: 'timeout' },
      { skill_id: 'stale.b', outcome: 'timeout' },
      { skill_id: 'stale.c', outcome: 'cut' },
      { skill_id: 'live', outcome: 'willing' },
    ]);
    expect(c.actor.getSnapshot().context.cut).toBe(true);
    // stale.c was pinged on its own at 2T: its wait was cut short, not timed out.
    expect(c.timeouts.map((t) => [t.skill_id, t.at])).toEqual([['stale.a', T], ['stale.b', 2 * T]]);
  });

  it('§6.2 at a bound shorter than the ping timeout: the broadcast skill that said yes wins over silent broadcast skills ahead of it, reported silent, not timed out', () => {
    const silent: string[][] = [];
    const c = contest(['stale.a', 'stale.b', 'live'], T, { broadcast: ['stale.a', 'stale.b', 'live'], boundMs: 300 });
    c.actor.on('ping.timeouts', (event) => silent.push([...event.silent]));
    c.clock.advance(3);
    c.pong('live', true);
    c.clock.advance(296);
    expect(c.done()).toBe(false);
    c.clock.advance(1);
    expect(c.output()).toEqual({ skill_id: 'live' });
    expect(c.timeouts).toEqual([]);
    expect(silent).toEqual([['stale.a', 'stale.b']]);
  });

  it('§6.2 at the bound: the first willing in pool order, not the first to answer; a skill that declined early is passed', () => {
    const c = contest(['a', 'b', 'c', 'd'], T, { broadcast: ['a', 'b', 'c', 'd'], boundMs: 100 });
    c.pong('d', true);
    c.pong('b', false);
    c.pong('c', true);
    c.clock.advance(100);
    expect(c.output()).toEqual({ skill_id: 'c' });
    expect(c.outcomes()).toEqual([
      { skill_id: 'a', outcome: 'cut' },
      { skill_id: 'b', outcome: 'declined' },
      { skill_id: 'c', outcome: 'willing' },
    ]);
    // A bound shorter than the ping timeout: nobody has had a whole timeout, nothing is reported timed out.
    expect(c.timeouts).toEqual([]);
  });

  it('§6.2 at the bound: nobody has said yes — the pool is exhausted (None), the silent ones recorded as cut', () => {
    const c = contest(['a', 'b'], T, { boundMs: 300 });
    c.clock.advance(299);
    expect(c.done()).toBe(false);
    c.clock.advance(1);
    expect(c.output()).toBeNull();
    expect(c.outcomes()).toEqual([
      { skill_id: 'a', outcome: 'cut' },
      { skill_id: 'b', outcome: 'cut' },
    ]);
    expect(c.pinged()).toEqual(['a']);
    // `a` was pinged on its own 300 ms ago: its ping was cut short, not timed out — nothing counts against it.
    expect(c.timeouts).toEqual([]);
  });

  it('§6.2 at the bound: a skill reported gone is never chosen, even if it said yes before it went', () => {
    const c = contest(['a', 'b', 'c'], T, { broadcast: ['a', 'b', 'c'], boundMs: 200 });
    c.pong('b', true);
    c.gone('b');
    c.pong('c', true);
    c.clock.advance(200);
    expect(c.output()).toEqual({ skill_id: 'c' });
  });

  it('§6.1 before the bound nothing changes: a contest that ends first is not touched by it, and without a bound none fires', () => {
    const c = contest(['a', 'b'], T, { boundMs: 2_000 });
    c.clock.advance(T);
    c.pong('b', true);
    expect(c.output()).toEqual({ skill_id: 'b' });
    expect(c.actor.getSnapshot().context.cut).toBe(false);
    const unbounded = contest(['a'], 10_000_000);
    unbounded.clock.advance(9_999_999);
    expect(unbounded.done()).toBe(false);
  });
});

// What each asked skill said is the contest's record (context.outcomes): the inspector shows it for every contest,
// the stage bound's warning names the skills it had heard from, and a second pong is told late from duplicate by it.
describe('OVOS-FALLBACK-1 §6.1: every asked skill’s answer is recorded, in asking order, whatever ends the contest', () => {
  const LEGACY = 'OVOS-FALLBACK-1 §6.1 + ovos-wire-today legacy broadcast';

  it('§6.1: declined, timed out, gone and declined again — each recorded as it happened, the pool exhausted (None)', () => {
    const c = contest(['a', 'b', 'c', 'd']);
    c.pong('a', false);
    c.clock.advance(T);
    c.gone('c');
    expect(c.outcomes()).toEqual([
      { skill_id: 'a', outcome: 'declined' },
      { skill_id: 'b', outcome: 'timeout' },
      { skill_id: 'c', outcome: 'gone' },
    ]);
    c.pong('d', false);
    expect(c.outcomes()).toEqual([
      { skill_id: 'a', outcome: 'declined' },
      { skill_id: 'b', outcome: 'timeout' },
      { skill_id: 'c', outcome: 'gone' },
      { skill_id: 'd', outcome: 'declined' },
    ]);
    expect(c.actor.getSnapshot().value).toBe('exhausted');
    expect(c.output()).toBeNull();
  });

  it('§6.1: the last skill of the pool — its timeout, or its connection closing, is recorded before the pool is exhausted', () => {
    const silent = contest(['a']);
    silent.clock.advance(T);
    expect(silent.outcomes()).toEqual([{ skill_id: 'a', outcome: 'timeout' }]);
    expect(silent.output()).toBeNull();
    const gone = contest(['a', 'b']);
    gone.pong('a', false);
    gone.gone('b');
    expect(gone.outcomes()).toEqual([
      { skill_id: 'a', outcome: 'declined' },
      { skill_id: 'b', outcome: 'gone' },
    ]);
    expect(gone.output()).toBeNull();
  });

  it(`${LEGACY}: early declines are recorded at their turns, the last one exhausting the pool`, () => {
    const c = contest(['a', 'b', 'c'], T, { broadcast: ['a', 'b', 'c'] });
    c.pong('b', false);
    c.pong('c', false);
    expect(c.outcomes()).toEqual([]);
    c.pong('a', false);
    expect(c.outcomes()).toEqual([
      { skill_id: 'a', outcome: 'declined' },
      { skill_id: 'b', outcome: 'declined' },
      { skill_id: 'c', outcome: 'declined' },
    ]);
    expect(c.output()).toBeNull();
  });

  it(`${LEGACY}: broadcast skills silent past the broadcast's timeout are recorded timed out at their turns, the last one included`, () => {
    const c = contest(['a', 'b', 'c'], T, { broadcast: ['a', 'b', 'c'] });
    c.clock.advance(T);
    expect(c.outcomes()).toEqual([
      { skill_id: 'a', outcome: 'timeout' },
      { skill_id: 'b', outcome: 'timeout' },
      { skill_id: 'c', outcome: 'timeout' },
    ]);
    expect(c.timeouts.map((t) => t.skill_id)).toEqual(['a', 'b', 'c']);
    expect(c.output()).toBeNull();
  });

  it(`${LEGACY}: a spec skill after silent broadcast skills — they are recorded timed out as its turn comes, and it is pinged then`, () => {
    const c = contest(['a', 'b', 'spec'], T, { broadcast: ['a', 'b'] });
    c.clock.advance(T);
    expect(c.outcomes()).toEqual([
      { skill_id: 'a', outcome: 'timeout' },
      { skill_id: 'b', outcome: 'timeout' },
    ]);
    expect(c.pings.map((p) => [p.skill_id, p.at])).toEqual([['spec', T]]);
    c.pong('spec', true);
    expect(c.output()).toEqual({ skill_id: 'spec' });
  });
});

describe('OVOS-FALLBACK-1 §6.1 × PIPELINE-1 §4.4: what the stage bound reports and where it ends', () => {
  it('§6.2 at the bound with a willing skill: the contest ends matched (the inspector shows matched, not exhausted)', () => {
    const c = contest(['a', 'b'], T, { broadcast: ['b'], boundMs: 100 });
    c.pong('b', true);
    c.clock.advance(100);
    expect(c.actor.getSnapshot().value).toBe('matched');
    expect(c.output()).toEqual({ skill_id: 'b' });
    const none = contest(['a', 'b'], T, { broadcast: ['b'], boundMs: 100 });
    none.pong('b', false);
    none.clock.advance(100);
    expect(none.actor.getSnapshot().value).toBe('exhausted');
  });

  it('§6.1 at the bound: a skill gone before it is not recorded as cut, nor reported silent', () => {
    const silent: string[][] = [];
    const c = contest(['a', 'b', 'c'], T, { broadcast: ['a', 'b', 'c'], boundMs: 100 });
    c.actor.on('ping.timeouts', (event) => silent.push([...event.silent]));
    c.gone('b');
    c.clock.advance(100);
    expect(c.outcomes()).toEqual([
      { skill_id: 'a', outcome: 'cut' },
      { skill_id: 'c', outcome: 'cut' },
    ]);
    expect(silent).toEqual([['a', 'c']]);
  });

  it('§6.1 at the bound: only skills that were asked are reported silent — the awaited one, not those never pinged', () => {
    const silent: string[][] = [];
    const c = contest(['a', 'b', 'c'], T, { boundMs: 100 });
    c.actor.on('ping.timeouts', (event) => silent.push([...event.silent]));
    c.clock.advance(100);
    expect(silent).toEqual([['a']]);
    expect(c.timeouts).toEqual([]);
  });

  it('§6.1 at a bound exactly one ping timeout long: silent broadcast skills have had their whole timeout — reported timed out', () => {
    const c = contest(['a', 'b', 'live'], T, { broadcast: ['a', 'b', 'live'], boundMs: T });
    c.pong('live', true);
    c.clock.advance(T);
    expect(c.output()).toEqual({ skill_id: 'live' });
    expect(c.timeouts.map((t) => [t.skill_id, t.at])).toEqual([['a', T], ['b', T]]);
  });
});

describe('OVOS-FALLBACK-1 §6.1: a stray pong is reported with its reason', () => {
  it('§6.1: after a decline, a pong from a skill outside the pool is not_awaited, not a duplicate of the decline', () => {
    const c = contest(['a', 'b']);
    c.pong('a', false);
    c.pong('stranger', true);
    expect(c.ignored).toEqual([{ type: 'pong.ignored', skill_id: 'stranger', reason: 'not_awaited' }]);
  });

  it('ovos-wire-today legacy broadcast: once the broadcast has timed out, a pong from a skill of another pool is not_in_pool, not late', () => {
    const c = contest(['a', 'spec'], T, { broadcast: ['a'] });
    c.clock.advance(T);
    c.pong('other.pool', true);
    expect(c.ignored).toEqual([{ type: 'pong.ignored', skill_id: 'other.pool', reason: 'not_in_pool' }]);
  });
});

// awaitsPong routes a pong that carries no ids of its own (a legacy skill's reply) to the one contest waiting for it.
describe('OVOS-FALLBACK-1 §6.1 + ovos-wire-today: which contest a pong with no ids belongs to (awaitsPong)', () => {
  const awaits = (c: ReturnType<typeof contest>, skill: string): boolean => awaitsPong(c.actor.getSnapshot().context, skill);

  it('the awaited skill, until it has answered; never a skill behind it, outside the pool, or not asked yet', () => {
    const c = contest(['a', 'b', 'c']);
    expect(awaits(c, 'a')).toBe(true);
    expect(awaits(c, 'b')).toBe(false);
    expect(awaits(c, 'stranger')).toBe(false);
    c.pong('a', false);
    expect(awaits(c, 'a')).toBe(false);
    expect(awaits(c, 'b')).toBe(true);
    c.pong('b', true);
    // The contest is over with b's answer: b is still at its index, but answered.
    expect(awaits(c, 'b')).toBe(false);
  });

  it('a broadcast skill ahead, until it answers early or the broadcast times out; never one that is gone', () => {
    const c = contest(['a', 'b', 'c', 'd'], T, { broadcast: ['a', 'b', 'c'] });
    expect(awaits(c, 'b')).toBe(true);
    expect(awaits(c, 'd')).toBe(false); // a spec skill ahead: not asked yet
    c.pong('b', false);
    expect(awaits(c, 'b')).toBe(false);
    c.gone('c');
    expect(awaits(c, 'c')).toBe(false);
    c.clock.advance(T - 1);
    expect(awaits(c, 'a')).toBe(true);
    const turned = contest(['a', 'b'], T, { broadcast: ['a', 'b'] });
    turned.pong('a', false); // at its turn: recorded, not kept as an early answer
    expect(awaits(turned, 'a')).toBe(false); // behind the awaited one now
    expect(awaits(turned, 'b')).toBe(true);
    const expired = contest(['a', 'spec', 'b'], T, { broadcast: ['a', 'b'] });
    expired.clock.advance(T);
    expect(awaits(expired, 'spec')).toBe(true);
    expect(awaits(expired, 'b')).toBe(false);
  });
});
