/**
 * The common query pipeline plugin, OVOS-COMMON-QUERY-1. `match` is blocking by design (§2.1); the early start
 * (§5) hides most of it: the orchestrator calls `onUtterance` the moment it consumes `ovos.utterance.handle` (with
 * the utterance_id it stamped), so the contest runs in parallel with the stages before `common_query`.
 *
 * The early-start cache (§5.2) holds at most one entry per session: the contest — in flight or finished — for one
 * (session_id, utterance) and the utterance_id it was started for, never a selected answer. `match` takes the
 * entry only for that exact string AND that utterance_id (the same question asked twice is two contests), joins
 * a running contest instead of restarting it, discards it when the live `lang` differs (§5.1), and always filters
 * and selects against the live session (§8). Every new utterance in the session evicts it, whatever its pipeline
 * (§5.2); so does the end of the utterance it served.
 *
 * The roster: every skill that has ever ponged, learned from the bus (any pong, even one too late to count), and
 * whether it answers every poll: it has sent `can_answer: false` and answered the last `PROMOTE_AFTER` polls it was
 * known for in time. The poll closes early on it (see the machine). A skill leaves the roster when its connection
 * closes (embedded bus), and the contests waiting for it stop waiting (`GONE`); one that misses a poll is no longer
 * waited for past the claim bound until it has answered `PROMOTE_AFTER` polls in a row again — so a skill that
 * answers only some polls never makes the poll wait past the claim bound.
 *
 * The cold start: until `commonQuery.warmupPolls` polls have run to their end since the plugin started (or, on the
 * client of an existing bus, since it last came back; or since skills left the roster with their connection — a
 * skills process restarting), the roster cannot be trusted to know every skill: a skill that follows §6.2 is unknown
 * until it first claims, and the first questions after a start are when skills answer slowest. Every poll begun
 * then is cold (`awaitFirstClaim`): with no claim in hand at the claim bound it waits on for its first claim, and it
 * waits for every skill on the roster as for one known to answer every poll, up to the ceiling — so a claim late for
 * the claim bound (a first call, a burst's load) is not lost to the cold start; and (the spec dialect on) it stays
 * open one claim bound past its first claim, every known skill heard or not, for the claims of skills nobody knows yet
 * (the machine's `spreading`). A cold poll teaches who the skills are, which claim late and which
 * missed it, but earns nobody a streak: a skill that answers in 200 ms is not promoted by polls that waited past the
 * claim bound.
 */
import type { Unsubscribe } from '../../bus/bus.js';
import type { Config } from '../../config/defaults.js';
import { createMessage, forward, reply, stringField, utteranceIdOf, withContext, type JsonObject, type Message } from '../../bus/message.js';
import { legacyQuestion, legacyQuestionAction, legacyTopics } from '../../dialect/legacy-dialect.js';
import type { SessionView } from '../../bus/session.js';
import { clipList } from '../../log/logger.js';
import { topics } from '../../dialect/spec-dialect.js';
import type { IntentListing, Match, MatchRequest, PipelineStage } from '../../pipeline/plugin.js';
import type { Contest, Supervisor } from '../../supervisor/supervisor.js';
import {
  commonQueryMachine,
  type CommonQueryEvent,
} from '../../../machines/common-query/common-query.machine.js';
import { classifyQuestion } from './gate.js';
import { selectWithReranker, type Reranker, type SelectionPolicy } from '../../../machines/common-query/selection.js';

/** Where `match` leaves a legacy winner for `dispatchFor`: the utterance (session, utterance_id) it was selected for. */
const winnerKey = (sessionId: string, message: Message): string => `${sessionId}\u0000${utteranceIdOf(message) ?? ''}`;

/** More skills than this on the roster are not remembered (each is a string per contest input). */
const MAX_ROSTER = 1024;
/**
 * Silent polls in a row (each waited for it to the ceiling) before a skill known to claim late is not waited for any
 * more: a skill that claims only some questions, and stays silent on the others as §6.2 asks, is not forgotten (and
 * its next claim lost) by one silence.
 */
export const SLOW_CLAIM_MISSES = 3;

/** Polls answered in a row (true or false) before a skill that says `can_answer: false` is waited for past the claim bound. */
export const PROMOTE_AFTER = 3;

export type CommonQuerySettings = Config['commonQuery'];

type Machine = typeof commonQueryMachine;

interface CacheEntry {
  readonly utterance: string;
  readonly lang: string;
  readonly utteranceId: string | undefined;
  readonly contest: Contest<Machine>;
  joined: boolean;
}

interface RosterEntry {
  /**
   * It may answer every poll: it has sent `can_answer: false` at least once, or it is a workshop skill (they reply to
   * every `question:query`, `searching` first — ovos-wire-today.md), so it is promoted like any skill that says no.
   */
  saysNo: boolean;
  /** Polls in a row, of those it was known for, that it answered in time. */
  streak: number;
  /** A classic CommonQuerySkill (legacy discovery said so): dispatched on the bare `question:action`. */
  classic: boolean;
  /**
   * It claims after the claim bound but inside the poll ceiling (§6.3): waited for up to the ceiling from its next
   * question on, until it stays silent through `SLOW_CLAIM_MISSES` polls in a row that waited for it.
   */
  slowClaims: boolean;
  /** Polls in a row that waited for it as a late claimant and heard nothing. */
  slowMisses: number;
}

/** What one live contest has learnt beyond its machine. */
interface ContestNotes {
  /** skill → the connection its pong in that contest came over (embedded bus). */
  readonly pongVia: Map<string, string>;
  /** Skills whose claim was unasked (legacy `searching: true`): their later decline settles the claim. */
  readonly unasked: Set<string>;
}

/** A legacy winner between `match` and its dispatch. */
interface LegacyWinner {
  readonly skillId: string;
  readonly classic: boolean;
  readonly data: JsonObject;
}

const answersEveryPoll = (entry: RosterEntry): boolean => entry.saysNo && entry.streak >= PROMOTE_AFTER;
/** Waited for past the claim bound (up to the poll ceiling): it answers every poll, or it claims late but in time. */
const waitedFor = (entry: RosterEntry): boolean => answersEveryPoll(entry) || entry.slowClaims;

export class CommonQueryPlugin implements PipelineStage {
  readonly pipelineId: string;
  readonly #supervisor: Supervisor;
  readonly #settings: CommonQuerySettings;
  readonly #reranker: Reranker | undefined;
  readonly #machine;
  /** session_id → the one early-start entry of that session (§5.2). */
  readonly #cache = new Map<string, CacheEntry>();
  readonly #roster = new Map<string, RosterEntry>();
  /** Skills that left the roster with their connection and have not been heard from since (oldest first, bounded). */
  readonly #departed = new Set<string>();
  /** Live contests: told when a skill becomes unreachable. */
  readonly #contests = new Set<Contest<Machine>>();
  /** Live contest id → what it has learnt beyond its machine. */
  readonly #notes = new Map<string, ContestNotes>();
  /** contest id → when its poll pinged, for a poll window (`#rememberPing`). */
  readonly #pingedAt = new Map<string, number>();
  /** `keyOf(session, utterance_id)` → the legacy skill whose answer `match` selected, until its dispatch. */
  readonly #legacyWinners = new Map<string, LegacyWinner>();
  /** The dialects asked in every poll (Config['dialects']): the spec ping, ovos-core's question, or both. */
  readonly #dialects: { readonly spec: boolean; readonly legacy: boolean };
  /** The bus status listeners (the cold start's; the legacy discovery's), let go by `close`. */
  readonly #unsubscribeStatus: Unsubscribe[] = [];
  /** Polls run to their end since the plugin started or its bus last came back: below `warmupPolls`, a poll is cold. */
  #warmPolls = 0;
  #lastGate: { readonly entry: Message; readonly utterance: string; readonly lang: string; readonly accept: boolean } | undefined;

  constructor(supervisor: Supervisor, settings: CommonQuerySettings, options: { reranker?: Reranker; dialects?: Config['dialects'] } = {}) {
    this.pipelineId = settings.pipelineId;
    this.#supervisor = supervisor;
    this.#settings = settings;
    this.#reranker = options.reranker;
    this.#dialects = options.dialects ?? { spec: true, legacy: false };
    const bus = supervisor.bus;
    // The bus came back: skills may have restarted or changed meanwhile — a cold start again.
    this.#unsubscribeStatus.push(bus.onStatus((status) => {
      if (status.up) this.#warmPolls = 0;
    }));
    if (this.#dialects.legacy) this.#discoverLegacy();
    this.#machine = commonQueryMachine.provide({
      actions: {
        // §6.1: broadcast, session in context (derived from the utterance so session and utterance_id ride along).
        // Legacy dialect: ovos-core's question too, in the same contest — its replies carry the same ids back.
        sendPing: ({ context, self }) => {
          if (this.#dialects.spec) {
            const ping = reply(context.origin, topics.commonQueryPing, { utterance: context.utterance });
            const { destination: _broadcast, ...routing } = ping.context;
            bus.publish({ ...ping, context: { ...routing, contest_id: supervisor.contestIdOf(self) } });
          }
          if (this.#dialects.legacy) bus.publish(withContext(legacyQuestion(context.origin, context.utterance, this.pipelineId), { contest_id: supervisor.contestIdOf(self) }));
        },
        // §7.1: every claimant in parallel (an unasked claimant's answer is already on its way).
        sendRequests: ({ context, self }) => {
          for (const claimant of context.claimants) {
            if (claimant.unasked === true) continue;
            const request = reply(context.origin, topics.commonQueryRequest(claimant.skill_id), { utterance: context.utterance });
            bus.publish(withContext(request, { contest_id: supervisor.contestIdOf(self) }));
          }
        },
      },
    });
    // The roster learns from every valid pong on the bus, whichever contest (if any) it is for; a live contest
    // remembers which connection each of its pongs came over.
    supervisor.on('common_query.pong', (inbound, message) => {
      this.#heard(inbound.skill_id, { saysNo: !inbound.can_answer });
      if (inbound.can_answer) this.#claimLatency(inbound.skill_id, stringField(message.context, 'contest_id'));
      const via = this.#notes.get(stringField(message.context, 'contest_id') ?? '')?.pongVia;
      const connection = supervisor.connectionOf(message);
      if (via !== undefined && connection !== undefined && !via.has(inbound.skill_id)) via.set(inbound.skill_id, connection);
    });
    supervisor.onConnectionClosed((connection, skills, spoke) => {
      // A skill that can no longer answer a contest is not waited for any longer (§6.3, §7.2): unreachable
      // everywhere, or its pong in that contest came over this connection (the same skill_id elsewhere is another
      // instance, which did not claim here).
      for (const contest of this.#contests) {
        const via = this.#notes.get(contest.info.id)?.pongVia;
        for (const skill_id of spoke) if (skills.includes(skill_id) || via?.get(skill_id) === connection) contest.send({ type: 'GONE', skill_id });
      }
      const left = skills.filter((skill) => this.#roster.delete(skill));
      for (const skill of left) {
        this.#departed.add(skill);
        if (this.#departed.size > MAX_ROSTER) this.#departed.delete(this.#departed.values().next().value!);
      }
      if (left.length === 0) return;
      supervisor.logger.info({ reason: 'connection_closed', skills: clipList(left) }, 'common-query skills left the roster');
      // They may come back (a skills process restarting), silent until they claim: a cold start again.
      this.#warmPolls = 0;
    });
  }

  /** §5 early start; `inPipeline: false` still evicts (§5.2: evicted unconditionally on a new utterance). */
  onUtterance(entry: Message, lang: string, session: SessionView, inPipeline = true): void {
    this.#evictSession(session.sessionId, 'new_utterance');
    if (!inPipeline || !this.#settings.earlyStart) return;
    const utterancesRaw = entry.data['utterances'];
    const utterance = Array.isArray(utterancesRaw) && typeof utterancesRaw[0] === 'string' ? utterancesRaw[0] : undefined;
    if (utterance === undefined || !this.#gate(entry, utterance, lang)) return;
    const contest = this.#start(entry, utterance, lang, session, null);
    this.#cache.set(session.sessionId, { utterance, lang, utteranceId: utteranceIdOf(entry), contest, joined: false });
  }

  /** The utterance this entry served is over: whatever is left of its early start goes. */
  onHandled(entry: Message, session: SessionView): void {
    this.#legacyWinners.delete(winnerKey(session.sessionId, entry));
    const cached = this.#cache.get(session.sessionId);
    if (cached === undefined || cached.utteranceId === undefined || cached.utteranceId !== utteranceIdOf(entry)) return;
    this.#cache.delete(session.sessionId);
    if (!cached.joined) cached.contest.stop('utterance_handled');
  }

  /**
   * Legacy dialect: the common-query skills of today's OVOS announce themselves (ovos-core's discovery ping, sent at
   * start and whenever the bus comes back; each skill also pongs once at its own start-up) and join the roster, so a
   * poll waits for their claim as for any known skill's (rule 1), and a classic skill is dispatched its way.
   */
  #discoverLegacy(): void {
    this.#supervisor.on('common_query.discovered', (inbound) => {
      this.#heard(inbound.skill_id, { saysNo: true, classic: inbound.classic });
    });
    this.#unsubscribeStatus.push(this.#supervisor.bus.onStatus((status) => {
      if (status.up) this.#supervisor.bus.publish(createMessage(legacyTopics.commonQueryPing, {}, { source: this.pipelineId, session: { session_id: 'default' } }));
    }));
  }

  /** Stop listening to the bus (the system closes): a closed plugin publishes nothing when the bus comes back. */
  close(): void {
    for (const unsubscribe of this.#unsubscribeStatus.splice(0)) unsubscribe();
  }

  /** Skills on the roster right now, and which of them answer every poll (for tests and inspection). */
  roster(): ReadonlyArray<{ readonly skill_id: string; readonly answersEveryPoll: boolean }> {
    return [...this.#roster].map(([skill_id, entry]) => ({ skill_id, answersEveryPoll: answersEveryPoll(entry) }));
  }

  /** A skill was heard from: a pong (`saysNo` when it was `can_answer: false`) or a legacy discovery (`classic` set). */
  #heard(skillId: string, { saysNo, classic }: { readonly saysNo: boolean; readonly classic?: boolean }): void {
    this.#departed.delete(skillId);
    const known = this.#roster.get(skillId);
    if (known === undefined) {
      if (this.#roster.size >= MAX_ROSTER) return;
      this.#roster.set(skillId, { saysNo, streak: 0, classic: classic === true, slowClaims: false, slowMisses: 0 });
      const heard = classic === undefined ? { can_answer: !saysNo } : { dialect: 'legacy', classic };
      this.#supervisor.logger.info({ skill_id: skillId, ...heard }, 'common-query skill joined the roster');
      return;
    }
    if (saysNo) known.saysNo = true;
    if (classic !== undefined) known.classic = classic;
  }

  /**
   * OVOS-COMMON-QUERY-1 §6.3: a claim that reached us at or after the claim bound but before the poll ceiling, counted
   * from its contest's ping (its poll may have closed already: the claim is lost) teaches the roster that this skill
   * needs longer — from its next question on, the poll waits for it up to the ceiling, polls already running included
   * (the next question may have been asked before this claim came). A skill claiming at 200 ms loses at most its
   * first question.
   */
  #claimLatency(skillId: string, contestId: string | undefined): void {
    const pingedAt = contestId === undefined ? undefined : this.#pingedAt.get(contestId);
    const entry = this.#roster.get(skillId);
    if (pingedAt === undefined || entry === undefined || entry.slowClaims) return;
    const after = this.#supervisor.clock.now() - pingedAt;
    const bound = Math.min(this.#settings.pollClaimBoundMs, this.#settings.pollWindowMs);
    if (after < bound || after >= this.#settings.pollWindowMs) return;
    entry.slowClaims = true;
    // A poll already running (the next question, asked before this claim came) waits for it too.
    for (const contest of this.#contests) contest.send({ type: 'AWAIT', skill_id: skillId });
    this.#supervisor.logger.info(
      { reason: 'slow_claim', skill_id: skillId, after_ms: after, poll_claim_bound_ms: bound, poll_window_ms: this.#settings.pollWindowMs },
      'common-query skill claims after the claim bound: waited for up to the poll ceiling from its next question on',
    );
  }

  /**
   * After a finished poll: every skill known when it started (or waited for) either answered in time (its streak
   * grows) or missed it (its streak restarts, so one known to answer every poll is not waited for past the claim
   * bound any more; one known to claim late is not after `SLOW_CLAIM_MISSES` such polls in a row — each logged when
   * it stops being waited for).
   */
  #tally(known: readonly string[], waited: readonly string[], polled: readonly string[], contest: Contest<Machine>, credit: boolean): void {
    for (const skillId of new Set([...known, ...waited])) {
      const entry = this.#roster.get(skillId);
      if (entry === undefined) continue;
      if (polled.includes(skillId)) {
        if (credit) entry.streak += 1;
        entry.slowMisses = 0;
        continue;
      }
      entry.streak = 0;
      if (waited.includes(skillId) && entry.slowClaims && ++entry.slowMisses >= SLOW_CLAIM_MISSES) {
        entry.slowClaims = false;
        entry.slowMisses = 0;
      }
      if (waited.includes(skillId) && !waitedFor(entry)) {
        contest.logger.warn({ reason: 'poll_missed', skill_id: skillId }, 'common-query skill missed a poll: no longer waited for past the claim bound');
      }
    }
  }

  /** §4.1: an utterance the gate rejects (or none at all) returns None without broadcasting. */
  declines(request: Pick<MatchRequest, 'utterances' | 'lang' | 'message'>): boolean {
    const utterance = request.utterances[0];
    return utterance === undefined || !this.#gate(request.message, utterance, request.lang);
  }

  async match(request: MatchRequest): Promise<Match | null> {
    if (this.declines(request)) return null;
    const utterance = request.utterances[0]!;
    const policy: SelectionPolicy = {
      minConfidence: this.#settings.minConfidence,
      fastWinConfidence: this.#settings.fastWinConfidence,
      blacklistedSkills: request.session.blacklistedSkills,
    };

    let contest: Contest<Machine> | undefined;
    const cached = this.#take(request.session.sessionId, utterance, utteranceIdOf(request.message));
    if (cached !== undefined && cached.lang !== request.lang) {
      // §5.1: responses collected under another language are discarded and the contest re-run.
      cached.contest.logger.info({ reason: 'lang_changed', cached_lang: cached.lang, lang: request.lang }, 'early-start cache discarded');
      cached.contest.stop('lang_changed');
    } else if (cached !== undefined) {
      cached.joined = true;
      contest = cached.contest;
      contest.send({ type: 'JOIN', policy, at: this.#supervisor.clock.now() }); // a finished contest ignores it; its output is already final
    }
    contest ??= this.#start(request.message, utterance, request.lang, request.session, policy);

    const result = await contest.until(request.signal);
    if (result.status !== 'done') return null;

    // §8 against the live session, then §9. A legacy skill speaks its answer itself: one that has left (its connection
    // closed, and it has not announced itself again) cannot, so its answer does not compete (src/plugins/README.md "Legacy
    // common-query skills") — the plugin speaks a spec skill's answer, whoever has gone.
    const candidates = this.#departed.size === 0 ? result.output.responses : result.output.responses.filter((r) => r.reply === undefined || !this.#departed.has(r.skill_id));
    const selection = await selectWithReranker(utterance, request.lang, candidates, policy, this.#reranker);
    // An asynchronous reranker may answer after the orchestrator gave up on this stage (PIPELINE-1 §4.4): the
    // utterance has moved on, maybe ended, and a winner kept for its dispatch now would never be let go.
    if (request.signal.aborted) return null;
    if (selection.rerankerError !== undefined) contest.logger.warn({ reason: 'reranker_failed', detail: selection.rerankerError }, 'reranker ignored');
    const winner = selection.winner;
    contest.logger.info(
      { claimants: result.output.claimants.length, responses: result.output.responses.length, closed_by: result.output.closedBy, winner: winner?.skill_id ?? null, conf: winner?.conf },
      'common query decided',
    );
    if (winner === null) return null;
    // A legacy winner speaks itself (ovos-workshop skills do, with their callback): the Match targets the skill, and
    // `dispatchFor` hands it its own reply back on `question:action`.
    const legacy = result.output.responses[winner.order]?.reply;
    if (legacy !== undefined) {
      const classic = this.#roster.get(winner.skill_id)?.classic === true || legacy['handles_speech'] === true;
      this.#legacyWinners.set(winnerKey(request.session.sessionId, request.message), { skillId: winner.skill_id, classic, data: legacy });
      return {
        skill_id: winner.skill_id,
        intent_name: 'common_query',
        lang: request.lang,
        utterance,
        slots: { answer: winner.answer },
        updated_session: request.session.raw,
      };
    }
    return {
      skill_id: this.pipelineId,
      intent_name: 'common_query',
      lang: request.lang,
      utterance,
      slots: { answer: winner.answer },
      updated_session: request.session.raw, // §9: the inbound session, unmodified
    };
  }

  /** §10: speak the selected answer; no re-dispatch, no collection. */
  async handle(dispatch: Message, match: Match): Promise<void> {
    const answer = match.slots['answer'];
    if (answer === undefined) throw new Error('dispatch without slots.answer');
    // PIPELINE-1 §9.6: derived from the dispatch by forward, so it keeps travelling towards the utterance's source.
    this.#supervisor.bus.publish(forward(dispatch, topics.utteranceSpeak, { utterance: answer, lang: match.lang }));
  }

  /**
   * A legacy winner is dispatched as ovos-core does — `<skill_id>.activate`, then `question:action[.<skill_id>]` with
   * its own reply merged in — and the orchestrator awaits its `mycroft.skill.handler.*` and its own handled.
   */
  dispatchFor(dispatch: Message, match: Match, utterance: { readonly session: SessionView; readonly utterances: readonly string[] }): readonly Message[] {
    const key = winnerKey(utterance.session.sessionId, dispatch);
    const winner = this.#legacyWinners.get(key);
    if (winner === undefined || winner.skillId !== match.skill_id) return [dispatch];
    this.#legacyWinners.delete(key);
    return legacyQuestionAction(dispatch, winner.skillId, winner.classic, utterance.utterances, winner.data, this.#supervisor.clock.now() / 1000);
  }

  intents(): readonly IntentListing[] {
    return [{ intent_name: 'common_query', skill_id: this.pipelineId, lang: '*' }];
  }

  /**
   * The gate's verdict. One utterance meets it up to three times (early start, the orchestrator's `declines`,
   * `match`), each time with the same entry message: the last verdict is kept per entry, so each utterance is
   * classified (and a rejection logged) once.
   */
  #gate(entry: Message, utterance: string, lang: string): boolean {
    const last = this.#lastGate;
    if (last !== undefined && last.entry === entry && last.utterance === utterance && last.lang === lang) return last.accept;
    const verdict = classifyQuestion(utterance, lang, this.#settings.gate);
    if (!verdict.accept) this.#supervisor.logger.debug({ utterance, lang, reason: verdict.reason }, 'question gate rejected');
    this.#lastGate = { entry, utterance, lang, accept: verdict.accept };
    return verdict.accept;
  }

  #start(entry: Message, utterance: string, lang: string, session: SessionView, policy: SelectionPolicy | null): Contest<Machine> {
    // §6.1 / §7.1: skills read the language from context.session.lang — so every message of this contest carries
    // the session it runs for, with the resolved language (the live one when `match` re-runs it, §5.1).
    const origin = withContext(entry, { session: { ...session.raw, session_id: session.sessionId, lang } });
    const clock = this.#supervisor.clock;
    const knownSkills = [...this.#roster.keys()];
    const answeringSkills = knownSkills.filter((skill) => {
      const entry = this.#roster.get(skill);
      return entry !== undefined && waitedFor(entry);
    });
    // The cold start (see the top of this file): a poll with no claim at the claim bound waits for its first one, and
    // every skill on the roster is waited for past the claim bound (a claim late under the load of a burst is heard).
    const cold = this.#warmPolls < this.#settings.warmupPolls;
    // The ping goes out as the contest starts: a pong's delay after this is the bus's round trip right now (§7.2).
    const pingedAt = clock.now();
    const contest = this.#supervisor.spawn({
      kind: 'common_query',
      label: this.pipelineId,
      sessionId: session.sessionId,
      utteranceId: utteranceIdOf(entry),
      logic: this.#machine,
      input: {
        origin,
        utterance,
        lang,
        pollWindowMs: this.#settings.pollWindowMs,
        pollClaimBoundMs: this.#settings.pollClaimBoundMs,
        knownSkills,
        answeringSkills: cold ? knownSkills : answeringSkills,
        // Legacy skills announce themselves; with the spec dialect off no silent, unknown skill can claim.
        rosterComplete: !this.#dialects.spec,
        awaitFirstClaim: cold,
        collectionInitialMs: this.#settings.collectionInitialMs,
        collectionAllowanceMs: this.#settings.collectionAllowanceMs,
        collectionCeilingMs: this.#settings.collectionCeilingMs,
        policy,
      },
      routes: ['common_query.pong', 'common_query.response'],
      // §6.3 / §7.1: a pong or response for another utterance is not this contest's.
      correlate: (inbound): CommonQueryEvent | 'wrong_utterance' | 'not_awaited' => {
        if (inbound.kind === 'common_query.pong') {
          if (inbound.utterance !== utterance) return 'wrong_utterance';
          if (inbound.unasked === true) notes.unasked.add(inbound.skill_id);
          return {
            type: 'PONG' as const,
            skill_id: inbound.skill_id,
            can_answer: inbound.can_answer,
            after_ms: clock.now() - pingedAt,
            ...(inbound.latency_ms === undefined ? {} : { latency_ms: inbound.latency_ms }),
            ...(inbound.unasked === true ? { unasked: true as const } : {}),
          };
        }
        if (inbound.kind === 'common_query.response') {
          if (inbound.utterance !== utterance) return 'wrong_utterance';
          // A legacy decline (`searching: false`) settles the skill's unasked claim; without one it is its "no" to the poll.
          if (inbound.legacy !== undefined && inbound.answer === undefined && !notes.unasked.has(inbound.skill_id)) {
            return { type: 'PONG' as const, skill_id: inbound.skill_id, can_answer: false };
          }
          return {
            type: 'RESPONSE' as const,
            skill_id: inbound.skill_id,
            receivedAt: clock.now(),
            ...(inbound.answer === undefined ? {} : { answer: inbound.answer }),
            ...(inbound.conf === undefined ? {} : { conf: inbound.conf }),
            ...(inbound.legacy === undefined ? {} : { reply: inbound.legacy }),
          };
        }
        return 'not_awaited';
      },
    });
    const notes: ContestNotes = { pongVia: new Map(), unasked: new Set() };
    this.#contests.add(contest);
    this.#notes.set(contest.info.id, notes);
    this.#rememberPing(contest.info.id, pingedAt);
    void contest.done.then((result) => {
      this.#contests.delete(contest);
      this.#notes.delete(contest.info.id);
      if (result.status !== 'done') return;
      if (cold) this.#warmPolls += 1;
      // Only the skills a warm poll would have waited for count as waited (a silent one is no miss of a cold poll).
      const waited = cold ? result.output.waited.filter((skill) => answeringSkills.includes(skill) || !knownSkills.includes(skill)) : result.output.waited;
      this.#tally(knownSkills, waited, result.output.polled, contest, !cold);
    });
    return contest;
  }

  /**
   * When each poll pinged, kept for a poll window after it (a late claim may come after its contest ended: an
   * unclaimed question ends at the claim bound), oldest first.
   */
  #rememberPing(contestId: string, pingedAt: number): void {
    for (const [id, at] of this.#pingedAt) {
      if (pingedAt - at <= this.#settings.pollWindowMs) break;
      this.#pingedAt.delete(id);
    }
    this.#pingedAt.set(contestId, pingedAt);
  }

  /** §5.2: the entry is returned only for its exact utterance string and the utterance_id it was started for. */
  #take(sessionId: string, utterance: string, utteranceId: string | undefined): CacheEntry | undefined {
    const entry = this.#cache.get(sessionId);
    // An early start begun from an entry without an utterance_id (ovos-core's, seen on the bus before its pipeline
    // asks us) is the same utterance's when the session and the text agree.
    if (entry === undefined || entry.utterance !== utterance || (entry.utteranceId !== undefined && entry.utteranceId !== utteranceId)) return undefined;
    this.#cache.delete(sessionId); // consumed on read
    return entry;
  }

  #evictSession(sessionId: string, reason: string): void {
    const entry = this.#cache.get(sessionId);
    if (entry === undefined) return;
    this.#cache.delete(sessionId);
    if (!entry.joined) entry.contest.stop(reason);
  }

  /** Legacy winners chosen and not yet dispatched (for tests and inspection; 0 when idle). */
  get pendingDispatches(): number {
    return this.#legacyWinners.size;
  }

  /** Cached early starts right now (for tests and inspection). */
  get cacheSize(): number {
    return this.#cache.size;
  }
}
