/**
 * The fallback registry on disk, so a daemon restart loses no skill (legacy OVOS skills register only at their own
 * start-up, never again). One file per bus (the daemon names it after the bus it serves or joins). One small JSON
 * file, replaced atomically on every change (a temporary file beside it, fsync, rename: a crash leaves the old file
 * or the new one, never half of either). Writes are coalesced and serialised. One entry a line, heard skills first,
 * never more than a start reads back (`REGISTRY_MAX_BYTES`: the least recently heard stay in memory only); a file that
 * is too large, cut short or damaged gives back every entry that still reads, and is set aside (`.corrupt-<time>`, the
 * newest three kept).
 *
 * Other local users must neither read it nor choose what it restores: its folder is created 0700 (the daemon's own
 * state folder is tightened to 0700 when found open; any other folder others may write to is warned about), the
 * file is written 0600, and it is never read or written through a symbolic link nor read past `REGISTRY_MAX_BYTES`.
 *
 * What it keeps is intent, not liveness: a registration stays until it is deregistered or forgotten. `last_seen` (the
 * last registration or message of the skill, to the hour) lets entries of skills gone for good be forgotten after
 * `forgetAfterMs`; `dormant` remembers a registration that stayed silent while maybe back, so a skill gone for good
 * costs no ping timeout after a restart.
 */
import { chmodSync, closeSync, constants, fchmodSync, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, readSync, renameSync, rmSync, statSync, type Stats } from 'node:fs';
import { open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import type { Logger } from '../../log/logger.js';

export const REGISTRY_FORMAT = 'ovos-contests-registry/1';

export interface StoredRegistration {
  readonly session_id: string;
  readonly skill_id: string;
  readonly priority: number;
  readonly legacy: boolean;
  /** Epoch ms of the last registration or message of the skill (written at most hourly). */
  readonly last_seen: number;
  /**
   * It missed its ping while not known to be on the bus (maybe back after its connection closed or a restart): it is
   * asked again only once it is heard from, across restarts too. Absent: false.
   */
  readonly dormant?: boolean;
  /**
   * False: registered, and not heard from since (no pong, no message of its own) — restored dormant, so registrations
   * nobody answers for cost nothing after a restart. Absent (also in files written before the field): heard.
   */
  readonly heard?: boolean;
}

const HOUR_MS = 3_600_000;

/**
 * A larger file is not read: set aside like an unreadable one. 64,064 registrations — the default bounds, 64 skills in
 * each of 1,001 sessions — with UUID session ids and 50-character skill ids measure 14.2 MB as written (222 bytes
 * each) and parse in under 0.1 s; the cap leaves room for longer ids, and keeps a file planted or grown without bound
 * from costing the start its memory.
 */
export const REGISTRY_MAX_BYTES = 32 * 1024 * 1024;

/** Group and other permission bits. */
const OPEN_BITS = 0o077;
const OTHERS_WRITE = 0o022;

/** What the file is read and written with: never through a symbolic link; a FIFO in its place does not block. */
const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const TEMP_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

function isStored(value: unknown): value is StoredRegistration {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v['session_id'] === 'string' &&
    typeof v['skill_id'] === 'string' &&
    typeof v['priority'] === 'number' &&
    Number.isInteger(v['priority']) &&
    typeof v['legacy'] === 'boolean' &&
    typeof v['last_seen'] === 'number' &&
    (v['dormant'] === undefined || typeof v['dormant'] === 'boolean') &&
    (v['heard'] === undefined || typeof v['heard'] === 'boolean')
  );
}

export class RegistryStore {
  readonly file: string;
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #entries = new Map<string, StoredRegistration>();
  #writing: Promise<void> = Promise.resolve();
  #pending = false;
  /** The last write left entries out (`registry_file_full`, said once until the file fits again). */
  #full = false;
  readonly #timers: RestTimers;
  /** The rest after a large write before the next may start (`WRITE_REST_MS_PER_MB`); `flush` ends it at once. */
  #rest: { readonly over: Promise<void>; readonly end: () => void } | undefined;

  private constructor(file: string, logger: Logger, now: () => number, timers: RestTimers) {
    this.file = file;
    this.#logger = logger;
    this.#now = now;
    this.#timers = timers;
  }

  /**
   * Read `file` (absent: empty), dropping entries not seen for `forgetAfterMs`. `privateDir` is the folder made for
   * these files alone (the daemon's `$STATE` folder): when it is the file's folder and is found open to other users,
   * it is tightened to 0700.
   */
  static open(file: string, options: { readonly logger: Logger; readonly now?: () => number; readonly forgetAfterMs: number; readonly privateDir?: string; readonly timers?: RestTimers }): RegistryStore {
    const store = new RegistryStore(file, options.logger, options.now ?? Date.now, options.timers ?? REAL_TIMERS);
    const dir = dirname(resolve(file));
    checkFolder(dir, options.privateDir !== undefined && resolve(options.privateDir) === dir, options.logger);
    const setAside = (): string => {
      const aside = `${file}.corrupt-${store.#now()}`;
      renameSync(file, aside); // a link is moved itself, its target left alone
      pruneSetAside(file, options.logger);
      return aside;
    };
    let fd: number;
    try {
      fd = openSync(file, READ_FLAGS);
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (code === 'ENOENT') return store;
      if (code !== 'ELOOP' || !lstatSync(file).isSymbolicLink()) throw error;
      options.logger.warn({ reason: 'registry_file_symlink', file, moved_to: setAside() }, 'fallback registry file is a symbolic link: not followed, set aside, starting with an empty registry');
      return store;
    }
    let stat: Stats;
    let text: string | undefined;
    try {
      stat = fstatSync(fd);
      if (!stat.isFile()) throw Object.assign(new Error(`fallback registry file ${file} is not a regular file`), { code: 'ERR_REGISTRY_NOT_A_FILE' });
      // This store writes 0600; a file written otherwise (an adopted one) is tightened here, also when set aside.
      if ((stat.mode & OPEN_BITS) !== 0 && stat.uid === process.getuid?.()) fchmodSync(fd, 0o600);
      // Past the cap only its beginning is read: the entries written first (heard skills) are salvaged from it.
      text = readAll(fd, Math.min(stat.size, REGISTRY_MAX_BYTES));
    } finally {
      closeSync(fd);
    }
    const tooLarge = stat.size > REGISTRY_MAX_BYTES;
    let parsed: unknown;
    try {
      parsed = tooLarge ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    const listed = typeof parsed === 'object' && parsed !== null && (parsed as Record<string, unknown>)['format'] === REGISTRY_FORMAT ? (parsed as Record<string, unknown>)['entries'] : undefined;
    let entries: readonly unknown[];
    if (Array.isArray(listed)) entries = listed;
    else {
      // Damaged, cut short or too large: every entry that still reads on its line of its own is kept, the file set aside.
      const salvaged = salvage(text);
      const reason = tooLarge ? 'registry_file_too_large' : 'registry_file_unreadable';
      const moved = setAside();
      if (salvaged.length === 0) {
        options.logger.warn({ reason, file, size: stat.size, limit: REGISTRY_MAX_BYTES, moved_to: moved }, `fallback registry file ${tooLarge ? 'too large' : 'unreadable'}: nothing in it could be read; set aside, starting with an empty registry`);
        return store;
      }
      options.logger.warn(
        { reason, file, size: stat.size, limit: REGISTRY_MAX_BYTES, moved_to: moved, salvaged: salvaged.length },
        `fallback registry file ${tooLarge ? 'too large' : 'unreadable'}: the entries that still read were kept (heard skills first), the file set aside and written again`,
      );
      entries = salvaged;
      store.#schedule();
    }
    const cutoff = store.#now() - options.forgetAfterMs;
    let forgotten = 0;
    let invalid = 0;
    for (const entry of entries) {
      if (!isStored(entry)) {
        invalid++;
        continue;
      }
      if (entry.last_seen < cutoff) {
        forgotten++;
        continue;
      }
      store.#entries.set(keyOf(entry.session_id, entry.skill_id), entry);
    }
    if (invalid > 0) {
      options.logger.warn({ reason: 'registry_entry_invalid', invalid, file }, 'fallback registry entries malformed: not restored');
    }
    if (forgotten > 0) {
      options.logger.info({ reason: 'registry_forgotten', forgotten, file }, 'fallback registrations not seen for too long were forgotten');
      store.#schedule();
    }
    return store;
  }

  /** What was registered when the daemon last stopped. */
  entries(): StoredRegistration[] {
    return [...this.#entries.values()];
  }

  /** `heard` false: not heard from yet (kept `heard: false` until `heard`); registering again never unlearns it. */
  register(sessionId: string, skillId: string, priority: number, legacy: boolean, heard = true): void {
    const key = keyOf(sessionId, skillId);
    const before = this.#entries.get(key);
    const unheard = !heard && (before === undefined || before.heard === false);
    this.#entries.set(key, { session_id: sessionId, skill_id: skillId, priority, legacy, last_seen: this.#now(), ...(unheard ? { heard: false } : {}) });
    this.#schedule();
  }

  /** The skill was heard from (a pong, a message of its own other than a registration): none of its entries is unheard. */
  heard(skillId: string): void {
    let changed = false;
    for (const [key, entry] of this.#entries) {
      if (entry.skill_id !== skillId || entry.heard !== false) continue;
      const { heard: _heard, ...rest } = entry;
      this.#entries.set(key, rest);
      changed = true;
    }
    if (changed) this.#schedule();
  }

  deregister(sessionId: string, skillId: string): void {
    if (this.#entries.delete(keyOf(sessionId, skillId))) this.#schedule();
  }

  /** Entries not seen since before `cutoff` (epoch ms): candidates to forget. */
  staleSince(cutoff: number): StoredRegistration[] {
    return this.entries().filter((entry) => entry.last_seen < cutoff);
  }

  /** The wall-clock time the store stamps `last_seen` with. */
  now(): number {
    return this.#now();
  }

  /**
   * The skill spoke (or is connected): its entries are fresh, and none is dormant. `last_seen` alone is written at
   * most once an hour per skill.
   */
  seen(skillId: string): void {
    const now = this.#now();
    let changed = false;
    for (const [key, entry] of this.#entries) {
      if (entry.skill_id !== skillId || (now - entry.last_seen < HOUR_MS && entry.dormant !== true)) continue;
      const { dormant: _dormant, ...fresh } = entry;
      this.#entries.set(key, { ...fresh, last_seen: now });
      changed = true;
    }
    if (changed) this.#schedule();
  }

  /** It missed its ping while maybe back: kept dormant across restarts (until `seen` or `register`). */
  dormant(sessionId: string, skillId: string): void {
    const key = keyOf(sessionId, skillId);
    const entry = this.#entries.get(key);
    if (entry === undefined || entry.dormant === true) return;
    this.#entries.set(key, { ...entry, dormant: true });
    this.#schedule();
  }

  /** Everything changed so far is on disk once this resolves (a rest between writes is cut short). */
  flush(): Promise<void> {
    this.#rest?.end();
    return this.#writing;
  }

  /**
   * One write at a time; changes made while one runs are written by the next. After a write of more than a megabyte
   * the next waits `WRITE_REST_MS_PER_MB` per megabyte written: a flood of registrations is written a few times, not
   * once per registration — each write of a full file serializes tens of thousands of entries.
   */
  #schedule(): void {
    if (this.#pending) return;
    this.#pending = true;
    this.#writing = this.#writing.then(async () => {
      await this.#rest?.over;
      this.#rest = undefined;
      this.#pending = false;
      const { body, left } = serialize(this.entries());
      if (left > 0 && !this.#full) this.#logger.warn({ reason: 'registry_file_full', file: this.file, left, limit: REGISTRY_MAX_BYTES }, 'fallback registry file at its size limit: the entries least recently heard are kept in memory only (they are lost at a restart unless their skills register again)');
      this.#full = left > 0;
      try {
        mkdirSync(dirname(this.file), { recursive: true, mode: 0o700 }); // XDG: state folders are created 0700
        await replaceFile(this.file, body);
      } catch (error) {
        this.#logger.error({ err: error, reason: 'registry_write_failed', file: this.file }, 'fallback registry could not be saved; it is kept in memory');
      }
      this.#restAfter(Math.floor((body.length / (1024 * 1024)) * WRITE_REST_MS_PER_MB));
    });
  }

  #restAfter(ms: number): void {
    if (ms < 100) return;
    let end = (): void => {};
    const over = new Promise<void>((resolve) => {
      const timer = this.#timers.setTimeout(resolve, ms);
      end = () => {
        this.#timers.clearTimeout(timer);
        resolve();
      };
    });
    this.#rest = { over, end };
  }
}

/** The timers of the rest between writes (tests give a deterministic clock's). */
export interface RestTimers {
  setTimeout(fire: () => void, ms: number): unknown;
  clearTimeout(timer: unknown): void;
}

/** Node's timers, not keeping the process alive for a rest. */
const REAL_TIMERS: RestTimers = {
  setTimeout: (fire, ms) => setTimeout(fire, ms).unref(),
  clearTimeout: (timer) => clearTimeout(timer as NodeJS.Timeout),
};

/** The rest after a write, per megabyte written (none under a megabyte): a 32 MiB file is written every 3.2 s at most. */
export const WRITE_REST_MS_PER_MB = 100;

/** How many set-aside files (`.corrupt-<time>`) of one registry file are kept: the newest. */
export const SET_ASIDE_KEPT = 3;

/**
 * The file's text: one entry a line, heard skills first (most recently seen first), then registrations no skill has
 * answered for and dormant ones — never more than `REGISTRY_MAX_BYTES`, what a start reads back: the entries past it
 * stay in memory only (`left`). A file cut short, or damaged, still gives its first entries back (`salvage`).
 */
export function serialize(entries: readonly StoredRegistration[]): { readonly body: string; readonly left: number } {
  const rank = (entry: StoredRegistration): number => (entry.heard === false ? 2 : entry.dormant === true ? 1 : 0);
  const ordered = [...entries].sort((a, b) => rank(a) - rank(b) || b.last_seen - a.last_seen);
  const head = `{"format":${JSON.stringify(REGISTRY_FORMAT)},"entries":[\n`;
  const tail = ']}\n';
  let bytes = Buffer.byteLength(head) + Buffer.byteLength(tail);
  const lines: string[] = [];
  for (const entry of ordered) {
    const line = JSON.stringify(entry);
    const size = Buffer.byteLength(line) + 2;
    if (bytes + size > REGISTRY_MAX_BYTES) break;
    bytes += size;
    lines.push(line);
  }
  return { body: `${head}${lines.join(',\n')}\n${tail}`, left: ordered.length - lines.length };
}

/** The entries of a damaged or cut-short file that still read, one on a line of its own. */
function salvage(text: string): StoredRegistration[] {
  const found: StoredRegistration[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim().replace(/,$/, '');
    if (!line.startsWith('{') || !line.endsWith('}')) continue;
    try {
      const value = JSON.parse(line) as unknown;
      if (isStored(value)) found.push(value);
    } catch {
      // not an entry
    }
  }
  return found;
}

/** Only the newest `SET_ASIDE_KEPT` set-aside files of `file` are kept. */
function pruneSetAside(file: string, logger: Logger): void {
  try {
    const prefix = `${basename(file)}.corrupt-`;
    const dir = dirname(resolve(file));
    const aside = readdirSync(dir)
      .filter((name) => name.startsWith(prefix) && /^\d+$/.test(name.slice(prefix.length)))
      .sort((a, b) => Number(b.slice(prefix.length)) - Number(a.slice(prefix.length)));
    for (const name of aside.slice(SET_ASIDE_KEPT)) rmSync(join(dir, name), { force: true });
  } catch (error) {
    logger.warn({ reason: 'registry_set_aside_unpruned', file, err: error }, 'older set-aside registry files could not be removed');
  }
}

function keyOf(sessionId: string, skillId: string): string {
  return `${sessionId}\u0000${skillId}`;
}

/**
 * Warn about a registry folder other local users can use — they could read which skills are registered, or plant the
 * file the next start restores skills from — or, when it is the daemon's own folder, close it (0700).
 */
function checkFolder(dir: string, own: boolean, logger: Logger): void {
  let found: Stats | undefined;
  try {
    found = statSync(dir, { throwIfNoEntry: false }); // a linked folder is judged by where it leads
  } catch {
    return; // not a folder that can be reached: reading or writing the file says so
  }
  if (found === undefined) return;
  const mode = found.mode & 0o777;
  if (own) {
    if ((mode & OPEN_BITS) === 0) return;
    if (found.isDirectory() && found.uid === process.getuid?.() && !lstatSync(dir).isSymbolicLink()) {
      try {
        chmodSync(dir, 0o700);
        logger.info({ reason: 'state_dir_tightened', dir, mode_was: octal(mode) }, 'the state folder was open to other users: now 0700');
        return;
      } catch (error) {
        logger.warn({ reason: 'state_dir_open', dir, mode: octal(mode), err: error }, 'the state folder is open to other users and cannot be made 0700: they can read which skills are registered, or replace the file the next start restores them from');
        return;
      }
    }
  } else if ((mode & OTHERS_WRITE) === 0) {
    return;
  }
  logger.warn({ reason: 'state_dir_open', dir, mode: octal(mode) }, 'the fallback registry folder is open to other users: they can read which skills are registered, or replace the file the next start restores them from; make it yours and 0700');
}

function octal(mode: number): string {
  return `0${mode.toString(8).padStart(3, '0')}`;
}

/** The whole file from `fd`, at most `size` bytes (what fstat said: a file growing meanwhile is not followed). */
function readAll(fd: number, size: number): string {
  const buffer = Buffer.alloc(size);
  let filled = 0;
  while (filled < size) {
    const read = readSync(fd, buffer, filled, size - filled, null);
    if (read === 0) break;
    filled += read;
  }
  return buffer.toString('utf8', 0, filled);
}

let temporaries = 0;

/**
 * Replace `file` with `body` atomically, 0600 whatever the umask. The temporary file beside it is always a new file
 * (O_EXCL, O_NOFOLLOW: nothing planted at its name is written through), and rename(2) replaces a link at `file`
 * rather than following it. write-file-atomic is not used for this: it resolves a link at `file` and replaces the
 * link's target.
 */
async function replaceFile(file: string, body: string): Promise<void> {
  const temporary = `${file}.${process.pid}-${++temporaries}.tmp`;
  const handle = await open(temporary, TEMP_FLAGS, 0o600);
  try {
    try {
      await handle.chmod(0o600);
      await handle.writeFile(body, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, file);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}
