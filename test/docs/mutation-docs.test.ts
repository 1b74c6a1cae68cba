/**
 * The tables of test/mutation/README.md are generated from the committed ledger (test/mutation/results.json) by
 * `npm run test:mutation:docs`: this fails when they differ — after a change to the ledger. Whether a result is still
 * current (its file unchanged since) is `npm run test:mutation:score`'s to say, with `status`.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

import { LEDGER_END, LEDGER_START, ledgerTables, status, withLedgerTables, type Ledger } from '../mutation/docs.mjs';

const root = new URL('../../', import.meta.url);
const read = (path: string): string => readFileSync(new URL(path, root), 'utf8');
const counts = { killed: 8, timeout: 1, survived: 1, noCoverage: 0, ignored: 4, errors: 0 };
const entry = (source: string, run: string) => ({ sha256: createHash('sha256').update(source).digest('hex'), run, counts, survivors: [] });

describe('mutation ledger tables (else: npm run test:mutation:docs)', () => {
  it('test/mutation/README.md\'s tables are what the ledger gives (else: npm run test:mutation:docs)', () => {
    const readme = read('test/mutation/README.md');
    expect(readme).toContain(LEDGER_START);
    expect(readme).toContain(LEDGER_END);
    expect(readme, 'run npm run test:mutation:docs').toBe(withLedgerTables(readme));
  });

  it('marks a file current, STALE (its source changed since its result) or MISSING (no result)', () => {
    const file = 'src/plugins/fallback/pool.ts';
    const ledger: Ledger = { [file]: entry(read(file), 'pure.json 2026-01-01T00:00Z') };
    expect(status(file, ledger)).toBe('current');
    expect(status(file, { [file]: entry(`${read(file)}\n`, 'pure.json 2026-01-01T00:00Z') })).toBe('STALE');
    expect(status(file, {})).toBe('MISSING');
  });

  it('adds up a group over the files recorded, shows the source each was measured on, and says when one is missing', () => {
    const pure = ['src/plugins/fallback/pool.ts', 'machines/common-query/selection.ts', 'src/plugins/common-query/gate.ts'];
    const ledger: Ledger = {
      [pure[0]!]: entry(read(pure[0]!), 'pure.json 2026-01-01T00:00Z'),
      [pure[1]!]: entry('an older source', 'pure.json 2026-01-01T00:00Z'),
    };
    const tables = ledgerTables(ledger);
    const group = tables.slice(tables.indexOf('### pure decision functions (target 90 %)'), tables.indexOf('### all four folders'));
    const short = (source: string): string => createHash('sha256').update(source).digest('hex').slice(0, 8);
    expect(group).toContain(`| \`src/plugins/fallback/pool.ts\` | 90.0 % | 8 | 1 | 1 | 0 | 4 | 0 | pure.json 2026-01-01T00:00Z | \`${short(read(pure[0]!))}\` |`);
    expect(group).toContain(`| \`machines/common-query/selection.ts\` | 90.0 % | 8 | 1 | 1 | 0 | 4 | 0 | pure.json 2026-01-01T00:00Z | \`${short('an older source')}\` |`);
    expect(group).toContain('| `src/plugins/common-query/gate.ts` | — | — | — | — | — | — | — | — | MISSING |');
    expect(group).toContain('| recorded files (2 of 3) | **90.0 %** | 16 | 2 | 2 | 0 | 8 | 0 |  | INCOMPLETE: 1 missing |');
  });

  it('replaces only what is between the markers', () => {
    const readme = `# Mutation testing\n\n${LEDGER_START}\nold\n${LEDGER_END}\n`;
    const once = withLedgerTables(readme, {});
    expect(once.startsWith(`# Mutation testing\n\n${LEDGER_START}\n\n### machines (target 90 %)`)).toBe(true);
    expect(once.endsWith(`\n\n${LEDGER_END}\n`)).toBe(true);
    expect(withLedgerTables(once, {})).toBe(once);
  });
});
