/**
 * A minimal common-query skill on any Bus, speaking OVOS-COMMON-QUERY-1 §11: answer every `ovos.common_query.ping`
 * from a fast local check only (§6.2) — `can_answer: true`, or `false` (permitted, and it lets the poll close
 * early); answer `<id>:common_query` on `<id>.common_query.response` via reply with the echoed utterance,
 * `answer` and `conf` — or without `answer` when it has none, so early termination fires.
 * It never speaks and never emits handler-lifecycle signals (§7.1, §11).
 */
import type { Bus, Unsubscribe } from '../bus/bus.js';
import { reply } from '../bus/message.js';
import { topics } from '../dialect/spec-dialect.js';

export interface CommonQuerySkillSpec {
  readonly skillId: string;
  /** Expected time to produce the full answer, sent in the pong (sizes the collection window, §7.2). */
  readonly latencyMs?: number;
  /** §6.2: local and synchronous — no I/O. */
  canAnswer(utterance: string, lang: string): boolean;
  /** §7: the full answer (I/O allowed here); null when there is none after all. */
  answer(utterance: string, lang: string): Promise<{ answer: string; conf: number } | null>;
}

export function runCommonQuerySkill(bus: Bus, spec: CommonQuerySkillSpec): Unsubscribe {
  const requestTopic = topics.commonQueryRequest(spec.skillId);
  return bus.subscribe((message) => {
    const utterance = message.data['utterance'];
    if (typeof utterance !== 'string') return;
    const session = message.context['session'];
    const sessionLang = typeof session === 'object' && session !== null && !Array.isArray(session) ? session['lang'] : undefined;
    const lang = typeof sessionLang === 'string' ? sessionLang : 'en-US';
    if (message.type === topics.commonQueryPing) {
      // §6.2 permits `can_answer: false`; sending it lets the plugin close the poll the moment every skill it knows
      // of has answered, instead of waiting out the claim bound for a silence that means "no".
      const canAnswer = spec.canAnswer(utterance, lang);
      const pong = { utterance, skill_id: spec.skillId, can_answer: canAnswer };
      bus.publish(reply(message, topics.commonQueryPong, !canAnswer || spec.latencyMs === undefined ? pong : { ...pong, latency_ms: spec.latencyMs }));
    } else if (message.type === requestTopic) {
      void spec.answer(utterance, lang).then(
        (result) => bus.publish(reply(message, `${spec.skillId}.common_query.response`, { utterance, skill_id: spec.skillId, ...(result ?? {}) })),
        () => bus.publish(reply(message, `${spec.skillId}.common_query.response`, { utterance, skill_id: spec.skillId })),
      );
    }
  });
}
