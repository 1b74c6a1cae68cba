/**
 * Configuration: layering, validation, the command line.
 *
 * Every key is declared once, in schema.ts; this file applies it. Layers, lowest to highest: DEFAULT_CONFIG → the
 * deployment's mycroft.conf (mycroft-conf.ts: where ovos-config finds it, or `--mycroft-conf FILE` /
 * OVOS_CONTESTS_MYCROFT_CONF; `--no-mycroft-conf` skips it) → JSON file (`--config FILE` or OVOS_CONTESTS_CONFIG) →
 * environment variables → flags. Each layer is merged over the previous one and the result validated at once, so an
 * error names both the dotted key and the layer that introduced it. The validated config is a fresh,
 * deep-frozen object; the records `fallback.stages`, `fallback.priorities` and `commonQuery.gate.vocabulary` have a
 * null prototype, so a lookup by a skill id read off the bus (e.g. "constructor") never finds an inherited member.
 */

import { readRegularFile } from './secret-file.js';
import { nestsDeeperThan } from '../bus/message.js';
import { parseArgs } from 'node:util';
import { z } from 'zod';

import { DEFAULT_CONFIG } from './defaults.js';
import { childKey, ConfigError, describeValue, didYouMean, keyOf } from './errors.js';
import {
  describeMycroftOrigins,
  discoverMycroftConf,
  mycroftLayer,
  overrideOf,
  MAX_CONFIG_DEPTH,
  readFileIfPresent,
  type MycroftConfText,
  type MycroftIgnoredKey,
  type MycroftNote,
  type MycroftOrigin,
} from './mycroft-conf.js';
import { CONFIG_KEYS, ConfigSchema, freezeConfig, type Config, type PriorityRange } from './schema.js';

export { ConfigError, formatConfigError, type ConfigErrorCode } from './errors.js';

type JsonRecord = Readonly<Record<string, unknown>>;

function isPlainObject(value: unknown): value is JsonRecord {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function own(record: JsonRecord, key: string): unknown {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

// ---------------------------------------------------------------------------------------------------------------
// validateConfig

/** A schema issue as a ConfigError: the key it is about, the message the schema wrote for it. */
function configErrorOf(issue: z.core.$ZodIssue): ConfigError {
  if (issue.code === 'unrecognized_keys') {
    return new ConfigError('CONFIG_UNKNOWN_KEY', issue.message, { key: childKey(keyOf(issue.path), issue.keys[0] ?? '') });
  }
  const key = keyOf(issue.path);
  return key === ''
    ? new ConfigError('CONFIG_INVALID', `config: ${issue.message}`)
    : new ConfigError('CONFIG_INVALID', issue.message, { key });
}

/**
 * Validation of a config (typically `mergeConfig`'s result) against the schema; a key left out takes its default.
 * Returns a fresh deep-frozen copy; the input is neither mutated nor frozen. An unknown key → CONFIG_UNKNOWN_KEY
 * (reported first: a typo often explains the rest), a bad value → CONFIG_INVALID, both with `key` set to the dotted
 * path and a message that does not repeat it.
 */
export function validateConfig(value: unknown): Config {
  const result = ConfigSchema.safeParse(value);
  if (result.success) return freezeConfig(result.data);
  const { issues } = result.error;
  const first = issues.find((issue) => issue.code === 'unrecognized_keys') ?? issues[0];
  throw first === undefined ? new ConfigError('CONFIG_INVALID', 'config: invalid') : configErrorOf(first);
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
        message: `fallback.priorities gives ${skillId} priority ${priority}, which no fallback stage covers: that skill is asked by the nearest stage instead (OVOS-FALLBACK-1 §8.2; src/plugins/README.md "No registration is unreachable")`,
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
          `priorities ${uncovered.map(span).join(', ')} are covered by no fallback stage: a skill registered there is asked ` +
          'by the nearest stage instead (OVOS-FALLBACK-1 §8.2; §3.3 recommends priorities 0–100, the catch-all at 100)',
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
    throw new ConfigError('CONFIG_INVALID', `${origin}: expected an object of config keys, got ${describeValue(override)}`);
  }
  return mergeValue(base, override, '');
}
// ---------------------------------------------------------------------------------------------------------------
// Command line and environment

/** A flag (and environment variable) that takes the key's value. */
interface ValueOption {
  readonly kind: 'value';
  readonly key: string;
  readonly flag: `--${string}`;
  readonly arg: string;
  readonly env: string;
  /** Flag and env values are strings; a numeric key takes a number when the string is one. */
  readonly numeric: boolean;
  readonly help: string;
}

/** A flag that sets the key to a fixed value. */
interface SwitchOption {
  readonly kind: 'switch';
  readonly key: string;
  readonly flag: `--${string}`;
  readonly value: boolean | null;
  readonly help: string;
}

const CONFIG_FLAG = '--config';
const CONFIG_ENV = 'OVOS_CONTESTS_CONFIG';
const MYCROFT_FLAG = '--mycroft-conf';
const NO_MYCROFT_FLAG = '--no-mycroft-conf';
const MYCROFT_ENV = 'OVOS_CONTESTS_MYCROFT_CONF';

/** Whether a key takes a number (a port): then a flag or env value that reads as one is given as one. */
function acceptsNumbers(schema: z.ZodType): boolean {
  let node = schema;
  while (node instanceof z.ZodDefault || node instanceof z.ZodNullable) node = node.unwrap() as z.ZodType;
  return node instanceof z.ZodNumber;
}

/** The flags, from the schema's metadata (schema.ts), in declaration order. */
const OPTIONS: readonly (ValueOption | SwitchOption)[] = CONFIG_KEYS.flatMap(({ key, description, meta, schema }) => [
  ...(meta?.flag === undefined
    ? []
    : [{ kind: 'value', key, flag: meta.flag.name, arg: meta.flag.arg, env: meta.flag.env, numeric: acceptsNumbers(schema), help: description } as const]),
  ...(meta?.switches ?? []).map((option) => ({ kind: 'switch', key, ...option }) as const),
]);

/** The `parseArgs` table: our own flags, then the schema's. */
const PARSE_OPTIONS = {
  [CONFIG_FLAG.slice(2)]: { type: 'string' },
  [MYCROFT_FLAG.slice(2)]: { type: 'string' },
  [NO_MYCROFT_FLAG.slice(2)]: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  ...Object.fromEntries(OPTIONS.map((option) => [option.flag.slice(2), { type: option.kind === 'value' ? 'string' : 'boolean' }])),
} satisfies Record<string, { type: 'string' | 'boolean'; short?: string }>;

const KNOWN_FLAGS = Object.keys(PARSE_OPTIONS).map((name) => `--${name}`);

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

/** One layer built from env vars or flags, with the source of each key for error messages (`command line: --port`). */
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

/**
 * `node:util` parseArgs, then strict mode's checks made here, on its tokens and in order, so that each error can
 * name the config key (its own errors cannot): an unknown flag (with the nearest known one), a positional argument,
 * a value-taking flag with no value (the next argument is a flag: `--host --port 1`), a switch given a value. The
 * last of a repeated flag wins. `-h`/`--help` are the caller's to act on: tolerated.
 */
function parseArgv(argv: readonly string[]): ParsedArgv {
  const { tokens } = parseArgs({ args: [...argv], options: PARSE_OPTIONS, strict: false, allowPositionals: true, tokens: true });
  const flags = emptyLayer();
  let configFile: string | undefined;
  let mycroftFile: string | undefined;
  let noMycroft = false;

  for (const token of tokens) {
    if (token.kind !== 'option') {
      const arg = token.kind === 'positional' ? token.value : '--';
      throw new ConfigError('CONFIG_UNKNOWN_FLAG', `unexpected argument ${JSON.stringify(arg)} (see --help)`);
    }
    const flag = token.rawName;
    if (!Object.hasOwn(PARSE_OPTIONS, token.name)) {
      const hint = didYouMean(flag, KNOWN_FLAGS);
      throw new ConfigError('CONFIG_UNKNOWN_FLAG', `unknown flag ${flag}${hint === undefined ? '' : ` (did you mean ${hint}?)`}`);
    }
    const option = OPTIONS.find((candidate) => candidate.flag === flag);
    const key = option === undefined ? {} : { key: option.key };
    if (PARSE_OPTIONS[token.name]?.type === 'boolean') {
      if (token.value !== undefined) throw new ConfigError('CONFIG_INVALID', `${flag} takes no value`, key);
    } else if (token.value === undefined || (!token.inlineValue && token.value.startsWith('--'))) {
      throw new ConfigError('CONFIG_INVALID', `${flag} expects a value (${option?.kind === 'value' ? option.arg : 'FILE'})`, key);
    }
    const value = token.value ?? '';

    if (flag === CONFIG_FLAG || flag === MYCROFT_FLAG) {
      if (value === '') throw new ConfigError('CONFIG_INVALID', `${flag} expects a file path`);
      if (flag === CONFIG_FLAG) configFile = value;
      else mycroftFile = value;
    } else if (flag === NO_MYCROFT_FLAG) {
      noMycroft = true;
    } else if (option?.kind === 'switch') {
      put(flags, option.key, option.value, `command line: ${flag}`);
    } else if (option?.kind === 'value') {
      put(flags, option.key, coerce(option, value), `command line: ${flag}`);
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
    if (raw !== undefined && raw !== '') put(layer, option.key, coerce(option, raw), `environment: ${option.env}`);
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
  if (nestsDeeperThan(text, MAX_CONFIG_DEPTH)) throw new ConfigError('CONFIG_FILE_NOT_JSON', `config file ${path}: nested deeper than ${MAX_CONFIG_DEPTH} levels; not a configuration`);
  let data: unknown;
  try {
    data = JSON.parse(text.replace(/^\uFEFF/, '')) as unknown;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ConfigError('CONFIG_FILE_NOT_JSON', `config file ${path}: not valid JSON (${reason})`, { cause: error });
  }
  // `"$schema": ".../config.schema.json"` names the file's JSON Schema for an editor; it is no config key.
  if (!isPlainObject(data) || !Object.hasOwn(data, '$schema')) return data;
  const { $schema: _schema, ...keys } = data;
  return keys;
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
  const readFile = options.readFile ?? ((path: string) => readRegularFile(path));
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
/** The default of a dotted key (no brackets: the keys with flags are plain). */
function defaultOf(key: string): unknown {
  let node: unknown = DEFAULT_CONFIG;
  for (const part of key.split('.')) node = isPlainObject(node) ? node[part] : undefined;
  return node;
}

/** Usage text: flags, environment variables and their defaults, from the schema. */
export function configHelp(): string {
  const rows: [string, string][] = [
    [`${CONFIG_FLAG} FILE`, `JSON file of config keys, layered over the defaults and mycroft.conf (env ${CONFIG_ENV})`],
    [`${MYCROFT_FLAG} FILE`, `read this mycroft.conf instead of looking where ovos-config does (env ${MYCROFT_ENV})`],
    [NO_MYCROFT_FLAG, 'read no mycroft.conf at all'],
  ];
  for (const option of OPTIONS) {
    const fallback = defaultOf(option.key);
    if (option.kind === 'value') {
      const shown = fallback === null ? 'none' : String(fallback);
      rows.push([`${option.flag} ${option.arg}`, `${option.help}; ${option.key}, default ${shown} (env ${option.env})`]);
    } else {
      rows.push([option.flag, `${option.help}${option.value === fallback ? ' (default)' : ''}`]);
    }
  }
  rows.push(['-h, --help', 'show this help']);
  const width = Math.max(...rows.map(([left]) => left.length));
  return [
    'Options (also --flag=value). Precedence, lowest to highest: defaults, mycroft.conf, config file, environment, flags.',
    "A mycroft.conf (/etc/mycroft, ~/.config/mycroft, … as ovos-config finds it) means an OVOS deployment: its",
    'messagebus is joined (websocket.*) unless --bus, --host, --port or --route (or the same keys in env or the config',
    'file) say otherwise, and its fallback and common query settings are taken (src/config/README.md).',
    '',
    ...rows.map(([left, right]) => `  ${left.padEnd(width)}  ${right}`),
    '',
    'Every other key (timeouts, fallback stages, common query thresholds) is set in the config file, e.g.',
    '  { "commonQuery": { "minConfidence": 0.6 }, "fallback": { "stages": { "fallback_low": [75, 100] } } }',
    'Its JSON Schema, for editors: src/config/config.schema.json in the package (ovos-contests/config.schema.json).',
    '',
  ].join('\n');
}
