/**
 * The fallback pipeline plugin, OVOS-FALLBACK-1: one registry, any number of stages (§8.2), each stage a
 * `PipelineStage` whose `match` builds the pool (§5) and runs one contest actor (§6) through the supervisor.
 */
import type { Config, PriorityRange } from '../../config/defaults.js';
import { createMessage, reply, utteranceIdOf, withContext } from '../../bus/message.js';
import { sessionIdOf, type SessionView } from '../../bus/session.js';
import { topics } from '../../dialect/spec-dialect.js';
import type { Supervisor } from '../../supervisor/supervisor.js';
import type { IntentListing, Match, MatchRequest, PipelineStage } from '../../pipeline/plugin.js';
import { fallbackMachine, type FallbackEvent } from '../../../machines/fallback/fallback.machine.js';
import { FallbackRegistry } from './registry.js';
import { buildPool } from './pool.js';

export type FallbackSettings = Config['fallback'];

export class FallbackPlugin {
  readonly registry = new FallbackRegistry();
  readonly #supervisor: Supervisor;
  readonly #settings: FallbackSettings;
  readonly #machine;

  constructor(supervisor: Supervisor, settings: FallbackSettings) {
    this.#supervisor = supervisor;
    this.#settings = settings;
    const bus = supervisor.bus;
    // §6.1: `<skill_id>.fallback.ping`, derived via reply from the inbound utterance message, {utterances, lang}.
    this.#machine = fallbackMachine.provide({
      actions: {
        sendPing: ({ context, self }, { skill_id }) => {
          const ping = reply(context.query.origin, topics.fallbackPing(skill_id), { utterances: [...context.query.utterances], lang: context.query.lang });
          bus.publish(withContext(ping, { contest_id: self.id }));
        },
      },
    });
    // §3.1 / §3.2 (the dialect already refused a payload skill_id ≠ context.skill_id).
    supervisor.on('fallback.register', (inbound, message) => {
      const sessionId = sessionIdOf(message)!;
      this.registry.register(sessionId, inbound.skill_id, inbound.priority);
      supervisor.logger.info({ skill_id: inbound.skill_id, priority: inbound.priority, session_id: sessionId }, 'fallback skill registered');
      const priority = Object.hasOwn(this.#settings.priorities, inbound.skill_id) ? this.#settings.priorities[inbound.skill_id]! : inbound.priority;
      const ranges = Object.values(this.#settings.stages);
      if (!ranges.some(([min, max]) => priority >= min && priority <= max)) {
        supervisor.logger.warn({ skill_id: inbound.skill_id, priority, reason: 'priority_outside_stages', stages: this.#settings.stages }, 'fallback skill will never be asked: no stage covers its priority');
      }
    });
    // After (re)connecting to an existing bus the registry may be empty while skills stay connected: ask them.
    supervisor.bus.onStatus((status) => {
      if (status.up) bus.publish(createMessage(topics.fallbackReregister, {}, { source: 'fallback', session: { session_id: 'default' } }));
    });
    supervisor.on('fallback.deregister', (inbound, message) => {
      const sessionId = sessionIdOf(message)!;
      const removed = this.registry.deregister(sessionId, inbound.skill_id);
      supervisor.logger.info({ skill_id: inbound.skill_id, session_id: sessionId, removed }, 'fallback skill deregistered');
    });
  }

  /** Stage ids configured for this plugin, each with its range. */
  stages(): PipelineStage[] {
    return Object.entries(this.#settings.stages).map(([id, range]) => this.stage(id, range));
  }

  /** One pipeline entry (§8.2); `range` absent = a single-stage deployment with no restriction. */
  stage(pipelineId: string, range?: PriorityRange): PipelineStage {
    return {
      pipelineId,
      match: (request) => this.#match(pipelineId, range, request),
      intents: (sessionId) => this.#intents(sessionId, range),
    };
  }

  /** The effective pool for a session and stage (§5). */
  pool(session: Pick<SessionView, 'sessionId' | 'blacklistedSkills' | 'fallbackHandlers'>, range?: PriorityRange): string[] {
    const input = {
      available: this.registry.availableFor(session.sessionId),
      priorityOverrides: this.#settings.priorities,
      blacklistedSkills: session.blacklistedSkills,
      mode: this.#settings.mode,
      whitelist: this.#settings.whitelist,
      blacklist: this.#settings.blacklist,
      ...(session.fallbackHandlers === undefined ? {} : { preference: session.fallbackHandlers }),
      ...(range === undefined ? {} : { range }),
    };
    return buildPool(input).map((entry) => entry.skill_id);
  }

  async #match(pipelineId: string, range: PriorityRange | undefined, request: MatchRequest): Promise<Match | null> {
    const pool = this.pool(request.session, range);
    if (pool.length === 0) return null; // §5: an empty pool returns None immediately
    const contest = this.#supervisor.spawn({
      kind: 'fallback',
      label: pipelineId,
      sessionId: request.session.sessionId,
      utteranceId: utteranceIdOf(request.message),
      logic: this.#machine,
      input: { pool, pingTimeoutMs: this.#settings.pingTimeoutMs, query: { origin: request.message, utterances: request.utterances, lang: request.lang } },
      routes: ['fallback.pong'],
      correlate: (inbound): FallbackEvent | 'not_awaited' =>
        inbound.kind === 'fallback.pong' ? { type: 'PONG', skill_id: inbound.skill_id, can_handle: inbound.can_handle } : 'not_awaited',
    });
    const result = await contest.until(request.signal);
    if (result.status !== 'done' || result.output === null) return null;
    // §6.3 Match shape: the selected skill, reserved intent_name "fallback", empty slots.
    return {
      skill_id: result.output.skill_id,
      intent_name: 'fallback',
      lang: request.lang,
      utterance: request.utterances[0]!,
      slots: {},
    };
  }

  /** PIPELINE-1 §10: what this stage could dispatch to for the session (its pool without session preferences). */
  #intents(sessionId: string, range: PriorityRange | undefined): IntentListing[] {
    return this.pool({ sessionId, blacklistedSkills: [] }, range).map((skill_id) => ({ intent_name: 'fallback', skill_id, lang: '*' }));
  }
}
