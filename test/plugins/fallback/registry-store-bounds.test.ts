/**
 * The registry file is bounded in bytes and never wiped by its size (registry-store.ts; src/plugins/README.md
 * "Restarts"): what a daemon writes never exceeds what a start reads back — heard skills first, most recently seen
 * first —, and a file that is too large, cut short or damaged gives back every entry that still reads (a workshop
 * skill registers once, at its own start: losing it loses the skill until it restarts). Set-aside files are pruned.
 * FALLBACK-1 §3.1: a registration is kept until it is deregistered.
 */
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { REGISTRY_FORMAT, REGISTRY_MAX_BYTES, SET_ASIDE_KEPT, serialize } from '../../../src/plugins/fallback/registry-store.js';
import { DAY_MS, openStore, registryPlace, storedEntry } from '../../support/registry-file.js';

const NOW = 100 * DAY_MS;
/** A session id and a skill id as long as the bus takes them (256 characters each). */
const long = (prefix: string, n: number): string => `${prefix}${n}`.padEnd(256, 'x');

describe('registry file bounded in bytes (FALLBACK-1 §3.1)', () => {
  it('a flood of registrations larger than the file may be: the file stays within what a start reads, keeps the heard skill that registered first, says so once', async () => {
    const { file } = registryPlace('ovos-registry-bounds-');
    const { store, lines } = openStore(file, () => NOW);
    // A real workshop skill registered (and was heard) first; then a flood no skill answers for.
    store.register('default', 'ovos-skill-wiki.openvoiceos', 90, true);
    const flood = Math.ceil(REGISTRY_MAX_BYTES / 500) + 1_000;
    for (let i = 0; i < flood; i++) store.register(long('s', i), long('k', i), 50, true, false);
    await store.flush();
    expect(statSync(file).size).toBeLessThanOrEqual(REGISTRY_MAX_BYTES);
    expect(lines.filter((l) => l['reason'] === 'registry_file_full')).toHaveLength(1);
    const next = openStore(file, () => NOW);
    expect(next.lines.filter((l) => String(l['reason']).startsWith('registry_file'))).toEqual([]);
    expect(next.store.entries()[0]).toMatchObject({ skill_id: 'ovos-skill-wiki.openvoiceos', session_id: 'default' });
    expect(next.store.entries().length).toBeGreaterThan(flood / 2);
  });

  it('a file over the size a start reads (written by an earlier version, or planted): its first entries are kept, heard first, the file set aside', () => {
    const { file } = registryPlace('ovos-registry-bounds-');
    const entries = [storedEntry('real.skill', NOW, { legacy: true })];
    for (let i = 0; entries.length * 560 < REGISTRY_MAX_BYTES + 4 * 1024 * 1024; i++) entries.push(storedEntry(long('k', i), NOW, { session_id: long('s', i), heard: false }));
    const text = `{"format":"${REGISTRY_FORMAT}","entries":[\n${entries.map((e) => JSON.stringify(e)).join(',\n')}\n]}\n`;
    writeFileSync(file, text);
    expect(statSync(file).size).toBeGreaterThan(REGISTRY_MAX_BYTES);
    const { store, lines } = openStore(file, () => NOW);
    expect(store.entries()[0]).toMatchObject({ skill_id: 'real.skill' });
    expect(store.entries().length).toBeGreaterThan(entries.length / 2);
    expect(store.entries().length).toBeLessThan(entries.length);
    expect(lines.filter((l) => l['reason'] === 'registry_file_too_large')).toMatchObject([{ salvaged: store.entries().length }]);
  });

  it('a file cut short or damaged in the middle: every entry that still reads is kept', () => {
    const { file } = registryPlace('ovos-registry-bounds-');
    const { body } = serialize([storedEntry('a.skill', NOW), storedEntry('b.skill', NOW - 1), storedEntry('c.skill', NOW - 2), storedEntry('d.skill', NOW - 3)]);
    const damaged = body.split('\n');
    damaged[2] = '{"session_id":"default","skill_id":"b.sk'; // a line torn in two
    writeFileSync(file, damaged.slice(0, -2).join('\n')); // and its end cut off
    const { store, lines } = openStore(file, () => NOW);
    expect(store.entries().map((e) => e.skill_id)).toEqual(['a.skill', 'c.skill', 'd.skill']);
    expect(lines.filter((l) => l['reason'] === 'registry_file_unreadable')).toMatchObject([{ salvaged: 3 }]);
  });

  it(`set-aside files are pruned: the newest ${SET_ASIDE_KEPT} are kept`, () => {
    const { dir, file } = registryPlace('ovos-registry-bounds-');
    for (let t = 1; t <= 5; t++) writeFileSync(`${file}.corrupt-${t * 1_000}`, 'old');
    writeFileSync(file, 'not json');
    openStore(file, () => NOW);
    const aside = readdirSync(dir).filter((name) => name.includes('.corrupt-')).sort();
    expect(aside).toHaveLength(SET_ASIDE_KEPT);
    expect(aside).toContain(`registry.json.corrupt-${NOW}`);
    expect(readFileSync(`${file}.corrupt-${NOW}`, 'utf8')).toBe('not json');
  });
});
