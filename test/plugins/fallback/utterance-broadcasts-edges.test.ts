/**
 * Edges of the legacy skills' utterance broadcasts (src/plugins/fallback/utterance-broadcasts.ts; src/plugins/README.md
 * "Legacy fallback skills", "Replies without utterance_id"; OVOS-FALLBACK-1 §6.1; ovos-wire-today.md): which broadcast
 * an ovos-workshop pong without contest_id and utterance_id answers — never a stale one taken for a new question
 * (ovos-core #859), never one of another session —, which broadcast each fallback stage of an utterance takes, and
 * that broadcasts are forgotten when their utterances end.
 * Harness: the whole system on LocalBus (connections played by name) + ManualClock; no sleeps.
 */
import { describe, expect, it } from 'vitest';
import { createMessage, reply, type JsonObject, type Message } from '../../../src/bus/message.js';
import type { Config } from '../../../src/config/defaults.js';
import { BROADCAST_LIMITS, UtteranceBroadcasts, type UtteranceBroadcast } from '../../../src/plugins/fallback/utterance-broadcasts.js';
import { stageTopics } from '../../../src/stage-service/stage-service.js';
import { createHarness, fallbackSkill, withConfig, type Harness } from '../../support/harness.js';

const FALLBACK_ONLY = withConfig((c) => ({ ...c, pipeline: ['fallback_high', 'fallback_medium', 'fallback_low'], dialects: { spec: true, legacy: true } }));
const T = FALLBACK_ONLY.fallback.pingTimeoutMs;
const session = (id: string): JsonObject => ({ session_id: id });
const pings = (h: Harness): Message[] => h.of('ovos.skills.fallback.ping');
const drops = (h: Harness, reason: string): Array<Record<string, unknown>> => h.logs.filter((l) => l['msg'] === 'message dropped' && l['reason'] === reason);
/** The skill each utterance went to, by utterance_id. */
const winnerOf = (h: Harness): Record<string, unknown> => Object.fromEntries(h.of('ovos.intent.matched').map((m) => [m.context['utterance_id'], m.data['skill_id']]));
/** How many `ovos.utterance.handled` each utterance got, by utterance_id. */
const handledOf = (h: Harness): Record<string, number> => {
  const counts: Record<string, number> = {};
  for (const m of h.of('ovos.utterance.handled')) {
    const id = String(m.context['utterance_id']);
    counts[id] = (counts[id] ?? 0) + 1;
  }
  return counts;
};

const ROLL = 'do a barrel roll';
const TIME = 'what time is it';

/** What a skill answers one broadcast ping: when, and with which session it stamps its pong. */
interface Answer {
  readonly willing: boolean;
  readonly afterMs: number;
  /** The session its pong carries: "default" (ovos-bus-client's stamp on a fresh Message) unless it names one. */
  readonly session?: string;
}

/**
 * An ovos-workshop FallbackSkill over a connection of its own that builds each pong as a fresh message — no
 * contest_id, no utterance_id (ovos-core #859) —, answering each broadcast ping as `answer` says (undefined: its
 * can_answer hangs, it never answers that one), and running its handler when dispatched.
 */
function freshWorkshop(h: Harness, skillId: string, priority: number, answer: (utterance: string, sessionId: string) => Answer | undefined): { asked: string[]; dispatched: string[] } {
  const asked: string[] = [];
  const dispatched: string[] = [];
  h.bus.openConnection(skillId);
  h.bus.subscribe((m) => {
    if (m.type === 'ovos.skills.fallback.ping') {
      const utterance = String((m.data['utterances'] as string[])[0]);
      asked.push(utterance);
      const said = answer(utterance, String((m.context['session'] as JsonObject)['session_id']));
      if (said === undefined) return;
      const pong: Message = { type: 'ovos.skills.fallback.pong', data: { skill_id: skillId, can_handle: said.willing }, context: { session: session(said.session ?? 'default') } };
      h.clock.setTimeout(() => h.bus.publish(pong, skillId), said.afterMs);
    } else if (m.type === `ovos.skills.fallback.${skillId}.request`) {
      dispatched.push(String(m.data['utterance']));
      h.bus.publish({ ...m, type: `ovos.skills.fallback.${skillId}.response`, data: { result: true } }, skillId);
      h.bus.publish({ ...m, type: 'ovos.utterance.handled', data: {} }, skillId);
    }
  });
  h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: skillId, priority }, { session: session('default') }), skillId);
  return { asked, dispatched };
}

/**
 * An ovos-workshop FallbackSkill over a connection of its own that answers each broadcast ping by `reply` (so its pong
 * carries the ping's session, utterance_id and contest_id) as `answer` says, and runs its handler when dispatched.
 */
function replyingWorkshop(
  h: Harness,
  skillId: string,
  priority: number,
  answer: (asked: { readonly utterance: string; readonly utterances: readonly string[]; readonly lang: string }, nth: number) => { readonly willing: boolean; readonly afterMs: number },
): { asked: string[][]; langs: string[]; dispatched: string[] } {
  const asked: string[][] = [];
  const langs: string[] = [];
  const dispatched: string[] = [];
  h.bus.openConnection(skillId);
  h.bus.subscribe((m) => {
    if (m.type === 'ovos.skills.fallback.ping') {
      const utterances = (m.data['utterances'] as string[]).map(String);
      asked.push(utterances);
      langs.push(String(m.data['lang']));
      const said = answer({ utterance: utterances[0]!, utterances, lang: String(m.data['lang']) }, asked.length);
      const pong = reply(m, 'ovos.skills.fallback.pong', { skill_id: skillId, can_handle: said.willing });
      if (said.afterMs === 0) h.bus.publish(pong, skillId);
      else h.clock.setTimeout(() => h.bus.publish(pong, skillId), said.afterMs);
    } else if (m.type === `ovos.skills.fallback.${skillId}.request`) {
      dispatched.push(String(m.data['utterance']));
      h.bus.publish({ ...m, type: `ovos.skills.fallback.${skillId}.response`, data: { result: true } }, skillId);
      h.bus.publish({ ...m, type: 'ovos.utterance.handled', data: {} }, skillId);
    }
  });
  h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: skillId, priority }, { session: session('default') }), skillId);
  return { asked, langs, dispatched };
}

/** When (harness clock) each message went on the bus. */
const heardAt = new WeakMap<Message, number>();

/** When each utterance was matched, ms after `start`, by utterance_id. */
const matchedAt = (h: Harness, start: number): Record<string, number> =>
  Object.fromEntries(h.of('ovos.intent.matched').map((m) => [m.context['utterance_id'], heardAt.get(m)! - start]));

async function booted(config: Config = FALLBACK_ONLY): Promise<Harness> {
  const h = createHarness(config);
  h.bus.subscribe((m) => heardAt.set(m, h.clock.now()));
  await h.advance(1_000); // the monotonic clock well past 0: times are differences, never absolute
  return h;
}

describe('OVOS-FALLBACK-1 §6.1 × ovos-core #859: a workshop pong without ids is never a stale answer taken for a new question', () => {
  it('ovos-core #859: a late "yes" to the first utterance (at T or after, while that utterance is still on its way to its low stage) is not taken for the second utterance\'s broadcast', async () => {
    for (const lateBy of [0, 100]) {
      const h = await booted();
      // Silent spec skills in the high and medium stages: each utterance reaches fallback_low only 2 T after it arrived.
      fallbackSkill(h, 'spec.high', 10, { decide: () => 'silent' });
      fallbackSkill(h, 'spec.medium', 60, { decide: () => 'silent' });
      // Slow to answer: every pong comes after the ping timeout; it can do a barrel roll, it cannot tell the time.
      const wk = freshWorkshop(h, 'wk.slow', 90, (utterance) => ({ willing: utterance === ROLL, afterMs: T + lateBy }));
      fallbackSkill(h, 'spec.catch.all', 100);
      await h.settle();
      h.utter(ROLL, { session: session('s1'), utteranceId: 'u1' });
      await h.advance(T - 50);
      h.utter(TIME, { session: session('s2'), utteranceId: 'u2' }); // its broadcast goes out before u1's late "yes" comes
      await h.advance(4 * T);
      expect(pings(h).map((m) => m.context['utterance_id'])).toEqual(['u1', 'u2']);
      // The late "yes" was for the barrel roll: never dispatched for "what time is it".
      expect(winnerOf(h)).toEqual({ u1: 'spec.catch.all', u2: 'spec.catch.all' });
      expect(wk.dispatched).toEqual([]);
      expect(drops(h, 'uncorrelated')).toHaveLength(2); // both late pongs: no broadcast or contest takes them
      expect(handledOf(h)).toEqual({ u1: 1, u2: 1 });
    }
  });

  it('ovos-core #859: the same for a pong that names its session — a late "yes" to the session\'s first utterance is not taken for its second', async () => {
    const h = await booted();
    fallbackSkill(h, 'spec.high', 10, { decide: () => 'silent' });
    fallbackSkill(h, 'spec.medium', 60, { decide: () => 'silent' });
    const wk = freshWorkshop(h, 'wk.slow', 90, (utterance, sessionId) => ({ willing: utterance === ROLL, afterMs: T + 100, session: sessionId }));
    fallbackSkill(h, 'spec.catch.all', 100);
    await h.settle();
    h.utter(ROLL, { session: session('s1'), utteranceId: 'u1' });
    await h.advance(T - 50);
    h.utter(TIME, { session: session('s1'), utteranceId: 'u2' });
    await h.advance(4 * T);
    expect(pings(h)).toHaveLength(2);
    expect(winnerOf(h)).toEqual({ u1: 'spec.catch.all', u2: 'spec.catch.all' });
    expect(wk.dispatched).toEqual([]);
    expect(handledOf(h)).toEqual({ u1: 1, u2: 1 });
  });

  it('§6.1: a pong that names its session is not held back by another session\'s unanswered broadcast — the willing skill is heard for that session\'s utterance', async () => {
    const h = await booted();
    fallbackSkill(h, 'spec.high', 10, { decide: () => 'silent' });
    fallbackSkill(h, 'spec.medium', 60, { decide: () => 'silent' });
    // The kitchen's barrel roll hangs its can_answer; the hall's question it answers at once, naming the hall.
    const wk = freshWorkshop(h, 'wk.named', 90, (utterance, sessionId) => (utterance === ROLL ? undefined : { willing: true, afterMs: 100, session: sessionId }));
    fallbackSkill(h, 'spec.catch.all', 100);
    await h.settle();
    h.utter(ROLL, { session: session('kitchen'), utteranceId: 'k1' });
    await h.advance(T - 50);
    h.utter(TIME, { session: session('hall'), utteranceId: 'h1' }); // answered at T + 50: the kitchen's broadcast went unanswered
    await h.advance(4 * T);
    expect(winnerOf(h)).toEqual({ k1: 'spec.catch.all', h1: 'wk.named' });
    expect(wk.dispatched).toEqual([TIME]);
    expect(handledOf(h)).toEqual({ k1: 1, h1: 1 });
  });

  it('§6.1: a broadcast the skill did answer in time leaves nothing owed — its pong without ids to the next utterance\'s broadcast is taken', async () => {
    const h = await booted();
    fallbackSkill(h, 'spec.high', 10, { decide: () => 'silent' });
    fallbackSkill(h, 'spec.medium', 60, { decide: () => 'silent' });
    const wk = freshWorkshop(h, 'wk.prompt', 90, (utterance) => (utterance === ROLL ? { willing: false, afterMs: 10 } : { willing: true, afterMs: 100 }));
    fallbackSkill(h, 'spec.catch.all', 100);
    await h.settle();
    h.utter(ROLL, { session: session('s1'), utteranceId: 'u1' });
    await h.advance(T - 50);
    h.utter(TIME, { session: session('s2'), utteranceId: 'u2' }); // its "yes" comes at T + 50 after u1's broadcast, which it answered
    await h.advance(4 * T);
    expect(winnerOf(h)).toEqual({ u1: 'spec.catch.all', u2: 'wk.prompt' });
    expect(wk.dispatched).toEqual([TIME]);
    expect(drops(h, 'uncorrelated')).toEqual([]);
  });

  it('§6.1: a broadcast that went out before the skill registered owes nothing of it — its pong without ids to the next utterance\'s broadcast is taken', async () => {
    const h = await booted();
    fallbackSkill(h, 'spec.high', 10, { decide: () => 'silent' });
    fallbackSkill(h, 'spec.medium', 60, { decide: () => 'silent' });
    freshWorkshop(h, 'wk.other', 95, () => ({ willing: false, afterMs: 10 })); // a legacy skill there: u1's broadcast goes out at once
    fallbackSkill(h, 'spec.catch.all', 100);
    await h.settle();
    h.utter(ROLL, { session: session('s1'), utteranceId: 'u1' });
    await h.advance(100);
    const late = freshWorkshop(h, 'wk.new', 90, (utterance) => ({ willing: utterance === TIME, afterMs: 100 }));
    await h.advance(T - 150);
    h.utter(TIME, { session: session('s2'), utteranceId: 'u2' }); // wk.new's "yes" comes at T + 50 after u1's broadcast, which never reached it
    await h.advance(4 * T);
    expect(winnerOf(h)).toEqual({ u1: 'spec.catch.all', u2: 'wk.new' });
    expect(late.dispatched).toEqual([TIME]);
  });

  it('§6.1 × ovos-core #859 boundary: for two ping timeouts after a broadcast\'s ping timeout passed unanswered, a pong without ids is taken by no broadcast (it may be that late one); from then on the new question\'s broadcast takes it', async () => {
    for (const [answeredAt, winner] of [[3 * T - 1, 'spec.catch.all'], [3 * T, 'wk.hung'], [20 * T, 'wk.hung']] as const) {
      const h = await booted();
      // u1 is won in fallback_high by a skill whose handler runs on: its utterance, and its broadcast, stay.
      fallbackSkill(h, 'spec.hold', 10, { decide: (u) => u === ROLL, onDispatch: () => 'silent' });
      fallbackSkill(h, 'spec.medium', 60, { decide: () => 'silent' }); // u2 reaches fallback_low T after it arrived
      const wk = freshWorkshop(h, 'wk.hung', 90, (utterance) => (utterance === ROLL ? undefined : { willing: true, afterMs: 10 }));
      fallbackSkill(h, 'spec.catch.all', 100);
      await h.settle();
      h.utter(ROLL, { session: session('s1'), utteranceId: 'u1' });
      await h.advance(answeredAt - 10);
      h.utter(TIME, { session: session('s2'), utteranceId: 'u2' }); // answered 10 ms later, `answeredAt` after u1's broadcast
      await h.advance(2 * T);
      expect(winnerOf(h)).toEqual({ u1: 'spec.hold', u2: winner });
      expect(wk.dispatched).toEqual(winner === 'wk.hung' ? [TIME] : []);
      expect(handledOf(h)['u2']).toBe(1);
    }
  });

  it('§6.1: two sessions\' broadcasts awaiting one skill — its pong without ids that names a session answers that session\'s broadcast only', async () => {
    const h = await booted();
    fallbackSkill(h, 'spec.high', 10, { decide: () => 'silent' }); // both utterances reach fallback_low at T: only answers in hand count there
    const wk = freshWorkshop(h, 'wk.named', 90, (utterance, sessionId) => ({ willing: utterance === TIME, afterMs: 10, session: sessionId }));
    fallbackSkill(h, 'spec.catch.all', 100);
    await h.settle();
    h.utter(ROLL, { session: session('kitchen'), utteranceId: 'k1' });
    h.utter(TIME, { session: session('hall'), utteranceId: 'h1' });
    await h.advance(2 * T);
    expect(pings(h)).toHaveLength(2);
    expect(winnerOf(h)).toEqual({ k1: 'spec.catch.all', h1: 'wk.named' });
    expect(wk.dispatched).toEqual([TIME]);
    expect(drops(h, 'uncorrelated')).toEqual([]);
  });

  it('§6.1: a pong naming one session\'s broadcast (its contest_id) but carrying another session is not that broadcast\'s answer', async () => {
    const h = await booted();
    fallbackSkill(h, 'spec.high', 10, { decide: () => 'silent' });
    h.bus.openConnection('wk.astray');
    h.bus.subscribe((m) => {
      // Derived from the ping (its contest_id and utterance_id), but stamped with another session.
      if (m.type === 'ovos.skills.fallback.ping') h.bus.publish({ type: 'ovos.skills.fallback.pong', data: { skill_id: 'wk.astray', can_handle: true }, context: { ...m.context, session: session('hall') } }, 'wk.astray');
    });
    h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: 'wk.astray', priority: 90 }, { session: session('default') }), 'wk.astray');
    fallbackSkill(h, 'spec.catch.all', 100);
    await h.settle();
    h.utter(ROLL, { session: session('kitchen'), utteranceId: 'k1' });
    await h.advance(2 * T);
    expect(pings(h)).toHaveLength(1);
    expect(winnerOf(h)).toEqual({ k1: 'spec.catch.all' });
    expect(h.of('ovos.skills.fallback.wk.astray.request')).toEqual([]);
  });
});

describe('OVOS-FALLBACK-1 §6.1 × ovos-core #859: a late "yes" to a broadcast whose utterance never reached the skill\'s stage', () => {
  it('is not taken by another session\'s contest already waiting on that skill: that utterance is not dispatched to the skill with another question\'s answer, and ends with one handled', async () => {
    const h = createHarness(FALLBACK_ONLY);
    await h.advance(1_000);
    // u1 (session s1) is held in its earlier stages by silent spec skills of s1 alone, so its broadcast, kept, expires
    // unanswered by the workshop skill before u1 reaches the skill's stage (nothing is owed by a ping of its own yet).
    fallbackSkill(h, 'spec.high', 10, { decide: () => 'silent', session: session('s1') });
    fallbackSkill(h, 'spec.medium', 60, { decide: () => 'silent', session: session('s1') });
    // The workshop skill answers every broadcast T + 100 ms late, without ids; "yes" only to the barrel roll.
    const wk = freshWorkshop(h, 'wk.slow', 90, (utterance) => ({ willing: utterance.includes('roll'), afterMs: T + 100 }));
    fallbackSkill(h, 'spec.catch.all', 100);
    await h.settle();
    h.utter('do a barrel roll', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(450);
    // u2 (session s2) goes straight to the low stage, where it waits on wk.slow when u1's late "yes" comes.
    h.utter('what time is it', { session: session('s2'), utteranceId: 'u2' });
    await h.advance(3_000);
    expect(wk.dispatched).not.toContain('what time is it');
    expect(winnerOf(h)['u2']).toBe('spec.catch.all');
    expect(handledOf(h)['u2']).toBe(1);
  });
});

describe('OVOS-FALLBACK-1 §6.1: a broadcast serves every fallback stage of its utterance, and is forgotten when the utterance ends', () => {
  it('§6.1: an answer that comes while a stage without its skill runs — after an earlier stage with a workshop skill took the broadcast and ended — is kept for the skill\'s stage', async () => {
    const h = await booted();
    replyingWorkshop(h, 'wk.high', 10, () => ({ willing: false, afterMs: 0 })); // fallback_high takes the broadcast, and is done at once
    fallbackSkill(h, 'spec.medium', 60, { decide: () => 'silent' }); // fallback_medium runs from 0 to T: wk.low answers meanwhile
    const low = replyingWorkshop(h, 'wk.low', 90, () => ({ willing: true, afterMs: 100 }));
    fallbackSkill(h, 'spec.catch.all', 100);
    await h.settle();
    const start = h.clock.now();
    h.utter(ROLL, { session: session('s1'), utteranceId: 'u1' });
    await h.advance(2 * T);
    expect(pings(h)).toHaveLength(1);
    expect(winnerOf(h)).toEqual({ u1: 'wk.low' });
    expect(low.dispatched).toEqual([ROLL]);
    expect(matchedAt(h, start)).toEqual({ u1: T }); // as fallback_low starts, with the "yes" in hand
    expect(h.logs.filter((l) => l['reason'] === 'ping_timeout').map((l) => l['skill_id'])).toEqual(['spec.medium']);
    expect(h.system.fallback.utteranceBroadcasts).toBe(0);
  });

  it('§6.1: five utterances of one session at once — the oldest\'s broadcast, pushed out (4 a session) while its stage still awaits an answer, still takes that answer; all are forgotten when they end', async () => {
    const h = await booted();
    const wk = replyingWorkshop(h, 'wk.slowish', 90, ({ utterance }) => ({ willing: utterance === ROLL, afterMs: 100 }));
    fallbackSkill(h, 'spec.catch.all', 100);
    await h.settle();
    h.utter(ROLL, { session: session('s1'), utteranceId: 'u1' });
    await h.advance(50);
    for (let i = 2; i <= 5; i++) h.utter(`${TIME} ${i}`, { session: session('s1'), utteranceId: `u${i}` });
    await h.advance(2 * T);
    expect(pings(h)).toHaveLength(5);
    expect(winnerOf(h)).toEqual({ u1: 'wk.slowish', u2: 'spec.catch.all', u3: 'spec.catch.all', u4: 'spec.catch.all', u5: 'spec.catch.all' });
    expect(wk.dispatched).toEqual([ROLL]);
    expect(handledOf(h)).toEqual({ u1: 1, u2: 1, u3: 1, u4: 1, u5: 1 });
    expect(h.system.fallback.utteranceBroadcasts).toBe(0);
  });

  it('§6.1: two utterances of one session at once — the first one ending forgets its own broadcast only: the second\'s answer, in hand, decides at its stage, with no second ping', async () => {
    const h = await booted();
    fallbackSkill(h, 'spec.first', 10, { decide: (u) => (u === ROLL ? true : 'silent') }); // u1 ends at once; u2 reaches fallback_low at T
    const wk = replyingWorkshop(h, 'wk.clock', 90, ({ utterance }) => ({ willing: utterance === TIME, afterMs: 100 }));
    fallbackSkill(h, 'spec.catch.all', 100);
    await h.settle();
    const start = h.clock.now();
    h.utter(ROLL, { session: session('s1'), utteranceId: 'u1' });
    h.utter(TIME, { session: session('s1'), utteranceId: 'u2' });
    await h.advance(3 * T);
    expect(pings(h).map((m) => m.context['utterance_id'])).toEqual(['u1', 'u2']);
    expect(wk.asked).toEqual([[ROLL], [TIME]]);
    expect(winnerOf(h)).toEqual({ u1: 'spec.first', u2: 'wk.clock' });
    expect(matchedAt(h, start)).toEqual({ u1: 0, u2: T }); // u2 at its low stage, with the answer in hand since 100 ms
    expect(handledOf(h)).toEqual({ u1: 1, u2: 1 });
    expect(h.system.fallback.utteranceBroadcasts).toBe(0);
  });
});

describe('the stage service (ovos-core asks our fallback tiers): which arrival\'s broadcast a tier takes', () => {
  const STAGES = withConfig((c) => ({ ...c, dialects: { spec: true, legacy: true }, orchestrator: { ...c.orchestrator, takesUtterances: false } }));
  const STAGES_NOT_EARLY = withConfig((c) => ({ ...c, dialects: { spec: true, legacy: true }, orchestrator: { ...c.orchestrator, takesUtterances: false }, fallback: { ...c.fallback, earlyStart: false } }));
  /** An utterance arriving on the bus (the listener's `recognizer_loop:utterance`), with or without an utterance_id. */
  const arrive = (h: Harness, utterances: string[], options: { id?: string; lang?: string; session?: string } = {}): void =>
    h.bus.publish(
      createMessage(
        'recognizer_loop:utterance',
        { utterances, lang: options.lang ?? 'en-US' },
        { session: session(options.session ?? 'kitchen'), ...(options.id === undefined ? {} : { utterance_id: options.id }) },
      ),
      'voice',
    );
  /** ovos-core's fallback tier request for an utterance (the ovos-core plugin stamps the utterance_id). */
  const askStage = (h: Harness, stage: string, utterances: string[], requestId: string, utteranceId: string, lang = 'en-US', sessionId = 'kitchen'): void =>
    h.bus.publish(
      createMessage(stageTopics.match, { version: 1, request_id: requestId, stage, utterances, lang, timeout_ms: 1_000 }, { session: session(sessionId), utterance_id: utteranceId }),
      'ovos-core',
    );
  const matchOf = (h: Harness, requestId: string): unknown => h.of(stageTopics.response).find((m) => m.data['request_id'] === requestId)?.data['match'];
  const WK_LOW = { match_type: 'ovos.skills.fallback.wk.low.request' };
  const unused = (h: Harness): Array<Record<string, unknown>> => h.logs.filter((l) => l['reason'] === 'early_broadcast_unused');

  it('§6.1 × ovos-core utterance transformers: a tier that asks other utterances or another language than arrived gets a broadcast of its own asking what it asks — a differing arrival\'s answers are never taken for it', async () => {
    const cases: Array<{ arrived: string[]; tier: string[]; lang?: string }> = [
      { arrived: ["what's up"], tier: ["what's up"], lang: 'de-DE' }, // a language detector changed the language
      { arrived: ["what's up"], tier: ["what's up", 'what is up'] }, // a normalizer added a candidate
      { arrived: ["what's up", 'whats up'], tier: ["what's up", 'what is up'] }, // the same count, the second differs
    ];
    for (const { arrived, tier, lang } of cases) {
      const h = await booted(STAGES);
      // It can answer what the tier asks, not what arrived.
      const skill = replyingWorkshop(h, 'wk.low', 95, (asked) => ({ willing: asked.lang === (lang ?? 'en-US') && asked.utterances.join('|') === tier.join('|'), afterMs: 0 }));
      await h.settle();
      arrive(h, arrived);
      await h.advance(10);
      askStage(h, 'fallback_low', tier, 'r1', 'core-1', lang);
      await h.settle();
      expect(skill.asked).toEqual([arrived, tier]);
      expect(skill.langs).toEqual(['en-US', lang ?? 'en-US']);
      expect(matchOf(h, 'r1')).toMatchObject(WK_LOW);
      expect(unused(h)).toHaveLength(1);
    }
  });

  it('§6.1 × ovos-core utterance transformers: an arrival that carried its utterance_id and differs from what the tiers ask — the first tier\'s broadcast serves the next tier (one more ping, not one per tier); the mismatch is found and logged once, and the next arrival is not broadcast early', async () => {
    const h = await booted(STAGES);
    replyingWorkshop(h, 'wk.high', 3, () => ({ willing: false, afterMs: 0 }));
    const skill = replyingWorkshop(h, 'wk.low', 95, () => ({ willing: true, afterMs: 0 }));
    await h.settle();
    arrive(h, ["what's up"], { id: 'x1' }); // the listener stamped the utterance_id
    await h.advance(10);
    askStage(h, 'fallback_high', ['what is up', "what's up"], 'r1', 'x1');
    await h.settle();
    askStage(h, 'fallback_low', ['what is up', "what's up"], 'r2', 'x1');
    await h.settle();
    expect(matchOf(h, 'r1')).toBeNull();
    expect(matchOf(h, 'r2')).toMatchObject(WK_LOW);
    expect(skill.asked).toEqual([["what's up"], ['what is up', "what's up"]]);
    expect(unused(h)).toHaveLength(1);
    arrive(h, ['good night'], { id: 'x2' });
    await h.advance(10);
    expect(skill.asked).toHaveLength(2); // early broadcasts wait until an arrival matches its tiers again
  });

  it('ovos-core #859: the same question asked twice (fallback.earlyStart false) — the second utterance\'s tier asks the skills again; the answer to the first is not taken for it', async () => {
    const h = await booted(STAGES_NOT_EARLY);
    // Could not the first time, can the second (its state changed between).
    const skill = replyingWorkshop(h, 'wk.low', 95, (_asked, nth) => ({ willing: nth > 1, afterMs: 0 }));
    await h.settle();
    askStage(h, 'fallback_low', [TIME], 'r1', 'core-1');
    await h.advance(2_000);
    askStage(h, 'fallback_low', [TIME], 'r2', 'core-2');
    await h.settle();
    expect(skill.asked).toEqual([[TIME], [TIME]]);
    expect(matchOf(h, 'r1')).toBeNull();
    expect(matchOf(h, 'r2')).toMatchObject(WK_LOW);
  });

  it('ovos-core #859: the same question arriving twice (no utterance_id), the first handled by ovos-core before its fallback tiers — the second\'s tier takes the newest arrival\'s answers, not the first\'s', async () => {
    const h = await booted(STAGES);
    const skill = replyingWorkshop(h, 'wk.low', 95, (_asked, nth) => ({ willing: nth > 1, afterMs: 0 }));
    await h.settle();
    arrive(h, [TIME]); // answered "no"; ovos-core's own intents handle this one: no tier request
    await h.advance(3_000);
    arrive(h, [TIME]); // answered "yes"
    await h.advance(10);
    askStage(h, 'fallback_low', [TIME], 'r2', 'core-2');
    await h.settle();
    expect(skill.asked).toEqual([[TIME], [TIME]]);
    expect(matchOf(h, 'r2')).toMatchObject(WK_LOW);
  });

  it('§6.1 boundary: an arrival without utterance_id is taken for a tier\'s utterance up to bindWindowMs after it arrived; a tier later than that gets a broadcast of its own', async () => {
    for (const [after, broadcasts] of [[BROADCAST_LIMITS.bindWindowMs, 1], [BROADCAST_LIMITS.bindWindowMs + 1, 2]] as const) {
      const h = await booted(STAGES);
      const skill = replyingWorkshop(h, 'wk.low', 95, () => ({ willing: true, afterMs: 0 }));
      await h.settle();
      arrive(h, [TIME]);
      await h.advance(after);
      askStage(h, 'fallback_low', [TIME], 'r1', 'core-1');
      await h.settle();
      expect(skill.asked).toHaveLength(broadcasts);
      expect(matchOf(h, 'r1')).toMatchObject(WK_LOW);
    }
  });

  it('§6.1 × ovos-core utterance transformers: a mismatch is found again after early broadcasts resumed, though an earlier mismatched arrival is still within bindWindowMs — early broadcasts stop again', async () => {
    const h = await booted(STAGES);
    const skill = replyingWorkshop(h, 'wk.low', 95, () => ({ willing: true, afterMs: 0 }));
    await h.settle();
    // Within a few seconds: transformed, as arrived, transformed again.
    arrive(h, ["what's up"]);
    await h.advance(10);
    askStage(h, 'fallback_low', ['what is up', "what's up"], 'r1', 'core-1');
    await h.advance(1_000);
    arrive(h, ['hello there']); // not broadcast early; its tier asks what arrived: early broadcasts resume
    await h.advance(10);
    askStage(h, 'fallback_low', ['hello there'], 'r2', 'core-2');
    await h.advance(1_000);
    expect(h.logs.filter((l) => l['reason'] === 'early_broadcast_useful')).toHaveLength(1);
    arrive(h, ["it's cold"]); // broadcast early again
    await h.advance(10);
    askStage(h, 'fallback_low', ['it is cold', "it's cold"], 'r3', 'core-3');
    await h.advance(1_000);
    expect(skill.asked).toEqual([["what's up"], ['what is up', "what's up"], ['hello there'], ["it's cold"], ['it is cold', "it's cold"]]);
    arrive(h, ["don't stop"]); // found differing again: not broadcast early
    await h.advance(10);
    expect(skill.asked).toHaveLength(5);
    for (const r of ['r1', 'r2', 'r3']) expect(matchOf(h, r)).toMatchObject(WK_LOW);
  });

  it('FALLBACK-1 §6.1 × ovos-core utterance transformers: while early broadcasts are off, a dormant workshop skill is still probed at the tier — neither the arrival recorded and not sent, nor an older arrival of the same words, counts as the utterance\'s probe', async () => {
    const h = await booted(STAGES);
    fallbackSkill(h, 'spec.catch.all', 100);
    // wk.back registered over c1, which closed; another connection opened (it may be back); it misses a ping: dormant.
    let awake = false;
    const asked: string[][] = [];
    h.bus.subscribe((m) => {
      if (m.type !== 'ovos.skills.fallback.ping' || !awake) return;
      asked.push((m.data['utterances'] as string[]).map(String));
      h.bus.publish(reply(m, 'ovos.skills.fallback.pong', { skill_id: 'wk.back', can_handle: false }), 'front');
    });
    h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: 'wk.back', priority: 90 }, { session: session('default') }), 'c1');
    await h.settle();
    h.bus.closeConnection('c1');
    h.bus.openConnection('front');
    arrive(h, ['good morning'], { session: 'hall' });
    await h.advance(10);
    askStage(h, 'fallback_low', ['good morning'], 'r0', 'core-0', 'en-US', 'hall');
    await h.advance(2 * T);
    expect(h.system.fallback.registry.entry('default', 'wk.back')?.dormant).toBe(true);
    // An arrival probed for it (sent at once), which ovos-core's own intents handled: no tier took it.
    arrive(h, ['hello there']);
    await h.advance(BROADCAST_LIMITS.bindWindowMs + 1);
    // ovos-core's normalizer changes what the tiers ask: early broadcasts stop.
    arrive(h, ["what's up"]);
    await h.advance(10);
    askStage(h, 'fallback_low', ['what is up', "what's up"], 'r1', 'core-1');
    await h.advance(2 * T);
    expect(unused(h)).toHaveLength(1);
    // The skill is alive again. The same words arrive once more: recorded, not sent (early broadcasts are off).
    awake = true;
    const before = pings(h).length;
    arrive(h, ['hello there']);
    await h.advance(10);
    expect(pings(h)).toHaveLength(before);
    askStage(h, 'fallback_low', ['hello there'], 'r2', 'core-2');
    await h.advance(2 * T);
    expect(pings(h)).toHaveLength(before + 1); // the tier's probe
    expect(asked).toEqual([['hello there']]);
    expect(h.system.fallback.registry.entry('default', 'wk.back')?.dormant).toBeUndefined(); // heard: back in the pools
    expect(matchOf(h, 'r2')).toMatchObject({ match_type: 'spec.catch.all:fallback' });
  });
});

describe('FALLBACK-1 §6.1 (src/plugins/README.md "Liveness and restarts"): while a workshop registration is dormant, each utterance gets one probe — fallback.earlyStart false: at its first fallback stage', () => {
  const NOT_EARLY = withConfig((c) => ({ ...c, pipeline: ['fallback_high', 'fallback_medium', 'fallback_low'], dialects: { spec: true, legacy: true }, fallback: { ...c.fallback, earlyStart: false } }));

  /**
   * A workshop skill registered over connection c1, which closes; another connection opens (it may be back there), and
   * it misses u0's broadcast: dormant. From `wake()` on it answers every broadcast ping at once, over "front" (its bus
   * client reconnected; ovos-workshop does not register again).
   */
  async function dormantWorkshop(h: Harness, skillId: string, priority: number): Promise<{ wake: () => void; dispatched: string[] }> {
    let awake = false;
    const dispatched: string[] = [];
    h.bus.subscribe((m) => {
      if (!awake) return;
      if (m.type === 'ovos.skills.fallback.ping') h.bus.publish(reply(m, 'ovos.skills.fallback.pong', { skill_id: skillId, can_handle: true }), 'front');
      else if (m.type === `ovos.skills.fallback.${skillId}.request`) {
        dispatched.push(String(m.data['utterance']));
        h.bus.publish({ ...m, type: `ovos.skills.fallback.${skillId}.response`, data: { result: true } }, 'front');
        h.bus.publish({ ...m, type: 'ovos.utterance.handled', data: {} }, 'front');
      }
    });
    h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: skillId, priority }, { session: session('default') }), 'c1');
    await h.settle();
    h.bus.closeConnection('c1');
    h.bus.openConnection('front');
    await h.settle();
    h.utter(ROLL, { session: session('s0'), utteranceId: 'u0' });
    await h.advance(2 * T);
    expect(h.system.fallback.registry.entry('default', skillId)?.dormant).toBe(true);
    return { wake: () => (awake = true), dispatched };
  }

  it('FALLBACK-1 §6.1: a dormant workshop skill that is alive again is probed by the next utterance\'s first fallback stage (no workshop skill in its pools) — heard, it is back for the utterance after', async () => {
    const h = await booted(NOT_EARLY);
    fallbackSkill(h, 'spec.catch.all', 100);
    const wk = await dormantWorkshop(h, 'wk.back', 90);
    wk.wake();
    h.utter(ROLL, { session: session('s1'), utteranceId: 'u1' });
    await h.advance(2 * T);
    expect(pings(h).map((m) => m.context['utterance_id'])).toEqual(['u0', 'u1']);
    expect(h.system.fallback.registry.entry('default', 'wk.back')?.dormant).toBeUndefined();
    h.utter(ROLL, { session: session('s1'), utteranceId: 'u2' });
    await h.advance(2 * T);
    expect(winnerOf(h)).toEqual({ u0: 'spec.catch.all', u1: 'spec.catch.all', u2: 'wk.back' });
    expect(wk.dispatched).toEqual([ROLL]);
  });

  it('FALLBACK-1 §6.1: two utterances of one session at once while a workshop registration is dormant — each gets its own probe, the second\'s not taken as sent by the first\'s', async () => {
    const h = await booted(NOT_EARLY);
    fallbackSkill(h, 'spec.slow', 80, { decide: () => 'silent' }); // holds each utterance in fallback_low for T
    fallbackSkill(h, 'spec.catch.all', 100);
    await dormantWorkshop(h, 'wk.dead', 10); // never wakes
    h.utter(ROLL, { session: session('s1'), utteranceId: 'u1' });
    await h.advance(10);
    h.utter(ROLL, { session: session('s1'), utteranceId: 'u2' }); // the same words, while u1's probe is kept
    await h.advance(2 * T);
    expect(pings(h).map((m) => m.context['utterance_id'])).toEqual(['u0', 'u1', 'u2']);
    expect(winnerOf(h)).toEqual({ u0: 'spec.catch.all', u1: 'spec.catch.all', u2: 'spec.catch.all' });
    expect(handledOf(h)).toEqual({ u0: 1, u1: 1, u2: 1 });
  });
});

describe('the bookkeeping itself (UtteranceBroadcasts; no wire effect): broadcasts are forgotten', () => {
  const limits = (sessions: number): { perSession: number; sessions: number; bindWindowMs: number } => ({ perSession: BROADCAST_LIMITS.perSession, sessions, bindWindowMs: BROADCAST_LIMITS.bindWindowMs });
  /** A broadcast sent for utterance `utteranceId` of `sessionId`. */
  const sent = (id: string, sessionId: string, utteranceId: string): UtteranceBroadcast<string> => ({
    id,
    sessionId,
    utteranceId,
    utterances: [TIME],
    lang: 'en-US',
    origin: createMessage('ovos.utterance.handle', { utterances: [TIME] }, { session: session(sessionId), utterance_id: utteranceId }),
    recordedAt: 0,
    sentAt: 0,
    reached: new Map(),
    said: new Map(),
    contests: new Set(),
    checked: true,
  });

  it('§6.1: an utterance that ends forgets its own broadcast only, wherever it sits in its session\'s list; a session whose last broadcast went is forgotten too — it no longer counts against the sessions kept', () => {
    const released: string[] = [];
    const broadcasts = new UtteranceBroadcasts<string>((b) => released.push(b.id), limits(2));
    const hall = sent('h1', 'hall', 'v1');
    const first = sent('k1', 'kitchen', 'u1');
    const second = sent('k2', 'kitchen', 'u2');
    for (const b of [hall, first, second]) broadcasts.add(b);
    broadcasts.handled('kitchen', 'u2'); // the newer of the session's two
    expect(released).toEqual(['k2']);
    expect([broadcasts.ofArrival('kitchen', second.origin), broadcasts.ofArrival('kitchen', first.origin)]).toEqual([undefined, first]);
    expect(broadcasts.size).toBe(2);
    broadcasts.handled('kitchen', 'u1');
    expect(broadcasts.ofArrival('kitchen', first.origin)).toBeUndefined();
    // Two sessions are kept: with the kitchen gone, the car's broadcast fits next to the hall's — nothing pushed out.
    broadcasts.add(sent('c1', 'car', 'w1'));
    expect(released).toEqual(['k2', 'k1']);
    expect(broadcasts.ofArrival('hall', hall.origin)).toBe(hall);
    expect(broadcasts.size).toBe(2);
  });

  it('§6.1: a broadcast whose session is pushed out while a stage contest still takes its answers is kept for that contest, and forgotten when it ends', async () => {
    const broadcasts = new UtteranceBroadcasts<string>(() => undefined, limits(1));
    const kitchen = sent('k1', 'kitchen', 'u1');
    broadcasts.add(kitchen);
    let end = (): void => undefined;
    const done = new Promise<void>((resolve) => (end = resolve));
    broadcasts.take(kitchen, 'contest', done);
    broadcasts.add(sent('h1', 'hall', 'v1')); // one session kept: the kitchen's goes
    expect(broadcasts.byId('k1', 'kitchen')).toBe(kitchen); // its answers still reach the contest
    end();
    await done;
    await Promise.resolve();
    expect(broadcasts.byId('k1', 'kitchen')).toBeUndefined();
    expect(broadcasts.size).toBe(1);
  });
});

