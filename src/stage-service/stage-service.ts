/**
 * The daemon as a stage service for ovos-core: ovos-core keeps its own pipeline (adapt, padatious, converse, stop,
 * OCP, …) and our Python pipeline plugin (src/ovos-plugin/) asks the daemon, over the bus, to decide one fallback tier
 * or the common-query stage for one utterance. The daemon runs the same contests as for its own orchestrator, in
 * that utterance's session, and answers with what ovos-core's own plugin would have returned for the same decision —
 * ovos-core then dispatches exactly as it does today (src/ovos-plugin/README.md, "Protocol").
 *
 *   ovos.contests.stage.match            {version, request_id, stage, utterances, lang, timeout_ms}, context of the utterance
 *   ovos.contests.stage.match.response   {version, request_id, stage, match | null, error?, detail?}, by reply
 *
 * Every request gets exactly one reply, within its `timeout_ms`: the contest is aborted at `timeout_ms` less
 * `REPLY_MARGIN_MS` and answered `match: null`. The daemon only decides: it never dispatches (ovos-core may still
 * discard the match, and its `intent.service.intent.get` asks every stage without dispatching).
 */
import { forward, reply, stringField, utteranceIdOf, type JsonObject, type Message } from '../bus/message.js';
import type { TimerId } from '../clock/clock.js';
import { readSession, resolveLang, type SessionView } from '../bus/session.js';
import { canonicalPipelineId } from '../config/defaults.js';
import { LogRateLimiter } from '../log/rate-limit.js';
import type { Match, MatchRequest, PipelineStage } from '../pipeline/plugin.js';
import { rejectionOf } from '../pipeline/plugin.js';
import type { Config } from '../config/defaults.js';
import type { Orchestrator } from '../orchestrator/orchestrator.js';
import type { CommonQueryPlugin } from '../plugins/common-query/common-query.plugin.js';
import type { FallbackPlugin } from '../plugins/fallback/fallback.plugin.js';
import type { Supervisor } from '../supervisor/supervisor.js';
import type { Unsubscribe } from '../bus/bus.js';

export const STAGE_PROTOCOL_VERSION = 1;

export const stageTopics = {
  match: 'ovos.contests.stage.match',
  response: 'ovos.contests.stage.match.response',
  /** What a spec common-query winner's match dispatches: the daemon speaks the answer when ovos-core emits it. */
  commonQueryAnswer: 'ovos.contests.common_query.answer',
} as const;

/** The reply leaves this long before the plugin's bound, so it is never late for a contest cut at the bound. */
export const REPLY_MARGIN_MS = 20;
/** Bounds of `timeout_ms` (ms): a request asking for more is held to the most. */
const MAX_TIMEOUT_MS = 60_000;

export type StageError = 'bad_request' | 'unknown_stage' | 'unsupported_version' | 'unavailable';

/** What ovos-core's `IntentHandlerMatch` is built from, plus what its own plugin sets on `message.data` first. */
export type OvosCoreMatch = {
  readonly match_type: string;
  readonly match_data: JsonObject;
  readonly skill_id: string | null;
  readonly utterance: string;
  readonly message_data: JsonObject;
};

interface StageRequest {
  readonly requestId: string;
  readonly stage: string;
  readonly utterances: readonly string[];
  readonly lang: string;
  readonly timeoutMs: number;
}

/** What the stage service uses of the contest system (src/system.ts builds it with one). */
export interface StageSystem {
  readonly config: Config;
  readonly supervisor: Supervisor;
  readonly orchestrator: Orchestrator;
  readonly fallback: FallbackPlugin;
  readonly commonQuery: CommonQueryPlugin;
}

export class StageService {
  readonly #system: StageSystem;
  readonly #unsubscribe: Unsubscribe[] = [];
  /**
   * Spec fallback winners handed to ovos-core, by `session\0utterance_id\0skill_id`, until their handler ends: an
   * ovos-workshop skill sends the utterance's `ovos.utterance.handled` itself, a spec skill ends its handler
   * (PIPELINE-1 §8) and the daemon sends it — ovos-core sends none. Forgotten after `orchestrator.handlerTimeoutMs`
   * (ovos-core may have discarded the match, or the skill died).
   */
  readonly #awaiting = new Map<string, TimerId>();
  readonly #refusalLog = new LogRateLimiter(60_000, 1024, 10);

  constructor(system: StageSystem) {
    this.#system = system;
    const { bus } = system.supervisor;
    // ovos-core takes the utterances: the common-query contest still starts at their arrival (OVOS-COMMON-QUERY-1
    // §5), and ovos-core's request, when its pipeline reaches the stage, joins it; so does the legacy fallback
    // skills' one broadcast (src/plugins/README.md "Legacy fallback skills"), whose answers ovos-core's fallback tiers take.
    if (!system.config.orchestrator.takesUtterances) {
      this.#unsubscribe.push(
        system.supervisor.on('utterance.handle', (inbound, message) => {
          const parsed = readSession(message);
          if (!parsed.ok || inbound.utterances.length === 0) return;
          const entry: Message = { ...message, data: { ...message.data, utterances: [...inbound.utterances] } };
          const lang = resolveLang(entry, parsed.session, system.config.lang);
          system.commonQuery.onUtterance(entry, lang, parsed.session, true);
          system.fallback.onUtterance(entry, lang, parsed.session, true);
        }),
      );
    }
    this.#unsubscribe.push(
      bus.subscribe((message) => {
        if (message.type === stageTopics.match) void this.answer(message).then((response) => bus.publish(response));
        else if (message.type === stageTopics.commonQueryAnswer) this.#speak(message);
        else if (message.type === 'mycroft.skill.handler.complete' || message.type === 'mycroft.skill.handler.error') this.#handlerEnded(message);
      }),
    );
  }

  close(): void {
    for (const unsubscribe of this.#unsubscribe.splice(0)) unsubscribe();
    for (const timer of this.#awaiting.values()) this.#system.supervisor.clock.clearTimeout(timer);
    this.#awaiting.clear();
  }

  #awaitHandler(sessionId: string, utteranceId: string | undefined, skillId: string): void {
    if (utteranceId === undefined) return;
    const key = `${sessionId}\u0000${utteranceId}\u0000${skillId}`;
    const { clock } = this.#system.supervisor;
    const previous = this.#awaiting.get(key);
    if (previous !== undefined) clock.clearTimeout(previous);
    this.#awaiting.set(key, clock.setTimeout(() => this.#awaiting.delete(key), this.#system.config.orchestrator.handlerTimeoutMs));
  }

  /** A spec fallback winner's handler ended (its signal derived from ovos-core's dispatch): the utterance's handled. */
  #handlerEnded(message: Message): void {
    const skillId = stringField(message.context, 'skill_id');
    const utteranceId = utteranceIdOf(message);
    const parsed = readSession(message);
    if (skillId === undefined || utteranceId === undefined || !parsed.ok) return;
    const key = `${parsed.session.sessionId}\u0000${utteranceId}\u0000${skillId}`;
    const timer = this.#awaiting.get(key);
    if (timer === undefined) return;
    this.#system.supervisor.clock.clearTimeout(timer);
    this.#awaiting.delete(key);
    this.#system.supervisor.bus.publish(forward(message, 'ovos.utterance.handled', {}));
  }

  /**
   * The one reply to a stage request, whichever way it came (the bus, or the plugin's direct link: endpoint.ts);
   * the caller sends it back the same way. Never rejects.
   */
  async answer(message: Message): Promise<Message> {
    const read = readRequest(message.data);
    if (!read.ok) return this.#refuse(message, read.error, read.detail);
    const { request } = read;
    const stage = this.#system.orchestrator.stages.find((s) => s.pipelineId === canonicalPipelineId(request.stage));
    if (stage === undefined) return this.#refuse(message, 'unknown_stage', request.stage, request);
    const parsed = readSession(message);
    if (!parsed.ok) return this.#refuse(message, 'bad_request', parsed.reason, request);
    let match: OvosCoreMatch | null = null;
    try {
      match = await this.#decide(stage, request, message, parsed.session);
    } catch (error) {
      this.#system.supervisor.logger.error({ err: error, reason: 'stage_service_failed', stage: request.stage }, 'stage request failed; answered with no match');
    }
    return reply(message, stageTopics.response, { version: STAGE_PROTOCOL_VERSION, request_id: request.requestId, stage: request.stage, match });
  }

  async #decide(stage: PipelineStage, request: StageRequest, message: Message, session: SessionView): Promise<OvosCoreMatch | null> {
    const { clock } = this.#system.supervisor;
    // The utterance as the contests derive their queries from it: the request's context (session, utterance_id).
    const entry: Message = { type: 'ovos.utterance.handle', data: { utterances: [...request.utterances], lang: request.lang }, context: message.context };
    const abort = new AbortController();
    const timer = clock.setTimeout(() => abort.abort(), Math.max(0, request.timeoutMs - REPLY_MARGIN_MS));
    const matchRequest: MatchRequest = { utterances: request.utterances, lang: request.lang, session, message: entry, signal: abort.signal };
    try {
      if (stage.declines?.(matchRequest) === true) return null;
      const found = await Promise.race([stage.match(matchRequest), new Promise<null>((resolve) => abort.signal.addEventListener('abort', () => resolve(null), { once: true }))]);
      if (found === null || abort.signal.aborted) return null;
      if (rejectionOf(found, session) !== null) return null;
      return this.#asOvosCore(stage, found, request, entry, session);
    } finally {
      clock.clearTimeout(timer);
      abort.abort();
    }
  }

  /** Our Match as ovos-core's own plugin returns the same decision. */
  #asOvosCore(stage: PipelineStage, match: Match, request: StageRequest, entry: Message, session: SessionView): OvosCoreMatch {
    const utterance = request.utterances[0] ?? match.utterance;
    const range = this.#system.config.fallback.stages[stage.pipelineId];
    if (range !== undefined) {
      const legacy = this.#system.fallback.registry.entry(session.sessionId, match.skill_id)?.legacy ?? this.#system.fallback.registry.entry('default', match.skill_id)?.legacy ?? false;
      if (legacy) {
        // ovos-core's FallbackService: the request topic, skill_id None (it activates no fallback skill), and the
        // message data it set before pinging, which ovos-core merges into the dispatched request.
        return {
          match_type: `ovos.skills.fallback.${match.skill_id}.request`,
          match_data: { skill_id: match.skill_id, utterances: [...request.utterances], lang: request.lang },
          skill_id: null,
          utterance,
          message_data: { utterances: [...request.utterances], lang: request.lang, range: [range[0], range[1]] },
        };
      }
      // A spec skill: its dispatch (OVOS-PIPELINE-1 §7), which ovos-core emits as the match's topic; its handler's end
      // is the daemon's cue for the utterance's handled.
      this.#awaitHandler(session.sessionId, utteranceIdOf(entry), match.skill_id);
      return specDispatch(match, utterance);
    }
    if (stage.pipelineId === this.#system.commonQuery.pipelineId) {
      if (match.skill_id !== stage.pipelineId) {
        // A workshop skill's answer: the plugin hands back what ovos-common-query-pipeline-plugin returns —
        // `question:action[.<skill_id>]` with the skill's own reply — and ovos-core activates and dispatches it.
        const dispatched = stage.dispatchFor?.(entry, match, { session, utterances: request.utterances }) ?? [];
        const action = dispatched.at(-1);
        if (action !== undefined && action.type.startsWith('question:action')) {
          const { utterances: _u, lang: _l, utterance: _t, ...answer } = action.data;
          return { match_type: action.type, match_data: answer, skill_id: match.skill_id, utterance, message_data: { lang: request.lang, utterance } };
        }
      }
      // A spec skill's answer: the daemon speaks it when ovos-core emits the match (`#speak`).
      return {
        match_type: stageTopics.commonQueryAnswer,
        match_data: { answer: match.slots['answer'] ?? '' },
        skill_id: null,
        utterance,
        message_data: { lang: request.lang, utterance },
      };
    }
    return specDispatch(match, utterance);
  }

  /** ovos-core dispatched a spec common-query answer: speak it, then end the utterance as a skill would. */
  #speak(message: Message): void {
    const answer = stringField(message.data, 'answer');
    if (answer === undefined || answer === '') return;
    const lang = stringField(message.data, 'lang');
    const { bus } = this.#system.supervisor;
    bus.publish({ type: 'speak', data: { utterance: answer, ...(lang === undefined ? {} : { lang }) }, context: { ...message.context } });
    bus.publish({ type: 'ovos.utterance.handled', data: {}, context: { ...message.context } });
  }

  #refuse(message: Message, error: StageError, detail: string, request?: StageRequest): Message {
    const requestId = request?.requestId ?? stringField(message.data, 'request_id');
    const { log, suppressed } = this.#refusalLog.shouldLog(error, this.#system.supervisor.clock.now());
    if (log) this.#system.supervisor.logger.warn({ reason: `stage_${error}`, detail: detail.slice(0, 200), suppressed }, 'stage request refused');
    return reply(message, stageTopics.response, {
      version: STAGE_PROTOCOL_VERSION,
      ...(requestId === undefined ? {} : { request_id: requestId }),
      ...(request === undefined ? {} : { stage: request.stage }),
      match: null,
      error,
      detail: detail.slice(0, 200),
    });
  }
}

/** A spec skill's Match as ovos-core dispatches it: its own topic (OVOS-PIPELINE-1 §7), skill_id set (ovos-core activates it). */
function specDispatch(match: Match, utterance: string): OvosCoreMatch {
  return { match_type: `${match.skill_id}:${match.intent_name}`, match_data: { utterance: match.utterance, lang: match.lang, slots: { ...match.slots } }, skill_id: match.skill_id, utterance, message_data: {} };
}

type ReadRequest = { readonly ok: true; readonly request: StageRequest } | { readonly ok: false; readonly error: StageError; readonly detail: string };

/** The request's fields, or why not. */
function readRequest(data: JsonObject): ReadRequest {
  const bad = (detail: string): ReadRequest => ({ ok: false, error: 'bad_request', detail });
  const version = data['version'];
  if (typeof version !== 'number' || !Number.isInteger(version) || version < 1) return bad('version must be a positive integer');
  if (version > STAGE_PROTOCOL_VERSION) return { ok: false, error: 'unsupported_version', detail: `this daemon speaks version ${STAGE_PROTOCOL_VERSION}` };
  const requestId = data['request_id'];
  if (typeof requestId !== 'string' || requestId === '') return bad('request_id must be a non-empty string');
  const stage = data['stage'];
  if (typeof stage !== 'string' || stage === '') return bad('stage must be a non-empty string');
  const utterances = data['utterances'];
  if (!Array.isArray(utterances) || utterances.length === 0 || !utterances.every((u) => typeof u === 'string' && u.trim() !== '')) return bad('utterances must be a non-empty list of non-blank strings');
  const lang = data['lang'];
  if (typeof lang !== 'string' || lang === '') return bad('lang must be a non-empty string');
  const timeout = data['timeout_ms'];
  if (typeof timeout !== 'number' || !Number.isFinite(timeout) || timeout <= 0) return bad('timeout_ms must be a positive number');
  return { ok: true, request: { requestId, stage, utterances: utterances as string[], lang, timeoutMs: Math.min(timeout, MAX_TIMEOUT_MS) } };
}
