/**
 * One broadcast per utterance for the legacy fallback skills (src/plugins/README.md "Legacy fallback skills";
 * ovos-wire-today.md: every ovos-workshop skill answers every `ovos.skills.fallback.ping`): sent when the utterance
 * arrives (`fallback.earlyStart`) or at its first fallback stage with a legacy skill, and its answers serve every
 * fallback stage of that utterance — in hand when a stage starts, or as they come, each legacy skill's ping timeout
 * counted from it (OVOS-FALLBACK-1 §6.1), the pool order deciding (§6.2).
 * Harness: the whole system on LocalBus (connections played by name) + ManualClock; no sleeps.
 */
import { describe, expect, it } from 'vitest';
import { createMessage, reply, type JsonObject, type Message } from '../../../src/bus/message.js';
import type { Config } from '../../../src/config/defaults.js';
import { stageTopics } from '../../../src/stage-service/stage-service.js';
import { createHarness, fallbackSkill, withConfig, type Harness } from '../../support/harness.js';

const PIPELINE = ['fallback_high', 'common_query', 'fallback_medium', 'fallback_low'];
const CONFIG = withConfig((c) => ({ ...c, pipeline: PIPELINE, dialects: { spec: true, legacy: true } }));
const NOT_EARLY = withConfig((c) => ({ ...c, pipeline: PIPELINE, dialects: { spec: true, legacy: true }, fallback: { ...c.fallback, earlyStart: false } }));
const T = CONFIG.fallback.pingTimeoutMs;
const COMMAND = 'do a barrel roll'; // the common-query gate rejects it: that stage declines at once
const session = (id: string): JsonObject => ({ session_id: id });
const winners = (h: Harness): unknown[] => h.of('ovos.intent.matched').map((m) => m.data['skill_id']);
const pings = (h: Harness): Message[] => h.of('ovos.skills.fallback.ping');
const withReason = (h: Harness, reason: string): Array<Record<string, unknown>> => h.logs.filter((line) => line['reason'] === reason);

/**
 * An ovos-workshop FallbackSkill over a connection of its own: registers, answers every broadcast ping `afterMs` later
 * (on the harness clock; 'never': silent) with `willing` of the utterance, and runs its handler when dispatched.
 */
function workshop(h: Harness, skillId: string, priority: number, options: { willing?: boolean; afterMs?: number | 'never' } = {}): { asked: string[][] } {
  const asked: string[][] = [];
  h.bus.openConnection(skillId);
  h.bus.subscribe((m) => {
    if (m.type === 'ovos.skills.fallback.ping') {
      asked.push((m.data['utterances'] as string[]) ?? []);
      const after = options.afterMs ?? 0;
      if (after === 'never') return;
      const pong = reply(m, 'ovos.skills.fallback.pong', { skill_id: skillId, can_handle: options.willing ?? false });
      if (after === 0) h.bus.publish(pong, skillId);
      else h.clock.setTimeout(() => h.bus.publish(pong, skillId), after);
    } else if (m.type === `ovos.skills.fallback.${skillId}.request`) {
      h.bus.publish({ ...m, type: `ovos.skills.fallback.${skillId}.response`, data: { result: true } }, skillId);
      h.bus.publish({ ...m, type: 'ovos.utterance.handled', data: {} }, skillId);
    }
  });
  h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: skillId, priority }, { session: session('default') }), skillId);
  return { asked };
}

/** A spec fallback skill that answers its ping `afterMs` later (on the harness clock). */
function slowSpec(h: Harness, skillId: string, priority: number, afterMs: number, willing: boolean): void {
  h.bus.subscribe((m) => {
    if (m.type === `${skillId}.fallback.ping`) h.clock.setTimeout(() => h.bus.publish(reply(m, `${skillId}.fallback.pong`, { skill_id: skillId, can_handle: willing })), afterMs);
  });
  h.bus.publish(createMessage('ovos.fallback.register', { skill_id: skillId, priority }, { skill_id: skillId, session: session('default') }));
}

/** When (harness clock) each message went on the bus. */
const heardAt = new WeakMap<Message, number>();

/** When the utterance was decided (its ovos.intent.matched or ovos.intent.unmatched), ms after `start`. */
function decidedAt(h: Harness, start: number): number | undefined {
  const decision = h.wire.find((m) => m.type === 'ovos.intent.matched' || m.type === 'ovos.intent.unmatched');
  return decision === undefined ? undefined : heardAt.get(decision)! - start;
}

/** The skills are in: the utterance `COMMAND` in session s1; when it was sent (harness clock). */
async function utter(h: Harness, utteranceId = 'u1'): Promise<number> {
  await h.settle();
  const start = h.clock.now();
  h.utter(COMMAND, { session: session('s1'), utteranceId });
  return start;
}

async function booted(config: Config = CONFIG): Promise<Harness> {
  const h = createHarness(config);
  h.bus.subscribe((m) => heardAt.set(m, h.clock.now()));
  await h.settle();
  return h;
}

describe('OVOS-FALLBACK-1 §6.1 × ovos-wire-today: one legacy broadcast per utterance, for all its fallback stages', () => {
  it('§6.1: three workshop skills, one in each stage: one ping for the utterance, each skill asked once; the low stage decides with the answer in hand', async () => {
    const h = await booted();
    const high = workshop(h, 'wk.high', 10);
    const medium = workshop(h, 'wk.medium', 60);
    const low = workshop(h, 'wk.low', 90, { willing: true });
    await h.settle();
    h.utter(COMMAND, { session: session('s1'), utteranceId: 'u1' });
    await h.advance(1);
    expect(winners(h)).toEqual(['wk.low']);
    expect(pings(h)).toHaveLength(1);
    expect([high.asked, medium.asked, low.asked]).toEqual([[[COMMAND]], [[COMMAND]], [[COMMAND]]]);
    expect(h.of('ovos.utterance.handled')).toHaveLength(1);
    expect(h.system.fallback.utteranceBroadcasts).toBe(0); // the utterance is over: nothing kept
  });

  it('§6.1 (early start): the broadcast goes out when the utterance arrives — a stage reached after the answer came decides at once', async () => {
    const h = await booted();
    fallbackSkill(h, 'spec.slow.no', 10, { decide: () => 'silent' }); // fallback_high waits its ping timeout on it
    workshop(h, 'wk.low', 90, { willing: true, afterMs: 60 });
    const start = await utter(h);
    await h.advance(1);
    expect(pings(h)).toHaveLength(1);
    expect(heardAt.get(pings(h)[0]!)! - start).toBe(0);
    await h.advance(2 * T);
    // fallback_high ends at T (spec.slow.no silent); the low stage's "yes" has been in hand since 60 ms.
    expect(winners(h)).toEqual(['wk.low']);
    expect(decidedAt(h, start)).toBe(T);
  });

  it('§6.1 (fallback.earlyStart false): the broadcast goes out at the first stage with a legacy skill, and the answer decides when it comes', async () => {
    const h = await booted(NOT_EARLY);
    fallbackSkill(h, 'spec.slow.no', 10, { decide: () => 'silent' });
    workshop(h, 'wk.low', 90, { willing: true, afterMs: 60 });
    const start = await utter(h);
    await h.advance(T - 1);
    expect(pings(h)).toEqual([]);
    await h.advance(1);
    expect(pings(h)).toHaveLength(1); // fallback_low reached at T
    await h.advance(60);
    expect(winners(h)).toEqual(['wk.low']);
    expect(decidedAt(h, start)).toBe(T + 60);
  });

  it('§6.1: an answer that comes while a later stage is running is handed to it — the stage decides when it comes', async () => {
    const h = await booted();
    fallbackSkill(h, 'spec.no', 10, { decide: () => false });
    workshop(h, 'wk.low', 90, { willing: true, afterMs: 300 });
    const start = await utter(h);
    await h.advance(299);
    expect(winners(h)).toEqual([]);
    await h.advance(1);
    expect(winners(h)).toEqual(['wk.low']);
    expect(decidedAt(h, start)).toBe(300);
    expect(pings(h)).toHaveLength(1);
  });

  it('§6.1 boundary: a silent workshop skill\'s ping timeout runs from the utterance broadcast, not from its stage — fallback_low, reached at 100 ms, still awaits it at T−1 and passes it at T', async () => {
    const h = await booted();
    slowSpec(h, 'spec.slow.no', 10, 100, false); // fallback_high ends at 100 ms
    workshop(h, 'wk.mute', 80, { afterMs: 'never' });
    fallbackSkill(h, 'spec.catch.all', 100);
    const start = await utter(h);
    await h.advance(T - 1);
    expect(winners(h)).toEqual([]);
    await h.advance(1);
    expect(winners(h)).toEqual(['spec.catch.all']);
    expect(decidedAt(h, start)).toBe(T);
    expect(withReason(h, 'ping_timeout').map((l) => l['skill_id'])).toEqual(['wk.mute']);
  });

  it('§6.1 boundary: a workshop skill\'s "yes" at T−1 after the broadcast counts in a stage reached at 100 ms; at T it is late', async () => {
    for (const [after, winner] of [[T - 1, 'wk.late'], [T, 'spec.catch.all']] as const) {
      const h = await booted();
      slowSpec(h, 'spec.slow.no', 10, 100, false);
      workshop(h, 'wk.late', 80, { willing: true, afterMs: after });
      fallbackSkill(h, 'spec.catch.all', 100);
      const start = await utter(h);
      await h.advance(T + 10);
      expect(winners(h)).toEqual([winner]);
      expect(decidedAt(h, start)).toBe(winner === 'wk.late' ? T - 1 : T);
    }
  });

  it('§6.1: a workshop skill silent past T since the broadcast is passed at its turn at once, when its stage starts after T', async () => {
    const h = await booted();
    fallbackSkill(h, 'spec.slow.no', 10, { decide: () => 'silent' });
    workshop(h, 'wk.mute', 80, { afterMs: 'never' });
    fallbackSkill(h, 'spec.catch.all', 100);
    const start = await utter(h);
    await h.advance(T + 1);
    // fallback_high timed out spec.slow.no at T; fallback_low, at T, finds wk.mute's timeout passed: the catch-all is asked at once.
    expect(winners(h)).toEqual(['spec.catch.all']);
    expect(decidedAt(h, start)).toBe(T);
  });

  it('§6.2: pool order decides across the shared answers — a spec skill ahead of a workshop skill that said yes is still asked first, in its turn', async () => {
    const h = await booted();
    const spec = fallbackSkill(h, 'spec.first', 85, { decide: () => true });
    workshop(h, 'wk.second', 90, { willing: true });
    await h.settle();
    h.utter(COMMAND, { session: session('s1'), utteranceId: 'u1' });
    await h.advance(1);
    expect(winners(h)).toEqual(['spec.first']);
    expect(spec.pings).toHaveLength(1);
  });

  it('§6.1: two sessions at once each get their own broadcast; an answer counts only for the session and utterance it replies to', async () => {
    const h = await booted();
    let calls = 0;
    h.bus.openConnection('wk.picky');
    h.bus.subscribe((m) => {
      if (m.type !== 'ovos.skills.fallback.ping') return;
      calls++;
      // Willing for the kitchen only, and answering the kitchen's broadcast last.
      const kitchen = (m.context['session'] as JsonObject)['session_id'] === 'kitchen';
      h.clock.setTimeout(() => h.bus.publish(reply(m, 'ovos.skills.fallback.pong', { skill_id: 'wk.picky', can_handle: kitchen }), 'wk.picky'), kitchen ? 40 : 20);
    });
    h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: 'wk.picky', priority: 90 }, { session: session('default') }), 'wk.picky');
    fallbackSkill(h, 'spec.catch.all', 100);
    await h.settle();
    h.utter(COMMAND, { session: session('kitchen'), utteranceId: 'k1' });
    h.utter(COMMAND, { session: session('hall'), utteranceId: 'h1' });
    await h.advance(100);
    const byUtterance = Object.fromEntries(h.of('ovos.intent.matched').map((m) => [m.context['utterance_id'], m.data['skill_id']]));
    expect(byUtterance).toEqual({ k1: 'wk.picky', h1: 'spec.catch.all' });
    expect(calls).toBe(2);
  });

  it('ovos-core #859: a pong built as a fresh message (no ids) answers the one broadcast still awaiting that skill — even before any stage runs', async () => {
    const h = await booted();
    h.bus.openConnection('wk.fresh');
    h.bus.subscribe((m) => {
      if (m.type === 'ovos.skills.fallback.ping') h.bus.publish({ type: 'ovos.skills.fallback.pong', data: { skill_id: 'wk.fresh', can_handle: true }, context: {} }, 'wk.fresh');
      if (m.type === 'ovos.skills.fallback.wk.fresh.request') h.bus.publish({ ...m, type: 'ovos.skills.fallback.wk.fresh.response', data: { result: true } }, 'wk.fresh');
    });
    h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: 'wk.fresh', priority: 90 }, { session: session('default') }), 'wk.fresh');
    await h.settle();
    h.utter(COMMAND, { session: session('s1'), utteranceId: 'u1' });
    await h.advance(1);
    expect(winners(h)).toEqual(['wk.fresh']);
    expect(h.logs.filter((l) => l['msg'] === 'message dropped' && l['type'] === 'ovos.skills.fallback.pong')).toEqual([]);
  });

  it('no legacy skill: no broadcast at all (spec skills are asked one at a time, §6.1)', async () => {
    const h = await booted();
    fallbackSkill(h, 'spec.only', 90);
    await h.settle();
    h.utter(COMMAND, { session: session('s1'), utteranceId: 'u1' });
    await h.advance(1);
    expect(winners(h)).toEqual(['spec.only']);
    expect(pings(h)).toEqual([]);
  });

  it('§6.1: a broadcast of an utterance that is over answers nothing: its late pong is dropped at debug, and the next utterance gets its own', async () => {
    const h = await booted();
    workshop(h, 'wk.slow', 90, { willing: true, afterMs: T + 100 });
    fallbackSkill(h, 'spec.catch.all', 100);
    await utter(h);
    await h.advance(T);
    expect(winners(h)).toEqual(['spec.catch.all']);
    await h.advance(50);
    await utter(h, 'u2'); // asked while u1's late "yes" is still on its way
    await h.advance(150); // wk.slow's late "yes" to u1 (at T + 100)
    expect(h.logs.filter((l) => l['msg'] === 'message dropped' && l['type'] === 'ovos.skills.fallback.pong').map((l) => [l['reason'], l['level']])).toEqual([['finished_contest', 20]]);
    expect(pings(h).map((m) => m.context['utterance_id'])).toEqual(['u1', 'u2']);
    await h.advance(T);
    expect(winners(h)).toEqual(['spec.catch.all', 'spec.catch.all']); // u1's late yes never counted for u2
    expect(h.system.fallback.utteranceBroadcasts).toBe(0);
  });
});

describe('OVOS-FALLBACK-1 §6.1: a broadcast asks only the skills it could reach — one that came since gets a broadcast of its own', () => {
  it('§6.1: a workshop skill that registers after the utterance\'s broadcast went out is asked by a fresh one at its stage — it wins, no ping timeout for it', async () => {
    const h = await booted();
    slowSpec(h, 'spec.slow.no', 10, 100, false);
    workshop(h, 'wk.early', 60); // a legacy skill is there: the broadcast goes out at the arrival
    fallbackSkill(h, 'spec.catch.all', 100);
    await h.settle();
    h.utter(COMMAND, { session: session('s1'), utteranceId: 'u1' });
    await h.advance(50);
    const late = workshop(h, 'wk.late', 80, { willing: true }); // registers at 50 ms, before fallback_medium (100 ms)
    await h.advance(100);
    expect(winners(h)).toEqual(['wk.late']);
    expect(pings(h)).toHaveLength(2);
    expect(late.asked).toEqual([[COMMAND]]);
    expect(withReason(h, 'ping_timeout')).toEqual([]);
  });

  it('§6.1: a "yes" from a process that has gone is not taken for the restarted skill\'s — the broadcast is sent again and the new process decides', async () => {
    const h = await booted();
    slowSpec(h, 'spec.slow.no', 10, 100, false);
    fallbackSkill(h, 'spec.catch.all', 100);
    // The old process says yes at once.
    let oldAlive = true;
    h.bus.openConnection('old');
    h.bus.subscribe((m) => {
      if (m.type === 'ovos.skills.fallback.ping' && oldAlive) h.bus.publish(reply(m, 'ovos.skills.fallback.pong', { skill_id: 'wk.x', can_handle: true }), 'old');
    });
    h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: 'wk.x', priority: 80 }, { session: session('default') }), 'old');
    await h.settle();
    h.utter(COMMAND, { session: session('s1'), utteranceId: 'u1' });
    await h.advance(10);
    // It restarts before fallback_medium: its old connection closes, the new process registers and says no.
    oldAlive = false;
    h.bus.closeConnection('old');
    h.bus.openConnection('new');
    h.bus.subscribe((m) => {
      if (m.type === 'ovos.skills.fallback.ping') h.bus.publish(reply(m, 'ovos.skills.fallback.pong', { skill_id: 'wk.x', can_handle: false }), 'new');
    });
    h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: 'wk.x', priority: 80 }, { session: session('default') }), 'new');
    await h.advance(200);
    expect(winners(h)).toEqual(['spec.catch.all']);
    expect(pings(h)).toHaveLength(2);
  });

  it('§6.1: two utterances of one session at once each get their own broadcast and their own answers', async () => {
    const h = await booted();
    h.bus.openConnection('wk.picky');
    h.bus.subscribe((m) => {
      if (m.type !== 'ovos.skills.fallback.ping') return;
      const first = (m.data['utterances'] as string[])[0] === 'zebra crossing';
      h.clock.setTimeout(() => h.bus.publish(reply(m, 'ovos.skills.fallback.pong', { skill_id: 'wk.picky', can_handle: first }), 'wk.picky'), first ? 30 : 10);
    });
    h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: 'wk.picky', priority: 90 }, { session: session('default') }), 'wk.picky');
    fallbackSkill(h, 'spec.catch.all', 100);
    await h.settle();
    h.utter('zebra crossing', { session: session('s1'), utteranceId: 'u1' });
    h.utter('blorf the zint', { session: session('s1'), utteranceId: 'u2' });
    await h.advance(2_000); // both are questions to the common-query gate: its polls come first
    const byUtterance = Object.fromEntries(h.of('ovos.intent.matched').map((m) => [m.context['utterance_id'], m.data['skill_id']]));
    expect(byUtterance).toEqual({ u1: 'wk.picky', u2: 'spec.catch.all' });
    expect(pings(h)).toHaveLength(2);
  });
});

describe('the stage service (ovos-core asks our fallback tiers): the broadcast at the utterance\'s arrival on the bus', () => {
  const STAGES = withConfig((c) => ({ ...c, dialects: { spec: true, legacy: true }, orchestrator: { ...c.orchestrator, takesUtterances: false } }));
  const arrive = (h: Harness, utterances: string[], id?: string): void =>
    h.bus.publish(createMessage('recognizer_loop:utterance', { utterances, lang: 'en-US' }, { session: session('kitchen'), ...(id === undefined ? {} : { utterance_id: id }) }), 'voice');
  const askStage = (h: Harness, stage: string, utterances: string[], requestId: string, utteranceId = 'core-1'): void =>
    h.bus.publish(
      createMessage(stageTopics.match, { version: 1, request_id: requestId, stage, utterances, lang: 'en-US', timeout_ms: 1_000 }, { session: session('kitchen'), utterance_id: utteranceId }),
      'ovos-core',
    );
  const matchOf = (h: Harness, requestId: string): unknown => h.of(stageTopics.response).find((m) => m.data['request_id'] === requestId)?.data['match'];

  it('§6.1: ovos-core\'s three tiers take the answers of the one broadcast sent when the utterance arrived (an arrival without utterance_id: bound by session and text)', async () => {
    const h = await booted(STAGES);
    const high = workshop(h, 'wk.high', 3);
    workshop(h, 'wk.low', 95, { willing: true, afterMs: 5 });
    await h.settle();
    arrive(h, [COMMAND]);
    await h.advance(50); // ovos-core's intent stages run meanwhile
    expect(pings(h)).toHaveLength(1);
    for (const [stage, id] of [['fallback_high', 'r1'], ['fallback_medium', 'r2'], ['fallback_low', 'r3']] as const) {
      askStage(h, stage, [COMMAND], id);
      await h.settle();
    }
    expect([matchOf(h, 'r1'), matchOf(h, 'r2')]).toEqual([null, null]);
    expect(matchOf(h, 'r3')).toMatchObject({ match_type: 'ovos.skills.fallback.wk.low.request' });
    expect(pings(h)).toHaveLength(1);
    expect(high.asked).toHaveLength(1);
  });

  it('§6.1 × ovos-core utterance transformers: the utterances changed before the tiers: the tiers get a broadcast of their own, the mismatch is logged once, and early broadcasts stop until an arrival matches again', async () => {
    const h = await booted(STAGES);
    const skill = workshop(h, 'wk.low', 95, { willing: true });
    await h.settle();
    arrive(h, ["what's up"]);
    await h.advance(10);
    askStage(h, 'fallback_low', ['what is up', "what's up"], 'r1', 'core-1');
    await h.settle();
    expect(matchOf(h, 'r1')).toMatchObject({ match_type: 'ovos.skills.fallback.wk.low.request' });
    expect(skill.asked).toEqual([["what's up"], ['what is up', "what's up"]]);
    expect(withReason(h, 'early_broadcast_unused')).toHaveLength(1);
    // The next arrival is not broadcast early: its stage sends the one broadcast.
    arrive(h, ['hello there']);
    await h.advance(10);
    expect(skill.asked).toHaveLength(2);
    askStage(h, 'fallback_low', ['hello there'], 'r2', 'core-2');
    await h.settle();
    expect(skill.asked).toHaveLength(3);
    expect(matchOf(h, 'r2')).toMatchObject({ match_type: 'ovos.skills.fallback.wk.low.request' });
    // That arrival matched its stage: early broadcasts resume.
    arrive(h, ['good night']);
    await h.advance(10);
    expect(skill.asked).toHaveLength(4);
    askStage(h, 'fallback_low', ['good night'], 'r3', 'core-3');
    await h.settle();
    expect(skill.asked).toHaveLength(4);
    expect(withReason(h, 'early_broadcast_useful')).toHaveLength(1);
  });

  it('§6.1: broadcasts are bounded when no utterance is handled here: at most 4 a session, at most 1,024 sessions', async () => {
    const h = await booted(STAGES);
    workshop(h, 'wk.low', 95);
    await h.settle();
    for (let i = 0; i < 1_100; i++) {
      for (let n = 0; n < 5; n++) h.bus.publish(createMessage('recognizer_loop:utterance', { utterances: [`${COMMAND} ${n}`], lang: 'en-US' }, { session: session(`s${i}`) }), 'voice');
    }
    await h.settle();
    expect(h.system.fallback.utteranceBroadcasts).toBe(1_024 * 4);
  });

  it('§6.1 × OVOS-MSG-1 §4.2: two utterances of one session overlapping, neither with an utterance_id: each tier request takes the arrival that asked what it asks — no false "transformer" finding', async () => {
    const h = await booted(STAGES);
    const skill = workshop(h, 'wk.low', 95, { willing: true });
    await h.settle();
    arrive(h, ['first thing']);
    arrive(h, ['second thing']);
    await h.advance(10);
    askStage(h, 'fallback_low', ['first thing'], 'r1', 'core-1');
    askStage(h, 'fallback_low', ['second thing'], 'r2', 'core-2');
    await h.settle();
    expect([matchOf(h, 'r1'), matchOf(h, 'r2')]).toEqual([expect.objectContaining({ match_type: 'ovos.skills.fallback.wk.low.request' }), expect.objectContaining({ match_type: 'ovos.skills.fallback.wk.low.request' })]);
    expect(skill.asked).toEqual([['first thing'], ['second thing']]);
    expect(withReason(h, 'early_broadcast_unused')).toEqual([]);
  });
});
