/**
 * The figures of test/bench/README.md (and the headline of README.md, when it has its markers) are generated from the
 * committed results files (test/bench/results/*.json) by `npm run bench:docs`: each fails here when they differ.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

import { BENCHMARKS } from '../bench/catalogue.js';
import {
  benchTables,
  GENERATED_END,
  GENERATED_START,
  HEADLINE,
  HEADLINE_END,
  HEADLINE_START,
  headlineTable,
  newestSections,
  readResultsFiles,
  withBenchTables,
  withHeadline,
  type ResultsFile,
} from '../bench/docs.js';
import { gitCommit, type Results, type Section } from '../bench/report.js';

const root = new URL('../../', import.meta.url);
const read = (path: string): string => readFileSync(new URL(path, root), 'utf8');
const files = readResultsFiles(new URL('test/bench/results/', root));

describe('performance figures generated from the results files (else: npm run bench:docs)', () => {
  it('test/bench/README.md\'s generated part is what the committed results files give (else: npm run bench:docs)', () => {
    const readme = read('test/bench/README.md');
    expect(readme).toContain(GENERATED_START);
    expect(readme).toContain(GENERATED_END);
    expect(readme, 'run npm run bench:docs').toBe(withBenchTables(readme, files));
  });

  it('README.md\'s headline, when it has the markers, is what the committed results files give (else: npm run bench:docs)', () => {
    const readme = read('README.md');
    expect(readme, 'run npm run bench:docs').toBe(withHeadline(readme, files));
  });

  it('every committed results file records the commit it measured and holds only sections of the catalogue', () => {
    const ids = new Set<string>(BENCHMARKS.map(({ id }) => id));
    for (const { file, results } of files) {
      expect(results.commit, file).toMatch(/^[0-9a-f]{7,40}(-dirty)?$/);
      for (const section of results.sections) expect(ids, `${file}: ${section.id}`).toContain(section.id);
    }
  });

  it('every headline pick finds its row in the newest results', () => {
    const table = headlineTable(files).split('\n');
    expect(table).toHaveLength(2 + HEADLINE.length);
    for (const row of table.slice(2)) expect(row).toMatch(/^\| [^|]+ \| [^|]+ \| \d{4}-\d\d-\d\d, code at [0-9a-f]+(-dirty)?, .+ \| `npm run bench[^`]*` \|$/);
  });
});

describe('the commit a run records', () => {
  it('is HEAD\'s short hash, -dirty while a tracked file differs from it (untracked files do not count), none outside a repository', () => {
    const dir = mkdtempSync(join(tmpdir(), 'bench-commit-'));
    try {
      const git = (...args: string[]): string =>
        execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.org', ...args], { cwd: dir, encoding: 'utf8' }).trim();
      const at = pathToFileURL(`${dir}/`);
      expect(gitCommit(at)).toBeUndefined();
      git('init', '-q');
      writeFileSync(join(dir, 'a.txt'), 'one\n');
      git('add', 'a.txt');
      git('commit', '-q', '-m', 'one');
      const head = git('rev-parse', '--short', 'HEAD');
      expect(gitCommit(at)).toBe(head);
      writeFileSync(join(dir, 'untracked.txt'), 'x\n');
      expect(gitCommit(at)).toBe(head);
      writeFileSync(join(dir, 'a.txt'), 'two\n');
      expect(gitCommit(at)).toBe(`${head}-dirty`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// A results file of two runs, to check the generator itself.
const section = (id: string, value: number, title = `${id} title`): Section => ({
  id,
  title,
  params: {},
  columns: [
    { key: 'scenario', header: 'scenario', unit: 'text' },
    { key: 'p50', header: 'p50 ms', unit: 'ms' },
    { key: 'n', header: 'n', unit: 'count' },
  ],
  rows: [{ scenario: 'one <skill> | two', p50: value, n: 12345 }],
  notes: ['a note about <skill>:fallback'],
  checks: [{ name: 'nothing lost', ok: value < 10, detail: `p50 ${value}` }],
});
const run = (date: string, commit: string | undefined, command: string, sections: Section[]): Results => ({
  ...(commit === undefined ? {} : { commit }),
  machine: { node: 'v20.0.0', v8: '11', platform: 'linux', arch: 'x64', osRelease: '6', cpus: 2, cpuModel: 'AMD EPYC', totalMemoryBytes: 1, date },
  command: `node --expose-gc dist/test/bench/run.js ${command} (npm run bench -- ${command})`,
  wallSeconds: 1,
  sections,
  failures: [],
});
const sample: ResultsFile[] = [
  { file: 'latest.json', results: run('2026-01-01T10:00:00.000Z', 'abc1234', '--update', [section('fallback-ws', 1.234), section('memory', 5)]) },
  { file: 'partial-memory.json', results: run('2026-01-02T11:30:59.000Z', 'def5678-dirty', 'memory --update', [section('memory', 12.5)]) },
];

describe('the generator', () => {
  it('takes each section\'s newest result across the files', () => {
    const newest = newestSections(sample);
    expect(newest.get('fallback-ws')?.file).toBe('latest.json');
    expect(newest.get('memory')?.file).toBe('partial-memory.json');
  });

  it('renders a section: provenance, table formatted as the terminal prints it, checks, notes; markdown-safe', () => {
    const text = benchTables(sample);
    expect(text).toContain(
      [
        '### memory title',
        '',
        'Measured 2026-01-02 11:30 UTC, code at def5678-dirty, on 2 × AMD EPYC, node v20.0.0: `npm run bench -- memory --update` (results/partial-memory.json).',
        '',
        '| scenario | p50 ms | n |',
        '| --- | ---: | ---: |',
        '| one &lt;skill&gt; \\| two | 12.5 | 12,345 |',
        '',
        'Checks:',
        '',
        '- **FAIL** nothing lost: p50 12.5',
        '',
        'Notes:',
        '',
        '- a note about &lt;skill&gt;:fallback',
      ].join('\n'),
    );
    expect(text).toContain('| one &lt;skill&gt; \\| two | 1.23 | 12,345 |');
    expect(text).toContain('- OK nothing lost: p50 1.234');
    // In the catalogue's order, and a benchmark without results says how to get one.
    expect(text.indexOf('### fallback-ws title')).toBeLessThan(text.indexOf('### memory title'));
    expect(text).toContain('### bus floor\n\nNo committed result: `npm run bench -- "bus floor" --update` writes one.');
  });

  it('refuses results of a section the catalogue does not know (it would have no place in the order)', () => {
    expect(() => benchTables([{ file: 'x.json', results: run('2026-01-01T00:00:00Z', 'abc1234', 'x', [section('nameless', 1)]) }])).toThrow('nameless');
  });

  it('replaces only what is between the markers, and again gives the same text', () => {
    const readme = `# Performance\n\nprose\n\n${GENERATED_START}\nold figures\n${GENERATED_END}\n\nmore prose\n`;
    const once = withBenchTables(readme, sample);
    expect(once.startsWith(`# Performance\n\nprose\n\n${GENERATED_START}\n\n### fallback in-process\n\nNo committed result`)).toBe(true);
    expect(once.endsWith(`\n\n${GENERATED_END}\n\nmore prose\n`)).toBe(true);
    expect(once).not.toContain('old figures');
    expect(withBenchTables(once, sample)).toBe(once);
  });

  it('writes the headline table between its markers in a README, and leaves a README without them as it is', () => {
    const picks = [
      { section: 'memory', row: 0, label: 'memory p50', value: (row: Readonly<Record<string, unknown>>) => `${String(row['p50'])} ms` },
      { section: 'fallback-ws', row: (row: Readonly<Record<string, unknown>>) => String(row['scenario']).startsWith('one'), label: 'dispatch', value: () => 'fast' },
    ] as const;
    const readme = `# Project\n\n${HEADLINE_START}\nwhatever was here\n${HEADLINE_END}\n\nthe rest\n`;
    const written = withHeadline(readme, sample, picks);
    expect(written).toBe(
      `# Project\n\n${HEADLINE_START}\n` +
        '| what | figure | measured | command |\n' +
        '| --- | --- | --- | --- |\n' +
        '| memory p50 | 12.5 ms | 2026-01-02, code at def5678-dirty, 2 × AMD EPYC, node v20.0.0 | `npm run bench -- memory` |\n' +
        '| dispatch | fast | 2026-01-01, code at abc1234, 2 × AMD EPYC, node v20.0.0 | `npm run bench` |\n' +
        `${HEADLINE_END}\n\nthe rest\n`,
    );
    expect(withHeadline(written, sample, picks)).toBe(written);
    expect(withHeadline('# Project\n\nno markers\n', sample, picks)).toBe('# Project\n\nno markers\n');
    expect(() => headlineTable(sample, [{ ...picks[0], row: 3 }])).toThrow('no such row');
  });
});
