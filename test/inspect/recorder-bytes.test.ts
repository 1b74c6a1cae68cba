/**
 * The inspector's recorder holds a bounded number of bytes whatever clients send: a message past
 * MESSAGE_CAP_BYTES is kept as a clipped copy that still shows on the timeline and in the trace, each utterance
 * counts what it keeps, and past `maxBytes` the oldest utterances are forgotten first — one still running included,
 * which then records nothing more. Huge frames are built in process (one shared 9 MiB string) on the deterministic
 * clock.
 */
import { describe, expect, it } from 'vitest';
import { createMessage, reply, type JsonObject, type Message } from '../../src/bus/message.js';
import { DEFAULT_CONFIG } from '../../src/config/defaults.js';
import { MESSAGE_CAP_BYTES } from '../../src/inspect/recorder.js';
import { createHarness, type Harness } from '../support/harness.js';

const { pingTimeoutMs } = DEFAULT_CONFIG.fallback;
const HUGE = 'x'.repeat(9 * 1024 * 1024);
const BUDGET = 256 * 1024;

/** A fallback skill that pongs at once and speaks; `silent`: never pongs (its utterance runs until the ping timeout). */
function fallbackSkill(h: Harness, skillId: string, priority: number, silent = false): void {
  h.bus.subscribe((m: Message) => {
    if (m.type === `${skillId}.fallback.ping` && !silent) h.bus.publish(reply(m, `${skillId}.fallback.pong`, { skill_id: skillId, can_handle: true }));
    else if (m.type === `${skillId}:fallback`) {
      h.bus.publish(reply(m, 'ovos.utterance.speak', { utterance: `${skillId} speaking` }));
      h.bus.publish(reply(m, 'mycroft.skill.handler.complete', {}));
    }
  });
  h.bus.publish(createMessage('ovos.fallback.register', { skill_id: skillId, priority }, { skill_id: skillId, session: { session_id: 'default' } }));
}

/** A 9 MiB frame carrying an utterance's ids: a pong from a skill nobody asked (the supervisor drops it too). */
function huge(sessionId: string, utteranceId: string, extra: JsonObject = {}): Message {
  return createMessage('flood.skill.fallback.pong', { skill_id: 'flood.skill', can_handle: true, payload: HUGE, ...extra }, { session: { session_id: sessionId }, utterance_id: utteranceId });
}

describe('inspector recorder: bytes', () => {
  it('a 9 MiB message is kept as a clipped copy: on the timeline with its topic and how large it was, in the trace with its ids and a clipped payload', async () => {
    const h = createHarness(DEFAULT_CONFIG, { recorder: {} });
    fallbackSkill(h, 'quick.skill', 10);
    await h.settle();
    h.utter('blorp the flange', { session: { session_id: 's1' }, utteranceId: 'u1' });
    await h.advance(10);
    const before = h.recorder!.bytes;
    h.bus.publish(huge('s1', 'u1'));
    await h.settle();

    const [u] = h.recorder!.utterances();
    const clipped = u!.timeline.filter((e) => e.kind === 'message' && e.type === 'flood.skill.fallback.pong');
    expect(clipped).toEqual([expect.objectContaining({ clipped: true, skill_id: 'flood.skill', detail: 'clipped: the message was 9.0 MiB' })]);
    // The supervisor's drop of it is on the timeline too, with its reason.
    expect(u!.timeline.filter((e) => e.kind === 'drop' && e.type === 'flood.skill.fallback.pong')).toHaveLength(1);
    // What it cost the recorder: about the cap, not 9 MiB.
    expect(h.recorder!.bytes - before).toBeLessThan(2 * MESSAGE_CAP_BYTES);
    expect(h.recorder!.bytes - before).toBeGreaterThan(1024);

    const trace = h.recorder!.trace(u!.key)!;
    const entry = trace.messages.find((m) => m.type === 'flood.skill.fallback.pong')!;
    expect(entry.context).toEqual({ session: { session_id: 's1' }, utterance_id: 'u1' });
    expect(entry.data).toMatchObject({ skill_id: 'flood.skill', can_handle: true });
    expect(entry.data['payload']).toBe(`${'x'.repeat(1024)}…[clipped ${HUGE.length - 1024} chars]`);
    // The rest of the utterance is as it was: the decision and the ordinary messages, whole.
    expect(u!.decision).toMatchObject({ skill_id: 'quick.skill', answer: 'quick.skill speaking' });
    expect(trace.messages.find((m) => m.type === 'quick.skill.fallback.pong')?.data).toEqual({ skill_id: 'quick.skill', can_handle: true });
  });

  it('a message of many small parts or deep nesting is clipped too: lists and objects cut with a count, nesting summarised', async () => {
    const h = createHarness(DEFAULT_CONFIG, { recorder: {} });
    fallbackSkill(h, 'quick.skill', 10);
    await h.settle();
    h.utter('blorp the flange', { session: { session_id: 's1' }, utteranceId: 'u1' });
    await h.advance(10);
    let deep: JsonObject = { bottom: true };
    for (let i = 0; i < 40; i++) deep = { down: deep };
    const many = Array.from({ length: 100_000 }, (_, i) => i);
    h.bus.publish(createMessage('noise.many', { many, deep }, { session: { session_id: 's1' }, utterance_id: 'u1' }));
    await h.settle();

    const data = h.recorder!.trace(h.recorder!.utterances()[0]!.key)!.messages.find((m) => m.type === 'noise.many')!.data;
    expect((data['many'] as unknown[]).slice(-1)).toEqual([`…[clipped ${100_000 - 32} items]`]);
    expect(JSON.stringify(data)).toContain('[clipped: nested deeper]');
    expect(JSON.stringify(data).length).toBeLessThan(2 * MESSAGE_CAP_BYTES);
  });

  it('200 frames of 9 MiB never take the recorder past its byte budget; past it, the oldest utterances are forgotten first', async () => {
    const h = createHarness(DEFAULT_CONFIG, { recorder: { maxBytes: BUDGET } });
    fallbackSkill(h, 'quick.skill', 10);
    await h.settle();
    let highest = 0;
    for (let n = 0; n < 10; n++) {
      h.utter(`blorp number ${n}`, { session: { session_id: `s${n}` }, utteranceId: `u${n}` });
      await h.advance(10);
      for (let i = 0; i < 20; i++) {
        h.bus.publish(huge(`s${n}`, `u${n}`));
        await h.settle();
        highest = Math.max(highest, h.recorder!.bytes);
      }
    }
    expect(highest).toBeLessThanOrEqual(BUDGET);
    expect(highest).toBeGreaterThan(BUDGET / 2);
    const kept = h.recorder!.utterances().map((u) => u.utterance);
    // The newest first, and only a run of the newest: every older one is gone.
    expect(kept[0]).toBe('blorp number 9');
    expect(kept.length).toBeLessThan(10);
    expect(kept).toEqual(Array.from({ length: kept.length }, (_, i) => `blorp number ${9 - i}`));
    // A forgotten utterance is gone from every view: its decision, its detail, its trace.
    expect(h.recorder!.decisions().map((d) => d.utterance)).toEqual(kept);
    const forgotten = 's0\u0000u0';
    expect(h.recorder!.utterance(forgotten)).toBeUndefined();
    expect(h.recorder!.trace(forgotten)).toBeUndefined();
  });

  it('an utterance forgotten while it runs records nothing more, and leaves no decision when it ends', async () => {
    const h = createHarness(DEFAULT_CONFIG, { recorder: { maxBytes: BUDGET } });
    fallbackSkill(h, 'silent.skill', 10, true);
    fallbackSkill(h, 'medium.skill', 60);
    await h.settle();
    h.recorder!.setDetailed(true); // as while a page is connected: its state changes would be recorded
    h.utter('the long one', { session: { session_id: 'slow' }, utteranceId: 'long' });
    await h.advance(10);
    h.bus.publish(huge('slow', 'long'));
    await h.settle();
    const long = h.recorder!.utterances()[0]!;
    expect(long).toMatchObject({ utterance: 'the long one', live: true });

    // Newer utterances fill the budget: the running one, the oldest, is forgotten.
    for (let n = 0; h.recorder!.utterance(long.key) !== undefined; n++) {
      expect(n).toBeLessThan(100);
      h.utter(`blorp number ${n}`, { session: { session_id: `s${n}` }, utteranceId: `u${n}` });
      await h.advance(1);
      for (let i = 0; i < 5; i++) h.bus.publish(huge(`s${n}`, `u${n}`));
      await h.settle();
    }
    const after = h.recorder!.bytes;
    expect(after).toBeLessThanOrEqual(BUDGET);
    // Still running: a 9 MiB frame for it adds nothing.
    h.bus.publish(huge('slow', 'long'));
    await h.settle();
    expect(h.recorder!.bytes).toBe(after);
    // It runs on (its ping times out; common query and fallback_medium start contests for it, medium.skill
    // answers): nothing of it comes back.
    await h.advance(pingTimeoutMs);
    expect(h.recorder!.bytes).toBeLessThanOrEqual(BUDGET);
    expect(h.recorder!.utterance(long.key)).toBeUndefined();
    expect(h.recorder!.utterances().map((u) => u.key)).not.toContain(long.key);
    expect(h.recorder!.decisions().map((d) => d.key)).not.toContain(long.key);
    // It did end (the daemon answered it); the inspector just no longer shows it.
    expect(h.wire.some((m) => m.type === 'ovos.utterance.handled' && m.context['utterance_id'] === 'long')).toBe(true);
  });

  it('a drop tied to no utterance keeps its fields clipped to 200 characters (a copy, not the 9 MiB original)', async () => {
    const h = createHarness(DEFAULT_CONFIG, { recorder: {} });
    h.bus.publish(createMessage('ghost.skill.fallback.pong', { skill_id: 'ghost.skill', can_handle: true, payload: HUGE }, { session: { session_id: HUGE }, utterance_id: 'u-none' }));
    await h.settle();
    const [stray] = h.recorder!.strays();
    expect(stray).toMatchObject({ reason: 'no_live_contest', type: 'ghost.skill.fallback.pong', skill_id: 'ghost.skill' });
    expect(stray!.session_id).toBe(`${'x'.repeat(200)}…[clipped ${HUGE.length - 200} chars]`);
  });
});
