/**
 * The example skills `npm start` runs, each a real bus client of the daemon's own bus.
 *
 * - "meaning of life" (priority 10, high tier): answers "42" to the meaning of life, the universe or everything
 *   and declines everything else (the classic OVOS fallback example).
 * - "local knowledge" (common query): a handful of facts held in memory; claims in the pong phase only when a
 *   fact's keywords all appear in the question, answers with `conf` per OVOS-COMMON-QUERY-1 Appendix B.
 * - "I don't know" (priority 100): the catch-all default response skill OVOS-FALLBACK-1 §3.3 asks every
 *   deployment to have; always willing.
 */
import type { CommonQuerySkillSpec } from './common-query-skill.js';
import type { FallbackSkillSpec } from './fallback-skill.js';

export const meaningOfLifeSkill: FallbackSkillSpec = {
  skillId: 'meaning-of-life.example',
  priority: 10,
  canHandle: (utterances) =>
    utterances.some((u) => {
      const text = u.toLowerCase();
      return text.includes('meaning') && /\b(life|universe|everything)\b/.test(text);
    }),
  answer: () => '42',
};

export const dontKnowSkill: FallbackSkillSpec = {
  skillId: 'dont-know.example',
  priority: 100,
  canHandle: () => true,
  answer: () => "I don't know how to answer that",
};

interface Fact {
  readonly keywords: readonly string[];
  readonly answer: string;
  /** Appendix B: 0.9–1.0 definitive, 0.7–0.9 strong. */
  readonly conf: number;
}

const FACTS: readonly Fact[] = [
  { keywords: ['capital', 'france'], answer: 'Paris is the capital of France.', conf: 0.95 },
  { keywords: ['capital', 'portugal'], answer: 'Lisbon is the capital of Portugal.', conf: 0.95 },
  { keywords: ['capital', 'japan'], answer: 'Tokyo is the capital of Japan.', conf: 0.95 },
  { keywords: ['capital', 'germany'], answer: 'Berlin is the capital of Germany.', conf: 0.95 },
  { keywords: ['speed', 'light'], answer: 'Light travels at 299,792,458 metres per second in a vacuum.', conf: 0.92 },
  { keywords: ['boiling', 'water'], answer: 'Water boils at 100 degrees Celsius at sea level.', conf: 0.85 },
  { keywords: ['invented', 'telephone'], answer: 'Alexander Graham Bell is credited with inventing the telephone in 1876.', conf: 0.8 },
  { keywords: ['tallest', 'mountain'], answer: 'Mount Everest is the tallest mountain above sea level, at 8,849 metres.', conf: 0.9 },
];

const words = (text: string): Set<string> => new Set(text.toLowerCase().match(/[a-z]+/g) ?? []);
const lookup = (utterance: string): Fact | undefined => {
  const present = words(utterance);
  return FACTS.find((fact) => fact.keywords.every((k) => present.has(k)));
};

export const localKnowledgeSkill: CommonQuerySkillSpec = {
  skillId: 'local-knowledge.example',
  latencyMs: 20,
  canAnswer: (utterance, lang) => lang.toLowerCase().startsWith('en') && lookup(utterance) !== undefined,
  answer: async (utterance) => {
    const fact = lookup(utterance);
    return fact === undefined ? null : { answer: fact.answer, conf: fact.conf };
  },
};
