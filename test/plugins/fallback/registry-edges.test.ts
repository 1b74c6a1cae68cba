/**
 * Edges of the fallback registry, its file and its log lines, found by mutation testing: what the registry
 * holds at its bounds (OVOS-FALLBACK-1 §3.4), which restored registrations a pong binds, "default" first for
 * inspection, and what the store keeps, writes and says across a restart (src/plugins/README.md "Restarts"). Each test was checked
 * by hand against the mutant it was written for.
 */
import fs, { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FallbackRegistry } from '../../../src/plugins/fallback/registry.js';
import { REGISTRY_FORMAT } from '../../../src/plugins/fallback/registry-store.js';
import { DAY_MS, openStore, registryPlace, storedEntry } from '../../support/registry-file.js';

const FORGET_AFTER_MS = 30 * DAY_MS;

const freshFile = (): string => registryPlace('ovos-registry-edges-').file;

const open = (file: string, now: number) => openStore(file, () => now, FORGET_AFTER_MS);
const stored = storedEntry;

const withReason = (lines: ReadonlyArray<Record<string, unknown>>, reason: string) => lines.filter((l) => l['reason'] === reason);

describe('FALLBACK-1 §3.4 registry bounds at their edges', () => {
  it('FALLBACK-1 §3.4: "default" never counts against maxSessions — a registry full of sessions still takes "default" registrations', () => {
    const registry = new FallbackRegistry({ maxSessions: 1 });
    expect(registry.register('kitchen', 'a', 10)).toBe('registered');
    expect(registry.register('car', 'a', 10)).toBe('registry_full');
    expect(registry.register('default', 'b', 20)).toBe('registered');
    expect([...registry.availableFor('car').keys()]).toEqual(['b']);
  });

  it('FALLBACK-1 §3.4: maxSkillsPerSession 1 — a new session takes its first skill and refuses a second', () => {
    const registry = new FallbackRegistry({ maxSkillsPerSession: 1 });
    expect(registry.register('kitchen', 'a', 10)).toBe('registered');
    expect(registry.register('kitchen', 'b', 20)).toBe('registry_full');
    expect([...registry.availableFor('kitchen').keys()]).toEqual(['a']);
  });

  it('FALLBACK-1 §3.4: maxSkillsPerSession 0 (library use; config asks ≥ 1) holds nothing: every registration is registry_full', () => {
    const registry = new FallbackRegistry({ maxSkillsPerSession: 0 });
    expect(registry.register('default', 'a', 10)).toBe('registry_full');
    expect(registry.register('kitchen', 'a', 10)).toBe('registry_full');
    expect(registry.entries()).toEqual([]);
    expect(registry.sessionCount).toBe(0);
  });
});

describe('FALLBACK-1 §3.4 registrations not heard from are bound to the connection their skill is heard on', () => {
  it('heard binds only the registrations of that skill not heard from since, in every session, and lists them', () => {
    const registry = new FallbackRegistry();
    registry.restore('default', 'a', 10, { legacy: true, dormant: false }, false); // restored: no connection yet
    registry.register('kitchen', 'a', 10, 'c1'); // registered again over c1 since
    registry.restore('car', 'a', 10, { legacy: false, dormant: false }, true);
    registry.register('bedroom', 'other', 10); // a session without the skill
    registry.restore('default', 'b', 10, { legacy: true, dormant: false }, false);
    registry.register('lounge', 'a', 10); // in process: heard, unbound
    expect(registry.heard('a', 'c2')).toEqual([
      { sessionId: 'default', skillId: 'a' },
      { sessionId: 'car', skillId: 'a' },
    ]);
    expect(registry.entry('default', 'a')?.connection).toBe('c2');
    expect(registry.entry('car', 'a')?.connection).toBe('c2');
    expect(registry.entry('kitchen', 'a')?.connection).toBe('c1');
    expect(registry.entry('lounge', 'a')?.connection).toBeUndefined();
    expect(registry.entry('default', 'b')?.connection).toBeUndefined();
    // c2 closing unbinds exactly what it was bound to; c1's registration stays bound.
    expect(registry.releaseConnection('c2')).toEqual([
      { sessionId: 'default', skillId: 'a', bound: true },
      { sessionId: 'car', skillId: 'a', bound: true },
    ]);
    expect(registry.entry('kitchen', 'a')?.connection).toBe('c1');
    expect(registry.heard('a', 'c3')).toHaveLength(2);
  });
});

describe('registry inspection', () => {
  it('entries() lists "default" first, every other session after it in registration order', () => {
    const registry = new FallbackRegistry();
    registry.register('kitchen', 'k1', 10);
    registry.register('car', 'c1', 20);
    registry.register('default', 'd1', 30);
    registry.register('kitchen', 'k2', 40);
    registry.register('bedroom', 'b1', 50);
    registry.register('default', 'd2', 60);
    expect(registry.entries().map((e) => `${e.sessionId}/${e.skillId}`)).toEqual([
      'default/d1',
      'default/d2',
      'kitchen/k1',
      'kitchen/k2',
      'car/c1',
      'bedroom/b1',
    ]);
  });
});

describe('registry store: what a restart restores', () => {
  it('FALLBACK-1 §3.1 restart: an entry with a field of the wrong type is not restored and is logged (registry_entry_invalid)', () => {
    const file = freshFile();
    const good = stored('good', 1_000);
    writeFileSync(
      file,
      JSON.stringify({
        format: REGISTRY_FORMAT,
        entries: [
          { ...stored('legacy.not.boolean', 1_000), legacy: 'no' },
          { ...stored('last.seen.text', 1_000), last_seen: '1000' },
          { ...stored('priority.text', 1_000), priority: '10' },
          'a.skill',
          null,
          good,
        ],
      }),
    );
    const { store, lines } = open(file, 2_000);
    expect(store.entries()).toEqual([good]);
    expect(withReason(lines, 'registry_entry_invalid')).toMatchObject([{ invalid: 5, file }]);
  });

  it('a file with only good entries restores them all and logs no registry_entry_invalid', () => {
    const file = freshFile();
    const entries = [stored('a', 1_000), stored('b', 1_000, { session_id: 'kitchen', legacy: true })];
    writeFileSync(file, JSON.stringify({ format: REGISTRY_FORMAT, entries }));
    const { store, lines } = open(file, 2_000);
    expect(store.entries()).toEqual(entries);
    expect(withReason(lines, 'registry_entry_invalid')).toEqual([]);
  });
});

describe('registry store: what it writes', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('a pong with nothing to refresh (seen within the hour, or an unknown skill) leaves the file byte for byte', async () => {
    const file = freshFile();
    const text = JSON.stringify({ format: REGISTRY_FORMAT, entries: [stored('a', 1_000)] });
    writeFileSync(file, text);
    const { store } = open(file, 1_000 + 60_000);
    store.seen('a');
    store.seen('unknown.skill');
    await store.flush();
    expect(readFileSync(file, 'utf8')).toBe(text);
  });

  it('changes made in one turn are saved by one write: a failing disk costs one registry_write_failed line, not one per change', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ovos-registry-edges-'));
    const file = join(dir, 'state', 'registry.json');
    const { store, lines } = open(file, 1);
    writeFileSync(join(dir, 'state'), ''); // its folder is now a file: every write fails
    store.register('default', 'a', 10, false);
    store.register('default', 'b', 20, false);
    store.deregister('default', 'a');
    await store.flush();
    expect(withReason(lines, 'registry_write_failed')).toHaveLength(1);
    expect(store.entries().map((e) => e.skill_id)).toEqual(['b']);
  });

  it('every save is fsynced before it replaces the file (src/plugins/README.md "Restarts": a crash leaves the old file or the new one)', async () => {
    const file = freshFile();
    // Every open file shares FileHandle's prototype: its fsync, and whether the file was replaced yet when it ran.
    const probe = await fs.promises.open(`${file}.probe`, 'w');
    await probe.close();
    const fileHandle = Object.getPrototypeOf(probe) as { sync(): Promise<void> };
    const sync = fileHandle.sync;
    const replacedAtSync: boolean[] = [];
    vi.spyOn(fileHandle, 'sync').mockImplementation(function (this: unknown) {
      replacedAtSync.push(fs.existsSync(file));
      return sync.call(this);
    });
    const { store } = open(file, 1);
    store.register('default', 'a', 10, false);
    await store.flush();
    expect(replacedAtSync).toEqual([false]);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ entries: [{ skill_id: 'a' }] });
  });
});

describe('registry store: its log lines speak to the operator', () => {
  /** pino's levels: 30 info, 40 warn, 50 error. */
  it.each<[string, number, (file: string) => Promise<ReadonlyArray<Record<string, unknown>>>]>([
    ['registry_file_unreadable', 40, async (file) => {
      writeFileSync(file, 'not json');
      return open(file, 1).lines;
    }],
    ['registry_entry_invalid', 40, async (file) => {
      writeFileSync(file, JSON.stringify({ format: REGISTRY_FORMAT, entries: [null] }));
      return open(file, 1).lines;
    }],
    ['registry_forgotten', 30, async (file) => {
      writeFileSync(file, JSON.stringify({ format: REGISTRY_FORMAT, entries: [stored('old', 1)] }));
      const { store, lines } = open(file, 1 + FORGET_AFTER_MS + 1);
      await store.flush();
      return lines;
    }],
    ['registry_write_failed', 50, async (file) => {
      const { store, lines } = open(join(file, 'registry.json'), 1); // its folder does not exist yet
      writeFileSync(file, ''); // and now it is a file: the write fails
      store.register('default', 'a', 10, false);
      await store.flush();
      return lines;
    }],
  ])('%s: one line at level %d with a message saying what happened to the fallback registry', async (reason, level, provoke) => {
    const lines = await provoke(freshFile());
    const [line, ...more] = withReason(lines, reason);
    expect(more).toEqual([]);
    expect(line).toMatchObject({ level });
    expect(line?.['msg']).toMatch(/^fallback registr/);
  });
});
