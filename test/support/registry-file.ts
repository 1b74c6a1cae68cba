/** The fallback registry file in tests: a fresh place for it, a store opened on a test clock, a stored entry. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RegistryStore, type StoredRegistration } from '../../src/plugins/fallback/registry-store.js';
import { captureLogs } from './log-capture.js';

export const DAY_MS = 24 * 3_600_000;

/** A fresh folder and its registry.json (absent until written). */
export function registryPlace(prefix = 'ovos-registry-'): { dir: string; file: string } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, file: join(dir, 'registry.json') };
}

/** The store as a daemon start opens it, at the clock `now`, with its log lines captured. */
export function openStore(file: string, now: () => number, forgetAfterMs = 30 * DAY_MS): { store: RegistryStore; lines: Array<Record<string, unknown>> } {
  const { logger, logs } = captureLogs();
  return { store: RegistryStore.open(file, { logger, now, forgetAfterMs }), lines: logs };
}

/** One entry of the file: a spec registration in "default" at priority 50 unless `extra` says otherwise. */
export const storedEntry = (skill_id: string, last_seen: number, extra: Partial<StoredRegistration> = {}): StoredRegistration => ({
  session_id: 'default',
  skill_id,
  priority: 50,
  legacy: false,
  last_seen,
  ...extra,
});
