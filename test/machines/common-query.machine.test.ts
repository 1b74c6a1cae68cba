/**
 * The common-query contest machine alone (OVOS-COMMON-QUERY-1 §6–§8), on the deterministic ManualClock: no bus,
 * `sendPing` and `sendRequests` provided as recorders. Times are relative to the contest start (the clock starts
 * at 0). An event sent "at T" arrives after every timer due at T has fired — as on the bus, where a message is
 * delivered after the timers of its instant.
 *
 * Defaults (Appendix A and this project's config): poll ceiling 500 ms, claim bound 125 ms (the 100 ms pong bound
 * plus a 25 ms allowance), collection initial 3 s, ceiling 5 s, min conf 0.5, fast win 0.9.
 *
 * The rules under test (the machine's header):
 *  - the poll closes at the first of: a claim is in hand and every skill on the roster (`knownSkills`) has answered,
 *    true or false, or is gone; the claim bound — unless a skill known to answer every poll (`answeringSkills`) is
 *    still outstanding, in which case it is waited for; the poll ceiling;
 *  - collection closes at the first of: every claimant responded or is gone (`all_answered`); a fast win under the live
 *    policy (`fast_win`); the initial window (max latency_ms + round trip, missing → initial, clamped) has passed
 *    AND one round trip (the largest claimant pong delay, at least the allowance: 0 here unless a test sets it)
 *    has passed since the first surviving answer arrived (`window`); the ceiling (`ceiling`). Before a JOIN
 *    (policy null) nothing survives.
 */
import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { createMessage } from '../../src/bus/message.js';
import { ManualClock } from '../../src/clock/manual-clock.js';
import type { SelectionPolicy } from '../../machines/common-query/selection.js';
import {
  collectionWindowMs,
  commonQueryMachine,
  type Claimant,
  type CommonQueryEmitted,
  type CommonQueryInput,
  type CommonQueryOutput,
} from '../../machines/common-query/common-query.machine.js';

const POLL = 500;
const CLAIM = 125;
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
    pollClaimBoundMs: CLAIM,
    collectionInitialMs: INITIAL,
    // The transport allowance is 0 here unless a test is about it (the describe block of its own below).
    collectionAllowanceMs: 0,
    collectionCeilingMs: CEILING,
    knownSkills: [],
    answeringSkills: [],
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
  const done = (): boolean => actor.getSnapshot().status === 'done';
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
    pong: (skill_id: string, can_answer = true, latency_ms?: number): void => {
      expect(done()).toBe(false); // a finished contest gets nothing: the supervisor drops it (no_live_contest)
      actor.send(latency_ms === undefined ? { type: 'PONG', skill_id, can_answer } : { type: 'PONG', skill_id, can_answer, latency_ms });
    },
    respond: (skill_id: string, answer?: string, conf?: number): void => {
      expect(done()).toBe(false);
      const base = { type: 'RESPONSE' as const, skill_id, receivedAt: clock.now() };
      actor.send(answer === undefined ? base : conf === undefined ? { ...base, answer } : { ...base, answer, conf });
    },
    join: (policy: SelectionPolicy): void => actor.send({ type: 'JOIN', policy, at: clock.now() }),
    done,
    doneAt: (): number | null => doneAt,
    output: (): CommonQueryOutput | undefined => actor.getSnapshot().output,
    claimantIds: (): string[] => actor.getSnapshot().context.claimants.map((c) => c.skill_id),
    responseIds: (): string[] => actor.getSnapshot().context.responses.map((r) => r.skill_id),
  };
}

type Contest = ReturnType<typeof contest>;

/** The contest is still open at T−1 and closes at exactly T, by `by`. */
function openUntil(c: Contest, T: number, by: CommonQueryOutput['closedBy']): void {
  c.at(T - 1);
  expect(c.done()).toBe(false);
  c.at(T);
  expect(c.doneAt()).toBe(T);
  expect(c.output()?.closedBy).toBe(by);
}

/**
 * Claim with the given skills at t = 0 on an empty roster: the poll closes at the claim bound (125). Returns the
 * time the requests went out — collection times below are relative to it.
 */
function claimAndClose(c: Contest, claims: ReadonlyArray<readonly [string, number?]>): number {
  for (const [skill, latency] of claims) c.pong(skill, true, latency);
  c.at(CLAIM);
  expect(c.requests.map((r) => r.at)).toEqual([CLAIM]);
  return CLAIM;
}

describe('OVOS-COMMON-QUERY-1 §6.1 ping', () => {
  it('§6.1: the ping is broadcast once, at contest start', () => {
    const c = contest({ knownSkills: ['a'], answeringSkills: ['a'] });
    expect(c.pings).toEqual([0]);
    c.at(POLL);
    expect(c.pings).toEqual([0]);
  });
});

describe('OVOS-COMMON-QUERY-1 §6.3 claim bound (nobody known to be outstanding)', () => {
  it('§6.3 boundary claim bound − 1: a claim at 124 ms counts; the poll closes at exactly 125, not at the claim', () => {
    const c = contest();
    c.at(CLAIM - 1);
    c.pong('a');
    expect(c.pongIgnored).toEqual([]);
    expect(c.requests).toEqual([]); // an empty roster: nothing tells the machine that nobody else is coming
    c.at(CLAIM);
    expect(c.requests).toEqual([{ at: CLAIM, claimants: [{ skill_id: 'a' }] }]);
  });

  it('§6.3 boundary claim bound: a claim at exactly 125 ms is too late (pong.ignored poll_closed), not a claimant', () => {
    const c = contest();
    c.pong('a');
    c.at(CLAIM);
    expect(c.requests.map((r) => r.at)).toEqual([CLAIM]);
    c.pong('b');
    expect(c.pongIgnored).toEqual([{ type: 'pong.ignored', skill_id: 'b', reason: 'poll_closed' }]);
    expect(c.claimantIds()).toEqual(['a']);
  });

  it('§6.3 boundary claim bound + 1: a claim at 126 ms is too late as well', () => {
    const c = contest();
    c.pong('a');
    c.at(CLAIM + 1);
    c.pong('b');
    expect(c.pongIgnored).toEqual([{ type: 'pong.ignored', skill_id: 'b', reason: 'poll_closed' }]);
    expect(c.requests).toEqual([{ at: CLAIM, claimants: [{ skill_id: 'a' }] }]);
  });

  it('§6.3: nobody claims and nobody is known → no_claimant at the claim bound (125), not at the ceiling (500)', () => {
    const c = contest();
    c.at(CLAIM - 1);
    expect(c.done()).toBe(false);
    c.at(CLAIM);
    expect(c.done()).toBe(true);
    expect(c.doneAt()).toBe(CLAIM);
    expect(c.output()).toEqual({ utterance: Q, lang: 'en-US', claimants: [], waited: [], polled: [], responses: [], closedBy: 'no_claimant' });
    expect(c.requests).toEqual([]);
    expect(c.clock.pending).toBe(0);
  });

  it('§6.3: the claim bound comes from input, and never reaches past the poll ceiling', () => {
    const short = contest({ pollClaimBoundMs: 60 });
    short.at(59);
    expect(short.done()).toBe(false);
    short.at(60);
    expect(short.output()?.closedBy).toBe('no_claimant');

    const long = contest({ pollClaimBoundMs: 800 });
    long.at(POLL - 1);
    expect(long.done()).toBe(false);
    long.at(POLL);
    expect(long.doneAt()).toBe(POLL);
  });

  it('§6.3: a known skill NOT known to answer every poll is not waited for past the claim bound', () => {
    const c = contest({ knownSkills: ['a', 'b'], answeringSkills: [] });
    c.at(10);
    c.pong('a');
    c.at(CLAIM - 1);
    expect(c.requests).toEqual([]); // b is still outstanding: no early close on the roster
    c.at(CLAIM);
    expect(c.requests).toEqual([{ at: CLAIM, claimants: [{ skill_id: 'a' }] }]);
  });

  it('§6.3: skills known to answer every poll that have all answered before the bound do not extend the poll', () => {
    const c = contest({ knownSkills: ['a', 'b'], answeringSkills: ['a'] });
    c.at(10);
    c.pong('a', false);
    c.at(CLAIM - 1);
    expect(c.done()).toBe(false); // b (not known to answer every poll) has not answered: no roster close
    c.at(CLAIM);
    expect(c.output()?.closedBy).toBe('no_claimant');
    expect(c.doneAt()).toBe(CLAIM);
  });
});

describe('OVOS-COMMON-QUERY-1 §6.3 early close on the roster (every known skill answered)', () => {
  it('§6.3: the poll closes the moment the last known skill answers — requests go out at its pong (30 ms)', () => {
    const c = contest({ knownSkills: ['a', 'b'] });
    c.at(10);
    c.pong('a');
    c.at(29);
    expect(c.requests).toEqual([]);
    c.at(30);
    c.pong('b', true, 200);
    expect(c.requests).toEqual([{ at: 30, claimants: [{ skill_id: 'a' }, { skill_id: 'b', latency_ms: 200 }] }]);
  });

  it('§6.3: a decline is an answer — a claim and a decline from the whole roster close the poll; the decliner is polled, not a claimant', () => {
    const c = contest({ knownSkills: ['a', 'b'] });
    c.at(5);
    c.pong('a');
    c.at(8);
    c.pong('b', false);
    expect(c.requests).toEqual([{ at: 8, claimants: [{ skill_id: 'a' }] }]);
    expect(c.pongIgnored).toEqual([]); // a decline is recorded, not reported as ignored
    c.respond('a', 'Paris', 0.8);
    expect(c.output()?.polled).toEqual(['a', 'b']);
    expect(c.output()?.claimants).toEqual([{ skill_id: 'a' }]);
  });

  it('§6.2/§6.3: every known skill declining with no claim in hand does not close the poll: a silent-by-§6.2 skill\'s claim within the claim bound is heard', () => {
    const c = contest({ knownSkills: ['a'], answeringSkills: ['a'] });
    c.at(5);
    c.pong('a', false);
    expect(c.done()).toBe(false);
    c.at(CLAIM - 1);
    c.pong('stranger'); // never ponged before: on no roster — and now a claim is in hand with every known skill heard
    expect(c.requests).toEqual([{ at: CLAIM - 1, claimants: [{ skill_id: 'stranger' }] }]);
  });

  it('§6.3: every known skill declining and nobody else claiming closes the poll at the claim bound (no_claimant)', () => {
    const c = contest({ knownSkills: ['a'], answeringSkills: ['a'] });
    c.at(5);
    c.pong('a', false);
    c.at(CLAIM - 1);
    expect(c.done()).toBe(false);
    c.at(CLAIM);
    expect(c.done()).toBe(true);
    expect(c.output()).toEqual({ utterance: Q, lang: 'en-US', claimants: [], waited: ['a'], polled: ['a'], responses: [], closedBy: 'no_claimant' });
    expect(c.requests).toEqual([]);
    expect(c.clock.pending).toBe(0);
  });

  it('§6.3: with a claim in hand, the last known skill\'s decline closes the poll at once', () => {
    const c = contest({ knownSkills: ['a', 'b'] });
    c.at(3);
    c.pong('a');
    c.at(7);
    c.pong('b', false);
    expect(c.requests).toEqual([{ at: 7, claimants: [{ skill_id: 'a' }] }]);
  });

  it('§6.3: a claim from a skill not on the roster counts, but does not stand in for a known skill', () => {
    const c = contest({ knownSkills: ['a'] });
    c.at(5);
    c.pong('newcomer');
    expect(c.requests).toEqual([]);
    c.at(20);
    c.pong('a');
    expect(c.requests).toEqual([{ at: 20, claimants: [{ skill_id: 'newcomer' }, { skill_id: 'a' }] }]);
  });

  it('§6.3: a known skill answering twice is one answer (duplicate) — the other known skill is still awaited', () => {
    const c = contest({ knownSkills: ['a', 'b'] });
    c.pong('a');
    c.pong('a');
    expect(c.pongIgnored).toEqual([{ type: 'pong.ignored', skill_id: 'a', reason: 'duplicate' }]);
    c.at(CLAIM - 1);
    expect(c.requests).toEqual([]);
    c.at(CLAIM);
    expect(c.requests).toEqual([{ at: CLAIM, claimants: [{ skill_id: 'a' }] }]);
  });
});

describe('OVOS-COMMON-QUERY-1 §6.3 skills known to answer every poll, and the poll ceiling', () => {
  it('§6.3: a skill known to answer every poll is waited for past the claim bound; its late claim (300 ms) counts and closes the poll', () => {
    const c = contest({ knownSkills: ['a'], answeringSkills: ['a'] });
    c.at(CLAIM);
    expect(c.done()).toBe(false);
    c.at(300);
    c.pong('a', true, 100);
    expect(c.requests).toEqual([{ at: 300, claimants: [{ skill_id: 'a', latency_ms: 100 }] }]);
  });

  it('§6.3 boundary poll ceiling − 1: a late claim at 499 ms from a skill waited for counts', () => {
    const c = contest({ knownSkills: ['a'], answeringSkills: ['a'] });
    c.at(POLL - 1);
    expect(c.done()).toBe(false);
    c.pong('a');
    expect(c.requests).toEqual([{ at: POLL - 1, claimants: [{ skill_id: 'a' }] }]);
  });

  it('§6.3 boundary poll ceiling: at exactly 500 ms the poll has closed — the claim is ignored (poll_closed)', () => {
    const c = contest({ knownSkills: ['a', 'b'], answeringSkills: ['a'] });
    c.pong('b'); // keeps the contest alive past the poll
    c.at(POLL - 1);
    expect(c.requests).toEqual([]);
    c.at(POLL);
    expect(c.requests).toEqual([{ at: POLL, claimants: [{ skill_id: 'b' }] }]);
    c.pong('a');
    expect(c.pongIgnored).toEqual([{ type: 'pong.ignored', skill_id: 'a', reason: 'poll_closed' }]);
    expect(c.claimantIds()).toEqual(['b']);
  });

  it('§6.3 boundary poll ceiling + 1: a claim at 501 ms is ignored as well', () => {
    const c = contest({ knownSkills: ['a', 'b'], answeringSkills: ['a'] });
    c.pong('b');
    c.at(POLL + 1);
    c.pong('a');
    expect(c.pongIgnored).toEqual([{ type: 'pong.ignored', skill_id: 'a', reason: 'poll_closed' }]);
    expect(c.requests).toEqual([{ at: POLL, claimants: [{ skill_id: 'b' }] }]);
  });

  it('§6.3: a skill waited for that never answers: nobody claimed → no_claimant at the ceiling (500)', () => {
    const c = contest({ knownSkills: ['a'], answeringSkills: ['a'] });
    c.at(POLL - 1);
    expect(c.done()).toBe(false);
    c.at(POLL);
    expect(c.doneAt()).toBe(POLL);
    expect(c.output()).toEqual({ utterance: Q, lang: 'en-US', claimants: [], waited: ['a'], polled: [], responses: [], closedBy: 'no_claimant' });
    expect(c.clock.pending).toBe(0);
  });

  it('§6.3: while the poll waits past the claim bound, any claim still counts; the awaited skill’s decline closes it', () => {
    const c = contest({ knownSkills: ['a', 'b'], answeringSkills: ['a'] });
    c.at(200);
    c.pong('newcomer');
    c.at(250);
    c.pong('b');
    expect(c.requests).toEqual([]); // a is still awaited
    c.at(300);
    c.pong('a', false);
    expect(c.requests).toEqual([{ at: 300, claimants: [{ skill_id: 'newcomer' }, { skill_id: 'b' }] }]);
    expect(c.actor.getSnapshot().context.polled).toEqual(['newcomer', 'b', 'a']);
  });

  it('§6.3: past the claim bound, the skill waited for going away closes the poll at once — a known skill not waited for (b) need not have answered', () => {
    const c = contest({ knownSkills: ['a', 'b'], answeringSkills: ['a'] });
    c.pong('newcomer');
    c.at(200);
    expect(c.done()).toBe(false);
    c.actor.send({ type: 'GONE', skill_id: 'a' });
    expect(c.requests).toEqual([{ at: 200, claimants: [{ skill_id: 'newcomer' }] }]);
  });

  it('§6.3: past the claim bound, one of two skills waited for going away is no longer waited for — the other one\'s answer closes the poll', () => {
    const c = contest({ knownSkills: ['a', 'b'], answeringSkills: ['a', 'b'] });
    c.at(150);
    c.actor.send({ type: 'GONE', skill_id: 'a' });
    expect(c.done()).toBe(false);
    c.at(200);
    c.pong('b', false);
    expect(c.doneAt()).toBe(200);
    expect(c.output()?.closedBy).toBe('no_claimant');
  });

  it('§6.3: the ceiling comes from input (deployment-defined)', () => {
    const c = contest({ pollWindowMs: 300, knownSkills: ['a'], answeringSkills: ['a'] });
    c.at(299);
    expect(c.done()).toBe(false);
    c.at(300);
    expect(c.output()?.closedBy).toBe('no_claimant');
  });
});

describe('OVOS-COMMON-QUERY-1 §6.2/§6.3 the cold start (awaitFirstClaim): no claim is lost for the claim bound while the roster is new', () => {
  it('§6.3 cold start: no claim at the claim bound → the poll waits on; a claim at 300 ms is a claimant (asked one claim bound later, knowing no skill)', () => {
    const c = contest({ awaitFirstClaim: true });
    c.at(CLAIM);
    expect(c.done()).toBe(false);
    expect(c.requests).toEqual([]);
    c.at(300);
    c.pong('a', true, 100);
    c.at(300 + CLAIM);
    expect(c.requests).toEqual([{ at: 300 + CLAIM, claimants: [{ skill_id: 'a', latency_ms: 100 }] }]);
  });

  it('§6.3 cold start, boundary poll ceiling − 1: a first claim at 499 ms counts (the poll closes at the ceiling)', () => {
    const c = contest({ awaitFirstClaim: true });
    c.at(POLL - 1);
    c.pong('a');
    expect(c.requests).toEqual([]);
    c.at(POLL);
    expect(c.requests).toEqual([{ at: POLL, claimants: [{ skill_id: 'a' }] }]);
  });

  it('§6.2 cold start, boundary poll ceiling: nobody claimed → no_claimant at exactly 500 ms, nothing left armed', () => {
    const c = contest({ awaitFirstClaim: true });
    openUntil(c, POLL, 'no_claimant');
    expect(c.output()).toEqual({ utterance: Q, lang: 'en-US', claimants: [], waited: [], polled: [], responses: [], closedBy: 'no_claimant' });
    expect(c.clock.pending).toBe(0);
  });

  it('§6.2 cold start: declines past the claim bound do not close the poll (a decline is not a claim); the first claim after them closes it one claim bound later', () => {
    const c = contest({ awaitFirstClaim: true, knownSkills: ['a', 'b'] });
    c.at(200);
    c.pong('a', false);
    c.pong('b', false);
    expect(c.done()).toBe(false);
    c.at(350);
    c.pong('c');
    c.at(350 + CLAIM - 1);
    expect(c.requests).toEqual([]);
    c.at(350 + CLAIM);
    expect(c.requests).toEqual([{ at: 350 + CLAIM, claimants: [{ skill_id: 'c' }] }]);
    expect(c.actor.getSnapshot().context.polled).toEqual(['a', 'b', 'c']);
  });

  it('§6.2 cold start: a skill that declined cannot claim later in the same poll (duplicate) — the poll stays open for another', () => {
    const c = contest({ awaitFirstClaim: true });
    c.at(200);
    c.pong('a', false);
    c.pong('a');
    expect(c.pongIgnored).toEqual([{ type: 'pong.ignored', skill_id: 'a', reason: 'duplicate' }]);
    expect(c.done()).toBe(false);
    expect(c.claimantIds()).toEqual([]);
  });

  it('§6.3 cold start knowing a skill: a claim in hand does not close the poll at the claim bound, as when warm — one claim bound after it (the roster may not know every skill yet)', () => {
    const c = contest({ awaitFirstClaim: true, knownSkills: ['a'] });
    c.at(10);
    c.pong('b');
    c.at(CLAIM);
    expect(c.requests).toEqual([]);
    c.at(10 + CLAIM - 1);
    c.pong('c');
    expect(c.requests).toEqual([]);
    c.at(10 + CLAIM);
    expect(c.requests).toEqual([{ at: 10 + CLAIM, claimants: [{ skill_id: 'b' }, { skill_id: 'c' }] }]);
  });

  it.each([
    ['before', 50, 10 + CLAIM],
    ['after', 200, 200],
  ])('§6.3 cold start knowing skills: every known skill claiming does not close the poll before one claim bound past the first claim (rule 1 waits while the roster is new) — the last known claim %s that bound, the poll closes at %i → %i', (_, last, closes) => {
    const c = contest({ awaitFirstClaim: true, knownSkills: ['a', 'b'], answeringSkills: ['a', 'b'] });
    c.at(10);
    c.pong('a');
    c.at(last);
    c.pong('b');
    if (closes > last) {
      c.at(closes - 1);
      c.pong('unknown yet');
      expect(c.requests).toEqual([]);
    }
    c.at(closes);
    expect(c.requests.map((r) => r.at)).toEqual([closes]);
    expect(c.claimantIds()).toEqual(closes > last ? ['a', 'b', 'unknown yet'] : ['a', 'b']);
  });

  it('§6.3 cold start knowing no skill: the poll stays open one claim bound past its first claim — a second claim at 10 + 124 ms is a claimant, asked at 10 + 125 ms', () => {
    const c = contest({ awaitFirstClaim: true });
    c.at(10);
    c.pong('quick');
    c.at(CLAIM);
    expect(c.done()).toBe(false);
    c.at(10 + CLAIM - 1);
    c.pong('better');
    expect(c.requests).toEqual([]);
    c.at(10 + CLAIM);
    expect(c.requests).toEqual([{ at: 10 + CLAIM, claimants: [{ skill_id: 'quick' }, { skill_id: 'better' }] }]);
  });

  it('§6.3 cold start knowing no skill, boundary: a claim exactly one claim bound after the first comes after the poll closed', () => {
    const c = contest({ awaitFirstClaim: true });
    c.at(200);
    c.pong('first');
    c.at(200 + CLAIM);
    c.pong('second');
    expect(c.requests).toEqual([{ at: 200 + CLAIM, claimants: [{ skill_id: 'first' }] }]);
    expect(c.pongIgnored).toEqual([{ type: 'pong.ignored', skill_id: 'second', reason: 'poll_closed' }]);
  });

  it('§6.3 cold start knowing no skill: a first claim at 0 ms still leaves the poll open to the claim bound, never shorter', () => {
    const c = contest({ awaitFirstClaim: true });
    c.pong('instant');
    c.at(CLAIM - 1);
    c.pong('other');
    c.at(CLAIM);
    expect(c.requests).toEqual([{ at: CLAIM, claimants: [{ skill_id: 'instant' }, { skill_id: 'other' }] }]);
  });

  it('§6.3 cold start knowing no skill: declines do not open the spread (a decline is not a claim)', () => {
    const c = contest({ awaitFirstClaim: true });
    c.at(10);
    c.pong('a', false);
    c.at(300);
    expect(c.done()).toBe(false);
    c.pong('b');
    c.at(300 + CLAIM - 1);
    expect(c.done()).toBe(false);
    c.at(300 + CLAIM);
    expect(c.requests).toEqual([{ at: 300 + CLAIM, claimants: [{ skill_id: 'b' }] }]);
  });

  it('§6.3 cold start knowing no skill: a skill learnt to claim late (AWAIT) still outstanding when the spread ends is waited for — its claim closes the poll', () => {
    const c = contest({ awaitFirstClaim: true });
    c.at(20);
    c.pong('b');
    c.actor.send({ type: 'AWAIT', skill_id: 'late' });
    c.at(20 + CLAIM);
    expect(c.done()).toBe(false);
    c.at(400);
    c.pong('late');
    expect(c.requests).toEqual([{ at: 400, claimants: [{ skill_id: 'b' }, { skill_id: 'late' }] }]);
  });

  it('§6.3 cold start with a complete roster (only the legacy dialect) knowing no skill: no spread — a claim in hand at the claim bound closes the poll there', () => {
    const c = contest({ awaitFirstClaim: true, rosterComplete: true });
    c.at(10);
    c.pong('a');
    c.at(CLAIM);
    expect(c.requests).toEqual([{ at: CLAIM, claimants: [{ skill_id: 'a' }] }]);
  });

  it('§6.3 cold start: the claim of a skill gone before the claim bound is no claim in hand — the poll waits on for one that can be answered', () => {
    const c = contest({ awaitFirstClaim: true });
    c.at(10);
    c.pong('a');
    c.actor.send({ type: 'GONE', skill_id: 'a' });
    c.at(CLAIM);
    expect(c.done()).toBe(false);
    c.at(200);
    c.pong('b');
    c.at(200 + CLAIM);
    expect(c.requests).toEqual([{ at: 200 + CLAIM, claimants: [{ skill_id: 'a' }, { skill_id: 'b' }] }]);
  });

  it('§6.3 cold start knowing no skill: a claim from a skill already gone opens no spread — the first live claim (at 100 ms) does, and the poll closes one claim bound after it', () => {
    const c = contest({ awaitFirstClaim: true });
    c.actor.send({ type: 'GONE', skill_id: 'gone' });
    c.at(10);
    c.pong('gone');
    c.at(100);
    c.pong('live');
    c.at(10 + CLAIM);
    expect(c.done()).toBe(false);
    c.at(100 + CLAIM);
    expect(c.requests).toEqual([{ at: 100 + CLAIM, claimants: [{ skill_id: 'gone' }, { skill_id: 'live' }] }]);
  });

  it.each([100, 300])('§6.3 cold start knowing no skill: the first claimant going away during its spread leaves no live claim — a claim at %i ms (during that spread, or after it) opens a spread of its own', (at) => {
    const c = contest({ awaitFirstClaim: true });
    c.at(10);
    c.pong('a');
    c.at(50);
    c.actor.send({ type: 'GONE', skill_id: 'a' });
    c.at(at);
    c.pong('b');
    c.at(at + CLAIM - 1); // past the end of the first spread (10 + CLAIM) too
    expect(c.done()).toBe(false);
    c.at(at + CLAIM);
    expect(c.requests).toEqual([{ at: at + CLAIM, claimants: [{ skill_id: 'a' }, { skill_id: 'b' }] }]);
  });

  it('§6.3 cold start: a skill known to answer every poll is waited for, and once it has declined the poll still waits for a first claim — a newcomer claiming at 300 ms is a claimant, asked one claim bound later', () => {
    const c = contest({ awaitFirstClaim: true, knownSkills: ['a'], answeringSkills: ['a'] });
    c.at(200);
    c.pong('a', false);
    expect(c.done()).toBe(false);
    c.at(300);
    c.pong('newcomer');
    c.at(300 + CLAIM);
    expect(c.requests).toEqual([{ at: 300 + CLAIM, claimants: [{ skill_id: 'newcomer' }] }]);
  });

  it.each([
    ['within', 250, 150 + CLAIM],
    ['past', 300, 300],
  ])('§6.3 cold start: a first claim does not close the poll while a skill known to answer every poll is outstanding — its answer %s one claim bound of the claim (at %i) closes it at %i', (_, answer, closes) => {
    const c = contest({ awaitFirstClaim: true, knownSkills: ['a'], answeringSkills: ['a'] });
    c.at(150);
    c.pong('b');
    expect(c.done()).toBe(false);
    c.at(answer);
    c.pong('a', false);
    c.at(closes);
    expect(c.requests).toEqual([{ at: closes, claimants: [{ skill_id: 'b' }] }]);
  });

  it('§6.3 cold start: a skill learnt to claim late while the poll waits (AWAIT) is waited for too — another skill\'s first claim does not close the poll without it', () => {
    const c = contest({ awaitFirstClaim: true });
    c.at(150);
    c.actor.send({ type: 'AWAIT', skill_id: 'late' });
    c.pong('b');
    expect(c.done()).toBe(false);
    c.at(300);
    c.pong('late');
    expect(c.requests).toEqual([{ at: 300, claimants: [{ skill_id: 'b' }, { skill_id: 'late' }] }]);
  });

  it('§6.3 cold start: the skill awaited past the claim bound going away leaves the poll waiting for a first claim (none in hand)', () => {
    const c = contest({ awaitFirstClaim: true, knownSkills: ['a'], answeringSkills: ['a'] });
    c.at(200);
    c.actor.send({ type: 'GONE', skill_id: 'a' });
    expect(c.done()).toBe(false);
    c.at(320);
    c.pong('b');
    c.at(320 + CLAIM);
    expect(c.requests).toEqual([{ at: 320 + CLAIM, claimants: [{ skill_id: 'b' }] }]);
  });

  it('§6.3 cold start with a complete roster (only the legacy dialect): every known skill declining past the claim bound closes the poll at the last answer, not at the ceiling', () => {
    const c = contest({ awaitFirstClaim: true, rosterComplete: true, knownSkills: ['a', 'b'] });
    c.at(30);
    c.pong('a', false);
    c.at(180);
    c.pong('b', false);
    expect(c.doneAt()).toBe(180);
    expect(c.output()?.closedBy).toBe('no_claimant');
  });

  it('§6.3 cold start with a complete roster: the last known skill going away past the claim bound closes the poll too', () => {
    const c = contest({ awaitFirstClaim: true, rosterComplete: true, knownSkills: ['a', 'b'] });
    c.at(30);
    c.pong('a', false);
    c.at(180);
    c.actor.send({ type: 'GONE', skill_id: 'b' });
    expect(c.doneAt()).toBe(180);
  });

  it('§6.3 cold start: a claim from a skill already gone is no claim in hand — the poll waits on for one that can be answered', () => {
    const c = contest({ awaitFirstClaim: true });
    c.actor.send({ type: 'GONE', skill_id: 'a' });
    c.at(150);
    c.pong('a');
    expect(c.done()).toBe(false);
    c.at(200);
    c.pong('b');
    c.at(200 + CLAIM);
    expect(c.requests).toEqual([{ at: 200 + CLAIM, claimants: [{ skill_id: 'a' }, { skill_id: 'b' }] }]);
  });

  it('§6.3 without the cold start (the default) the same silent poll closes at the claim bound', () => {
    const c = contest({ awaitFirstClaim: false });
    openUntil(c, CLAIM, 'no_claimant');
  });
});

describe('OVOS-COMMON-QUERY-1 §6.2 claims', () => {
  it('§6.2: can_answer false is not a claim — recorded as polled, never reported as ignored, never asked', () => {
    const c = contest();
    c.at(10);
    c.pong('a', false);
    expect(c.pongIgnored).toEqual([]);
    expect(c.claimantIds()).toEqual([]);
    c.at(CLAIM);
    expect(c.output()).toEqual({ utterance: Q, lang: 'en-US', claimants: [], waited: [], polled: ['a'], responses: [], closedBy: 'no_claimant' });
    expect(c.requests).toEqual([]);
  });

  it('§6.2: can_answer false next to another skill’s claim: only the claimant is asked', () => {
    const c = contest();
    c.pong('a');
    c.pong('b', false);
    c.at(CLAIM);
    expect(c.requests).toEqual([{ at: CLAIM, claimants: [{ skill_id: 'a' }] }]);
  });

  it('§6.2: a second pong from a claimant is ignored as duplicate and cannot change its latency_ms', () => {
    const c = contest();
    c.pong('a', true, 100);
    c.pong('a', true, 4_000);
    expect(c.pongIgnored).toEqual([{ type: 'pong.ignored', skill_id: 'a', reason: 'duplicate' }]);
    c.at(CLAIM);
    expect(c.requests[0]?.claimants).toEqual([{ skill_id: 'a', latency_ms: 100 }]);
  });

  it('§6.2: a skill that declined cannot claim later in the same poll (duplicate)', () => {
    const c = contest();
    c.pong('a', false);
    c.pong('a', true);
    expect(c.pongIgnored).toEqual([{ type: 'pong.ignored', skill_id: 'a', reason: 'duplicate' }]);
    c.at(CLAIM);
    expect(c.output()?.closedBy).toBe('no_claimant');
  });

  it('§6.2: latency_ms is kept on the claimant as reported', () => {
    const c = contest();
    c.pong('a', true, 800);
    c.pong('b');
    c.at(CLAIM);
    expect(c.requests[0]?.claimants).toEqual([{ skill_id: 'a', latency_ms: 800 }, { skill_id: 'b' }]);
  });
});

describe('OVOS-COMMON-QUERY-1 §7.2 collectionWindowMs()', () => {
  const window = (claimants: Claimant[], initial = INITIAL, ceiling = CEILING, allowance = 0): number =>
    collectionWindowMs({ claimants, collectionInitialMs: initial, collectionAllowanceMs: allowance, collectionCeilingMs: ceiling });

  it('§7.2 + transport allowance: a declared latency_ms counts with the allowance added; the fixed initial window does not', () => {
    expect(window([{ skill_id: 'a', latency_ms: 0 }], INITIAL, CEILING, 50)).toBe(50);
    expect(window([{ skill_id: 'a', latency_ms: 200 }, { skill_id: 'b', latency_ms: 800 }], INITIAL, CEILING, 50)).toBe(850);
    expect(window([{ skill_id: 'a', latency_ms: 200 }, { skill_id: 'b' }], INITIAL, CEILING, 50)).toBe(INITIAL);
    expect(window([{ skill_id: 'a', latency_ms: 2_990 }, { skill_id: 'b' }], INITIAL, CEILING, 50)).toBe(3_040);
    expect(window([{ skill_id: 'a', latency_ms: CEILING - 10 }], INITIAL, CEILING, 50)).toBe(CEILING);
  });

  it('§7.2 + the bus round trip: a pong slower than the allowance stretches that claimant\'s estimate by its delay (49 / 50 / 51 ms around a 50 ms allowance); the largest estimate wins', () => {
    expect(window([{ skill_id: 'a', latency_ms: 0, pong_after_ms: 49 }], INITIAL, CEILING, 50)).toBe(50);
    expect(window([{ skill_id: 'a', latency_ms: 0, pong_after_ms: 50 }], INITIAL, CEILING, 50)).toBe(50);
    expect(window([{ skill_id: 'a', latency_ms: 0, pong_after_ms: 51 }], INITIAL, CEILING, 50)).toBe(51);
    expect(window([{ skill_id: 'a', latency_ms: 0, pong_after_ms: 120 }, { skill_id: 'b', latency_ms: 20, pong_after_ms: 10 }], INITIAL, CEILING, 50)).toBe(120);
    expect(window([{ skill_id: 'a', latency_ms: 100, pong_after_ms: 120 }, { skill_id: 'b', latency_ms: 200, pong_after_ms: 10 }], INITIAL, CEILING, 50)).toBe(250);
    // Without latency_ms the fixed initial window stands, however slow the pong; the ceiling still clamps.
    expect(window([{ skill_id: 'a', pong_after_ms: 400 }], INITIAL, CEILING, 50)).toBe(INITIAL);
    expect(window([{ skill_id: 'a', latency_ms: CEILING - 100, pong_after_ms: 400 }], INITIAL, CEILING, 50)).toBe(CEILING);
  });

  it('§7.2: the initial window is the maximum latency_ms across claimants', () => {
    expect(window([{ skill_id: 'a', latency_ms: 200 }, { skill_id: 'b', latency_ms: 800 }])).toBe(800);
    expect(window([{ skill_id: 'a', latency_ms: 800 }, { skill_id: 'b', latency_ms: 200 }])).toBe(800);
    expect(window([{ skill_id: 'a', latency_ms: 0 }])).toBe(0);
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

describe('OVOS-COMMON-QUERY-1 §7.2 initial window: a surviving answer in hand closes it at the window end', () => {
  it('§7.2 boundary window − 1: a response at 199 of a 200 ms window is collected (here it completes: all_answered)', () => {
    const c = contest();
    const tc = claimAndClose(c, [['a', 200], ['b', 200]]);
    c.at(tc + 50);
    c.respond('a', 'Lyon', 0.6);
    c.at(tc + 199);
    expect(c.done()).toBe(false);
    c.respond('b', 'Paris', 0.85);
    expect(c.output()?.closedBy).toBe('all_answered');
    expect(c.output()?.responses.map((r) => r.skill_id)).toEqual(['a', 'b']);
  });

  it('§7.2 boundary window: at exactly 200 ms, with a survivor in hand, the window closes (window) without the pending claimant', () => {
    const c = contest();
    const tc = claimAndClose(c, [['a', 200], ['b', 200]]);
    c.at(tc + 50);
    c.respond('a', 'Lyon', 0.6);
    c.at(tc + 199);
    expect(c.done()).toBe(false);
    c.at(tc + 200);
    expect(c.done()).toBe(true);
    expect(c.doneAt()).toBe(tc + 200);
    expect(c.output()?.closedBy).toBe('window');
    expect(c.output()?.responses.map((r) => r.skill_id)).toEqual(['a']);
    expect(c.clock.pending).toBe(0);
  });

  it('§7.2 boundary window + 1: b answering at 201 ms finds the contest over (closed at 200)', () => {
    const c = contest();
    const tc = claimAndClose(c, [['a', 200], ['b', 200]]);
    c.at(tc + 50);
    c.respond('a', 'Lyon', 0.6);
    c.at(tc + 201);
    expect(c.doneAt()).toBe(tc + 200);
    expect(c.output()?.responses.map((r) => r.skill_id)).toEqual(['a']);
  });

  it('§7.2: the window is sized from the largest latency_ms — claimants 200 and 800 → it closes at 800, not 200', () => {
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
    c.at(tc + 10);
    c.respond('a', 'Paris', 0.8);
    c.at(tc + INITIAL - 1);
    expect(c.done()).toBe(false);
    c.at(tc + INITIAL);
    expect(c.output()?.closedBy).toBe('window');
  });

  it('§7.2: the initial window and the ceiling come from input', () => {
    const c = contest({ collectionInitialMs: 700, collectionCeilingMs: 1_000 });
    const tc = claimAndClose(c, [['a'], ['b'], ['c', 300]]);
    c.at(tc + 10);
    c.respond('a', 'Paris', 0.8);
    c.at(tc + 699);
    expect(c.done()).toBe(false);
    c.at(tc + 700);
    expect(c.output()?.closedBy).toBe('window');

    const ceiling = contest({ collectionInitialMs: 700, collectionCeilingMs: 1_000 });
    const t2 = claimAndClose(ceiling, [['a'], ['b']]);
    ceiling.at(t2 + 999);
    expect(ceiling.done()).toBe(false);
    ceiling.at(t2 + 1_000);
    expect(ceiling.output()?.closedBy).toBe('ceiling');
  });

  it('§7.2: a latency_ms above the ceiling is clamped — with a survivor in hand it closes at the ceiling (5000), not 9000', () => {
    const c = contest();
    const tc = claimAndClose(c, [['a', 9_000], ['b', 9_000]]);
    c.at(tc + 100);
    c.respond('a', 'Paris', 0.8);
    c.at(tc + CEILING - 1);
    expect(c.done()).toBe(false);
    c.at(tc + CEILING);
    expect(c.doneAt()).toBe(tc + CEILING);
    // The window's end and the ceiling are the same instant: either name is the rule.
    expect(['window', 'ceiling']).toContain(c.output()?.closedBy);
    expect(c.output()?.responses.map((r) => r.skill_id)).toEqual(['a']);
  });

  it('§7.2: a silent claimant is treated as declining once the window ends with a survivor in hand', () => {
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
});

describe('OVOS-COMMON-QUERY-1 §7.2 + transport allowance: claimants answering within their declared latency are all heard', () => {
  const ALLOWANCE = 50; // the config default (commonQuery.collectionAllowanceMs)

  it('§7.2: three claimants declaring latency_ms 0 answering 1, 2 and 3 ms after the request — all three collected (all_answered at 3 ms), not the first alone', () => {
    const c = contest({ collectionAllowanceMs: ALLOWANCE });
    const tc = claimAndClose(c, [['cq-1', 0], ['cq-2', 0], ['cq-3', 0]]);
    c.at(tc + 1);
    c.respond('cq-1', 'weak', 0.6);
    c.at(tc + 2);
    c.respond('cq-2', 'better', 0.7);
    expect(c.done()).toBe(false);
    c.at(tc + 3);
    c.respond('cq-3', 'best', 0.8);
    expect(c.doneAt()).toBe(tc + 3);
    expect(c.output()?.closedBy).toBe('all_answered');
    expect(c.output()?.responses.map((r) => r.skill_id)).toEqual(['cq-1', 'cq-2', 'cq-3']);
  });

  it('§7.2 boundary latency_ms + allowance − 1: a second answer 49 ms after the request (declared 0) is collected; the window closes one round trip after the first (51 ms), not at 50', () => {
    const c = contest({ collectionAllowanceMs: ALLOWANCE });
    const tc = claimAndClose(c, [['fast', 0], ['slower', 0], ['silent', 0]]);
    c.at(tc + 1);
    c.respond('fast', 'weak', 0.6);
    c.at(tc + ALLOWANCE - 1);
    expect(c.done()).toBe(false);
    c.respond('slower', 'best', 0.8);
    expect(c.done()).toBe(false); // `silent` is still within its declared latency + allowance
    c.at(tc + ALLOWANCE);
    expect(c.done()).toBe(false); // the initial window has passed, the round trip since `fast` answered has not
    c.at(tc + 1 + ALLOWANCE);
    expect(c.doneAt()).toBe(tc + 1 + ALLOWANCE);
    expect(c.output()?.closedBy).toBe('window');
    expect(c.output()?.responses.map((r) => r.skill_id)).toEqual(['fast', 'slower']);
  });

  it('§7.2 boundary latency_ms + allowance: a survivor in hand from the request\'s instant — the window closes at exactly 50 ms; an answer then is too late', () => {
    const c = contest({ collectionAllowanceMs: ALLOWANCE });
    const tc = claimAndClose(c, [['fast', 0], ['late', 0]]);
    c.respond('fast', 'weak', 0.6);
    c.at(tc + ALLOWANCE - 1);
    expect(c.done()).toBe(false);
    c.at(tc + ALLOWANCE);
    expect(c.doneAt()).toBe(tc + ALLOWANCE);
    expect(c.output()?.responses.map((r) => r.skill_id)).toEqual(['fast']);
  });

  it('§7.2 boundary latency_ms + allowance + 1: with nothing in hand at 70 ms, the first survivor after it closes the window one round trip later — a better answer within that round trip is heard', () => {
    const c = contest({ collectionAllowanceMs: ALLOWANCE });
    const tc = claimAndClose(c, [['a', 20], ['b', 20], ['silent', 20]]);
    c.at(tc + 20 + ALLOWANCE);
    expect(c.done()).toBe(false);
    c.at(tc + 20 + ALLOWANCE + 1);
    c.respond('b', 'Paris', 0.7);
    expect(c.done()).toBe(false);
    c.at(tc + 20 + ALLOWANCE + 1 + ALLOWANCE - 1);
    c.respond('a', 'Paris, France', 0.8);
    expect(c.done()).toBe(false);
    c.at(tc + 20 + ALLOWANCE + 1 + ALLOWANCE);
    expect(c.doneAt()).toBe(tc + 20 + ALLOWANCE + 1 + ALLOWANCE);
    expect(c.output()?.closedBy).toBe('window');
    expect(c.output()?.responses.map((r) => r.skill_id)).toEqual(['b', 'a']);
  });
});

describe('OVOS-COMMON-QUERY-1 §7.2 settle (our choice, src/plugins/README.md): the window stays open one round trip after the first surviving answer', () => {
  const ALLOWANCE = 50;
  /** Claims with the pong delays given (the bus's round trip to each skill in this poll), latency_ms 0; poll closes at the claim bound. */
  function claimWithDelays(c: Contest, delays: ReadonlyArray<readonly [string, number]>): number {
    for (const [skill_id, after_ms] of delays) c.actor.send({ type: 'PONG', skill_id, can_answer: true, latency_ms: 0, after_ms });
    c.at(CLAIM);
    return CLAIM;
  }

  it.each([-1, 0, 1])('§7.2 settle T%s: the round trip is the largest claimant pong delay (silent\'s, 200 ms); a better answer that long after the first survivor is heard only before T', (offset) => {
    const c = contest({ collectionAllowanceMs: ALLOWANCE });
    const tc = claimWithDelays(c, [['first', 30], ['better', 20], ['silent', 200]]);
    // Initial window: latency 0 + the round trip (200 ms: silent's pong). The first survivor comes past it.
    c.at(tc + 250);
    c.respond('first', 'Paris', 0.7);
    const T = tc + 250 + 200;
    c.at(T - 1);
    expect(c.done()).toBe(false);
    if (offset === -1) {
      c.respond('better', 'Paris, the capital of France', 0.8);
      expect(c.done()).toBe(false); // silent is still outstanding
    }
    c.at(T + Math.max(offset, 0));
    expect(c.doneAt()).toBe(T);
    expect(c.output()?.closedBy).toBe('window');
    // At T and T+1 the window has closed: better's answer then is too late.
    expect(c.output()?.responses.map((r) => r.skill_id)).toEqual(offset === -1 ? ['first', 'better'] : ['first']);
  });

  it('§7.2 settle / §5.1 JOIN: the first *surviving* answer under the joined policy starts the round trip — a blacklisted earlier answer does not', () => {
    const c = contest({ collectionAllowanceMs: ALLOWANCE, policy: null });
    const tc = claimAndClose(c, [['banned', 0], ['b', 0], ['silent', 0]]);
    c.at(tc + 10);
    c.respond('banned', 'Berlin', 0.8);
    c.at(tc + 40);
    c.respond('b', 'Paris', 0.7);
    c.at(tc + 55); // the initial window (50) has passed
    c.join({ ...POLICY, blacklistedSkills: ['banned'] }); // b arrived at 40: its round trip runs to 90 (not 60)
    openUntil(c, tc + 40 + ALLOWANCE, 'window');
  });

  it('§7.2 settle: a first survivor long before the initial window ends costs nothing — the window closes at its end', () => {
    const c = contest({ collectionAllowanceMs: ALLOWANCE });
    const tc = claimAndClose(c, [['a', 300], ['silent', 300]]);
    c.at(tc + 10);
    c.respond('a', 'Paris', 0.8);
    openUntil(c, tc + 300 + ALLOWANCE, 'window');
  });

  it('§7.2 settle / §5.1 JOIN: survivors that came before `match` joined started their round trip when they arrived — JOIN past the window closes it when that round trip ends (T−1 open, T closed)', () => {
    const c = contest({ collectionAllowanceMs: ALLOWANCE, policy: null });
    const tc = claimAndClose(c, [['a', 0], ['silent', 0]]);
    c.at(tc + 10);
    c.respond('a', 'Paris', 0.8);
    c.at(tc + ALLOWANCE + 5); // the initial window (50) has passed; nothing survives without a policy
    expect(c.done()).toBe(false);
    c.join(POLICY); // `a` arrived at 10: its round trip runs to 60
    expect(c.done()).toBe(false);
    openUntil(c, tc + 10 + ALLOWANCE, 'window');
    expect(c.clock.pending).toBe(0);
  });

  it('§7.2 settle: every claimant answering inside the round trip still closes at once (all_answered); a fast win too (fast_win)', () => {
    const all = contest({ collectionAllowanceMs: ALLOWANCE });
    const tc = claimAndClose(all, [['a', 0], ['b', 0]]);
    all.at(tc + 100);
    all.respond('a', 'Paris', 0.7);
    all.at(tc + 110);
    all.respond('b', 'Paris, France', 0.8);
    expect(all.doneAt()).toBe(tc + 110);
    expect(all.output()?.closedBy).toBe('all_answered');
    const fast = contest({ collectionAllowanceMs: ALLOWANCE });
    claimAndClose(fast, [['a', 0], ['b', 0], ['silent', 0]]);
    fast.at(tc + 100);
    fast.respond('a', 'Paris', 0.7);
    fast.at(tc + 120);
    fast.respond('b', 'Paris, certainly', 0.95);
    expect(fast.doneAt()).toBe(tc + 120);
    expect(fast.output()?.closedBy).toBe('fast_win');
    expect(fast.clock.pending).toBe(0);
  });
});

describe('OVOS-COMMON-QUERY-1 §7.2 past the initial window: an answer before the ceiling is never lost', () => {
  it.each([0, 20])('§7.2: claimants declaring latency_ms %i — an answer 40 ms after the request is collected and closes the window at once (window)', (latency) => {
    const c = contest();
    const tc = claimAndClose(c, [['a', latency], ['silent', latency]]);
    c.at(tc + 39);
    expect(c.done()).toBe(false); // the window passed with nothing in hand: it waits
    c.at(tc + 40);
    c.respond('a', 'Paris', 0.8);
    expect(c.done()).toBe(true);
    expect(c.doneAt()).toBe(tc + 40);
    expect(c.output()?.closedBy).toBe('window');
    expect(c.output()?.responses.map((r) => r.skill_id)).toEqual(['a']);
    expect(c.clock.pending).toBe(0);
  });

  it('§7.2 / §8 steps 1–2: answers that do not survive (below min conf, a decline, a blacklisted skill) do not close it; the first survivor does', () => {
    const c = contest({ policy: { ...POLICY, blacklistedSkills: ['banned'] } });
    const tc = claimAndClose(c, [['weak', 0], ['decliner', 0], ['banned', 0], ['good', 0], ['silent', 0]]);
    c.at(tc + 10);
    c.respond('weak', 'Lyon?', 0.49);
    c.at(tc + 20);
    c.respond('decliner');
    c.at(tc + 30);
    c.respond('banned', 'Berlin', 0.8);
    expect(c.done()).toBe(false);
    c.at(tc + 1_000);
    c.respond('good', 'Paris', 0.5);
    expect(c.output()?.closedBy).toBe('window');
    expect(c.doneAt()).toBe(tc + 1_000);
    expect(c.output()?.responses.map((r) => r.skill_id)).toEqual(['weak', 'decliner', 'banned', 'good']);
  });

  it('§7.2 boundary ceiling − 1: an answer at 4999 ms is collected (window) — not lost', () => {
    const c = contest();
    const tc = claimAndClose(c, [['a', 0], ['silent', 0]]);
    c.at(tc + CEILING - 1);
    expect(c.done()).toBe(false);
    c.respond('a', 'Paris', 0.8);
    expect(c.output()?.closedBy).toBe('window');
    expect(c.output()?.responses.map((r) => r.skill_id)).toEqual(['a']);
  });

  it('§7.2 boundary ceiling: at exactly 5000 ms the contest is closed (ceiling) — a claimant not answered before it is treated as declining', () => {
    const c = contest();
    const tc = claimAndClose(c, [['a', 0], ['silent', 0]]);
    c.at(tc + CEILING - 1);
    expect(c.done()).toBe(false);
    c.at(tc + CEILING);
    expect(c.done()).toBe(true);
    expect(c.doneAt()).toBe(tc + CEILING);
    expect(c.output()?.closedBy).toBe('ceiling');
    expect(c.output()?.responses).toEqual([]);
    expect(c.clock.pending).toBe(0);
  });

  it('§7.2 boundary ceiling + 1: at 5001 ms the contest has been closed since 5000', () => {
    const c = contest();
    const tc = claimAndClose(c, [['a', 0], ['silent', 0]]);
    c.at(tc + CEILING + 1);
    expect(c.doneAt()).toBe(tc + CEILING);
    expect(c.output()?.closedBy).toBe('ceiling');
  });

  it('§7.2: at the ceiling, the raw responses in hand (none surviving) are the output', () => {
    const c = contest();
    const tc = claimAndClose(c, [['weak'], ['silent']]);
    c.at(tc + 100);
    c.respond('weak', 'Lyon?', 0.3);
    c.at(tc + CEILING);
    expect(c.output()?.closedBy).toBe('ceiling');
    expect(c.output()?.responses).toEqual([{ skill_id: 'weak', answer: 'Lyon?', conf: 0.3, receivedAt: tc + 100, order: 0 }]);
  });
});

describe('OVOS-COMMON-QUERY-1 §7.2 / §5.1 survival is judged under the live policy only (JOIN)', () => {
  it('§5.1: before JOIN (policy null) nothing survives — past the window a good answer keeps collection open; JOIN closes it at once (window)', () => {
    const c = contest({ policy: null });
    const tc = claimAndClose(c, [['a', 100], ['silent', 100]]);
    c.at(tc + 50);
    c.respond('a', 'Paris', 0.8);
    c.at(tc + 100);
    expect(c.done()).toBe(false); // window over, but no live policy yet
    c.at(tc + 400);
    expect(c.done()).toBe(false);
    c.join(POLICY);
    expect(c.done()).toBe(true);
    expect(c.doneAt()).toBe(tc + 400);
    expect(c.output()?.closedBy).toBe('window');
    expect(c.clock.pending).toBe(0);
  });

  it('§5.1: a JOIN whose live policy blacklists the only answer keeps collection open; the next survivor closes it', () => {
    const c = contest({ policy: null });
    const tc = claimAndClose(c, [['a', 100], ['b', 100], ['silent', 100]]);
    c.at(tc + 50);
    c.respond('a', 'Berlin', 0.8);
    c.at(tc + 300);
    c.join({ ...POLICY, blacklistedSkills: ['a'] });
    expect(c.done()).toBe(false);
    c.at(tc + 700);
    c.respond('b', 'Paris', 0.6);
    expect(c.output()?.closedBy).toBe('window');
    expect(c.doneAt()).toBe(tc + 700);
  });

  it('§5.1: a JOIN before the window ends does not close it early on a mere survivor — it closes at the window end', () => {
    const c = contest({ policy: null });
    const tc = claimAndClose(c, [['a', 200], ['silent', 200]]);
    c.at(tc + 10);
    c.respond('a', 'Paris', 0.8);
    c.at(tc + 50);
    c.join(POLICY);
    expect(c.done()).toBe(false);
    c.at(tc + 199);
    expect(c.done()).toBe(false);
    c.at(tc + 200);
    expect(c.output()?.closedBy).toBe('window');
  });

  it('§5.1: never joined — collection runs to the ceiling (ceiling) with the raw answers, for match to judge', () => {
    const c = contest({ policy: null });
    const tc = claimAndClose(c, [['a', 100], ['silent', 100]]);
    c.at(tc + 50);
    c.respond('a', 'Paris', 0.8);
    c.at(tc + CEILING - 1);
    expect(c.done()).toBe(false);
    c.at(tc + CEILING);
    expect(c.output()?.closedBy).toBe('ceiling');
    expect(c.output()?.responses.map((r) => r.skill_id)).toEqual(['a']);
  });
});

describe('OVOS-COMMON-QUERY-1 §7.2 early termination', () => {
  it('§7.2: all claimants answered → closes at once (all_answered); a response WITHOUT answer counts', () => {
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

  it('§7.2: every claimant declining (no answer) also closes at once', () => {
    const c = contest();
    const tc = claimAndClose(c, [['a']]);
    c.at(tc + 5);
    c.respond('a');
    expect(c.output()?.closedBy).toBe('all_answered');
    expect(c.doneAt()).toBe(tc + 5);
  });

  it('§7.2: past the initial window, the last claimant declining closes it (all_answered) without a survivor', () => {
    const c = contest();
    const tc = claimAndClose(c, [['a', 0], ['b', 0]]);
    c.at(tc + 10);
    c.respond('a', 'Lyon?', 0.2);
    c.at(tc + 900);
    c.respond('b');
    expect(c.output()?.closedBy).toBe('all_answered');
    expect(c.doneAt()).toBe(tc + 900);
  });

  it('§7.1: requests go to every claimant in parallel, once, when the poll closes', () => {
    const c = contest();
    c.pong('a');
    c.pong('b');
    c.pong('c', false);
    c.at(CLAIM);
    expect(c.requests).toEqual([{ at: CLAIM, claimants: [{ skill_id: 'a' }, { skill_id: 'b' }] }]);
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

  it('§8 step 3: a fast win past the initial window is still a fast win', () => {
    const c = contest();
    const tc = claimAndClose(c, [['a', 0], ['b', 0]]);
    c.at(tc + 300);
    c.respond('a', 'Paris', 0.95);
    expect(c.output()?.closedBy).toBe('fast_win');
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
    c.at(CLAIM);
    expect(c.requests.map((r) => r.at)).toEqual([CLAIM]);
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

  it('§8 step 3: fast win disabled (fastWinConfidence null) never closes early — a 1.0 answer closes at the window end', () => {
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

  it('§8 steps 1–3: the live minimum confidence applies: no fast win below a min that the threshold itself is below', () => {
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

  it('§7.1: a non-claimant’s response past the initial window does not close it either', () => {
    const c = contest();
    const tc = claimAndClose(c, [['a', 0], ['b', 0]]);
    c.at(tc + 100);
    c.respond('z', 'Berlin', 0.8);
    expect(c.responseIgnored).toEqual([{ type: 'response.ignored', skill_id: 'z', reason: 'not_a_claimant' }]);
    expect(c.done()).toBe(false);
  });

  it('§7.1: a skill that declined in the poll is not a claimant; its response is ignored', () => {
    const c = contest();
    c.pong('a');
    c.pong('b', false);
    c.at(CLAIM);
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

  it('§7.1: a duplicate surviving response past the initial window (the first did not survive) does not close it', () => {
    const c = contest();
    const tc = claimAndClose(c, [['a', 0], ['b', 0]]);
    c.at(tc + 10);
    c.respond('a', 'Lyon?', 0.2);
    c.at(tc + 20);
    c.respond('a', 'Paris', 0.8);
    expect(c.responseIgnored).toEqual([{ type: 'response.ignored', skill_id: 'a', reason: 'duplicate' }]);
    expect(c.done()).toBe(false);
  });

  it('§7.1: a response before the poll closed (no request sent yet) is not collected', () => {
    const c = contest();
    c.pong('a');
    c.respond('a', 'Paris', 0.99);
    expect(c.responseIgnored).toEqual([{ type: 'response.ignored', skill_id: 'a', reason: 'not_requested_yet' }]);
    c.at(CLAIM);
    expect(c.responseIds()).toEqual([]);
    expect(c.done()).toBe(false);
  });
});

describe('timer hygiene: every delayed transition is cancelled when its state is left', () => {
  it('no pending timers once done, whatever closed the contest', () => {
    const noClaimant = contest();
    noClaimant.at(CLAIM);
    const rosterDeclined = contest({ knownSkills: ['a'], answeringSkills: ['a'] });
    rosterDeclined.pong('a', false);
    rosterDeclined.at(CLAIM);
    const awaitedNever = contest({ knownSkills: ['a'], answeringSkills: ['a'] });
    awaitedNever.at(POLL);
    const allAnswered = contest();
    claimAndClose(allAnswered, [['a']]);
    allAnswered.respond('a', 'Paris', 0.7);
    const fastWin = contest();
    claimAndClose(fastWin, [['a'], ['b']]);
    fastWin.respond('a', 'Paris', 0.95);
    const windowEnd = contest();
    claimAndClose(windowEnd, [['a', 100], ['b', 100]]);
    windowEnd.respond('a', 'Paris', 0.7);
    windowEnd.at(CLAIM + 100);
    const firstSurvivor = contest();
    claimAndClose(firstSurvivor, [['a', 0], ['b', 0]]);
    firstSurvivor.at(CLAIM + 50);
    firstSurvivor.respond('a', 'Paris', 0.7);
    const ceiling = contest();
    claimAndClose(ceiling, [['a', 0]]);
    ceiling.at(CLAIM + CEILING);
    const joined = contest({ policy: null });
    claimAndClose(joined, [['a'], ['b']]);
    joined.respond('a', 'Paris', 0.95);
    joined.join(POLICY);
    const byPollCeiling = contest({ knownSkills: ['a'], answeringSkills: ['a'] });
    byPollCeiling.pong('b');
    byPollCeiling.at(POLL);
    byPollCeiling.respond('b');
    const all = [noClaimant, rosterDeclined, awaitedNever, allAnswered, fastWin, windowEnd, firstSurvivor, ceiling, joined, byPollCeiling];
    expect(all.map((c) => c.output()?.closedBy)).toEqual([
      'no_claimant', 'no_claimant', 'no_claimant', 'all_answered', 'fast_win', 'window', 'window', 'ceiling', 'fast_win', 'all_answered',
    ]);
    for (const c of all) {
      expect(c.clock.pending).toBe(0);
      expect(c.errors).toEqual([]);
    }
  });
});

describe('OVOS-COMMON-QUERY-1 §6.3 / §7.2: a skill whose connection closed (GONE) is not waited for', () => {
  const gone = (c: Contest, skill_id: string): void => c.actor.send({ type: 'GONE', skill_id });

  it('§6.3: a known skill gone mid-poll no longer holds rule 1 open (a claim in hand): the poll closes at once', () => {
    const c = contest({ knownSkills: ['a', 'b'] });
    c.at(4);
    c.pong('a');
    c.at(9);
    gone(c, 'b');
    expect(c.requests).toEqual([{ at: 9, claimants: [{ skill_id: 'a' }] }]);
    // Recorded gone all the same (the inspector shows the contest's context).
    expect(c.actor.getSnapshot().context.gone).toEqual(['b']);
  });

  it('§6.3: without a claim in hand, a gone known skill leaves the poll to the claim bound', () => {
    const c = contest({ knownSkills: ['a', 'b'] });
    c.pong('a', false);
    gone(c, 'b');
    expect(c.done()).toBe(false);
    c.at(CLAIM);
    expect(c.output()?.closedBy).toBe('no_claimant');
  });

  it('§6.3: past the claim bound, the outstanding skill known to answer every poll going away ends the wait at once', () => {
    const c = contest({ knownSkills: ['a', 'b'], answeringSkills: ['b'] });
    c.pong('a');
    c.at(CLAIM + 40);
    expect(c.requests).toEqual([]);
    gone(c, 'b');
    expect(c.requests).toEqual([{ at: CLAIM + 40, claimants: [{ skill_id: 'a' }] }]);
  });

  it('§7.2: the only claimant gone during collection counts as declining now, not at the ceiling', () => {
    const c = contest();
    c.pong('a', true, 20);
    c.at(CLAIM);
    expect(c.requests).toHaveLength(1);
    c.at(CLAIM + 30);
    gone(c, 'a');
    expect(c.done()).toBe(true);
    expect(c.doneAt()).toBe(CLAIM + 30);
    expect(c.output()?.closedBy).toBe('all_answered');
    expect(c.clock.pending).toBe(0);
  });

  it('§7.2: one of two claimants gone; the other\'s response then completes the collection', () => {
    const c = contest();
    c.pong('a', true, 3000);
    c.pong('b', true, 3000);
    c.at(CLAIM);
    gone(c, 'a');
    expect(c.done()).toBe(false);
    c.at(CLAIM + 50);
    c.respond('b', 'Paris', 0.7);
    expect(c.output()?.closedBy).toBe('all_answered');
    expect(c.doneAt()).toBe(CLAIM + 50);
  });

  it('§7.2: a claimant gone after it responded changes nothing', () => {
    const c = contest();
    c.pong('a', true, 3000);
    c.pong('b', true, 3000);
    c.at(CLAIM);
    c.respond('a', 'Paris', 0.6);
    gone(c, 'a');
    expect(c.done()).toBe(false);
    c.at(CLAIM + 3000);
    expect(c.output()?.closedBy).toBe('window');
  });

  it('§7.2: every claimant gone before the poll closed: nothing to collect, done at the close (all_answered)', () => {
    const c = contest();
    c.pong('a');
    gone(c, 'a');
    c.at(CLAIM);
    expect(c.done()).toBe(true);
    expect(c.output()?.closedBy).toBe('all_answered');
    expect(c.requests).toEqual([]);
  });

  it('§6.3: a claim whose skill is gone is no claim in hand: the last known decline does not close the poll, a newcomer\'s claim within the bound is heard', () => {
    const c = contest({ knownSkills: ['a', 'b'] });
    c.pong('a');
    gone(c, 'a');
    c.at(5);
    c.pong('b', false);
    expect(c.done()).toBe(false);
    c.at(10);
    c.pong('newcomer');
    expect(c.requests).toEqual([{ at: 10, claimants: [{ skill_id: 'a' }, { skill_id: 'newcomer' }] }]);
  });

  it('a GONE for a skill the contest never heard of changes nothing', () => {
    const c = contest({ knownSkills: ['a'] });
    gone(c, 'zzz');
    c.pong('a');
    expect(c.requests).toEqual([{ at: 0, claimants: [{ skill_id: 'a' }] }]);
  });

  it('§7.2 in collection: a skill gone that is not an outstanding claimant (a non-claimant, or a claimant that already responded) ends nothing while another claimant is outstanding', () => {
    const c = contest({ knownSkills: ['a', 'b', 'x'] });
    c.pong('a', true, 1_000);
    c.pong('b', true, 1_000);
    c.pong('x', false);
    expect(c.requests.map((r) => r.at)).toEqual([0]);
    c.at(10);
    c.respond('b', 'Paris', 0.6);
    gone(c, 'x'); // never claimed
    gone(c, 'b'); // claimed and already responded
    expect(c.done()).toBe(false); // a is still outstanding, within its 1000 ms window
    c.at(20);
    c.respond('a', 'Paris, France', 0.8);
    expect(c.doneAt()).toBe(20);
    expect(c.output()?.closedBy).toBe('all_answered');
    expect(c.output()?.responses.map((r) => r.skill_id)).toEqual(['b', 'a']);
  });
});

/**
 * Gaps the mutation run found (test/mutation/README.md): each test below fails under a mutant that survived the
 * whole suite before — the rule it pins is quoted from the machine's header and the poll decisions of src/plugins/README.md.
 */
describe('OVOS-COMMON-QUERY-1 §6.3 / §7.2 edges of GONE, unasked claims and the roster (mutation-found)', () => {
  const gone = (c: Contest, skill_id: string): void => c.actor.send({ type: 'GONE', skill_id });
  const unaskedClaim = (c: Contest, skill_id: string): void => c.actor.send({ type: 'PONG', skill_id, can_answer: true, unasked: true });

  it('§6.3 rule 1 with a complete roster (legacy only): the last known skill gone closes the poll at once, no claim needed', () => {
    const c = contest({ knownSkills: ['a', 'b'], answeringSkills: [], rosterComplete: true });
    c.at(10);
    c.pong('a', false);
    c.at(30);
    gone(c, 'b');
    expect(c.doneAt()).toBe(30);
    expect(c.output()?.closedBy).toBe('no_claimant');
  });

  it('§6.3 rule 1 needs a roster: with nobody known, a claim in hand and some other skill gone do not close the poll before the claim bound', () => {
    const c = contest({ knownSkills: [], answeringSkills: [] });
    c.at(10);
    c.pong('a', true);
    c.at(20);
    gone(c, 'z');
    c.at(CLAIM - 1);
    expect(c.requests).toEqual([]);
    c.at(CLAIM);
    expect(c.requests.map((r) => r.at)).toEqual([CLAIM]);
  });

  it('§6.3 past the claim bound: only the skill known to answer every poll being heard or gone closes the wait — another skill going away does not', () => {
    const c = contest({ knownSkills: ['x', 'y'], answeringSkills: ['x'] });
    c.at(5);
    c.pong('a', true);
    c.at(CLAIM); // x outstanding: waited for past the bound
    expect(c.requests).toEqual([]);
    c.at(200);
    gone(c, 'y');
    expect(c.requests).toEqual([]);
    c.at(300);
    c.pong('x', false);
    expect(c.requests.map((r) => r.at)).toEqual([300]);
  });

  it('§7.2 a gone claimant counts as declining — but a skill that is no outstanding claimant going away ends nothing', () => {
    const c = contest({ knownSkills: [], answeringSkills: [] });
    const start = claimAndClose(c, [['a', 100], ['b', 100]]);
    c.at(start + 10);
    c.respond('a', 'A answer', 0.7);
    gone(c, 'z'); // never a claimant
    gone(c, 'a'); // already answered
    expect(c.done()).toBe(false);
    c.at(start + 20);
    gone(c, 'b'); // the last outstanding claimant: now every claimant is settled
    expect(c.doneAt()).toBe(start + 20);
    expect(c.output()?.closedBy).toBe('all_answered');
    expect(c.output()?.responses.map((r) => r.skill_id)).toEqual(['a']);
  });

  it('§7.1 an unasked claim (the legacy question is the request): its answer during the poll is kept, an asked claimant\'s is not yet', () => {
    const c = contest({ knownSkills: [], answeringSkills: [] });
    c.at(5);
    c.pong('asked', true);
    unaskedClaim(c, 'legacy');
    c.at(10);
    c.respond('asked', 'too early', 0.8);
    c.respond('legacy', 'legacy answer', 0.8);
    expect(c.responseIgnored).toEqual([{ type: 'response.ignored', skill_id: 'asked', reason: 'not_requested_yet' }]);
    expect(c.responseIds()).toEqual(['legacy']);
    c.at(CLAIM);
    // Only the asked claimant is sent a request.
    expect(c.requests.map((r) => r.claimants.filter((cl) => cl.unasked !== true).map((cl) => cl.skill_id))).toEqual([['asked']]);
  });

  it('§8 step 3 (src/plugins/README.md "Fast win"): a fast win that arrived unasked before match joined ends the contest the moment match joins, still polling — nobody is asked', () => {
    const c = contest({ knownSkills: [], answeringSkills: [], policy: null });
    c.at(5);
    c.pong('asked', true);
    unaskedClaim(c, 'legacy');
    c.at(10);
    c.respond('legacy', 'certain answer', 0.95); // no policy yet: kept, not a win
    expect(c.done()).toBe(false);
    c.at(40);
    c.join(POLICY);
    expect(c.doneAt()).toBe(40);
    expect(c.output()?.closedBy).toBe('fast_win');
    expect(c.requests).toEqual([]);
  });

  it('§8 step 3: match joining during the poll with no fast win in hand (or one its policy rules out) only sets the policy — the poll goes on', () => {
    const c = contest({ knownSkills: [], answeringSkills: [], policy: null });
    c.at(5);
    c.pong('asked', true);
    unaskedClaim(c, 'legacy');
    c.at(10);
    c.respond('legacy', 'likely answer', 0.95);
    c.join({ ...POLICY, blacklistedSkills: ['legacy'] }); // §5.1: the live session blacklists it
    expect(c.done()).toBe(false);
    c.at(CLAIM);
    expect(c.requests.map((r) => r.at)).toEqual([CLAIM]);
  });

  it('§7.2 an answer without conf is kept as a candidate without one (it cannot survive selection)', () => {
    const c = contest({ knownSkills: [], answeringSkills: [] });
    const start = claimAndClose(c, [['a', 50]]);
    c.at(start + 10);
    c.respond('a', 'no confidence given');
    expect(c.output()?.responses).toEqual([expect.objectContaining({ skill_id: 'a', answer: 'no confidence given' })]);
    expect(c.output()?.responses[0]).not.toHaveProperty('conf');
  });
});

describe('embedding the contest machine (src/index.ts exports it): effects the embedder forgot', () => {
  const input: CommonQueryInput = {
    origin: ORIGIN, utterance: Q, lang: 'en-US', pollWindowMs: POLL, pollClaimBoundMs: CLAIM, collectionInitialMs: INITIAL,
    collectionAllowanceMs: 0, collectionCeilingMs: CEILING, knownSkills: [], answeringSkills: [], policy: POLICY,
  };
  const errorOf = (actor: { subscribe: (o: { error: (e: unknown) => void }) => unknown }): unknown[] => {
    const errors: unknown[] = [];
    actor.subscribe({ error: (e) => errors.push(e) });
    return errors;
  };

  it('without sendPing the contest fails at its start, naming the missing action', () => {
    const actor = createActor(commonQueryMachine, { input, clock: new ManualClock(0) });
    const errors = errorOf(actor);
    actor.start();
    expect(actor.getSnapshot().status).toBe('error');
    expect(errors.map((e) => String(e))).toEqual(['Error: not provided: sendPing']);
  });

  it('without sendRequests it fails when the poll closes on a claim, naming the missing action', () => {
    const clock = new ManualClock(0);
    const actor = createActor(commonQueryMachine.provide({ actions: { sendPing: () => {} } }), { input, clock });
    const errors = errorOf(actor);
    actor.start();
    actor.send({ type: 'PONG', skill_id: 'a', can_answer: true });
    expect(errors).toEqual([]);
    clock.advance(CLAIM);
    expect(errors.map((e) => String(e))).toEqual(['Error: not provided: sendRequests']);
  });
});

describe('OVOS-COMMON-QUERY-1 §6.3/§7.2: a skill gone during the poll is remembered, whatever it does to the poll then', () => {
  const gone = (c: Contest, skill_id: string): void => {
    c.actor.send({ type: 'GONE', skill_id });
  };

  it('§7.2: a claimant gone before the poll closes counts as declining — the claim bound ends the contest, nobody is asked', () => {
    const c = contest({ knownSkills: ['a', 'b'] });
    c.at(5);
    c.pong('a');
    c.at(10);
    gone(c, 'a'); // b is still silent: the poll stays open
    expect(c.done()).toBe(false);
    c.at(CLAIM);
    expect(c.requests).toEqual([]);
    expect(c.doneAt()).toBe(CLAIM);
    expect(c.output()?.closedBy).toBe('all_answered');
  });

  it('§6.3: a skill known to answer every poll, gone before the claim bound, is not waited for past it', () => {
    const c = contest({ knownSkills: ['a', 'b', 'c'], answeringSkills: ['b'] });
    c.at(5);
    c.pong('a');
    c.at(10);
    gone(c, 'b'); // c is still silent: the poll stays open
    c.at(CLAIM);
    expect(c.requests).toEqual([{ at: CLAIM, claimants: [{ skill_id: 'a' }] }]);
  });

  it('§6.3: past the claim bound, a second pong of a skill already heard is reported duplicate and changes nothing', () => {
    const c = contest({ knownSkills: ['a', 'b', 'c'], answeringSkills: ['b', 'c'] });
    c.at(5);
    c.pong('a');
    c.at(CLAIM);
    c.at(CLAIM + 10);
    c.pong('b', false); // c still outstanding: the poll waits for it
    c.pong('b', true);
    expect(c.pongIgnored).toEqual([{ type: 'pong.ignored', skill_id: 'b', reason: 'duplicate' }]);
    c.pong('c', false);
    expect(c.requests).toEqual([{ at: CLAIM + 10, claimants: [{ skill_id: 'a' }] }]);
  });
});
