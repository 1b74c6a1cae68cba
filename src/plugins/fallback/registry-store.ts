/**
 * The fallback registry on disk, so a daemon restart loses no skill (legacy OVOS skills register only at their own
 * start-up, never again). One file per bus (the daemon names it after the bus it serves or joins). One small JSON file, replaced atomically on every change with `write-file-atomic` (write
 * a temporary file, fsync, rename: a crash leaves the old file or the new one, never half of either). Writes are
 * coalesced and serialised; a file that cannot be read is set aside (`.corrupt-<time>`) and the daemon starts empty.
 *
 * What it keeps is intent, not liveness: a registration stays until it is deregistered or forgotten. `last_seen` (the
 * last registration or message of the skill, to the hour) lets entries of skills gone for good be forgotten after
 * `forgetAfterMs`; `dormant` remembers a registration that stayed silent while maybe back, so a skill gone for good
 * costs no ping timeout after a restart.
 */
import { mkdirSync, readFileSync, renameSync } from 'node:fs';
import { dirname } from 'node:path';
import writeFileAtomic from 'write-file-atomic';
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
}

const HOUR_MS = 3_600_000;

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
    (v['dormant'] === undefined || typeof v['dormant'] === 'boolean')
  );
}

export class RegistryStore {
  readonly file: string;
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #entries = new Map<string, StoredRegistration>();
  #writing: Promise<void> = Promise.resolve();
  #pending = false;

  private constructor(file: string, logger: Logger, now: () => number) {
    this.file = file;
    this.#logger = logger;
    this.#now = now;
  }

  /** Read `file` (absent: empty), dropping entries not seen for `forgetAfterMs`. */
  static open(file: string, options: { readonly logger: Logger; readonly now?: () => number; readonly forgetAfterMs: number }): RegistryStore {
    const store = new RegistryStore(file, options.logger, options.now ?? Date.now);
    let text: string | undefined;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'ENOENT') throw error;
    }
    if (text === undefined) return store;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    const entries = typeof parsed === 'object' && parsed !== null && (parsed as Record<string, unknown>)['format'] === REGISTRY_FORMAT ? (parsed as Record<string, unknown>)['entries'] : undefined;
    if (!Array.isArray(entries)) {
      const aside = `${file}.corrupt-${store.#now()}`;
      renameSync(file, aside);
      options.logger.warn({ reason: 'registry_file_unreadable', file, moved_to: aside }, 'fallback registry file unreadable: set aside, starting with an empty registry');
      return store;
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

  register(sessionId: string, skillId: string, priority: number, legacy: boolean): void {
    this.#entries.set(keyOf(sessionId, skillId), { session_id: sessionId, skill_id: skillId, priority, legacy, last_seen: this.#now() });
    this.#schedule();
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

  /** Everything written so far is on disk. */
  flush(): Promise<void> {
    return this.#writing;
  }

  /** One write at a time; changes made while one runs are written by the next. */
  #schedule(): void {
    if (this.#pending) return;
    this.#pending = true;
    this.#writing = this.#writing.then(async () => {
      this.#pending = false;
      const body = `${JSON.stringify({ format: REGISTRY_FORMAT, entries: this.entries() }, null, 1)}\n`;
      try {
        mkdirSync(dirname(this.file), { recursive: true });
        await writeFileAtomic(this.file, body, { fsync: true });
      } catch (error) {
        this.#logger.error({ err: error, reason: 'registry_write_failed', file: this.file }, 'fallback registry could not be saved; it is kept in memory');
      }
    });
  }
}

function keyOf(sessionId: string, skillId: string): string {
  return `${sessionId}\u0000${skillId}`;
}
