/**
 * What the live inspector shows, recorded from the whole system (supervisor, plugins, bus) on the deterministic
 * clock: per utterance, its contests with their current state, a timeline of every ping, pong, request, response,
 * timeout, drop (with its reason code) and decision at its ms offset, and the trace it exports.
 */
import { describe, expect, it } from 'vitest';
import { createMessage, reply, type Message } from '../../src/bus/message.js';
import { DEFAULT_CONFIG } from '../../src/config/defaults.js';
import type { TimelineEntry, UtteranceView } from '../../src/inspect/recorder.js';
import { replayTrace } from '../../src/testing/trace.js';
import { cqSkill } from '../support/cq-skills.js';
import { createHarness, withConfig, type Harness } from '../support/harness.js';

const { pingTimeoutMs } = DEFAULT_CONFIG.fallback;
const { pollClaimBoundMs } = DEFAULT_CONFIG.commonQuery;

/** A fallback skill that pongs `pongAfterMs` after its ping (`'never'`: silent) and completes its handler at once. */
function timedFallbackSkill(h: Harness, skillId: string, priority: number, pongAfterMs: number | 'never', canHandle = true): void {
  h.bus.subscribe((m: Message) => {
    if (m.type === `${skillId}.fallback.ping` && pongAfterMs !== 'never') {
      h.clock.setTimeout(() => h.bus.publish(reply(m, `${skillId}.fallback.pong`, { skill_id: skillId, can_handle: canHandle })), pongAfterMs);
    } else if (m.type === `${skillId}:fallback`) {
      h.bus.publish(reply(m, 'ovos.utterance.speak', { utterance: `${skillId} speaking` }));
      h.bus.publish(reply(m, 'mycroft.skill.handler.complete', {}));
    }
  });
  h.bus.publish(createMessage('ovos.fallback.register', { skill_id: skillId, priority }, { skill_id: skillId, session: { session_id: 'default' } }));
}

function only(h: Harness): UtteranceView {
  const all = h.recorder!.utterances();
  expect(all).toHaveLength(1);
  return all[0]!;
}

const messages = (u: UtteranceView): Array<Pick<TimelineEntry, 'at' | 'type'>> =>
  u.timeline.filter((e) => e.kind === 'message').map(({ at, type }) => ({ at, type }));

describe('inspector recorder', () => {
  it('OVOS-FALLBACK-1 §6: a fallback contest shows ping, pong, dispatch and completion at their ms offsets, and the decision names the skill', async () => {
    const h = createHarness(DEFAULT_CONFIG, { recorder: {} });
    timedFallbackSkill(h, 'slow.skill', 10, 40);
    await h.settle();
    h.utter('blorp the flange', { session: { session_id: 's1' } });
    await h.advance(60);

    const u = only(h);
    expect(u.utterance).toBe('blorp the flange');
    expect(u.session_id).toBe('s1');
    expect(u.live).toBe(false);
    const wire = messages(u);
    const at = (type: string): number | undefined => wire.find((e) => e.type === type)?.at;
    expect(at('ovos.utterance.handle')).toBe(0);
    expect(at('slow.skill.fallback.ping')).toBe(0);
    expect(at('slow.skill.fallback.pong')).toBe(40);
    expect(at('slow.skill:fallback')).toBe(40);
    expect(at('mycroft.skill.handler.complete')).toBe(40);
    expect(wire.map((e) => e.type)).toEqual(expect.arrayContaining(['ovos.intent.matched', 'ovos.utterance.handled']));
    // Entries are in the order they happened.
    const offsets = u.timeline.map((e) => e.at);
    expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
    expect(u.timeline.findIndex((e) => e.type === 'slow.skill.fallback.ping')).toBeLessThan(u.timeline.findIndex((e) => e.type === 'slow.skill.fallback.pong'));

    const fallback = u.contests.find((c) => c.kind === 'fallback')!;
    expect(fallback).toMatchObject({ label: 'fallback_high', machine: 'fallback', state: 'matched', status: 'done', active: ['fallback_matched'] });
    expect(u.contests.find((c) => c.kind === 'utterance')).toMatchObject({ state: 'completed', active: ['utterance_completed'] });
    expect(u.decision).toMatchObject({ outcome: 'completed', stage: 'fallback_high', skill_id: 'slow.skill', answer: 'slow.skill speaking', afterMs: 40 });
    expect(h.recorder!.decisions()[0]).toEqual(u.decision);
  });

  it('OVOS-FALLBACK-1 §6.1: a silent skill\'s ping timeout is on the timeline at exactly pingTimeoutMs, and its late pong is listed as dropped with the reason', async () => {
    const h = createHarness(DEFAULT_CONFIG, { recorder: {} });
    timedFallbackSkill(h, 'silent.skill', 10, pingTimeoutMs + 100);
    timedFallbackSkill(h, 'next.skill', 20, 150);
    await h.settle();
    h.recorder!.setDetailed(true); // as while a page is connected
    h.utter('blorp the flange');
    await h.advance(pingTimeoutMs + 200);

    const u = only(h);
    expect(u.timeline.filter((e) => e.kind === 'timeout' && e.contest === 'fallback/fallback_high')).toEqual([{ at: pingTimeoutMs, kind: 'timeout', type: 'pingTimeout', contest: 'fallback/fallback_high' }]);
    expect(messages(u).find((e) => e.type === 'next.skill.fallback.ping')?.at).toBe(pingTimeoutMs);
    expect(u.timeline.filter((e) => e.kind === 'drop')).toEqual([
      { at: pingTimeoutMs + 100, kind: 'drop', type: 'pong.ignored', reason: 'late', skill_id: 'silent.skill', contest: 'fallback/fallback_high' },
    ]);
    expect(u.decision).toMatchObject({ skill_id: 'next.skill', afterMs: pingTimeoutMs + 150 });
  });

  it('OVOS-COMMON-QUERY-1 §6.3: the poll closes at the claim bound on the timeline, and the decision names the skill whose answer was spoken', async () => {
    const h = createHarness(DEFAULT_CONFIG, { recorder: {} });
    cqSkill(h, 'cq.knower', { claim: true, latencyMs: 20, answer: 'Paris is the capital of France.', conf: 0.9, responseDelayMs: 10 });
    h.recorder!.setDetailed(true);
    h.utter('what is the capital of france');
    await h.advance(pollClaimBoundMs + 50);

    const u = only(h);
    expect(u.timeline.filter((e) => e.kind === 'timeout').map(({ at, type }) => ({ at, type }))[0]).toEqual({ at: pollClaimBoundMs, type: 'pollClaimBound' });
    const cq = u.contests.find((c) => c.kind === 'common_query')!;
    expect(cq).toMatchObject({ machine: 'common-query', state: 'done', status: 'done', active: ['commonQuery_done'] });
    // The contest passed through the poll and the collection: both were on the timeline as state changes (the poll is
    // the daemon's first, cold and knowing no skill: the claim at once opens its spread of one claim bound).
    const states = u.timeline.filter((e) => e.kind === 'state' && e.contest === 'common_query/common_query').map((e) => e.type);
    expect(states).toEqual(['polling.open', 'polling.spreading', 'collecting.window.initial, collecting.answers.noSurvivor', 'done']);
    expect(messages(u).find((e) => e.type === 'cq.knower.common_query.response')?.at).toBe(pollClaimBoundMs + 10);
    expect(u.decision).toMatchObject({ outcome: 'completed', stage: 'common_query', answer: 'Paris is the capital of France.', answered_by: 'cq.knower' });
  });

  it('without a page (no detail): messages, contests with the state they ended in and the decision, no state changes on the way or timeouts; detail switched on mid-contest picks up the live contests', async () => {
    const h = createHarness(DEFAULT_CONFIG, { recorder: {} });
    timedFallbackSkill(h, 'silent.skill', 10, 'never');
    timedFallbackSkill(h, 'next.skill', 20, 10);
    await h.settle();
    h.utter('blorp the flange', { session: { session_id: 'quiet' } });
    await h.advance(pingTimeoutMs + 20);
    const quiet = only(h);
    expect(quiet.detailed).toBe(false);
    expect(quiet.timeline.filter((e) => e.kind === 'timeout')).toEqual([]);
    // Only the state each contest ended in, at its end.
    expect(quiet.timeline.filter((e) => e.kind === 'state').map((e) => `${e.contest} ${e.type}`).sort()).toEqual(
      quiet.contests.map((c) => `${c.kind}/${c.label} ${c.state}`).sort(),
    );
    expect(quiet.contests.find((c) => c.kind === 'fallback')).toMatchObject({ state: 'matched', active: ['fallback_matched'], status: 'done' });
    expect(quiet.decision).toMatchObject({ skill_id: 'next.skill', afterMs: pingTimeoutMs + 10 });
    expect(messages(quiet).find((e) => e.type === 'next.skill.fallback.ping')?.at).toBe(pingTimeoutMs);

    // A page connects while the fallback contest waits for the silent skill: its timeout is on the timeline.
    h.utter('blorp again', { session: { session_id: 'watched' } });
    await h.advance(100);
    h.recorder!.setDetailed(true);
    await h.advance(pingTimeoutMs);
    const watched = h.recorder!.utterances()[0]!;
    expect(watched.session_id).toBe('watched');
    expect(watched.detailed).toBe(true);
    expect(watched.timeline.filter((e) => e.kind === 'timeout' && e.contest === 'fallback/fallback_high').map((e) => e.at)).toEqual([pingTimeoutMs]);
    h.recorder!.setDetailed(false);
  });

  it('OVOS-PIPELINE-1 §6: an unmatched decision says why — every stage asked and what it gave', async () => {
    const h = createHarness(DEFAULT_CONFIG, { recorder: {} });
    timedFallbackSkill(h, 'declines.skill', 10, 5, false);
    await h.settle();
    h.utter('do a barrel roll'); // not a question: common query declines at its gate (§4)
    await h.advance(50);
    expect(only(h).decision).toMatchObject({
      outcome: 'unmatched',
      skill_id: null,
      declined: [
        { stage: 'fallback_high', why: 'no_match' },
        { stage: 'common_query', why: 'no_match' },
        { stage: 'fallback_medium', why: 'no_match' },
        { stage: 'fallback_low', why: 'no_match' },
      ],
    });
    // A fallback stage that ran into its stage bound (OVOS-PIPELINE-1 §4.4, 5 ms before the match bound) declines
    // itself, and its timeline says when and why.
    const slow = createHarness(withConfig((c) => ({ ...c, orchestrator: { ...c.orchestrator, matchTimeoutMs: 300 } })), { recorder: {} });
    timedFallbackSkill(slow, 'silent.skill', 10, 'never');
    await slow.settle();
    slow.recorder!.setDetailed(true);
    slow.utter('do a barrel roll');
    await slow.advance(1_500);
    const cut = slow.recorder!.utterances()[0]!;
    expect(cut.decision?.declined[0]).toEqual({ stage: 'fallback_high', why: 'no_match' });
    expect(cut.timeline.filter((e) => e.kind === 'timeout')).toEqual([{ at: 295, kind: 'timeout', type: 'stageBound', contest: 'fallback/fallback_high' }]);
  });

  it('a reply no utterance owns is listed among the strays with its reason code; utterances are not touched', async () => {
    const h = createHarness(DEFAULT_CONFIG, { recorder: {} });
    h.bus.publish(createMessage('ghost.skill.fallback.pong', { skill_id: 'ghost.skill', can_handle: true }, { session: { session_id: 'nobody' }, utterance_id: 'u-none' }));
    await h.settle();
    expect(h.recorder!.utterances()).toEqual([]);
    expect(h.recorder!.strays()).toEqual([expect.objectContaining({ reason: 'no_live_contest', type: 'ghost.skill.fallback.pong', session_id: 'nobody', skill_id: 'ghost.skill' })]);
  });

  it('two sessions asking the same question at once: each utterance\'s timeline holds its own session\'s messages only', async () => {
    const h = createHarness(DEFAULT_CONFIG, { recorder: {} });
    timedFallbackSkill(h, 'slow.skill', 10, 30);
    await h.settle();
    h.utter('blorp the flange', { session: { session_id: 'kitchen' } });
    h.utter('blorp the flange', { session: { session_id: 'bedroom' } });
    await h.advance(50);

    const all = h.recorder!.utterances();
    expect(all.map((u) => u.session_id).sort()).toEqual(['bedroom', 'kitchen']);
    for (const u of all) {
      const trace = h.recorder!.trace(u.key)!;
      expect(trace.messages.length).toBeGreaterThan(5);
      for (const m of trace.messages) expect((m.context['session'] as { session_id?: string }).session_id).toBe(u.session_id);
      expect(u.timeline.filter((e) => e.type === 'slow.skill.fallback.ping')).toHaveLength(1);
      expect(u.decision).toMatchObject({ skill_id: 'slow.skill' });
    }
  });

  it('memory is bounded: only the last utterances are kept, and a timeline past its bound says how much it left out', async () => {
    const h = createHarness(DEFAULT_CONFIG, { recorder: { maxUtterances: 3, maxEntries: 6, maxDecisions: 2 } });
    timedFallbackSkill(h, 'slow.skill', 10, 5);
    await h.settle();
    for (let i = 0; i < 5; i++) {
      h.utter(`blorp number ${i}`, { session: { session_id: `s${i}` } });
      await h.advance(10);
    }
    const kept = h.recorder!.utterances();
    expect(kept.map((u) => u.utterance)).toEqual(['blorp number 4', 'blorp number 3', 'blorp number 2']);
    for (const u of kept) {
      expect(u.timeline).toHaveLength(6);
      expect(u.truncated).toBeGreaterThan(0);
    }
    expect(h.recorder!.decisions().map((d) => d.utterance)).toEqual(['blorp number 4', 'blorp number 3']);
  });

  it('an exported trace replays through the timing harness to the same decision (the trace format)', async () => {
    const h = createHarness(DEFAULT_CONFIG, { recorder: {} });
    timedFallbackSkill(h, 'declines.skill', 10, 30, false);
    timedFallbackSkill(h, 'slow.skill', 20, 40);
    await h.settle();
    h.utter('blorp the flange', { session: { session_id: 'replayed' } });
    await h.advance(100);
    const u = only(h);
    const trace = h.recorder!.trace(u.key)!;
    expect(trace.pools['fallback_high']).toEqual(['declines.skill', 'slow.skill']);
    const replay = await replayTrace(DEFAULT_CONFIG, JSON.parse(JSON.stringify(trace)));
    expect(replay.recorded).toEqual({ decidedBy: 'fallback_high', skill_id: 'slow.skill', decidedAt: 70 });
    expect(replay.reproduced).toBe(true);
    expect(replay.driftMs).toBe(0);
  });
});
