/**
 * The per-skill circuit breaker (src/plugins/fallback/breaker.ts) at its boundaries, on an injected clock.
 * OVOS-FALLBACK-1 §6.1 makes a silent skill cost a full ping timeout; the breaker stops a dead one costing it on
 * every utterance.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../../src/config/defaults.js';
import { LogRateLimiter } from '../../../src/log/rate-limit.js';
import { MAX_SUSPEND_MS, SkillBreaker } from '../../../src/plugins/fallback/breaker.js';

const SETTINGS = { suspendAfterTimeouts: DEFAULT_CONFIG.fallback.suspendAfterTimeouts, suspendMs: DEFAULT_CONFIG.fallback.suspendMs };
const SUSPEND_MS = SETTINGS.suspendMs;

function breaker(settings: { suspendAfterTimeouts: number; suspendMs: number; maxSuspendMs?: number } = SETTINGS) {
  let now = 1_000;
  const b = new SkillBreaker(settings, () => now);
  return { b, advance: (ms: number) => void (now += ms) };
}

/** `n` consecutive timeouts of `skill`; the transitions reported. */
const timeouts = (b: SkillBreaker, skill: string, n: number) => Array.from({ length: n }, () => b.timeout(skill));

describe('FALLBACK-1 §6.1 circuit breaker (pure state)', () => {
  it('FALLBACK-1 §6.1: the defaults are 3 timeouts and 30 s', () => {
    expect(SETTINGS).toEqual({ suspendAfterTimeouts: 3, suspendMs: 30_000 });
  });

  it('FALLBACK-1 §6.1: 2 consecutive timeouts → not suspended; the 3rd → suspended for suspendMs, reported once', () => {
    const { b } = breaker();
    expect(timeouts(b, 'dead', 2)).toEqual([undefined, undefined]);
    expect(b.suspended('dead')).toBe(false);
    expect(b.state('dead')).toBe('closed');
    expect(b.timeout('dead')).toEqual({ type: 'suspended', skill_id: 'dead', timeouts: 3, for_ms: SUSPEND_MS });
    expect(b.suspended('dead')).toBe(true);
    expect(b.state('dead')).toBe('open');
    // A contest whose pool was built before the suspension times out on it again: no second report.
    expect(b.timeout('dead')).toBeUndefined();
    expect(b.suspended('other')).toBe(false);
  });

  it('FALLBACK-1 §6.1, a cluster\'s shared breaker: a suspension decided elsewhere (suspend) holds for its period exactly, reports nothing, and a failed probe after it doubles that period', () => {
    const { b, advance } = breaker();
    b.suspend('dead', 10_000);
    expect(b.suspended('dead')).toBe(true);
    advance(9_999);
    expect(b.suspended('dead')).toBe(true);
    advance(1);
    expect(b.state('dead')).toBe('half_open');
    expect(b.timeout('dead')).toEqual({ type: 'suspended', skill_id: 'dead', timeouts: SETTINGS.suspendAfterTimeouts + 1, for_ms: 20_000 });
  });

  it('FALLBACK-1 §6.1, a cluster\'s shared breaker: a shorter suspension from elsewhere does not cut a longer one here short; a longer one extends it', () => {
    const { b, advance } = breaker();
    timeouts(b, 'dead', SETTINGS.suspendAfterTimeouts); // out for SUSPEND_MS here
    b.suspend('dead', 1_000);
    advance(1_000);
    expect(b.suspended('dead')).toBe(true);
    b.suspend('dead', SUSPEND_MS * 2);
    advance(SUSPEND_MS);
    expect(b.suspended('dead')).toBe(true);
    advance(SUSPEND_MS);
    expect(b.state('dead')).toBe('half_open');
  });

  it('FALLBACK-1 §6.1, a cluster\'s shared breaker: a suspension from elsewhere ending with the one here leaves its period as it was (the next failed probe doubles this one)', () => {
    const { b, advance } = breaker();
    timeouts(b, 'dead', SETTINGS.suspendAfterTimeouts); // out for SUSPEND_MS here
    advance(10_000);
    b.suspend('dead', SUSPEND_MS - 10_000); // decided elsewhere, ending at the same moment
    advance(SUSPEND_MS - 10_000);
    expect(b.state('dead')).toBe('half_open');
    expect(b.timeout('dead')).toMatchObject({ type: 'suspended', for_ms: 2 * SUSPEND_MS });
  });

  it('FALLBACK-1 §6.1: at suspendMs - 1 the skill is still out; at suspendMs it is back (half-open)', () => {
    const { b, advance } = breaker();
    timeouts(b, 'dead', 3);
    advance(SUSPEND_MS - 1);
    expect(b.suspended('dead')).toBe(true);
    advance(1);
    expect(b.suspended('dead')).toBe(false);
    expect(b.state('dead')).toBe('half_open');
  });

  it('FALLBACK-1 §6.1: half-open, any pong closes the breaker (resumed, reported once) and the count starts again', () => {
    const { b, advance } = breaker();
    timeouts(b, 'dead', 3);
    advance(SUSPEND_MS);
    expect(b.alive('dead')).toEqual({ type: 'resumed', skill_id: 'dead' });
    expect(b.state('dead')).toBe('closed');
    expect(b.alive('dead')).toBeUndefined();
    expect(timeouts(b, 'dead', 2)).toEqual([undefined, undefined]);
    expect(b.suspended('dead')).toBe(false);
  });

  it('FALLBACK-1 §6.1: half-open, the next timeout suspends again at once for double the period, capped at 5 minutes', () => {
    const { b, advance } = breaker();
    timeouts(b, 'dead', 3);
    const periods: number[] = [];
    for (let i = 0; i < 6; i++) {
      const last = periods.at(-1) ?? SUSPEND_MS;
      advance(last);
      const transition = b.timeout('dead');
      expect(transition?.type).toBe('suspended');
      periods.push(transition?.type === 'suspended' ? transition.for_ms : NaN);
    }
    expect(periods).toEqual([60_000, 120_000, 240_000, MAX_SUSPEND_MS, MAX_SUSPEND_MS, MAX_SUSPEND_MS]);
    expect(MAX_SUSPEND_MS).toBe(300_000);
    advance(MAX_SUSPEND_MS - 1);
    expect(b.suspended('dead')).toBe(true);
  });

  it('FALLBACK-1 §6.1: a suspendMs above the cap is never shortened by doubling', () => {
    const { b, advance } = breaker({ suspendAfterTimeouts: 1, suspendMs: 600_000 });
    expect(b.timeout('dead')).toMatchObject({ for_ms: 600_000 });
    advance(600_000);
    expect(b.timeout('dead')).toMatchObject({ for_ms: 600_000 });
  });

  it('FALLBACK-1 §6.1: any pong (or a re-registration) resets the count: timeout, timeout, pong, timeout, timeout → not suspended', () => {
    const { b } = breaker();
    timeouts(b, 'slow', 2);
    expect(b.alive('slow')).toBeUndefined(); // closed → closed: nothing to report
    expect(timeouts(b, 'slow', 2)).toEqual([undefined, undefined]);
    expect(b.suspended('slow')).toBe(false);
    expect(b.timeout('slow')?.type).toBe('suspended');
  });

  it('FALLBACK-1 §6.1: a pong while suspended resumes the skill at once', () => {
    const { b } = breaker();
    timeouts(b, 'dead', 3);
    expect(b.alive('dead')).toEqual({ type: 'resumed', skill_id: 'dead' });
    expect(b.suspended('dead')).toBe(false);
  });

  it('FALLBACK-1 §6.1: forget drops what was remembered of a skill', () => {
    const { b } = breaker();
    timeouts(b, 'dead', 3);
    b.forget('dead');
    expect(b.suspended('dead')).toBe(false);
    expect(timeouts(b, 'dead', 2)).toEqual([undefined, undefined]);
  });
});

describe('log rate limiter (ping timeouts, refused registrations)', () => {
  it('logs the first line per key, suppresses the rest of the window, then logs again with the suppressed count', () => {
    const limiter = new LogRateLimiter(60_000);
    expect(limiter.shouldLog('a', 0)).toEqual({ log: true, suppressed: 0 });
    expect(limiter.shouldLog('a', 1)).toEqual({ log: false, suppressed: 1 });
    expect(limiter.shouldLog('b', 1)).toEqual({ log: true, suppressed: 0 });
    expect(limiter.shouldLog('a', 59_999)).toEqual({ log: false, suppressed: 2 });
    expect(limiter.shouldLog('a', 60_000)).toEqual({ log: true, suppressed: 2 });
    expect(limiter.shouldLog('a', 60_001)).toEqual({ log: false, suppressed: 1 });
  });

  it('remembers at most maxKeys keys (keys come off the bus), forgetting the oldest first', () => {
    const limiter = new LogRateLimiter(60_000, 2);
    limiter.shouldLog('a', 0);
    limiter.shouldLog('b', 0);
    limiter.shouldLog('c', 0); // 'a' forgotten
    expect(limiter.shouldLog('a', 1)).toEqual({ log: true, suppressed: 0 });
    expect(limiter.shouldLog('c', 1)).toEqual({ log: false, suppressed: 1 });
  });
});

describe('FALLBACK-1 §6.1 circuit breaker: timeouts of contests that asked at once count once', () => {
  const PING = DEFAULT_CONFIG.fallback.pingTimeoutMs;
  it(`FALLBACK-1 §6.1: timeouts less than pingTimeoutMs (${PING} ms) after the last one counted are the same observation; at pingTimeoutMs they count`, () => {
    let now = 1_000;
    const b = new SkillBreaker({ ...SETTINGS, pingTimeoutMs: PING }, () => now);
    // A burst of contests that asked while the skill was away: one observation.
    expect([b.timeout('away'), b.timeout('away'), b.timeout('away'), b.timeout('away')]).toEqual([undefined, undefined, undefined, undefined]);
    now += PING - 1;
    expect(b.timeout('away')).toBeUndefined();
    expect(b.state('away')).toBe('closed');
    now += 1; // PING after the first counted: the 2nd
    expect(b.timeout('away')).toBeUndefined();
    now += PING; // the 3rd
    expect(b.timeout('away')).toEqual({ type: 'suspended', skill_id: 'away', timeouts: 3, for_ms: SUSPEND_MS });
  });

  it('FALLBACK-1 §6.1: a pong between them starts the count again', () => {
    let now = 1_000;
    const b = new SkillBreaker({ ...SETTINGS, pingTimeoutMs: PING }, () => now);
    b.timeout('flaky');
    now += PING;
    b.timeout('flaky');
    b.alive('flaky');
    now += PING;
    expect(timeouts(b, 'flaky', 3)).toEqual([undefined, undefined, undefined]);
    expect(b.state('flaky')).toBe('closed');
  });
});
