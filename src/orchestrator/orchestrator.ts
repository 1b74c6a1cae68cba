/**
 * The orchestrator: enough of OVOS-PIPELINE-1 to run the plugins for real. It consumes `ovos.utterance.handle`,
 * stamps `context.utterance_id` if absent (MSG-1 §4.2), resolves `lang` once (SESSION-1 §3.2.7), composes the
 * effective pipeline (§5.5) and runs one utterance actor per utterance (machines/utterance). Many utterances are
 * in flight at once; nothing here blocks the bus (§6.5).
 *
 * Completion of a bus skill's handler (another process) is observed as `mycroft.skill.handler.complete` or
 * `mycroft.skill.handler.error` carrying the dispatched `context.skill_id`, the session and the utterance_id —
 * which a skill gets for free by deriving the signal from the dispatch message. No signal within
 * `handlerTimeoutMs` → `ovos.intent.handler.error` (timeout) then `ovos.utterance.handled`.
 */
import { randomUUID } from 'node:crypto';
import { fromPromise } from 'xstate';
import { forward, reply, withContext, type JsonObject, type Message } from '../bus/message.js';
import { pushActiveHandler, readSession, resolveLang, sessionFromObject, type SessionView } from '../bus/session.js';
import { canonicalPipelineId, type Config } from '../config/defaults.js';
import { topics } from '../dialect/spec-dialect.js';
import { isWellFormedMatch, type Match, type PipelineStage } from '../pipeline/plugin.js';
import type { Supervisor } from '../supervisor/supervisor.js';
import { utteranceMachine, type UtteranceEvent, type UtteranceOutput } from '../../machines/utterance/utterance.machine.js';

/** OVOS-PIPELINE-1 §7.3: reserved intent names whose dispatch does not push `active_handlers`. */
const NON_ACTIVATING = new Set(['common_query']);

export interface UtteranceRecord {
  readonly utteranceId: string;
  readonly sessionId: string;
  readonly done: Promise<UtteranceOutput | null>;
}

export class Orchestrator {
  readonly #supervisor: Supervisor;
  readonly #config: Config;
  readonly #stages = new Map<string, PipelineStage>();
  readonly #inFlight = new Set<string>();

  constructor(supervisor: Supervisor, config: Config) {
    this.#supervisor = supervisor;
    this.#config = config;
    supervisor.on('utterance.handle', (inbound, message) => {
      this.handle(message, inbound.utterances);
    });
    // OVOS-PIPELINE-1 §10: each plugin answers its introspection request.
    supervisor.on('intents.list', (inbound, message) => {
      const stage = this.#stages.get(canonicalPipelineId(inbound.pipeline_id));
      if (stage === undefined) return; // not ours: another daemon's plugin may answer
      const session = readSession(message);
      const sessionId = session.ok ? session.session.sessionId : 'default';
      const intents = stage.intents(sessionId).map((i) => ({ ...i }));
      supervisor.bus.publish(reply(message, `${message.type}.response`, { pipeline_id: stage.pipelineId, intents }));
    });
  }

  /** Make a stage available under its pipeline_id (and aliases resolve to it). */
  register(stage: PipelineStage): void {
    this.#stages.set(stage.pipelineId, stage);
  }

  get stages(): readonly PipelineStage[] {
    return [...this.#stages.values()];
  }

  /** Begin one utterance lifecycle. Returns null when the message was dropped (logged with a reason). */
  handle(entry: Message, utterances: readonly string[]): UtteranceRecord | null {
    const log = this.#supervisor.logger;
    const parsed = readSession(entry);
    if (!parsed.ok) {
      log.warn({ reason: parsed.reason, type: entry.type }, 'message dropped');
      return null;
    }
    const session = parsed.session;
    const given = entry.context['utterance_id'];
    const utteranceId = typeof given === 'string' && given !== '' ? given : randomUUID();
    const key = `${session.sessionId}\u0000${utteranceId}`;
    if (this.#inFlight.has(key)) {
      log.warn({ reason: 'duplicate_utterance_id', session_id: session.sessionId, utterance_id: utteranceId }, 'message dropped');
      return null;
    }
    // Everything derived from the utterance carries its session without null fields (OVOS-SESSION-1 §2).
    const stamped = withContext(entry, { utterance_id: utteranceId, session: { ...session.raw, session_id: session.sessionId } });
    const lang = resolveLang(stamped, session, this.#config.lang);
    const stages = this.effectivePipeline(session);

    for (const stage of new Set(stages.map((id) => this.#stages.get(id)!))) stage.onUtterance?.(stamped, lang, session);

    const bus = this.#supervisor.bus;
    const resolveStage = (id: string): PipelineStage => this.#stages.get(id)!;
    let dispatchMessage: Message | null = null;
    const machine = utteranceMachine.provide({
      actors: {
        matchStage: fromPromise(async ({ input, signal }) => {
          const clock = this.#supervisor.clock;
          const started = clock.now();
          const match = await resolveStage(input.pipelineId).match({ utterances, lang, session, message: stamped, signal });
          // The time this stage held the pipeline: what early start (OVOS-COMMON-QUERY-1 §5) exists to shrink.
          contest.logger.info({ stage: input.pipelineId, match_ms: clock.now() - started, matched: match !== null, aborted: signal.aborted }, 'stage matched');
          return match;
        }),
        runHandler: fromPromise(async ({ input }) => {
          await resolveStage(input.pipelineId).handle!(dispatchMessage!, input.match);
        }),
      },
      guards: {
        acceptable: ({ context }, { match }) => this.#acceptable(match, session, context.stages[context.index] ?? '', contest.logger),
      },
      actions: {
        dispatch: ({ context }) => {
          const match = context.match!;
          dispatchMessage = this.#dispatch(stamped, session, match, context.matchedStage!);
        },
        handlerComplete: ({ context }) => {
          bus.publish(forward(dispatchMessage!, topics.handlerComplete, { skill_id: context.match!.skill_id, intent_name: context.match!.intent_name }));
        },
        handlerError: ({ context }, { exception }) => {
          bus.publish(forward(dispatchMessage!, topics.handlerError, { skill_id: context.match!.skill_id, intent_name: context.match!.intent_name, exception }));
        },
        unmatched: () => {
          bus.publish(reply(stamped, topics.intentUnmatched, { utterances: [...utterances], lang }));
        },
        handled: () => {
          // The last message of the lifecycle carries the session as it now is (with any activation pushed).
          const handled = reply(stamped, topics.utteranceHandled, {});
          const session = dispatchMessage?.context['session'];
          bus.publish(session === undefined ? handled : withContext(handled, { session }));
        },
      },
    });

    this.#inFlight.add(key);
    const contest = this.#supervisor.spawn({
      kind: 'utterance',
      label: 'pipeline',
      sessionId: session.sessionId,
      utteranceId,
      logic: machine,
      input: {
        stages,
        inProcessHandlers: stages.filter((id) => this.#stages.get(id)?.handle !== undefined),
        matchTimeoutMs: this.#config.orchestrator.matchTimeoutMs,
        handlerTimeoutMs: this.#config.orchestrator.handlerTimeoutMs,
      },
      routes: ['skill.handler.done'],
      correlate: (inbound): UtteranceEvent | 'not_awaited' => {
        if (inbound.kind !== 'skill.handler.done') return 'not_awaited';
        const event = { type: 'HANDLER_DONE' as const, skill_id: inbound.skill_id, ok: inbound.ok };
        return inbound.exception === undefined ? event : { ...event, exception: inbound.exception };
      },
    });
    contest.logger.info({ utterances, lang, stages }, 'utterance received');

    const done = contest.done.then((result) => {
      this.#inFlight.delete(key);
      for (const id of new Set(stages)) this.#stages.get(id)?.onHandled?.(stamped, session);
      if (result.status === 'done') {
        contest.logger.info({ outcome: result.output.outcome, skill_id: result.output.match?.skill_id, stage: result.output.stage }, 'utterance handled');
        return result.output;
      }
      // Stopped (bus down, shutdown) or crashed: handled cannot be guaranteed on a dead bus; say so.
      contest.logger.warn({ reason: result.status === 'stopped' ? result.reason : 'utterance_error' }, 'utterance ended without ovos.utterance.handled');
      return null;
    });
    return { utteranceId, sessionId: session.sessionId, done };
  }

  /** OVOS-PIPELINE-1 §5: preference (session, else the default-session config) → loaded → not blacklisted. */
  effectivePipeline(session: SessionView): string[] {
    const preference = session.pipeline ?? this.#config.pipeline;
    const blacklisted = new Set(session.blacklistedPipelines.map(canonicalPipelineId));
    const effective: string[] = [];
    for (const raw of preference) {
      const id = canonicalPipelineId(raw);
      if (!this.#stages.has(id)) {
        this.#supervisor.logger.debug({ reason: 'unknown_pipeline', pipeline_id: raw }, 'pipeline stage skipped');
        continue;
      }
      if (blacklisted.has(id) || effective.includes(id)) continue;
      effective.push(id);
    }
    return effective;
  }

  /** §4.1 well-formedness and the §5 re-check of the session denylists on every Match. */
  #acceptable(match: Match | null, session: SessionView, stage: string, log: { info: (o: object, m: string) => void }): boolean {
    if (match === null) return false;
    if (!isWellFormedMatch(match)) {
      log.info({ reason: 'malformed_match', stage }, 'match rejected');
      return false;
    }
    if (session.blacklistedSkills.includes(match.skill_id)) {
      log.info({ reason: 'blacklisted_skill', stage, skill_id: match.skill_id }, 'match rejected');
      return false;
    }
    if (session.blacklistedIntents.includes(`${match.skill_id}:${match.intent_name}`)) {
      log.info({ reason: 'blacklisted_intent', stage, skill_id: match.skill_id }, 'match rejected');
      return false;
    }
    return true;
  }

  /** §6 ovos.intent.matched, §7 dispatch (reply-derived, ids stamped, activation), §8 handler.start. */
  #dispatch(entry: Message, session: SessionView, match: Match, pipelineId: string): Message {
    const bus = this.#supervisor.bus;
    bus.publish(
      reply(entry, topics.intentMatched, {
        skill_id: match.skill_id,
        intent_name: match.intent_name,
        lang: match.lang,
        utterance: match.utterance,
        slots: { ...match.slots },
        pipeline_id: pipelineId,
      }),
    );
    let sessionOut: JsonObject = match.updated_session ?? session.raw;
    if (!NON_ACTIVATING.has(match.intent_name)) {
      const base = match.updated_session === undefined ? session : sessionFromObject(match.updated_session);
      sessionOut = pushActiveHandler(base, match.skill_id, Math.floor(this.#supervisor.clock.now() / 1000));
    }
    const dispatched = reply(entry, topics.dispatch(match.skill_id, match.intent_name), {
      lang: match.lang,
      utterance: match.utterance,
      slots: { ...match.slots },
    });
    const message = withContext(dispatched, { session: sessionOut, skill_id: match.skill_id, pipeline_id: pipelineId });
    bus.publish(message);
    bus.publish(forward(message, topics.handlerStart, { skill_id: match.skill_id, intent_name: match.intent_name }));
    return message;
  }
}
