/**
 * Configuration: layering, validation, the command line.
 *
 * Layers, lowest to highest: DEFAULT_CONFIG → the deployment's mycroft.conf (mycroft-conf.ts: where ovos-config
 * finds it, or `--mycroft-conf FILE` / OVOS_CONTESTS_MYCROFT_CONF; `--no-mycroft-conf` skips it) → JSON file
 * (`--config FILE` or OVOS_CONTESTS_CONFIG) → environment variables → flags. Each layer is merged over the previous
 * one and the result validated at once, so an error names both the dotted key and the layer that introduced it
 * (STYLE 7). The validated config is a fresh, deep-frozen object; the records `fallback.stages`,
 * `fallback.priorities` and `commonQuery.gate.vocabulary` have a null prototype, so a lookup by a skill id read off
 * the bus (e.g. "constructor") never finds an inherited member.
 */

import { readFileSync } from 'node:fs';

import { DEFAULT_CONFIG, type Config, type FallbackMode, type GateConfig, type PriorityRange } from './defaults.js';
import { ConfigError } from './errors.js';
import {
  describeMycroftOrigins,
  discoverMycroftConf,
  mycroftLayer,
  overrideOf,
  readFileIfPresent,
  type MycroftConfText,
  type MycroftIgnoredKey,
  type MycroftNote,
  type MycroftOrigin,
} from './mycroft-conf.js';

// ---------------------------------------------------------------------------------------------------------------
// Errors (STYLE 6): errors.ts, re-exported here.

export { ConfigError, type ConfigErrorCode } from './errors.js';

// ---------------------------------------------------------------------------------------------------------------
// Small helpers

type JsonRecord = Readonly<Record<string, unknown>>;

function isPlainObject(value: unknown): value is JsonRecord {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function own(record: JsonRecord, key: string): unknown {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

/** A record whose keys never reach Object.prototype, however hostile ("__proto__", "constructor"). */
function nullProtoRecord<T>(entries: Iterable<readonly [string, T]>): Record<string, T> {
  return Object.assign(Object.create(null) as Record<string, T>, Object.fromEntries(entries));
}

const PLAIN_SEGMENT = /^[A-Za-z0-9_$-]+$/;

function childKey(path: string, segment: string): string {
  if (!PLAIN_SEGMENT.test(segment)) return `${path}[${JSON.stringify(segment)}]`;
  return path === '' ? segment : `${path}.${segment}`;
}

function indexKey(path: string, index: number): string {
  return `${path}[${index}]`;
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing (missing)';
  if (value === null) return 'null';
  if (typeof value === 'string') return value.length > 60 ? `${JSON.stringify(value.slice(0, 60))}…` : JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (typeof value === 'object') return 'an object';
  return typeof value;
}

function levenshtein(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

function didYouMean(word: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const distance = candidate.toLowerCase() === word.toLowerCase() ? 0 : levenshtein(word, candidate);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return bestDistance <= Math.max(2, Math.floor(word.length / 4)) ? best : undefined;
}

function invalid(key: string, expected: string, got: unknown): ConfigError {
  return new ConfigError('CONFIG_INVALID', `${key}: expected ${expected}, got ${describe(got)}`, { key });
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

// ---------------------------------------------------------------------------------------------------------------
// Field validators: each returns the typed value or throws a ConfigError naming the key.

/** setTimeout treats anything above 2^31 − 1 ms as 1 ms; refuse it rather than fire early. */
const MAX_MS = 2_147_483_647;

/** OVOS-PIPELINE-1: pipeline_id characters. */
const PIPELINE_ID = /^[A-Za-z0-9_-]+$/;
/** BCP 47 shape, loosely (en, en-US, pt-br, zh-Hant-TW). */
const LANG_TAG = /^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$/;
/** Gate vocabulary is keyed by the primary subtag, lower case (defaults.ts GateConfig). */
const PRIMARY_SUBTAG = /^[a-z]{2,8}$/;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const FALLBACK_MODES = ['accept_all', 'whitelist', 'blacklist'] as const satisfies readonly FallbackMode[];

/** A plain object with exactly the known keys (missing ones are reported by the field validators). */
function section(value: unknown, key: string, known: readonly string[]): JsonRecord {
  if (!isPlainObject(value)) {
    throw key === ''
      ? new ConfigError('CONFIG_INVALID', `config: expected an object, got ${describe(value)}`)
      : invalid(key, 'an object', value);
  }
  for (const name of Object.keys(value)) {
    if (known.includes(name)) continue;
    const unknownKey = childKey(key, name);
    const hint = didYouMean(name, known);
    const suggestion = hint === undefined ? '' : ` (did you mean ${childKey(key, hint)}?)`;
    throw new ConfigError('CONFIG_UNKNOWN_KEY', `${unknownKey}: unknown key${suggestion}`, { key: unknownKey });
  }
  return value;
}

function record(value: unknown, key: string): JsonRecord {
  if (!isPlainObject(value)) throw invalid(key, 'an object', value);
  return value;
}

function nonEmptyString(value: unknown, key: string): string {
  if (typeof value !== 'string' || value === '') throw invalid(key, 'a non-empty string', value);
  return value;
}

function matching(value: unknown, key: string, pattern: RegExp, expected: string): string {
  if (typeof value !== 'string' || !pattern.test(value)) throw invalid(key, expected, value);
  return value;
}

function integer(value: unknown, key: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    const range =
      min === Number.MIN_SAFE_INTEGER && max === Number.MAX_SAFE_INTEGER
        ? 'an integer'
        : max === Number.MAX_SAFE_INTEGER
          ? `an integer ≥ ${min}`
          : `an integer in [${min}, ${max}]`;
    throw invalid(key, range, value);
  }
  return value;
}

function anyInteger(value: unknown, key: string): number {
  return integer(value, key, Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
}

/** A duration in ms; a timeout or interval of 0 would fire at once (or spin), so those are `positive`. */
function duration(value: unknown, key: string, positive: boolean): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < (positive ? 1 : 0) || value > MAX_MS) {
    throw invalid(key, `an integer number of milliseconds in [${positive ? 1 : 0}, ${MAX_MS}]`, value);
  }
  return value;
}

function unitInterval(value: unknown, key: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 1) {
    throw invalid(key, 'a number in [0, 1]', value);
  }
  return value;
}

function boolean(value: unknown, key: string): boolean {
  if (typeof value !== 'boolean') throw invalid(key, 'true or false', value);
  return value;
}

function oneOf<const T extends string>(value: unknown, key: string, options: readonly T[]): T {
  const found = options.find((option) => option === value);
  if (found === undefined) throw invalid(key, `one of ${options.join(', ')}`, value);
  return found;
}

function stringArray(value: unknown, key: string, item: (entry: unknown, key: string) => string): readonly string[] {
  if (!Array.isArray(value)) throw invalid(key, 'an array of strings', value);
  return value.map((entry: unknown, index) => item(entry, indexKey(key, index)));
}

function wsUrl(value: unknown, key: string): string | null {
  if (value === null) return null;
  const expected = 'null or a ws:// or wss:// URL';
  if (typeof value !== 'string') throw invalid(key, expected, value);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalid(key, expected, value);
  }
  if (url.protocol !== 'ws:' && url.protocol !== 'wss:') throw invalid(key, expected, value);
  return value;
}

function priorityRange(value: unknown, key: string): PriorityRange {
  const expected = 'an integer range [min, max] with min ≤ max';
  if (!Array.isArray(value) || value.length !== 2) throw invalid(key, expected, value);
  const [min, max] = value as readonly unknown[];
  const low = anyInteger(min, indexKey(key, 0));
  const high = anyInteger(max, indexKey(key, 1));
  if (low > high) {
    throw new ConfigError('CONFIG_INVALID', `${key}: expected ${expected}, got [${low}, ${high}]`, { key });
  }
  return [low, high];
}

// ---------------------------------------------------------------------------------------------------------------
// validateConfig

/**
 * Deep validation of a complete config (typically `mergeConfig`'s result). Returns a fresh deep-frozen copy; the
 * input is neither mutated nor frozen. Unknown keys → CONFIG_UNKNOWN_KEY, bad values → CONFIG_INVALID, both with
 * `key` set to the dotted path.
 */
export function validateConfig(value: unknown): Config {
  const root = section(value, '', [
    'bus', 'log', 'lang', 'pipeline', 'orchestrator', 'fallback', 'commonQuery', 'exampleSkills', 'shutdown', 'metrics', 'inspector', 'dialects',
  ]);

  const busIn = section(own(root, 'bus'), 'bus', [
    'host', 'port', 'route', 'url', 'maxFrameBytes', 'heartbeatMs', 'reconnectInitialMs', 'reconnectMaxMs',
  ]);
  const bus: Config['bus'] = {
    host: matching(own(busIn, 'host'), 'bus.host', /^\S+$/, 'a non-empty host name or address'),
    port: integer(own(busIn, 'port'), 'bus.port', 0, 65_535),
    route: matching(own(busIn, 'route'), 'bus.route', /^\/\S*$/, 'a path starting with "/"'),
    url: wsUrl(own(busIn, 'url'), 'bus.url'),
    maxFrameBytes: integer(own(busIn, 'maxFrameBytes'), 'bus.maxFrameBytes', 1, Number.MAX_SAFE_INTEGER),
    heartbeatMs: duration(own(busIn, 'heartbeatMs'), 'bus.heartbeatMs', true),
    reconnectInitialMs: duration(own(busIn, 'reconnectInitialMs'), 'bus.reconnectInitialMs', true),
    reconnectMaxMs: duration(own(busIn, 'reconnectMaxMs'), 'bus.reconnectMaxMs', true),
  };

  const logIn = section(own(root, 'log'), 'log', ['level']);
  const log: Config['log'] = { level: oneOf(own(logIn, 'level'), 'log.level', LOG_LEVELS) };

  const lang = matching(own(root, 'lang'), 'lang', LANG_TAG, 'a BCP 47 language tag such as "en-US"');
  // Unknown pipeline ids are skipped at run time (OVOS-PIPELINE-1), so any name is accepted here.
  const pipeline = stringArray(own(root, 'pipeline'), 'pipeline', nonEmptyString);

  const orchestratorIn = section(own(root, 'orchestrator'), 'orchestrator', ['matchTimeoutMs', 'handlerTimeoutMs']);
  const orchestrator: Config['orchestrator'] = {
    matchTimeoutMs: duration(own(orchestratorIn, 'matchTimeoutMs'), 'orchestrator.matchTimeoutMs', true),
    handlerTimeoutMs: duration(own(orchestratorIn, 'handlerTimeoutMs'), 'orchestrator.handlerTimeoutMs', true),
  };

  const fallback = validateFallback(own(root, 'fallback'));
  const commonQuery = validateCommonQuery(own(root, 'commonQuery'));
  const exampleSkills = boolean(own(root, 'exampleSkills'), 'exampleSkills');
  const shutdownIn = section(own(root, 'shutdown'), 'shutdown', ['graceMs']);
  const shutdown: Config['shutdown'] = { graceMs: duration(own(shutdownIn, 'graceMs'), 'shutdown.graceMs', false) };
  const metricsIn = section(own(root, 'metrics'), 'metrics', ['port']);
  const metricsPort = own(metricsIn, 'port');
  const metrics: Config['metrics'] = { port: metricsPort === null ? null : integer(metricsPort, 'metrics.port', 0, 65_535) };
  const inspectorIn = section(own(root, 'inspector'), 'inspector', ['enabled', 'port', 'recentUtterances']);
  const inspector: Config['inspector'] = {
    enabled: boolean(own(inspectorIn, 'enabled'), 'inspector.enabled'),
    port: integer(own(inspectorIn, 'port'), 'inspector.port', 0, 65_535),
    recentUtterances: integer(own(inspectorIn, 'recentUtterances'), 'inspector.recentUtterances', 1, 100_000),
  };
  const dialectsIn = section(own(root, 'dialects'), 'dialects', ['spec', 'legacy']);
  const dialects: Config['dialects'] = { spec: boolean(own(dialectsIn, 'spec'), 'dialects.spec'), legacy: boolean(own(dialectsIn, 'legacy'), 'dialects.legacy') };
  if (!dialects.spec && !dialects.legacy) throw new ConfigError('CONFIG_INVALID', 'dialects: at least one dialect must be on (spec, legacy)', { key: 'dialects' });

  const config: Config = { bus, log, lang, pipeline, orchestrator, fallback, commonQuery, exampleSkills, shutdown, metrics, inspector, dialects };
  checkRelations(config);
  return deepFreeze(config);
}

function validateFallback(value: unknown): Config['fallback'] {
  const input = section(value, 'fallback', [
    'pingTimeoutMs', 'stages', 'priorities', 'mode', 'whitelist', 'blacklist', 'suspendAfterTimeouts', 'suspendMs',
    'maxSkillsPerSession', 'maxSessions', 'registryFile',
  ]);

  const stagesIn = record(own(input, 'stages'), 'fallback.stages');
  const stages = nullProtoRecord(
    Object.entries(stagesIn).map(([id, range]): [string, PriorityRange] => {
      const key = childKey('fallback.stages', id);
      if (!PIPELINE_ID.test(id)) {
        throw new ConfigError(
          'CONFIG_INVALID',
          `${key}: a stage id is a pipeline_id and may use only [A-Za-z0-9_-] (OVOS-PIPELINE-1)`,
          { key },
        );
      }
      // OVOS-FALLBACK-1 §8.2: each stage is configured with an inclusive [min, max] integer interval.
      return [id, priorityRange(range, key)];
    }),
  );

  const prioritiesIn = record(own(input, 'priorities'), 'fallback.priorities');
  const priorities = nullProtoRecord(
    Object.entries(prioritiesIn).map(([skillId, priority]): [string, number] => {
      const key = childKey('fallback.priorities', skillId);
      if (skillId === '') throw new ConfigError('CONFIG_INVALID', `${key}: a skill id must not be empty`, { key });
      return [skillId, anyInteger(priority, key)];
    }),
  );

  return {
    pingTimeoutMs: duration(own(input, 'pingTimeoutMs'), 'fallback.pingTimeoutMs', true),
    stages,
    priorities,
    mode: oneOf(own(input, 'mode'), 'fallback.mode', FALLBACK_MODES),
    whitelist: stringArray(own(input, 'whitelist'), 'fallback.whitelist', nonEmptyString),
    blacklist: stringArray(own(input, 'blacklist'), 'fallback.blacklist', nonEmptyString),
    suspendAfterTimeouts: integer(own(input, 'suspendAfterTimeouts'), 'fallback.suspendAfterTimeouts', 1, Number.MAX_SAFE_INTEGER),
    suspendMs: duration(own(input, 'suspendMs'), 'fallback.suspendMs', true),
    maxSkillsPerSession: integer(own(input, 'maxSkillsPerSession'), 'fallback.maxSkillsPerSession', 1, Number.MAX_SAFE_INTEGER),
    maxSessions: integer(own(input, 'maxSessions'), 'fallback.maxSessions', 0, Number.MAX_SAFE_INTEGER),
    registryFile: own(input, 'registryFile') === null ? null : matching(own(input, 'registryFile'), 'fallback.registryFile', /^\S.*$/, 'a file path, or null to keep no registry on disk'),
  };
}

function validateCommonQuery(value: unknown): Config['commonQuery'] {
  const input = section(value, 'commonQuery', [
    'pipelineId', 'gate', 'earlyStart', 'pollWindowMs', 'pollClaimBoundMs', 'collectionInitialMs', 'collectionCeilingMs',
    'minConfidence', 'fastWinConfidence',
  ]);

  const gateIn = section(own(input, 'gate'), 'commonQuery.gate', ['enabled', 'minWords', 'vocabulary']);
  const vocabularyIn = record(own(gateIn, 'vocabulary'), 'commonQuery.gate.vocabulary');
  const vocabulary = nullProtoRecord(
    Object.entries(vocabularyIn).map(([language, words]): [string, GateConfig['vocabulary'][string]] => {
      const key = childKey('commonQuery.gate.vocabulary', language);
      if (!PRIMARY_SUBTAG.test(language)) {
        throw new ConfigError(
          'CONFIG_INVALID',
          `${key}: vocabulary is keyed by a lower-case primary language subtag such as "en"`,
          { key },
        );
      }
      const lists = section(words, key, ['question', 'command']);
      return [
        language,
        {
          question: stringArray(own(lists, 'question'), `${key}.question`, nonEmptyString),
          command: stringArray(own(lists, 'command'), `${key}.command`, nonEmptyString),
        },
      ];
    }),
  );
  const gate: GateConfig = {
    enabled: boolean(own(gateIn, 'enabled'), 'commonQuery.gate.enabled'),
    minWords: integer(own(gateIn, 'minWords'), 'commonQuery.gate.minWords', 0, Number.MAX_SAFE_INTEGER),
    vocabulary,
  };

  const fastWin = own(input, 'fastWinConfidence');
  return {
    pipelineId: matching(
      own(input, 'pipelineId'),
      'commonQuery.pipelineId',
      PIPELINE_ID,
      'a pipeline_id of [A-Za-z0-9_-] (OVOS-PIPELINE-1)',
    ),
    gate,
    earlyStart: boolean(own(input, 'earlyStart'), 'commonQuery.earlyStart'),
    pollWindowMs: duration(own(input, 'pollWindowMs'), 'commonQuery.pollWindowMs', true),
    pollClaimBoundMs: duration(own(input, 'pollClaimBoundMs'), 'commonQuery.pollClaimBoundMs', false),
    collectionInitialMs: duration(own(input, 'collectionInitialMs'), 'commonQuery.collectionInitialMs', false),
    collectionCeilingMs: duration(own(input, 'collectionCeilingMs'), 'commonQuery.collectionCeilingMs', true),
    minConfidence: unitInterval(own(input, 'minConfidence'), 'commonQuery.minConfidence'),
    fastWinConfidence: fastWin === null ? null : unitInterval(fastWin, 'commonQuery.fastWinConfidence'),
  };
}

/** Constraints between fields, checked once every field is known to be well-typed. */
function checkRelations(config: Config): void {
  const fail = (key: string, message: string): never => {
    throw new ConfigError('CONFIG_INVALID', `${key}: ${message}`, { key });
  };
  const { bus, orchestrator, fallback, commonQuery: cq } = config;

  if (bus.reconnectInitialMs > bus.reconnectMaxMs) {
    fail('bus.reconnectInitialMs', `must be ≤ bus.reconnectMaxMs (${bus.reconnectMaxMs}), got ${bus.reconnectInitialMs}`);
  }
  if (cq.pollClaimBoundMs > cq.pollWindowMs) {
    fail('commonQuery.pollClaimBoundMs', `must be ≤ commonQuery.pollWindowMs (${cq.pollWindowMs}), got ${cq.pollClaimBoundMs}`);
  }
  if (cq.collectionInitialMs > cq.collectionCeilingMs) {
    fail(
      'commonQuery.collectionInitialMs',
      `must be ≤ commonQuery.collectionCeilingMs (${cq.collectionCeilingMs}), got ${cq.collectionInitialMs}`,
    );
  }
  if (cq.fastWinConfidence !== null && cq.fastWinConfidence < cq.minConfidence) {
    fail(
      'commonQuery.fastWinConfidence',
      `must be null or ≥ commonQuery.minConfidence (${cq.minConfidence}), got ${cq.fastWinConfidence}`,
    );
  }
  // OVOS-COMMON-QUERY-1 §2.1 (bound interaction): a match bound below the contest's worst case skips the stage
  // mid-contest. The worst case is the whole poll window followed by the whole collection window.
  const contestMs = cq.pollWindowMs + cq.collectionCeilingMs;
  if (orchestrator.matchTimeoutMs < contestMs) {
    fail(
      'orchestrator.matchTimeoutMs',
      `must be ≥ commonQuery.pollWindowMs + commonQuery.collectionCeilingMs = ${contestMs}, got ` +
        `${orchestrator.matchTimeoutMs}; a shorter match bound would skip the common query stage mid-contest ` +
        '(OVOS-COMMON-QUERY-1 §2.1)',
    );
  }
  if (Object.hasOwn(fallback.stages, cq.pipelineId)) {
    fail(
      childKey('fallback.stages', cq.pipelineId),
      `a fallback stage may not share commonQuery.pipelineId ("${cq.pipelineId}")`,
    );
  }
}

// ---------------------------------------------------------------------------------------------------------------
// configWarnings

/** Why a valid config still works against itself (the `reason` of its warn line). */
export type ConfigWarningReason =
  | 'match_bound_below_ping_timeout'
  | 'match_bound_below_common_query'
  | 'fallback_whitelist_empty'
  | 'fallback_list_ignored'
  | 'priority_override_unstaged'
  | 'priorities_unstaged'
  | 'stage_ranges_overlap';

export interface ConfigWarning {
  readonly reason: ConfigWarningReason;
  /** Dotted path of the key to change. */
  readonly key: string;
  /** What goes wrong at run time because of it, and what to change. */
  readonly message: string;
  /** The numbers and names behind it (snake_case, logged with the line). */
  readonly details: Readonly<Record<string, unknown>>;
}

/** OVOS-FALLBACK-1 §3.3: the priority space the recommended tiers (and the catch-all at 100) live in. */
const PRIORITY_SPACE: PriorityRange = [0, 100];

const inRange = (priority: number, [min, max]: PriorityRange): boolean => priority >= min && priority <= max;
const span = ([min, max]: PriorityRange): string => (min === max ? `${min}` : `${min}–${max}`);

/**
 * Everything a config reveals, before any utterance, that will cut a contest short or leave a skill unasked
 * without an error: validation accepts these (they may be deliberate), so `createContestSystem` logs each one at
 * warn once when the system is built — the daemon's start included. Pure; `[]` for the defaults.
 */
export function configWarnings(config: Config): ConfigWarning[] {
  const warnings: ConfigWarning[] = [];
  const { orchestrator, fallback, commonQuery: cq } = config;
  const bound = orchestrator.matchTimeoutMs;

  // OVOS-FALLBACK-1 §6.1 × PIPELINE-1 §4.4: the stage's match is bounded as a whole, the skills are asked one by one.
  if (bound <= fallback.pingTimeoutMs) {
    warnings.push({
      reason: 'match_bound_below_ping_timeout',
      key: 'orchestrator.matchTimeoutMs',
      message:
        `orchestrator.matchTimeoutMs (${bound} ms) ≤ fallback.pingTimeoutMs (${fallback.pingTimeoutMs} ms): one silent ` +
        'fallback skill uses up the whole match bound, so every skill after it in its stage — the catch-all included — ' +
        'is never asked (OVOS-FALLBACK-1 §6.1, OVOS-PIPELINE-1 §4.4); raise orchestrator.matchTimeoutMs or lower fallback.pingTimeoutMs',
      details: { match_timeout_ms: bound, ping_timeout_ms: fallback.pingTimeoutMs },
    });
  }
  // OVOS-COMMON-QUERY-1 §2.1. validateConfig refuses this; a Config built in code reaches createContestSystem unchecked.
  const contestMs = cq.pollWindowMs + cq.collectionCeilingMs;
  if (contestMs > bound) {
    warnings.push({
      reason: 'match_bound_below_common_query',
      key: 'orchestrator.matchTimeoutMs',
      message:
        `commonQuery.pollWindowMs + commonQuery.collectionCeilingMs (${contestMs} ms) > orchestrator.matchTimeoutMs ` +
        `(${bound} ms): a question whose skills take the whole poll and collection windows is cut mid-contest by the ` +
        'match bound and never answered (OVOS-COMMON-QUERY-1 §2.1); raise orchestrator.matchTimeoutMs or lower the ceilings',
      details: { match_timeout_ms: bound, poll_window_ms: cq.pollWindowMs, collection_ceiling_ms: cq.collectionCeilingMs, contest_ceiling_ms: contestMs },
    });
  }

  // Access control (ovos-core fallback_mode).
  if (fallback.mode === 'whitelist' && fallback.whitelist.length === 0) {
    warnings.push({
      reason: 'fallback_whitelist_empty',
      key: 'fallback.whitelist',
      message: 'fallback.mode is whitelist and fallback.whitelist is empty: no fallback skill is ever asked, the catch-all included (OVOS-FALLBACK-1 §3.3)',
      details: { mode: fallback.mode },
    });
  }
  for (const list of ['whitelist', 'blacklist'] as const) {
    if (fallback[list].length > 0 && fallback.mode !== list) {
      warnings.push({
        reason: 'fallback_list_ignored',
        key: `fallback.${list}`,
        message: `fallback.${list} names ${fallback[list].length} skill(s) but fallback.mode is ${fallback.mode}: the list is ignored`,
        details: { mode: fallback.mode, skills: [...fallback[list]] },
      });
    }
  }

  // OVOS-FALLBACK-1 §8.2: stage ranges. No stage at all is fallback switched off, not a gap.
  const stages = Object.entries(fallback.stages);
  if (stages.length > 0) {
    for (const [skillId, priority] of Object.entries(fallback.priorities)) {
      if (stages.some(([, range]) => inRange(priority, range))) continue;
      warnings.push({
        reason: 'priority_override_unstaged',
        key: childKey('fallback.priorities', skillId),
        message: `fallback.priorities gives ${skillId} priority ${priority}, which no fallback stage covers: that skill is never asked (OVOS-FALLBACK-1 §8.2)`,
        details: { skill_id: skillId, priority, stages: Object.fromEntries(stages) },
      });
    }
    const uncovered: PriorityRange[] = [];
    for (let priority = PRIORITY_SPACE[0]; priority <= PRIORITY_SPACE[1]; priority++) {
      if (stages.some(([, range]) => inRange(priority, range))) continue;
      const last = uncovered[uncovered.length - 1];
      if (last !== undefined && last[1] === priority - 1) uncovered[uncovered.length - 1] = [last[0], priority];
      else uncovered.push([priority, priority]);
    }
    if (uncovered.length > 0) {
      warnings.push({
        reason: 'priorities_unstaged',
        key: 'fallback.stages',
        message:
          `priorities ${uncovered.map(span).join(', ')} are covered by no fallback stage: a skill registered there is never ` +
          'asked (OVOS-FALLBACK-1 §8.2; §3.3 recommends priorities 0–100, the catch-all at 100)',
        details: { uncovered, stages: Object.fromEntries(stages) },
      });
    }
    for (let i = 0; i < stages.length; i++) {
      for (let j = i + 1; j < stages.length; j++) {
        const [a, [aMin, aMax]] = stages[i]!;
        const [b, [bMin, bMax]] = stages[j]!;
        const overlap: PriorityRange = [Math.max(aMin, bMin), Math.min(aMax, bMax)];
        if (overlap[0] > overlap[1]) continue;
        warnings.push({
          reason: 'stage_ranges_overlap',
          key: 'fallback.stages',
          message:
            `fallback stages ${a} and ${b} both cover priorities ${span(overlap)}: a skill registered there is asked by ` +
            'both, twice per utterance (a silent one costs two ping timeouts) (OVOS-FALLBACK-1 §8.2)',
          details: { stages: [a, b], overlap },
        });
      }
    }
  }
  return warnings;
}

// ---------------------------------------------------------------------------------------------------------------
// mergeConfig

/** Records keyed by the deployer (not by us): merged entry by entry, and a `null` entry removes one. */
const RECORD_PATHS: ReadonlySet<string> = new Set(['fallback.stages', 'fallback.priorities', 'commonQuery.gate.vocabulary']);

function mergeValue(base: unknown, override: unknown, path: string): unknown {
  if (!isPlainObject(base) || !isPlainObject(override)) return override;
  const isRecord = RECORD_PATHS.has(path);
  const merged = new Map<string, unknown>(Object.entries(base));
  for (const [name, value] of Object.entries(override)) {
    if (isRecord && value === null) {
      merged.delete(name);
      continue;
    }
    merged.set(name, mergeValue(merged.get(name), value, path === '' ? name : `${path}.${name}`));
  }
  // fromEntries defines own properties, so a "__proto__" key from JSON stays data (and is reported as unknown).
  return Object.fromEntries(merged);
}

/**
 * Deep merge of a partial JSON object over `base`: objects merge key by key (including the records
 * `fallback.stages`, `fallback.priorities`, `commonQuery.gate.vocabulary`, where a `null` entry deletes that
 * entry); arrays and scalars replace. Unknown keys are carried through for `validateConfig` to report.
 * `origin` names the layer in the error thrown when `override` is not an object.
 */
export function mergeConfig(base: Config, override: unknown, origin: string): unknown {
  if (!isPlainObject(override)) {
    throw new ConfigError('CONFIG_INVALID', `${origin}: expected an object of config keys, got ${describe(override)}`);
  }
  return mergeValue(base, override, '');
}

// ---------------------------------------------------------------------------------------------------------------
// Command line and environment

interface ValueOption {
  readonly kind: 'value';
  readonly flag: string;
  readonly env: string;
  readonly key: string;
  readonly meta: string;
  readonly numeric: boolean;
  readonly help: string;
}

interface SwitchOption {
  readonly kind: 'switch';
  readonly flag: string;
  readonly key: string;
  readonly value: boolean | null;
  readonly help: string;
}

const CONFIG_FLAG = '--config';
const CONFIG_ENV = 'OVOS_CONTESTS_CONFIG';
const MYCROFT_FLAG = '--mycroft-conf';
const NO_MYCROFT_FLAG = '--no-mycroft-conf';
const MYCROFT_ENV = 'OVOS_CONTESTS_MYCROFT_CONF';

const OPTIONS: readonly (ValueOption | SwitchOption)[] = [
  { kind: 'value', flag: '--host', env: 'OVOS_CONTESTS_HOST', key: 'bus.host', meta: 'HOST', numeric: false, help: 'bind address of the embedded bus server' },
  { kind: 'value', flag: '--port', env: 'OVOS_CONTESTS_PORT', key: 'bus.port', meta: 'PORT', numeric: true, help: 'port of the embedded bus server (0 = any free port)' },
  { kind: 'value', flag: '--route', env: 'OVOS_CONTESTS_ROUTE', key: 'bus.route', meta: 'PATH', numeric: false, help: 'websocket route of the bus' },
  { kind: 'value', flag: '--bus', env: 'OVOS_CONTESTS_BUS', key: 'bus.url', meta: 'URL', numeric: false, help: 'connect to this existing OVOS messagebus (ws:// or wss://) instead of serving one' },
  { kind: 'value', flag: '--log-level', env: 'OVOS_CONTESTS_LOG_LEVEL', key: 'log.level', meta: 'LEVEL', numeric: false, help: `one of ${LOG_LEVELS.join(', ')}` },
  { kind: 'value', flag: '--lang', env: 'OVOS_CONTESTS_LANG', key: 'lang', meta: 'TAG', numeric: false, help: 'deployment default language (BCP 47)' },
  { kind: 'switch', flag: '--example-skills', key: 'exampleSkills', value: true, help: 'start the bundled example skills' },
  { kind: 'switch', flag: '--no-example-skills', key: 'exampleSkills', value: false, help: 'do not start the bundled example skills' },
  { kind: 'value', flag: '--registry-file', env: 'OVOS_CONTESTS_REGISTRY_FILE', key: 'fallback.registryFile', meta: 'FILE', numeric: false, help: 'keep fallback registrations across restarts in FILE ($STATE/ = $XDG_STATE_HOME/ovos-contests/)' },
  { kind: 'switch', flag: '--no-registry-file', key: 'fallback.registryFile', value: null, help: 'keep no registrations on disk (a restart forgets skills that do not register again)' },
  { kind: 'value', flag: '--metrics-port', env: 'OVOS_CONTESTS_METRICS_PORT', key: 'metrics.port', meta: 'PORT', numeric: true, help: 'serve Prometheus metrics at http://127.0.0.1:PORT/metrics (0 = any free port)' },
  { kind: 'value', flag: '--inspector-port', env: 'OVOS_CONTESTS_INSPECTOR_PORT', key: 'inspector.port', meta: 'PORT', numeric: true, help: 'port of the live inspector page on 127.0.0.1 (0 = any free port)' },
  { kind: 'switch', flag: '--inspector', key: 'inspector.enabled', value: true, help: 'serve the live inspector page' },
  { kind: 'switch', flag: '--no-inspector', key: 'inspector.enabled', value: false, help: 'do not serve the live inspector page' },
];

const KNOWN_FLAGS = [CONFIG_FLAG, MYCROFT_FLAG, NO_MYCROFT_FLAG, ...OPTIONS.map((option) => option.flag), '--help'];

/** Flag and env values are strings; a numeric key takes a number when the string is one. */
function coerce(option: ValueOption, raw: string): unknown {
  if (!option.numeric) return raw;
  const trimmed = raw.trim();
  return /^-?\d+(\.\d+)?$/.test(trimmed) ? Number(trimmed) : raw;
}

function setPath(target: Record<string, unknown>, dotted: string, value: unknown): void {
  const parts = dotted.split('.');
  const last = parts.pop() ?? dotted;
  let node = target;
  for (const part of parts) {
    const next = node[part];
    if (isPlainObject(next)) {
      node = next as Record<string, unknown>;
    } else {
      const created: Record<string, unknown> = {};
      node[part] = created;
      node = created;
    }
  }
  node[last] = value;
}

/** One layer built from env vars or flags, with the source of each key for error messages. */
interface Layer {
  readonly override: Record<string, unknown>;
  readonly origins: Map<string, string>;
}

function emptyLayer(): Layer {
  return { override: {}, origins: new Map() };
}

function put(layer: Layer, key: string, value: unknown, origin: string): void {
  setPath(layer.override, key, value);
  layer.origins.set(key, origin);
}

interface ParsedArgv {
  readonly flags: Layer;
  readonly configFile?: string;
  readonly mycroftFile?: string;
  readonly noMycroft: boolean;
}

function parseArgv(argv: readonly string[]): ParsedArgv {
  const flags = emptyLayer();
  let configFile: string | undefined;
  let mycroftFile: string | undefined;
  let noMycroft = false;

  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i] ?? '';
    // --help is the caller's to act on; tolerated here so the caller may check before or after loading.
    if (arg === '--help' || arg === '-h') continue;
    if (!arg.startsWith('--')) {
      throw new ConfigError('CONFIG_UNKNOWN_FLAG', `unexpected argument ${JSON.stringify(arg)} (see --help)`);
    }
    const eq = arg.indexOf('=');
    const flag = eq === -1 ? arg : arg.slice(0, eq);
    const inline = eq === -1 ? undefined : arg.slice(eq + 1);

    const takeValue = (key: string | undefined, meta: string): string => {
      if (inline !== undefined) return inline;
      const next = argv[i + 1];
      if (next === undefined || next.startsWith('--')) {
        const prefix = key === undefined ? flag : `${key}: ${flag}`;
        throw new ConfigError('CONFIG_INVALID', `${prefix} expects a value (${meta})`, key === undefined ? {} : { key });
      }
      i += 1;
      return next;
    };

    if (flag === CONFIG_FLAG) {
      configFile = takeValue(undefined, 'FILE');
      if (configFile === '') throw new ConfigError('CONFIG_INVALID', `${CONFIG_FLAG} expects a file path`);
      continue;
    }
    if (flag === MYCROFT_FLAG) {
      mycroftFile = takeValue(undefined, 'FILE');
      if (mycroftFile === '') throw new ConfigError('CONFIG_INVALID', `${MYCROFT_FLAG} expects a file path`);
      continue;
    }
    if (flag === NO_MYCROFT_FLAG) {
      if (inline !== undefined) throw new ConfigError('CONFIG_INVALID', `${NO_MYCROFT_FLAG} takes no value`);
      noMycroft = true;
      continue;
    }
    const option = OPTIONS.find((candidate) => candidate.flag === flag);
    if (option === undefined) {
      const hint = didYouMean(flag, KNOWN_FLAGS);
      const suggestion = hint === undefined ? '' : ` (did you mean ${hint}?)`;
      throw new ConfigError('CONFIG_UNKNOWN_FLAG', `unknown flag ${flag}${suggestion}`);
    }
    if (option.kind === 'switch') {
      if (inline !== undefined) {
        throw new ConfigError('CONFIG_INVALID', `${option.key}: ${flag} takes no value`, { key: option.key });
      }
      put(flags, option.key, option.value, flag);
    } else {
      put(flags, option.key, coerce(option, takeValue(option.key, option.meta)), flag);
    }
  }
  if (noMycroft && mycroftFile !== undefined) {
    throw new ConfigError('CONFIG_INVALID', `${MYCROFT_FLAG} and ${NO_MYCROFT_FLAG} contradict each other: give one`);
  }
  return {
    flags,
    noMycroft,
    ...(configFile === undefined ? {} : { configFile }),
    ...(mycroftFile === undefined ? {} : { mycroftFile }),
  };
}

function envLayer(env: Readonly<Record<string, string | undefined>>): Layer {
  const layer = emptyLayer();
  for (const option of OPTIONS) {
    if (option.kind !== 'value') continue;
    const raw = env[option.env];
    // An empty variable counts as unset (the shell idiom `VAR= cmd`).
    if (raw !== undefined && raw !== '') put(layer, option.key, coerce(option, raw), option.env);
  }
  return layer;
}

function readConfigFile(path: string, readFile: (path: string) => string): unknown {
  let text: string;
  try {
    text = readFile(path);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ConfigError('CONFIG_FILE_UNREADABLE', `config file ${path}: cannot read it (${reason})`, { cause: error });
  }
  try {
    return JSON.parse(text.replace(/^\uFEFF/, '')) as unknown;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ConfigError('CONFIG_FILE_NOT_JSON', `config file ${path}: not valid JSON (${reason})`, { cause: error });
  }
}

/** `fallback.priorities["a.skill"]` → `fallback.priorities`, `pipeline[2]` → `pipeline`, `bus.port` → `bus`. */
function parentKey(key: string): string | undefined {
  const cut = key.endsWith(']') ? key.lastIndexOf('[') : key.lastIndexOf('.');
  return cut <= 0 ? undefined : key.slice(0, cut);
}

/** The origin recorded for `key` or, failing that, for the nearest key above it (a record entry, an array item). */
function originOf(key: string | undefined, origins: ReadonlyMap<string, string> | undefined): string | undefined {
  for (let current = key; current !== undefined; current = parentKey(current)) {
    const found = origins?.get(current);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** Merge one layer and validate at once, so an error says which layer introduced it. */
function applyLayer(base: Config, override: unknown, origin: string, origins?: ReadonlyMap<string, string>): Config {
  const merged = mergeConfig(base, override, origin);
  try {
    return validateConfig(merged);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    const source = originOf(error.key, origins) ?? origin;
    throw new ConfigError(error.code, `${error.message} (from ${source})`, {
      ...(error.key === undefined ? {} : { key: error.key }),
      cause: error,
    });
  }
}

/** What the mycroft.conf layer did, for the daemon to log once at start. */
export interface MycroftReport {
  /** The mycroft.conf files layered in, lowest precedence first; empty when none was found. */
  readonly files: readonly string[];
  /** Each of our keys the layer set (and that no higher layer dropped) → where it came from. */
  readonly keys: ReadonlyMap<string, MycroftOrigin>;
  /** mycroft.conf keys the OVOS programs read that we deliberately do not take, present in those files. */
  readonly ignored: readonly MycroftIgnoredKey[];
  /** Lines to log at their level (a skipped file, the legacy location, a bus not joined, nothing found). */
  readonly notes: readonly MycroftNote[];
}

export interface CliOptions {
  config: Config;
  /** The JSON file that was layered in, as given (flag or env), if any. */
  configFile?: string;
  /** Set when a mycroft.conf was looked for (discovery) or named (`--mycroft-conf`). */
  mycroft?: MycroftReport;
}

export interface LoadConfigOptions {
  /** Arguments after the script name (`process.argv.slice(2)`). */
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Injected for tests; defaults to reading UTF-8 from disk. Also reads a `--mycroft-conf` file. */
  readonly readFile?: (path: string) => string;
  /**
   * Look for the deployment's mycroft.conf where ovos-config does (mycroft-conf.ts), `env` supplying the XDG and
   * OVOS_* variables. Absent: no discovery — only a file named with `--mycroft-conf` / OVOS_CONTESTS_MYCROFT_CONF is
   * read. The daemon passes the real home directory; tests pass a fake one and a fake `readFile` (`undefined` for
   * no such file), so no test reads the real /etc or ~.
   */
  readonly mycroftDiscovery?: { readonly home: string; readonly readFile?: (path: string) => string | undefined };
}

const BUS_KEYS = ['url', 'host', 'port', 'route'] as const;

/** The first place among our own layers that names a bus (where to serve or what to join), if any. */
function busNamedBy(file: { readonly path: string; readonly data: unknown } | undefined, layers: readonly Layer[]): { key: string; by: string } | undefined {
  for (const layer of [...layers].reverse()) {
    for (const name of BUS_KEYS) {
      const by = layer.origins.get(`bus.${name}`);
      if (by !== undefined) return { key: `bus.${name}`, by };
    }
  }
  if (file !== undefined && isPlainObject(file.data) && isPlainObject(own(file.data, 'bus'))) {
    const bus = own(file.data, 'bus') as JsonRecord;
    const name = BUS_KEYS.find((candidate) => Object.hasOwn(bus, candidate));
    if (name !== undefined) return { key: `bus.${name}`, by: `config file ${file.path}` };
  }
  return undefined;
}

/** The mycroft.conf files to layer in: the one named, or those discovery finds; `undefined` when neither applies. */
function mycroftFiles(
  options: LoadConfigOptions,
  parsed: ParsedArgv,
  readFile: (path: string) => string,
): { readonly files: readonly MycroftConfText[]; readonly notes: readonly MycroftNote[] } | undefined {
  if (parsed.noMycroft) return undefined;
  const named = parsed.mycroftFile ?? (options.env[MYCROFT_ENV] === '' ? undefined : options.env[MYCROFT_ENV]);
  if (named !== undefined) {
    let text: string;
    try {
      text = readFile(named);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new ConfigError('CONFIG_FILE_UNREADABLE', `mycroft.conf ${named}: cannot read it (${reason})`, { cause: error });
    }
    return { files: [{ path: named, kind: 'explicit', text }], notes: [] };
  }
  if (options.mycroftDiscovery === undefined) return undefined;
  const found = discoverMycroftConf({
    env: options.env,
    home: options.mycroftDiscovery.home,
    readFile: options.mycroftDiscovery.readFile ?? readFileIfPresent,
  });
  return { files: found.files, notes: found.notes };
}

/**
 * DEFAULT_CONFIG → mycroft.conf (`--mycroft-conf FILE`, else OVOS_CONTESTS_MYCROFT_CONF, else discovery when
 * `mycroftDiscovery` is given; none with `--no-mycroft-conf`) → JSON file (`--config FILE`, else
 * OVOS_CONTESTS_CONFIG) → environment → flags, each layer validated as it is applied. A mycroft.conf joins the
 * deployment's bus unless one of our layers names a bus (bus.url, host, port or route). Throws ConfigError;
 * `--help`/`-h` are ignored (the caller acts on them).
 */
export function loadConfig(options: LoadConfigOptions): CliOptions {
  const readFile = options.readFile ?? ((path: string) => readFileSync(path, 'utf8'));
  const parsed = parseArgv(options.argv);
  const { flags, configFile: fileFromFlag } = parsed;
  const fileFromEnv = options.env[CONFIG_ENV];
  const configFile = fileFromFlag ?? (fileFromEnv === undefined || fileFromEnv === '' ? undefined : fileFromEnv);
  const fileData = configFile === undefined ? undefined : readConfigFile(configFile, readFile);
  const env = envLayer(options.env);

  let config = applyLayer(DEFAULT_CONFIG, {}, 'defaults');
  let mycroft: MycroftReport | undefined;
  const sources = mycroftFiles(options, parsed, readFile);
  if (sources !== undefined) {
    const layer = mycroftLayer(sources.files, config);
    const notes = [...sources.notes, ...layer.notes];
    const values = new Map(layer.values);
    const keys = new Map(layer.origins);
    const busOwner = layer.joinKeys.length === 0 ? undefined : busNamedBy(configFile === undefined ? undefined : { path: configFile, data: fileData }, [env, flags]);
    if (busOwner !== undefined) {
      const url = values.get('bus.url');
      for (const key of layer.joinKeys) {
        values.delete(key);
        keys.delete(key);
      }
      notes.push({
        level: 'info',
        reason: 'mycroft_conf_bus_not_joined',
        message:
          `mycroft.conf names the deployment's messagebus (${String(url)}), but ${busOwner.by} sets ${busOwner.key}, which ` +
          'wins: the bus is as our config says, and exampleSkills keeps its own value',
      });
    }
    const origins = new Map([...keys].map(([key, origin]) => [key, `mycroft.conf ${origin.files.length === 0 ? layer.files.join(', ') : origin.files.join(', ')}: ${origin.from}`]));
    config = applyLayer(config, overrideOf(values), `mycroft.conf ${layer.files.join(', ')}`, origins);
    mycroft = { files: layer.files, keys, ignored: layer.ignored, notes };
  }
  if (configFile !== undefined) {
    config = applyLayer(config, fileData, `config file ${configFile}`);
  }
  config = applyLayer(config, env.override, 'environment', env.origins);
  config = applyLayer(config, flags.override, 'command line', flags.origins);

  return {
    config,
    ...(configFile === undefined ? {} : { configFile }),
    ...(mycroft === undefined ? {} : { mycroft }),
  };
}

/** The report's one info line: the files, our key → "file: mycroft.conf key", and the keys not taken. */
export function describeMycroftReport(report: MycroftReport): {
  readonly files: readonly string[];
  readonly keys: Record<string, string>;
  readonly ignored: Record<string, string>;
} {
  return { files: report.files, ...describeMycroftOrigins(report.keys, report.ignored) };
}

/** Usage text: flags, environment variables and their defaults. */
export function configHelp(): string {
  const defaults = new Map<string, unknown>([
    ['bus.host', DEFAULT_CONFIG.bus.host],
    ['bus.port', DEFAULT_CONFIG.bus.port],
    ['bus.route', DEFAULT_CONFIG.bus.route],
    ['bus.url', DEFAULT_CONFIG.bus.url],
    ['log.level', DEFAULT_CONFIG.log.level],
    ['lang', DEFAULT_CONFIG.lang],
    ['exampleSkills', DEFAULT_CONFIG.exampleSkills],
    ['inspector.port', DEFAULT_CONFIG.inspector.port],
    ['metrics.port', DEFAULT_CONFIG.metrics.port],
    ['fallback.registryFile', DEFAULT_CONFIG.fallback.registryFile],
    ['inspector.enabled', DEFAULT_CONFIG.inspector.enabled],
  ]);
  const rows: [string, string][] = [
    [`${CONFIG_FLAG} FILE`, `JSON file of config keys, layered over the defaults and mycroft.conf (env ${CONFIG_ENV})`],
    [`${MYCROFT_FLAG} FILE`, `read this mycroft.conf instead of looking where ovos-config does (env ${MYCROFT_ENV})`],
    [NO_MYCROFT_FLAG, 'read no mycroft.conf at all'],
  ];
  for (const option of OPTIONS) {
    if (option.kind === 'value') {
      const fallback = defaults.get(option.key);
      const shown = fallback === null ? 'none' : String(fallback);
      rows.push([`${option.flag} ${option.meta}`, `${option.help}; ${option.key}, default ${shown} (env ${option.env})`]);
    } else {
      rows.push([option.flag, `${option.help}${option.value === defaults.get(option.key) ? ' (default)' : ''}`]);
    }
  }
  rows.push(['-h, --help', 'show this help']);
  const width = Math.max(...rows.map(([left]) => left.length));
  return [
    'Options (also --flag=value). Precedence, lowest to highest: defaults, mycroft.conf, config file, environment, flags.',
    "A mycroft.conf (/etc/mycroft, ~/.config/mycroft, … as ovos-config finds it) means an OVOS deployment: its",
    'messagebus is joined (websocket.*) unless --bus, --host, --port or --route (or the same keys in env or the config',
    'file) say otherwise, and its fallback and common query settings are taken (README, Configuration).',
    '',
    ...rows.map(([left, right]) => `  ${left.padEnd(width)}  ${right}`),
    '',
    'Every other key (timeouts, fallback stages, common query thresholds) is set in the config file, e.g.',
    '  { "commonQuery": { "minConfidence": 0.6 }, "fallback": { "stages": { "fallback_low": [75, 100] } } }',
    '',
  ].join('\n');
}
