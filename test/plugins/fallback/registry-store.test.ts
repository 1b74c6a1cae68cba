/**
 * The fallback registry on disk (registry-store.ts; src/plugins/README.md "Restarts"): what a deployer relies on when the daemon
 * restarts — every OVOS-FALLBACK-1 §3.1 registration kept until its §3.2 deregistration, written atomically and
 * coalesced, `last_seen` refreshed at most once an hour, entries of skills gone for good forgotten, and a file that
 * cannot be read or written never costs the daemon its start or its registry in memory.
 * The whole-daemon side (restore, bind on first pong, crash safety) is test/integration/restart.test.ts.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REGISTRY_FORMAT, type StoredRegistration } from '../../../src/plugins/fallback/registry-store.js';
import { DAY_MS, openStore, registryPlace, storedEntry } from '../../support/registry-file.js';

const HOUR_MS = 3_600_000;

const place = (): { dir: string; file: string } => registryPlace('ovos-registry-store-');

/** The file as the next daemon start reads it. */
function onDisk(file: string): { format: unknown; entries: StoredRegistration[] } {
  return JSON.parse(readFileSync(file, 'utf8')) as { format: unknown; entries: StoredRegistration[] };
}

const open = (file: string, now: { t: number }, forgetAfterMs = 30 * DAY_MS) => openStore(file, () => now.t, forgetAfterMs);
const entry = storedEntry;

describe('registry store: FALLBACK-1 §3.1 / §3.2 kept across restarts', () => {
  it('an absent file is an empty registry, and nothing is written until something registers', async () => {
    const { file } = place();
    const { store } = open(file, { t: 1_000 });
    expect(store.entries()).toEqual([]);
    store.deregister('default', 'unknown.skill'); // §3.2: an unknown skill_id is a no-op — on disk too
    await store.flush();
    expect(existsSync(file)).toBe(false);
  });

  it('§3.1: a registration is on disk with its session, priority, dialect and time; re-registering replaces it; §3.2 removes it', async () => {
    const { file } = place();
    const now = { t: 5_000 };
    const { store } = open(file, now);
    store.register('default', 'a.skill', 10, false);
    store.register('s1', 'b.skill', 90, true);
    await store.flush();
    expect(onDisk(file)).toEqual({
      format: REGISTRY_FORMAT,
      entries: [entry('a.skill', 5_000, { priority: 10 }), entry('b.skill', 5_000, { session_id: 's1', priority: 90, legacy: true })],
    });
    now.t = 6_000;
    store.register('default', 'a.skill', 20, true);
    store.deregister('s1', 'b.skill');
    await store.flush();
    expect(onDisk(file).entries).toEqual([entry('a.skill', 6_000, { priority: 20, legacy: true })]);
    // The same skill in another session is another registration: deregistering one leaves the other.
    store.register('s2', 'a.skill', 30, false);
    store.deregister('default', 'a.skill');
    await store.flush();
    expect(onDisk(file).entries.map((e) => [e.session_id, e.skill_id])).toEqual([['s2', 'a.skill']]);
  });

  it('a restart reads back exactly what was written (the next daemon restores it)', async () => {
    const { file } = place();
    const now = { t: 7_000 };
    const first = open(file, now).store;
    first.register('default', 'a.skill', 10, true);
    first.register('s1', 'b.skill', 60, false);
    await first.flush();
    const second = open(file, now).store;
    expect(second.entries()).toEqual(first.entries());
  });

  it('changes made while a write runs are all on disk after the next one (coalesced, never lost)', async () => {
    const { file } = place();
    const { store } = open(file, { t: 1 });
    for (let i = 0; i < 50; i++) store.register('default', `skill.${i}`, i, false);
    for (let i = 0; i < 50; i += 2) store.deregister('default', `skill.${i}`);
    await store.flush();
    expect(onDisk(file).entries.map((e) => e.skill_id)).toEqual(Array.from({ length: 25 }, (_, k) => `skill.${2 * k + 1}`));
  });

  it('the folder is created when missing ($STATE/ on a fresh machine)', async () => {
    const { dir } = place();
    const file = join(dir, 'state', 'ovos-contests', 'registry.json');
    const { store } = open(file, { t: 1 });
    store.register('default', 'a.skill', 10, false);
    await store.flush();
    expect(onDisk(file).entries.map((e) => e.skill_id)).toEqual(['a.skill']);
  });
});

describe('registry store: last_seen and forgetting', () => {
  it('a pong refreshes last_seen only once it is an hour old (at most one write an hour per skill), in every session it holds', async () => {
    const { file } = place();
    const now = { t: 10 * DAY_MS };
    const { store } = open(file, now);
    store.register('default', 'a.skill', 10, false);
    store.register('s1', 'a.skill', 10, false);
    store.register('default', 'b.skill', 10, false);
    await store.flush();
    const registeredAt = now.t;

    now.t = registeredAt + HOUR_MS - 1;
    store.seen('a.skill');
    await store.flush();
    expect(onDisk(file).entries.map((e) => e.last_seen)).toEqual([registeredAt, registeredAt, registeredAt]);

    now.t = registeredAt + HOUR_MS;
    store.seen('a.skill');
    await store.flush();
    expect(onDisk(file).entries.map((e) => [e.session_id, e.skill_id, e.last_seen])).toEqual([
      ['default', 'a.skill', registeredAt + HOUR_MS],
      ['s1', 'a.skill', registeredAt + HOUR_MS],
      ['default', 'b.skill', registeredAt], // another skill's pong is not this one's
    ]);
    store.seen('unknown.skill');
    expect(store.entries().map((e) => e.skill_id)).toEqual(['a.skill', 'a.skill', 'b.skill']);
  });

  it('at start, entries last seen more than forgetAfterMs ago are forgotten (logged registry_forgotten) and the file rewritten without them', async () => {
    const { file } = place();
    const now = 100 * DAY_MS;
    const forgetAfterMs = 30 * DAY_MS;
    writeFileSync(file, JSON.stringify({ format: REGISTRY_FORMAT, entries: [entry('old', now - forgetAfterMs - 1), entry('edge', now - forgetAfterMs), entry('new', now)] }));
    const { store, lines } = open(file, { t: now }, forgetAfterMs);
    // At exactly forgetAfterMs it is kept: forgotten only once older than that.
    expect(store.entries().map((e) => e.skill_id)).toEqual(['edge', 'new']);
    expect(lines.filter((l) => l['reason'] === 'registry_forgotten')).toMatchObject([{ forgotten: 1, file }]);
    await store.flush();
    // Written most recently seen first (a file cut short keeps those).
    expect(onDisk(file).entries.map((e) => e.skill_id)).toEqual(['new', 'edge']);
  });

  it('nothing forgotten: no log line and the file is left as it is', async () => {
    const { file } = place();
    const text = `${JSON.stringify({ format: REGISTRY_FORMAT, entries: [entry('a', 1_000)] })}`;
    writeFileSync(file, text);
    const { store, lines } = open(file, { t: 2_000 });
    await store.flush();
    expect(lines.filter((l) => l['reason'] === 'registry_forgotten')).toEqual([]);
    expect(readFileSync(file, 'utf8')).toBe(text);
  });
});

describe('registry store: a file that cannot be trusted never stops the daemon', () => {
  it.each([
    ['not JSON', '{"format": "ovos-contests-registry/1", "entries": [ {"sess'],
    ['another format', JSON.stringify({ format: 'something-else/1', entries: [] })],
    ['entries not a list', JSON.stringify({ format: REGISTRY_FORMAT, entries: { a: 1 } })],
    ['JSON null', 'null'],
  ])('%s: set aside as .corrupt-<time> (registry_file_unreadable) and the registry starts empty', (_label, text) => {
    const { dir, file } = place();
    writeFileSync(file, text);
    const { store, lines } = open(file, { t: 1_234 });
    expect(store.entries()).toEqual([]);
    expect(lines.filter((l) => l['reason'] === 'registry_file_unreadable')).toMatchObject([{ file, moved_to: `${file}.corrupt-1234` }]);
    expect(readdirSync(dir).sort()).toEqual(['registry.json.corrupt-1234']);
    expect(readFileSync(`${file}.corrupt-1234`, 'utf8')).toBe(text);
  });

  it('malformed entries are skipped one by one; the good ones around them are kept', () => {
    const { file } = place();
    const good = entry('good', 1_000);
    const bad: unknown[] = [
      null,
      'a.skill',
      { ...good, session_id: 7 },
      { ...good, skill_id: null },
      { ...good, priority: '10' },
      { ...good, priority: 10.5 },
      { ...good, legacy: 'no' },
      { ...good, last_seen: '1000' },
    ];
    writeFileSync(file, JSON.stringify({ format: REGISTRY_FORMAT, entries: [...bad, good] }));
    expect(open(file, { t: 2_000 }).store.entries()).toEqual([good]);
  });

  it('a file that exists but cannot be read (a folder in its place) is an error at start, not an empty registry', () => {
    const { file } = place();
    mkdirSync(file);
    expect(() => open(file, { t: 1 })).toThrow();
  });

  it('a write that fails is logged (registry_write_failed); the registry stays in memory and the next write still happens', async () => {
    const { dir } = place();
    const file = join(dir, 'state', 'registry.json');
    const { store, lines } = open(file, { t: 1 });
    writeFileSync(join(dir, 'state'), ''); // its folder is now a file: mkdir and the write fail
    store.register('default', 'a.skill', 10, false);
    await store.flush();
    expect(lines.filter((l) => l['reason'] === 'registry_write_failed')).toMatchObject([{ file }]);
    expect(store.entries().map((e) => e.skill_id)).toEqual(['a.skill']);
    store.register('default', 'b.skill', 10, false);
    await store.flush();
    expect(lines.filter((l) => l['reason'] === 'registry_write_failed')).toHaveLength(2);
  });
});
