/**
 * The common-query contest machine alone (OVOS-COMMON-QUERY-1 §6–§8), on the deterministic ManualClock: no bus,
 * `sendPing` and `sendRequests` provided as recorders. Times are relative to the contest start (the clock starts
 * at 0). Appendix A defaults: poll ceiling 500 ms, collection initial 3 s, ceiling 5 s, min conf 0.5, fast win 0.9;
 * the poll's early-close quiet period is this project's 20 ms default.
 */
import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { createMessage } from '../../src/bus/message.js';
import { ManualClock } from '../../src/clock/manual-clock.js';
import type { SelectionPolicy } from '../../src/plugins/common-query/selection.js';
import {
  collectionWindowMs,
  commonQueryMachine,
  type Claimant,
  type CommonQueryEmitted,
  type CommonQueryInput,
  type CommonQueryOutput,
} from '../../machines/common-query/common-query.machine.js';

const POLL = 500;
const QUIET = 20;
const INITIAL = 3_000;
const CEILING = 5_000;
const Q = 'what is the capital of france';

const POLICY: SelectionPolicy = { minConfidence: 0.5, fastWinConfidence: 0.9, blacklistedSkills: [] };

const ORIGIN = createMessage('ovos.utterance.handle', { utterances: [Q] }, { session: { session_id: 's1' }, utterance_id: 'u1' });

type PongIgnored = Extract<CommonQueryEmitted, { type: 'pong.ignored' }>;
type ResponseIgnored = Extract<CommonQueryEmitted, { type: 'response.ignored' }>;

function contest(overrides: Partial<CommonQueryInput> = {}) {
  const clock = new ManualClock(0);
  const pings: number[] = [];
  const requests: Array<{ at: number; claimants: readonly Claimant[] }> = [];
  const pongIgnored: PongIgnored[] = [];
  const responseIgnored: ResponseIgnored[] = [];
  const errors: unknown[] = [];
  const machine = commonQueryMachine.provide({
    actions: {
      sendPing: () => {
        pings.push(clock.now());
      },
      sendRequests: ({ context }) => {
        requests.push({ at: clock.now(), claimants: context.claimants });
      },
    },
  });
  const input: CommonQueryInput = {
    origin: ORIGIN,
    utterance: Q,
    lang: 'en-US',
    pollWindowMs: POLL,
    pollQuietMs: QUIET,
    collectionInitialMs: INITIAL,
    collectionCeilingMs: CEILING,
    policy: POLICY,
    ...overrides,
  };
  const actor = createActor(machine, { input, clock });
  actor.on('pong.ignored', (event) => pongIgnored.push(event));
  actor.on('response.ignored', (event) => responseIgnored.push(event));
  let doneAt: number | null = null;
  actor.subscribe({
    complete: () => {
      doneAt = clock.now();
    },
    error: (error) => errors.push(error),
  });
  actor.start();
  return {
    clock,
    actor,
    pings,
    requests,
    pongIgnored,
    responseIgnored,
    errors,
    /** Advance to an absolute contest time. */
    at: (t: number): void => {
      expect(t).toBeGreaterThanOrEqual(clock.now());
      clock.advance(t - clock.now());
    },
    pong: (skill_id: string, can_answer = true, latency_ms?: number): void =>
      actor.send(latency_ms === undefined ? { type: 'PONG', skill_id, can_answer } : { type: 'PONG', skill_id, can_answer, latency_ms }),
    respond: (skill_id: string, answer?: string, conf?: number): void => {
      const base = { type: 'RESPONSE' as const, skill_id, receivedAt: clock.now() };
      actor.send(answer === undefined ? base : conf === undefined ? { ...base, answer } : { ...base, answer, conf });
    },
    join: (policy: SelectionPolicy): void => actor.send({ type: 'JOIN', policy }),
    done: (): boolean => actor.getSnapshot().status === 'done',
    doneAt: (): number | null => doneAt,
    output: (): CommonQueryOutput | undefined => actor.getSnapshot().output,
    claimantIds: (): string[] => actor.getSnapshot().context.claimants.map((c) => c.skill_id),
    responseIds: (): string[] => actor.getSnapshot().context.responses.map((r) => r.skill_id),
  };
}

type Contest = ReturnType<typeof contest>;

/** Claim with the given skills at t = 0 and let the poll close early (quiet period); returns the close time. */
function claimAndClose(c: Contest, claims: ReadonlyArray<readonly [string, number?]>): number {
  for (const [skill, latency] of claims) c.pong(skill, true, latency);
  c.at(QUIET);
  expect(c.requests.map((r) => r.at)).toEqual([QUIET]);
  return QUIET;
}

describe('OVOS-COMMON-QUERY-1 §6.1 ping', () => {
  it('§6.1: the ping is broadcast once, at contest start', () => {
    const c = contest();
    expect(c.pings).toEqual([0]);
    c.at(POLL);
    expect(c.pings).toEqual([0]);
  });
});

describe('OVOS-COMMON-QUERY-1 §6.3 poll window ceiling', () => {
  it('§6.3 boundary: a pong at ceiling-1 (499 ms) still counts as a claim; the poll closes at exactly 500', () => {
    const c = contest();
    c.at(POLL - 1);
    c.pong('a');
    expect(c.pongIgnored).toEqual([]);
    expect(c.requests).toEqual([]);
    c.at(POLL);
    // Closed by the ceiling (500), not by the quiet period (499 + 20 = 519).
    expect(c.requests).toEqual([{ at: POLL, claimants: [{ skill_id: 'a' }] }]);
  });

  it('§6.3 boundary: at exactly 500 the window is closed; a pong then is ignored with reason poll_closed', () => {
    const c = contest();
    c.at(490);
    c.pong('a'); // quiet would close at 510; the ceiling closes first
    c.at(POLL);
    expect(c.requests.map((r) => r.at)).toEqual([POLL]);
    c.pong('b');
    expect(c.pongIgnored).toEqual([{ type: 'pong.ignored', skill_id: 'b', reason: 'poll_closed' }]);
    expect(c.claimantIds()).toEqual(['a']);
    c.respond('a', 'Paris', 0.8);
    expect(c.output()?.claimants).toEqual([{ skill_id: 'a' }]);
    expect(c.output()?.closedBy).toBe('all_answered');
  });

  it('§6.3: the ceiling comes from input (deployment-defined)', () => {
    const c = contest({ pollWindowMs: 100 });
    c.at(99);
    expect(c.done()).toBe(false);
    c.at(100);
    expect(c.output()?.closedBy).toBe('no_claimant');
  });
});

describe('OVOS-COMMON-QUERY-1 §6.3 early close', () => {
  it('§6.3 early close: a claim at t and another at t+quiet-1 restart the quiet period; the poll closes at last claim + quiet', () => {
    const c = contest();
    c.at(100);
    c.pong('a');
    c.at(100 + QUIET - 1); // 119: still open
    expect(c.requests).toEqual([]);
    c.pong('b'); // restarts the quiet period: now due at 139, not 120
    c.at(100 + QUIET); // 120: the first claim's quiet period would have ended here
    expect(c.requests).toEqual([]);
    c.at(100 + QUIET - 1 + QUIET - 1); // 138
    expect(c.requests).toEqual([]);
    c.at(100 + QUIET - 1 + QUIET); // 139
    expect(c.requests).toEqual([{ at: 139, claimants: [{ skill_id: 'a' }, { skill_id: 'b' }] }]);
  });

  it('§6.3 early close: a claim exactly one quiet period after the last is too late (poll_closed)', () => {
    const c = contest();
    c.at(100);
    c.pong('a');
    c.at(100 + QUIET);
    expect(c.requests.map((r) => r.at)).toEqual([120]);
    c.pong('b');
    expect(c.pongIgnored).toEqual([{ type: 'pong.ignored', skill_id: 'b', reason: 'poll_closed' }]);
    expect(c.claimantIds()).toEqual(['a']);
  });

  it('§6.3 early close: a declining pong does not restart the quiet period', () => {
    const c = contest();
    c.at(100);
    c.pong('a');
    c.at(110);
    c.pong('b', false);
    c.at(120);
    expect(c.requests).toEqual([{ at: 120, claimants: [{ skill_id: 'a' }] }]);
  });

  it('§6.3 early close: a duplicate claim does not restart the quiet period', () => {
    const c = contest();
    c.at(100);
    c.pong('a');
    c.at(115);
    c.pong('a', true, 50);
    expect(c.pongIgnored).toEqual([{ type: 'pong.ignored', skill_id: 'a', reason: 'duplicate' }]);
    c.at(120);
    expect(c.requests).toEqual([{ at: 120, claimants: [{ skill_id: 'a' }] }]);
  });

  it('§6.3: quiet period 0 proceeds as soon as one claims (a deployment MAY)', () => {
    const c = contest({ pollQuietMs: 0 });
    c.at(30);
    c.pong('a');
    c.clock.advance(0);
    expect(c.requests).toEqual([{ at: 30, claimants: [{ skill_id: 'a' }] }]);
  });
});

describe('OVOS-COMMON-QUERY-1 §6.2 claims', () => {
  it('§6.2 no claimant: the contest ends at the ceiling with closedBy no_claimant and sendRequests is never called', () => {
    const c = contest();
    c.at(POLL - 1);
    expect(c.done()).toBe(false);
    c.at(POLL);
    expect(c.done()).toBe(true);
    expect(c.doneAt()).toBe(POLL);
    expect(c.output()).toEqual({ utterance: Q, lang: 'en-US', claimants: [], responses: [], closedBy: 'no_claimant' });
    expect(c.requests).toEqual([]);
    expect(c.clock.pending).toBe(0);
  });

  it('§6.2: a pong with can_answer false is not a claimant (ignored: not_claiming)', () => {
    const c = contest();
    c.at(10);
    c.pong('a', false);
    expect(c.pongIgnored).toEqual([{ type: 'pong.ignored', skill_id: 'a', reason: 'not_claiming' }]);
    expect(c.claimantIds()).toEqual([]);
    c.at(10 + QUIET); // no early close: nobody claimed
    expect(c.requests).toEqual([]);
    c.at(POLL);
    expect(c.output()?.closedBy).toBe('no_claimant');
    expect(c.requests).toEqual([]);
  });

  it('§6.2: can_answer false after a claim by another skill is not a claimant either', () => {
    const c = contest();
    c.pong('a');
    c.pong('b', false);
    expect(c.pongIgnored).toEqual([{ type: 'pong.ignored', skill_id: 'b', reason: 'not_claiming' }]);
    c.at(QUIET);
    expect(c.requests).toEqual([{ at: QUIET, claimants: [{ skill_id: 'a' }] }]);
  });

  it('§6.2: a second pong from a claimant is ignored as duplicate and cannot change its latency_ms', () => {
    const c = contest();
    c.pong('a', true, 100);
    c.pong('a', true, 4_000);
    expect(c.pongIgnored).toEqual([{ type: 'pong.ignored', skill_id: 'a', reason: 'duplicate' }]);
    c.at(QUIET);
    expect(c.requests[0]?.claimants).toEqual([{ skill_id: 'a', latency_ms: 100 }]);
  });

  it('§6.2: latency_ms is kept on the claimant as reported', () => {
    const c = contest();
    c.pong('a', true, 800);
    c.pong('b');
    c.at(QUIET);
    expect(c.requests[0]?.claimants).toEqual([{ skill_id: 'a', latency_ms: 800 }, { skill_id: 'b' }]);
  });
});

describe('OVOS-COMMON-QUERY-1 §7.2 collectionWindowMs()', () => {
  const window = (claimants: Claimant[], initial = INITIAL, ceiling = CEILING): number =>
    collectionWindowMs({ claimants, collectionInitialMs: initial, collectionCeilingMs: ceiling });

  it('§7.2: the window is the maximum latency_ms across claimants', () => {
    expect(window([{ skill_id: 'a', latency_ms: 200 }, { skill_id: 'b', latency_ms: 800 }])).toBe(800);
    expect(window([{ skill_id: 'a', latency_ms: 800 }, { skill_id: 'b', latency_ms: 200 }])).toBe(800);
  });

  it('§7.2: a claimant without latency_ms counts as the fixed initial window', () => {
    expect(window([{ skill_id: 'a' }])).toBe(INITIAL);
    expect(window([{ skill_id: 'a', latency_ms: 200 }, { skill_id: 'b' }])).toBe(INITIAL);
    expect(window([{ skill_id: 'a', latency_ms: 4_000 }, { skill_id: 'b' }])).toBe(4_000);
    expect(window([{ skill_id: 'a' }], 1_234)).toBe(1_234);
  });

  it('§7.2: clamped to the ceiling', () => {
    expect(window([{ skill_id: 'a', latency_ms: 9_000 }])).toBe(CEILING);
    expect(window([{ skill_id: 'a', latency_ms: CEILING }])).toBe(CEILING);
    expect(window([{ skill_id: 'a', latency_ms: CEILING + 1 }])).toBe(CEILING);
    expect(window([{ skill_id: 'a' }], 8_000, CEILING)).toBe(CEILING);
    expect(window([{ skill_id: 'a', latency_ms: 9_000 }], INITIAL, 2_000)).toBe(2_000);
  });

  it('§7.2: never negative', () => {
    expect(window([{ skill_id: 'a', latency_ms: -5 }])).toBe(0);
    expect(window([])).toBe(0);
  });
});

describe('OVOS-COMMON-QUERY-1 §7.2 collection window', () => {
  it('§7.2 boundary: a response at ceiling-1 counts; at the ceiling the window closes (closedBy window)', () => {
    const c = contest();
    const tc = claimAndClose(c, [['a', 9_000], ['b']]);
    c.at(tc + CEILING - 1);
    c.respond('a', 'Paris', 0.8);
    expect(c.done()).toBe(false);
    expect(c.responseIds()).toEqual(['a']);
    c.at(tc + CEILING);
    expect(c.done()).toBe(true);
    expect(c.doneAt()).toBe(tc + CEILING);
    expect(c.output()?.closedBy).toBe('window');
    expect(c.output()?.responses.map((r) => r.skill_id)).toEqual(['a']);
    expect(c.clock.pending).toBe(0);
  });

  it('§7.2: a response at exactly the ceiling is too late: the window already closed without it', () => {
    const c = contest();
    const tc = claimAndClose(c, [['a', 9_000]]);
    c.at(tc + CEILING);
    // The window closed first (the timer is due before anything sent at this instant); a's response would now
    // reach a finished contest — the supervisor drops it as no_live_contest.
    expect(c.done()).toBe(true);
    expect(c.output()?.closedBy).toBe('window');
    expect(c.output()?.responses).toEqual([]);
  });

  it('§7.2: latency_ms larger than the ceiling is clamped — the window is the ceiling (5000), not 9000', () => {
    const c = contest();
    const tc = claimAndClose(c, [['a', 9_000]]);
    c.at(tc + CEILING - 1);
    expect(c.done()).toBe(false);
    c.at(tc + CEILING);
    expect(c.done()).toBe(true);
    expect(c.doneAt()).toBe(tc + CEILING);
    expect(c.output()?.closedBy).toBe('window');
  });

  it('§7.2: the window is sized from latency_ms — claimants 200 and 800 → window 800', () => {
    const c = contest();
    const tc = claimAndClose(c, [['a', 200], ['b', 800]]);
    c.at(tc + 150);
    c.respond('a', 'Paris', 0.8);
    c.at(tc + 200);
    expect(c.done()).toBe(false); // not the smallest estimate
    c.at(tc + 799);
    expect(c.done()).toBe(false);
    c.at(tc + 800);
    expect(c.done()).toBe(true);
    expect(c.output()?.closedBy).toBe('window');
    expect(c.output()?.responses.map((r) => r.skill_id)).toEqual(['a']);
  });

  it('§7.2: a claimant without latency_ms counts as the initial window (3000)', () => {
    const c = contest();
    const tc = claimAndClose(c, [['a', 200], ['b']]);
    c.at(tc + INITIAL - 1);
    expect(c.done()).toBe(false);
    c.at(tc + INITIAL);
    expect(c.output()?.closedBy).toBe('window');
  });

  it('§7.2: the initial and ceiling values come from input', () => {
    const c = contest({ collectionInitialMs: 700, collectionCeilingMs: 1_000 });
    const tc = claimAndClose(c, [['a'], ['b', 2_000]]);
    c.at(tc + 999);
    expect(c.done()).toBe(false);
    c.at(tc + 1_000);
    expect(c.output()?.closedBy).toBe('window');
  });

  it('§7.2 early termination: all claimants answered → closes at once (closedBy all_answered), a response WITHOUT answer counts', () => {
    const c = contest();
    const tc = claimAndClose(c, [['a'], ['b']]);
    c.at(tc + 10);
    c.respond('a', 'Paris', 0.8);
    expect(c.done()).toBe(false);
    c.at(tc + 30);
    c.respond('b'); // §7.1 decline: no answer field
    expect(c.done()).toBe(true);
    expect(c.doneAt()).toBe(tc + 30);
    const output = c.output();
    expect(output?.closedBy).toBe('all_answered');
    expect(output?.responses).toEqual([
      { skill_id: 'a', answer: 'Paris', conf: 0.8, receivedAt: tc + 10, order: 0 },
      { skill_id: 'b', receivedAt: tc + 30, order: 1 },
    ]);
    expect(c.clock.pending).toBe(0);
  });

  it('§7.2 early termination: every claimant declining (no answer) also closes at once', () => {
    const c = contest();
    const tc = claimAndClose(c, [['a']]);
    c.at(tc + 5);
    c.respond('a');
    expect(c.output()?.closedBy).toBe('all_answered');
    expect(c.doneAt()).toBe(tc + 5);
  });

  it('§7.2: a silent claimant is treated as declining at the window end (closedBy window, its response missing)', () => {
    const c = contest();
    const tc = claimAndClose(c, [['a', 400], ['b', 600]]);
    c.at(tc + 100);
    c.respond('a', 'Paris', 0.8);
    c.at(tc + 599);
    expect(c.done()).toBe(false);
    c.at(tc + 600);
    expect(c.output()?.closedBy).toBe('window');
    expect(c.output()?.claimants.map((x) => x.skill_id)).toEqual(['a', 'b']);
    expect(c.output()?.responses.map((r) => r.skill_id)).toEqual(['a']);
    expect(c.clock.pending).toBe(0);
  });

  it('§7.1: requests go to every claimant in parallel, once, when the poll closes', () => {
    const c = contest();
    c.pong('a');
    c.pong('b');
    c.pong('c', false);
    c.at(QUIET);
    expect(c.requests).toEqual([{ at: QUIET, claimants: [{ skill_id: 'a' }, { skill_id: 'b' }] }]);
    c.respond('a', 'x', 0.6);
    c.respond('b', 'y', 0.6);
    expect(c.requests).toHaveLength(1);
  });
});

describe('OVOS-COMMON-QUERY-1 §8 step 3 fast win during collection', () => {
  it('§8 step 3: with a known policy, a response ≥ 0.9 closes the window mid-collection (closedBy fast_win)', () => {
    const c = contest();
    const tc = claimAndClose(c, [['a'], ['b']]);
    c.at(tc + 40);
    c.respond('a', 'Paris', 0.95);
    expect(c.done()).toBe(true);
    expect(c.doneAt()).toBe(tc + 40);
    expect(c.output()?.closedBy).toBe('fast_win');
    expect(c.output()?.responses.map((r) => r.skill_id)).toEqual(['a']);
    expect(c.clock.pending).toBe(0);
  });

  it('§8 step 3 boundary: conf exactly at the fast-win threshold (0.9) is a fast win; 0.89 is not', () => {
    const at = contest();
    claimAndClose(at, [['a'], ['b']]);
    at.respond('a', 'Paris', 0.9);
    expect(at.output()?.closedBy).toBe('fast_win');

    const below = contest();
    claimAndClose(below, [['a'], ['b']]);
    below.respond('a', 'Paris', 0.89);
    expect(below.done()).toBe(false);
  });

  it('§8 step 3 / §5.1: with policy null (early start) a 0.95 response does NOT close the window until JOIN, which closes it at once (fast_win)', () => {
    const c = contest({ policy: null });
    const tc = claimAndClose(c, [['a'], ['b']]);
    c.at(tc + 40);
    c.respond('a', 'Paris', 0.95);
    expect(c.done()).toBe(false);
    c.at(tc + 250);
    expect(c.done()).toBe(false);
    c.join(POLICY);
    expect(c.done()).toBe(true);
    expect(c.doneAt()).toBe(tc + 250);
    expect(c.output()?.closedBy).toBe('fast_win');
    expect(c.output()?.responses.map((r) => r.skill_id)).toEqual(['a']);
    expect(c.clock.pending).toBe(0);
  });

  it('§8 step 3 / §5.1: with policy null and no JOIN, a 0.95 response waits for the others (closedBy all_answered)', () => {
    const c = contest({ policy: null });
    const tc = claimAndClose(c, [['a'], ['b']]);
    c.at(tc + 40);
    c.respond('a', 'Paris', 0.95);
    c.at(tc + 90);
    c.respond('b', 'Lyon', 0.6);
    expect(c.output()?.closedBy).toBe('all_answered');
    expect(c.doneAt()).toBe(tc + 90);
  });

  it('§8 step 3 / §5.1: a JOIN during the poll arms fast win for the collection that follows', () => {
    const c = contest({ policy: null });
    c.pong('a');
    c.pong('b');
    c.at(5);
    c.join(POLICY);
    c.at(QUIET);
    expect(c.requests.map((r) => r.at)).toEqual([QUIET]);
    c.respond('b', 'Paris', 0.97);
    expect(c.output()?.closedBy).toBe('fast_win');
  });

  it('§8 step 3 / §5.1: a JOIN whose live policy blacklists the early fast-win candidate does not close the window', () => {
    const c = contest({ policy: null });
    const tc = claimAndClose(c, [['a'], ['b']]);
    c.respond('a', 'Paris', 0.95);
    c.at(tc + 100);
    c.join({ ...POLICY, blacklistedSkills: ['a'] });
    expect(c.done()).toBe(false);
    c.at(tc + 200);
    c.respond('b', 'Lyon', 0.6);
    expect(c.output()?.closedBy).toBe('all_answered');
  });

  it('§8 step 3: fast win disabled (fastWinConfidence null) never closes early', () => {
    const c = contest({ policy: { ...POLICY, fastWinConfidence: null } });
    const tc = claimAndClose(c, [['a'], ['b']]);
    c.respond('a', 'Paris', 1);
    expect(c.done()).toBe(false);
    c.at(tc + INITIAL - 1);
    expect(c.done()).toBe(false);
    c.at(tc + INITIAL);
    expect(c.output()?.closedBy).toBe('window');
  });

  it('§8 step 3: fast win disabled — a JOIN does not close early either', () => {
    const c = contest({ policy: null });
    claimAndClose(c, [['a'], ['b']]);
    c.respond('a', 'Paris', 1);
    c.join({ ...POLICY, fastWinConfidence: null });
    expect(c.done()).toBe(false);
  });

  it('§8 steps 2–3: a fast-win candidate from a blacklisted skill (policy.blacklistedSkills) does not close the window', () => {
    const c = contest({ policy: { ...POLICY, blacklistedSkills: ['a'] } });
    const tc = claimAndClose(c, [['a'], ['b']]);
    c.at(tc + 10);
    c.respond('a', 'Paris', 0.99);
    expect(c.done()).toBe(false);
    c.at(tc + 20);
    c.respond('b', 'Lyon', 0.95);
    expect(c.output()?.closedBy).toBe('fast_win');
    expect(c.output()?.responses.map((r) => r.skill_id)).toEqual(['a', 'b']);
  });

  it('§8 step 3: a high conf without an answer is not a fast win', () => {
    const c = contest();
    claimAndClose(c, [['a'], ['b']]);
    c.respond('a', undefined, 0.99);
    expect(c.done()).toBe(false);
  });

  it('§8 steps 1–3: the live minimum confidence applies: fast win above a min that the threshold itself is below', () => {
    const c = contest({ policy: { ...POLICY, minConfidence: 0.96 } });
    claimAndClose(c, [['a'], ['b']]);
    c.respond('a', 'Paris', 0.95); // ≥ 0.9 but below the live minimum: cannot survive, cannot fast-win
    expect(c.done()).toBe(false);
  });
});

describe('OVOS-COMMON-QUERY-1 §7.1 stray responses', () => {
  it('§7.1: a response from a non-claimant is ignored (response.ignored not_a_claimant) and does not count', () => {
    const c = contest();
    const tc = claimAndClose(c, [['a']]);
    c.respond('z', 'Berlin', 0.99);
    expect(c.responseIgnored).toEqual([{ type: 'response.ignored', skill_id: 'z', reason: 'not_a_claimant' }]);
    expect(c.done()).toBe(false); // neither a fast win nor "all answered"
    c.at(tc + 10);
    c.respond('a', 'Paris', 0.7);
    expect(c.output()?.closedBy).toBe('all_answered');
    expect(c.output()?.responses.map((r) => r.skill_id)).toEqual(['a']);
  });

  it('§7.1: a skill that declined in the poll is not a claimant; its response is ignored', () => {
    const c = contest();
    c.pong('a');
    c.pong('b', false);
    c.at(QUIET);
    c.respond('b', 'Berlin', 0.99);
    expect(c.responseIgnored).toEqual([{ type: 'response.ignored', skill_id: 'b', reason: 'not_a_claimant' }]);
    expect(c.done()).toBe(false);
  });

  it('§7.1: a duplicate response is ignored; the first one stands', () => {
    const c = contest();
    const tc = claimAndClose(c, [['a'], ['b']]);
    c.at(tc + 10);
    c.respond('a', 'Paris', 0.6);
    c.at(tc + 20);
    c.respond('a', 'Marseille', 0.8);
    expect(c.responseIgnored).toEqual([{ type: 'response.ignored', skill_id: 'a', reason: 'duplicate' }]);
    expect(c.done()).toBe(false); // a's duplicate does not stand in for b
    c.at(tc + 30);
    c.respond('b');
    expect(c.output()?.responses).toEqual([
      { skill_id: 'a', answer: 'Paris', conf: 0.6, receivedAt: tc + 10, order: 0 },
      { skill_id: 'b', receivedAt: tc + 30, order: 1 },
    ]);
  });

  it('§7.1: a duplicate fast-win response after a slow first one does not close the window', () => {
    const c = contest();
    claimAndClose(c, [['a'], ['b']]);
    c.respond('a', 'Paris', 0.6);
    c.respond('a', 'Paris!', 0.99);
    expect(c.done()).toBe(false);
  });

  it('§7.1: a response before the poll closed (no request sent yet) is not collected', () => {
    const c = contest();
    c.pong('a');
    c.respond('a', 'Paris', 0.99);
    expect(c.responseIgnored.map((e) => e.skill_id)).toEqual(['a']);
    c.at(QUIET);
    expect(c.responseIds()).toEqual([]);
    expect(c.done()).toBe(false);
  });
});

describe('timer hygiene (STYLE 3, ENGINEERING-NOTES)', () => {
  it('no pending timers once done, whatever closed the contest', () => {
    const noClaimant = contest();
    noClaimant.at(POLL);
    const allAnswered = contest();
    claimAndClose(allAnswered, [['a']]);
    allAnswered.respond('a', 'Paris', 0.7);
    const fastWin = contest();
    claimAndClose(fastWin, [['a'], ['b']]);
    fastWin.respond('a', 'Paris', 0.95);
    const window = contest();
    claimAndClose(window, [['a', 100]]);
    window.at(QUIET + 100);
    const joined = contest({ policy: null });
    claimAndClose(joined, [['a'], ['b']]);
    joined.respond('a', 'Paris', 0.95);
    joined.join(POLICY);
    const byCeiling = contest();
    byCeiling.at(POLL - 1);
    byCeiling.pong('a');
    byCeiling.at(POLL);
    byCeiling.respond('a');
    const outputs = [noClaimant, allAnswered, fastWin, window, joined, byCeiling].map((c) => c.output()?.closedBy);
    expect(outputs).toEqual(['no_claimant', 'all_answered', 'fast_win', 'window', 'fast_win', 'all_answered']);
    for (const c of [noClaimant, allAnswered, fastWin, window, joined, byCeiling]) {
      expect(c.clock.pending).toBe(0);
      expect(c.errors).toEqual([]);
    }
  });

  it('exactly one timer is pending while waiting (poll ceiling, then quiet + ceiling, then the collection window)', () => {
    const c = contest();
    expect(c.clock.pending).toBe(1);
    c.pong('a');
    expect(c.clock.pending).toBe(2);
    c.pong('b');
    expect(c.clock.pending).toBe(2); // the quiet timer was re-armed, not added
    c.at(QUIET);
    expect(c.clock.pending).toBe(1);
  });
});
