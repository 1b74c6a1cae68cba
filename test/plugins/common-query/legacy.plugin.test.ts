/**
 * Common-query skills written on ovos-workshop (ovos-wire-today.md) in our contests, on the harness's deterministic
 * clock and in-process bus: the whole system (orchestrator, supervisor, contest actors, both dialects) with
 * scripted workshop skills. The same behaviours over a real websocket are in test/integration/legacy-transcripts.
 *
 * How a workshop skill's replies map onto OVOS-COMMON-QUERY-1 (documented in src/plugins/README.md, "Switching an OVOS install"):
 *  - `question:query` is asked in the same contest as the spec ping (§6.1); `searching: true` is a claim (§6.2)
 *    made without being asked for an answer — the answer is already on its way, so no §7.1 request is sent;
 *  - the answer is its §7.1 response (classic `conf` above 1 competes as 1), and is kept even when it arrives while
 *    the poll is still open; `searching: false` after a claim is a response without answer (it settles the claim,
 *    §7.2 early termination); `searching: false` without a claim is a "no" to the poll (§6.3 early close);
 *  - `searching` never extends the wait: the §7.2 windows bound a legacy claimant exactly as a spec one.
 *
 * Defaults in play (Appendix A and config): poll window 500 ms, claim bound 125 ms, collection initial 3 s, ceiling
 * 5 s, min conf 0.5, fast win 0.9. Timers due at an instant fire before a message published at that instant.
 */
import { describe, expect, it } from 'vitest';
import { createMessage, type JsonObject, type Message } from '../../../src/bus/message.js';
import type { Config } from '../../../src/config/defaults.js';
import { createHarness, fallbackSkill, withConfig, type Harness } from '../../support/harness.js';
import { cqSkill, legacyCqSkill, sessionOf, timedWire } from '../../support/cq-skills.js';
import { SKILL_HANDLED_GRACE_MS } from '../../../src/orchestrator/orchestrator.js';

const PIPELINE = ['common_query', 'fallback_high', 'fallback_medium', 'fallback_low'];
const CLAIM_BOUND = 125;
const POLL = 500;
const INITIAL = 3_000;
const CEILING = 5_000;
const SPEED = 'what is the speed of light';

function config(legacy = true, spec = true): Config {
  return withConfig((c) => ({ ...c, pipeline: PIPELINE, dialects: { spec, legacy } }));
}

const decided = (h: Harness): Array<[unknown, unknown, unknown]> =>
  h.logs.filter((l) => l['msg'] === 'common query decided').map((l) => [l['closed_by'], l['winner'], l['responses']]);

/** The clock times (from the question) at which messages of `type` were delivered. */
function timesOf(wire: ReturnType<typeof timedWire>, type: string): number[] {
  const t0 = wire.find((w) => w.message.type === 'question:query')?.at ?? NaN;
  return wire.filter((w) => w.message.type === type).map((w) => w.at - t0);
}

/** PIPELINE-1 §6: one ovos.utterance.handled per utterance on the wire, whoever sends it. */
function expectOneHandledEach(h: Harness): void {
  expect(h.of('ovos.utterance.handled')).toHaveLength(h.of('ovos.utterance.handle').length);
}

const spoken = (h: Harness): string[] => [...h.of('speak'), ...h.of('ovos.utterance.speak')].map((m) => String(m.data['utterance']));
const winnerAction = (skill: { actions: Array<{ message: Message }> }): Message | undefined => skill.actions[0]?.message;

describe('OVOS-COMMON-QUERY-1 §6–§7 with ovos-workshop skills: when the contest closes', () => {
  it('§6.3 / §7.2: an answer that arrives while the poll is still open is kept, and the contest closes when the last claimant answers', async () => {
    const h = createHarness(config());
    const quick = legacyCqSkill(h, 'cq.quick', { answerAfterMs: 20, conf: 0.7 });
    const slow = legacyCqSkill(h, 'cq.slow', { searchingAfterMs: 100, answerAfterMs: 200, conf: 0.6 });
    await h.settle();
    const wire = timedWire(h);
    h.utter(SPEED);
    await h.advance(300);
    // cq.quick's answer came at 20 ms, before cq.slow claimed at 100 ms (the poll was open): it was not lost.
    expect(decided(h)).toEqual([['all_answered', 'cq.quick', 2]]);
    expect(timesOf(wire, 'ovos.intent.matched')).toEqual([200]);
    expect(winnerAction(quick)?.type).toBe('question:action.cq.quick');
    expect(slow.actions).toEqual([]);
    // Neither skill was sent a §7.1 request: their answers were already on their way.
    expect(h.wire.filter((m) => m.type.endsWith(':common_query'))).toEqual([]);
    expect(spoken(h)).toEqual(['cq.quick answer']);
    expectOneHandledEach(h);
  });

  it('COMMON-QUERY-1 §8 step 3, fast win during the poll: a classic skill’s conf 2.0 (competing as 1) ends the contest at once, before the other skill has claimed', async () => {
    const h = createHarness(config());
    const classic = legacyCqSkill(h, 'cq.classic', { classic: true, answerAfterMs: 20, conf: 2.0 });
    legacyCqSkill(h, 'cq.slow', { searchingAfterMs: 100, answerAfterMs: 200, conf: 0.8 });
    await h.settle();
    const wire = timedWire(h);
    h.utter(SPEED);
    await h.advance(400);
    expect(decided(h)).toEqual([['fast_win', 'cq.classic', 1]]);
    expect(timesOf(wire, 'ovos.intent.matched')).toEqual([20]);
    expect(timesOf(wire, 'question:action')).toEqual([20]);
    // Its own reply goes back to it, conf 2.0 as it sent it.
    expect(winnerAction(classic)?.data).toMatchObject({ skill_id: 'cq.classic', conf: 2.0, handles_speech: true, callback_data: { answer: 'cq.classic answer' } });
    // cq.slow's claim and answer arrive after the contest: dropped with a reason, never a second answer.
    expect(h.logs.filter((l) => l['msg'] === 'message dropped' && l['type'] === 'question:query.response').length).toBe(2);
    expect(spoken(h)).toEqual(['cq.classic answer']);
    expectOneHandledEach(h);
  });

  it('§7.2 ceiling: a skill that says searching and never answers holds the contest for the 5 s ceiling, not longer; then fallback runs', async () => {
    const h = createHarness(config());
    legacyCqSkill(h, 'cq.hung', { answerAfterMs: 'never' });
    fallbackSkill(h, 'fb', 90);
    await h.settle();
    const wire = timedWire(h);
    h.utter(SPEED);
    await h.advance(CEILING - 1);
    expect(decided(h)).toEqual([]);
    await h.advance(100);
    expect(decided(h)).toEqual([['ceiling', null, 0]]);
    expect(timesOf(wire, 'fb.fallback.ping')).toEqual([CEILING]);
    expect(spoken(h)).toEqual(['fb says hi']);
    expectOneHandledEach(h);
  });

  it('§7.2 initial window: one skill answers 0.7 at 100 ms, another says searching and hangs — the answer is spoken when the 3 s initial window ends', async () => {
    const h = createHarness(config());
    const answering = legacyCqSkill(h, 'cq.answering', { answerAfterMs: 100, conf: 0.7 });
    legacyCqSkill(h, 'cq.hung', { answerAfterMs: 'never' });
    await h.settle();
    const wire = timedWire(h);
    h.utter(SPEED);
    await h.advance(INITIAL + 100);
    expect(decided(h)).toEqual([['window', 'cq.answering', 1]]);
    expect(timesOf(wire, 'ovos.intent.matched')).toEqual([INITIAL]);
    expect(answering.actions).toHaveLength(1);
    expectOneHandledEach(h);
  });

  it('§7.2 between the initial window and the ceiling: an answer at 4 s is taken the moment it arrives', async () => {
    const h = createHarness(config());
    legacyCqSkill(h, 'cq.late', { answerAfterMs: 4_000, conf: 0.7 });
    await h.settle();
    const wire = timedWire(h);
    h.utter(SPEED);
    await h.advance(4_100);
    expect(decided(h)).toEqual([['all_answered', 'cq.late', 1]]);
    expect(timesOf(wire, 'ovos.intent.matched')).toEqual([4_000]);
    expect(spoken(h)).toEqual(['cq.late answer']);
    expectOneHandledEach(h);
  });

  it('§7.2 early termination: searching then searching:false settles the claim — no answer, fallback at once, no 3 s wait', async () => {
    const h = createHarness(config());
    legacyCqSkill(h, 'cq.thinks', { answerAfterMs: 50, answer: null });
    fallbackSkill(h, 'fb', 90);
    await h.settle();
    const wire = timedWire(h);
    h.utter(SPEED);
    await h.advance(200);
    expect(decided(h)).toEqual([['all_answered', null, 1]]);
    expect(timesOf(wire, 'fb.fallback.ping')).toEqual([50]);
    expect(spoken(h)).toEqual(['fb says hi']);
    expectOneHandledEach(h);
  });

  it('§6.3 rule 1: searching:false without a claim is a "no" to the poll — every roster skill declined; with the spec dialect on, a spec skill nobody knows yet may still claim, so the poll closes at the 125 ms claim bound', async () => {
    const h = createHarness(config());
    legacyCqSkill(h, 'cq.no', { searchingAfterMs: 'never', answer: null });
    legacyCqSkill(h, 'cq.no2', { searchingAfterMs: 'never', answerAfterMs: 30, answer: null });
    // A spec skill that stays silent unless it can answer (§6.2) is on no roster until its first claim — at 100 ms.
    cqSkill(h, 'wiki', { pongDelayMs: 100, latencyMs: 50, answer: 'wiki answer', conf: 0.7, responseDelayMs: 20 });
    fallbackSkill(h, 'fb', 90);
    await h.settle();
    h.utter(SPEED);
    await h.advance(POLL + 100);
    expect(decided(h)).toEqual([['all_answered', 'wiki', 1]]);
    expect(spoken(h)).toEqual(['wiki answer']);
    expectOneHandledEach(h);
  });

  it('§6.3 rule 1, legacy dialect only: every roster skill declined closes the poll at once (no unknown skill can claim) — fallback at 30 ms, not 125 ms', async () => {
    const h = createHarness(config(true, false));
    legacyCqSkill(h, 'cq.no', { searchingAfterMs: 'never', answer: null });
    legacyCqSkill(h, 'cq.no2', { searchingAfterMs: 'never', answerAfterMs: 30, answer: null });
    await h.settle();
    const wire = timedWire(h);
    // The voice loop's entry: the spec's ovos.utterance.handle is not spoken in this deployment.
    h.bus.publish(createMessage('recognizer_loop:utterance', { utterances: [SPEED], lang: 'en-US' }, { source: 'audio', destination: 'skills', session: { session_id: 'default' } }));
    await h.advance(POLL + 100);
    expect(decided(h)).toEqual([['no_claimant', null, 0]]);
    expect(timesOf(wire, 'ovos.utterance.handled')).toEqual([30]);
    expect(h.of('ovos.common_query.ping').filter((m) => m.data['utterance'] !== undefined)).toEqual([]); // the spec ping is not sent
  });

  it('§6.3: a newly discovered skill that never replies to question:query costs only the 125 ms claim bound', async () => {
    const h = createHarness(config());
    legacyCqSkill(h, 'cq.deaf', { searchingAfterMs: 'never', answerAfterMs: 'never' });
    fallbackSkill(h, 'fb', 90);
    await h.settle();
    const wire = timedWire(h);
    h.utter(SPEED);
    await h.advance(POLL + 100);
    expect(timesOf(wire, 'fb.fallback.ping')).toEqual([CLAIM_BOUND]);
    expectOneHandledEach(h);
  });

  it('§6.3 rule 2: a workshop skill that replied to the last 3 questions is waited for up to the 500 ms poll window — its "searching" at 300 ms (a busy skill process) is not lost', async () => {
    const h = createHarness(config());
    // Quick for three questions, then searching at 300 ms and answering at 350 ms.
    const busy = legacyCqSkill(h, 'cq.busy', { searchingAfterMs: (i) => (i < 3 ? 0 : 300), answerAfterMs: (i) => (i < 3 ? 0 : 350) });
    fallbackSkill(h, 'fb', 90);
    await h.settle();
    for (const session of ['q1', 'q2', 'q3']) {
      h.utter(SPEED, { session: { session_id: session } });
      await h.advance(100);
    }
    expect(busy.actions).toHaveLength(3);
    const wire = timedWire(h);
    h.utter(SPEED, { session: { session_id: 'q4' } });
    await h.advance(POLL + 100);
    expect(busy.actions).toHaveLength(4);
    expect(wire.filter((w) => w.message.type === 'ovos.intent.matched').map((w) => [w.at - wire[0]!.at, w.message.data['skill_id']])).toEqual([[350, 'cq.busy']]);
    expect(h.of('fb.fallback.ping')).toEqual([]);
    expectOneHandledEach(h);
  });

  it('§6.3 rule 2 boundary: the same 300 ms "searching" on a skill not yet heard from 3 times is past the 125 ms claim bound — not a claimant, fallback answers', async () => {
    const h = createHarness(config());
    const busy = legacyCqSkill(h, 'cq.busy', { searchingAfterMs: 300, answerAfterMs: 350 });
    fallbackSkill(h, 'fb', 90);
    await h.settle();
    h.utter(SPEED);
    await h.advance(POLL + 100);
    expect(busy.actions).toEqual([]);
    expect(spoken(h)).toEqual(['fb says hi']);
    expectOneHandledEach(h);
  });
});

describe('OVOS-COMMON-QUERY-1 §8 with ovos-workshop and spec skills together', () => {
  it('§8.4: a legacy answer and a spec answer compete on conf — the higher wins whichever dialect it came in', async () => {
    for (const [legacyConf, specConf, winner] of [
      [0.8, 0.6, 'cq.legacy'],
      [0.6, 0.8, 'wiki'],
    ] as const) {
      const h = createHarness(config());
      const legacy = legacyCqSkill(h, 'cq.legacy', { answerAfterMs: 50, conf: legacyConf });
      cqSkill(h, 'wiki', { latencyMs: 100, answer: 'wiki answer', conf: specConf, responseDelayMs: 60 });
      await h.settle();
      // A first question puts the spec skill on the roster (it has ponged once), as in a running deployment.
      h.utter('who invented electricity', { session: { session_id: 'warm-up' } });
      await h.advance(CEILING + 100);
      h.utter(SPEED);
      await h.advance(CEILING + 100);
      expect(decided(h)[1]?.[1]).toBe(winner);
      expect(legacy.actions.map((a) => a.message.data['utterance']).filter((u) => u === SPEED)).toEqual(winner === 'cq.legacy' ? [SPEED] : []);
      expectOneHandledEach(h);
    }
  });

  it('§8.1: a classic skill’s conf below the minimum (0.4) is filtered like any other', async () => {
    const h = createHarness(config());
    const low = legacyCqSkill(h, 'cq.low', { classic: true, conf: 0.4 });
    fallbackSkill(h, 'fb', 90);
    await h.settle();
    h.utter(SPEED);
    await h.advance(200);
    expect(decided(h)).toEqual([['all_answered', null, 1]]);
    expect(low.actions).toEqual([]);
    expect(spoken(h)).toEqual(['fb says hi']);
    expectOneHandledEach(h);
  });

  it('COMMON-QUERY-1 §8 step 2 / PIPELINE-1 §5.3: a legacy skill in the live session’s blacklisted_skills cannot win', async () => {
    const h = createHarness(config());
    const banned = legacyCqSkill(h, 'cq.banned', { conf: 0.95 });
    const other = legacyCqSkill(h, 'cq.other', { conf: 0.6 });
    await h.settle();
    h.utter(SPEED, { session: { session_id: 'kid', blacklisted_skills: ['cq.banned'] } });
    await h.advance(200);
    expect(banned.actions).toEqual([]);
    expect(other.actions.map((a) => sessionOf(a.message).sessionId)).toEqual(['kid']);
    expectOneHandledEach(h);
  });
});

describe('ovos-workshop skills: bad, late and foreign replies never confuse a contest', () => {
  it('OVOS-MSG-1 §6.1: malformed question:query.response frames are dropped, and ones with an unusable answer or conf are the skill\'s decline — each with its reason code; the contest still closes on the good one', async () => {
    const h = createHarness(config());
    const bad: JsonObject[] = [
      { answer: 'x', conf: 'high' },
      { answer: 'x', conf: -1 },
      { answer: 'x' },
      { answer: 42, conf: 0.9 },
      { skill_id: null, answer: 'x', conf: 0.9 },
      { phrase: null, answer: 'x', conf: 0.9 },
      { searching: 'yes' },
    ];
    let i = 0;
    for (const data of bad) legacyCqSkill(h, `cq.bad${i++}`, { searchingAfterMs: 'never', answerData: () => data });
    legacyCqSkill(h, 'cq.good', { answerAfterMs: 10, conf: 0.7 });
    await h.settle();
    h.utter(SPEED);
    await h.advance(POLL + 100);
    const reasons = h.logs.filter((l) => l['msg'] === 'message dropped' && l['type'] === 'question:query.response').map((l) => l['reason']);
    expect(reasons.sort()).toEqual(['answer_invalid', 'skill_id_missing', 'utterance_missing'].sort()); // searching "yes", no skill_id, no phrase
    const declines = h.logs.filter((l) => l['msg'] === "a reply's field cannot be used: it counts as the skill's decline" && l['type'] === 'question:query.response').map((l) => l['reason']);
    expect(declines.sort()).toEqual(['answer_invalid', 'conf_invalid', 'conf_invalid', 'conf_missing'].sort());
    expect(decided(h)[0]?.[1]).toBe('cq.good');
    expectOneHandledEach(h);
  });

  it('§6.3 / §7.1: a reply carrying another phrase (a stale question) never counts for this contest', async () => {
    const h = createHarness(config());
    legacyCqSkill(h, 'cq.confused', { conf: 0.95, answerData: (d) => ({ ...d, phrase: 'who invented electricity' }), searchingAfterMs: 'never' });
    const right = legacyCqSkill(h, 'cq.right', { answerAfterMs: 10, conf: 0.6 });
    await h.settle();
    h.utter(SPEED);
    await h.advance(POLL + 100);
    expect(h.logs.filter((l) => l['msg'] === 'message dropped' && l['reason'] === 'wrong_utterance').length).toBeGreaterThan(0);
    expect(right.actions).toHaveLength(1);
    expectOneHandledEach(h);
  });

  it('§6.3 state keyed by session: two sessions ask the same question at once; each gets its own skill’s answer, once', async () => {
    const h = createHarness(config());
    // The skill answers in whatever session asked; ids ride back on the reply's context.
    const skill = legacyCqSkill(h, 'cq.echo', { answerAfterMs: 30, conf: 0.7 });
    await h.settle();
    h.utter(SPEED, { session: { session_id: 'kitchen' } });
    h.utter(SPEED, { session: { session_id: 'bedroom' } });
    await h.advance(200);
    expect(skill.actions.map((a) => sessionOf(a.message).sessionId).sort()).toEqual(['bedroom', 'kitchen']);
    expect(decided(h).map((d) => d[1])).toEqual(['cq.echo', 'cq.echo']);
    expectOneHandledEach(h);
  });

  it('dialects.legacy off: question:query is never asked and a workshop skill takes no part', async () => {
    const h = createHarness(config(false));
    const skill = legacyCqSkill(h, 'cq.any', { conf: 0.95 });
    fallbackSkill(h, 'fb', 90);
    await h.settle();
    h.utter(SPEED);
    await h.advance(POLL + 100);
    expect(h.of('question:query')).toEqual([]);
    expect(skill.actions).toEqual([]);
    expect(spoken(h)).toEqual(['fb says hi']);
    expectOneHandledEach(h);
  });
});

describe('src/plugins/README.md "Legacy common-query skills": a legacy skill that has left cannot win — until it announces itself again', () => {
  /** A workshop skill over connection `via`: announces itself, answers every question:query with searching, then 0.8. */
  function workshopOver(h: Harness, via: string, announce = true): () => void {
    let live = true;
    const send = (message: Message): void => {
      if (live) h.bus.publish(message, via);
    };
    if (announce) send(createMessage('ovos.common_query.pong', { skill_id: 'wk', is_classic_cq: false }, { skill_id: 'wk', session: { session_id: 'default' } }));
    h.bus.subscribe((m) => {
      if (m.type === 'question:query') {
        const phrase = String(m.data['phrase']);
        const respond = (data: JsonObject): void => send({ type: 'question:query.response', data: { phrase, skill_id: 'wk', ...data }, context: { ...m.context, skill_id: 'wk' } });
        respond({ searching: true });
        h.clock.setTimeout(() => respond({ answer: 'workshop answer', callback_data: { answer: 'workshop answer' }, conf: 0.8 }), 20);
      }
      if (m.type === 'question:action.wk') {
        for (const type of ['speak', 'ovos.utterance.handled']) send({ type, data: type === 'speak' ? { utterance: 'workshop answer' } : {}, context: { ...m.context, skill_id: 'wk' } });
      }
    });
    return () => {
      live = false;
      h.bus.closeConnection(via);
    };
  }

  it('answered, then its connection closed before match selects: the spec answer is spoken; reconnected and announced, it wins again', async () => {
    const h = createHarness(withConfig((c) => ({ ...c, pipeline: ['fallback_high', 'common_query', 'fallback_low'], dialects: { spec: true, legacy: true } })));
    const disconnect = workshopOver(h, 'w1');
    cqSkill(h, 'spec', { answer: 'spec answer', conf: 0.6 });
    // fallback_high's only skill declines after 100 ms: the contest (early start) is over long before match reads it.
    h.bus.subscribe((m) => {
      if (m.type === 'slow.fallback.ping') h.clock.setTimeout(() => h.bus.publish({ type: 'slow.fallback.pong', data: { skill_id: 'slow', can_handle: false }, context: { ...m.context } }, 'fb'), 100);
    });
    h.bus.publish(createMessage('ovos.fallback.register', { skill_id: 'slow', priority: 10 }, { skill_id: 'slow', session: { session_id: 'default' } }), 'fb');
    await h.settle();
    h.utter(SPEED);
    await h.advance(50);
    disconnect(); // it answered at 20 ms; gone at 50 ms, before match selects at 100 ms
    await h.advance(200);
    expect(spoken(h)).toEqual(['spec answer']);
    workshopOver(h, 'w2'); // back, over another connection
    await h.settle();
    h.utter(SPEED);
    await h.advance(300);
    expect(h.of('ovos.utterance.speak').map((m) => m.data['utterance'])).toEqual(['spec answer']); // the plugin spoke once, the first time
    expect(h.of('speak').map((m) => m.data['utterance'])).toEqual(['workshop answer']); // the skill itself, the second time
    expectOneHandledEach(h);
  });

  it('its bus client reconnects (ovos-bus-client does; ovos-workshop announces itself only at start-up): answering over the new connection, it wins again', async () => {
    const h = createHarness(config());
    const disconnect = workshopOver(h, 'w1');
    cqSkill(h, 'spec', { answer: 'spec answer', conf: 0.6 });
    await h.settle();
    disconnect();
    await h.settle();
    expect(h.system.commonQuery.roster()).toEqual([]); // it left
    workshopOver(h, 'w2', false);
    await h.settle();
    h.utter(SPEED);
    await h.advance(CEILING);
    expect(decided(h)).toEqual([['all_answered', 'wk', 2]]);
    expect(h.of('speak').map((m) => m.data['utterance'])).toEqual(['workshop answer']);
    expect(h.of('ovos.utterance.speak')).toEqual([]);
    expectOneHandledEach(h);
  });
});

describe('PIPELINE-1 §6: a legacy common-query winner that leaves the handled to core (newest ovos-workshop next to ovos-core ≥ 2.3.0a1)', () => {
  it('PIPELINE-1 §6: its first answer ends with our handled after the grace; its next ones the moment its handler completes — one handled each', async () => {
    const h = createHarness(config());
    legacyCqSkill(h, 'cq.modern', { answerAfterMs: 20, conf: 0.95, sendsHandled: false });
    await h.settle();
    const wire = timedWire(h);
    const handledAfterComplete = (): number[] => {
      const completes = wire.filter((w) => w.message.type === 'mycroft.skill.handler.complete').map((w) => w.at);
      const handled = wire.filter((w) => w.message.type === 'ovos.utterance.handled').map((w) => w.at);
      return handled.map((at, i) => at - completes[i]!);
    };
    h.utter(SPEED, { utteranceId: 'u1' });
    await h.advance(20);
    expect(h.of('ovos.utterance.handled')).toEqual([]);
    await h.advance(SKILL_HANDLED_GRACE_MS);
    h.utter(SPEED, { utteranceId: 'u2' });
    await h.advance(20);
    expect(handledAfterComplete()).toEqual([SKILL_HANDLED_GRACE_MS, 0]);
    expect(spoken(h)).toEqual(['cq.modern answer', 'cq.modern answer']);
    expect(h.logs.filter((l) => l['reason'] === 'skill_leaves_handled').map((l) => l['skill_id'])).toEqual(['cq.modern']);
    await h.advance(SKILL_HANDLED_GRACE_MS + 10);
    expectOneHandledEach(h);
  });
});
