/**
 * A minimal fallback skill on any Bus, speaking OVOS-FALLBACK-1's skill side (§10): register with
 * `context.skill_id`, answer `<id>.fallback.ping` with `<id>.fallback.pong` via reply, handle `<id>:fallback`,
 * then signal completion with `mycroft.skill.handler.complete` derived from the dispatch (how our orchestrator
 * observes an out-of-process handler end).
 */
import type { Bus, Unsubscribe } from '../bus/bus.js';
import { createMessage, forward, reply, type Message } from '../bus/message.js';
import { topics } from '../dialect/spec-dialect.js';

export interface FallbackSkillSpec {
  readonly skillId: string;
  readonly priority: number;
  /** Fast local decision: can this skill handle the utterance? (§6.1) */
  canHandle(utterances: readonly string[], lang: string): boolean;
  /**
   * The work when dispatched (`<skill_id>:fallback`): what to say, or nothing; may be async. Its end is reported
   * (`mycroft.skill.handler.complete`); a throw or a rejection ends it with `mycroft.skill.handler.error`.
   */
  answer(utterance: string, lang: string): string | void | Promise<string | void>;
}

export function runFallbackSkill(bus: Bus, spec: FallbackSkillSpec): Unsubscribe {
  const pingTopic = topics.fallbackPing(spec.skillId);
  const dispatchTopic = topics.dispatch(spec.skillId, 'fallback');
  const unsubscribe = bus.subscribe((message: Message) => {
    if (message.type === pingTopic) {
      const raw = message.data['utterances'];
      const utterances = Array.isArray(raw) ? raw.filter((u): u is string => typeof u === 'string') : [];
      const lang = typeof message.data['lang'] === 'string' ? message.data['lang'] : 'en-US';
      const canHandle = spec.canHandle(utterances, lang);
      bus.publish(reply(message, `${spec.skillId}.fallback.pong`, { skill_id: spec.skillId, can_handle: canHandle }));
    } else if (message.type === topics.fallbackReregister) {
      register();
    } else if (message.type === dispatchTopic) {
      const utterance = typeof message.data['utterance'] === 'string' ? message.data['utterance'] : '';
      const lang = typeof message.data['lang'] === 'string' ? message.data['lang'] : 'en-US';
      const done = (said: string | void): void => {
        if (typeof said === 'string' && said !== '') bus.publish(forward(message, topics.utteranceSpeak, { utterance: said, lang }));
        bus.publish(reply(message, topics.skillHandlerComplete, { skill_id: spec.skillId }));
      };
      const failed = (error: unknown): void => {
        bus.publish(reply(message, topics.skillHandlerError, { skill_id: spec.skillId, exception: error instanceof Error ? `${error.name}: ${error.message}` : String(error) }));
      };
      try {
        const said = spec.answer(utterance, lang);
        if (said instanceof Promise) said.then(done, failed);
        else done(said);
      } catch (error) {
        failed(error);
      }
    }
  });
  // Registrations live in the plugin's memory: announce again whenever a client connection comes back.
  const unsubscribeStatus = bus.onStatus((status) => {
    if (status.up) register();
  });
  const register = (): void =>
    bus.publish(createMessage(topics.fallbackRegister, { skill_id: spec.skillId, priority: spec.priority }, { skill_id: spec.skillId, source: spec.skillId, session: { session_id: 'default' } }));
  register();
  return () => {
    bus.publish(createMessage(topics.fallbackDeregister, { skill_id: spec.skillId }, { skill_id: spec.skillId, source: spec.skillId, session: { session_id: 'default' } }));
    unsubscribe();
    unsubscribeStatus();
  };
}
