/**
 * The fallback registry on disk, so a daemon restart loses no skill (legacy OVOS skills register only at their own
 * start-up, never again). One small JSON file, replaced atomically on every change with `write-file-atomic` (write
 * a temporary file, fsync, rename: a crash leaves the old file or the new one, never half of either). Writes are
 * coalesced and serialised; a file that cannot be read is set aside (`.corrupt-<time>`) and the daemon starts empty.
 *
 * What it keeps is intent, not liveness: a registration stays until it is deregistered — a closed connection removes
 * a spec one from the live registry (README, Dead skills) but never from here. `last_seen` (the last registration or
 * pong, to the hour) lets entries of skills gone for good be forgotten after `forgetAfterMs`.
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
  /** Epoch ms of the last registration or pong. */
  readonly last_seen: number;
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
    typeof v['last_seen'] === 'number'
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

  /** The skill spoke (a pong): its entries are fresh. Written at most once an hour per skill. */
  seen(skillId: string): void {
    const now = this.#now();
    let changed = false;
    for (const [key, entry] of this.#entries) {
      if (entry.skill_id !== skillId || now - entry.last_seen < HOUR_MS) continue;
      this.#entries.set(key, { ...entry, last_seen: now });
      changed = true;
    }
    if (changed) this.#schedule();
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
