/**
 * mycroft.conf, the configuration of an OVOS deployment: where ovos-config finds it, how it reads it, and
 * which of its keys we honour. `loadConfig` (config.ts) layers the result just above DEFAULT_CONFIG, below our own
 * config file, environment and flags.
 *
 * What this follows, read from the sources (not guessed):
 *  - Locations, lowest precedence first — ovos-config `ovos_config/locations.py` (DISTRIBUTION_CONFIG,
 *    SYSTEM_CONFIG, get_xdg_config_dirs, get_xdg_config_locations) and `ovos_config/meta.py`; the OVOS technical
 *    manual (config.md "Config Layer Stack", locations.md): the package default (ignored here: it is ovos-config's
 *    defaults, we have ours), the distribution file `$OVOS_DISTRIBUTION_CONFIG` or `/usr/share/<base>/<file>`, the
 *    system file `$MYCROFT_SYSTEM_CONFIG` or `/etc/<base>/<file>`, then one file per XDG config dir —
 *    `$XDG_CONFIG_DIRS` (default `/etc/xdg`) in the order listed, then `$XDG_CONFIG_HOME` (default `~/.config`),
 *    the user's own file, last. `<base>` is `$OVOS_CONFIG_BASE_FOLDER` (default `mycroft`), `<file>`
 *    `$OVOS_CONFIG_FILENAME` (default `mycroft.conf`); ovos.conf files that rename them are not read. The legacy
 *    `~/.mycroft/mycroft.conf` "is in the list but is never loaded" (locations.md; ovos-config 0.0.x still merged
 *    it below the XDG files): not read, a warning says so. The remote cache (web_cache.json) was dropped in
 *    ovos-config 3.0.0a1; `runtime.conf` (OVOS's own runtime writes) is not read either.
 *  - Reading — ovos-utils `json_helper.py`: `load_commented_json`/`uncomment_json` drop whole lines whose first
 *    non-blank characters are `//` or `#` (nothing else: a comment after a value is a JSON error there too);
 *    `merge_dict`: objects merge key by key, anything else replaces (lists included); a file ovos-config cannot
 *    parse is logged and skipped (`LocalConf.load_local`).
 *  - System constraints — ovos-config `Configuration.filter_and_merge` / `get_system_constraints`:
 *    `system.disable_user_config` and `system.protected_keys.user` (`a:b` paths, ovos-utils `flattened_delete`),
 *    taken from the distribution and system files only, applied to the XDG files.
 *  - Keys — ovos-core `intent_services/fallback_service.py` reads `skills.fallbacks.{fallback_priorities,
 *    fallback_mode, fallback_whitelist, fallback_blacklist, max_skill_runtime}`; ovos-workshop
 *    `permissions.FallbackMode` is "accept_all" | "whitelist" | "blacklist", our names exactly.
 *    ovos-common-query-pipeline-plugin `ovos_commonqa/opm.py` reads `intents.common_query.{extension_time,
 *    min_response_wait, max_response_wait, min_self_confidence, min_reranker_score, reranker, ignore_skill_scores}`
 *    and `min_conf`; its `tests/test_collection_ceiling.py` treats `max_response_wait` as the OVOS-COMMON-QUERY-1
 *    §7.2 collection ceiling. ovos-bus-client `MessageBusClient.build_url` joins `websocket.{host, port, route,
 *    ssl}` as `${ssl ? 'wss' : 'ws'}://${host}:${port}${route}`; ovos-config's default mycroft.conf has websocket
 *    127.0.0.1 / 8181 / "/core" / false. ovos-core's `intents.pipeline` lists stage ids (aliased or skipped at
 *    run time, defaults.ts PIPELINE_ALIASES).
 *
 * The mapping (src/config/README.md has the table; MAPPED_KEYS and NOT_MAPPED below are the code's copy):
 * a mycroft.conf found means an OVOS deployment, whose ovos-messagebus is the bus: the layer joins it
 * (`bus.url` from `websocket.*` over ovos-config's defaults) and leaves the example skills off (the deployment's
 * skills are the skills). `loadConfig` drops both when our config file, environment or flags name a bus
 * (`bus.url`, `bus.host`, `bus.port` or `bus.route`: naming where to serve is choosing to serve).
 *
 * Malformed files: a file found by discovery that is not JSON (after comments) is skipped with a warning — as
 * ovos-config skips it, so we read the same configuration as the OVOS services next to us; a file named with
 * `--mycroft-conf` is an error. A well-formed file with a value we cannot honour is an error naming the file, the
 * mycroft.conf key and ours: running on without it would run a deployment other than the one configured.
 */

import { readRegularFile } from './secret-file.js';
import { nestsDeeperThan } from '../bus/message.js';
import { posix } from 'node:path';

import { DEFAULT_CONFIG, type Config } from './defaults.js';
import { ConfigError } from './errors.js';

// ---------------------------------------------------------------------------------------------------------------
// Types

/** Where a file sits in ovos-config's stack; `explicit` is a file named with --mycroft-conf (read alone). */
export type MycroftConfKind = 'distribution' | 'system' | 'xdg' | 'explicit';

export interface MycroftConfLocation {
  readonly path: string;
  readonly kind: Exclude<MycroftConfKind, 'explicit'>;
}

/** One mycroft.conf as read: its path, its place in the stack, its text. */
export interface MycroftConfText {
  readonly path: string;
  readonly kind: MycroftConfKind;
  readonly text: string;
}

export type MycroftNoteReason =
  | 'mycroft_conf_not_found'
  | 'mycroft_conf_skipped'
  | 'mycroft_conf_legacy_ignored'
  | 'mycroft_conf_user_disabled'
  | 'mycroft_conf_bus_not_joined';

/** Something to log once at start, at `level`. */
export interface MycroftNote {
  readonly level: 'debug' | 'info' | 'warn';
  readonly reason: MycroftNoteReason;
  readonly message: string;
  readonly file?: string;
}

/** Where one of our keys got its value from. */
export interface MycroftOrigin {
  /** The mycroft.conf key(s) read (`skills.fallbacks.fallback_mode`), or what derived the value. */
  readonly from: string;
  /** The files that supplied them, lowest precedence first; empty when the value is ovos-config's default. */
  readonly files: readonly string[];
}

/** A mycroft.conf key we know of and deliberately do not take, present in the files read. */
export interface MycroftIgnoredKey {
  readonly key: string;
  readonly files: readonly string[];
  readonly reason: string;
}

export interface MycroftLayer {
  /** The files merged, lowest precedence first. */
  readonly files: readonly string[];
  /** Our dotted key → value (`fallback.mode` → "whitelist"). */
  readonly values: ReadonlyMap<string, unknown>;
  /** `values` as a partial Config, ready for `mergeConfig`. */
  readonly override: Record<string, unknown>;
  /** Our dotted key → where its value came from; one entry per key of `values`. */
  readonly origins: ReadonlyMap<string, MycroftOrigin>;
  /** The keys of `values` that join the deployment's bus; dropped when a higher layer names a bus. */
  readonly joinKeys: readonly string[];
  readonly ignored: readonly MycroftIgnoredKey[];
  readonly notes: readonly MycroftNote[];
}

type JsonRecord = Record<string, unknown>;
type Env = Readonly<Record<string, string | undefined>>;

// ---------------------------------------------------------------------------------------------------------------
// The mapping, as data (src/config/README.md mirrors it)

/** mycroft.conf key → ours, for the keys taken as they are (validated by validateConfig, errors name the file). */
export const MAPPED_KEYS: readonly (readonly [mycroft: string, ours: string])[] = [
  ['lang', 'lang'],
  ['intents.pipeline', 'pipeline'],
  ['skills.fallbacks.fallback_priorities', 'fallback.priorities'],
  ['skills.fallbacks.fallback_mode', 'fallback.mode'],
  ['skills.fallbacks.fallback_whitelist', 'fallback.whitelist'],
  ['skills.fallbacks.fallback_blacklist', 'fallback.blacklist'],
  ['intents.common_query.min_self_confidence', 'commonQuery.minConfidence'],
];

/** Keys the OVOS programs read that we deliberately leave alone, and why (reported when a file sets them). */
export const NOT_MAPPED: Readonly<Record<string, string>> = {
  'skills.fallbacks.max_skill_runtime':
    "ovos-core's wait for one fallback skill's answer; orchestrator.handlerTimeoutMs bounds every bus skill's handler (common query too), so a fallback-only key does not set it",
  'intents.common_query.extension_time':
    'each `searching` reply moves the ovos plugin\'s deadline; OVOS-COMMON-QUERY-1 sizes the collection window from pong latency_ms instead (commonQuery.collectionInitialMs), up to the ceiling',
  'intents.common_query.min_response_wait': 'read but never used by ovos-common-query-pipeline-plugin',
  'intents.common_query.min_conf':
    "a second threshold on the best reply's conf (default 0.01, below min_self_confidence); commonQuery.minConfidence is the one threshold",
  'intents.common_query.reranker': 'no reranker plugin runs here',
  'intents.common_query.min_reranker_score': 'no reranker plugin runs here',
  'intents.common_query.ignore_skill_scores': 'no reranker plugin runs here: skill scores are always used',
  'websocket.max_msg_size': "the messagebus server's frame limit; our side's is bus.maxFrameBytes",
};

/** The ids of our pipeline plugins for ovos-core start with this (src/ovos-plugin/). */
export const OVOS_CONTESTS_PLUGIN_PREFIX = 'ovos-contests-';
/**
 * ovos-core 2.1's fallback tiers (FallbackService: `start < priority <= stop` over (0, 5], (5, 90], (90, 101]) as our
 * inclusive ranges, for the stages ovos-core asks through the ovos-contests plugin. Priority 0, which ovos-core reads
 * as 101 (`priority or 101`), is the high tier's here: the skill asked first, as its author meant.
 */
export const OVOS_CORE_FALLBACK_STAGES = { fallback_high: [0, 5], fallback_medium: [6, 90], fallback_low: [91, 101] } as const;

/** ovos-config's default mycroft.conf `websocket` section (the values ovos-messagebus and every client use unless told). */
export const OVOS_DEFAULT_WEBSOCKET = { host: '127.0.0.1', port: 8181, route: '/core', ssl: false } as const;

// ---------------------------------------------------------------------------------------------------------------
// Small helpers

function isRecord(value: unknown): value is JsonRecord {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (typeof value === 'object' && value !== null) return 'an object';
  return String(value);
}

/** A deep copy into null-prototype records, so a "__proto__" key from JSON stays a key. */
function clone(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(clone);
  if (!isRecord(value)) return value;
  const copy = Object.create(null) as JsonRecord;
  for (const [key, child] of Object.entries(value)) copy[key] = clone(child);
  return copy;
}

function at(tree: JsonRecord, path: readonly string[]): unknown {
  let node: unknown = tree;
  for (const segment of path) {
    if (!isRecord(node) || !Object.hasOwn(node, segment)) return undefined;
    node = node[segment];
  }
  return node;
}

/** Python truthiness, for ovos-config's `if skip_user:`. */
function truthy(value: unknown): boolean {
  if (value === undefined || value === null || value === false || value === 0 || value === '') return false;
  if (Array.isArray(value)) return value.length > 0;
  if (isRecord(value)) return Object.keys(value).length > 0;
  return true;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}

function setPath(target: JsonRecord, dotted: string, value: unknown): void {
  const parts = dotted.split('.');
  const last = parts.pop() ?? dotted;
  let node = target;
  for (const part of parts) {
    const next = node[part];
    if (isRecord(next)) {
      node = next;
    } else {
      const created: JsonRecord = {};
      node[part] = created;
      node = created;
    }
  }
  node[last] = value;
}

/** Our dotted key → value, as a nested partial Config. */
export function overrideOf(values: ReadonlyMap<string, unknown>): Record<string, unknown> {
  const override: JsonRecord = {};
  for (const [key, value] of values) setPath(override, key, value);
  return override;
}

// ---------------------------------------------------------------------------------------------------------------
// Reading one file

const COMMENT_LINE = /^[ \t]*(\/\/|#)/;

/**
 * ovos-utils `uncomment_json`: a line whose first non-blank characters are `//` or `#` is a comment and goes; every
 * other line stays as it is. A JSON string cannot span lines, so no comment marker inside a string is ever touched.
 * Comment lines become empty lines, so JSON error positions still point at the right line.
 */
export function stripMycroftComments(text: string): string {
  return text
    .replace(/^\uFEFF/, '')
    .split(/\r\n|\r|\n/)
    .map((line) => (COMMENT_LINE.test(line) ? '' : line))
    .join('\n');
}

/** The 1-based line of the first `//`, `/*` or `#` after a value, outside strings (a hint for a JSON error). */
function inlineCommentLine(text: string): number | undefined {
  let line = 1;
  let inString = false;
  let lineHasContent = false;
  for (let i = 0; i < text.length; i += 1) {
    const char = text[i];
    if (inString) {
      if (char === '\\') i += 1;
      else if (char === '"') inString = false;
      else if (char === '\n') {
        line += 1;
        inString = false;
        lineHasContent = false;
      }
      continue;
    }
    if (char === '\n') {
      line += 1;
      lineHasContent = false;
    } else if (char === '"') {
      inString = true;
      lineHasContent = true;
    } else if ((char === '/' && (text[i + 1] === '/' || text[i + 1] === '*')) || char === '#') {
      if (lineHasContent) return line;
    } else if (char !== ' ' && char !== '\t' && char !== '\r') {
      lineHasContent = true;
    }
  }
  return undefined;
}

/** How deep a configuration file may nest (mycroft.conf nests a few levels). */
export const MAX_CONFIG_DEPTH = 64;

/**
 * A mycroft.conf's text → its object, read as ovos-config reads it (whole-line `//` and `#` comments). Throws
 * CONFIG_FILE_NOT_JSON naming the file when it is not JSON, or not a JSON object.
 */
export function parseMycroftConf(text: string, path: string): JsonRecord {
  const stripped = stripMycroftComments(text);
  // Deeper than any configuration is: refused before parsing (merging it would overflow the stack).
  if (nestsDeeperThan(stripped, MAX_CONFIG_DEPTH)) throw new ConfigError('CONFIG_FILE_NOT_JSON', `mycroft.conf ${path}: nested deeper than ${MAX_CONFIG_DEPTH} levels; not a configuration`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(stripped);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    const inline = inlineCommentLine(stripped);
    const hint =
      inline === undefined
        ? ''
        : `; line ${inline} has a comment after a value — ovos-config only reads comments on a line of their own, so OVOS itself does not read this file either`;
    throw new ConfigError('CONFIG_FILE_NOT_JSON', `mycroft.conf ${path}: not valid JSON (${reason})${hint}`, { cause: error });
  }
  if (!isRecord(parsed)) {
    throw new ConfigError('CONFIG_FILE_NOT_JSON', `mycroft.conf ${path}: expected a JSON object, got ${describe(parsed)}`);
  }
  return clone(parsed) as JsonRecord;
}

// ---------------------------------------------------------------------------------------------------------------
// Where ovos-config looks

function absolute(path: string | undefined): string | undefined {
  return path !== undefined && posix.isAbsolute(path) ? path : undefined;
}

function names(env: Env): { readonly base: string; readonly file: string } {
  return { base: nonEmpty(env['OVOS_CONFIG_BASE_FOLDER']) ?? 'mycroft', file: nonEmpty(env['OVOS_CONFIG_FILENAME']) ?? 'mycroft.conf' };
}

/**
 * The mycroft.conf files ovos-config merges, lowest precedence first (its package default left out). XDG rules as
 * the spec has them: an unset or empty variable takes its default, relative entries are ignored.
 */
export function mycroftConfLocations(env: Env, home: string): MycroftConfLocation[] {
  const { base, file } = names(env);
  const configDirs = (env['XDG_CONFIG_DIRS'] ?? '').split(':').filter((dir) => posix.isAbsolute(dir));
  const configHome = absolute(nonEmpty(env['XDG_CONFIG_HOME'])) ?? posix.join(home, '.config');
  const locations: MycroftConfLocation[] = [
    { path: nonEmpty(env['OVOS_DISTRIBUTION_CONFIG']) ?? `/usr/share/${base}/${file}`, kind: 'distribution' },
    { path: nonEmpty(env['MYCROFT_SYSTEM_CONFIG']) ?? `/etc/${base}/${file}`, kind: 'system' },
    ...(configDirs.length > 0 ? configDirs : ['/etc/xdg']).map((dir) => ({ path: posix.join(dir, base, file), kind: 'xdg' as const })),
    { path: posix.join(configHome, base, file), kind: 'xdg' },
  ];
  // The same file twice (XDG_CONFIG_DIRS naming ~/.config) merges to the same values: read it once.
  return locations.filter((location, index) => locations.findIndex((other) => other.path === location.path) === index);
}

/** The pre-XDG user file ovos-config no longer loads. */
export function legacyMycroftConfPath(env: Env, home: string): string {
  const { base, file } = names(env);
  return posix.join(home, `.${base}`, file);
}

/** Reads a file, or `undefined` when there is none at that path (what ovos-config's `isfile()` check skips). */
export function readFileIfPresent(path: string): string | undefined {
  try {
    return readRegularFile(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR') return undefined;
    throw error;
  }
}

export interface MycroftDiscoverySources {
  /** XDG_CONFIG_HOME, XDG_CONFIG_DIRS, OVOS_CONFIG_BASE_FOLDER, OVOS_CONFIG_FILENAME, OVOS_DISTRIBUTION_CONFIG, MYCROFT_SYSTEM_CONFIG. */
  readonly env: Env;
  readonly home: string;
  /** The text of a file, `undefined` when there is none; throws when one is there but cannot be read. */
  readonly readFile: (path: string) => string | undefined;
}

export interface MycroftDiscovery {
  /** The files found, lowest precedence first. */
  readonly files: readonly MycroftConfText[];
  /** Every path looked at, in order. */
  readonly looked: readonly string[];
  readonly notes: readonly MycroftNote[];
}

/** Reads the mycroft.conf files that exist where ovos-config looks. Unreadable ones are skipped with a warning. */
export function discoverMycroftConf(sources: MycroftDiscoverySources): MycroftDiscovery {
  const files: MycroftConfText[] = [];
  const notes: MycroftNote[] = [];
  const locations = mycroftConfLocations(sources.env, sources.home);
  const yaml = /\.ya?ml$/i.test(names(sources.env).file);
  for (const { path, kind } of locations) {
    let text: string | undefined;
    try {
      text = sources.readFile(path);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      notes.push({ level: 'warn', reason: 'mycroft_conf_skipped', file: path, message: `mycroft.conf ${path} cannot be read (${reason}); skipped` });
      continue;
    }
    if (text === undefined) continue;
    if (yaml) {
      notes.push({ level: 'warn', reason: 'mycroft_conf_skipped', file: path, message: `mycroft.conf ${path} is YAML (OVOS_CONFIG_FILENAME), which is not read here; skipped` });
      continue;
    }
    files.push({ path, kind, text });
  }
  const legacy = legacyMycroftConfPath(sources.env, sources.home);
  let legacyText: string | undefined;
  try {
    legacyText = sources.readFile(legacy);
  } catch {
    legacyText = undefined;
  }
  if (legacyText !== undefined) {
    const user = locations[locations.length - 1]?.path ?? legacy;
    notes.push({
      level: 'warn',
      reason: 'mycroft_conf_legacy_ignored',
      file: legacy,
      message: `${legacy} is not read: ovos-config no longer loads the pre-XDG location, so neither do we; move its keys to ${user}`,
    });
  }
  if (files.length === 0) {
    notes.push({ level: 'debug', reason: 'mycroft_conf_not_found', message: `no mycroft.conf found (looked at ${locations.map((l) => l.path).join(', ')})` });
  }
  return { files, looked: locations.map((location) => location.path), notes };
}

// ---------------------------------------------------------------------------------------------------------------
// Merging the files (ovos-utils merge_dict, with the file each value came from)

const PATH_SEPARATOR = '\u0000';

interface Merged {
  readonly tree: JsonRecord;
  /** Path (segments joined by NUL) of every leaf set → the index of the file that set it. */
  readonly origins: Map<string, number>;
}

function pathKey(path: readonly string[]): string {
  return path.join(PATH_SEPARATOR);
}

/** Records `fileIndex` for every leaf of `value` (a scalar, a list, an empty object) at and below `path`. */
function recordLeaves(origins: Map<string, number>, value: unknown, path: readonly string[], fileIndex: number): void {
  if (isRecord(value) && Object.keys(value).length > 0) {
    for (const [key, child] of Object.entries(value)) recordLeaves(origins, child, [...path, key], fileIndex);
  } else {
    origins.set(pathKey(path), fileIndex);
  }
}

function mergeInto(merged: Merged, base: JsonRecord, delta: JsonRecord, path: readonly string[], fileIndex: number): void {
  for (const [key, value] of Object.entries(delta)) {
    const current = Object.hasOwn(base, key) ? base[key] : undefined;
    const childPath = [...path, key];
    const prefix = pathKey(childPath);
    if (isRecord(value) && isRecord(current)) {
      merged.origins.delete(prefix); // an empty object's ownership passes to what is merged into it
      mergeInto(merged, current, value, childPath, fileIndex);
      continue;
    }
    base[key] = clone(value);
    for (const known of [...merged.origins.keys()]) {
      if (known === prefix || known.startsWith(prefix + PATH_SEPARATOR)) merged.origins.delete(known);
    }
    recordLeaves(merged.origins, value, childPath, fileIndex);
  }
}

/** ovos-utils flattened_delete: remove the value at an `a:b:c` path, if there is one. */
function deletePath(tree: JsonRecord, colonPath: string): void {
  const segments = colonPath.split(':');
  const last = segments.pop();
  if (last === undefined) return;
  const parent = at(tree, segments);
  if (isRecord(parent) && Object.hasOwn(parent, last)) delete parent[last];
}

// ---------------------------------------------------------------------------------------------------------------
// The layer

/** 0.0.0.0 and :: are where a server listens, not an address to connect to: the bus is on this host. */
function connectHost(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::' || host === '[::]') return '[::1]';
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

/**
 * The mycroft.conf layer: `files` (lowest precedence first, as discovered, or one `explicit` file) → our keys, their
 * origins, the keys deliberately not taken, and notes to log. Pure. `base` is the config the layer is merged over
 * (DEFAULT_CONFIG in `loadConfig`): knobs that must stay consistent with a mapped one are adjusted against it
 * (a ceiling below the initial window, a minimum confidence above the fast-win threshold, a collection ceiling the
 * match bound cannot hold), each with its origin, so the layer is valid on its own and our own config file can still
 * set any of them. Throws ConfigError for an explicit file that is not JSON, and for a value that cannot be taken.
 */
export function mycroftLayer(files: readonly MycroftConfText[], base: Config = DEFAULT_CONFIG): MycroftLayer {
  const notes: MycroftNote[] = [];
  const parsed: { path: string; kind: MycroftConfKind; data: JsonRecord }[] = [];
  for (const file of files) {
    try {
      parsed.push({ path: file.path, kind: file.kind, data: parseMycroftConf(file.text, file.path) });
    } catch (error) {
      if (file.kind === 'explicit' || !(error instanceof ConfigError)) throw error;
      notes.push({ level: 'warn', reason: 'mycroft_conf_skipped', file: file.path, message: `${error.message}; skipped, as ovos-config skips it` });
    }
  }

  // ovos-config's system constraints: from the distribution and system files only, applied to the XDG files.
  const constraints = Object.create(null) as JsonRecord;
  const constraintFiles: string[] = [];
  for (const file of parsed) {
    if (file.kind !== 'distribution' && file.kind !== 'system') continue;
    const system = at(file.data, ['system']);
    if (!isRecord(system)) continue;
    mergeInto({ tree: constraints, origins: new Map() }, constraints, system, [], 0);
    constraintFiles.push(file.path);
  }
  const skipUser = truthy(constraints['disable_user_config']);
  const protectedKeys = at(constraints, ['protected_keys', 'user']);
  const merged: Merged = { tree: Object.create(null) as JsonRecord, origins: new Map() };
  const used: string[] = [];
  for (const file of parsed) {
    if (file.kind === 'xdg' && skipUser) {
      notes.push({
        level: 'info',
        reason: 'mycroft_conf_user_disabled',
        file: file.path,
        message: `mycroft.conf ${file.path} not read: system.disable_user_config is set (${constraintFiles.join(', ')}), as ovos-config does`,
      });
      continue;
    }
    const data = file.data;
    if (file.kind === 'xdg' && Array.isArray(protectedKeys)) {
      for (const key of protectedKeys) if (typeof key === 'string') deletePath(data, key);
    }
    used.push(file.path);
    mergeInto(merged, merged.tree, data, [], used.length - 1);
  }

  /** The files that set `path`, a value above it or one below it, in merge order. */
  const filesOf = (path: readonly string[]): string[] => {
    const key = pathKey(path);
    const indexes = new Set<number>();
    for (const [known, index] of merged.origins) {
      if (known === key || key.startsWith(known + PATH_SEPARATOR) || known.startsWith(key + PATH_SEPARATOR)) indexes.add(index);
    }
    return [...indexes].sort((a, b) => a - b).map((index) => used[index]!);
  };

  const values = new Map<string, unknown>();
  const origins = new Map<string, MycroftOrigin>();
  const take = (ours: string, value: unknown, origin: MycroftOrigin): void => {
    values.set(ours, value);
    origins.set(ours, origin);
  };
  const fail = (ours: string, mycroftKey: string, expected: string, got: unknown): never => {
    const where = filesOf(mycroftKey.split('.')).join(', ');
    throw new ConfigError('CONFIG_INVALID', `mycroft.conf ${where}: ${mycroftKey}: expected ${expected}, got ${describe(got)}`, { key: ours });
  };

  // Keys taken as they are; a `null` is an unset key (ovos reads it through `.get(key) or default`).
  for (const [mycroftKey, ours] of MAPPED_KEYS) {
    const path = mycroftKey.split('.');
    const value = at(merged.tree, path);
    if (value === undefined || value === null) continue;
    take(ours, value, { from: mycroftKey, files: filesOf(path) });
  }

  // ovos-core's pipeline asks our stages through the ovos-contests plugin (src/ovos-plugin/): ovos-core takes the
  // utterances, and the daemon only answers its stage requests — two orchestrators would answer twice.
  const pipeline = at(merged.tree, ['intents', 'pipeline']);
  if (Array.isArray(pipeline) && pipeline.some((id) => typeof id === 'string' && id.startsWith(OVOS_CONTESTS_PLUGIN_PREFIX))) {
    take('orchestrator.takesUtterances', false, { from: `intents.pipeline names an ${OVOS_CONTESTS_PLUGIN_PREFIX}… plugin: ovos-core takes the utterances and asks our stages`, files: filesOf(['intents', 'pipeline']) });
    // Our stages stand in for ovos-core's fallback tiers, so they keep its ranges: a skill's priority puts it before
    // or after common query exactly as it did (OVOS-FALLBACK-1 §8.2 leaves the ranges to the deployment).
    take('fallback.stages', OVOS_CORE_FALLBACK_STAGES, { from: `intents.pipeline names an ${OVOS_CONTESTS_PLUGIN_PREFIX}… plugin: ovos-core's fallback tiers (0, 5] / (5, 90] / (90, 101]`, files: filesOf(['intents', 'pipeline']) });
    values.delete('pipeline'); // ovos-core's list, not one our orchestrator runs
    origins.delete('pipeline');
    // A stage ovos-core never asks starts nothing early: its skills would be asked about every utterance for nothing.
    const named = (prefix: string): boolean => pipeline.some((id) => typeof id === 'string' && id.startsWith(prefix));
    if (!named(`${OVOS_CONTESTS_PLUGIN_PREFIX}fallback-pipeline-plugin`)) {
      take('fallback.earlyStart', false, { from: `intents.pipeline names no ${OVOS_CONTESTS_PLUGIN_PREFIX}fallback-pipeline-plugin… tier: ovos-core asks our fallback stages nothing`, files: filesOf(['intents', 'pipeline']) });
    }
    if (!named(`${OVOS_CONTESTS_PLUGIN_PREFIX}common-query-pipeline-plugin`)) {
      take('commonQuery.earlyStart', false, { from: `intents.pipeline names no ${OVOS_CONTESTS_PLUGIN_PREFIX}common-query-pipeline-plugin: ovos-core asks our common-query stage nothing`, files: filesOf(['intents', 'pipeline']) });
    }
  }

  // intents.common_query.max_response_wait (seconds) → the collection ceiling (ms). 0 and null are ovos' "unset".
  const waitKey = 'intents.common_query.max_response_wait';
  const wait = at(merged.tree, waitKey.split('.'));
  const ignored: MycroftIgnoredKey[] = [];
  if (wait === 0 || wait === null || wait === false) {
    ignored.push({ key: waitKey, files: filesOf(waitKey.split('.')), reason: `${describe(wait)} is unset for ovos (\`or\` its default)` });
  } else if (wait !== undefined) {
    if (typeof wait !== 'number' || !Number.isFinite(wait) || wait < 0) fail('commonQuery.collectionCeilingMs', waitKey, 'a number of seconds > 0', wait);
    take('commonQuery.collectionCeilingMs', Math.round((wait as number) * 1000), { from: waitKey, files: filesOf(waitKey.split('.')) });
  }

  // A mycroft.conf means an OVOS deployment: join its messagebus, and leave the example skills out of it.
  const joinKeys: string[] = [];
  if (used.length > 0) {
    const section = at(merged.tree, ['websocket']);
    if (section !== undefined && section !== null && !isRecord(section)) fail('bus.url', 'websocket', 'an object', section);
    const websocket = isRecord(section) ? section : (Object.create(null) as JsonRecord);
    const field = (name: keyof typeof OVOS_DEFAULT_WEBSOCKET): unknown => {
      const value = Object.hasOwn(websocket, name) ? websocket[name] : undefined;
      return value === undefined || value === null ? OVOS_DEFAULT_WEBSOCKET[name] : value;
    };
    const host = field('host');
    const port = field('port');
    const route = field('route');
    const ssl = field('ssl');
    if (typeof host !== 'string' || !/^\S+$/.test(host)) fail('bus.url', 'websocket.host', 'a host name or address', host);
    if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65_535) fail('bus.url', 'websocket.port', 'an integer in [1, 65535]', port);
    if (typeof route !== 'string' || !/^\/\S*$/.test(route)) fail('bus.url', 'websocket.route', 'a path starting with "/"', route);
    if (typeof ssl !== 'boolean') fail('bus.url', 'websocket.ssl', 'true or false', ssl);
    const url = `${ssl === true ? 'wss' : 'ws'}://${connectHost(host as string)}:${String(port)}${route as string}`;
    const named = (['host', 'port', 'route', 'ssl'] as const).filter((name) => filesOf(['websocket', name]).length > 0);
    take('bus.url', url, {
      from:
        named.length === 0
          ? `ovos-config's default websocket (${OVOS_DEFAULT_WEBSOCKET.host}:${OVOS_DEFAULT_WEBSOCKET.port}${OVOS_DEFAULT_WEBSOCKET.route}): a mycroft.conf is there, so is its messagebus`
          : `${named.map((name) => `websocket.${name}`).join(', ')}${named.length < 4 ? ", the rest ovos-config's default" : ''}`,
      files: used.filter((file) => named.some((name) => filesOf(['websocket', name]).includes(file))),
    });
    take('exampleSkills', false, { from: "a mycroft.conf is there: the deployment's own skills answer on its bus, not the examples", files: [...used] });
    joinKeys.push('bus.url', 'exampleSkills');
  }

  // Keep the layer valid over `base` on its own (see the doc comment): adjust what a mapped knob constrains.
  const cq = base.commonQuery;
  const ceiling = values.get('commonQuery.collectionCeilingMs');
  if (typeof ceiling === 'number' && ceiling >= 1) {
    const from = origins.get('commonQuery.collectionCeilingMs')!;
    if (ceiling < cq.collectionInitialMs) {
      take('commonQuery.collectionInitialMs', ceiling, { from: `${from.from} (the initial collection window may not exceed the ceiling)`, files: from.files });
    }
    if (cq.pollWindowMs + ceiling > base.orchestrator.matchTimeoutMs) {
      take('orchestrator.matchTimeoutMs', cq.pollWindowMs + ceiling, {
        from: `${from.from} (the match bound must hold poll window + collection ceiling, OVOS-COMMON-QUERY-1 §2.1)`,
        files: from.files,
      });
    }
  }
  const minimum = values.get('commonQuery.minConfidence');
  if (typeof minimum === 'number' && minimum >= 0 && minimum <= 1 && cq.fastWinConfidence !== null && cq.fastWinConfidence < minimum) {
    const from = origins.get('commonQuery.minConfidence')!;
    take('commonQuery.fastWinConfidence', minimum, { from: `${from.from} (the fast-win threshold may not be below the minimum confidence)`, files: from.files });
  }

  for (const [key, reason] of Object.entries(NOT_MAPPED)) {
    const path = key.split('.');
    if (at(merged.tree, path) === undefined) continue;
    ignored.push({ key, files: filesOf(path), reason });
  }

  return { files: used, values, override: overrideOf(values), origins, joinKeys, ignored, notes };
}

/** One log line's worth: our key → "file, file: mycroft key"; ignored mycroft key → "file: reason". */
export function describeMycroftOrigins(
  origins: ReadonlyMap<string, MycroftOrigin>,
  ignored: readonly MycroftIgnoredKey[],
): { readonly keys: Record<string, string>; readonly ignored: Record<string, string> } {
  const keys: Record<string, string> = {};
  for (const [key, origin] of origins) keys[key] = origin.files.length === 0 ? origin.from : `${origin.files.join(', ')}: ${origin.from}`;
  const skipped: Record<string, string> = {};
  for (const entry of ignored) skipped[entry.key] = `${entry.files.join(', ')}: not used — ${entry.reason}`;
  return { keys, ignored: skipped };
}
