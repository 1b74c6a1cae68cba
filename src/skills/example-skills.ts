/**
 * The example skills `npm start` runs, each a real bus client of the daemon's own bus.
 *
 * - "meaning of life" (priority 10, high tier): answers "42" to the meaning of life, the universe or everything
 *   and declines everything else (the classic OVOS fallback example).
 * - "I don't know" (priority 100): the catch-all default response skill OVOS-FALLBACK-1 §3.3 asks every
 *   deployment to have; always willing.
 */
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
