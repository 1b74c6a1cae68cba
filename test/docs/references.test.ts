/**
 * Everything a reader of the repository needs is in it: every spec clause the code and tests cite (`FALLBACK-1 §6.1`,
 * `COMMON-QUERY-1 §4.2`, `PIPELINE-1 §4.4`, …) has its entry in the reference src/specs/ (what it requires, where it is
 * implemented and tested), every relative link of every Markdown page resolves to a file of the repository, and no
 * text points to a place a clone does not have.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../integration/spawn-daemon.js';

const tracked = (...patterns: string[]): string[] =>
  execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', ...patterns], { cwd: ROOT, encoding: 'utf8' })
    .split('\n')
    .filter((file) => file !== '' && existsSync(join(ROOT, file)));

const CLAUSE = /\b(?:OVOS-)?(FALLBACK-1|COMMON-QUERY-1|PIPELINE-1|MSG-1|SESSION-1|INTENT-4) §(\d+(?:\.\d+)*)/g;

describe('references stay inside the repository', () => {
  it('every spec clause cited in the code, the machines and the tests has an entry in src/specs/', () => {
    const cited = new Map<string, string>();
    for (const file of tracked('src', 'machines', 'test', 'visualizations')) {
      if (file.startsWith('src/specs/') || !/\.(ts|mts|mjs|py|md)$/.test(file)) continue;
      for (const match of readFileSync(join(ROOT, file), 'utf8').matchAll(CLAUSE)) cited.set(`${match[1]} §${match[2]}`, file);
    }
    const reference = tracked('src/specs').filter((file) => file.endsWith('.md')).map((file) => readFileSync(join(ROOT, file), 'utf8')).join('\n');
    const entries = new Set([...reference.matchAll(/^#{2,4} (\S+ §\d+(?:\.\d+)*) /gm)].map((match) => match[1]));
    expect(cited.size).toBeGreaterThan(20);
    const missing = [...cited].filter(([clause]) => !entries.has(clause)).map(([clause, file]) => `${clause} (cited in ${file})`);
    expect(missing).toEqual([]);
  });

  it('every relative link of every Markdown page resolves to a file or folder of the repository', () => {
    const broken: string[] = [];
    for (const file of tracked('*.md')) {
      if (file.startsWith('test/bench/results/')) continue;
      const text = readFileSync(join(ROOT, file), 'utf8');
      for (const match of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = match[1]!.split('#')[0]!;
        if (target === '' || /^[a-z]+:/.test(target)) continue;
        if (!existsSync(join(ROOT, dirname(file), decodeURIComponent(target)))) broken.push(`${file}: ${match[1]}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('no page, comment or test points to a place a clone does not have (the workplace\'s shared folder, its notes)', () => {
    const outside = /\.\.\/shared\/|\/work\/|ENGINEERING-NOTES|ovos-peer\/RECIPE\.md/;
    const found = tracked('README.md', 'src', 'machines', 'test', 'visualizations', '.ci')
      .filter((file) => file !== 'test/docs/references.test.ts' && /\.(ts|mts|mjs|py|md|sh|json)$|\/run$/.test(file))
      .filter((file) => outside.test(readFileSync(join(ROOT, file), 'utf8')));
    expect(found).toEqual([]);
  });
});
