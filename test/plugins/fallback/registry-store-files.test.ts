/**
 * The fallback registry file against other local users (registry-store.ts; src/plugins/README.md "One registry file per bus"): its
 * folder is created 0700 and the daemon's own folder is closed when found open, the file is written 0600, it is never
 * read or written through a symbolic link, and a file larger than REGISTRY_MAX_BYTES is set aside unread. Each test
 * has its own temporary folder.
 */
import { chmodSync, lstatSync, mkdirSync, readFileSync, readdirSync, readlinkSync, statSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REGISTRY_FORMAT, REGISTRY_MAX_BYTES, RegistryStore } from '../../../src/plugins/fallback/registry-store.js';
import { captureLogs } from '../../support/log-capture.js';
import { DAY_MS, openStore, registryPlace, storedEntry } from '../../support/registry-file.js';

const place = (): { dir: string; file: string } => registryPlace('ovos-registry-files-');
const modeOf = (path: string): number => statSync(path).mode & 0o777;
const reasons = (lines: Array<Record<string, unknown>>, reason: string): Array<Record<string, unknown>> => lines.filter((l) => l['reason'] === reason);
const registryText = (...skills: string[]): string => JSON.stringify({ format: REGISTRY_FORMAT, entries: skills.map((skill) => storedEntry(skill, 1_000)) });

/** The store with the daemon's own folder named, as the daemon opens a `$STATE/` file. */
function openPrivate(file: string, privateDir: string): { store: RegistryStore; lines: Array<Record<string, unknown>> } {
  const { logger, logs } = captureLogs();
  return { store: RegistryStore.open(file, { logger, now: () => 2_000, forgetAfterMs: 30 * DAY_MS, privateDir }), lines: logs };
}

describe('registry file: permissions', () => {
  it('a save creates the missing folders 0700 (less what the umask removes) and the file exactly 0600', async () => {
    const { dir } = place();
    const file = join(dir, 'state', 'ovos-contests', 'registry.json');
    const { store } = openStore(file, () => 1);
    store.register('default', 'a.skill', 10, false);
    await store.flush();
    // mkdir applies the umask; the file's mode is set explicitly, so the umask does not matter for it.
    const umask = process.umask();
    expect(modeOf(join(dir, 'state'))).toBe(0o700 & ~umask);
    expect(modeOf(join(dir, 'state', 'ovos-contests'))).toBe(0o700 & ~umask);
    expect(modeOf(file)).toBe(0o600);
    expect(readdirSync(join(dir, 'state', 'ovos-contests'))).toEqual(['registry.json']); // no temporary file left
  });

  it('a file another writer left 0644 is 0600 once opened, and stays 0600 after a save', async () => {
    const { file } = place();
    writeFileSync(file, registryText('a.skill'), { mode: 0o644 });
    chmodSync(file, 0o644);
    const { store } = openStore(file, () => 2_000);
    expect(store.entries().map((e) => e.skill_id)).toEqual(['a.skill']);
    expect(modeOf(file)).toBe(0o600);
    store.register('default', 'b.skill', 10, false);
    await store.flush();
    expect(modeOf(file)).toBe(0o600);
  });

  it('the daemon\'s own folder found open (0755) is made 0700 at open (state_dir_tightened)', () => {
    const { dir, file } = place();
    chmodSync(dir, 0o755);
    const { lines } = openPrivate(file, dir);
    expect(modeOf(dir)).toBe(0o700);
    expect(reasons(lines, 'state_dir_tightened')).toMatchObject([{ dir, mode_was: '0755' }]);
    expect(lines.filter((l) => (l['level'] as number) >= 40)).toEqual([]);
  });

  it('the daemon\'s own folder already 0700: nothing logged', () => {
    const { dir, file } = place();
    chmodSync(dir, 0o700);
    const { lines } = openPrivate(file, dir);
    expect(lines).toEqual([]);
  });

  it('the daemon\'s own folder reached through a link is not changed: state_dir_open names the risk instead', () => {
    const { dir } = place();
    const real = join(dir, 'elsewhere');
    mkdirSync(real);
    chmodSync(real, 0o755);
    const linked = join(dir, 'ovos-contests');
    symlinkSync(real, linked);
    const { lines } = openPrivate(join(linked, 'registry.json'), linked);
    expect(modeOf(real)).toBe(0o755);
    const [warn] = reasons(lines, 'state_dir_open');
    expect(warn).toMatchObject({ level: 40, dir: linked, mode: '0755' });
    expect(String(warn?.['msg'])).toMatch(/other users/);
  });

  it('a folder of the user\'s choosing is never changed: warned (state_dir_open) when others may write to it, silent when they may only read it', () => {
    const shared = place();
    chmodSync(shared.dir, 0o777);
    expect(reasons(openStore(shared.file, () => 1).lines, 'state_dir_open')).toMatchObject([{ level: 40, dir: shared.dir, mode: '0777' }]);
    expect(modeOf(shared.dir)).toBe(0o777);

    const group = place();
    chmodSync(group.dir, 0o770);
    expect(reasons(openStore(group.file, () => 1).lines, 'state_dir_open')).toMatchObject([{ mode: '0770' }]);

    const readable = place();
    chmodSync(readable.dir, 0o755);
    expect(openStore(readable.file, () => 1).lines).toEqual([]);
    expect(modeOf(readable.dir)).toBe(0o755);
  });
});

describe('registry file: never through a symbolic link', () => {
  it.each([
    ['to a registry of someone else\'s', true],
    ['dangling', false],
  ])('a link in its place (%s) is not read: registry_file_symlink, the link itself set aside, an empty registry', (_label, targetExists) => {
    const { dir, file } = place();
    const target = join(dir, 'elsewhere.json');
    const text = registryText('planted.skill');
    if (targetExists) writeFileSync(target, text);
    symlinkSync(target, file);
    const { store, lines } = openStore(file, () => 1_234);
    expect(store.entries()).toEqual([]);
    expect(reasons(lines, 'registry_file_symlink')).toMatchObject([{ level: 40, file, moved_to: `${file}.corrupt-1234` }]);
    expect(lstatSync(`${file}.corrupt-1234`).isSymbolicLink()).toBe(true);
    expect(readlinkSync(`${file}.corrupt-1234`)).toBe(target);
    if (targetExists) expect(readFileSync(target, 'utf8')).toBe(text);
  });

  it('a save replaces a link planted in its place and leaves the link\'s target untouched', async () => {
    const { dir, file } = place();
    const { store } = openStore(file, () => 1);
    const target = join(dir, 'precious');
    writeFileSync(target, 'not the registry\n');
    chmodSync(target, 0o644);
    symlinkSync(target, file); // planted after the start, before the first save
    store.register('default', 'a.skill', 10, false);
    await store.flush();
    expect(readFileSync(target, 'utf8')).toBe('not the registry\n');
    expect(modeOf(target)).toBe(0o644);
    expect(lstatSync(file).isFile()).toBe(true);
    expect(modeOf(file)).toBe(0o600);
    expect(openStore(file, () => 1).store.entries().map((e) => e.skill_id)).toEqual(['a.skill']);
  });
});

describe('registry file: size cap', () => {
  it('a file over REGISTRY_MAX_BYTES is not read: set aside (registry_file_too_large, with its size) and the registry starts empty', () => {
    const { dir, file } = place();
    writeFileSync(file, '');
    truncateSync(file, REGISTRY_MAX_BYTES + 1); // sparse: its size without the disk space
    const { store, lines } = openStore(file, () => 5_678);
    expect(store.entries()).toEqual([]);
    expect(reasons(lines, 'registry_file_too_large')).toMatchObject([{ level: 40, file, size: REGISTRY_MAX_BYTES + 1, limit: REGISTRY_MAX_BYTES, moved_to: `${file}.corrupt-5678` }]);
    expect(readdirSync(dir)).toEqual(['registry.json.corrupt-5678']);
    expect(statSync(`${file}.corrupt-5678`).size).toBe(REGISTRY_MAX_BYTES + 1);
  });

  it('a file of exactly REGISTRY_MAX_BYTES is read', () => {
    const { file } = place();
    const text = registryText('a.skill');
    writeFileSync(file, text + ' '.repeat(REGISTRY_MAX_BYTES - Buffer.byteLength(text)));
    expect(statSync(file).size).toBe(REGISTRY_MAX_BYTES);
    const { store, lines } = openStore(file, () => 2_000);
    expect(store.entries().map((e) => e.skill_id)).toEqual(['a.skill']);
    expect(lines).toEqual([]);
  });
});
