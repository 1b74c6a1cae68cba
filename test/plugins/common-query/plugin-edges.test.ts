/**
 * Edges of the common-query plugin found by mutation testing: what the roster learns and forgets (joins,
 * departures over closed connections, its bounds, a classic skill's dispatch), what the early-start cache does at the
 * end of an utterance, the legacy dialect's frames (discovery on bus-up, the contest_id on `question:query`, the
 * winner's dispatch), the plugin's own checks (gate, empty utterance list, dispatch without answer) and the log
 * lines a deployer reads (reason code, fields, a message that says what happened).
 *
 * Harness: the whole system on a LocalBus (connections played by name) and the deterministic ManualClock; where a
 * scenario cannot be produced through the bus, the plugin's `onUtterance` / `onHandled` / `match` / `dispatchFor` /
 * `handle` are called directly, as the orchestrator would. Defaults: claim bound 125 ms, poll window 500 ms.
 */
import { describe, expect, it } from 'vitest';
import { createMessage, reply, type JsonObject, type Message } from '../../../src/bus/message.js';
import { sessionFromObject, type SessionView } from '../../../src/bus/session.js';
import type { Config } from '../../../src/config/defaults.js';
import { CommonQueryPlugin, PROMOTE_AFTER } from '../../../src/plugins/common-query/common-query.plugin.js';
import type { Match } from '../../../src/pipeline/plugin.js';
import { createHarness, fallbackSkill, withConfig, type Harness } from '../../support/harness.js';
import { cqSkill, legacyCqSkill, timedWire } from '../../support/cq-skills.js';
import { StatusBus } from '../../support/status-bus.js';

const PIPELINE = ['common_query', 'fallback_high', 'fallback_medium', 'fallback_low'];
const CLAIM_BOUND = 125;
const POLL = 500;
const FRANCE = 'what is the capital of france';
const ELECTRICITY = 'who invented electricity';
const SPEED = 'what is the speed of light';
/** The roster's and the departed skills' bound (MAX_ROSTER in the plugin). */
const ROSTER_BOUND = 1024;

function config(dialects: { spec: boolean; legacy: boolean } = { spec: true, legacy: false }): Config {
  return withConfig((c) => ({ ...c, pipeline: PIPELINE, dialects }));
}
const BOTH = { spec: true, legacy: true };

const S1 = { session_id: 's1' };
const VIEW = sessionFromObject(S1);

const logsWith = (h: Harness, msg: string): Array<Record<string, unknown>> => h.logs.filter((l) => l['msg'] === msg);
const spoken = (h: Harness): string[] => [...h.of('speak'), ...h.of('ovos.utterance.speak')].map((m) => String(m.data['utterance']));

const only = <T>(list: readonly T[]): T => {
  expect(list).toHaveLength(1);
  return list[0]!;
};

/** An utterance entry as the orchestrator stamps it (utterance_id omitted when undefined). */
function entry(utterance: string, session: JsonObject, utteranceId: string | undefined): Message {
  const context: JsonObject = { source: 'test', destination: 'orchestrator', session };
  if (utteranceId !== undefined) context['utterance_id'] = utteranceId;
  return createMessage('ovos.utterance.handle', { utterances: [utterance] }, context);
}

/** The plugin's match for `message`, called as the orchestrator does; `utterances` defaults to the entry's. */
function matchOf(plugin: CommonQueryPlugin, message: Message, session: SessionView, utterances?: readonly string[]): Promise<Match | null> {
  const listed = message.data['utterances'];
  const list = utterances ?? (Array.isArray(listed) ? listed.filter((u): u is string => typeof u === 'string') : []);
  return plugin.match({ utterances: list, lang: 'en-US', session, message, signal: new AbortController().signal });
}

/** A spec pong from `skillId` outside any contest (another session, another question), over `connection`. */
function strayPong(h: Harness, skillId: string, connection: string | undefined, canAnswer = false): void {
  h.bus.publish(createMessage('ovos.common_query.pong', { utterance: 'some other question', skill_id: skillId, can_answer: canAnswer }, { skill_id: skillId, session: { session_id: 'elsewhere' } }), connection);
}

/** A workshop skill's discovery pong (ovos-wire-today.md): `{skill_id, is_classic_cq}`. */
function announce(h: Harness, skillId: string, classic: boolean, connection?: string): void {
  h.bus.publish(createMessage('ovos.common_query.pong', { skill_id: skillId, is_classic_cq: classic }, { skill_id: skillId, session: { session_id: 'default' } }), connection);
}

/** Asks `utterance` in the default session and lets the whole utterance run. */
async function ask(h: Harness, utterance: string, times = 1): Promise<void> {
  for (let i = 0; i < times; i++) {
    h.utter(utterance);
    await h.advance(POLL + 20);
  }
}

const withoutHandlesSpeech = (data: JsonObject): JsonObject => {
  const { handles_speech: _dropped, ...rest } = data;
  return rest;
};

describe('OVOS-COMMON-QUERY-1 §6.3 / §7.2 (embedded bus): skills whose connection closes', () => {
  it('§7.2: a claimant whose pong came over the connection that closes is not waited for, though another instance of the same skill_id is still connected', async () => {
    const h = createHarness(config());
    const wire = timedWire(h);
    // 'remote' runs twice: over c2 it has spoken (another question); over c1 it claims this one and never answers.
    strayPong(h, 'remote', 'c2');
    h.bus.subscribe((m) => {
      if (m.type === 'ovos.common_query.ping') h.bus.publish(reply(m, 'ovos.common_query.pong', { utterance: String(m.data['utterance']), skill_id: 'remote', can_answer: true }), 'c1');
    });
    fallbackSkill(h, 'fb', 10);
    await h.settle();
    const t0 = h.clock.now();
    h.utter(FRANCE);
    await h.advance(CLAIM_BOUND + 30);
    expect(h.of('remote:common_query')).toHaveLength(1);
    h.bus.closeConnection('c1');
    await h.settle();
    // Not the 3 s initial window a claimant without latency_ms would hold the collection for.
    expect(wire.filter((w) => w.message.type === 'ovos.utterance.speak').map((w) => w.at - t0)).toEqual([CLAIM_BOUND + 30]);
    expect(spoken(h)).toEqual(['fb says hi']);
    // The instance over c2 is still there: 'remote' stays on the roster, and nothing is logged as having left it.
    expect(h.system.commonQuery.roster()).toEqual([{ skill_id: 'remote', answersEveryPoll: false }]);
    expect(logsWith(h, 'common-query skills left the roster')).toEqual([]);
  });

  it('a skill whose only connection closes leaves the roster, logged (reason connection_closed, the skills); a closed connection with no common-query skill on it logs no such line', async () => {
    const h = createHarness(config());
    h.bus.publish(createMessage('ovos.fallback.register', { skill_id: 'fb', priority: 10 }, { skill_id: 'fb', session: { session_id: 'default' } }), 'f1');
    strayPong(h, 'remote', 'c1');
    await h.settle();
    expect(h.system.commonQuery.roster()).toEqual([{ skill_id: 'remote', answersEveryPoll: false }]);
    h.bus.closeConnection('f1');
    await h.settle();
    expect(logsWith(h, 'common-query skills left the roster')).toEqual([]);
    h.bus.closeConnection('c1');
    await h.settle();
    expect(only(logsWith(h, 'common-query skills left the roster'))).toMatchObject({ reason: 'connection_closed', skills: ['remote'] });
    expect(h.system.commonQuery.roster()).toEqual([]);
  });

  /**
   * A workshop skill 'old' over connection w answers 0.8 in an early start, a spec skill 0.6; then w closes and
   * `others` more common-query skills come and go, each over its own connection; then match selects.
   */
  async function selectedAfterDepartures(others: number): Promise<string | undefined> {
    const h = createHarness(config(BOTH));
    announce(h, 'old', false, 'w');
    h.bus.subscribe((m) => {
      if (m.type !== 'question:query') return;
      const replies: JsonObject[] = [{ searching: true }, { answer: 'old answer', callback_data: { answer: 'old answer' }, conf: 0.8 }];
      for (const data of replies) {
        const out = reply(m, 'question:query.response', { phrase: String(m.data['phrase']), skill_id: 'old', ...data });
        h.bus.publish({ ...out, context: { ...out.context, skill_id: 'old' } }, 'w');
      }
    });
    cqSkill(h, 'spec', { answer: 'spec answer', conf: 0.6 });
    await h.settle();
    const message = entry(FRANCE, S1, 'u1');
    h.system.commonQuery.onUtterance(message, 'en-US', VIEW);
    await h.advance(CLAIM_BOUND + 50); // the early start is over, both answers in hand
    h.bus.closeConnection('w');
    for (let i = 0; i < others; i++) {
      strayPong(h, `passer${i}`, `p${i}`);
      h.bus.closeConnection(`p${i}`);
    }
    await h.settle();
    const match = matchOf(h.system.commonQuery, message, VIEW);
    await h.settle();
    return (await match)?.skill_id;
  }

  it(`src/plugins/README.md "Legacy common-query skills": a departed legacy skill's answer does not compete while it is among the last ${ROSTER_BOUND} skills to leave; the ${ROSTER_BOUND + 1}th departure after it forgets it`, async () => {
    expect(await selectedAfterDepartures(ROSTER_BOUND - 1)).toBe('common_query'); // the spec answer, spoken by the plugin
    expect(await selectedAfterDepartures(ROSTER_BOUND)).toBe('old');
  });
});

describe('the roster: who joins, with what', () => {
  it(`the roster holds at most ${ROSTER_BOUND} skills: the ${ROSTER_BOUND + 1}th skill heard from is not added (nor logged as joining)`, async () => {
    const h = createHarness(config());
    for (let i = 0; i <= ROSTER_BOUND; i++) strayPong(h, `skill${i}`, undefined);
    await h.settle();
    const roster = h.system.commonQuery.roster().map((r) => r.skill_id);
    expect(roster).toHaveLength(ROSTER_BOUND);
    expect(roster).not.toContain(`skill${ROSTER_BOUND}`);
    expect(logsWith(h, 'common-query skill joined the roster')).toHaveLength(ROSTER_BOUND);
  });

  it('§6.2 / ovos-wire-today: the join is logged with what was heard — a spec pong its can_answer, a workshop announcement its dialect and classic flag', async () => {
    const h = createHarness(config(BOTH));
    strayPong(h, 'yes.skill', undefined, true);
    strayPong(h, 'no.skill', undefined, false);
    announce(h, 'cq.classic', true);
    await h.settle();
    const joined = logsWith(h, 'common-query skill joined the roster');
    const fields = joined.map((l) => ({ skill_id: l['skill_id'], can_answer: l['can_answer'], dialect: l['dialect'], classic: l['classic'] }));
    expect(fields).toEqual([
      { skill_id: 'yes.skill', can_answer: true, dialect: undefined, classic: undefined },
      { skill_id: 'no.skill', can_answer: false, dialect: undefined, classic: undefined },
      { skill_id: 'cq.classic', can_answer: undefined, dialect: 'legacy', classic: true },
    ]);
  });

  it(`§6.3: a skill that first claimed, then declined the next ${PROMOTE_AFTER} polls, answers every poll (its first "yes" does not hide a later "no")`, async () => {
    const h = createHarness(config());
    let polls = 0;
    cqSkill(h, 'wiki', { claim: () => polls++ === 0, answer: 'wiki answer', conf: 0.8 });
    fallbackSkill(h, 'fb', 10);
    await h.settle();
    await ask(h, ELECTRICITY);
    expect(spoken(h)).toEqual(['wiki answer']);
    expect(h.system.commonQuery.roster()).toEqual([{ skill_id: 'wiki', answersEveryPoll: false }]);
    await ask(h, ELECTRICITY, PROMOTE_AFTER);
    expect(h.system.commonQuery.roster()).toEqual([{ skill_id: 'wiki', answersEveryPoll: true }]);
  });

  it('§6.3: a skill that stops answering polls is logged once (warn, reason poll_missed, its skill_id) — when it stops being waited for, not at every later miss', async () => {
    const h = createHarness(config());
    let silent = false;
    cqSkill(h, 'wiki', { claim: () => (silent ? 'silent' : false) });
    fallbackSkill(h, 'fb', 10);
    await h.settle();
    await ask(h, ELECTRICITY, PROMOTE_AFTER + 1);
    expect(h.system.commonQuery.roster()).toEqual([{ skill_id: 'wiki', answersEveryPoll: true }]);
    silent = true;
    await ask(h, FRANCE, 3);
    const missed = h.logs.filter((l) => l['reason'] === 'poll_missed');
    expect(missed.map((l) => [l['skill_id'], l['level']])).toEqual([['wiki', 40]]);
    expect(String(missed[0]?.['msg'])).toContain('missed a poll');
  });
});

describe('ovos-wire-today: classic CommonQuerySkills are dispatched on the bare question:action', () => {
  const bareActionsFor = (h: Harness, skillId: string): Message[] => h.of('question:action').filter((m) => m.data['skill_id'] === skillId);

  it('a skill announced as classic is dispatched the classic way even when its answer omits handles_speech — and stays classic after it is heard in the spec dialect', async () => {
    const h = createHarness(config(BOTH));
    const classic = legacyCqSkill(h, 'cq.classic', { classic: true, conf: 0.8, answerData: withoutHandlesSpeech });
    await h.settle();
    await ask(h, SPEED);
    expect(classic.actions.map((a) => a.message.type)).toEqual(['question:action']);
    strayPong(h, 'cq.classic', undefined); // the same skill_id answering a spec poll elsewhere says nothing about its dialect
    await h.settle();
    await ask(h, SPEED);
    expect(classic.actions.map((a) => a.message.type)).toEqual(['question:action', 'question:action']);
    expect(h.of('question:action.cq.classic')).toEqual([]);
  });

  it('a skill that announces itself again as classic (upgraded and restarted) is dispatched the classic way from then on', async () => {
    const h = createHarness(config(BOTH));
    legacyCqSkill(h, 'cq.up', { classic: false, conf: 0.8 });
    await h.settle();
    await ask(h, SPEED);
    expect(h.of('question:action.cq.up')).toHaveLength(1);
    announce(h, 'cq.up', true);
    await h.settle();
    await ask(h, SPEED);
    expect(h.of('question:action.cq.up')).toHaveLength(1);
    expect(bareActionsFor(h, 'cq.up')).toHaveLength(1);
  });

  it(`with the roster full (${ROSTER_BOUND} skills), a classic skill that is not on it still wins — dispatched the classic way by its handles_speech, ovos.intent.matched carrying its answer`, async () => {
    const h = createHarness(config(BOTH));
    for (let i = 0; i < ROSTER_BOUND; i++) strayPong(h, `skill${i}`, undefined);
    const late = legacyCqSkill(h, 'cq.late', { classic: true, announce: false, conf: 0.8 });
    await h.settle();
    await ask(h, SPEED);
    expect(h.system.commonQuery.roster().map((r) => r.skill_id)).not.toContain('cq.late');
    expect(late.actions.map((a) => a.message.type)).toEqual(['question:action']);
    expect(only(h.of('ovos.intent.matched')).data).toMatchObject({ skill_id: 'cq.late', slots: { answer: 'cq.late answer' } });
    expect(spoken(h)).toEqual(['cq.late answer']);
  });
});

describe('ovos-wire-today: a workshop answer nobody asked for', () => {
  it('§7.1: an answer without a "searching" claim first is dropped (reason not_requested_yet), not taken as a "no" — legacy dialect only, the poll still waits for the skill to the claim bound', async () => {
    const h = createHarness(config({ spec: false, legacy: true }));
    const hasty = legacyCqSkill(h, 'cq.hasty', { searchingAfterMs: 'never', conf: 0.8 });
    await h.settle();
    const wire = timedWire(h);
    h.bus.publish(createMessage('recognizer_loop:utterance', { utterances: [SPEED], lang: 'en-US' }, { source: 'audio', destination: 'skills', session: { session_id: 'default' } }));
    await h.advance(POLL + 20);
    const t0 = only(wire.filter((w) => w.message.type === 'question:query')).at;
    expect(h.logs.filter((l) => l['msg'] === 'message dropped' && l['reason'] === 'not_requested_yet').map((l) => l['skill_id'])).toEqual(['cq.hasty']);
    expect(logsWith(h, 'common query decided').map((l) => [l['closed_by'], l['winner']])).toEqual([['no_claimant', null]]);
    expect(wire.filter((w) => w.message.type === 'ovos.utterance.handled').map((w) => w.at - t0)).toEqual([CLAIM_BOUND]);
    expect(hasty.actions).toEqual([]);
  });
});

describe('ovos-wire-today: the legacy dialect’s frames', () => {
  it('discovery: when the bus comes (back) up the plugin sends ovos-core’s discovery ping, from common_query in the default session; going down sends nothing', async () => {
    const bus = new StatusBus();
    const h = createHarness(config(BOTH), { bus });
    const discoveryPings = (): Message[] => h.of('ovos.common_query.ping').filter((m) => m.data['utterance'] === undefined);
    bus.report({ up: false, reason: 'socket closed' });
    await h.settle();
    expect(discoveryPings()).toEqual([]);
    bus.report({ up: true });
    await h.settle();
    expect(only(discoveryPings())).toEqual({ type: 'ovos.common_query.ping', data: {}, context: { source: 'common_query', session: { session_id: 'default' } } });
  });

  it('§6.1: question:query goes out in the same contest as the spec ping — it carries the ping’s contest_id, and the skill’s replies bring it back', async () => {
    const h = createHarness(config(BOTH));
    legacyCqSkill(h, 'cq.any', { conf: 0.8 });
    await h.settle();
    await ask(h, SPEED);
    const contestId = only(h.of('ovos.common_query.ping').filter((m) => m.data['utterance'] === SPEED)).context['contest_id'];
    expect(typeof contestId).toBe('string');
    expect(only(h.of('question:query')).context['contest_id']).toBe(contestId);
    expect(h.of('question:query.response').map((m) => m.context['contest_id'])).toEqual([contestId, contestId]);
  });

  it('ovos-core’s activation: the winner’s question:action carries it first in active_skills with the dispatch time in epoch seconds', async () => {
    const h = createHarness(config(BOTH));
    const wire = timedWire(h);
    legacyCqSkill(h, 'cq.any', { conf: 0.8 });
    await h.settle();
    await ask(h, SPEED);
    const action = only(wire.filter((w) => w.message.type === 'question:action.cq.any'));
    const session = action.message.context['session'] as JsonObject;
    expect((session['active_skills'] as unknown[])[0]).toEqual(['cq.any', action.at / 1000]);
  });

  it('dispatchFor rewrites only the dispatch of the legacy skill match selected; any other Match’s dispatch passes unchanged', async () => {
    const h = createHarness(config(BOTH));
    legacyCqSkill(h, 'cq.any', { conf: 0.8 });
    await h.settle();
    const message = entry(SPEED, S1, 'u1');
    const pending = matchOf(h.system.commonQuery, message, VIEW);
    await h.advance(CLAIM_BOUND);
    const match = await pending;
    expect(match?.skill_id).toBe('cq.any');
    const dispatch = createMessage('cq.any:common_query', { utterance: SPEED, lang: 'en-US' }, { session: S1, utterance_id: 'u1' });
    const request = { session: VIEW, utterances: [SPEED] };
    expect(h.system.commonQuery.dispatchFor(dispatch, { ...match!, skill_id: 'another.skill' }, request)).toEqual([dispatch]);
    expect(h.system.commonQuery.dispatchFor(dispatch, match!, request).map((m) => m.type)).toEqual(['cq.any.activate', 'question:action.cq.any']);
  });
});

describe('OVOS-COMMON-QUERY-1 §5.2: the end of an utterance and the early-start cache', () => {
  it('§5.2: the end of the utterance an early start served stops it — logged with reason utterance_handled', () => {
    const h = createHarness(config());
    const message = entry(FRANCE, S1, 'u1');
    h.system.commonQuery.onUtterance(message, 'en-US', VIEW);
    h.system.commonQuery.onHandled(message, VIEW);
    expect(h.system.commonQuery.cacheSize).toBe(0);
    expect(logsWith(h, 'contest stopped').map((l) => [l['reason'], l['utterance_id']])).toEqual([['utterance_handled', 'u1']]);
    expect(h.system.supervisor.size).toBe(0);
  });

  it('§5.2: the end of another utterance in the session (another utterance_id) leaves the early start alone', () => {
    const h = createHarness(config());
    h.system.commonQuery.onUtterance(entry(FRANCE, S1, 'u2'), 'en-US', VIEW);
    h.system.commonQuery.onHandled(entry(ELECTRICITY, S1, 'u1'), VIEW);
    expect(h.system.commonQuery.cacheSize).toBe(1);
    expect(logsWith(h, 'contest stopped')).toEqual([]);
    expect(h.system.supervisor.size).toBe(1);
  });

  it('§5.2: without an utterance_id on either side, an utterance’s end is not known to be the early start’s — it is left alone', () => {
    const h = createHarness(config());
    h.system.commonQuery.onUtterance(entry(FRANCE, S1, undefined), 'en-US', VIEW);
    h.system.commonQuery.onHandled(entry(FRANCE, S1, undefined), VIEW);
    expect(h.system.commonQuery.cacheSize).toBe(1);
    expect(logsWith(h, 'contest stopped')).toEqual([]);
  });

  it('§4.1 / §5.2: an utterance the gate rejected had no early start — its end passes through the plugin without error', async () => {
    const h = createHarness(config());
    fallbackSkill(h, 'fb', 10);
    await h.settle();
    await ask(h, 'play music');
    expect(spoken(h)).toEqual(['fb says hi']);
    expect(logsWith(h, 'pipeline plugin hook threw')).toEqual([]);
  });
});

describe('the plugin’s own checks and log lines', () => {
  it('§4.1: a gate reject is logged (debug, "question gate rejected") with the utterance, lang and the gate’s reason; an accepted question is not', async () => {
    const h = createHarness(config());
    fallbackSkill(h, 'fb', 10);
    await h.settle();
    await ask(h, FRANCE);
    expect(logsWith(h, 'question gate rejected')).toEqual([]);
    await ask(h, 'play music');
    // Met at the early start and again by the orchestrator's `declines`: classified, and logged, once per utterance.
    const rejected = logsWith(h, 'question gate rejected');
    expect(rejected).toHaveLength(1);
    expect(rejected[0]).toMatchObject({ utterance: 'play music', lang: 'en-US', level: 20, reason: 'command_word' });
    await ask(h, 'play music');
    expect(logsWith(h, 'question gate rejected')).toHaveLength(2);
  });

  it('§4.1: the gate\'s kept verdict is per utterance (entry message, words, lang): another utterance with the same words, or another language, is classified afresh', () => {
    const h = createHarness(config());
    const cq = h.system.commonQuery;
    const first = entry('play music', S1, 'u1');
    const again = entry('play music', { session_id: 's2' }, 'u2');
    const request = (message: Message, utterance: string, lang: string) => ({ utterances: [utterance], lang, message });
    expect(cq.declines(request(first, 'play music', 'en-US'))).toBe(true);
    expect(cq.declines(request(first, 'play music', 'en-US'))).toBe(true);
    expect(cq.declines(request(again, 'play music', 'en-US'))).toBe(true);
    expect(cq.declines(request(again, 'play music', 'de-DE'))).toBe(false); // no German command word: when in doubt, accept (§4.2)
    expect(cq.declines(request(again, 'play music', 'en-US'))).toBe(true);
    expect(cq.declines(request(again, FRANCE, 'en-US'))).toBe(false);
    expect(cq.declines(request(again, 'turn on the lights', 'en-US'))).toBe(true);
    expect(cq.declines({ utterances: [], lang: 'en-US', message: again })).toBe(true);
    expect(logsWith(h, 'question gate rejected').map((l) => [l['utterance'], l['lang']])).toEqual([
      ['play music', 'en-US'],
      ['play music', 'en-US'],
      ['play music', 'en-US'],
      ['turn on the lights', 'en-US'],
    ]);
  });

  it('§4.1: a match request without any utterance returns None and broadcasts nothing', async () => {
    const h = createHarness(config());
    await expect(matchOf(h.system.commonQuery, entry(FRANCE, S1, 'u1'), VIEW, [])).resolves.toBeNull();
    await h.settle();
    expect(h.of('ovos.common_query.ping')).toEqual([]);
  });

  it('§8 step 4: a reranker that works logs nothing; one that throws is logged as "reranker ignored" (warn, reason reranker_failed, its error)', async () => {
    for (const broken of [false, true]) {
      const h = createHarness(config(), {
        reranker: (_u, _l, survivors) => {
          if (broken) throw new Error('model offline');
          return survivors;
        },
      });
      cqSkill(h, 'wiki', { answer: 'Paris', conf: 0.8 });
      await h.settle();
      await ask(h, FRANCE);
      expect(spoken(h)).toEqual(['Paris']);
      const ignored = logsWith(h, 'reranker ignored');
      if (!broken) expect(ignored).toEqual([]);
      else {
        expect(only(ignored)).toMatchObject({ reason: 'reranker_failed', level: 40 });
        expect(String(only(ignored)['detail'])).toContain('model offline');
      }
    }
  });

  it('§10: a dispatch without slots.answer is refused (the handler throws) and nothing is spoken', async () => {
    const h = createHarness(config());
    const dispatch = createMessage('common_query:common_query', {}, { session: S1, utterance_id: 'u1' });
    const match: Match = { skill_id: 'common_query', intent_name: 'common_query', lang: 'en-US', utterance: FRANCE, slots: {} };
    await expect(h.system.commonQuery.handle(dispatch, match)).rejects.toThrow(/slots\.answer/);
    await h.settle();
    expect(h.of('ovos.utterance.speak')).toEqual([]);
  });

  it('PIPELINE-1 §10: ovos.pipeline.common_query.intents.list is answered with the one common_query intent, any language', async () => {
    const h = createHarness(config());
    h.bus.publish(createMessage('ovos.pipeline.common_query.intents.list', {}, { source: 'test', session: { session_id: 'default' } }));
    await h.settle();
    expect(only(h.of('ovos.pipeline.common_query.intents.list.response')).data).toEqual({
      pipeline_id: 'common_query',
      intents: [{ intent_name: 'common_query', skill_id: 'common_query', lang: '*' }],
    });
  });

  it('a plugin built without a dialects option speaks the spec dialect only: the spec ping, no question:query', async () => {
    const h = createHarness(config());
    const plugin = new CommonQueryPlugin(h.system.supervisor, config().commonQuery);
    cqSkill(h, 'wiki', { answer: 'Paris', conf: 0.8 });
    await h.settle();
    const pending = matchOf(plugin, entry(FRANCE, S1, 'u1'), VIEW);
    await h.advance(CLAIM_BOUND + 50);
    expect((await pending)?.slots).toEqual({ answer: 'Paris' });
    expect(h.of('ovos.common_query.ping').map((m) => m.data['utterance'])).toEqual([FRANCE]);
    expect(h.of('question:query')).toEqual([]);
  });
});

describe('PIPELINE-1 §4.4: an asynchronous reranker that answers after the match bound', () => {
  it('PIPELINE-1 §4.4 + COMMON-QUERY-1 §8 step 4: the utterance moves on at the bound; the late ranking is dropped and keeps no legacy winner', async () => {
    let rank: (() => void) | undefined;
    const h = createHarness(config(BOTH), {
      reranker: (_utterance, _lang, survivors) => new Promise((resolve) => (rank = () => resolve(survivors))),
    });
    legacyCqSkill(h, 'cq.wk', { answerAfterMs: 20, conf: 0.95 });
    fallbackSkill(h, 'fb', 90);
    await h.settle();
    h.utter(SPEED, { session: S1, utteranceId: 'u1' });
    await h.advance(config(BOTH).orchestrator.matchTimeoutMs + 10);
    expect(rank).toBeDefined();
    expect(h.of('ovos.intent.matched').map((m) => m.data['skill_id'])).toEqual(['fb']);
    expect(h.of('ovos.utterance.handled')).toHaveLength(1);

    rank!();
    await h.settle();
    expect(h.system.commonQuery.pendingDispatches).toBe(0);
    expect(h.wire.filter((m) => m.type.startsWith('question:action'))).toEqual([]);
    expect(h.of('ovos.utterance.handled')).toHaveLength(1);
  });
});
