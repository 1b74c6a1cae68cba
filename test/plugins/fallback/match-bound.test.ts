/**
 * Never silent: the fallback stage is cut by the orchestrator's match bound (OVOS-PIPELINE-1 §4.4) when its
 * pool × pingTimeoutMs exceeds the bound and the skills stay silent — never silently. The plugin warns when it
 * builds such a pool (at most once a minute per stage and pool size), and when a cut happens it names the skill it
 * was waiting for and every skill never asked (the catch-all included). Harness: LocalBus + ManualClock.
 */
import { describe, expect, it } from 'vitest';
import { createMessage, reply, type JsonObject } from '../../../src/bus/message.js';
import { stageBoundMs } from '../../../src/plugins/fallback/stage-bound.js';
import { createHarness, fallbackSkill, withConfig, type Harness } from '../../support/harness.js';

const PING_TIMEOUT_MS = 500;
const BOUND_MS = 1_000;
/** One stage only, so every skill below is in the stage the bound cuts. Built in code: never validated. */
const CONFIG = withConfig((config) => ({
  ...config,
  pipeline: ['fallback_low'],
  orchestrator: { ...config.orchestrator, matchTimeoutMs: BOUND_MS },
  fallback: { ...config.fallback, pingTimeoutMs: PING_TIMEOUT_MS },
}));

const session = (id: string): JsonObject => ({ session_id: id });
const withReason = (h: Harness, reason: string): Array<Record<string, unknown>> => h.logs.filter((line) => line['reason'] === reason);
const pingOrder = (h: Harness): string[] =>
  h.wire.filter((m) => m.type.endsWith('.fallback.ping')).map((m) => m.type.slice(0, -'.fallback.ping'.length));

const only = <T>(list: readonly T[]): T => {
  expect(list).toHaveLength(1);
  return list[0]!;
};

/** Two silent skills ahead of a willing one and the catch-all: 4 × 500 ms > the 1000 ms bound. */
async function crowdedStage(h: Harness): Promise<void> {
  fallbackSkill(h, 'silent-1', 75, { decide: () => 'silent' });
  fallbackSkill(h, 'silent-2', 80, { decide: () => 'silent' });
  fallbackSkill(h, 'helper', 90);
  fallbackSkill(h, 'catch-all', 100);
  await h.settle();
}

describe('OVOS-FALLBACK-1 §6.1 / PIPELINE-1 §4.4 match bound: a cut stage is never silent', () => {
  it('OVOS-FALLBACK-1 §6.1 / PIPELINE-1 §4.4 match bound: a cut logs one warn (match_bound_cut) with the stage, session, utterance, the skill awaited and the skills never asked, catch-all included', async () => {
    const h = createHarness(CONFIG);
    await crowdedStage(h);
    h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'u1' });
    // The stage decides at its own bound, 5 ms before the match bound, so its result still counts.
    await h.advance(stageBoundMs(BOUND_MS) - 1);
    expect(withReason(h, 'match_bound_cut')).toEqual([]);
    await h.advance(1);

    // The cut really happened: the catch-all was never pinged and the utterance went unmatched.
    expect(pingOrder(h)).toEqual(['silent-1', 'silent-2']);
    expect(h.timeline('s1')).toEqual(['ovos.utterance.handle', 'silent-1.fallback.ping', 'silent-2.fallback.ping', 'ovos.intent.unmatched', 'mycroft.audio.play_sound', 'complete_intent_failure', 'ovos.utterance.handled']);
    const cut = only(withReason(h, 'match_bound_cut'));
    expect(cut).toMatchObject({
      level: 40,
      stage: 'fallback_low',
      session_id: 's1',
      utterance_id: 'u1',
      awaiting: 'silent-2',
      chose: null,
      never_asked: ['helper', 'catch-all'],
      asked: ['silent-1'],
      after_ms: stageBoundMs(BOUND_MS),
      match_timeout_ms: BOUND_MS,
      ping_timeout_ms: PING_TIMEOUT_MS,
    });
    expect(h.system.supervisor.size).toBe(0);
  });

  it('OVOS-FALLBACK-1 §6.1 / PIPELINE-1 §4.4 match bound: a stage that answers within the bound, or one stopped for another reason (bus down), logs no match_bound_cut', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'silent-1', 75, { decide: () => 'silent' });
    fallbackSkill(h, 'catch-all', 100);
    await h.settle();
    h.utter('first', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(PING_TIMEOUT_MS);
    expect(h.of('catch-all:fallback')).toHaveLength(1);

    h.utter('second', { session: session('s2'), utteranceId: 'u2' });
    await h.advance(PING_TIMEOUT_MS / 2);
    h.system.supervisor.stopAll('bus_down:test');
    await h.advance(BOUND_MS);
    expect(withReason(h, 'bus_down:test').length).toBeGreaterThan(0);
    expect(withReason(h, 'match_bound_cut')).toEqual([]);
  });

  it('OVOS-FALLBACK-1 §6.1 / PIPELINE-1 §4.4 match bound: a skill whose connection closed during the contest is not reported as never asked (it could not have been)', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'silent-1', 75, { decide: () => 'silent' });
    fallbackSkill(h, 'silent-2', 80, { decide: () => 'silent' });
    // Registered over its own connection on the embedded bus; willing, but gone before its turn.
    h.bus.subscribe((m) => {
      if (m.type === 'dead.fallback.ping') h.bus.publish(reply(m, 'dead.fallback.pong', { skill_id: 'dead', can_handle: true }), 'c1');
    });
    h.bus.publish(createMessage('ovos.fallback.register', { skill_id: 'dead', priority: 90 }, { skill_id: 'dead', session: session('default') }), 'c1');
    fallbackSkill(h, 'catch-all', 100);
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(5);
    h.bus.closeConnection('c1');
    await h.advance(stageBoundMs(BOUND_MS) - 5);
    expect(pingOrder(h)).toEqual(['silent-1', 'silent-2']);
    expect(only(withReason(h, 'match_bound_cut'))).toMatchObject({ awaiting: 'silent-2', never_asked: ['catch-all'] });
  });
});

describe('OVOS-FALLBACK-1 §6.1 / PIPELINE-1 §4.4 match bound: a pool the bound cannot cover is warned when it is built', () => {
  it('OVOS-FALLBACK-1 §6.1 / PIPELINE-1 §4.4 match bound: pool × pingTimeoutMs > bound warns pool_exceeds_match_bound with the numbers and a hint, once per (stage, pool size) per minute', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'a', 75, { decide: () => false });
    fallbackSkill(h, 'b', 80, { decide: () => false });
    fallbackSkill(h, 'catch-all', 100);
    await h.settle();
    const start = h.clock.now();

    h.utter('one', { session: session('s1') });
    await h.advance(1);
    const first = only(withReason(h, 'pool_exceeds_match_bound'));
    expect(first).toMatchObject({
      level: 40,
      stage: 'fallback_low',
      pool_size: 3,
      ping_timeout_ms: PING_TIMEOUT_MS,
      worst_case_ms: 3 * PING_TIMEOUT_MS,
      match_timeout_ms: BOUND_MS,
      asked_if_all_silent: 2,
      suppressed: 0,
    });
    expect(String(first['hint'])).toContain('pingTimeoutMs');
    expect(String(first['hint'])).toContain('matchTimeoutMs');

    // Same stage, same pool size: suppressed (the skills all answered, so nothing was cut).
    h.utter('two', { session: session('s2') });
    await h.advance(1);
    expect(withReason(h, 'pool_exceeds_match_bound')).toHaveLength(1);
    expect(withReason(h, 'match_bound_cut')).toEqual([]);

    // A different pool size is a different key.
    fallbackSkill(h, 'd', 85, { decide: () => false });
    await h.settle();
    h.utter('three', { session: session('s3') });
    await h.advance(1);
    expect(withReason(h, 'pool_exceeds_match_bound').map((l) => l['pool_size'])).toEqual([3, 4]);

    // A minute after the first, the (stage, 3) key logs again with what it suppressed.
    h.system.fallback.registry.deregister('default', 'd');
    h.clock.advance(start + 60_000 - h.clock.now());
    h.utter('four', { session: session('s4') });
    await h.advance(1);
    const lines = withReason(h, 'pool_exceeds_match_bound');
    expect(lines.map((l) => [l['pool_size'], l['suppressed']])).toEqual([[3, 0], [4, 0], [3, 1]]);
  });

  it('OVOS-FALLBACK-1 §6.1 / PIPELINE-1 §4.4 match bound: a pool whose worst case fits the bound exactly, and the defaults with a few skills, warn nothing', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'a', 75, { decide: () => false });
    fallbackSkill(h, 'catch-all', 100);
    await h.settle();
    h.utter('fits', { session: session('s1') });
    await h.advance(1);
    expect(withReason(h, 'pool_exceeds_match_bound')).toEqual([]);

    const defaults = createHarness(withConfig((config) => ({ ...config, pipeline: ['fallback_low'] })));
    for (const [id, priority] of [['a', 75], ['b', 80], ['c', 90], ['catch-all', 100]] as const) fallbackSkill(defaults, id, priority, { decide: () => id === 'catch-all' });
    await defaults.settle();
    defaults.utter('hello', { session: session('s1') });
    await defaults.advance(1);
    expect(defaults.logs.filter((l) => l['level'] === 40)).toEqual([]);
  });
});

describe('PIPELINE-1 §4.4: the fallback stage bound', () => {
  it('is 5 ms before the match bound, at most a tenth of it (short bounds keep most of their time)', () => {
    expect([10_000, 1_500, 100, 50, 49, 20, 9, 1].map(stageBoundMs)).toEqual([9_995, 1_495, 95, 45, 45, 18, 9, 1]);
  });
});
