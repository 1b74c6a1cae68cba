/**
 * The one error type of configuration loading, shared by config.ts, schema.ts and mycroft-conf.ts, and
 * the wording its messages share: a key as a dotted path, a value as a reader would describe it, a suggestion for a
 * typo.
 */

export type ConfigErrorCode =
  | 'CONFIG_INVALID'
  | 'CONFIG_FILE_UNREADABLE'
  | 'CONFIG_FILE_NOT_JSON'
  | 'CONFIG_UNKNOWN_FLAG'
  | 'CONFIG_UNKNOWN_KEY';

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly code: ConfigErrorCode;
  /**
   * Dotted path of the offending key (`commonQuery.pollWindowMs`, `pipeline[2]`); absent for file and flag errors.
   * The message does not repeat it: print both with `formatConfigError`.
   */
  readonly key?: string;

  constructor(code: ConfigErrorCode, message: string, options: { readonly key?: string; readonly cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    if (options.key !== undefined) this.key = options.key;
  }
}

/** `bus.port: expected an integer in [0, 65535], got "x" (from command line: --port)`: the key once, then why. */
export function formatConfigError(error: ConfigError): string {
  return error.key === undefined ? error.message : `${error.key}: ${error.message}`;
}

const PLAIN_SEGMENT = /^[A-Za-z0-9_$-]+$/;

/** `fallback.priorities` + `a.skill` → `fallback.priorities["a.skill"]`; `bus` + `port` → `bus.port`. */
export function childKey(path: string, segment: string): string {
  if (!PLAIN_SEGMENT.test(segment)) return `${path}[${JSON.stringify(segment)}]`;
  return path === '' ? segment : `${path}.${segment}`;
}

/** A path as a schema library reports it (`['pipeline', 2]`) → the dotted key (`pipeline[2]`); `''` for the root. */
export function keyOf(path: readonly PropertyKey[]): string {
  let key = '';
  for (const segment of path) key = typeof segment === 'number' ? `${key}[${segment}]` : childKey(key, String(segment));
  return key;
}

/** A value as the "got …" of a message. */
export function describeValue(value: unknown): string {
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

/** The candidate `word` is most likely a typo of, if any is close enough. */
export function didYouMean(word: string, candidates: readonly string[]): string | undefined {
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

/**
 * URLs (comma-separated) as logs and errors show them: in each entry, what stands between `://` (or the start) and
 * the entry's last `@` — a URL's user info, whatever characters a password holds — becomes `***`; a user name before
 * a `:` is kept when it is a plain name.
 */
export function redactUserinfo(list: string): string {
  return list
    .split(',')
    .map((entry) => {
      const at = entry.lastIndexOf('@');
      if (at < 0) return entry;
      const scheme = entry.indexOf('://');
      // No scheme before it (`user:pass@host`): everything before the `@` may be a secret.
      const start = scheme >= 0 && scheme < at ? scheme + 3 : 0;
      const userinfo = entry.slice(start, at);
      const colon = userinfo.indexOf(':');
      const user = colon > 0 && /^[A-Za-z0-9._-]+$/.test(userinfo.slice(0, colon)) ? `${userinfo.slice(0, colon)}:` : '';
      return `${entry.slice(0, start)}${user}***${entry.slice(at)}`;
    })
    .join(',');
}
