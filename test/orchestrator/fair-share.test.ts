/**
 * Fair share between client connections (embedded bus): at most `orchestrator.maxInFlightPerConnection` utterances of
 * one connection run at once, as many more wait their turn, and past that an utterance ends at once with its one
 * handled (OVOS-PIPELINE-1 §6: every utterance ends with exactly one `ovos.utterance.handled`). Another client's
 * utterances never wait behind them. Whole system on a LocalBus whose connections are played by name, ManualClock.
 */
import { describe, expect, it } from 'vitest';
import { createMessage, reply, type Message } from '../../src/bus/message.js';
import { createHarness, withConfig, type Harness } from '../support/harness.js';
import { ACTIVE_MS, SHARED_STARTS_PER_SECOND, WAITING_PER_RUNNING } from '../../src/orchestrator/orchestrator.js';

const CAP = 3;
const WAITING = CAP * WAITING_PER_RUNNING;
const CONFIG = withConfig((config) => ({ ...config, pipeline: ['fallback_high'], orchestrator: { ...config.orchestrator, maxInFlightPerConnection: CAP } }));
const PING_MS = CONFIG.fallback.pingTimeoutMs;

/** An utterance sent over client connection `connection`. */
function utter(h: Harness, connection: string, session: string, utteranceId: string): void {
  h.bus.publish(createMessage('ovos.utterance.handle', { utterances: [`question ${utteranceId}`], lang: 'en-US' }, { session: { session_id: session }, utterance_id: utteranceId }), connection);
}

/** A fallback skill over its own connection that answers each ping `delayMs` later, declining. */
function slowSkill(h: Harness, delayMs: number): void {
  h.bus.subscribe((m) => {
    if (m.type === 'slow.fallback.ping') h.clock.setTimeout(() => h.bus.publish(reply(m, 'slow.fallback.pong', { skill_id: 'slow', can_handle: false }), 'skill'), delayMs);
  });
  h.bus.publish(createMessage('ovos.fallback.register', { skill_id: 'slow', priority: 10 }, { skill_id: 'slow', session: { session_id: 'default' } }), 'skill');
}

const handled = (h: Harness): Message[] => h.of('ovos.utterance.handled');
const handledIds = (h: Harness): string[] => handled(h).map((m) => String(m.context['utterance_id']));
const running = (h: Harness): number => h.system.orchestrator.inFlight;

describe('fair share of utterances per client connection (PIPELINE-1 §6: one handled each)', () => {
  it('PIPELINE-1 §6: past the cap an utterance waits its turn, in arrival order, and still ends with exactly one handled', async () => {
    const h = createHarness(CONFIG);
    slowSkill(h, 100);
    await h.settle();
    for (let i = 1; i <= 2 * CAP; i++) utter(h, 'loud', 's1', `u${i}`);
    await h.settle();
    expect(running(h)).toBe(CAP);
    expect(handled(h)).toEqual([]);

    await h.advance(100); // the first three are answered (unmatched); the next three begin
    expect(handledIds(h)).toEqual(['u1', 'u2', 'u3']);
    expect(running(h)).toBe(CAP);
    await h.advance(100);
    expect(handledIds(h)).toEqual(['u1', 'u2', 'u3', 'u4', 'u5', 'u6']);
    expect(handled(h).every((m) => m.data['error'] === undefined)).toBe(true);
    expect(running(h)).toBe(0);
  });

  it('PIPELINE-1 §6: past the cap and its waiting room, an utterance ends at once with its handled (too_many_in_flight), warned once', async () => {
    const h = createHarness(CONFIG);
    slowSkill(h, 100);
    await h.settle();
    const total = CAP + WAITING + 4;
    for (let i = 1; i <= total; i++) utter(h, 'loud', 's1', `u${i}`);
    await h.settle();
    const refused = handled(h);
    expect(refused.map((m) => m.context['utterance_id'])).toEqual([1, 2, 3, 4].map((n) => `u${CAP + WAITING + n}`));
    expect(refused.every((m) => m.data['error'] === 'too_many_in_flight')).toBe(true);
    expect(h.logs.filter((l) => l['reason'] === 'too_many_in_flight')).toEqual([expect.objectContaining({ connection: 'loud', running: CAP, waiting: WAITING, suppressed: 0 })]);

    await h.advance((WAITING / CAP + 2) * 100);
    const ids = handledIds(h);
    expect(ids).toHaveLength(total);
    expect(new Set(ids).size).toBe(ids.length); // never two for one utterance
  });

  it("another client's utterance begins at once while one client has its share running and waiting", async () => {
    const h = createHarness(CONFIG);
    slowSkill(h, 100);
    await h.settle();
    for (let i = 1; i <= 2 * CAP; i++) utter(h, 'loud', 's1', `u${i}`);
    utter(h, 'quiet', 's2', 'q1');
    await h.settle();
    expect(running(h)).toBe(CAP + 1);
    await h.advance(100);
    expect(handledIds(h)).toContain('q1');
    expect(handled(h).find((m) => m.context['utterance_id'] === 'q1')!.data['error']).toBeUndefined();
  });

  it('PIPELINE-1 §6: a second copy of a waiting utterance (same session and utterance_id) is dropped as a duplicate — one handled, not two', async () => {
    const h = createHarness(CONFIG);
    slowSkill(h, 100);
    await h.settle();
    for (let i = 1; i <= CAP + 1; i++) utter(h, 'loud', 's1', `u${i}`);
    utter(h, 'loud', 's1', `u${CAP + 1}`);
    await h.settle();
    expect(h.logs.filter((l) => l['reason'] === 'duplicate_utterance_id')).toHaveLength(1);
    await h.advance(2 * PING_MS);
    expect(handledIds(h).filter((id) => id === `u${CAP + 1}`)).toHaveLength(1);
  });

  it('PIPELINE-1 §6: at shutdown the waiting utterances end at once with their handled (shutting_down); the running ones finish', async () => {
    const h = createHarness(CONFIG);
    slowSkill(h, 100);
    await h.settle();
    for (let i = 1; i <= 2 * CAP; i++) utter(h, 'loud', 's1', `u${i}`);
    await h.settle();
    const drained = h.system.orchestrator.drain();
    await h.settle();
    expect(handled(h).map((m) => [m.context['utterance_id'], m.data['error']])).toEqual([
      ['u4', 'shutting_down'],
      ['u5', 'shutting_down'],
      ['u6', 'shutting_down'],
    ]);
    await h.advance(100);
    await drained;
    expect(handledIds(h).sort()).toEqual(['u1', 'u2', 'u3', 'u4', 'u5', 'u6']);
  });

  it('while another connection is active, a connection begins at most SHARED_STARTS_PER_SECOND a second (a burst is spread, a steady client is not held); alone, up to maxInFlightPerConnection at once', async () => {
    const MOST = 200;
    const h = createHarness(
      withConfig((config) => ({ ...config, pipeline: ['fallback_high'], fallback: { ...config.fallback, pingTimeoutMs: 20_000 }, orchestrator: { ...config.orchestrator, maxInFlightPerConnection: MOST } })),
    );
    slowSkill(h, 10_000);
    await h.settle();
    for (let i = 1; i <= 150; i++) utter(h, 'hub', 's1', `a${i}`);
    await h.settle();
    expect(running(h)).toBe(150); // alone: all at once
    await h.advance(10_000);
    expect(running(h)).toBe(0);
    await h.advance(ACTIVE_MS);

    utter(h, 'quiet', 's2', 'q1');
    for (let i = 1; i <= 150; i++) utter(h, 'hub', 's1', `b${i}`);
    await h.settle();
    expect(running(h)).toBe(1 + SHARED_STARTS_PER_SECOND); // the quiet one at once; the hub's bucket
    await h.advance(1_000);
    expect(running(h)).toBe(1 + 2 * SHARED_STARTS_PER_SECOND); // one second's worth more
    utter(h, 'quiet', 's2', 'q2');
    await h.settle();
    expect(running(h)).toBe(2 + 2 * SHARED_STARTS_PER_SECOND); // the quiet client never waits
    await h.advance(60_000);
    expect(handledIds(h)).toHaveLength(150 + 1 + 150 + 1);
    expect(h.of('ovos.utterance.handled').every((m) => m.data['error'] === undefined)).toBe(true);
  });

  it('utterances published in process (no connection) are not counted against any share', async () => {
    const h = createHarness(CONFIG);
    slowSkill(h, 100);
    await h.settle();
    for (let i = 1; i <= 3 * CAP; i++) h.utter('hi', { session: { session_id: 'p' }, utteranceId: `p${i}` });
    await h.settle();
    expect(running(h)).toBe(3 * CAP);
  });
});
