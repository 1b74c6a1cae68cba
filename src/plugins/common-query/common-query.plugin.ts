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
 */
import type { Config } from '../../config/defaults.js';
import { createMessage, forward, reply, stringField, utteranceIdOf, withContext, type Message } from '../../bus/message.js';
import { legacyTopics } from '../../dialect/legacy-dialect.js';
import type { SessionView } from '../../bus/session.js';
import { topics } from '../../dialect/spec-dialect.js';
import type { IntentListing, Match, MatchRequest, PipelineStage } from '../../pipeline/plugin.js';
import type { Contest, Supervisor } from '../../supervisor/supervisor.js';
import {
  commonQueryMachine,
  type CommonQueryEvent,
} from '../../../machines/common-query/common-query.machine.js';
import { classifyQuestion } from './gate.js';
import { selectWithReranker, type Reranker, type SelectionPolicy } from './selection.js';

/** More skills than this on the roster are not remembered (each is a string per contest input). */
const MAX_ROSTER = 1024;
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
  /** It has sent `can_answer: false` at least once: it may answer every poll. */
  saysNo: boolean;
  /** Polls in a row, of those it was known for, that it answered in time. */
  streak: number;
}

const answersEveryPoll = (entry: RosterEntry): boolean => entry.saysNo && entry.streak >= PROMOTE_AFTER;

export class CommonQueryPlugin implements PipelineStage {
  readonly pipelineId: string;
  readonly #supervisor: Supervisor;
  readonly #settings: CommonQuerySettings;
  readonly #reranker: Reranker | undefined;
  readonly #machine;
  /** session_id → the one early-start entry of that session (§5.2). */
  readonly #cache = new Map<string, CacheEntry>();
  readonly #roster = new Map<string, RosterEntry>();
  /** Live contests: told when a skill becomes unreachable. */
  readonly #contests = new Set<Contest<Machine>>();
  /** Live contest id → skill → the connection its pong in that contest came over (embedded bus). */
  readonly #pongVia = new Map<string, Map<string, string>>();

  constructor(supervisor: Supervisor, settings: CommonQuerySettings, options: { reranker?: Reranker; legacyDiscovery?: boolean } = {}) {
    this.pipelineId = settings.pipelineId;
    this.#supervisor = supervisor;
    this.#settings = settings;
    this.#reranker = options.reranker;
    const bus = supervisor.bus;
    if (options.legacyDiscovery === true) this.#discoverLegacy();
    this.#machine = commonQueryMachine.provide({
      actions: {
        // §6.1: broadcast, session in context (derived from the utterance so session and utterance_id ride along).
        sendPing: ({ context, self }) => {
          const ping = reply(context.origin, topics.commonQueryPing, { utterance: context.utterance });
          const { destination: _broadcast, ...routing } = ping.context;
          bus.publish({ ...ping, context: { ...routing, contest_id: self.id } });
        },
        // §7.1: every claimant in parallel.
        sendRequests: ({ context, self }) => {
          for (const claimant of context.claimants) {
            const request = reply(context.origin, topics.commonQueryRequest(claimant.skill_id), { utterance: context.utterance });
            bus.publish(withContext(request, { contest_id: self.id }));
          }
        },
      },
    });
    // The roster learns from every valid pong on the bus, whichever contest (if any) it is for; a live contest
    // remembers which connection each of its pongs came over.
    supervisor.on('common_query.pong', (inbound, message) => {
      this.#heard(inbound.skill_id, inbound.can_answer);
      const via = this.#pongVia.get(stringField(message.context, 'contest_id') ?? '');
      const connection = supervisor.connectionOf(message);
      if (via !== undefined && connection !== undefined && !via.has(inbound.skill_id)) via.set(inbound.skill_id, connection);
    });
    supervisor.onConnectionClosed((connection, skills, spoke) => {
      // A skill that can no longer answer a contest is not waited for any longer (§6.3, §7.2): unreachable
      // everywhere, or its pong in that contest came over this connection (the same skill_id elsewhere is another
      // instance, which did not claim here).
      for (const contest of this.#contests) {
        const via = this.#pongVia.get(contest.info.id);
        for (const skill_id of spoke) if (skills.includes(skill_id) || via?.get(skill_id) === connection) contest.send({ type: 'GONE', skill_id });
      }
      const left = skills.filter((skill) => this.#roster.delete(skill));
      if (left.length > 0) supervisor.logger.info({ reason: 'connection_closed', skills: left }, 'common-query skills left the roster');
    });
  }

  /** §5 early start; `inPipeline: false` still evicts (§5.2: evicted unconditionally on a new utterance). */
  onUtterance(entry: Message, lang: string, session: SessionView, inPipeline = true): void {
    this.#evictSession(session.sessionId, 'new_utterance');
    if (!inPipeline || !this.#settings.earlyStart) return;
    const utterancesRaw = entry.data['utterances'];
    const utterance = Array.isArray(utterancesRaw) && typeof utterancesRaw[0] === 'string' ? utterancesRaw[0] : undefined;
    if (utterance === undefined || !this.#gate(utterance, lang)) return;
    const contest = this.#start(entry, utterance, lang, session, null);
    this.#cache.set(session.sessionId, { utterance, lang, utteranceId: utteranceIdOf(entry), contest, joined: false });
  }

  /** The utterance this entry served is over: whatever is left of its early start goes. */
  onHandled(entry: Message, session: SessionView): void {
    const cached = this.#cache.get(session.sessionId);
    if (cached === undefined || cached.utteranceId === undefined || cached.utteranceId !== utteranceIdOf(entry)) return;
    this.#cache.delete(session.sessionId);
    if (!cached.joined) cached.contest.stop('utterance_handled');
  }

  /**
   * Legacy dialect: ask the common-query skills of today's OVOS to announce themselves (ovos-core's discovery ping,
   * at start and whenever the bus comes back), and say — once per skill — that they cannot take part yet: their
   * `question:query` flow is not implemented (issue 8). Better a warn than an install that silently answers less.
   */
  #discoverLegacy(): void {
    const announced = new Set<string>();
    this.#supervisor.on('common_query.discovered', (inbound) => {
      if (announced.has(inbound.skill_id) || announced.size >= MAX_ROSTER) return;
      announced.add(inbound.skill_id);
      this.#supervisor.logger.warn(
        { reason: 'legacy_common_query_unsupported', skill_id: inbound.skill_id, classic: inbound.classic },
        'legacy common-query skill discovered: its question:query flow is not supported yet, it will not be asked',
      );
    });
    this.#supervisor.bus.onStatus((status) => {
      if (status.up) this.#supervisor.bus.publish(createMessage(legacyTopics.commonQueryPing, {}, { source: this.pipelineId, session: { session_id: 'default' } }));
    });
  }

  /** Skills on the roster right now, and which of them answer every poll (for tests and inspection). */
  roster(): ReadonlyArray<{ readonly skill_id: string; readonly answersEveryPoll: boolean }> {
    return [...this.#roster].map(([skill_id, entry]) => ({ skill_id, answersEveryPoll: answersEveryPoll(entry) }));
  }

  #heard(skillId: string, canAnswer: boolean): void {
    const known = this.#roster.get(skillId);
    if (known === undefined) {
      if (this.#roster.size >= MAX_ROSTER) return;
      this.#roster.set(skillId, { saysNo: !canAnswer, streak: 0 });
      this.#supervisor.logger.info({ skill_id: skillId, can_answer: canAnswer }, 'common-query skill joined the roster');
    } else if (!canAnswer) {
      known.saysNo = true;
    }
  }

  /**
   * After a finished poll: every skill known when it started either answered in time (its streak grows) or missed
   * it (its streak restarts; one that was waited for past the claim bound is not any more, logged).
   */
  #tally(known: readonly string[], polled: readonly string[], contest: Contest<Machine>): void {
    for (const skillId of known) {
      const entry = this.#roster.get(skillId);
      if (entry === undefined) continue;
      if (polled.includes(skillId)) {
        entry.streak += 1;
        continue;
      }
      if (answersEveryPoll(entry)) contest.logger.warn({ reason: 'poll_missed', skill_id: skillId }, 'common-query skill missed a poll: no longer waited for past the claim bound');
      entry.streak = 0;
    }
  }

  async match(request: MatchRequest): Promise<Match | null> {
    const utterance = request.utterances[0];
    if (utterance === undefined) return null;
    // §4.1: a rejected utterance returns None without broadcasting.
    if (!this.#gate(utterance, request.lang)) return null;
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
      contest.send({ type: 'JOIN', policy }); // a finished contest ignores it; its output is already final
    }
    contest ??= this.#start(request.message, utterance, request.lang, request.session, policy);

    const result = await contest.until(request.signal);
    if (result.status !== 'done') return null;

    // §8 against the live session, then §9.
    const selection = await selectWithReranker(utterance, request.lang, result.output.responses, policy, this.#reranker);
    if (selection.rerankerError !== undefined) contest.logger.warn({ reason: 'reranker_failed', detail: selection.rerankerError }, 'reranker ignored');
    const winner = selection.winner;
    contest.logger.info(
      { claimants: result.output.claimants.length, responses: result.output.responses.length, closed_by: result.output.closedBy, winner: winner?.skill_id ?? null, conf: winner?.conf },
      'common query decided',
    );
    if (winner === null) return null;
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

  intents(): readonly IntentListing[] {
    return [{ intent_name: 'common_query', skill_id: this.pipelineId, lang: '*' }];
  }

  #gate(utterance: string, lang: string): boolean {
    const verdict = classifyQuestion(utterance, lang, this.#settings.gate);
    if (!verdict.accept) this.#supervisor.logger.debug({ utterance, lang, reason: verdict.reason }, 'question gate rejected');
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
      return entry !== undefined && answersEveryPoll(entry);
    });
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
        answeringSkills,
        collectionInitialMs: this.#settings.collectionInitialMs,
        collectionCeilingMs: this.#settings.collectionCeilingMs,
        policy,
      },
      routes: ['common_query.pong', 'common_query.response'],
      // §6.3 / §7.1: a pong or response for another utterance is not this contest's.
      correlate: (inbound): CommonQueryEvent | 'wrong_utterance' | 'not_awaited' => {
        if (inbound.kind === 'common_query.pong') {
          if (inbound.utterance !== utterance) return 'wrong_utterance';
          const pong = { type: 'PONG' as const, skill_id: inbound.skill_id, can_answer: inbound.can_answer };
          return inbound.latency_ms === undefined ? pong : { ...pong, latency_ms: inbound.latency_ms };
        }
        if (inbound.kind === 'common_query.response') {
          if (inbound.utterance !== utterance) return 'wrong_utterance';
          const response = { type: 'RESPONSE' as const, skill_id: inbound.skill_id, receivedAt: clock.now() };
          return inbound.answer === undefined ? response : { ...response, answer: inbound.answer, ...(inbound.conf === undefined ? {} : { conf: inbound.conf }) };
        }
        return 'not_awaited';
      },
    });
    this.#contests.add(contest);
    this.#pongVia.set(contest.info.id, new Map());
    void contest.done.then((result) => {
      this.#contests.delete(contest);
      this.#pongVia.delete(contest.info.id);
      if (result.status === 'done') this.#tally(knownSkills, result.output.polled, contest);
    });
    return contest;
  }

  /** §5.2: the entry is returned only for its exact utterance string and the utterance_id it was started for. */
  #take(sessionId: string, utterance: string, utteranceId: string | undefined): CacheEntry | undefined {
    const entry = this.#cache.get(sessionId);
    if (entry === undefined || entry.utterance !== utterance || entry.utteranceId !== utteranceId) return undefined;
    this.#cache.delete(sessionId); // consumed on read
    return entry;
  }

  #evictSession(sessionId: string, reason: string): void {
    const entry = this.#cache.get(sessionId);
    if (entry === undefined) return;
    this.#cache.delete(sessionId);
    if (!entry.joined) entry.contest.stop(reason);
  }

  /** Cached early starts right now (for tests and inspection). */
  get cacheSize(): number {
    return this.#cache.size;
  }
}
