/**
 * Ids a client names are bounded where they are read (src/dialect/spec-dialect.ts): a skill_id longer than 256
 * characters is refused wherever it comes (OVOS-FALLBACK-1 §3.1 registration, pongs), and a registration in a session
 * whose id is longer than 256 is refused — each is kept with every registry entry, its file and its log lines.
 */
import { describe, expect, it } from 'vitest';
import { createMessage } from '../../src/bus/message.js';
import { classifyLegacy } from '../../src/dialect/legacy-dialect.js';
import { classify, MAX_SESSION_ID_LENGTH, MAX_SKILL_ID_LENGTH } from '../../src/dialect/spec-dialect.js';

const id = (n: number): string => 's'.repeat(n);
const reasonOf = (result: ReturnType<typeof classify>): string | undefined => (result === null || result.ok ? undefined : result.reason);
const taken = (result: ReturnType<typeof classify>): boolean => result !== null && result.ok;

describe('id bounds at the edge', () => {
  it('FALLBACK-1 §3.1: a spec registration with a skill_id of 257 characters is refused (skill_id_too_long); 256 is taken', () => {
    const register = (skillId: string) => createMessage('ovos.fallback.register', { skill_id: skillId, priority: 10 }, { skill_id: skillId, session: { session_id: 'default' } });
    expect(reasonOf(classify(register(id(MAX_SKILL_ID_LENGTH + 1))))).toBe('skill_id_too_long');
    expect(taken(classify(register(id(MAX_SKILL_ID_LENGTH))))).toBe(true);
  });

  it('a legacy registration and a legacy pong with a skill_id too long are refused the same way', () => {
    expect(reasonOf(classifyLegacy(createMessage('ovos.skills.fallback.register', { skill_id: id(5_000), priority: 50 }, {})))).toBe('skill_id_too_long');
    expect(reasonOf(classifyLegacy(createMessage('ovos.skills.fallback.pong', { skill_id: id(5_000), can_handle: true }, {})))).toBe('skill_id_too_long');
  });

  it('a registration in a session whose id is longer than 256 characters is refused (session_id_too_long), in both dialects', () => {
    const session = { session_id: id(MAX_SESSION_ID_LENGTH + 1) };
    expect(reasonOf(classify(createMessage('ovos.fallback.register', { skill_id: 'a.b', priority: 10 }, { skill_id: 'a.b', session })))).toBe('session_id_too_long');
    expect(reasonOf(classifyLegacy(createMessage('ovos.skills.fallback.register', { skill_id: 'a.b', priority: 10 }, { session })))).toBe('session_id_too_long');
    expect(taken(classify(createMessage('ovos.fallback.register', { skill_id: 'a.b', priority: 10 }, { skill_id: 'a.b', session: { session_id: id(MAX_SESSION_ID_LENGTH) } })))).toBe(true);
  });
});
