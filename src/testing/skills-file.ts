/**
 * The `--skills FILE` of `test-timing`, checked field by field: a deployer's typo gets a message naming the entry and
 * the field, never a crash or a silently ignored skill.
 */
import type { SkillScript, SkillsFile } from './scenario.js';

export class SkillsFileError extends Error {}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isDelay = (v: unknown): v is number | 'never' => v === 'never' || (typeof v === 'number' && Number.isFinite(v) && v >= 0);
const isMs = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0;
const isDialect = (v: unknown): v is 'spec' | 'legacy' => v === 'spec' || v === 'legacy';

const MAX_SESSIONS = 16;
const FILE_KEYS = new Set(['skills', 'utterances', 'sessions']);
const FALLBACK_KEYS = new Set(['kind', 'skill_id', 'priority', 'dialect', 'willing', 'pongAfterMs', 'handlerMs', 'handlerFails', 'disconnectAtMs']);
const CQ_KEYS = new Set(['kind', 'skill_id', 'dialect', 'classic', 'pong', 'pongAfterMs', 'latencyMs', 'answer', 'conf', 'answerAfterMs', 'disconnectAtMs']);

function skill(entry: unknown, at: string): SkillScript {
  if (!isRecord(entry)) throw new SkillsFileError(`${at}: a skill is an object`);
  const id = entry['skill_id'];
  if (typeof id !== 'string' || id === '') throw new SkillsFileError(`${at}.skill_id: a non-empty string`);
  const where = `${at} (${id})`;
  const fail = (field: string, what: string): never => {
    throw new SkillsFileError(`${where}.${field}: ${what}`);
  };
  const opt = <T>(field: string, ok: (v: unknown) => v is T, what: string): T | undefined => {
    const v = entry[field];
    if (v === undefined) return undefined;
    return ok(v) ? v : fail(field, what);
  };
  const disconnectAtMs = opt('disconnectAtMs', isMs, 'milliseconds ≥ 0 after the question');
  const disconnect = disconnectAtMs === undefined ? {} : { disconnectAtMs };
  if (entry['kind'] === 'fallback') {
    for (const key of Object.keys(entry)) if (!FALLBACK_KEYS.has(key)) fail(key, `unknown field for a fallback skill (${[...FALLBACK_KEYS].join(', ')})`);
    const priority = entry['priority'];
    if (typeof priority !== 'number' || !Number.isInteger(priority) || priority < 0 || priority > 100) fail('priority', 'an integer 0–100');
    const dialect = opt('dialect', isDialect, '"spec" or "legacy"');
    const willing = opt('willing', (v): v is boolean => typeof v === 'boolean', 'true or false');
    const pongAfterMs = opt('pongAfterMs', isDelay, 'milliseconds ≥ 0 or "never"');
    const handlerMs = opt('handlerMs', isDelay, 'milliseconds ≥ 0 or "never"');
    const handlerFails = opt('handlerFails', (v): v is boolean => typeof v === 'boolean', 'true or false');
    return {
      kind: 'fallback',
      skill_id: id,
      priority: priority as number,
      ...(dialect === undefined ? {} : { dialect }),
      ...(willing === undefined ? {} : { willing }),
      ...(pongAfterMs === undefined ? {} : { pongAfterMs }),
      ...(handlerMs === undefined ? {} : { handlerMs }),
      ...(handlerFails === undefined ? {} : { handlerFails }),
      ...disconnect,
    };
  }
  if (entry['kind'] === 'common_query') {
    for (const key of Object.keys(entry)) if (!CQ_KEYS.has(key)) fail(key, `unknown field for a common-query skill (${[...CQ_KEYS].join(', ')})`);
    const dialect = opt('dialect', isDialect, '"spec" or "legacy"');
    const pong = opt('pong', (v): v is 'claim' | 'decline' | 'silent' => v === 'claim' || v === 'decline' || v === 'silent', '"claim", "decline" or "silent"');
    const pongAfterMs = opt('pongAfterMs', isMs, 'milliseconds ≥ 0');
    const latencyMs = opt('latencyMs', isMs, 'milliseconds ≥ 0');
    const answer = opt('answer', (v): v is string | null => v === null || (typeof v === 'string' && v.trim() !== ''), 'a non-blank string, or null for no answer');
    if (dialect === 'legacy' && latencyMs !== undefined) fail('latencyMs', 'a legacy skill declares no latency_ms');
    const classic = opt('classic', (v): v is boolean => typeof v === 'boolean', 'true or false');
    if (classic === true && dialect !== 'legacy') fail('classic', 'a classic CommonQuerySkill is a legacy skill: add "dialect": "legacy"');
    // A classic skill's conf runs past 1 (its level plus bonuses); it competes as 1.
    const conf = dialect === 'legacy' ? opt('conf', (v): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0, 'a number ≥ 0') : opt('conf', (v): v is number => typeof v === 'number' && v >= 0 && v <= 1, 'a number in [0, 1]');
    const answerAfterMs = opt('answerAfterMs', isDelay, 'milliseconds ≥ 0 or "never"');
    return {
      kind: 'common_query',
      skill_id: id,
      ...(dialect === undefined ? {} : { dialect }),
      ...(classic === undefined ? {} : { classic }),
      ...(pong === undefined ? {} : { pong }),
      ...(pongAfterMs === undefined ? {} : { pongAfterMs }),
      ...(latencyMs === undefined ? {} : { latencyMs }),
      ...(answer === undefined ? {} : { answer }),
      ...(conf === undefined ? {} : { conf }),
      ...(answerAfterMs === undefined ? {} : { answerAfterMs }),
      ...disconnect,
    };
  }
  return fail('kind', '"fallback" or "common_query"');
}

/** Parse and check a skills file's JSON text. Throws SkillsFileError naming the entry and field. */
export function parseSkillsFile(text: string): SkillsFile {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new SkillsFileError(`not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (!isRecord(data) || !Array.isArray(data['skills'])) throw new SkillsFileError('expected {"skills": [...], "utterances"?: [...], "sessions"?: n}');
  const skills = data['skills'].map((entry, i) => skill(entry, `skills[${i}]`));
  const ids = new Set<string>();
  for (const s of skills) {
    if (ids.has(s.skill_id)) throw new SkillsFileError(`skills: ${s.skill_id} appears twice`);
    ids.add(s.skill_id);
  }
  const utterances = data['utterances'];
  if (utterances !== undefined && (!Array.isArray(utterances) || utterances.length === 0 || !utterances.every((u) => typeof u === 'string' && u.trim() !== ''))) {
    throw new SkillsFileError('utterances: a non-empty list of non-blank strings');
  }
  const sessions = data['sessions'];
  if (sessions !== undefined && (typeof sessions !== 'number' || !Number.isInteger(sessions) || sessions < 1 || sessions > MAX_SESSIONS)) {
    throw new SkillsFileError(`sessions: an integer 1–${MAX_SESSIONS} (the question asked in that many sessions at once)`);
  }
  for (const key of Object.keys(data)) if (!FILE_KEYS.has(key)) throw new SkillsFileError(`${key}: unknown field (${[...FILE_KEYS].join(', ')})`);
  return { skills, ...(utterances === undefined ? {} : { utterances: utterances as string[] }), ...(sessions === undefined ? {} : { sessions }) };
}
