/**
 * The registry file's rest between writes (src/plugins/fallback/registry-store.ts): after a write of more than a
 * megabyte the next one waits 100 ms per megabyte written, so a flood of registrations rewrites the file a few times,
 * not once per registration; a write under a megabyte has no rest; `flush` (at close) cuts a rest short. The rest on
 * ManualClock; the file's writes are real (a temporary folder), awaited as events with a guard.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { TimerId } from '../../../src/clock/clock.js';
import { ManualClock } from '../../../src/clock/manual-clock.js';
import { silentLogger } from '../../../src/log/logger.js';
import { RegistryStore, WRITE_REST_MS_PER_MB } from '../../../src/plugins/fallback/registry-store.js';

function store() {
  const clock = new ManualClock();
  const file = join(mkdtempSync(join(tmpdir(), 'ovos-registry-rest-')), 'registry.json');
  const s = RegistryStore.open(file, {
    logger: silentLogger(),
    forgetAfterMs: 30 * 86_400_000,
    timers: { setTimeout: (fire, ms) => clock.setTimeout(fire, ms), clearTimeout: (timer) => clock.clearTimeout(timer as TimerId) },
  });
  const has = (skillId: string): boolean => {
    try {
      return readFileSync(file, 'utf8').includes(`"skill_id":"${skillId}"`);
    } catch {
      return false;
    }
  };
  return { s, clock, has, file };
}

/** 4,000 registrations with ids of about 300 characters: a file of about 1.3 MB. */
const fill = (s: RegistryStore): void => {
  for (let i = 0; i < 4_000; i++) s.register(`session-${i}-${'s'.repeat(140)}`, `skill-${i}-${'k'.repeat(140)}`, 50, true);
};

describe('FALLBACK-1 §3 registrations kept across restarts: the file rests after a large write', () => {
  it('a write under a megabyte is followed by none: the next change is written at once', async () => {
    const t = store();
    t.s.register('default', 'small.one', 10, true);
    await expect.poll(() => t.has('small.one')).toBe(true);
    expect(t.clock.pending).toBe(0);
    t.s.register('default', 'small.two', 10, true);
    await expect.poll(() => t.has('small.two')).toBe(true);
  });

  it('after a write of 1.3 MB the next change waits 100 ms per megabyte written, then is written', async () => {
    const t = store();
    fill(t.s);
    await expect.poll(() => t.has('skill-3999-' + 'k'.repeat(140)), { timeout: 10_000 }).toBe(true);
    const bytes = readFileSync(t.file).length;
    expect(bytes).toBeGreaterThan(1024 * 1024);
    // The rest is armed on the clock: the next write waits for it.
    await expect.poll(() => t.clock.pending).toBe(1);
    t.s.register('default', 'late.one', 10, true);
    t.clock.advance(Math.floor((bytes / (1024 * 1024)) * WRITE_REST_MS_PER_MB));
    await expect.poll(() => t.has('late.one'), { timeout: 10_000 }).toBe(true);
  });

  it('flush (the daemon stopping) cuts a rest short: the change made during it is on disk when flush resolves', async () => {
    const t = store();
    fill(t.s);
    await expect.poll(() => t.clock.pending, { timeout: 10_000 }).toBe(1);
    t.s.register('default', 'at.close', 10, true);
    await t.s.flush();
    expect(t.has('at.close')).toBe(true);
  });
});
