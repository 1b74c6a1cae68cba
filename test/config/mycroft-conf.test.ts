/**
 * mycroft.conf: reading an OVOS deployment's configuration (ovos-wire-today mycroft.conf). Pure
 * functions over fixtures, and loadConfig with a fake file system and environment: no test reads the real /etc or ~.
 */
import { describe, expect, it } from 'vitest';
import { configErrorOf } from '../support/config-error.js';

import { configHelp, describeMycroftReport, loadConfig, type LoadConfigOptions } from '../../src/config/config.js';
import { DEFAULT_CONFIG } from '../../src/config/defaults.js';
import {
  discoverMycroftConf,
  legacyMycroftConfPath,
  MAPPED_KEYS,
  mycroftConfLocations,
  mycroftLayer,
  NOT_MAPPED,
  parseMycroftConf,
  stripMycroftComments,
  type MycroftConfText,
} from '../../src/config/mycroft-conf.js';

const HOME = '/home/ovos';
const SYSTEM = '/etc/mycroft/mycroft.conf';
const USER = '/home/ovos/.config/mycroft/mycroft.conf';
const ETC_XDG = '/etc/xdg/mycroft/mycroft.conf';
const DISTRIBUTION = '/usr/share/mycroft/mycroft.conf';

/** A fake file system: `files` exist; `denied` exist but cannot be read; everything else is absent. */
function fakeFs(files: Record<string, string>, denied: readonly string[] = []) {
  const reads: string[] = [];
  const readFile = (path: string): string | undefined => {
    reads.push(path);
    if (denied.includes(path)) throw Object.assign(new Error(`EACCES: permission denied, open '${path}'`), { code: 'EACCES' });
    return Object.hasOwn(files, path) ? files[path] : undefined;
  };
  return { readFile, reads };
}

/** loadConfig with discovery over a fake home and file system. `ourFiles` are read by `--config`/`--mycroft-conf`. */
function loadWith(
  argv: readonly string[],
  options: { env?: Record<string, string | undefined>; mycroft?: Record<string, string>; ourFiles?: Record<string, string>; discovery?: boolean } = {},
) {
  const fs = fakeFs(options.mycroft ?? {});
  const ourFiles = options.ourFiles ?? {};
  const ourReads: string[] = [];
  const load: LoadConfigOptions = {
    argv,
    env: options.env ?? {},
    readFile: (path) => {
      ourReads.push(path);
      const text = ourFiles[path];
      if (text === undefined) throw Object.assign(new Error(`ENOENT: no such file or directory, open '${path}'`), { code: 'ENOENT' });
      return text;
    },
    ...(options.discovery === false ? {} : { mycroftDiscovery: { home: HOME, readFile: fs.readFile } }),
  };
  return { result: loadConfig(load), reads: fs.reads, ourReads };
}

const xdg = (path: string, text: string): MycroftConfText => ({ path, kind: 'xdg', text });
const system = (path: string, text: string): MycroftConfText => ({ path, kind: 'system', text });

/** A system file in the shape an OVOS image ships, comments and all. */
const SYSTEM_FIXTURE = `{
  // raspOVOS-style system config
  "lang": "de-de",
  # hash comments too (ovos-utils uncomment_json)
  "websocket": {
    "host": "0.0.0.0",
    "port": 8181,
    "route": "/core",
    "ssl": false,
    "max_msg_size": 25
  },
  "intents": {
    "pipeline": ["stop_high", "converse", "padatious_high", "fallback_high", "common_qa", "fallback_medium", "fallback_low"],
    "common_query": { "min_self_confidence": 0.6, "max_response_wait": 4, "extension_time": 3 }
  },
  "skills": {
    "fallbacks": {
      // skill_id: priority
      "fallback_priorities": { "skill-ovos-fallback-unknown.openvoiceos": 100, "skill-wiki.openvoiceos": 40 },
      "fallback_mode": "blacklist",
      "fallback_whitelist": [],
      "fallback_blacklist": ["skill-chatgpt.openvoiceos"],
      "max_skill_runtime": 10
    }
  }
}`;

describe('ovos-wire-today mycroft.conf: reading a file as ovos-config does', () => {
  it('strips whole-line // and # comments (ovos-utils uncomment_json), keeping line numbers', () => {
    const text = '\uFEFF{\n  // a comment\n\t# another\n  "a": 1\n}';
    expect(stripMycroftComments(text)).toBe('{\n\n\n  "a": 1\n}');
    expect(parseMycroftConf(text, 'x.conf')).toEqual({ a: 1 });
  });

  it('never touches // or # inside a string', () => {
    const text = '{\n  "url": "ws://host//core",\n  "hash": "# not a comment",\n  "slashes": "// nor this"\n}';
    expect(stripMycroftComments(text)).toBe(text);
    expect(parseMycroftConf(text, 'x.conf')).toEqual({ url: 'ws://host//core', hash: '# not a comment', slashes: '// nor this' });
  });

  it('a comment after a value is not JSON, for ovos-config either: CONFIG_FILE_NOT_JSON names the file and the line', () => {
    const error = configErrorOf(() => parseMycroftConf('{\n  "lang": "en-us", // mine\n  "a": "b"\n}', '/etc/mycroft/mycroft.conf'));
    expect(error.code).toBe('CONFIG_FILE_NOT_JSON');
    expect(error.message).toContain('/etc/mycroft/mycroft.conf');
    expect(error.message).toContain('line 2 has a comment after a value');
  });

  it('rejects text that is not JSON, or not an object, naming the file', () => {
    expect(configErrorOf(() => parseMycroftConf('{ "a": ', 'bad.conf')).message).toContain('bad.conf: not valid JSON');
    expect(configErrorOf(() => parseMycroftConf('[1]', 'list.conf')).message).toContain('list.conf: expected a JSON object');
  });

  it('keeps a "__proto__" key a key', () => {
    const data = parseMycroftConf('{"__proto__": {"polluted": true}}', 'x.conf');
    expect(Object.hasOwn(data, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });
});

describe('ovos-wire-today mycroft.conf: where ovos-config looks (lowest precedence first)', () => {
  it('distribution, system, /etc/xdg, then the user XDG file', () => {
    expect(mycroftConfLocations({}, HOME)).toEqual([
      { path: DISTRIBUTION, kind: 'distribution' },
      { path: SYSTEM, kind: 'system' },
      { path: ETC_XDG, kind: 'xdg' },
      { path: USER, kind: 'xdg' },
    ]);
  });

  it('follows XDG_CONFIG_DIRS in its order, XDG_CONFIG_HOME, and ovos-config\'s own variables', () => {
    const env = {
      XDG_CONFIG_HOME: '/cfg',
      XDG_CONFIG_DIRS: '/opt/a:relative/ignored:/opt/b',
      OVOS_CONFIG_BASE_FOLDER: 'neon',
      OVOS_CONFIG_FILENAME: 'neon.conf',
      OVOS_DISTRIBUTION_CONFIG: '/dist/x.conf',
      MYCROFT_SYSTEM_CONFIG: '/sys/y.conf',
    };
    expect(mycroftConfLocations(env, HOME).map((location) => location.path)).toEqual([
      '/dist/x.conf',
      '/sys/y.conf',
      '/opt/a/neon/neon.conf',
      '/opt/b/neon/neon.conf',
      '/cfg/neon/neon.conf',
    ]);
    expect(legacyMycroftConfPath(env, HOME)).toBe('/home/ovos/.neon/neon.conf');
  });

  it('ignores an empty or relative XDG_CONFIG_HOME and reads a file named twice once', () => {
    expect(mycroftConfLocations({ XDG_CONFIG_HOME: 'rel' }, HOME).at(-1)?.path).toBe(USER);
    expect(mycroftConfLocations({ XDG_CONFIG_HOME: '' }, HOME).at(-1)?.path).toBe(USER);
    const twice = mycroftConfLocations({ XDG_CONFIG_DIRS: '/home/ovos/.config' }, HOME).map((location) => location.path);
    expect(twice.filter((path) => path === USER)).toHaveLength(1);
  });

  it('discovery reads the files that exist, in merge order, and says where it looked', () => {
    const fs = fakeFs({ [USER]: '{}', [SYSTEM]: '{}' });
    const found = discoverMycroftConf({ env: {}, home: HOME, readFile: fs.readFile });
    expect(found.files.map((file) => [file.path, file.kind])).toEqual([[SYSTEM, 'system'], [USER, 'xdg']]);
    expect(found.looked).toEqual([DISTRIBUTION, SYSTEM, ETC_XDG, USER]);
    expect(found.notes).toEqual([]);
  });

  it('the legacy ~/.mycroft/mycroft.conf is not read (ovos-config no longer loads it): a warning says so', () => {
    const fs = fakeFs({ '/home/ovos/.mycroft/mycroft.conf': '{"lang": "fr-fr"}' });
    const found = discoverMycroftConf({ env: {}, home: HOME, readFile: fs.readFile });
    expect(found.files).toEqual([]);
    expect(found.notes.map((note) => [note.level, note.reason])).toEqual([
      ['warn', 'mycroft_conf_legacy_ignored'],
      ['debug', 'mycroft_conf_not_found'],
    ]);
  });

  it('a file that exists but cannot be read is skipped with a warning; nothing found is a debug line', () => {
    const fs = fakeFs({ [USER]: '{}' }, [SYSTEM]);
    const found = discoverMycroftConf({ env: {}, home: HOME, readFile: fs.readFile });
    expect(found.files.map((file) => file.path)).toEqual([USER]);
    expect(found.notes).toMatchObject([{ level: 'warn', reason: 'mycroft_conf_skipped', file: SYSTEM }]);
    const none = discoverMycroftConf({ env: {}, home: HOME, readFile: fakeFs({}).readFile });
    expect(none.notes).toMatchObject([{ level: 'debug', reason: 'mycroft_conf_not_found' }]);
  });

  it('a YAML config filename (OVOS_CONFIG_FILENAME) is not read here: skipped with a warning', () => {
    const path = '/home/ovos/.config/mycroft/mycroft.yaml';
    const found = discoverMycroftConf({ env: { OVOS_CONFIG_FILENAME: 'mycroft.yaml' }, home: HOME, readFile: fakeFs({ [path]: 'lang: en-us' }).readFile });
    expect(found.files).toEqual([]);
    expect(found.notes[0]).toMatchObject({ level: 'warn', reason: 'mycroft_conf_skipped', file: path });
  });
});

describe('ovos-wire-today mycroft.conf: the layer (text in → our keys + origins)', () => {
  it('maps every honoured key of a realistic system file, each with its file and mycroft.conf key', () => {
    const layer = mycroftLayer([system(SYSTEM, SYSTEM_FIXTURE)]);
    expect(layer.files).toEqual([SYSTEM]);
    expect(layer.override).toEqual({
      lang: 'de-de',
      pipeline: ['stop_high', 'converse', 'padatious_high', 'fallback_high', 'common_qa', 'fallback_medium', 'fallback_low'],
      fallback: {
        priorities: { 'skill-ovos-fallback-unknown.openvoiceos': 100, 'skill-wiki.openvoiceos': 40 },
        mode: 'blacklist',
        whitelist: [],
        blacklist: ['skill-chatgpt.openvoiceos'],
      },
      commonQuery: { minConfidence: 0.6, collectionCeilingMs: 4_000 },
      bus: { url: 'ws://127.0.0.1:8181/core' },
      exampleSkills: false,
    });
    expect(layer.origins.get('fallback.mode')).toEqual({ from: 'skills.fallbacks.fallback_mode', files: [SYSTEM] });
    expect(layer.origins.get('commonQuery.collectionCeilingMs')).toEqual({ from: 'intents.common_query.max_response_wait', files: [SYSTEM] });
    expect(layer.origins.get('bus.url')).toEqual({ from: 'websocket.host, websocket.port, websocket.route, websocket.ssl', files: [SYSTEM] });
    expect(layer.joinKeys).toEqual(['bus.url', 'exampleSkills']);
    expect(layer.ignored.map((entry) => entry.key).sort()).toEqual(
      ['intents.common_query.extension_time', 'skills.fallbacks.max_skill_runtime', 'websocket.max_msg_size'].sort(),
    );
    expect(layer.notes).toEqual([]);
    // Every mapped key has a row in the data src/config/README.md mirrors; nothing is both mapped and not mapped.
    for (const [mycroftKey] of MAPPED_KEYS) expect(Object.hasOwn(NOT_MAPPED, mycroftKey)).toBe(false);
  });

  it('ovos-core FallbackMode values are ours: accept_all, whitelist, blacklist pass through unchanged', () => {
    for (const mode of ['accept_all', 'whitelist', 'blacklist']) {
      const layer = mycroftLayer([xdg(USER, JSON.stringify({ skills: { fallbacks: { fallback_mode: mode } } }))]);
      expect(layer.values.get('fallback.mode')).toBe(mode);
    }
  });

  it('precedence as ovos-config merges: system < /etc/xdg < user; objects merge key by key, lists replace', () => {
    const layer = mycroftLayer([
      system(SYSTEM, '{"skills": {"fallbacks": {"fallback_priorities": {"a.skill": 10, "b.skill": 20}, "fallback_blacklist": ["x"], "fallback_mode": "blacklist"}}, "lang": "pt-pt"}'),
      xdg(ETC_XDG, '{"lang": "es-es"}'),
      xdg(USER, '{"skills": {"fallbacks": {"fallback_priorities": {"b.skill": 90}, "fallback_blacklist": ["y"]}}}'),
    ]);
    expect(layer.values.get('fallback.priorities')).toEqual({ 'a.skill': 10, 'b.skill': 90 });
    expect(layer.values.get('fallback.blacklist')).toEqual(['y']);
    expect(layer.values.get('fallback.mode')).toBe('blacklist');
    expect(layer.values.get('lang')).toBe('es-es');
    expect(layer.origins.get('fallback.priorities')?.files).toEqual([SYSTEM, USER]);
    expect(layer.origins.get('fallback.blacklist')?.files).toEqual([USER]);
    expect(layer.origins.get('fallback.mode')?.files).toEqual([SYSTEM]);
    expect(layer.origins.get('lang')?.files).toEqual([ETC_XDG]);
  });

  it('a null is an unset key (ovos reads through .get(key) or default)', () => {
    const layer = mycroftLayer([xdg(USER, '{"lang": null, "skills": {"fallbacks": {"fallback_mode": null}}, "intents": {"common_query": {"max_response_wait": 0}}}')]);
    expect([...layer.values.keys()].sort()).toEqual(['bus.url', 'exampleSkills']);
    expect(layer.ignored).toMatchObject([{ key: 'intents.common_query.max_response_wait', files: [USER] }]);
  });

  describe('websocket.* → bus.url (join the deployment\'s messagebus)', () => {
    it('a mycroft.conf without websocket joins ovos-config\'s default bus, said so in the origin', () => {
      const layer = mycroftLayer([xdg(USER, '{"lang": "en-us"}')]);
      expect(layer.values.get('bus.url')).toBe('ws://127.0.0.1:8181/core');
      expect(layer.origins.get('bus.url')?.files).toEqual([]);
      expect(layer.origins.get('bus.url')?.from).toContain("ovos-config's default websocket");
      expect(layer.values.get('exampleSkills')).toBe(false);
    });

    it.each([
      ['{"host": "10.0.0.5", "port": 9000, "route": "/bus", "ssl": true}', 'wss://10.0.0.5:9000/bus'],
      ['{"host": "0.0.0.0"}', 'ws://127.0.0.1:8181/core'],
      ['{"host": "::"}', 'ws://[::1]:8181/core'],
      ['{"host": "fe80::1", "port": 8182}', 'ws://[fe80::1]:8182/core'],
      ['{"host": "ovos.local", "ssl": null}', 'ws://ovos.local:8181/core'],
    ])('websocket %s → %s (ovos-bus-client build_url)', (section, url) => {
      expect(mycroftLayer([xdg(USER, `{"websocket": ${section}}`)]).values.get('bus.url')).toBe(url);
    });

    it('names only the fields a file set, the rest ovos-config\'s default', () => {
      const layer = mycroftLayer([system(SYSTEM, '{"websocket": {"port": 8282}}'), xdg(USER, '{"websocket": {"shared_connection": false}}')]);
      expect(layer.origins.get('bus.url')).toEqual({ from: "websocket.port, the rest ovos-config's default", files: [SYSTEM] });
    });

    it.each([
      ['{"websocket": {"port": "8181"}}', 'websocket.port'],
      ['{"websocket": {"port": 0}}', 'websocket.port'],
      ['{"websocket": {"route": "core"}}', 'websocket.route'],
      ['{"websocket": {"host": ""}}', 'websocket.host'],
      ['{"websocket": {"ssl": "yes"}}', 'websocket.ssl'],
      ['{"websocket": "ws://x"}', 'websocket'],
    ])('%s is a config error naming the file, %s and bus.url', (text, mycroftKey) => {
      const error = configErrorOf(() => mycroftLayer([xdg(USER, text)]));
      expect(error.code).toBe('CONFIG_INVALID');
      expect(error.key).toBe('bus.url');
      expect(error.message).toContain(USER);
      expect(error.message).toContain(`${mycroftKey}: expected`);
    });
  });

  describe('intents.common_query.* → commonQuery knobs', () => {
    it('max_response_wait (s) is the collection ceiling (ms); the initial window is held at or below it', () => {
      const layer = mycroftLayer([xdg(USER, '{"intents": {"common_query": {"max_response_wait": 2.5}}}')]);
      expect(layer.values.get('commonQuery.collectionCeilingMs')).toBe(2_500);
      expect(layer.values.get('commonQuery.collectionInitialMs')).toBe(2_500);
      expect(layer.origins.get('commonQuery.collectionInitialMs')?.from).toContain('may not exceed the ceiling');
      expect(layer.values.has('orchestrator.matchTimeoutMs')).toBe(false);
    });

    it('a ceiling the match bound cannot hold raises the bound (OVOS-COMMON-QUERY-1 §2.1), with its origin', () => {
      const layer = mycroftLayer([xdg(USER, '{"intents": {"common_query": {"max_response_wait": 12}}}')]);
      expect(layer.values.get('commonQuery.collectionCeilingMs')).toBe(12_000);
      expect(layer.values.get('orchestrator.matchTimeoutMs')).toBe(DEFAULT_CONFIG.commonQuery.pollWindowMs + 12_000);
      expect(layer.origins.get('orchestrator.matchTimeoutMs')).toMatchObject({ files: [USER] });
    });

    it('min_self_confidence above the fast-win threshold raises the threshold to it', () => {
      const layer = mycroftLayer([xdg(USER, '{"intents": {"common_query": {"min_self_confidence": 0.95}}}')]);
      expect(layer.values.get('commonQuery.minConfidence')).toBe(0.95);
      expect(layer.values.get('commonQuery.fastWinConfidence')).toBe(0.95);
    });

    it('a max_response_wait that is not a positive number is a config error naming the file', () => {
      const error = configErrorOf(() => mycroftLayer([xdg(USER, '{"intents": {"common_query": {"max_response_wait": "6"}}}')]));
      expect(error.key).toBe('commonQuery.collectionCeilingMs');
      expect(error.message).toContain(`${USER}: intents.common_query.max_response_wait: expected a number of seconds > 0`);
    });

    it('reports the keys deliberately not mapped, with the reason and the file', () => {
      const layer = mycroftLayer([
        xdg(USER, '{"intents": {"common_query": {"min_conf": 0.2, "reranker": "x", "min_response_wait": 1, "extension_time": 3}}}'),
      ]);
      const ignored = Object.fromEntries(layer.ignored.map((entry) => [entry.key, entry]));
      expect(Object.keys(ignored).sort()).toEqual(
        ['intents.common_query.extension_time', 'intents.common_query.min_conf', 'intents.common_query.min_response_wait', 'intents.common_query.reranker'],
      );
      expect(ignored['intents.common_query.min_response_wait']).toMatchObject({ files: [USER], reason: expect.stringContaining('never used') });
    });
  });

  describe('malformed files and ovos-config\'s system constraints', () => {
    it('a discovered file that is not JSON is skipped with a warning (as ovos-config skips it); the others still count', () => {
      const layer = mycroftLayer([system(SYSTEM, '{ "lang": "de-de" }'), xdg(USER, '{ "lang": ')]);
      expect(layer.files).toEqual([SYSTEM]);
      expect(layer.values.get('lang')).toBe('de-de');
      expect(layer.notes).toMatchObject([{ level: 'warn', reason: 'mycroft_conf_skipped', file: USER }]);
      expect(layer.notes[0]?.message).toContain(`mycroft.conf ${USER}: not valid JSON`);
    });

    it('a file named with --mycroft-conf that is not JSON is an error naming it', () => {
      const error = configErrorOf(() => mycroftLayer([{ path: '/tmp/m.conf', kind: 'explicit', text: 'nope' }]));
      expect(error.code).toBe('CONFIG_FILE_NOT_JSON');
      expect(error.message).toContain('/tmp/m.conf');
    });

    it('no file read: no keys, no bus to join', () => {
      const layer = mycroftLayer([]);
      expect(layer.values.size).toBe(0);
      expect(layer.joinKeys).toEqual([]);
    });

    it('system.disable_user_config in the system file skips the XDG files', () => {
      const layer = mycroftLayer([system(SYSTEM, '{"system": {"disable_user_config": true}, "lang": "de-de"}'), xdg(USER, '{"lang": "en-us"}')]);
      expect(layer.files).toEqual([SYSTEM]);
      expect(layer.values.get('lang')).toBe('de-de');
      expect(layer.notes).toMatchObject([{ level: 'info', reason: 'mycroft_conf_user_disabled', file: USER }]);
    });

    it('system.protected_keys.user ("a:b") removes those keys from the XDG files only', () => {
      const layer = mycroftLayer([
        system(SYSTEM, '{"system": {"protected_keys": {"user": ["websocket:host", "skills:fallbacks:fallback_mode"]}}, "websocket": {"host": "10.0.0.2"}}'),
        xdg(USER, '{"websocket": {"host": "evil.example", "port": 9999}, "skills": {"fallbacks": {"fallback_mode": "whitelist"}}}'),
      ]);
      expect(layer.values.get('bus.url')).toBe('ws://10.0.0.2:9999/core');
      expect(layer.values.has('fallback.mode')).toBe(false);
    });

    it('a user file setting system constraints is not obeyed (they come from the system level only)', () => {
      const layer = mycroftLayer([xdg(ETC_XDG, '{"system": {"disable_user_config": true}}'), xdg(USER, '{"lang": "en-gb"}')]);
      expect(layer.values.get('lang')).toBe('en-gb');
    });
  });
});

describe('ovos-wire-today mycroft.conf: loadConfig layering', () => {
  it('without a mycroft.conf nothing changes: the defaults, no file read but where ovos-config looks', () => {
    const { result, reads, ourReads } = loadWith([]);
    expect(result.config).toEqual(DEFAULT_CONFIG);
    expect(result.mycroft?.files).toEqual([]);
    expect(result.mycroft?.notes).toMatchObject([{ level: 'debug', reason: 'mycroft_conf_not_found' }]);
    expect(reads).toEqual([DISTRIBUTION, SYSTEM, ETC_XDG, USER, '/home/ovos/.mycroft/mycroft.conf']);
    expect(ourReads).toEqual([]);
  });

  it('without mycroftDiscovery (the library default) no mycroft.conf is looked for', () => {
    const { result, reads } = loadWith([], { discovery: false, mycroft: { [SYSTEM]: '{"lang": "de-de"}' } });
    expect(result.config).toEqual(DEFAULT_CONFIG);
    expect(result.mycroft).toBeUndefined();
    expect(reads).toEqual([]);
  });

  it('a mycroft.conf found: its keys are taken, the deployment bus is joined, the example skills stay off', () => {
    const { result } = loadWith([], { mycroft: { [SYSTEM]: SYSTEM_FIXTURE } });
    expect(result.config.fallback.mode).toBe('blacklist');
    expect(result.config.fallback.priorities['skill-wiki.openvoiceos']).toBe(40);
    expect(result.config.lang).toBe('de-de');
    expect(result.config.commonQuery).toMatchObject({ minConfidence: 0.6, collectionCeilingMs: 4_000, collectionInitialMs: 3_000 });
    expect(result.config.bus.url).toBe('ws://127.0.0.1:8181/core');
    expect(result.config.exampleSkills).toBe(false);
    expect(result.mycroft?.files).toEqual([SYSTEM]);
    expect(result.mycroft?.keys.get('fallback.blacklist')).toEqual({ from: 'skills.fallbacks.fallback_blacklist', files: [SYSTEM] });
  });

  it('intents.pipeline naming an ovos-contests plugin: ovos-core takes the utterances (orchestrator.takesUtterances false), its list is not ours to run, and our fallback stages keep its tiers unless our config sets them', () => {
    const pipeline = '{"intents": {"pipeline": ["stop_high", "ovos-contests-fallback-pipeline-plugin-high", "ovos-contests-common-query-pipeline-plugin", "ovos-contests-fallback-pipeline-plugin-low"]}}';
    const { result } = loadWith([], { mycroft: { [SYSTEM]: pipeline } });
    expect(result.config.orchestrator.takesUtterances).toBe(false);
    expect(result.config.pipeline).toEqual(DEFAULT_CONFIG.pipeline);
    expect(result.mycroft?.keys.get('orchestrator.takesUtterances')).toMatchObject({ files: [SYSTEM] });
    // OVOS-FALLBACK-1 §8.2: the deployment's ranges are ovos-core's tiers, whose stages ours replace.
    expect(result.config.fallback.stages).toEqual({ fallback_high: [0, 5], fallback_medium: [6, 90], fallback_low: [91, 101] });
    const ours = loadWith(['--config', 'ours.json'], { mycroft: { [SYSTEM]: pipeline }, ourFiles: { 'ours.json': '{"fallback": {"stages": {"fallback_high": [0, 49], "fallback_medium": [50, 74], "fallback_low": [75, 100]}}}' } });
    expect(ours.result.config.fallback.stages).toEqual({ fallback_high: [0, 49], fallback_medium: [50, 74], fallback_low: [75, 100] });
    const own = loadWith([], { mycroft: { [SYSTEM]: '{"intents": {"pipeline": ["fallback_high", "common_qa"]}}' } });
    expect(own.result.config.orchestrator.takesUtterances).toBe(true);
  });

  it('OVOS-COMMON-QUERY-1 §5 early start × OVOS-FALLBACK-1 §6.1: intents.pipeline naming only some of our plugins: the stages ovos-core never asks start nothing early (no fallback broadcast, no common-query poll for every utterance)', () => {
    const both = loadWith([], { mycroft: { [SYSTEM]: '{"intents": {"pipeline": ["ovos-contests-fallback-pipeline-plugin-low", "ovos-contests-common-query-pipeline-plugin"]}}' } }).result.config;
    expect([both.fallback.earlyStart, both.commonQuery.earlyStart]).toEqual([true, true]);
    const cqOnly = loadWith([], { mycroft: { [SYSTEM]: '{"intents": {"pipeline": ["ovos-fallback-pipeline-plugin-high", "ovos-contests-common-query-pipeline-plugin"]}}' } });
    expect([cqOnly.result.config.fallback.earlyStart, cqOnly.result.config.commonQuery.earlyStart]).toEqual([false, true]);
    expect(cqOnly.result.mycroft?.keys.get('fallback.earlyStart')).toMatchObject({ files: [SYSTEM] });
    const fallbackOnly = loadWith([], { mycroft: { [SYSTEM]: '{"intents": {"pipeline": ["ovos-contests-fallback-pipeline-plugin-high", "ovos-common-query-pipeline-plugin"]}}' } }).result.config;
    expect([fallbackOnly.fallback.earlyStart, fallbackOnly.commonQuery.earlyStart]).toEqual([true, false]);
  });

  it('precedence: mycroft.conf < our config file < environment < flags', () => {
    const mycroft = { [USER]: '{"lang": "de-de", "skills": {"fallbacks": {"fallback_mode": "whitelist", "fallback_whitelist": ["a"]}}}' };
    const ourFiles = { 'ours.json': '{"fallback": {"mode": "accept_all"}}' };
    const fromFile = loadWith(['--config', 'ours.json'], { mycroft, ourFiles }).result.config;
    expect(fromFile.fallback).toMatchObject({ mode: 'accept_all', whitelist: ['a'] });
    expect(fromFile.lang).toBe('de-de');
    const fromEnv = loadWith(['--config', 'ours.json'], { mycroft, ourFiles, env: { OVOS_CONTESTS_LANG: 'en-GB' } }).result.config;
    expect(fromEnv.lang).toBe('en-GB');
    expect(loadWith(['--lang', 'fr-FR'], { mycroft, env: { OVOS_CONTESTS_LANG: 'en-GB' } }).result.config.lang).toBe('fr-FR');
  });

  describe('the bus: join the deployment\'s unless our config names one', () => {
    const mycroft = { [SYSTEM]: '{"websocket": {"port": 8282}}' };

    it.each([
      [['--port', '18181'], {}, undefined, 'bus.port', '--port'],
      [['--host', '0.0.0.0'], {}, undefined, 'bus.host', '--host'],
      [['--route', '/x'], {}, undefined, 'bus.route', '--route'],
      [[], { OVOS_CONTESTS_PORT: '18182' }, undefined, 'bus.port', 'OVOS_CONTESTS_PORT'],
      [['--config', 'serve.json'], {}, '{"bus": {"url": null}}', 'bus.url', 'config file serve.json'],
    ])('%j %j %s: %s set by %s wins — the embedded bus is served, exampleSkills keeps its default', (argv, env, file, key, by) => {
      const { result } = loadWith(argv, { mycroft, env, ...(file === undefined ? {} : { ourFiles: { 'serve.json': file } }) });
      expect(result.config.bus.url).toBeNull();
      expect(result.config.exampleSkills).toBe(true);
      expect(result.mycroft?.keys.has('bus.url')).toBe(false);
      const note = result.mycroft?.notes.find((n) => n.reason === 'mycroft_conf_bus_not_joined');
      expect(note?.level).toBe('info');
      expect(note?.message).toContain(`${by} sets ${key}`);
      expect(note?.message).toContain('ws://127.0.0.1:8282/core');
    });

    it('--bus URL wins over websocket.*', () => {
      const { result } = loadWith(['--bus', 'ws://10.1.1.1:8181/core'], { mycroft });
      expect(result.config.bus.url).toBe('ws://10.1.1.1:8181/core');
      expect(result.config.exampleSkills).toBe(true);
    });

    it('--example-skills wins over the join\'s example skills off', () => {
      const { result } = loadWith(['--example-skills'], { mycroft });
      expect(result.config.bus.url).toBe('ws://127.0.0.1:8282/core');
      expect(result.config.exampleSkills).toBe(true);
    });
  });

  describe('--mycroft-conf FILE, OVOS_CONTESTS_MYCROFT_CONF and --no-mycroft-conf', () => {
    const ourFiles = { '/srv/a.conf': '{"lang": "it-it"}', '/srv/b.conf': '// mine\n{"lang": "nl-nl"}' };

    it('--mycroft-conf reads that file alone (no discovery), comments and all', () => {
      const { result, reads, ourReads } = loadWith(['--mycroft-conf', '/srv/b.conf'], { ourFiles, mycroft: { [SYSTEM]: '{"lang": "de-de"}' } });
      expect(result.config.lang).toBe('nl-nl');
      expect(result.mycroft?.files).toEqual(['/srv/b.conf']);
      expect(reads).toEqual([]);
      expect(ourReads).toEqual(['/srv/b.conf']);
    });

    it('OVOS_CONTESTS_MYCROFT_CONF names it too; the flag wins over it', () => {
      expect(loadWith([], { ourFiles, env: { OVOS_CONTESTS_MYCROFT_CONF: '/srv/a.conf' } }).result.config.lang).toBe('it-it');
      expect(loadWith(['--mycroft-conf=/srv/b.conf'], { ourFiles, env: { OVOS_CONTESTS_MYCROFT_CONF: '/srv/a.conf' } }).result.config.lang).toBe('nl-nl');
    });

    it('--no-mycroft-conf reads none: not even a named one', () => {
      const { result, reads, ourReads } = loadWith(['--no-mycroft-conf'], { ourFiles, env: { OVOS_CONTESTS_MYCROFT_CONF: '/srv/a.conf' }, mycroft: { [SYSTEM]: '{}' } });
      expect(result.config).toEqual(DEFAULT_CONFIG);
      expect(result.mycroft).toBeUndefined();
      expect(reads).toEqual([]);
      expect(ourReads).toEqual([]);
    });

    it('both flags, a missing file, a file that is not JSON: config errors naming the file', () => {
      expect(configErrorOf(() => loadWith(['--mycroft-conf', '/srv/a.conf', '--no-mycroft-conf'], { ourFiles })).message).toContain('contradict');
      const missing = configErrorOf(() => loadWith(['--mycroft-conf', '/nope.conf']));
      expect(missing.code).toBe('CONFIG_FILE_UNREADABLE');
      expect(missing.message).toContain('mycroft.conf /nope.conf');
      const notJson = configErrorOf(() => loadWith(['--mycroft-conf', 'x.conf'], { ourFiles: { 'x.conf': '{"lang": "en-us",}' } }));
      expect(notJson.code).toBe('CONFIG_FILE_NOT_JSON');
      expect(notJson.message).toContain('x.conf');
    });
  });

  describe('bad values: a config error naming our key, the file and the mycroft.conf key', () => {
    it.each([
      ['{"skills": {"fallbacks": {"fallback_mode": "allowlist"}}}', 'fallback.mode', 'skills.fallbacks.fallback_mode'],
      ['{"skills": {"fallbacks": {"fallback_priorities": {"skill-x.openvoiceos": 50.5}}}}', 'fallback.priorities["skill-x.openvoiceos"]', 'skills.fallbacks.fallback_priorities'],
      ['{"skills": {"fallbacks": {"fallback_whitelist": "skill-x"}}}', 'fallback.whitelist', 'skills.fallbacks.fallback_whitelist'],
      ['{"intents": {"pipeline": ["fallback_high", 3]}}', 'pipeline[1]', 'intents.pipeline'],
      ['{"intents": {"common_query": {"min_self_confidence": 5}}}', 'commonQuery.minConfidence', 'intents.common_query.min_self_confidence'],
      ['{"lang": "english please"}', 'lang', 'lang'],
    ])('%s → %s', (text, key, mycroftKey) => {
      const error = configErrorOf(() => loadWith([], { mycroft: { [USER]: text } }));
      expect(error.code).toBe('CONFIG_INVALID');
      expect(error.key).toBe(key);
      expect(error.message).toContain(USER);
      expect(error.message).toContain(mycroftKey);
    });

    it('a malformed discovered file does not stop the start: skipped, with a warning, the rest taken', () => {
      const { result } = loadWith([], { mycroft: { [SYSTEM]: '{"lang": "de-de"}', [USER]: '{"lang": "en-us", // mine\n}' } });
      expect(result.config.lang).toBe('de-de');
      expect(result.mycroft?.notes).toMatchObject([{ level: 'warn', reason: 'mycroft_conf_skipped', file: USER }]);
    });
  });

  it('describeMycroftReport: one line of which file supplied which key, and what was not taken', () => {
    const { result } = loadWith(['--port', '0'], { mycroft: { [SYSTEM]: SYSTEM_FIXTURE, [USER]: '{"lang": "en-gb"}' } });
    const line = describeMycroftReport(result.mycroft!);
    expect(line.files).toEqual([SYSTEM, USER]);
    expect(line.keys['lang']).toBe(`${USER}: lang`);
    expect(line.keys['fallback.mode']).toBe(`${SYSTEM}: skills.fallbacks.fallback_mode`);
    expect(line.keys['bus.url']).toBeUndefined();
    expect(line.ignored['skills.fallbacks.max_skill_runtime']).toContain(`${SYSTEM}: not used`);
  });

  it('configHelp lists --mycroft-conf, --no-mycroft-conf and OVOS_CONTESTS_MYCROFT_CONF', () => {
    const help = configHelp();
    for (const word of ['--mycroft-conf FILE', '--no-mycroft-conf', 'OVOS_CONTESTS_MYCROFT_CONF', 'defaults, mycroft.conf, config file']) {
      expect(help).toContain(word);
    }
  });
});
