/**
 * The common query plugin through the whole system (OVOS-COMMON-QUERY-1): orchestrator, supervisor, contest actors
 * and scripted skills on the harness's in-process bus, on its deterministic ManualClock. Where a scenario cannot be
 * produced through the bus (a live session that differs from the early-start snapshot), the plugin's
 * `onUtterance` / `match` are called directly, as the orchestrator would.
 *
 * Defaults in play (Appendix A and config): poll ceiling 500 ms, claim bound 125 ms, collection initial 3 s,
 * ceiling 5 s, min conf 0.5, fast win 0.9, early start on.
 *
 * Every harness starts with an empty roster (no skill has ever ponged), so a first question's poll closes at the
 * claim bound; the roster tests teach it with a first question. Timers due at an instant fire before a message
 * published at that instant is delivered: "at T" means just too late for a window that closes at T.
 */
import { describe, expect, it } from 'vitest';
import { createMessage, reply, type JsonObject, type Message } from '../../../src/bus/message.js';
import { sessionFromObject, type SessionView } from '../../../src/bus/session.js';
import type { Config } from '../../../src/config/defaults.js';
import type { DropReason } from '../../../src/dialect/spec-dialect.js';
import type { Match, PipelineStage } from '../../../src/pipeline/plugin.js';
import { createHarness, fallbackSkill, withConfig, type Harness } from '../../support/harness.js';
import { cqSkill, langSeenBySkill, sessionOf, timedWire } from '../../support/cq-skills.js';
import { PROMOTE_AFTER } from '../../../src/plugins/common-query/common-query.plugin.js';
import { StatusBus } from '../../support/status-bus.js';

const PIPELINE = ['common_query', 'fallback_high', 'fallback_medium', 'fallback_low'];
const CLAIM_BOUND = 125; // the poll closes here on a fresh roster (nobody known yet)
const POLL = 500;
const CEILING = 5_000;
/** Added to a declared latency_ms: the bus between skill and plugin (commonQuery.collectionAllowanceMs). */
const ALLOWANCE = 50;

type CqSettings = Config['commonQuery'];

function config(patch: (cq: CqSettings) => CqSettings = (cq) => cq): Config {
  return withConfig((c) => ({ ...c, pipeline: PIPELINE, commonQuery: patch(c.commonQuery) }));
}

const FRANCE = 'what is the capital of france';
const ELECTRICITY = 'who invented electricity';

const pings = (h: Harness): Message[] => h.of('ovos.common_query.ping');
const spoken = (h: Harness, sessionId?: string): string[] =>
  h
    .of('ovos.utterance.speak')
    .filter((m) => sessionId === undefined || sessionOf(m).sessionId === sessionId)
    .map((m) => String(m.data['utterance']));
const logsWith = (h: Harness, msg: string): Array<Record<string, unknown>> => h.logs.filter((l) => l['msg'] === msg);
const drops = (h: Harness, reason: DropReason): Array<Record<string, unknown>> =>
  logsWith(h, 'message dropped').filter((l) => l['reason'] === reason);

/** PIPELINE-1 §6: exactly one ovos.utterance.handled per ovos.utterance.handle, one per utterance_id. */
function expectOneHandledEach(h: Harness): void {
  const handles = h.of('ovos.utterance.handle');
  const handled = h.of('ovos.utterance.handled');
  expect(handled).toHaveLength(handles.length);
  const ids = handled.map((m) => m.context['utterance_id']);
  expect(new Set(ids).size).toBe(handles.length);
}

/** Types seen for a session from the first message of a type on. */
function after(h: Harness, sessionId: string, type: string): string[] {
  const line = h.timeline(sessionId);
  return line.slice(line.indexOf(type));
}

/** `n` questions one after another (sessions q0, q1, …), each given time to finish; who answered each ("-": nobody). */
async function questions(h: Harness, n: number): Promise<string[]> {
  const answers: string[] = [];
  for (let i = 0; i < n; i++) {
    const before = spoken(h).length;
    h.utter(FRANCE, { session: { session_id: `q${i}` }, utteranceId: `q${i}` });
    await h.advance(POLL + ALLOWANCE + 200);
    answers.push(spoken(h).length > before ? spoken(h).at(-1)! : '-');
  }
  return answers;
}

/** A pipeline stage that holds the pipeline for `ms` on the clock, then declines. */
function slowStage(h: Harness, ms: number): PipelineStage {
  return {
    pipelineId: 'slow_stage',
    match: (req) =>
      new Promise((resolve) => {
        const t = h.clock.setTimeout(() => resolve(null), ms);
        req.signal.addEventListener('abort', () => h.clock.clearTimeout(t));
      }),
    intents: () => [],
  };
}

function entry(utterance: string, session: JsonObject, utteranceId: string): Message {
  return createMessage('ovos.utterance.handle', { utterances: [utterance] }, { source: 'test', destination: 'orchestrator', session, utterance_id: utteranceId });
}

/** Call the plugin's match directly; `settled()` says whether it resolved yet. */
function startMatch(h: Harness, message: Message, lang: string, session: SessionView) {
  const utterances = message.data['utterances'];
  const list = Array.isArray(utterances) ? utterances.filter((u): u is string => typeof u === 'string') : [];
  let settled = false;
  const promise = h.system.commonQuery
    .match({ utterances: list, lang, session, message, signal: new AbortController().signal })
    .finally(() => {
      settled = true;
    });
  return { promise, settled: (): boolean => settled };
}

describe('OVOS-COMMON-QUERY-1 §4.1 question gate', () => {
  it('§4.1: a gate reject sends no ovos.common_query.ping at all, and fallback runs', async () => {
    const h = createHarness(config());
    const wiki = cqSkill(h, 'wiki');
    fallbackSkill(h, 'fb', 10);
    await h.settle();
    h.utter('play music');
    await h.advance(CLAIM_BOUND + 50);
    expect(pings(h)).toEqual([]);
    expect(wiki.pings).toEqual([]);
    expect(h.of('wiki:common_query')).toEqual([]);
    expect(h.of('ovos.intent.matched').map((m) => [m.data['skill_id'], m.data['intent_name']])).toEqual([['fb', 'fallback']]);
    expect(spoken(h)).toEqual(['fb says hi']);
    expectOneHandledEach(h);
  });

  it('§4.1: with the gate disabled the ping is sent for "play music" (the confidence filter stays the quality gate)', async () => {
    const h = createHarness(config((cq) => ({ ...cq, gate: { ...cq.gate, enabled: false } })));
    const wiki = cqSkill(h, 'wiki', { claim: 'silent' });
    fallbackSkill(h, 'fb', 10);
    await h.settle();
    h.utter('play music');
    await h.advance(POLL + 50);
    expect(pings(h).map((m) => m.data)).toEqual([{ utterance: 'play music' }]);
    expect(wiki.pings).toHaveLength(1);
    expect(spoken(h)).toEqual(['fb says hi']);
    expectOneHandledEach(h);
  });
});

describe('OVOS-COMMON-QUERY-1 §5 early start', () => {
  const SESSION = { session_id: 's1', pipeline: ['slow_stage', ...PIPELINE] };

  it('§5: the ping goes out at utterance entry, the match joins that one contest, and common_query holds the pipeline 0 ms', async () => {
    const h = createHarness(config());
    const wire = timedWire(h);
    h.system.orchestrator.register(slowStage(h, 300));
    cqSkill(h, 'wiki', { answer: 'Paris is the capital of France.', conf: 0.8, responseDelayMs: 50 });
    await h.settle();
    const t0 = h.clock.now();
    h.utter(FRANCE, { session: SESSION });
    await h.advance(400);

    const at = (type: string): number[] => wire.filter((w) => w.message.type === type).map((w) => w.at - t0);
    expect(at('ovos.utterance.handle')).toEqual([0]);
    expect(at('ovos.common_query.ping')).toEqual([0]); // same clock time as the entry: one ping only
    expect(at('wiki:common_query')).toEqual([CLAIM_BOUND]);
    expect(at('ovos.utterance.speak')).toEqual([300]);
    expect(spoken(h)).toEqual(['Paris is the capital of France.']);
    const stages = logsWith(h, 'stage matched').map((l) => [l['stage'], l['match_ms'], l['matched']]);
    expect(stages).toEqual([
      ['slow_stage', 300, false],
      ['common_query', 0, true],
    ]);
    expect(h.system.commonQuery.cacheSize).toBe(0);
    expectOneHandledEach(h);
  });

  it('§5: without early start (earlyStart false) the ping goes out only after the slow stage (t=300) and common_query match_ms > 0', async () => {
    const h = createHarness(config((cq) => ({ ...cq, earlyStart: false })));
    const wire = timedWire(h);
    h.system.orchestrator.register(slowStage(h, 300));
    cqSkill(h, 'wiki', { answer: 'Paris is the capital of France.', conf: 0.8, responseDelayMs: 50 });
    await h.settle();
    const t0 = h.clock.now();
    h.utter(FRANCE, { session: SESSION });
    await h.advance(500);

    const at = (type: string): number[] => wire.filter((w) => w.message.type === type).map((w) => w.at - t0);
    expect(at('ovos.common_query.ping')).toEqual([300]);
    expect(at('ovos.utterance.speak')).toEqual([300 + CLAIM_BOUND + 50]);
    expect(spoken(h)).toEqual(['Paris is the capital of France.']);
    const cq = logsWith(h, 'stage matched').find((l) => l['stage'] === 'common_query');
    expect(cq?.['match_ms']).toBeGreaterThan(0);
    expect(cq?.['match_ms']).toBe(CLAIM_BOUND + 50); // the claim bound (nobody known yet) + the skill's answer time
    expect(h.system.commonQuery.cacheSize).toBe(0);
    expectOneHandledEach(h);
  });

  it('§5: a match that arrives while the early contest is still in flight joins it (one ping, one request)', async () => {
    const h = createHarness(config());
    h.system.orchestrator.register(slowStage(h, 10));
    const wiki = cqSkill(h, 'wiki', { answer: 'Paris', conf: 0.8, responseDelayMs: 200 });
    await h.settle();
    h.utter(FRANCE, { session: SESSION });
    await h.advance(CLAIM_BOUND + 200 - 1);
    expect(spoken(h)).toEqual([]); // the match (from t=10) is waiting on the early contest's collection
    await h.advance(1);
    expect(pings(h)).toHaveLength(1);
    expect(wiki.requests).toHaveLength(1);
    expect(spoken(h)).toEqual(['Paris']);
    const cq = logsWith(h, 'stage matched').find((l) => l['stage'] === 'common_query');
    expect(cq?.['match_ms']).toBe(CLAIM_BOUND + 200 - 10);
    expectOneHandledEach(h);
  });

  it('§5.2: an early start whose utterance was handled upstream is evicted and stopped — no contest, cache entry or timer left', async () => {
    const h = createHarness(config());
    const upstream: PipelineStage = {
      pipelineId: 'upstream',
      match: async (req): Promise<Match> => ({ skill_id: 'upstream', intent_name: 'hello', lang: req.lang, utterance: req.utterances[0] ?? '', slots: {} }),
      intents: () => [],
      handle: async () => {},
    };
    h.system.orchestrator.register(upstream);
    const wiki = cqSkill(h, 'wiki', { claim: 'silent' });
    await h.settle();
    h.utter(FRANCE, { session: { session_id: 's1', pipeline: ['upstream', ...PIPELINE] } });
    await h.advance(5);
    expect(wiki.pings).toHaveLength(1); // the early start did run
    expect(h.of('ovos.intent.matched').map((m) => m.data['skill_id'])).toEqual(['upstream']);
    expect(h.system.commonQuery.cacheSize).toBe(0);
    expect(h.system.supervisor.size).toBe(0);
    expect(h.clock.pending).toBe(0);
    expectOneHandledEach(h);
  });
});

describe('OVOS-COMMON-QUERY-1 §5.1 live session at match time (plugin level)', () => {
  const EN = sessionFromObject({ session_id: 's1', lang: 'en-US' });

  it('§5.1: the blacklist is applied from the LIVE session after an early start — the blacklisted skill’s answer is not selected', async () => {
    const h = createHarness(config());
    cqSkill(h, 'a', { answer: 'A says Paris', conf: 0.8, responseDelayMs: 30 });
    cqSkill(h, 'b', { answer: 'B says Paris', conf: 0.7, responseDelayMs: 40 });
    await h.settle();
    const message = entry(FRANCE, { session_id: 's1', lang: 'en-US' }, 'u1');
    h.system.commonQuery.onUtterance(message, 'en-US', EN);
    await h.advance(5);
    const live = sessionFromObject({ session_id: 's1', lang: 'en-US', blacklisted_skills: ['a'] });
    const m = startMatch(h, message, 'en-US', live);
    await h.advance(CLAIM_BOUND + 100);
    expect(m.settled()).toBe(true);
    const match = await m.promise;
    expect(match?.slots).toEqual({ answer: 'B says Paris' });
    expect(match?.updated_session).toBe(live.raw);
    expect(pings(h)).toHaveLength(1);
  });

  it('§5.1 / §8 step 3: an early fast-win candidate that the live session blacklists neither closes the window nor wins', async () => {
    const h = createHarness(config());
    cqSkill(h, 'a', { answer: 'A says Paris', conf: 0.95, responseDelayMs: 10 });
    cqSkill(h, 'b', { answer: 'B says Paris', conf: 0.6, responseDelayMs: 150 });
    await h.settle();
    const message = entry(FRANCE, { session_id: 's1' }, 'u1');
    h.system.commonQuery.onUtterance(message, 'en-US', sessionFromObject({ session_id: 's1' }));
    await h.advance(CLAIM_BOUND + 50); // a's 0.95 came in at 135; no policy yet, so the window stays open
    expect(h.system.supervisor.size).toBe(1);
    const m = startMatch(h, message, 'en-US', sessionFromObject({ session_id: 's1', blacklisted_skills: ['a'] }));
    await h.advance(99); // t = 274: b answers at 125 + 150 = 275
    expect(m.settled()).toBe(false); // JOIN did not fast-win on a blacklisted response
    await h.advance(1);
    expect(m.settled()).toBe(true);
    expect((await m.promise)?.slots).toEqual({ answer: 'B says Paris' });
    expect(logsWith(h, 'common query decided').map((l) => [l['closed_by'], l['winner']])).toEqual([['all_answered', 'b']]);
  });

  it('§5.1 / §8 step 3: without a blacklist the same early 0.95 response fast-wins the moment match joins', async () => {
    const h = createHarness(config());
    cqSkill(h, 'a', { answer: 'A says Paris', conf: 0.95, responseDelayMs: 10 });
    cqSkill(h, 'b', { answer: 'B says Paris', conf: 0.6, responseDelayMs: 150 });
    await h.settle();
    const message = entry(FRANCE, { session_id: 's1' }, 'u1');
    const view = sessionFromObject({ session_id: 's1' });
    h.system.commonQuery.onUtterance(message, 'en-US', view);
    await h.advance(CLAIM_BOUND + 50);
    const m = startMatch(h, message, 'en-US', view);
    await h.settle();
    expect(m.settled()).toBe(true);
    expect((await m.promise)?.slots).toEqual({ answer: 'A says Paris' });
    expect(logsWith(h, 'common query decided').map((l) => l['closed_by'])).toEqual(['fast_win']);
  });

  it('§5.1: a live lang that differs from the early start’s discards the cached contest and re-runs it (second ping, reason lang_changed)', async () => {
    const h = createHarness(config());
    const wiki = cqSkill(h, 'wiki', { answer: 'Paris', conf: 0.8 });
    await h.settle();
    const q = 'what is the capital of france?'; // "?": accepted by the gate in en and pt alike
    const message = entry(q, { session_id: 's1', lang: 'en-US' }, 'u1');
    h.system.commonQuery.onUtterance(message, 'en-US', EN);
    await h.advance(5); // early contest in collection
    expect(wiki.pings).toHaveLength(1);
    const m = startMatch(h, message, 'pt-PT', sessionFromObject({ session_id: 's1', lang: 'pt-PT' }));
    await h.advance(CLAIM_BOUND + 100);
    const match = await m.promise;
    expect(wiki.pings).toHaveLength(2); // the contest was re-run
    expect(h.system.commonQuery.cacheSize).toBe(0);
    const discarded = logsWith(h, 'early-start cache discarded');
    expect(discarded).toHaveLength(1);
    expect(discarded[0]).toMatchObject({ reason: 'lang_changed', cached_lang: 'en-US', lang: 'pt-PT' });
    expect(logsWith(h, 'contest stopped').map((l) => l['reason'])).toEqual(['lang_changed']);
    expect(match?.lang).toBe('pt-PT');
    expect(match?.slots).toEqual({ answer: 'Paris' });
  });

  it('§5.1 / §6.1: the re-run contest runs under the live language — its ping and request carry pt-PT for the skill to read', async () => {
    // A skill reads the language from context.session.lang (§6.1, §7.1; SESSION-1 §3.2.7 for data.lang).
    const h = createHarness(config());
    const wiki = cqSkill(h, 'wiki', {
      answer: (_u, request) => (langSeenBySkill(request) === 'pt-PT' ? 'Paris é a capital' : 'Paris is the capital'),
      conf: 0.8,
    });
    await h.settle();
    const q = 'what is the capital of france?';
    const message = entry(q, { session_id: 's1', lang: 'en-US' }, 'u1');
    h.system.commonQuery.onUtterance(message, 'en-US', EN);
    await h.advance(CLAIM_BOUND + 5); // the early start finished, in English
    const m = startMatch(h, message, 'pt-PT', sessionFromObject({ session_id: 's1', lang: 'pt-PT' }));
    await h.advance(CLAIM_BOUND + 100);
    const match = await m.promise;
    expect(wiki.pings.map((p) => langSeenBySkill(p.message))).toEqual(['en-US', 'pt-PT']);
    expect(wiki.requests.map((r) => langSeenBySkill(r.message))).toEqual(['en-US', 'pt-PT']);
    expect(match?.slots).toEqual({ answer: 'Paris é a capital' });
  });
});

describe('OVOS-COMMON-QUERY-1 §5.2 early-start cache (plugin level)', () => {
  const S1 = { session_id: 's1' };
  const VIEW = sessionFromObject(S1);

  it('§5.2: the cache is keyed by (session_id, utterance) — a match for another utterance string does not use it', async () => {
    const h = createHarness(config());
    const wiki = cqSkill(h, 'wiki', { answer: (u) => `answer to ${u}` });
    await h.settle();
    h.system.commonQuery.onUtterance(entry(FRANCE, S1, 'u1'), 'en-US', VIEW);
    expect(h.system.commonQuery.cacheSize).toBe(1);
    const m = startMatch(h, entry(ELECTRICITY, S1, 'u1'), 'en-US', VIEW);
    await h.advance(CLAIM_BOUND + 50);
    const match = await m.promise;
    expect(wiki.pings.map((p) => p.message.data['utterance'])).toEqual([FRANCE, ELECTRICITY]);
    expect(match?.slots).toEqual({ answer: `answer to ${ELECTRICITY}` });
    expect(match?.utterance).toBe(ELECTRICITY);
    expect(h.system.commonQuery.cacheSize).toBe(1); // the FRANCE entry is untouched
  });

  it('§5.2: the cache is keyed by session — the same utterance in another session does not use it', async () => {
    const h = createHarness(config());
    const wiki = cqSkill(h, 'wiki', { answer: (_u, r) => `answer for ${sessionOf(r).sessionId}` });
    await h.settle();
    h.system.commonQuery.onUtterance(entry(FRANCE, S1, 'u1'), 'en-US', VIEW);
    const m = startMatch(h, entry(FRANCE, { session_id: 's2' }, 'u2'), 'en-US', sessionFromObject({ session_id: 's2' }));
    await h.advance(CLAIM_BOUND + 50);
    expect((await m.promise)?.slots).toEqual({ answer: 'answer for s2' });
    expect(wiki.pings).toHaveLength(2);
    expect(h.system.commonQuery.cacheSize).toBe(1);
  });

  it('§5.2: an entry is consumed on read — cacheSize goes to 0 as match takes it, and no second ping is sent', async () => {
    const h = createHarness(config());
    const wiki = cqSkill(h, 'wiki', { answer: 'Paris', responseDelayMs: 30 });
    await h.settle();
    const message = entry(FRANCE, S1, 'u1');
    h.system.commonQuery.onUtterance(message, 'en-US', VIEW);
    expect(h.system.commonQuery.cacheSize).toBe(1);
    const m = startMatch(h, message, 'en-US', VIEW);
    expect(h.system.commonQuery.cacheSize).toBe(0);
    await h.advance(CLAIM_BOUND + 100);
    expect((await m.promise)?.slots).toEqual({ answer: 'Paris' });
    expect(wiki.pings).toHaveLength(1);
    expect(wiki.requests).toHaveLength(1);
    // A second match for the same utterance finds nothing cached: it runs its own contest.
    const again = startMatch(h, message, 'en-US', VIEW);
    await h.advance(CLAIM_BOUND + 100);
    expect((await again.promise)?.slots).toEqual({ answer: 'Paris' });
    expect(wiki.pings).toHaveLength(2);
  });

  it('§5.2: an entry is evicted when a new utterance arrives in the same session — cacheSize 1, the first contest stopped', async () => {
    const h = createHarness(config());
    const wiki = cqSkill(h, 'wiki', { answer: (u) => `answer to ${u}`, responseDelayMs: 30 });
    await h.settle();
    h.system.commonQuery.onUtterance(entry(FRANCE, S1, 'u1'), 'en-US', VIEW);
    h.system.commonQuery.onUtterance(entry(ELECTRICITY, S1, 'u2'), 'en-US', VIEW);
    expect(h.system.commonQuery.cacheSize).toBe(1);
    expect(logsWith(h, 'contest stopped').map((l) => [l['reason'], l['utterance_id']])).toEqual([['new_utterance', 'u1']]);
    expect(h.system.supervisor.size).toBe(1);
    await h.advance(CLAIM_BOUND + 100);
    // The stopped contest collected nothing: its pong found no contest of its own and no request went out for it.
    expect(wiki.requests.map((r) => r.message.data['utterance'])).toEqual([ELECTRICITY]);
    expect(drops(h, 'finished_contest').map((l) => l['type'])).toEqual(['ovos.common_query.pong']);
  });

  it('§5.2: a new utterance in another session does not evict', () => {
    const h = createHarness(config());
    h.system.commonQuery.onUtterance(entry(FRANCE, S1, 'u1'), 'en-US', VIEW);
    h.system.commonQuery.onUtterance(entry(FRANCE, { session_id: 's2' }, 'u2'), 'en-US', sessionFromObject({ session_id: 's2' }));
    expect(h.system.commonQuery.cacheSize).toBe(2);
    expect(logsWith(h, 'contest stopped')).toEqual([]);
  });
});

describe('OVOS-COMMON-QUERY-1 §8 filtering and selection (whole system)', () => {
  it('§8 step 1: conf 0.49 is below the minimum 0.5 → match returns None → fallback answers', async () => {
    const h = createHarness(config());
    cqSkill(h, 'wiki', { answer: 'Maybe Lyon', conf: 0.49 });
    fallbackSkill(h, 'fb', 10);
    await h.settle();
    h.utter(FRANCE);
    await h.advance(CLAIM_BOUND + 100);
    expect(h.of('wiki:common_query')).toHaveLength(1);
    expect(h.of('ovos.intent.matched').map((m) => [m.data['skill_id'], m.data['intent_name']])).toEqual([['fb', 'fallback']]);
    expect(spoken(h)).toEqual(['fb says hi']);
    expect(h.of('common_query:common_query')).toEqual([]);
    expectOneHandledEach(h);
  });

  it('§8 step 1: conf exactly 0.5 survives', async () => {
    const h = createHarness(config());
    cqSkill(h, 'wiki', { answer: 'Paris', conf: 0.5 });
    fallbackSkill(h, 'fb', 10);
    await h.settle();
    h.utter(FRANCE);
    await h.advance(CLAIM_BOUND + 100);
    expect(spoken(h)).toEqual(['Paris']);
    expectOneHandledEach(h);
  });

  it('§8 step 4: the highest conf wins', async () => {
    const h = createHarness(config());
    cqSkill(h, 'a', { answer: 'A', conf: 0.6, responseDelayMs: 5 });
    cqSkill(h, 'b', { answer: 'B', conf: 0.85, responseDelayMs: 30 });
    cqSkill(h, 'c', { answer: 'C', conf: 0.7, responseDelayMs: 10 });
    await h.settle();
    h.utter(FRANCE);
    await h.advance(CLAIM_BOUND + 100);
    expect(spoken(h)).toEqual(['B']);
    expectOneHandledEach(h);
  });

  it('§8 step 4: ties are broken deterministically (earlier arrival first), whichever skill that is', async () => {
    const run = async (aDelay: number, bDelay: number): Promise<string[]> => {
      const h = createHarness(config());
      cqSkill(h, 'a', { answer: 'A', conf: 0.8, responseDelayMs: aDelay });
      cqSkill(h, 'b', { answer: 'B', conf: 0.8, responseDelayMs: bDelay });
      await h.settle();
      h.utter(FRANCE);
      await h.advance(CLAIM_BOUND + 100);
      expectOneHandledEach(h);
      return spoken(h);
    };
    expect(await run(30, 10)).toEqual(['B']);
    expect(await run(30, 10)).toEqual(['B']);
    expect(await run(10, 30)).toEqual(['A']);
    // Same instant: bus order decides, and it is the same every run.
    const first = await run(10, 10);
    expect(await run(10, 10)).toEqual(first);
  });

  it('§8 step 2: the session’s blacklisted_skills removes a skill’s answer (and its fast win)', async () => {
    const h = createHarness(config());
    cqSkill(h, 'a', { answer: 'A', conf: 0.99, responseDelayMs: 5 });
    cqSkill(h, 'b', { answer: 'B', conf: 0.6, responseDelayMs: 60 });
    await h.settle();
    h.utter(FRANCE, { session: { session_id: 's1', blacklisted_skills: ['a'] } });
    await h.advance(CLAIM_BOUND + 60 - 1);
    expect(spoken(h)).toEqual([]); // a's 0.99 (at 130) is blacklisted: no fast win, b is still awaited
    await h.advance(1);
    expect(spoken(h)).toEqual(['B']);
    expect(logsWith(h, 'common query decided').map((l) => [l['closed_by'], l['winner']])).toEqual([['all_answered', 'b']]);
    expectOneHandledEach(h);
  });

  it('§8 step 3: a fast win stops waiting for slower claimants', async () => {
    const h = createHarness(config());
    const wire = timedWire(h);
    cqSkill(h, 'a', { answer: 'A', conf: 0.95, responseDelayMs: 40 });
    cqSkill(h, 'b', { answer: 'B', conf: 0.99, responseDelayMs: 2_000 });
    await h.settle();
    const t0 = h.clock.now();
    h.utter(FRANCE);
    await h.advance(CLAIM_BOUND + 100);
    expect(spoken(h)).toEqual(['A']);
    expect(wire.filter((w) => w.message.type === 'ovos.utterance.speak').map((w) => w.at - t0)).toEqual([CLAIM_BOUND + 40]);
    expectOneHandledEach(h);
  });
});

describe('OVOS-COMMON-QUERY-1 §9 Match and §10 handler', () => {
  it('§9: the Match points at the plugin itself — skill_id common_query, intent_name common_query, slots {answer}; dispatched as common_query:common_query', async () => {
    const h = createHarness(config());
    cqSkill(h, 'wiki', { answer: 'Paris is the capital of France.', conf: 0.8 });
    await h.settle();
    h.utter(FRANCE, { session: { session_id: 's1' }, utteranceId: 'u1' });
    await h.advance(CLAIM_BOUND + 50);
    expect(h.of('ovos.intent.matched').map((m) => m.data)).toEqual([
      {
        skill_id: 'common_query',
        intent_name: 'common_query',
        lang: 'en-US',
        utterance: FRANCE,
        slots: { answer: 'Paris is the capital of France.' },
        pipeline_id: 'common_query',
      },
    ]);
    const dispatch = h.of('common_query:common_query');
    expect(dispatch).toHaveLength(1);
    expect(dispatch[0]?.data).toEqual({ lang: 'en-US', utterance: FRANCE, slots: { answer: 'Paris is the capital of France.' } });
    expect(dispatch[0]?.context).toMatchObject({ skill_id: 'common_query', pipeline_id: 'common_query', utterance_id: 'u1' });
    expectOneHandledEach(h);
  });

  it('§9: match() returns the Match with lang, utterance and updated_session = the inbound session, unmodified', async () => {
    const h = createHarness(config());
    cqSkill(h, 'wiki', { answer: 'Paris', conf: 0.8 });
    await h.settle();
    const raw: JsonObject = { session_id: 's1', lang: 'en-US', site_id: 'kitchen', active_handlers: [{ skill_id: 'x', activated_at: 5 }] };
    const before = structuredClone(raw);
    const session = sessionFromObject(raw);
    const m = startMatch(h, entry(FRANCE, raw, 'u1'), 'en-US', session);
    await h.advance(CLAIM_BOUND + 50);
    const match = await m.promise;
    expect(match).toEqual({
      skill_id: 'common_query',
      intent_name: 'common_query',
      lang: 'en-US',
      utterance: FRANCE,
      slots: { answer: 'Paris' },
      updated_session: before,
    });
    expect(match?.updated_session).toBe(raw);
    expect(raw).toEqual(before);
  });

  it('§9: no response survives → match returns None (here: nobody claims, decided at the claim bound, 125 ms, not the 500 ms ceiling)', async () => {
    const h = createHarness(config());
    cqSkill(h, 'wiki', { claim: 'silent' });
    await h.settle();
    const m = startMatch(h, entry(FRANCE, { session_id: 's1' }, 'u1'), 'en-US', sessionFromObject({ session_id: 's1' }));
    await h.advance(CLAIM_BOUND - 1);
    expect(m.settled()).toBe(false);
    await h.advance(1);
    expect(m.settled()).toBe(true);
    expect(await m.promise).toBeNull();
    expect(h.of('wiki:common_query')).toEqual([]);
  });

  it('§10: the handler speaks slots.answer via ovos.utterance.speak inside the trio, then ovos.utterance.handled; no <skill>:common_query after the match', async () => {
    const h = createHarness(config());
    cqSkill(h, 'wiki', { answer: 'Paris is the capital of France.', conf: 0.8 });
    cqSkill(h, 'other', { answer: 'It is Paris.', conf: 0.6 });
    await h.settle();
    h.utter(FRANCE, { session: { session_id: 's1' } });
    await h.advance(CLAIM_BOUND + 50);
    expect(after(h, 's1', 'ovos.intent.matched')).toEqual([
      'ovos.intent.matched',
      'common_query:common_query',
      'ovos.intent.handler.start',
      'ovos.utterance.speak',
      'ovos.intent.handler.complete',
      'ovos.utterance.handled',
    ]);
    const speak = h.of('ovos.utterance.speak');
    expect(speak.map((m) => m.data)).toEqual([{ utterance: 'Paris is the capital of France.', lang: 'en-US' }]);
    expect(sessionOf(speak[0]!).sessionId).toBe('s1');
    // The only <skill>:common_query messages are the §7.1 requests, one per claimant, before the match.
    expect(h.of('wiki:common_query')).toHaveLength(1);
    expect(h.of('other:common_query')).toHaveLength(1);
    expect(h.of('ovos.intent.handler.complete').map((m) => m.data)).toEqual([{ skill_id: 'common_query', intent_name: 'common_query' }]);
    expect(h.of('ovos.intent.handler.error')).toEqual([]);
    expectOneHandledEach(h);
  });

  it('§10 / PIPELINE-1 §7.3: the common_query dispatch does not activate — its session has NO new active_handlers entry', async () => {
    const h = createHarness(config());
    cqSkill(h, 'wiki', { answer: 'Paris', conf: 0.8 });
    await h.settle();
    const session: JsonObject = { session_id: 's1', active_handlers: [{ skill_id: 'x', activated_at: 5 }], custom_key: 'kept' };
    h.utter(FRANCE, { session });
    await h.advance(CLAIM_BOUND + 50);
    const dispatch = h.of('common_query:common_query');
    expect(dispatch).toHaveLength(1);
    expect(dispatch[0]?.context['session']).toEqual(session);
    // And none without prior handlers either.
    const h2 = createHarness(config());
    cqSkill(h2, 'wiki', { answer: 'Paris', conf: 0.8 });
    await h2.settle();
    h2.utter(FRANCE, { session: { session_id: 's2' } });
    await h2.advance(CLAIM_BOUND + 50);
    expect(h2.of('common_query:common_query')[0]?.context['session']).toEqual({ session_id: 's2' });
    expectOneHandledEach(h);
    expectOneHandledEach(h2);
  });

  it('§10 / PIPELINE-1 §9: the speak is broadcast (or addressed to the utterance’s source), never sent back to the orchestrator', async () => {
    const h = createHarness(config());
    cqSkill(h, 'wiki', { answer: 'Paris', conf: 0.8 });
    await h.settle();
    h.utter(FRANCE); // context.source "test", context.destination "orchestrator"
    await h.advance(CLAIM_BOUND + 50);
    const speak = h.of('ovos.utterance.speak');
    expect(speak).toHaveLength(1);
    const destination = speak[0]?.context['destination'];
    const broadcast = destination === undefined || destination === null || (Array.isArray(destination) && destination.length === 0);
    // Broadcast (MSG-1: absent or empty destination) — or, as ovos-workshop's forward() does, addressed to the client.
    expect(['(broadcast)', 'test']).toContain(broadcast ? '(broadcast)' : destination);
    expect(speak[0]?.context['source']).not.toBe('test'); // the client did not say this
    expectOneHandledEach(h);
  });

  it('PIPELINE-1 §6: an utterance answered by common query is recorded as completed, not unmatched', async () => {
    const h = createHarness(config());
    cqSkill(h, 'wiki', { answer: 'Paris', conf: 0.8 });
    await h.settle();
    const record = h.system.orchestrator.handle(entry(FRANCE, { session_id: 's1' }, 'u1'), [FRANCE]);
    await h.advance(CLAIM_BOUND + 50);
    const output = await record?.done;
    expect(output?.stage).toBe('common_query');
    expect(output?.outcome).toBe('completed');
    expect(logsWith(h, 'utterance handled').map((l) => l['outcome'])).toEqual(['completed']);
  });
});

describe('OVOS-COMMON-QUERY-1 §13 / §6.2 / §7.1 input validation', () => {
  it('§13: a response whose payload skill_id differs from the topic prefix is dropped (skill_id_mismatch) and cannot win', async () => {
    const h = createHarness(config());
    // "evil" claims, then answers on its own topic in wiki's name, with a would-be fast win.
    cqSkill(h, 'evil', { latencyMs: 200, answer: 'Berlin', conf: 0.99, responseData: (d) => ({ ...d, skill_id: 'wiki' }) });
    cqSkill(h, 'wiki', { latencyMs: 200, answer: 'Paris', conf: 0.6, responseDelayMs: 50 });
    await h.settle();
    const wire = timedWire(h);
    const t0 = h.clock.now();
    h.utter(FRANCE);
    await h.advance(CLAIM_BOUND + 200 + ALLOWANCE + 50);
    expect(drops(h, 'skill_id_mismatch').map((l) => l['type'])).toEqual(['evil.common_query.response']);
    expect(spoken(h)).toEqual(['Paris']);
    // evil stays a silent claimant: wiki's answer (in hand) is spoken when the initial window (200 + allowance) ends.
    expect(wire.filter((w) => w.message.type === 'ovos.utterance.speak').map((w) => w.at - t0)).toEqual([CLAIM_BOUND + 200 + ALLOWANCE]);
    expect(logsWith(h, 'common query decided').map((l) => [l['closed_by'], l['winner'], l['responses']])).toEqual([['window', 'wiki', 1]]);
    expectOneHandledEach(h);
  });

  it('§13: an answer published on another skill’s response topic is dropped (skill_id_mismatch)', async () => {
    const h = createHarness(config());
    cqSkill(h, 'evil', { latencyMs: 200, answer: 'Berlin', conf: 0.99, responseTopic: 'wiki.common_query.response' });
    cqSkill(h, 'wiki', { latencyMs: 200, answer: 'Paris', conf: 0.6, responseDelayMs: 50 });
    await h.settle();
    h.utter(FRANCE);
    await h.advance(CLAIM_BOUND + 200 + 50);
    expect(drops(h, 'skill_id_mismatch').map((l) => l['type'])).toEqual(['wiki.common_query.response']);
    expect(spoken(h)).toEqual(['Paris']);
    expectOneHandledEach(h);
  });

  type Malformed = { readonly name: string; readonly reason: DropReason; readonly pong?: (d: JsonObject) => JsonObject; readonly response?: (d: JsonObject) => JsonObject };
  const without = (key: string) => (d: JsonObject): JsonObject => {
    const copy = { ...d };
    delete copy[key];
    return copy;
  };
  // Uncorrelatable (no utterance to tell which question it answers): dropped.
  const cases: readonly Malformed[] = [
    { name: 'pong utterance missing', reason: 'utterance_missing', pong: without('utterance') },
    { name: 'response utterance missing', reason: 'utterance_missing', response: without('utterance') },
  ];

  it.each(cases)('§6.2 / §7.1: a malformed $name is dropped ($reason) and the contest still completes', async (c) => {
    const h = createHarness(config());
    const bad = cqSkill(h, 'bad', {
      latencyMs: 100,
      answer: 'Berlin',
      conf: 0.99,
      ...(c.pong === undefined ? {} : { pongData: c.pong }),
      ...(c.response === undefined ? {} : { responseData: c.response }),
    });
    cqSkill(h, 'good', { latencyMs: 100, answer: 'Paris', conf: 0.7, responseDelayMs: 10 });
    await h.settle();
    h.utter(FRANCE);
    // At the latest when the initial window (100 ms + allowance) ends with good's answer in hand (a dropped response
    // leaves bad a silent claimant).
    await h.advance(CLAIM_BOUND + 100 + ALLOWANCE);
    const type = c.pong === undefined ? 'bad.common_query.response' : 'ovos.common_query.pong';
    expect(drops(h, c.reason).map((l) => l['type'])).toEqual([type]);
    // A dropped pong makes no claimant; a dropped response leaves a silent claimant.
    expect(bad.requests).toHaveLength(c.pong === undefined ? 1 : 0);
    expect(spoken(h)).toEqual(['Paris']);
    expect(h.system.supervisor.size).toBe(0);
    expectOneHandledEach(h);
  });

  // Usable as a reply, with a field that is not: the skill's decline, at once — it never holds the contest open.
  const declines: ReadonlyArray<Omit<Malformed, 'reason'> & { readonly reason: DropReason; readonly detail?: string }> = [
    { name: 'response answer ""', reason: 'answer_invalid', detail: '""', response: (d) => ({ ...d, answer: '' }) },
    { name: 'response answer 42', reason: 'answer_invalid', detail: '42', response: (d) => ({ ...d, answer: 42 }) },
    { name: 'response conf 1.5', reason: 'conf_invalid', detail: '1.5', response: (d) => ({ ...d, conf: 1.5 }) },
    { name: 'response conf "high"', reason: 'conf_invalid', detail: '"high"', response: (d) => ({ ...d, conf: 'high' }) },
    { name: 'response conf missing with answer', reason: 'conf_missing', response: without('conf') },
  ];

  it.each(declines)('§7.1: a response with $name counts at once as the skill\'s response without an answer ($reason, a warn): the contest closes on the other answer, not at its window', async (c) => {
    const h = createHarness(config());
    const bad = cqSkill(h, 'bad', { latencyMs: 100, answer: 'Berlin', conf: 0.99, responseData: c.response! });
    cqSkill(h, 'good', { latencyMs: 100, answer: 'Paris', conf: 0.7, responseDelayMs: 10 });
    await h.settle();
    const wire = timedWire(h);
    const t0 = h.clock.now();
    h.utter(FRANCE);
    await h.advance(CLAIM_BOUND + 100 + ALLOWANCE);
    expect(bad.requests).toHaveLength(1);
    expect(h.logs.filter((l) => l['reason'] === c.reason)).toEqual([
      expect.objectContaining({ level: 40, type: 'bad.common_query.response', skill_id: 'bad', msg: "a reply's field cannot be used: it counts as the skill's decline", ...(c.detail === undefined ? {} : { detail: c.detail }) }),
    ]);
    expect(spoken(h)).toEqual(['Paris']);
    // Both claimants have responded once good answers (10 ms after its request): decided then, not at the window.
    const spokenAt = wire.find((w) => w.message.type === 'ovos.utterance.speak')!.at - t0;
    expect(spokenAt).toBeLessThan(CLAIM_BOUND + 100 + ALLOWANCE);
    expectOneHandledEach(h);
  });

  it('§6.2: a pong with can_answer "yes" is the skill\'s "no" (can_answer_invalid, a warn): it is sent no request', async () => {
    const h = createHarness(config());
    const bad = cqSkill(h, 'bad', { latencyMs: 100, answer: 'Berlin', conf: 0.99, pongData: (d) => ({ ...d, can_answer: 'yes' }) });
    cqSkill(h, 'good', { latencyMs: 100, answer: 'Paris', conf: 0.7, responseDelayMs: 10 });
    await h.settle();
    h.utter(FRANCE);
    await h.advance(CLAIM_BOUND + 100 + ALLOWANCE);
    expect(bad.requests).toEqual([]);
    expect(h.logs.filter((l) => l['reason'] === 'can_answer_invalid')).toEqual([expect.objectContaining({ level: 40, skill_id: 'bad', detail: '"yes"' })]);
    expect(spoken(h)).toEqual(['Paris']);
    expectOneHandledEach(h);
  });

  it.each([
    ['latency_ms -1', -1, '-1'],
    ['latency_ms "20"', '20', '"20"'],
  ] as const)('§6.2: a pong with %s keeps the claim, the field ignored (latency_invalid, a warn): the skill is asked and its answer wins', async (_name, latency, detail) => {
    const h = createHarness(config());
    const bad = cqSkill(h, 'bad', { latencyMs: 100, answer: 'Berlin', conf: 0.99, pongData: (d) => ({ ...d, latency_ms: latency }) });
    await h.settle();
    h.utter(FRANCE);
    await h.advance(CLAIM_BOUND + 100 + ALLOWANCE);
    expect(bad.requests).toHaveLength(1);
    expect(h.logs.filter((l) => l['reason'] === 'latency_invalid')).toEqual([expect.objectContaining({ level: 40, skill_id: 'bad', detail, msg: "a reply's optional field cannot be used: ignored" })]);
    expect(spoken(h)).toEqual(['Berlin']);
    expectOneHandledEach(h);
  });
});

describe('OVOS-COMMON-QUERY-1 §6.3 / §7.1 correlation', () => {
  it('§6.3: a pong for another utterance text is discarded (wrong_utterance); the skill is never asked', async () => {
    const h = createHarness(config());
    const confused = cqSkill(h, 'confused', { pongData: (d) => ({ ...d, utterance: 'what is the capital of spain' }) });
    fallbackSkill(h, 'fb', 10);
    await h.settle();
    h.utter(FRANCE);
    await h.advance(POLL + 50);
    expect(drops(h, 'wrong_utterance').map((l) => l['type'])).toEqual(['ovos.common_query.pong']);
    expect(confused.requests).toEqual([]);
    expect(spoken(h)).toEqual(['fb says hi']);
    expectOneHandledEach(h);
  });

  it('§7.1: a response for another utterance text is discarded (wrong_utterance) and cannot win', async () => {
    const h = createHarness(config());
    cqSkill(h, 'confused', { latencyMs: 100, answer: 'Madrid', conf: 0.99, responseData: (d) => ({ ...d, utterance: 'what is the capital of spain' }) });
    cqSkill(h, 'wiki', { latencyMs: 100, answer: 'Paris', conf: 0.6 });
    await h.settle();
    h.utter(FRANCE);
    await h.advance(CLAIM_BOUND + 100 + ALLOWANCE);
    expect(drops(h, 'wrong_utterance').map((l) => l['type'])).toEqual(['confused.common_query.response']);
    expect(spoken(h)).toEqual(['Paris']);
    expectOneHandledEach(h);
  });

  it('§6.3: a pong carrying another session is discarded (no_live_contest); the skill is never asked', async () => {
    const h = createHarness(config());
    const requests: Message[] = [];
    h.bus.subscribe((m) => {
      if (m.type === 'ovos.common_query.ping') {
        h.bus.publish(createMessage('ovos.common_query.pong', { utterance: FRANCE, skill_id: 'stray', can_answer: true }, { ...m.context, session: { session_id: 'elsewhere' } }));
      } else if (m.type === 'stray:common_query') requests.push(m);
    });
    fallbackSkill(h, 'fb', 10);
    await h.settle();
    h.utter(FRANCE, { session: { session_id: 's1' } });
    await h.advance(POLL + 50);
    expect(drops(h, 'no_live_contest').map((l) => [l['type'], l['session_id']])).toEqual([['ovos.common_query.pong', 'elsewhere']]);
    expect(requests).toEqual([]);
    expect(spoken(h)).toEqual(['fb says hi']);
    expectOneHandledEach(h);
  });

  it('§6.3: two sessions asking different questions at once each get their own answer (no cross-talk)', async () => {
    const h = createHarness(config());
    const answers: Record<string, string> = { [FRANCE]: 'Paris', [ELECTRICITY]: 'Benjamin Franklin, roughly' };
    const wiki = cqSkill(h, 'wiki', { answer: (u) => answers[u] ?? 'no idea', conf: 0.8, responseDelayMs: 30 });
    await h.settle();
    h.utter(FRANCE, { session: { session_id: 's1' } });
    h.utter(ELECTRICITY, { session: { session_id: 's2' } });
    await h.advance(CLAIM_BOUND + 100);
    expect(spoken(h, 's1')).toEqual(['Paris']);
    expect(spoken(h, 's2')).toEqual(['Benjamin Franklin, roughly']);
    expect(wiki.requests.map((r) => [sessionOf(r.message).sessionId, r.message.data['utterance']])).toEqual([
      ['s1', FRANCE],
      ['s2', ELECTRICITY],
    ]);
    expect(h.timeline('s1').filter((t) => t === 'ovos.utterance.handled')).toHaveLength(1);
    expect(h.timeline('s2').filter((t) => t === 'ovos.utterance.handled')).toHaveLength(1);
    expectOneHandledEach(h);
  });

  it('§6.3: two sessions asking the same question at once each get their own session’s answer (state keyed by session_id)', async () => {
    const h = createHarness(config());
    cqSkill(h, 'wiki', { answer: (_u, r) => `Paris, for ${sessionOf(r).sessionId}`, conf: 0.8, responseDelayMs: 30 });
    cqSkill(h, 'slow', { answer: (_u, r) => `slow, for ${sessionOf(r).sessionId}`, conf: 0.6, responseDelayMs: 60 });
    await h.settle();
    h.utter(FRANCE, { session: { session_id: 's1' } });
    h.utter(FRANCE, { session: { session_id: 's2' } });
    await h.advance(CLAIM_BOUND + 60);
    expect(spoken(h, 's1')).toEqual(['Paris, for s1']);
    expect(spoken(h, 's2')).toEqual(['Paris, for s2']);
    expect(logsWith(h, 'common query decided').map((l) => [l['session_id'], l['claimants'], l['responses']])).toEqual([
      ['s1', 2, 2],
      ['s2', 2, 2],
    ]);
    expect(drops(h, 'ambiguous_correlation')).toEqual([]);
    expectOneHandledEach(h);
  });

  it('§6.1 / SESSION-1 §3.2.7: the ping and requests carry the utterance’s resolved language for the skill to read', async () => {
    const h = createHarness(config());
    const wiki = cqSkill(h, 'wiki', { answer: 'Paris', conf: 0.8 });
    await h.settle();
    h.utter('what is the capital of france?', { session: { session_id: 's1' }, lang: 'pt-PT' });
    await h.advance(CLAIM_BOUND + 50);
    expect(h.of('ovos.intent.matched').map((m) => m.data['lang'])).toEqual(['pt-PT']);
    expect(wiki.pings.map((p) => langSeenBySkill(p.message))).toEqual(['pt-PT']);
    expect(wiki.requests.map((r) => langSeenBySkill(r.message))).toEqual(['pt-PT']);
    expectOneHandledEach(h);
  });
});

describe('OVOS-COMMON-QUERY-1 §8 step 4: a configured reranker replaces raw conf ordering', () => {
  it('§8 step 4: the reranker receives every survivor and its first choice is spoken', async () => {
    const seen: string[][] = [];
    const h = createHarness(config(), {
      reranker: (_utterance, _lang, survivors) => {
        seen.push(survivors.map((s) => s.skill_id));
        return [...survivors].sort((a, b) => a.conf - b.conf); // prefers the least confident, to be visible
      },
    });
    cqSkill(h, 'sure', { answer: 'sure answer', conf: 0.85 });
    cqSkill(h, 'modest', { answer: 'modest answer', conf: 0.6 });
    cqSkill(h, 'weak', { answer: 'weak answer', conf: 0.3 }); // below minimum: never reaches the reranker
    await h.settle();
    h.utter(FRANCE, { session: { session_id: 'rr', pipeline: PIPELINE }, utteranceId: 'rr-1' });
    await h.advance(CLAIM_BOUND + 100);
    expect(seen).toEqual([['sure', 'modest']]);
    expect(spoken(h)).toEqual(['modest answer']);
    expectOneHandledEach(h);
  });

  it('§8 step 4: a reranker that throws is ignored (logged as reranker_failed) and conf ordering decides', async () => {
    const h = createHarness(config(), {
      reranker: () => {
        throw new Error('model offline');
      },
    });
    cqSkill(h, 'sure', { answer: 'sure answer', conf: 0.85 });
    cqSkill(h, 'modest', { answer: 'modest answer', conf: 0.6 });
    await h.settle();
    h.utter(FRANCE, { session: { session_id: 'rr', pipeline: PIPELINE }, utteranceId: 'rr-2' });
    await h.advance(CLAIM_BOUND + 100);
    expect(spoken(h)).toEqual(['sure answer']);
    expect(h.logs.some((l) => l['reason'] === 'reranker_failed')).toBe(true);
    expectOneHandledEach(h);
  });
});

describe('OVOS-COMMON-QUERY-1 §6.3 poll close (whole system): claim bound, roster, skills known to answer every poll', () => {
  it.each([
    [CLAIM_BOUND - 1, 'Paris'],
    [CLAIM_BOUND, 'fb says hi'],
    [CLAIM_BOUND + 1, 'fb says hi'],
  ])('§6.3 boundary claim bound: on a fresh roster a claim %i ms after the ping → %s (the poll closes at 125 ms either way)', async (pongDelayMs, expected) => {
    const h = createHarness(config());
    const wire = timedWire(h);
    const wiki = cqSkill(h, 'wiki', { pongDelayMs, answer: 'Paris', conf: 0.8 });
    fallbackSkill(h, 'fb', 10);
    await h.settle();
    const t0 = h.clock.now();
    h.utter(FRANCE);
    await h.advance(CLAIM_BOUND + 50);
    expect(spoken(h)).toEqual([expected]);
    // A claim within the bound is asked when the bound ends; a later one is not a claim (treated as not claiming).
    expect(wiki.requests.map((r) => r.at - t0)).toEqual(pongDelayMs < CLAIM_BOUND ? [CLAIM_BOUND] : []);
    expect(wire.filter((w) => w.message.type === 'ovos.utterance.speak').map((w) => w.at - t0)).toEqual([CLAIM_BOUND]);
    expectOneHandledEach(h);
  });

  it('§6.3 roster: after a first question taught the roster, the next poll closes the moment every known skill has answered — the requests go out at the last pong', async () => {
    const h = createHarness(config());
    const wire = timedWire(h);
    const a = cqSkill(h, 'a', { pongDelayMs: 10, answer: 'A', conf: 0.6 });
    const b = cqSkill(h, 'b', { pongDelayMs: 30, answer: 'B', conf: 0.7 });
    await h.settle();
    const t0 = h.clock.now();
    h.utter(FRANCE, { session: { session_id: 's1' } });
    await h.advance(CLAIM_BOUND + 10);
    // First question: nobody was known yet, so the claim bound closed the poll.
    expect(a.requests.map((r) => r.at - t0)).toEqual([CLAIM_BOUND]);
    expect(spoken(h)).toEqual(['B']);
    expect(h.system.commonQuery.roster()).toEqual([
      { skill_id: 'a', answersEveryPoll: false },
      { skill_id: 'b', answersEveryPoll: false },
    ]);

    const t1 = h.clock.now();
    h.utter(ELECTRICITY, { session: { session_id: 's1' } });
    await h.advance(29);
    expect(a.requests).toHaveLength(1); // a answered at 10, b is still outstanding
    await h.advance(1);
    const lastPong = wire.filter((w) => w.message.type === 'ovos.common_query.pong' && w.at >= t1).map((w) => w.at - t1);
    expect(lastPong).toEqual([10, 30]);
    expect(a.requests.slice(1).map((r) => r.at - t1)).toEqual([30]);
    expect(b.requests.slice(1).map((r) => r.at - t1)).toEqual([30]);
    expect(wire.filter((w) => w.message.type === 'ovos.utterance.speak').map((w) => w.at - t1).filter((t) => t >= 0)).toEqual([30]);
    expect(spoken(h)).toEqual(['B', 'B']);
    expectOneHandledEach(h);
  });

  it('§6.2/§6.3 roster: when every known skill declines (can_answer false) and nobody claims, the poll closes at the claim bound — and a newcomer\'s claim within it is heard', async () => {
    const h = createHarness(config());
    const wire = timedWire(h);
    const wiki = cqSkill(h, 'wiki', { claim: false, pongDelayMs: 5 });
    fallbackSkill(h, 'fb', 10);
    await h.settle();
    const speakAt = (from: number): number[] => wire.filter((w) => w.message.type === 'ovos.utterance.speak' && w.at >= from).map((w) => w.at - from);
    const t0 = h.clock.now();
    h.utter(FRANCE);
    await h.advance(CLAIM_BOUND + 20);
    expect(speakAt(t0)).toEqual([CLAIM_BOUND]);
    expect(h.system.commonQuery.roster()).toEqual([{ skill_id: 'wiki', answersEveryPoll: false }]);

    const t1 = h.clock.now();
    h.utter(ELECTRICITY); // wiki (known) declines at 5; no claim in hand: the claim bound still applies
    await h.advance(CLAIM_BOUND + 20);
    expect(speakAt(t1)).toEqual([CLAIM_BOUND]);

    // A skill that follows §6.2 ("SHOULD stay silent" when it cannot answer) is on no roster until it first claims:
    // its first claim, 60 ms after the ping, is not lost to the known skill's early decline.
    cqSkill(h, 'newbie', { claim: (u) => (u === FRANCE ? true : 'silent'), pongDelayMs: 60, latencyMs: 20, answer: 'Paris', conf: 0.8 });
    await h.settle();
    const t2 = h.clock.now();
    h.utter(FRANCE);
    await h.advance(CLAIM_BOUND + 20);
    expect(speakAt(t2)).toEqual([60]); // claim in hand + every known skill heard → the poll closes at the claim
    expect(spoken(h)).toEqual(['fb says hi', 'fb says hi', 'Paris']);
    expect(wiki.requests).toEqual([]);
    expectOneHandledEach(h);
  });

  /** Ask ELECTRICITY `n` times, each to its end (the skills' answers to it are their business). */
  async function askElectricity(h: Harness, n: number): Promise<void> {
    for (let i = 0; i < n; i++) {
      h.utter(ELECTRICITY);
      await h.advance(POLL + 20);
    }
  }

  it(`§6.3: a skill that declined the last ${PROMOTE_AFTER} polls it was known for is waited for past the claim bound; fewer are not enough`, async () => {
    const h = createHarness(config());
    cqSkill(h, 'wiki', { claim: false });
    fallbackSkill(h, 'fb', 10);
    await h.settle();
    await askElectricity(h, 1); // joins the roster (it was not known when that poll started)
    for (let i = 0; i < PROMOTE_AFTER; i++) {
      expect(h.system.commonQuery.roster()).toEqual([{ skill_id: 'wiki', answersEveryPoll: false }]);
      await askElectricity(h, 1);
    }
    expect(h.system.commonQuery.roster()).toEqual([{ skill_id: 'wiki', answersEveryPoll: true }]);
  });

  it.each([
    [300, true],
    [POLL - 1, true],
    [POLL, false],
    [POLL + 1, false],
  ])('§6.3: a skill known to answer every poll (it declined the polls before) whose claim comes %i ms after the ping — past the claim bound — is a claimant: %s', async (delay, counts) => {
    const h = createHarness(config());
    const wire = timedWire(h);
    const wiki = cqSkill(h, 'wiki', {
      claim: (u) => u === FRANCE, // declines the warm-up questions, claims FRANCE
      pongDelayFor: (u) => (u === FRANCE ? delay : 0),
      answer: 'Paris',
      conf: 0.8,
    });
    fallbackSkill(h, 'fb', 10);
    await h.settle();
    await askElectricity(h, PROMOTE_AFTER + 1);
    expect(h.system.commonQuery.roster()).toEqual([{ skill_id: 'wiki', answersEveryPoll: true }]);

    const t1 = h.clock.now();
    h.utter(FRANCE);
    await h.advance(POLL + 20);
    const speakAt = wire.filter((w) => w.message.type === 'ovos.utterance.speak' && w.at >= t1).map((w) => w.at - t1);
    if (counts) {
      expect(spoken(h).at(-1)).toBe('Paris');
      expect(wiki.requests.map((r) => r.at - t1)).toEqual([delay]); // the poll closed at its (late) claim
      expect(speakAt).toEqual([delay]);
    } else {
      // The poll ceiling passed first: not a claimant, treated as not claiming — fallback answers at the ceiling.
      expect(spoken(h).at(-1)).toBe('fb says hi');
      expect(wiki.requests).toEqual([]);
      expect(speakAt).toEqual([POLL]);
    }
    expectOneHandledEach(h);
  });

  it(`§6.3: a skill known to answer every poll that misses one is waited for that once (to the ceiling), then only at the claim bound until it has answered ${PROMOTE_AFTER} in a row again — a skill that answers every other poll costs no ceiling`, async () => {
    const h = createHarness(config());
    const wire = timedWire(h);
    let silentNext = false;
    const wiki = cqSkill(h, 'wiki', { claim: (u) => (u === ELECTRICITY ? false : silentNext ? 'silent' : false) });
    fallbackSkill(h, 'fb', 10);
    await h.settle();
    const speakAt = (from: number): number[] => wire.filter((w) => w.message.type === 'ovos.utterance.speak' && w.at >= from).map((w) => w.at - from);
    await askElectricity(h, PROMOTE_AFTER + 1);
    expect(h.system.commonQuery.roster()).toEqual([{ skill_id: 'wiki', answersEveryPoll: true }]);

    silentNext = true;
    const t1 = h.clock.now();
    h.utter(FRANCE); // wiki stays silent: waited for up to the poll ceiling, once
    await h.advance(POLL + 20);
    expect(speakAt(t1)).toEqual([POLL]);
    expect(h.system.commonQuery.roster()).toEqual([{ skill_id: 'wiki', answersEveryPoll: false }]);
    expect(h.logs.filter((l) => l['reason'] === 'poll_missed')).toHaveLength(1);

    // Alternating: answers one poll, misses the next — never waited for past the claim bound again.
    for (let i = 0; i < 3; i++) {
      silentNext = false;
      await askElectricity(h, 1);
      silentNext = true;
      const t = h.clock.now();
      h.utter(FRANCE);
      await h.advance(POLL + 20);
      expect(speakAt(t)).toEqual([CLAIM_BOUND]);
    }
    expect(wiki.requests).toEqual([]);
    expectOneHandledEach(h);
  });

  it('§6.3 / §7.2 (embedded bus): a skill whose connection closed is not waited for — neither in the poll nor as a claimant in collection', async () => {
    const h = createHarness(config());
    const wire = timedWire(h);
    const speakAt = (from: number): number[] => wire.filter((w) => w.message.type === 'ovos.utterance.speak' && w.at >= from).map((w) => w.at - from);
    // 'remote' claims over connection c1 and never answers the request; its connection dies 30 ms into collection.
    h.bus.subscribe((m) => {
      if (m.type === 'ovos.common_query.ping') {
        h.bus.publish(createMessage('ovos.common_query.pong', { utterance: String(m.data['utterance']), skill_id: 'remote', can_answer: true, latency_ms: 20 }, { ...m.context }), 'c1');
      }
    });
    fallbackSkill(h, 'fb', 10);
    await h.settle();
    const t0 = h.clock.now();
    h.utter(FRANCE);
    await h.advance(CLAIM_BOUND + 30);
    expect(h.of('remote:common_query')).toHaveLength(1);
    h.bus.closeConnection('c1');
    await h.settle();
    expect(speakAt(t0)).toEqual([CLAIM_BOUND + 30]); // not the 5 s ceiling
    expect(spoken(h)).toEqual(['fb says hi']);
    expect(logsWith(h, 'common query decided').map((l) => l['closed_by'])).toEqual(['all_answered']);
    expect(h.system.commonQuery.roster()).toEqual([]);
    expectOneHandledEach(h);
  });
});

describe('OVOS-COMMON-QUERY-1 §7.2 collection window (whole system)', () => {
  it.each([
    [200 + ALLOWANCE - 1, 'B'],
    [200 + ALLOWANCE, 'A'],
    [200 + ALLOWANCE + 1, 'A'],
  ])('§7.2 boundary initial window (latency_ms + allowance): both claimants declare latency_ms 200, A (0.6) answered at 50 — B (0.85) answering %i ms after the request → %s is spoken', async (bDelay, expected) => {
    const h = createHarness(config());
    const wire = timedWire(h);
    cqSkill(h, 'a', { latencyMs: 200, answer: 'A', conf: 0.6, responseDelayMs: 50 });
    cqSkill(h, 'b', { latencyMs: 200, answer: 'B', conf: 0.85, responseDelayMs: bDelay });
    fallbackSkill(h, 'fb', 10);
    await h.settle();
    const t0 = h.clock.now();
    h.utter(FRANCE);
    await h.advance(CLAIM_BOUND + 300);
    expect(spoken(h)).toEqual([expected]);
    // B in time: all answered at its response; otherwise the window closes at 200 + allowance with A in hand.
    expect(wire.filter((w) => w.message.type === 'ovos.utterance.speak').map((w) => w.at - t0)).toEqual([CLAIM_BOUND + Math.min(bDelay, 200 + ALLOWANCE)]);
    expectOneHandledEach(h);
  });

  it.each([
    [0, 40, false],
    [20, 40, false],
    [0, 40, true],
    [20, 40, true],
    [0, 90, true],
    [20, 110, true],
  ])('§7.2 (the defect): a claimant declaring latency_ms %i whose answer comes %i ms after the request is NOT lost — silent co-claimant: %s', async (latencyMs, delay, withSilent) => {
    const h = createHarness(config());
    const wire = timedWire(h);
    cqSkill(h, 'wiki', { latencyMs, answer: 'Paris', conf: 0.8, responseDelayMs: delay });
    if (withSilent) cqSkill(h, 'mute', { latencyMs, silentOnRequest: true });
    fallbackSkill(h, 'fb', 10);
    await h.settle();
    const t0 = h.clock.now();
    h.utter(FRANCE);
    await h.advance(CLAIM_BOUND + 200);
    expect(spoken(h)).toEqual(['Paris']);
    // Alone: spoken as it arrives (all answered). Beside a silent claimant: when the initial window (latency_ms +
    // allowance) has ended and one round trip (the allowance: the pongs came at once) has passed since it arrived.
    const window = latencyMs + ALLOWANCE;
    const at = withSilent ? Math.max(delay + ALLOWANCE, window) : delay;
    expect(wire.filter((w) => w.message.type === 'ovos.utterance.speak').map((w) => w.at - t0)).toEqual([CLAIM_BOUND + at]);
    expect(logsWith(h, 'common query decided').map((l) => l['closed_by'])).toEqual([withSilent ? 'window' : 'all_answered']);
    expectOneHandledEach(h);
  });

  // A loaded bus (the mixed-load bench, one connection per skill: round trips of 100–400 ms): the best claimant's pong
  // took 120 ms to arrive, so its answer will too — the window is its latency_ms + that round trip, not + 50 ms, and
  // it stays open that round trip after the first surviving answer (A's, at 1 ms): until 121 ms.
  it.each([
    [120, 'best', 'all_answered'],
    [121, 'weak', 'window'],
    [122, 'weak', 'window'],
  ])('§7.2 settle on a loaded bus: B pongs 120 ms after the ping (latency_ms 0), A (0.6) 1 ms after the request — B (0.8) answering %i ms after it → %s (open until A\'s answer + the 120 ms round trip)', async (bDelay, expected, closedBy) => {
    const h = createHarness(config());
    const wire = timedWire(h);
    cqSkill(h, 'cq-a', { latencyMs: 0, answer: 'weak', conf: 0.6, responseDelayMs: 1 });
    cqSkill(h, 'cq-b', { latencyMs: 0, pongDelayMs: 120, answer: 'best', conf: 0.8, responseDelayMs: bDelay });
    await h.settle();
    const t0 = h.clock.now();
    h.utter(FRANCE);
    await h.advance(CLAIM_BOUND + 400);
    expect(spoken(h)).toEqual([expected]);
    expect(wire.filter((w) => w.message.type === 'ovos.utterance.speak').map((w) => w.at - t0)).toEqual([CLAIM_BOUND + Math.min(bDelay, 121)]);
    expect(logsWith(h, 'common query decided').map((l) => l['closed_by'])).toEqual([closedBy]);
    expectOneHandledEach(h);
  });

  it('§7.2 on a quiet bus the allowance is the least round trip: a pong after 10 ms still gives latency_ms + 50 ms', async () => {
    const h = createHarness(config());
    const wire = timedWire(h);
    cqSkill(h, 'cq-a', { latencyMs: 0, answer: 'weak', conf: 0.6, responseDelayMs: 1 });
    cqSkill(h, 'cq-b', { latencyMs: 0, pongDelayMs: 10, answer: 'best', conf: 0.8, responseDelayMs: ALLOWANCE - 1 });
    await h.settle();
    const t0 = h.clock.now();
    h.utter(FRANCE);
    await h.advance(CLAIM_BOUND + 400);
    expect(spoken(h)).toEqual(['best']);
    expect(wire.filter((w) => w.message.type === 'ovos.utterance.speak').map((w) => w.at - t0)).toEqual([CLAIM_BOUND + ALLOWANCE - 1]);
    expectOneHandledEach(h);
  });

  it('§7.2 + allowance: three claimants declaring latency_ms 0 answering 1, 2 and 3 ms after the request — the best answer (0.8) is spoken, not the first (0.6)', async () => {
    const h = createHarness(config());
    const wire = timedWire(h);
    cqSkill(h, 'cq-1', { latencyMs: 0, answer: 'weak', conf: 0.6, responseDelayMs: 1 });
    cqSkill(h, 'cq-2', { latencyMs: 0, answer: 'better', conf: 0.7, responseDelayMs: 2 });
    cqSkill(h, 'cq-3', { latencyMs: 0, answer: 'best', conf: 0.8, responseDelayMs: 3 });
    await h.settle();
    const t0 = h.clock.now();
    h.utter(FRANCE);
    await h.advance(CLAIM_BOUND + 200);
    expect(spoken(h)).toEqual(['best']);
    expect(wire.filter((w) => w.message.type === 'ovos.utterance.speak').map((w) => w.at - t0)).toEqual([CLAIM_BOUND + 3]);
    expect(logsWith(h, 'common query decided').map((l) => l['closed_by'])).toEqual(['all_answered']);
    expectOneHandledEach(h);
  });

  it.each([
    [CEILING - 1, 'Paris'],
    [CEILING, 'fb says hi'],
    [CEILING + 1, 'fb says hi'],
  ])('§7.2 boundary ceiling: a claimant declaring latency_ms 0 whose answer comes %i ms after the request → %s (not answered before the 5 s ceiling = declining)', async (delay, expected) => {
    const h = createHarness(config());
    const wire = timedWire(h);
    const wiki = cqSkill(h, 'wiki', { latencyMs: 0, answer: 'Paris', conf: 0.8, responseDelayMs: delay });
    fallbackSkill(h, 'fb', 10);
    await h.settle();
    const t0 = h.clock.now();
    h.utter(FRANCE);
    await h.advance(CLAIM_BOUND + CEILING + 20);
    expect(wiki.requests.map((r) => r.at - t0)).toEqual([CLAIM_BOUND]);
    expect(spoken(h)).toEqual([expected]);
    expect(wire.filter((w) => w.message.type === 'ovos.utterance.speak').map((w) => w.at - t0)).toEqual([CLAIM_BOUND + Math.min(delay, CEILING)]);
    if (delay >= CEILING) expect(logsWith(h, 'common query decided').map((l) => l['closed_by'])).toEqual(['ceiling']);
    expectOneHandledEach(h);
  });
});

describe('OVOS-COMMON-QUERY-1 §5 / §5.1 / §5.2 early start: runs, cache entries and contest_id', () => {
  it('§5.2: the same question asked twice in one session behind a slow stage — each utterance gets its own answer, no ambiguous_correlation, one handled each', async () => {
    const h = createHarness(config());
    h.system.orchestrator.register(slowStage(h, 300));
    const wiki = cqSkill(h, 'wiki', { answer: (_u, r) => `answer for ${String(r.context['utterance_id'])}`, conf: 0.8, responseDelayMs: 400 });
    await h.settle();
    const session = { session_id: 's1', pipeline: ['slow_stage', ...PIPELINE] };
    h.utter(FRANCE, { session, utteranceId: 'u1' });
    await h.advance(10);
    h.utter(FRANCE, { session, utteranceId: 'u2' }); // u1 is still in the slow stage
    await h.advance(300 + CLAIM_BOUND + 400 + 50);

    const said = h.of('ovos.utterance.speak').map((m) => [m.context['utterance_id'], m.data['utterance']]);
    expect(said.sort()).toEqual([
      ['u1', 'answer for u1'],
      ['u2', 'answer for u2'],
    ]);
    expect(drops(h, 'ambiguous_correlation')).toEqual([]);
    // u1's early start was evicted by u2 (same session); u1's match found u2's entry — same string, other
    // utterance_id — not its own, so it ran its own contest while u2's early one was still collecting.
    expect(pings(h).map((p) => p.context['utterance_id'])).toEqual(['u1', 'u2', 'u1']);
    expect(logsWith(h, 'contest stopped').map((l) => [l['reason'], l['utterance_id']])).toEqual([['new_utterance', 'u1']]);
    expect(wiki.requests.map((r) => r.message.context['utterance_id']).sort()).toEqual(['u1', 'u2']);
    const handled = h.of('ovos.utterance.handled').map((m) => m.context['utterance_id']);
    expect(handled.sort()).toEqual(['u1', 'u2']);
    expectOneHandledEach(h);
  });

  it('§5.1: after a lang change re-runs the contest, a response to the discarded run (its old contest_id) is dropped (finished_contest) and cannot win', async () => {
    const h = createHarness(config());
    const wiki = cqSkill(h, 'wiki', {
      answer: (_u, request) => (langSeenBySkill(request) === 'pt-PT' ? 'Paris é a capital' : 'Paris is the capital'),
      conf: 0.8,
      responseDelayMs: 100,
    });
    await h.settle();
    const q = 'what is the capital of france?';
    const message = entry(q, { session_id: 's1', lang: 'en-US' }, 'u1');
    h.system.commonQuery.onUtterance(message, 'en-US', sessionFromObject({ session_id: 's1', lang: 'en-US' }));
    await h.advance(CLAIM_BOUND + 5); // the English run asked wiki at 125; its answer is due at 225
    expect(wiki.requests).toHaveLength(1);
    const m = startMatch(h, message, 'pt-PT', sessionFromObject({ session_id: 's1', lang: 'pt-PT' }));
    // The re-run knows wiki (roster): it asks at once (130); the Portuguese answer is due at 230.
    await h.advance(99); // t = 229: the English answer (225) has come and gone
    expect(m.settled()).toBe(false);
    const stale = drops(h, 'finished_contest');
    expect(stale.map((l) => [l['type'], (JSON.parse(l['payload'] as string) as JsonObject)['answer']])).toEqual([['wiki.common_query.response', 'Paris is the capital']]);
    await h.advance(1);
    expect(m.settled()).toBe(true);
    expect((await m.promise)?.slots).toEqual({ answer: 'Paris é a capital' });

    // Every message of a run carries its contest_id; the skill's replies echo it; the re-run has a new one.
    const ids = (type: string): unknown[] => h.of(type).map((m) => m.context['contest_id']);
    const [enRun, ptRun] = ids('ovos.common_query.ping');
    expect(typeof enRun).toBe('string');
    expect(typeof ptRun).toBe('string');
    expect(enRun).not.toBe(ptRun);
    expect(ids('wiki:common_query')).toEqual([enRun, ptRun]);
    expect(ids('ovos.common_query.pong')).toEqual([enRun, ptRun]);
    expect(ids('wiki.common_query.response')).toEqual([enRun, ptRun]);
  });

  it('§5.1 / §7.2: an early start past its initial window holds a good answer until match joins — JOIN closes it at once (no wait for the ceiling)', async () => {
    const h = createHarness(config());
    const wire = timedWire(h);
    h.system.orchestrator.register(slowStage(h, 300));
    cqSkill(h, 'wiki', { latencyMs: 0, answer: 'Paris', conf: 0.8, responseDelayMs: 40 });
    cqSkill(h, 'mute', { latencyMs: 0, silentOnRequest: true });
    await h.settle();
    const t0 = h.clock.now();
    h.utter(FRANCE, { session: { session_id: 's1', pipeline: ['slow_stage', ...PIPELINE] } });
    await h.advance(400);
    // Answer in at 165 while no live policy existed (nothing survives before JOIN); match joins at 300.
    expect(spoken(h)).toEqual(['Paris']);
    expect(wire.filter((w) => w.message.type === 'ovos.utterance.speak').map((w) => w.at - t0)).toEqual([300]);
    expect(logsWith(h, 'common query decided').map((l) => l['closed_by'])).toEqual(['window']);
    expectOneHandledEach(h);
  });

  it('§5.2: an utterance in a session whose pipeline has no common_query still evicts that session’s early-start entry', async () => {
    const h = createHarness(config());
    h.system.orchestrator.register(slowStage(h, 300));
    const wiki = cqSkill(h, 'wiki', { answer: (u) => `answer to ${u}`, conf: 0.8 });
    fallbackSkill(h, 'fb', 10);
    await h.settle();
    h.utter(FRANCE, { session: { session_id: 's1', pipeline: ['slow_stage', ...PIPELINE] }, utteranceId: 'u1' });
    await h.advance(5);
    expect(h.system.commonQuery.cacheSize).toBe(1);
    h.utter(ELECTRICITY, { session: { session_id: 's1', pipeline: ['fallback_high'] }, utteranceId: 'u2' });
    await h.advance(1);
    expect(h.system.commonQuery.cacheSize).toBe(0);
    expect(logsWith(h, 'contest stopped').map((l) => [l['reason'], l['utterance_id']])).toEqual([['new_utterance', 'u1']]);
    await h.advance(300 + 50);
    // u2 never reached common query (no ping for it); u1's match found no entry and ran its own contest.
    expect(pings(h).map((p) => [p.context['utterance_id'], p.data['utterance']])).toEqual([
      ['u1', FRANCE],
      ['u1', FRANCE],
    ]);
    expect(h.of('ovos.utterance.speak').map((m) => [m.context['utterance_id'], m.data['utterance']])).toEqual([
      ['u2', 'fb says hi'],
      ['u1', `answer to ${FRANCE}`],
    ]);
    expect(wiki.requests).toHaveLength(1);
    expectOneHandledEach(h);
  });
});

describe('default pipeline (config): fallback_high, common_query, fallback_medium, fallback_low', () => {
  it('§12 / FALLBACK-1 §8.2: a fallback_high skill that takes the utterance answers before common query, whose early start is stopped unasked', async () => {
    const h = createHarness(); // DEFAULT_CONFIG
    const wiki = cqSkill(h, 'wiki', { answer: 'Paris', conf: 0.8 });
    fallbackSkill(h, 'fb', 10); // priority 10: fallback_high
    await h.settle();
    h.utter(FRANCE);
    await h.advance(CLAIM_BOUND + 50);
    expect(wiki.pings).toHaveLength(1); // the early start did run, in parallel
    expect(wiki.requests).toEqual([]);
    expect(spoken(h)).toEqual(['fb says hi']);
    expect(h.system.supervisor.size).toBe(0);
    expect(h.system.commonQuery.cacheSize).toBe(0);
    expectOneHandledEach(h);
  });

  it('§5 / §12: when fallback_high declines, common query answers from the contest that started at the utterance’s arrival', async () => {
    const h = createHarness(); // DEFAULT_CONFIG
    const wire = timedWire(h);
    cqSkill(h, 'wiki', { answer: 'Paris', conf: 0.8 });
    fallbackSkill(h, 'fb', 10, { decide: () => false });
    await h.settle();
    const t0 = h.clock.now();
    h.utter(FRANCE);
    await h.advance(CLAIM_BOUND + 50);
    expect(spoken(h)).toEqual(['Paris']);
    expect(pings(h)).toHaveLength(1);
    expect(wire.filter((w) => w.message.type === 'ovos.utterance.speak').map((w) => w.at - t0)).toEqual([CLAIM_BOUND]);
    expect(logsWith(h, 'stage matched').map((l) => [l['stage'], l['matched']])).toEqual([
      ['fallback_high', false],
      ['common_query', true],
    ]);
    expectOneHandledEach(h);
  });
});

describe('OVOS-COMMON-QUERY-1 §6.3: the poll learns a skill that claims after the claim bound (src/plugins/README.md "Common-query poll")', () => {
  const slow = (h: Harness, pongDelayMs: number) => cqSkill(h, 'thinker', { latencyMs: 50, pongDelayMs, answer: 'Paris', conf: 0.8, responseDelayMs: 10 });

  it('§6.3 at the claim bound − 1 (124 ms): in time — every question answered, nothing to learn', async () => {
    const h = createHarness(config());
    slow(h, CLAIM_BOUND - 1);
    await h.settle();
    expect(await questions(h, 3)).toEqual(['Paris', 'Paris', 'Paris']);
    expect(h.logs.filter((l) => l['reason'] === 'slow_claim')).toEqual([]);
  });

  it.each([CLAIM_BOUND, CLAIM_BOUND + 1, 200, POLL - 1])('§6.3 a claim at %i ms (at or past the claim bound, before the ceiling): the first question is lost, the skill is known to claim late, and every later one is answered', async (at) => {
    const h = createHarness(config());
    slow(h, at);
    await h.settle();
    expect(await questions(h, 10)).toEqual(['-', ...Array(9).fill('Paris')]);
    expect(h.logs.filter((l) => l['reason'] === 'slow_claim')).toEqual([expect.objectContaining({ level: 30, skill_id: 'thinker', after_ms: at })]);
  });

  it('§6.3 questions back to back (the next asked before the first late claim came): the poll already running waits for the skill once it is learnt — only the first question is lost', async () => {
    const h = createHarness(config());
    slow(h, 200);
    fallbackSkill(h, 'fb', 10);
    await h.settle();
    const answers: string[] = [];
    for (let i = 0; i < 4; i++) {
      const before = h.of('ovos.utterance.handled').length;
      h.utter(FRANCE, { session: { session_id: `b${i}` }, utteranceId: `b${i}` });
      while (h.of('ovos.utterance.handled').length === before) await h.advance(1);
      const mine = h.wire.filter((m) => m.context['utterance_id'] === `b${i}`);
      answers.push(String(mine.find((m) => m.type === 'ovos.utterance.speak')?.data['utterance'] ?? '-'));
    }
    // b0 ends at the claim bound (fb); b1 starts then, before thinker's claim for b0 (at 200 ms) teaches the roster.
    expect(answers).toEqual(['fb says hi', 'Paris', 'Paris', 'Paris']);
  });

  it('§6.3 a claim at the ceiling (500 ms) is never waited for: every question lost, the poll never held past its claim bound', async () => {
    const h = createHarness(config());
    slow(h, POLL);
    await h.settle();
    expect(await questions(h, 3)).toEqual(['-', '-', '-']);
    expect(h.logs.filter((l) => l['reason'] === 'slow_claim')).toEqual([]);
  });

  it('§6.3 a skill known to claim late that stays silent through 3 polls in a row that waited for it is not waited for any more (poll_missed), until it claims late again', async () => {
    const h = createHarness(config());
    let silentFrom = Infinity;
    cqSkill(h, 'thinker', { latencyMs: 50, pongDelayMs: 200, claim: (_u, ping) => (Number(String(ping.context['utterance_id']).slice(1)) >= silentFrom ? 'silent' : true), answer: 'Paris', conf: 0.8, responseDelayMs: 10 });
    fallbackSkill(h, 'fb', 10);
    await h.settle();
    expect(await questions(h, 2)).toEqual(['fb says hi', 'Paris']);
    silentFrom = 2;
    const wire = timedWire(h);
    const decidedAfter: number[] = [];
    for (let i = 2; i <= 5; i++) {
      h.utter(FRANCE, { session: { session_id: `q${i}` }, utteranceId: `q${i}` });
      await h.advance(POLL + ALLOWANCE + 200);
      const asked = wire.find((w) => w.message.type === 'ovos.utterance.handle' && w.message.context['utterance_id'] === `q${i}`)!.at;
      decidedAfter.push(wire.find((w) => w.message.type === 'fb:fallback' && w.message.context['utterance_id'] === `q${i}`)!.at - asked);
    }
    // Waited for to the ceiling three times, then — silent three polls in a row — only the claim bound.
    expect(decidedAfter).toEqual([POLL, POLL, POLL, CLAIM_BOUND]);
    expect(h.logs.filter((l) => l['reason'] === 'poll_missed')).toEqual([expect.objectContaining({ skill_id: 'thinker' })]);
    expectOneHandledEach(h);
  });

  it('§6.2 × §6.3 a late claimant that stays silent on questions it cannot answer (as §6.2 asks) keeps every claim it makes: its silences cost the ceiling, its claims are answered', async () => {
    const h = createHarness(config());
    cqSkill(h, 'thinker', { latencyMs: 50, pongDelayMs: 200, claim: (utterance) => (utterance === FRANCE ? true : 'silent'), answer: 'Paris', conf: 0.8, responseDelayMs: 10 });
    fallbackSkill(h, 'fb', 10);
    await h.settle();
    const answers: string[] = [];
    for (let i = 0; i < 7; i++) {
      const before = spoken(h).length;
      h.utter(i % 2 === 0 ? FRANCE : ELECTRICITY, { session: { session_id: `a${i}` }, utteranceId: `a${i}` });
      await h.advance(POLL + ALLOWANCE + 200);
      answers.push(spoken(h).length > before ? spoken(h).at(-1)! : '-');
    }
    expect(answers).toEqual(['fb says hi', 'fb says hi', 'Paris', 'fb says hi', 'Paris', 'fb says hi', 'Paris']);
    expect(h.logs.filter((l) => l['reason'] === 'poll_missed')).toEqual([]);
  });
});

describe('OVOS-COMMON-QUERY-1 §6.2/§6.3: the cold start — the first polls after a start wait for a first claim up to the ceiling (src/plugins/README.md "Common-query poll")', () => {
  const WARMUP = 3;
  const cold = (warmupPolls = WARMUP): Config => config((cq) => ({ ...cq, warmupPolls }));
  const thinker = (h: Harness, pongDelayMs: number) => cqSkill(h, 'thinker', { latencyMs: 50, pongDelayMs, answer: 'Paris', conf: 0.8, responseDelayMs: 10 });

  it.each([CLAIM_BOUND, 200, POLL - 1])('§6.3 cold start: a skill claiming %i ms after the ping (late for the claim bound, before the ceiling) is answered from the very first question on', async (at) => {
    const h = createHarness(cold());
    thinker(h, at);
    await h.settle();
    expect(await questions(h, 6)).toEqual(Array(6).fill('Paris'));
    // The cold polls still teach the roster that it claims late, so the warm ones wait for it.
    expect(h.logs.filter((l) => l['reason'] === 'slow_claim')).toEqual([expect.objectContaining({ skill_id: 'thinker', after_ms: at })]);
    expectOneHandledEach(h);
  });

  it('§6.3 cold start, boundary poll ceiling: a claim at 500 ms is too late even then — every question goes to fallback', async () => {
    const h = createHarness(cold());
    thinker(h, POLL);
    fallbackSkill(h, 'fb', 10);
    await h.settle();
    expect(await questions(h, 4)).toEqual(Array(4).fill('fb says hi'));
  });

  it('§6.3 without a cold start (warmupPolls 0) the first question of the same skill is lost — what the cold start is for', async () => {
    const h = createHarness(cold(0));
    thinker(h, 200);
    await h.settle();
    expect(await questions(h, 3)).toEqual(['-', 'Paris', 'Paris']);
  });

  it('§6.3 cold start: a burst of 20 sessions asking at once on a fresh plugin, the skill claiming each at 200 ms — all 20 answered, once each (with warmupPolls 0: all 20 lost)', async () => {
    for (const [warmupPolls, expected] of [[WARMUP, 'Paris'], [0, 'fb says hi']] as const) {
      const h = createHarness(cold(warmupPolls));
      thinker(h, 200);
      fallbackSkill(h, 'fb', 10);
      await h.settle();
      for (let i = 0; i < 20; i++) h.utter(FRANCE, { session: { session_id: `burst${i}` }, utteranceId: `burst${i}` });
      await h.advance(POLL + ALLOWANCE + 200);
      for (let i = 0; i < 20; i++) expect(spoken(h, `burst${i}`), `warmupPolls ${warmupPolls}, burst${i}`).toEqual([expected]);
      expectOneHandledEach(h);
    }
  });

  it('§6.3 cold start: what it costs — the first 3 questions nobody claims reach fallback at the ceiling (500 ms), every later one at the claim bound (125 ms)', async () => {
    const h = createHarness(cold());
    fallbackSkill(h, 'fb', 10);
    await h.settle();
    const wire = timedWire(h);
    expect(await questions(h, 5)).toEqual(Array(5).fill('fb says hi'));
    const decidedAfter = [0, 1, 2, 3, 4].map((i) => {
      const of = (type: string): number => wire.find((w) => w.message.type === type && w.message.context['utterance_id'] === `q${i}`)!.at;
      return of('fb:fallback') - of('ovos.utterance.handle');
    });
    expect(decidedAfter).toEqual([POLL, POLL, POLL, CLAIM_BOUND, CLAIM_BOUND]);
  });

  it('§6.3 cold start: what the spread costs — while cold (the first warmupPolls polls), a question asks a quick claimant one claim bound after its claim, known or not (the roster is not trusted yet); once warm, at its claim (rule 1)', async () => {
    const h = createHarness(cold(2));
    cqSkill(h, 'wiki', { latencyMs: 20, pongDelayMs: 10, answer: 'Paris', conf: 0.8, responseDelayMs: 5 });
    await h.settle();
    const wire = timedWire(h);
    const askedAfter: number[] = [];
    for (const id of ['first', 'second', 'third']) {
      const t0 = h.clock.now();
      h.utter(FRANCE, { session: { session_id: id }, utteranceId: id });
      await h.advance(POLL + 200);
      expect(spoken(h, id)).toEqual(['Paris']);
      askedAfter.push(...wire.filter((w) => w.message.type === 'wiki:common_query' && w.message.context['utterance_id'] === id).map((w) => w.at - t0));
    }
    expect(askedAfter).toEqual([10 + CLAIM_BOUND, 10 + CLAIM_BOUND, 10]);
    expectOneHandledEach(h);
  });

  it.each([
    [CLAIM_BOUND - 1, 'the better answer'],
    [CLAIM_BOUND, 'the quick answer'],
  ])('§6.3 cold start knowing no skill: a better skill claiming %i ms after a quick one (past the claim bound) — the first question speaks %s', async (behind, expected) => {
    const h = createHarness(cold());
    cqSkill(h, 'quick', { latencyMs: 20, pongDelayMs: 30, answer: 'the quick answer', conf: 0.6, responseDelayMs: 5 });
    cqSkill(h, 'better', { latencyMs: 20, pongDelayMs: 30 + behind, answer: 'the better answer', conf: 0.85, responseDelayMs: 5 });
    await h.settle();
    expect(await questions(h, 1)).toEqual([expected]);
    expectOneHandledEach(h);
  });

  it('§6.3 cold start knowing no skill: a burst of 10 sessions asked at once, both skills slowed alike by its load (claims at 150 and 200 ms) — every question speaks the better answer', async () => {
    const h = createHarness(cold());
    cqSkill(h, 'quick', { latencyMs: 20, pongDelayMs: 150, answer: 'the quick answer', conf: 0.6, responseDelayMs: 5 });
    cqSkill(h, 'better', { latencyMs: 20, pongDelayMs: 200, answer: 'the better answer', conf: 0.85, responseDelayMs: 5 });
    await h.settle();
    for (let i = 0; i < 10; i++) h.utter(FRANCE, { session: { session_id: `burst${i}` }, utteranceId: `burst${i}` });
    await h.advance(POLL + ALLOWANCE + 200);
    for (let i = 0; i < 10; i++) expect(spoken(h, `burst${i}`), `burst${i}`).toEqual(['the better answer']);
    expectOneHandledEach(h);
  });

  it('§6.3 cold start: a burst asked at once while known skills claim late under its load — every question waits for them (up to the ceiling) and speaks the best answer', async () => {
    const h = createHarness(cold());
    let loaded = false;
    cqSkill(h, 'quick', { latencyMs: 20, pongDelayMs: 10, answer: 'quick answer', conf: 0.6, responseDelayMs: 5 });
    cqSkill(h, 'best', { latencyMs: 20, pongDelayFor: () => (loaded ? 200 : 10), answer: 'best answer', conf: 0.85, responseDelayMs: 5 });
    await h.settle();
    expect(await questions(h, 1)).toEqual(['best answer']); // both on the roster, neither late yet
    loaded = true;
    for (let i = 0; i < 10; i++) h.utter(FRANCE, { session: { session_id: `burst${i}` }, utteranceId: `burst${i}` });
    await h.advance(POLL + ALLOWANCE + 200);
    for (let i = 0; i < 10; i++) expect(spoken(h, `burst${i}`), `burst${i}`).toEqual(['best answer']);
    expectOneHandledEach(h);
  });

  it('§6.3 cold start: its polls teach who the skills are but no streak — a skill declining every question at 200 ms (past the claim bound) is not taken for one that answers every poll in time', async () => {
    // Five cold polls that nobody claims: each waits to the ceiling, so the slow "no" comes in every one of them. Had
    // they counted, it would be known to answer every poll (3 in a row), and a later claimed question would wait for it.
    const h = createHarness(cold(5));
    cqSkill(h, 'slow.no', { claim: false, pongDelayMs: 200 });
    cqSkill(h, 'wiki', { claim: (u) => (u === ELECTRICITY ? true : 'silent'), latencyMs: 20, pongDelayMs: 10, answer: 'Edison', conf: 0.8, responseDelayMs: 5 });
    fallbackSkill(h, 'fb', 10);
    await h.settle();
    expect(await questions(h, 5)).toEqual(Array(5).fill('fb says hi'));
    const wire = timedWire(h);
    const t0 = h.clock.now();
    h.utter(ELECTRICITY, { session: { session_id: 'warm' }, utteranceId: 'warm' });
    await h.advance(POLL + ALLOWANCE + 200);
    expect(spoken(h, 'warm')).toEqual(['Edison']);
    expect(wire.filter((w) => w.message.type === 'wiki:common_query').map((w) => w.at - t0)).toEqual([CLAIM_BOUND]);
  });

  it('§6.3 cold start again when the bus comes back (skills may have restarted meanwhile): the next 3 polls wait for a first claim', async () => {
    const bus = new StatusBus();
    const h = createHarness(cold(), { bus });
    fallbackSkill(h, 'fb', 10);
    await h.settle();
    expect(await questions(h, 4)).toEqual(Array(4).fill('fb says hi')); // past the cold start
    bus.report({ up: false, reason: 'socket closed' });
    bus.report({ up: true });
    thinker(h, 200); // a skill that came up with the bus, claiming late
    await h.settle();
    expect(await questions(h, 2)).toEqual(['Paris', 'Paris']);
  });
});

describe('OVOS-COMMON-QUERY-1 §6.3: the cold start comes again when the roster may be wrong (src/plugins/README.md "Common-query poll")', () => {
  const cold = (): Config => config((cq) => ({ ...cq, warmupPolls: 3 }));

  it('§6.3 (embedded bus): skills leaving the roster with their connection (a skills process restarting) start a cold start — a late claimer that comes with the new process is answered from its first question', async () => {
    const h = createHarness(cold());
    // 'remote' declines every question over connection c1, as a skill of another process does.
    const stopRemote = h.bus.subscribe((m) => {
      if (m.type === 'ovos.common_query.ping' && typeof m.data['utterance'] === 'string') {
        h.bus.publish(reply(m, 'ovos.common_query.pong', { utterance: m.data['utterance'], skill_id: 'remote', can_answer: false }), 'c1');
      }
    });
    await h.settle();
    expect(await questions(h, 4)).toEqual(['-', '-', '-', '-']); // past the first cold start
    stopRemote();
    h.bus.closeConnection('c1');
    await h.settle();
    expect(h.system.commonQuery.roster()).toEqual([]);
    cqSkill(h, 'thinker', { latencyMs: 50, pongDelayMs: 200, answer: 'Paris', conf: 0.8, responseDelayMs: 10 });
    await h.settle();
    expect(await questions(h, 2)).toEqual(['Paris', 'Paris']);
  });

  it('§6.3 a cold poll still tells a skill that missed it from one that answered: a skill known to answer every poll that is gone without a word after the bus came back is not waited for once the cold start is over', async () => {
    const bus = new StatusBus();
    const h = createHarness(cold(), { bus });
    const no = cqSkill(h, 'no', { claim: false, pongDelayMs: 10 });
    cqSkill(h, 'wiki', { latencyMs: 20, pongDelayMs: 10, answer: 'Paris', conf: 0.8, responseDelayMs: 5 });
    await h.settle();
    // 3 cold questions, then 4 warm ones: 'no' has answered 3 in a row in time — known to answer every poll.
    expect(await questions(h, 7)).toEqual(Array(7).fill('Paris'));
    expect(h.system.commonQuery.roster()).toContainEqual({ skill_id: 'no', answersEveryPoll: true });
    bus.report({ up: false, reason: 'socket closed' });
    bus.report({ up: true });
    no.stop(); // it did not come back, and nothing said so
    await h.settle();
    const wire = timedWire(h);
    const requestedAfter: number[] = [];
    for (let i = 0; i < 4; i++) {
      const t0 = h.clock.now();
      h.utter(FRANCE, { session: { session_id: `after${i}` }, utteranceId: `after${i}` });
      await h.advance(POLL + ALLOWANCE + 200);
      requestedAfter.push(wire.find((w) => w.message.type === 'wiki:common_query' && w.message.context['utterance_id'] === `after${i}`)!.at - t0);
    }
    // The cold polls wait for every skill on the roster to the ceiling; the first one's miss demotes it (poll_missed),
    // so the warm poll after them closes at the claim bound with the claim in hand.
    expect(requestedAfter).toEqual([POLL, POLL, POLL, CLAIM_BOUND]);
    expect(h.logs.filter((l) => l['reason'] === 'poll_missed')).toEqual([expect.objectContaining({ skill_id: 'no' })]);
  });
});
