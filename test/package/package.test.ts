/**
 * The package as a user gets it: `npm pack` (which builds it: `prepare`), the tarball installed into a fresh
 * project, every export imported at run time and type-checked in a strict consumer, the bins run, and the two
 * package linters (publint, @arethetypeswrong/cli) clean. Dependencies come from npm's cache when they are there.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../integration/spawn-daemon.js';

const run = promisify(execFile);
const SLOW_MS = 180_000;
const NPM_QUIET = ['--no-audit', '--no-fund', '--loglevel=error'];

let work: string;
let tarball: string;
let consumer: string;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'ovos-contests-pack-'));
  // Packed from a copy of the sources: its build (prepare) writes nowhere other tests read from.
  const copy = join(work, 'repo');
  await run('mkdir', ['-p', join(copy, 'visualizations')]);
  await run('cp', ['-r', 'package.json', 'tsconfig.json', 'tsconfig.build.json', 'README.md', 'src', 'machines', copy], { cwd: ROOT });
  await run('sh', ['-c', `cp visualizations/*.machine.svg '${join(copy, 'visualizations')}'`], { cwd: ROOT });
  await run('ln', ['-s', join(ROOT, 'node_modules'), join(copy, 'node_modules')]);
  await run('npm', ['pack', '--pack-destination', work, ...NPM_QUIET], { cwd: copy, timeout: SLOW_MS });
  tarball = join(work, readdirSync(work).find((f) => f.endsWith('.tgz'))!);
  consumer = join(work, 'consumer');
  await run('mkdir', ['-p', consumer]);
  writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  // The package alone: Node's types come with it (its types name Node's Buffer and timers).
  await run('npm', ['install', '--prefer-offline', ...NPM_QUIET, tarball], { cwd: consumer, timeout: SLOW_MS });
}, SLOW_MS);

afterAll(() => {
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

describe('the npm package', () => {
  it('carries the build, the page, the config JSON Schema and the diagrams — no tests, no sources but the page', async () => {
    const { stdout } = await run('tar', ['-tzf', tarball]);
    const files = stdout.split('\n').filter(Boolean).map((f) => f.replace(/^package\//, ''));
    expect(files.filter((f) => f.startsWith('test/') || f.startsWith('dist/test/') || f.includes('.test.'))).toEqual([]);
    // npm packs every README it meets on its way (the references beside the code): documentation, not sources.
    expect(files.filter((f) => f.startsWith('src/') && !f.endsWith('/README.md')).sort()).toEqual([
      'src/config/config.schema.json',
      'src/inspect/page/app.js',
      'src/inspect/page/index.html',
      'src/inspect/page/style.css',
    ]);
    for (const f of ['dist/src/index.js', 'dist/src/index.d.ts', 'dist/src/skills/index.d.ts', 'dist/src/testing/index.d.ts', 'dist/src/cli/ovos-contests.js', 'dist/src/cli/say.js', 'visualizations/fallback.machine.svg']) {
      expect(files).toContain(f);
    }
  });

  it('every export imports at run time, and a strict TypeScript consumer of all three type-checks', async () => {
    const script = [
      "import * as main from 'ovos-contests';",
      "import * as skill from 'ovos-contests/skill';",
      "import * as testing from 'ovos-contests/testing';",
      "const pkg = (await import('ovos-contests/package.json', { with: { type: 'json' } })).default;",
      "const schema = (await import('ovos-contests/config.schema.json', { with: { type: 'json' } })).default;",
      'console.log(JSON.stringify({ main: typeof main.createContestSystem, daemon: typeof main.startDaemon, skill: typeof skill.runFallbackSkill, connect: typeof skill.connectSkill, testing: typeof testing.runTimingSuite, version: pkg.version, schema: Object.keys(schema.properties).includes(\'bus\') }));',
    ].join('\n');
    writeFileSync(join(consumer, 'check.mjs'), script);
    const { stdout } = await run(process.execPath, ['check.mjs'], { cwd: consumer });
    expect(JSON.parse(stdout)).toEqual({ main: 'function', daemon: 'function', skill: 'function', connect: 'function', testing: 'function', version: expect.any(String), schema: true });

    writeFileSync(
      join(consumer, 'consumer.ts'),
      [
        "import { createContestSystem, LocalBus, systemClock, type ContestSystem, type Match } from 'ovos-contests';",
        "import { connectSkill, runFallbackSkill, type FallbackSkillSpec } from 'ovos-contests/skill';",
        "import { runTimingSuite, type TimingScenario } from 'ovos-contests/testing';",
        'const system: ContestSystem = createContestSystem({ bus: new LocalBus(), clock: systemClock });',
        "const spec: FallbackSkillSpec = { skillId: 'a', priority: 10, canHandle: () => true, answer: async () => 'hi' };",
        'const stop: () => void = runFallbackSkill(new LocalBus(), spec);',
        "const scenario: TimingScenario = { name: 'n', utterance: 'u', skills: [{ kind: 'fallback', skill_id: 'a', priority: 10 }] };",
        'const report: Promise<{ ok: boolean }> = runTimingSuite(system.config, [scenario]);',
        "const matched: Match | null = null;",
        'void connectSkill; void stop; void report; void matched;',
        '// @ts-expect-error a typo in a spec field is a type error',
        "const bad: FallbackSkillSpec = { skillId: 'a', priorty: 10, canHandle: () => true, answer: () => 'x' };",
        'void bad;',
        '',
      ].join('\n'),
    );
    writeFileSync(
      join(consumer, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', strict: true, noEmit: true, skipLibCheck: false }, files: ['consumer.ts'] }),
    );
    await run(join(ROOT, 'node_modules', '.bin', 'tsc'), ['-p', consumer], { cwd: consumer }).catch((error: { stdout?: string }) => {
      throw new Error(`consumer does not type-check:\n${error.stdout ?? String(error)}`);
    });
  }, SLOW_MS);

  it('the README\'s embedding snippet runs as written against the installed package, and type-checks', async () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## Embed it'));
    const snippet = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
    expect(snippet).toBeDefined();
    writeFileSync(join(consumer, 'readme-snippet.mjs'), snippet!);
    const { stdout } = await run(process.execPath, ['readme-snippet.mjs'], { cwd: consumer, timeout: 30_000 });
    expect(stdout.trim()).toBe('hello.skill');
    writeFileSync(join(consumer, 'readme-snippet.ts'), `${snippet!}\nexport {};\n`);
    writeFileSync(
      join(consumer, 'tsconfig.snippet.json'),
      // What the README says, nothing more (noEmit and skipLibCheck: false only check harder).
      JSON.stringify({ compilerOptions: { module: 'nodenext', target: 'es2022', strict: true, noEmit: true, skipLibCheck: false }, files: ['readme-snippet.ts'] }),
    );
    await run(join(ROOT, 'node_modules', '.bin', 'tsc'), ['-p', join(consumer, 'tsconfig.snippet.json')], { cwd: consumer }).catch((error: { stdout?: string }) => {
      throw new Error(`the README snippet does not type-check:\n${error.stdout ?? String(error)}`);
    });
  }, SLOW_MS);

  it('the bins run: `ovos-contests --help` (the daemon and its commands) and `ovos-say --help`', async () => {
    const daemon = await run('npx', ['--no-install', 'ovos-contests', '--help'], { cwd: consumer });
    expect(daemon.stdout).toMatch(/^usage: ovos-contests \[options\]/);
    expect(daemon.stdout).toContain('--metrics-port');
    const say = await run('npx', ['--no-install', 'ovos-say', '--help'], { cwd: consumer });
    expect(say.stdout).toMatch(/^usage: ovos-say "utterance"/);
  }, SLOW_MS);

  it('publint and @arethetypeswrong/cli (ESM-only profile) find nothing', async () => {
    const publint = await run(join(ROOT, 'node_modules', '.bin', 'publint'), ['--strict', join(work, 'repo')], { cwd: join(work, 'repo'), timeout: SLOW_MS });
    expect(publint.stdout).toContain('All good!');
    await run(join(ROOT, 'node_modules', '.bin', 'attw'), [tarball, '--profile', 'esm-only'], { cwd: ROOT, timeout: SLOW_MS }).catch((error: { stdout?: string }) => {
      throw new Error(`attw:\n${error.stdout ?? String(error)}`);
    });
  }, SLOW_MS);
});
