import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configErrorOf } from '../support/config-error.js';

import { ConfigError, configHelp, formatConfigError, loadConfig, mergeConfig, validateConfig } from '../../src/config/config.js';
import { DEFAULT_CONFIG, type Config } from '../../src/config/defaults.js';

function expectInvalid(fn: () => unknown, code: ConfigError['code'], key: string | undefined): ConfigError {
  const error = configErrorOf(fn);
  expect(error.code).toBe(code);
  expect(error.key).toBe(key);
  // The key once: carried by the error, put before the message by formatConfigError, never repeated in the message.
  if (key !== undefined) {
    expect(error.message.startsWith(key)).toBe(false);
    expect(formatConfigError(error)).toBe(`${key}: ${error.message}`);
  }
  return error;
}

/** Validate DEFAULT_CONFIG with a partial override merged in. */
function validateWith(override: unknown): Config {
  return validateConfig(mergeConfig(DEFAULT_CONFIG, override, 'test'));
}

const noFile = (path: string): string => {
  throw new Error(`unexpected read of ${path}`);
};

function load(argv: readonly string[], env: Record<string, string | undefined> = {}, files: Record<string, string> = {}) {
  return loadConfig({
    argv,
    env,
    readFile: (path) => {
      const text = files[path];
      if (text === undefined) return noFile(path);
      return text;
    },
  });
}

describe('validateConfig', () => {
  it('accepts the defaults and returns an equal, fresh copy', () => {
    const config = validateConfig(DEFAULT_CONFIG);
    expect(config).toEqual(DEFAULT_CONFIG);
    expect(config).not.toBe(DEFAULT_CONFIG);
    expect(Object.isFrozen(DEFAULT_CONFIG.commonQuery.gate.vocabulary['en']?.question)).toBe(true);
  });

  it('returns a deep-frozen config: assignment throws in strict mode', () => {
    const config = validateConfig(DEFAULT_CONFIG);
    expect(() => {
      (config.commonQuery as { pollWindowMs: number }).pollWindowMs = 1;
    }).toThrow(TypeError);
    expect(() => {
      (config.fallback.stages as Record<string, unknown>)['extra'] = [0, 1];
    }).toThrow(TypeError);
    expect(() => {
      (config.pipeline as string[]).push('x');
    }).toThrow(TypeError);
    expect(() => {
      (config.commonQuery.gate.vocabulary['en']?.question as string[])[0] = 'x';
    }).toThrow(TypeError);
  });

  it('keeps records free of inherited members (skill ids come off the bus)', () => {
    const config = validateConfig(DEFAULT_CONFIG);
    expect(config.fallback.priorities['constructor']).toBeUndefined();
    expect(config.fallback.stages['toString']).toBeUndefined();
  });

  it.each([
    ['bus.port', { bus: { port: 70_000 } }],
    ['bus.port', { bus: { port: 80.5 } }],
    ['bus.route', { bus: { route: 'core' } }],
    ['bus.url', { bus: { url: 'http://localhost:8181/core' } }],
    ['bus.url', { bus: { url: 'not a url' } }],
    ['bus.heartbeatMs', { bus: { heartbeatMs: -1 } }],
    ['log.level', { log: { level: 'verbose' } }],
    ['lang', { lang: '' }],
    ['pipeline[1]', { pipeline: ['common_query', ''] }],
    ['orchestrator.handlerTimeoutMs', { orchestrator: { handlerTimeoutMs: 0 } }],
    ['fallback.pingTimeoutMs', { fallback: { pingTimeoutMs: 0 } }],
    ['fallback.mode', { fallback: { mode: 'allowlist' } }],
    ['fallback.priorities.my-skill', { fallback: { priorities: { 'my-skill': 1.5 } } }],
    ['fallback.whitelist[0]', { fallback: { whitelist: [3] } }],
    ['fallback.suspendAfterTimeouts', { fallback: { suspendAfterTimeouts: 0 } }],
    ['fallback.suspendAfterTimeouts', { fallback: { suspendAfterTimeouts: 2.5 } }],
    ['fallback.suspendMs', { fallback: { suspendMs: 0 } }],
    ['fallback.suspendMs', { fallback: { suspendMs: '30s' } }],
    ['fallback.maxSkillsPerSession', { fallback: { maxSkillsPerSession: 0 } }],
    ['fallback.maxSessions', { fallback: { maxSessions: -1 } }],
    ['commonQuery.minConfidence', { commonQuery: { minConfidence: 1.5 } }],
    ['commonQuery.pollWindowMs', { commonQuery: { pollWindowMs: 0 } }],
    ['commonQuery.pollClaimBoundMs', { commonQuery: { pollWindowMs: 500, pollClaimBoundMs: 600 } }],
    ['commonQuery.collectionInitialMs', { commonQuery: { collectionInitialMs: 6_000, collectionCeilingMs: 5_000 } }],
    ['commonQuery.pipelineId', { commonQuery: { pipelineId: 'common query' } }],
    ['commonQuery.gate.minWords', { commonQuery: { gate: { minWords: -1 } } }],
    ['commonQuery.gate.vocabulary.zz.command', { commonQuery: { gate: { vocabulary: { zz: { question: ['qq'] } } } } }],
    ['commonQuery.gate.vocabulary.en-US', { commonQuery: { gate: { vocabulary: { 'en-US': { question: [], command: [] } } } } }],
    ['exampleSkills', { exampleSkills: 'yes' }],
  ])('rejects a bad %s with CONFIG_INVALID naming the key', (key, override) => {
    expectInvalid(() => validateWith(override), 'CONFIG_INVALID', key);
  });

  it('reports the value it got and what it expected', () => {
    const error = expectInvalid(() => validateWith({ commonQuery: { minConfidence: 1.5 } }), 'CONFIG_INVALID', 'commonQuery.minConfidence');
    expect(error.message).toContain('1.5');
  });

  it('OVOS-COMMON-QUERY-1 §2.1: rejects a match timeout below poll window + collection ceiling', () => {
    const commonQuery = { pollWindowMs: 500, collectionCeilingMs: 5_000 };
    expectInvalid(
      () => validateWith({ orchestrator: { matchTimeoutMs: 5_499 }, commonQuery }),
      'CONFIG_INVALID',
      'orchestrator.matchTimeoutMs',
    );
    // Raising the ceiling alone breaks the bound too: the error names the key the deployer must raise.
    expectInvalid(
      () => validateWith({ orchestrator: { matchTimeoutMs: 10_000 }, commonQuery: { pollWindowMs: 500, collectionCeilingMs: 9_600 } }),
      'CONFIG_INVALID',
      'orchestrator.matchTimeoutMs',
    );
    expect(validateWith({ orchestrator: { matchTimeoutMs: 5_500 }, commonQuery }).orchestrator.matchTimeoutMs).toBe(5_500);
  });

  it('rejects a fast-win threshold below the minimum confidence; null switches fast-win off', () => {
    expectInvalid(
      () => validateWith({ commonQuery: { minConfidence: 0.6, fastWinConfidence: 0.5 } }),
      'CONFIG_INVALID',
      'commonQuery.fastWinConfidence',
    );
    expect(validateWith({ commonQuery: { fastWinConfidence: null } }).commonQuery.fastWinConfidence).toBeNull();
  });

  it('OVOS-FALLBACK-1 §8.2: rejects a stage range with min > max, non-integers, or a bad stage id', () => {
    expectInvalid(
      () => validateWith({ fallback: { stages: { fallback_medium: [74, 50] } } }),
      'CONFIG_INVALID',
      'fallback.stages.fallback_medium',
    );
    expectInvalid(
      () => validateWith({ fallback: { stages: { fallback_medium: [50] } } }),
      'CONFIG_INVALID',
      'fallback.stages.fallback_medium',
    );
    expectInvalid(
      () => validateWith({ fallback: { stages: { fallback_medium: [50, 74.5] } } }),
      'CONFIG_INVALID',
      'fallback.stages.fallback_medium[1]',
    );
    expectInvalid(
      () => validateWith({ fallback: { stages: { 'fallback medium': [50, 74] } } }),
      'CONFIG_INVALID',
      'fallback.stages["fallback medium"]',
    );
  });

  it('OVOS-FALLBACK-1 §3.4 / §6.1: the breaker and registry bounds default to 3 timeouts, 30 s, 64 skills, 1000 sessions', () => {
    expect(DEFAULT_CONFIG.fallback).toMatchObject({ suspendAfterTimeouts: 3, suspendMs: 30_000, maxSkillsPerSession: 64, maxSessions: 1_000 });
    const config = validateWith({ fallback: { suspendAfterTimeouts: 1, suspendMs: 1, maxSkillsPerSession: 1, maxSessions: 0 } });
    expect(config.fallback).toMatchObject({ suspendAfterTimeouts: 1, suspendMs: 1, maxSkillsPerSession: 1, maxSessions: 0 });
    const fromFile = load([], { OVOS_CONTESTS_CONFIG: 'c.json' }, { 'c.json': '{"fallback": {"suspendMs": 5000}}' });
    expect(fromFile.config.fallback.suspendMs).toBe(5_000);
    expect(fromFile.config.fallback.suspendAfterTimeouts).toBe(3);
  });

  it('accepts any non-empty pipeline entry (unknown ids are skipped at run time)', () => {
    expect(validateWith({ pipeline: ['ovos-fallback-pipeline-plugin-high', 'stop high'] }).pipeline).toEqual([
      'ovos-fallback-pipeline-plugin-high',
      'stop high',
    ]);
  });

  it.each([
    ['bus.prot', { bus: { prot: 1 } }],
    ['commonQuery.gate.minWord', { commonQuery: { gate: { minWord: 2 } } }],
    ['commonQuery.gate.vocabulary.en.questions', { commonQuery: { gate: { vocabulary: { en: { questions: [] } } } } }],
    ['orchestrator.matchTimeout', { orchestrator: { matchTimeout: 10 } }],
    ['colour', { colour: 'blue' }],
  ])('rejects the unknown key %s with CONFIG_UNKNOWN_KEY', (key, override) => {
    expectInvalid(() => validateWith(override), 'CONFIG_UNKNOWN_KEY', key);
  });

  it('treats a JSON "__proto__" key as an unknown key, not as a prototype', () => {
    expectInvalid(() => validateWith(JSON.parse('{"bus": {"__proto__": {"port": 1}}}')), 'CONFIG_UNKNOWN_KEY', 'bus.__proto__');
  });

  it('gives a key left out its default (declared once, in the schema); a language added to the vocabulary needs both lists', () => {
    const { pollWindowMs: _omitted, ...commonQuery } = DEFAULT_CONFIG.commonQuery;
    expect(validateConfig({ ...DEFAULT_CONFIG, commonQuery }).commonQuery.pollWindowMs).toBe(500);
    expect(validateConfig({})).toEqual(DEFAULT_CONFIG);
    const missing = expectInvalid(
      () => validateWith({ commonQuery: { gate: { vocabulary: { zz: { question: ['qq'] } } } } }),
      'CONFIG_INVALID',
      'commonQuery.gate.vocabulary.zz.command',
    );
    expect(missing.message).toBe('expected an array of strings, got nothing (missing)');
  });

  it('says what it expected and what it got, and suggests the key a typo meant', () => {
    expect(expectInvalid(() => validateWith({ bus: { port: 'x' } }), 'CONFIG_INVALID', 'bus.port').message).toBe('expected an integer in [0, 65535], got "x"');
    expect(expectInvalid(() => validateWith({ bus: { heartbeatMs: 0 } }), 'CONFIG_INVALID', 'bus.heartbeatMs').message).toBe(
      'expected an integer number of milliseconds in [1, 2147483647], got 0',
    );
    expect(expectInvalid(() => validateWith({ fallback: { stages: { fallback_medium: [74, 50] } } }), 'CONFIG_INVALID', 'fallback.stages.fallback_medium').message).toBe(
      'expected an integer range [min, max] with min ≤ max, got [74, 50]',
    );
    expect(expectInvalid(() => validateWith({ bus: { prot: 1 } }), 'CONFIG_UNKNOWN_KEY', 'bus.prot').message).toBe('unknown key (did you mean bus.port?)');
    expect(expectInvalid(() => validateWith({ colour: 'blue' }), 'CONFIG_UNKNOWN_KEY', 'colour').message).toBe('unknown key');
  });

  it('reports an unknown key before the values it would explain', () => {
    expectInvalid(() => validateWith({ bus: { port: 'x', prot: 1 } }), 'CONFIG_UNKNOWN_KEY', 'bus.prot');
  });

  it('refuses a "__proto__" entry in a record rather than drop it', () => {
    const error = expectInvalid(() => validateWith(JSON.parse('{"fallback": {"priorities": {"__proto__": 5}}}')), 'CONFIG_INVALID', 'fallback.priorities.__proto__');
    expect(error.message).toContain('"__proto__"');
  });

  it('needs at least one dialect on', () => {
    expectInvalid(() => validateWith({ dialects: { spec: false, legacy: false } }), 'CONFIG_INVALID', 'dialects');
    expect(validateWith({ dialects: { spec: false } }).dialects).toEqual({ spec: false, legacy: true });
  });

  it('refuses a fallback stage sharing the common query pipeline id, and backoff bounds the wrong way round', () => {
    expectInvalid(() => validateWith({ commonQuery: { pipelineId: 'fallback_low' } }), 'CONFIG_INVALID', 'fallback.stages.fallback_low');
    expectInvalid(() => validateWith({ bus: { reconnectInitialMs: 40_000 } }), 'CONFIG_INVALID', 'bus.reconnectInitialMs');
  });
});

describe('mergeConfig', () => {
  it('merges one stage and keeps the others', () => {
    const config = validateWith({ fallback: { stages: { fallback_medium: [50, 80], fallback_low: [81, 100] } } });
    expect(config.fallback.stages).toEqual({
      fallback_high: [0, 49],
      fallback_medium: [50, 80],
      fallback_low: [81, 100],
    });
  });

  it('adds a stage, removes one with null, and replaces arrays', () => {
    const config = validateWith({
      fallback: { stages: { fallback_high: null, fallback_top: [-10, -1] }, whitelist: ['a.skill'] },
      pipeline: ['fallback_top'],
    });
    expect(Object.keys(config.fallback.stages).sort()).toEqual(['fallback_low', 'fallback_medium', 'fallback_top']);
    expect(config.fallback.whitelist).toEqual(['a.skill']);
    expect(config.pipeline).toEqual(['fallback_top']);
  });

  it('merges vocabulary key by key: one list of one language, the rest kept', () => {
    const config = validateWith({ commonQuery: { gate: { vocabulary: { en: { question: ['what'] }, zz: { question: ['q'], command: ['c'] } } } } });
    const { vocabulary } = config.commonQuery.gate;
    expect(vocabulary['en']).toEqual({ question: ['what'], command: DEFAULT_CONFIG.commonQuery.gate.vocabulary['en']?.command });
    expect(vocabulary['zz']).toEqual({ question: ['q'], command: ['c'] });
    expect(Object.keys(vocabulary).sort()).toEqual([...Object.keys(DEFAULT_CONFIG.commonQuery.gate.vocabulary), 'zz'].sort());
  });

  it('does not touch the base', () => {
    mergeConfig(DEFAULT_CONFIG, { bus: { port: 1 }, fallback: { stages: { fallback_low: null } } }, 'test');
    expect(DEFAULT_CONFIG.bus.port).toBe(8181);
    expect(DEFAULT_CONFIG.fallback.stages['fallback_low']).toEqual([75, 100]);
  });

  it('rejects an override that is not an object', () => {
    expectInvalid(() => mergeConfig(DEFAULT_CONFIG, [1, 2], 'test'), 'CONFIG_INVALID', undefined);
  });
});

describe('loadConfig', () => {
  it('with nothing given, returns the validated defaults and no file', () => {
    const result = load([]);
    expect(result.config).toEqual(DEFAULT_CONFIG);
    expect(result.configFile).toBeUndefined();
    expect(Object.isFrozen(result.config.bus)).toBe(true);
  });

  it('layers file < env < flag', () => {
    const files = { '/etc/c.json': JSON.stringify({ bus: { port: 1111, host: '0.0.0.0', route: '/file' }, lang: 'de-DE' }) };
    const env = { OVOS_CONTESTS_CONFIG: '/etc/c.json', OVOS_CONTESTS_PORT: '2222', OVOS_CONTESTS_ROUTE: '/env' };

    const fileOnly = load([], { OVOS_CONTESTS_CONFIG: '/etc/c.json' }, files);
    expect(fileOnly.configFile).toBe('/etc/c.json');
    expect(fileOnly.config.bus).toMatchObject({ port: 1111, host: '0.0.0.0', route: '/file' });

    const withEnv = load([], env, files);
    expect(withEnv.config.bus).toMatchObject({ port: 2222, host: '0.0.0.0', route: '/env' });

    const withFlag = load(['--port', '3333'], env, files);
    expect(withFlag.config.bus).toMatchObject({ port: 3333, host: '0.0.0.0', route: '/env' });
    expect(withFlag.config.lang).toBe('de-DE');
  });

  it('--config overrides OVOS_CONTESTS_CONFIG', () => {
    const files = { 'a.json': '{"lang": "fr-FR"}', 'b.json': '{"lang": "it-IT"}' };
    const result = load(['--config', 'b.json'], { OVOS_CONTESTS_CONFIG: 'a.json' }, files);
    expect(result.configFile).toBe('b.json');
    expect(result.config.lang).toBe('it-IT');
  });

  it('accepts --port 18181 --no-example-skills', () => {
    const { config } = load(['--port', '18181', '--no-example-skills']);
    expect(config.bus.port).toBe(18181);
    expect(config.exampleSkills).toBe(false);
  });

  it('accepts the --flag=value form and every env variable', () => {
    const { config } = load(
      ['--host=::1', '--route=/bus', '--bus=wss://example.org/core', '--log-level=debug', '--lang=pt-BR', '--example-skills'],
      { OVOS_CONTESTS_HOST: 'ignored', OVOS_CONTESTS_LOG_LEVEL: 'warn' },
    );
    expect(config.bus).toMatchObject({ host: '::1', route: '/bus', url: 'wss://example.org/core' });
    expect(config.log.level).toBe('debug');
    expect(config.lang).toBe('pt-BR');
    expect(config.exampleSkills).toBe(true);

    const fromEnv = load([], {
      OVOS_CONTESTS_HOST: '0.0.0.0',
      OVOS_CONTESTS_BUS: 'ws://127.0.0.1:8181/core',
      OVOS_CONTESTS_LOG_LEVEL: 'warn',
      OVOS_CONTESTS_LANG: 'en-GB',
    }).config;
    expect(fromEnv.bus).toMatchObject({ host: '0.0.0.0', url: 'ws://127.0.0.1:8181/core' });
    expect(fromEnv.log.level).toBe('warn');
    expect(fromEnv.lang).toBe('en-GB');
  });

  it('treats an empty environment variable as unset', () => {
    expect(load([], { OVOS_CONTESTS_PORT: '', OVOS_CONTESTS_CONFIG: '' }).config.bus.port).toBe(8181);
  });

  it('tolerates --help (the caller acts on it)', () => {
    expect(load(['--help']).config).toEqual(DEFAULT_CONFIG);
  });

  it('names bus.port and the source for a non-numeric port', () => {
    const fromFlag = expectInvalid(() => load(['--port', 'eighty']), 'CONFIG_INVALID', 'bus.port');
    expect(fromFlag.message).toBe('expected an integer in [0, 65535], got "eighty" (from command line: --port)');
    expect(fromFlag.cause).toBeInstanceOf(ConfigError);
    const fromEnv = expectInvalid(() => load([], { OVOS_CONTESTS_PORT: '80a' }), 'CONFIG_INVALID', 'bus.port');
    expect(fromEnv.message).toBe('expected an integer in [0, 65535], got "80a" (from environment: OVOS_CONTESTS_PORT)');
    const outOfRange = expectInvalid(() => load(['--port=70000']), 'CONFIG_INVALID', 'bus.port');
    expect(outOfRange.message).toContain('got 70000 (from command line: --port)');
  });

  it('the last of a repeated flag wins', () => {
    expect(load(['--no-example-skills', '--example-skills']).config.exampleSkills).toBe(true);
    expect(load(['--port', '1', '--port=2']).config.bus.port).toBe(2);
    expect(load(['--no-registry-file']).config.fallback.registryFile).toBeNull();
  });

  it('takes a "$schema" key in the config file as the editor\'s, not as config', () => {
    const files = { 'c.json': '{"$schema": "./node_modules/ovos-contests/src/config/config.schema.json", "lang": "de-DE"}' };
    expect(load(['--config', 'c.json'], {}, files).config.lang).toBe('de-DE');
  });

  it('names the key of a bad flag value and of a flag with no value', () => {
    expectInvalid(() => load(['--bus', 'http://x']), 'CONFIG_INVALID', 'bus.url');
    expectInvalid(() => load(['--log-level', 'loud']), 'CONFIG_INVALID', 'log.level');
    expectInvalid(() => load(['--port']), 'CONFIG_INVALID', 'bus.port');
    expectInvalid(() => load(['--host', '--port', '1']), 'CONFIG_INVALID', 'bus.host');
    expectInvalid(() => load(['--no-example-skills=true']), 'CONFIG_INVALID', 'exampleSkills');
  });

  it('rejects an unknown flag with CONFIG_UNKNOWN_FLAG naming it', () => {
    const error = expectInvalid(() => load(['--prot', '1']), 'CONFIG_UNKNOWN_FLAG', undefined);
    expect(error.message).toBe('unknown flag --prot (did you mean --port?)');
    expectInvalid(() => load(['serve']), 'CONFIG_UNKNOWN_FLAG', undefined);
    expectInvalid(() => load(['-p', '1']), 'CONFIG_UNKNOWN_FLAG', undefined);
  });

  it('rejects a config file that is not JSON, naming the file', () => {
    const error = expectInvalid(
      () => load(['--config', 'bad.json'], {}, { 'bad.json': '{ "bus": { port: 1 } }' }),
      'CONFIG_FILE_NOT_JSON',
      undefined,
    );
    expect(error.message).toContain('bad.json');
    expect(error.cause).toBeInstanceOf(SyntaxError);
  });

  it('rejects an unreadable config file, naming the file and keeping the cause', () => {
    const cause = new Error('ENOENT: no such file or directory');
    const error = expectInvalid(
      () =>
        loadConfig({
          argv: ['--config=missing.json'],
          env: {},
          readFile: () => {
            throw cause;
          },
        }),
      'CONFIG_FILE_UNREADABLE',
      undefined,
    );
    expect(error.message).toContain('missing.json');
    expect(error.cause).toBe(cause);
  });

  it('rejects a config file with a typo or a bad value, naming the key and the file', () => {
    const files = {
      'typo.json': '{"commonQuery": {"gate": {"minWrods": 2}}}',
      'bound.json': '{"orchestrator": {"matchTimeoutMs": 1000}, "commonQuery": {"pollWindowMs": 500, "collectionCeilingMs": 5000}}',
      'array.json': '[]',
    };
    const typo = expectInvalid(() => load(['--config', 'typo.json'], {}, files), 'CONFIG_UNKNOWN_KEY', 'commonQuery.gate.minWrods');
    expect(typo.message).toBe('unknown key (did you mean commonQuery.gate.minWords?) (from config file typo.json)');
    const bound = expectInvalid(() => load(['--config', 'bound.json'], {}, files), 'CONFIG_INVALID', 'orchestrator.matchTimeoutMs');
    expect(bound.message).toContain('bound.json');
    const array = expectInvalid(() => load(['--config', 'array.json'], {}, files), 'CONFIG_INVALID', undefined);
    expect(array.message).toContain('array.json');
  });

  it('reads a real file by default', () => {
    expect(() => loadConfig({ argv: ['--config', '/nonexistent/ovos-contests.json'], env: {} })).toThrow(
      expect.objectContaining({ code: 'CONFIG_FILE_UNREADABLE' }),
    );
  });
});

describe('configHelp', () => {
  it('lists every flag and environment variable', () => {
    const help = configHelp();
    for (const word of [
      '--host', '--port', '--route', '--bus', '--config', '--log-level', '--lang', '--no-example-skills', '--example-skills',
      'OVOS_CONTESTS_HOST', 'OVOS_CONTESTS_PORT', 'OVOS_CONTESTS_ROUTE', 'OVOS_CONTESTS_BUS', 'OVOS_CONTESTS_LOG_LEVEL',
      'OVOS_CONTESTS_LANG', 'OVOS_CONTESTS_CONFIG',
    ]) {
      expect(help).toContain(word);
    }
  });
});

describe('a configuration file of any shape is one clear error, never a crash or a hang', () => {
  const deep = (levels: number): string => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;

  it('a config file or a mycroft.conf nested 20,000 levels deep: CONFIG_FILE_NOT_JSON naming the file and the depth', () => {
    for (const argv of [['--config', '/x/deep.json'], ['--mycroft-conf', '/x/mycroft.conf']]) {
      const error = configErrorOf(() => loadConfig({ argv, env: {}, readFile: () => deep(20_000) }));
      expect(error.code).toBe('CONFIG_FILE_NOT_JSON');
      expect(formatConfigError(error)).toMatch(/nested deeper than 64 levels/);
    }
    // As deep as a configuration is: read.
    expect(formatConfigError(configErrorOf(() => loadConfig({ argv: ['--config', '/x/ok.json'], env: {}, readFile: () => `{"nope":${deep(30)}}` })))).toMatch(/unknown key "nope"|nope/);
    expect(formatConfigError(configErrorOf(() => loadConfig({ argv: ['--config', '/x/ok.json'], env: {}, readFile: () => `{"nope":${deep(30)}}` })))).not.toMatch(/nested deeper/);
  });

  it('a FIFO, a folder or a device given as a config file or a mycroft.conf: CONFIG_FILE_UNREADABLE at once, nothing waited on', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ovos-contests-config-'));
    const fifo = join(dir, 'mycroft.conf');
    execFileSync('mkfifo', [fifo]);
    for (const [flag, path] of [['--mycroft-conf', fifo], ['--config', fifo], ['--config', dir], ['--mycroft-conf', '/dev/zero']] as const) {
      const error = configErrorOf(() => loadConfig({ argv: [flag, path], env: {} }));
      expect(error.code).toBe('CONFIG_FILE_UNREADABLE');
      expect(formatConfigError(error)).toMatch(/not a regular file|is a folder/);
    }
  });
});
