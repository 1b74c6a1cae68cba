/**
 * The configuration, declared once: every key with its constraint, its default, a one-line meaning and,
 * for the few set from the command line, its flag and environment variable. The `Config` type, `DEFAULT_CONFIG`,
 * validation (config.ts), `--help` (configHelp), the configuration reference's table and the JSON Schema for editors
 * (src/config/config.schema.json, `npm run schema`) are all derived from it; a new key is one edit here.
 *
 * Every leaf says what it expects in words (`expecting`), so an error reads `expected an integer in [0, 65535],
 * got "x"`; config.ts adds the key and the layer.
 */
import { z } from 'zod';

import { DEFAULT_GATE_VOCABULARY } from './gate-vocabulary.js';
import { childKey, describeValue, didYouMean, keyOf, redactUserinfo } from './errors.js';

// ---------------------------------------------------------------------------------------------------------------
// Command-line metadata

/** A flag that sets a key to a fixed value (`--no-inspector` → `inspector.enabled: false`). */
export interface ConfigSwitch {
  readonly flag: `--${string}`;
  readonly value: boolean | null;
  readonly help: string;
}

/** How a key is set from outside a config file, and how the configuration reference shows its default. */
export interface ConfigKeyMeta {
  /** A flag taking the value (`--port PORT`), and the environment variable that sets the same key. */
  readonly flag?: { readonly name: `--${string}`; readonly arg: string; readonly env: `OVOS_CONTESTS_${string}` };
  readonly switches?: readonly ConfigSwitch[];
  /** The default as the configuration reference shows it, where the value itself is too long to print. */
  readonly shownDefault?: string;
}

/** Flag, env and display metadata of the keys that have any (kept out of the JSON Schema, unlike descriptions). */
export const CONFIG_KEY_META = z.registry<ConfigKeyMeta>();

// ---------------------------------------------------------------------------------------------------------------
// Building blocks: each says in words what it expects, for every issue it raises.

/** Messages of every issue a schema raises: `expected <phrase>, got <what it got>`. */
function expecting(phrase: string): { readonly error: (issue: { readonly input?: unknown }) => string } {
  return { error: (issue) => `expected ${phrase}, got ${describeValue(issue.input)}` };
}

/** setTimeout treats anything above 2^31 − 1 ms as 1 ms; refuse it rather than fire early. */
const MAX_MS = 2_147_483_647;

/** OVOS-PIPELINE-1: pipeline_id characters. */
const PIPELINE_ID = /^[A-Za-z0-9_-]+$/;
/** BCP 47 shape, loosely (en, en-US, pt-br, zh-Hant-TW). */
const LANG_TAG = /^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$/;
/** Gate vocabulary is keyed by the primary subtag, lower case. */
const PRIMARY_SUBTAG = /^[a-z]{2,8}$/;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const FALLBACK_MODES = ['accept_all', 'whitelist', 'blacklist'] as const;

function intIn(min: number, max: number = Number.MAX_SAFE_INTEGER, phrase?: string) {
  const expected = expecting(
    phrase ??
      (min === Number.MIN_SAFE_INTEGER && max === Number.MAX_SAFE_INTEGER
        ? 'an integer'
        : max === Number.MAX_SAFE_INTEGER
          ? `an integer ≥ ${min}`
          : `an integer in [${min}, ${max}]`),
  );
  return z.int(expected).min(min, expected).max(max, expected);
}

const anyInt = () => intIn(Number.MIN_SAFE_INTEGER);
const port = () => intIn(0, 65_535);

/** A duration in ms; a timeout or interval of 0 would fire at once (or spin), so those start `from` 1. */
function ms(from: 0 | 1) {
  return intIn(from, MAX_MS, `an integer number of milliseconds in [${from}, ${MAX_MS}]`);
}

/** A file path, or null. */
function filePath() {
  return matching(/^\S.*$/, 'a file path, or null').nullable().default(null);
}

/** `cluster.nats`: its error never repeats a secret the URL may carry (`nats://user:***@host`). */
const natsExpecting = {
  error: (issue: { readonly input?: unknown }) =>
    `expected null or nats:// or tls:// URLs, separated by commas, got ${describeValue(typeof issue.input === 'string' ? redactUserinfo(issue.input) : issue.input)}`,
};

function unitInterval() {
  const expected = expecting('a number in [0, 1]');
  return z.number(expected).min(0, expected).max(1, expected);
}

function bool() {
  return z.boolean(expecting('true or false'));
}

function matching(pattern: RegExp, phrase: string) {
  const expected = expecting(phrase);
  return z.string(expected).regex(pattern, expected);
}

function nonEmptyStrings() {
  return z.array(z.string(expecting('a non-empty string')).min(1, expecting('a non-empty string')), expecting('an array of strings'));
}

function wsUrl() {
  const expected = expecting('null or a ws:// or wss:// URL');
  return z
    .string(expected)
    .regex(/^wss?:\/\//i, expected)
    .refine((value) => URL.canParse(value), expected)
    .nullable();
}

/** A plain object with exactly these keys; an unknown one is reported with the nearest known key. */
function section<Shape extends z.ZodRawShape>(shape: Shape) {
  const known = Object.keys(shape);
  const notAnObject = expecting('an object');
  return z.strictObject(shape, {
    error: (issue) => {
      if (issue.code !== 'unrecognized_keys') return notAnObject.error(issue);
      const hint = didYouMean(issue.keys[0] ?? '', known);
      return `unknown key${hint === undefined ? '' : ` (did you mean ${childKey(keyOf(issue.path ?? []), hint)}?)`}`;
    },
  });
}

/** A copy whose keys never reach Object.prototype, however hostile ("constructor", "__proto__"). */
function nullPrototype<T>(record: Record<string, T>): Record<string, T> {
  return Object.assign(Object.create(null) as Record<string, T>, record);
}

/** Records whose entries a config file may delete with `null` (mergeConfig), for the JSON Schema. */
const DELETABLE_ENTRIES = new WeakSet<object>();

/**
 * Records keyed by the deployer (stage ids, skill ids, languages): keys checked by `key`, values by `value`, the
 * result with a null prototype, since it is looked up by ids read off the bus.
 */
function keyedBy<V extends z.ZodType>(key: z.ZodString, whyNot: string, value: V) {
  const notAnObject = expecting('an object');
  const record = z.record(key, value, { error: (issue) => (issue.code === 'invalid_key' ? whyNot : notAnObject.error(issue)) });
  DELETABLE_ENTRIES.add(record);
  // The record parser drops a "__proto__" key without a word; refuse it rather than lose a deployer's entry.
  return z
    .preprocess((input, context) => {
      if (typeof input === 'object' && input !== null && Object.hasOwn(input, '__proto__')) {
        context.addIssue({ code: 'custom', path: ['__proto__'], input, message: '"__proto__" cannot be a key here' });
      }
      return input;
    }, record)
    .transform(nullPrototype);
}

/** OVOS-FALLBACK-1 §8.2: each stage is configured with an inclusive [min, max] integer interval. */
function priorityRange() {
  const phrase = 'an integer range [min, max] with min ≤ max';
  const expected = expecting(phrase);
  return z
    .tuple([anyInt(), anyInt()], expected)
    .refine(([min, max]) => min <= max, { error: ({ input }) => `expected ${phrase}, got [${(input as readonly number[]).join(', ')}]` });
}

// ---------------------------------------------------------------------------------------------------------------
// The configuration

const bus = section({
  host: matching(/^\S+$/, 'a non-empty host name or address')
    .default('127.0.0.1')
    .describe('bind address of the embedded bus server (loopback by default)')
    .register(CONFIG_KEY_META, { flag: { name: '--host', arg: 'HOST', env: 'OVOS_CONTESTS_HOST' } }),
  port: port()
    .default(8181)
    .describe('port of the embedded bus server (0 = any free port)')
    .register(CONFIG_KEY_META, { flag: { name: '--port', arg: 'PORT', env: 'OVOS_CONTESTS_PORT' } }),
  route: matching(/^\/\S*$/, 'a path starting with "/"')
    .default('/core')
    .describe('websocket route of the bus')
    .register(CONFIG_KEY_META, { flag: { name: '--route', arg: 'PATH', env: 'OVOS_CONTESTS_ROUTE' } }),
  url: wsUrl()
    .default(null)
    .describe('connect to this existing OVOS messagebus (ws:// or wss://) instead of serving one')
    .register(CONFIG_KEY_META, { flag: { name: '--bus', arg: 'URL', env: 'OVOS_CONTESTS_BUS' } }),
  maxFrameBytes: intIn(1)
    .default(10 * 1024 * 1024)
    .describe('largest frame accepted (bytes); a larger one closes only the client that sent it'),
  heartbeatMs: ms(1)
    .default(10_000)
    .describe('client: websocket ping interval; a pong missed by the next ping drops the connection and reconnects'),
  reconnectInitialMs: ms(1)
    .default(500)
    .describe('client: first reconnect delay (exponential backoff with full jitter); ≤ bus.reconnectMaxMs'),
  reconnectMaxMs: ms(1).default(30_000).describe('client: longest reconnect delay'),
  allowedOrigins: nonEmptyStrings()
    .default([])
    .describe(
      'browser origins (the Origin header, e.g. "https://assistant.example.com") allowed to open the bus websocket besides loopback ones (http://localhost:3000 …); OVOS skills and clients send none and are always let in, any other origin is refused (403: a web page must not drive the assistant)',
    ),
  maxConnections: intIn(1)
    .default(512)
    .describe('server: client connections at once; past it an upgrade is refused (503), with one warn line a minute'),
}).describe('the messagebus: the one served, or the one joined (bus.url)');

const log = section({
  level: z
    .enum(LOG_LEVELS, expecting(`one of ${LOG_LEVELS.join(', ')}`))
    .default('info')
    .describe(`pino level, one of ${LOG_LEVELS.join(', ')}; pretty output on a terminal, JSON lines otherwise`)
    .register(CONFIG_KEY_META, { flag: { name: '--log-level', arg: 'LEVEL', env: 'OVOS_CONTESTS_LOG_LEVEL' } }),
}).describe('logging (pino)');

const orchestrator = section({
  matchTimeoutMs: ms(1)
    .default(10_000)
    .describe(
      'match bound (OVOS-PIPELINE-1 §4.4, recommended 10 s); ≥ commonQuery.pollWindowMs + commonQuery.collectionCeilingMs (OVOS-COMMON-QUERY-1 §2.1)',
    ),
  handlerTimeoutMs: ms(1)
    .default(30_000)
    .describe("how long a bus skill's handler may run before ovos.intent.handler.error (timeout)"),
  takesUtterances: bool()
    .default(true)
    .describe(
      "run the pipeline for utterances on the bus (ovos.utterance.handle, recognizer_loop:utterance); false: ovos-core takes them and asks our stages through its ovos-contests pipeline plugin (src/ovos-plugin/) — set so when mycroft.conf's intents.pipeline names one",
    ),
  stagePort: port()
    .nullable()
    .default(8183)
    .describe(
      "port on 127.0.0.1 where the daemon also answers the ovos-core plugin's stage requests, a link past the bus (its daemon_url); served only while takesUtterances is false; null: the bus only, 0: any free port (logged at start)",
    )
    .register(CONFIG_KEY_META, { flag: { name: '--stage-port', arg: 'PORT', env: 'OVOS_CONTESTS_STAGE_PORT' } }),
  stageTokenFile: matching(/^\S.*$/, 'a file path')
    .default('$STATE/stage-link-token')
    .describe(
      "the stage link's credential: a token the daemon makes there at its first start (0600) and the ovos-core plugin reads (its token_file; the same default when both run as one user); another path — group-readable by ovos-core's user — when they do not ($STATE: $XDG_STATE_HOME/ovos-contests)",
    ),
  maxInFlightPerConnection: intIn(1)
    .default(256)
    .describe(
      'utterances one client connection runs at once (embedded bus; while another connection is active it also begins at most 50 a second); 8 times as many more wait their turn, and past that an utterance ends at once with its ovos.utterance.handled (error too_many_in_flight)',
    ),
}).describe('the utterance orchestrator: match and handler bounds (OVOS-PIPELINE-1)');

const fallback = section({
  pingTimeoutMs: ms(1)
    .default(500)
    .describe('per-skill query timeout (OVOS-FALLBACK-1 §6.1; deployment-defined, ovos-core uses 0.5 s)'),
  earlyStart: bool()
    .default(true)
    .describe(
      "send the utterance's one broadcast ping to legacy (ovos-workshop) fallback skills when the utterance arrives, so their answers are in hand when a fallback stage is reached; false: when the first fallback stage with a legacy skill is reached. Either way its answers serve every fallback stage of the utterance",
    ),
  stages: keyedBy(
    z.string().regex(PIPELINE_ID),
    'a stage id is a pipeline_id and may use only [A-Za-z0-9_-] (OVOS-PIPELINE-1)',
    priorityRange(),
  )
    .prefault({ fallback_high: [0, 49], fallback_medium: [50, 74], fallback_low: [75, 100] })
    .describe('stage pipeline_id → inclusive priority range [min, max] (OVOS-FALLBACK-1 §8.2); a null entry removes a stage'),
  priorities: keyedBy(z.string().min(1), 'a skill id must not be empty', anyInt())
    .prefault({})
    .describe('skill_id → priority: deployer overrides of registered priorities (ovos-core fallback_priorities)'),
  mode: z
    .enum(FALLBACK_MODES, expecting(`one of ${FALLBACK_MODES.join(', ')}`))
    .default('accept_all')
    .describe('access control (ovos-core fallback_mode): accept_all, whitelist or blacklist'),
  whitelist: nonEmptyStrings().default([]).describe('the only skills asked when fallback.mode is whitelist'),
  blacklist: nonEmptyStrings().default([]).describe('skills never asked when fallback.mode is blacklist'),
  suspendAfterTimeouts: intIn(1)
    .default(3)
    .describe('circuit breaker: consecutive ping timeouts that suspend a skill from every pool (timeouts less than `pingTimeoutMs` after the last one counted count once)'),
  suspendMs: ms(1)
    .default(30_000)
    .describe('circuit breaker: first suspension period; each failed probe after it doubles it, up to 5 minutes'),
  maxSkillsPerSession: intIn(1)
    .default(64)
    .describe('registry bound (§3.4): skills one session (including "default") may hold; past it a new one takes the place of a registration away (a dormant one first), else it is refused (registry_full)'),
  maxSessions: intIn(0)
    .default(1_000)
    .describe('registry bound (§3.4): sessions other than "default" that may hold session-scoped registrations'),
  // Half the per-session bound, so one client cannot take every place of a session; no lower, because ovos-core's
  // skill manager loads every skill of an install over its one connection.
  maxSkillsPerConnection: intIn(1)
    .default(32)
    .describe(
      "registry bound (§3.4, embedded bus): registrations of one session bound to one client connection; past it a new one is refused (connection_quota). Half of maxSkillsPerSession, and generous: ovos-core's skill manager registers all its skills over one connection",
    ),
  maxRegistrationBytesPerConnection: intIn(1)
    .default(4 * 1024 * 1024)
    .describe(
      "registry bound (§3.4, embedded bus): bytes of registrations one client connection may make while it is open, in every session together (each counts its session id, its skill id and 128 bytes); past it a new one is refused (connection_quota). 4 MiB: over 20,000 registrations with UUID sessions and short skill ids, about 7,000 with ids of the longest (256 characters)",
    ),
  registryFile: matching(/^\S.*$/, 'a file path, or null to keep no registry on disk')
    .nullable()
    .default('$STATE/fallback-registry-$BUS.json')
    .describe(
      'keep fallback registrations across restarts in this file, one per bus ($STATE/ = $XDG_STATE_HOME/ovos-contests/, default ~/.local/state/ovos-contests/; $BUS = the bus served or joined, e.g. 127.0.0.1-8181-core); null: nowhere',
    )
    .register(CONFIG_KEY_META, {
      flag: { name: '--registry-file', arg: 'FILE', env: 'OVOS_CONTESTS_REGISTRY_FILE' },
      switches: [{ flag: '--no-registry-file', value: null, help: 'keep no registrations on disk (a restart forgets skills that do not register again)' }],
    }),
  forgetAfterMs: intIn(10_000)
    .default(30 * 24 * 3_600_000)
    .describe('a registration not heard from for this long is forgotten (a skill uninstalled without deregistering), at start and while running'),
}).describe('the fallback pipeline plugin (OVOS-FALLBACK-1)');

/** One language's gate words: both lists, no defaults (a language added in a config file gives both). */
const words = section({ question: nonEmptyStrings(), command: nonEmptyStrings() });

const gate = section({
  enabled: bool()
    .default(true)
    .describe('the question gate (OVOS-COMMON-QUERY-1 §4); false runs the contest for every utterance (still conformant)'),
  // 1: a one-word query ("weather", "lichtgeschwindigkeit") may be a question; greetings and thanks are stripped by
  // the gate's framing rule before this count (§4.2 when in doubt, accept).
  minWords: intIn(0)
    .default(1)
    .describe('utterances with fewer words than this are rejected unless they contain a question word'),
  vocabulary: keyedBy(
    z.string().regex(PRIMARY_SUBTAG),
    'vocabulary is keyed by a lower-case primary language subtag such as "en"',
    words,
  )
    .prefault(() => structuredClone(DEFAULT_GATE_VOCABULARY) as Record<string, { question: string[]; command: string[] }>)
    .describe('language (primary subtag) → its question and command words; a language not listed is accepted (bias to accept)')
    .register(CONFIG_KEY_META, { shownDefault: `${Object.keys(DEFAULT_GATE_VOCABULARY).join(', ')} (src/config/gate-vocabulary.ts)` }),
}).describe('the question gate (OVOS-COMMON-QUERY-1 §4)');

const commonQuery = section({
  pipelineId: matching(PIPELINE_ID, 'a pipeline_id of [A-Za-z0-9_-] (OVOS-PIPELINE-1)')
    .default('common_query')
    .describe("the common query plugin's pipeline_id and dispatch target"),
  gate: gate.prefault({}),
  earlyStart: bool().default(true).describe("start the contest at the utterance's arrival (OVOS-COMMON-QUERY-1 §5)"),
  pollWindowMs: ms(1).default(500).describe('poll-window ceiling (Appendix A)'),
  // §6.3 early close: the poll closes this long after the ping unless a skill known to answer every poll is still
  // outstanding; it closes at once when a claim is in hand and every skill the plugin knows of has answered.
  pollClaimBoundMs: ms(0)
    .default(125)
    .describe('early close with nobody known outstanding: Appendix A pong bound 100 ms + 25 ms for the bus (§6.3); ≤ pollWindowMs'),
  // The cold start: until the roster has seen this many polls through, nobody can say every skill is known yet.
  warmupPolls: intIn(0)
    .default(3)
    .describe('the cold start: a poll begun before this many polls have run to their end (since the start, skills leaving with their connection, or the bus coming back) waits for every skill on the roster, and with no claim in hand at pollClaimBoundMs for its first claim, up to pollWindowMs, so a claim that is slow or from a skill not heard from yet is not lost; 0: none'),
  collectionInitialMs: ms(0)
    .default(3_000)
    .describe('collection window when no claimant gave latency_ms (Appendix A); ≤ collectionCeilingMs'),
  // §7.2: latency_ms is the skill's own time to answer; the plugin sees the answer a bus round trip later (at least this).
  collectionAllowanceMs: ms(0)
    .default(50)
    .describe("the least added to a claimant's latency_ms when sizing the collection window: the bus between skill and plugin; its pong's delay when longer (§7.2). Also the least the window stays open after the first surviving answer (the largest claimant pong delay when longer)"),
  collectionCeilingMs: ms(1).default(5_000).describe('hard ceiling of the collection window (Appendix A)'),
  minConfidence: unitInterval().default(0.5).describe('minimum self-confidence (§8 step 1)'),
  fastWinConfidence: unitInterval()
    .nullable()
    .default(0.9)
    .describe('fast-win threshold, ≥ minConfidence; null switches fast-win off (§8 step 3)'),
}).describe('the common query pipeline plugin (OVOS-COMMON-QUERY-1)');

const shutdown = section({
  graceMs: ms(0)
    .default(10_000)
    .describe('on SIGTERM / SIGINT: how long utterances in flight (contests and handlers) may take to finish before they are stopped'),
}).describe('graceful shutdown');

const memory = section({
  idleReclaimMs: ms(1)
    .nullable()
    .default(5_000)
    .describe('the daemon: every this many ms, when its event loop was idle and V8 holds over 16 MB more heap than the last collection left in use (after a burst or a flood), one full garbage collection, so the memory goes back to the system; null: never'),
}).describe('giving memory back after a burst (the daemon; the library never collects)');

const metrics = section({
  port: port()
    .nullable()
    .default(null)
    .describe('serve Prometheus metrics at http://127.0.0.1:PORT/metrics (0 = any free port); null: off')
    .register(CONFIG_KEY_META, { flag: { name: '--metrics-port', arg: 'PORT', env: 'OVOS_CONTESTS_METRICS_PORT' } }),
}).describe('Prometheus metrics (off by default)');

const cluster = section({
  nats: z
    .string(natsExpecting)
    .regex(/^(nats|tls):\/\/[^\s,]+(,(nats|tls):\/\/[^\s,]+)*$/i, natsExpecting)
    .nullable()
    .default(null)
    .describe(
      'join a cluster of daemons on these NATS servers (JetStream on; e.g. "nats://127.0.0.1:4222", "tls://nats.example:4222" to demand TLS): every daemon serves the bus, and each session\'s contests run on one of them (src/cluster/README.md); null: one daemon alone',
    )
    .register(CONFIG_KEY_META, { flag: { name: '--nats', arg: 'URLS', env: 'OVOS_CONTESTS_NATS' } }),
  partitions: intIn(1)
    .default(32)
    .describe('partitions the sessions are spread over; every daemon of a cluster must use the same number'),
  heartbeatMs: ms(1).default(250).describe("how often a daemon tells the cluster it is alive"),
  deadAfterMs: ms(1)
    .default(1_000)
    .describe('a daemon not heard from for this long is gone: its partitions are taken over; > cluster.heartbeatMs'),
  replicas: intIn(1, 5)
    .default(1)
    .describe('JetStream replicas of the partition table and the state bucket (registrations, connections, suspensions): 1 on one NATS server, 3 on a NATS cluster (survives a server)'),
  workers: intIn(1)
    .nullable()
    .default(null)
    .describe(
      'run this many daemon processes behind the one bus port, as a cluster on an embedded nats-server (Debian: nats-server) or on cluster.nats; worker i serves the inspector and metrics on their port + i, worker 0 the example skills; null: one process',
    )
    .register(CONFIG_KEY_META, { flag: { name: '--workers', arg: 'N', env: 'OVOS_CONTESTS_WORKERS' } }),
  user: matching(/^\S+$/, 'a NATS user name')
    .nullable()
    .default(null)
    .describe(`the NATS user the daemon authenticates as, with its password from cluster.passwordFile or ${'OVOS_CONTESTS_NATS_PASSWORD'}; null: none`)
    .register(CONFIG_KEY_META, { flag: { name: '--nats-user', arg: 'USER', env: 'OVOS_CONTESTS_NATS_USER' } }),
  passwordFile: filePath()
    .describe('a file (mode 600) holding the NATS password of cluster.user; or set the password itself in OVOS_CONTESTS_NATS_PASSWORD; null: none')
    .register(CONFIG_KEY_META, { flag: { name: '--nats-password-file', arg: 'FILE', env: 'OVOS_CONTESTS_NATS_PASSWORD_FILE' } }),
  tokenFile: filePath()
    .describe('a file (mode 600) holding a NATS token to authenticate with; or set the token itself in OVOS_CONTESTS_NATS_TOKEN; null: none')
    .register(CONFIG_KEY_META, { flag: { name: '--nats-token-file', arg: 'FILE', env: 'OVOS_CONTESTS_NATS_TOKEN_FILE' } }),
  nkeyFile: filePath()
    .describe('a file (mode 600) holding the NKey seed (SU…) the daemon authenticates with; null: none')
    .register(CONFIG_KEY_META, { flag: { name: '--nats-nkey-file', arg: 'FILE', env: 'OVOS_CONTESTS_NATS_NKEY_FILE' } }),
  credsFile: filePath()
    .describe('a NATS credentials file (user JWT and NKey seed, as nsc writes it; mode 600) the daemon authenticates with; null: none')
    .register(CONFIG_KEY_META, { flag: { name: '--nats-creds', arg: 'FILE', env: 'OVOS_CONTESTS_NATS_CREDS' } }),
  tlsCaFile: filePath()
    .describe("the CA (PEM) that signed the NATS servers' certificates; set (or a tls:// server), TLS is demanded of every server; null: the system's CAs")
    .register(CONFIG_KEY_META, { flag: { name: '--nats-ca', arg: 'FILE', env: 'OVOS_CONTESTS_NATS_CA' } }),
  tlsCertFile: filePath().describe('a client certificate (PEM) for NATS servers that verify clients, with cluster.tlsKeyFile; null: none'),
  tlsKeyFile: filePath().describe("the client certificate's key (PEM, mode 600); null: none"),
  nodeId: matching(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, "_" or "-" (at most 64)')
    .nullable()
    .default(null)
    .describe("this daemon's name in the cluster (logs, the inspector); null: a random one at every start"),
}).describe('a cluster of daemons on NATS (off by default)');

const inspector = section({
  enabled: bool()
    .default(true)
    .describe('serve the live inspector page (loopback only)')
    .register(CONFIG_KEY_META, {
      switches: [
        { flag: '--inspector', value: true, help: 'serve the live inspector page' },
        { flag: '--no-inspector', value: false, help: 'do not serve the live inspector page' },
      ],
    }),
  port: port()
    .default(8182)
    .describe('port of the live inspector page on 127.0.0.1 (0 = any free port, logged at start)')
    .register(CONFIG_KEY_META, { flag: { name: '--inspector-port', arg: 'PORT', env: 'OVOS_CONTESTS_INSPECTOR_PORT' } }),
  recentUtterances: intIn(1, 100_000)
    .default(200)
    .describe('utterances the page can show (a ring: the oldest is forgotten first)'),
  // Bounded above: the page takes the whole state as one JSON string, and V8 caps a string at about 512 MiB.
  maxBytes: intIn(64 * 1024, 256 * 1024 * 1024)
    .default(32 * 1024 * 1024)
    .describe(
      'bytes the inspector keeps for the utterances it shows, all together (the JSON size of their messages, estimated); past it the oldest is forgotten first. A message over 8 KiB is kept as a clipped copy',
    ),
}).describe('the live inspector page, served on loopback only');

const dialects = section({
  spec: bool().default(true).describe('speak the spec dialect: the OVOS-*-1 topics'),
  legacy: bool()
    .default(true)
    .describe(
      'speak the legacy dialect: what OpenVoiceOS programs send today (the recognizer_loop:utterance entry, the no-match events, ovos-workshop fallback and common-query skills); at least one dialect is on',
    ),
})
  .refine((value) => value.spec || value.legacy, { error: 'at least one dialect must be on (spec, legacy)' })
  .describe('the protocol dialects spoken on the bus (src/dialect/)');

/** Every key of the configuration; parse `{}` for the defaults. Relations between keys are checked at the end. */
export const ConfigSchema = section({
  bus: bus.prefault({}),
  log: log.prefault({}),
  lang: matching(LANG_TAG, 'a BCP 47 language tag such as "en-US"')
    .default('en-US')
    .describe('deployment default language (OVOS-SESSION-1 §3.2.7, last step)')
    .register(CONFIG_KEY_META, { flag: { name: '--lang', arg: 'TAG', env: 'OVOS_CONTESTS_LANG' } }),
  // FALLBACK-1 §8.2 with COMMON-QUERY-1 §12: the high-confidence fallback skills first, common query behind them
  // (its contest runs from the utterance's arrival, §5, hidden behind fallback_high), then the rest of fallback.
  // Unknown pipeline ids are skipped at run time (OVOS-PIPELINE-1), so any name is accepted here.
  pipeline: nonEmptyStrings()
    .default(['fallback_high', 'common_query', 'fallback_medium', 'fallback_low'])
    .describe("the default session's pipeline (OVOS-PIPELINE-1 §5.5); OVOS ids are aliased, unknown ones skipped"),
  orchestrator: orchestrator.prefault({}),
  fallback: fallback.prefault({}),
  commonQuery: commonQuery.prefault({}),
  exampleSkills: bool()
    .default(true)
    .describe('start the bundled example skills as bus clients of the daemon')
    .register(CONFIG_KEY_META, {
      switches: [
        { flag: '--example-skills', value: true, help: 'start the bundled example skills' },
        { flag: '--no-example-skills', value: false, help: 'do not start the bundled example skills' },
      ],
    }),
  shutdown: shutdown.prefault({}),
  memory: memory.prefault({}),
  metrics: metrics.prefault({}),
  inspector: inspector.prefault({}),
  dialects: dialects.prefault({}),
  cluster: cluster.prefault({}),
}).superRefine(({ bus, orchestrator, fallback, commonQuery: cq, cluster }, context) => {
  const fail = (path: readonly PropertyKey[], message: string): void => {
    context.addIssue({ code: 'custom', path: [...path], message });
  };
  if (bus.reconnectInitialMs > bus.reconnectMaxMs) {
    fail(['bus', 'reconnectInitialMs'], `must be ≤ bus.reconnectMaxMs (${bus.reconnectMaxMs}), got ${bus.reconnectInitialMs}`);
  }
  const clustered = cluster.nats !== null ? 'nats' : cluster.workers !== null ? 'workers' : undefined;
  if (clustered !== undefined && bus.url !== null) {
    fail(['cluster', clustered], `a daemon of a cluster serves the bus itself: set cluster.${clustered} or bus.url, not both`);
  }
  if (clustered !== undefined && !orchestrator.takesUtterances) {
    fail(['cluster', clustered], "a cluster runs the whole pipeline: ovos-core's stage requests (orchestrator.takesUtterances false) are served by one daemon alone");
  }
  if (cluster.deadAfterMs <= cluster.heartbeatMs) {
    fail(['cluster', 'deadAfterMs'], `must be > cluster.heartbeatMs (${cluster.heartbeatMs}), got ${cluster.deadAfterMs}`);
  }
  if (cq.pollClaimBoundMs > cq.pollWindowMs) {
    fail(['commonQuery', 'pollClaimBoundMs'], `must be ≤ commonQuery.pollWindowMs (${cq.pollWindowMs}), got ${cq.pollClaimBoundMs}`);
  }
  if (cq.collectionInitialMs > cq.collectionCeilingMs) {
    fail(
      ['commonQuery', 'collectionInitialMs'],
      `must be ≤ commonQuery.collectionCeilingMs (${cq.collectionCeilingMs}), got ${cq.collectionInitialMs}`,
    );
  }
  if (cq.fastWinConfidence !== null && cq.fastWinConfidence < cq.minConfidence) {
    fail(
      ['commonQuery', 'fastWinConfidence'],
      `must be null or ≥ commonQuery.minConfidence (${cq.minConfidence}), got ${cq.fastWinConfidence}`,
    );
  }
  // OVOS-COMMON-QUERY-1 §2.1 (bound interaction): a match bound below the contest's worst case skips the stage
  // mid-contest. The worst case is the whole poll window followed by the whole collection window.
  const contestMs = cq.pollWindowMs + cq.collectionCeilingMs;
  if (orchestrator.matchTimeoutMs < contestMs) {
    fail(
      ['orchestrator', 'matchTimeoutMs'],
      `must be ≥ commonQuery.pollWindowMs + commonQuery.collectionCeilingMs = ${contestMs}, got ` +
        `${orchestrator.matchTimeoutMs}; a shorter match bound would skip the common query stage mid-contest ` +
        '(OVOS-COMMON-QUERY-1 §2.1)',
    );
  }
  if (Object.hasOwn(fallback.stages, cq.pipelineId)) {
    fail(['fallback', 'stages', cq.pipelineId], `a fallback stage may not share commonQuery.pipelineId ("${cq.pipelineId}")`);
  }
});

// ---------------------------------------------------------------------------------------------------------------
// Types derived from the schema

/** Readonly all the way down (tuples stay tuples). */
type DeepReadonly<T> = T extends object ? { readonly [K in keyof T]: DeepReadonly<T[K]> } : T;

/** A validated configuration: what `validateConfig` and `loadConfig` return, deep-frozen. */
export type Config = DeepReadonly<z.output<typeof ConfigSchema>>;
export type FallbackMode = Config['fallback']['mode'];
/** An inclusive priority range [min, max] (OVOS-FALLBACK-1 §8.2). */
export type PriorityRange = Config['fallback']['stages'][string];
export type GateConfig = Config['commonQuery']['gate'];

// ---------------------------------------------------------------------------------------------------------------
// The keys, walked: for the flags, --help, the configuration reference's table

/** One key of the configuration as the documentation lists it (records and arrays are one key). */
export interface ConfigKey {
  /** Dotted path, `bus.port`. */
  readonly key: string;
  readonly description: string;
  readonly meta: ConfigKeyMeta | undefined;
  readonly schema: z.ZodType;
}

/** The object schema inside a section's wrappers (default, refinement), if it is one. */
function objectIn(schema: z.ZodType): z.ZodObject | undefined {
  let node: z.ZodType = schema;
  while (node instanceof z.ZodPrefault || node instanceof z.ZodDefault) node = node.unwrap() as z.ZodType;
  return node instanceof z.ZodObject ? node : undefined;
}

function* keysOf(object: z.ZodObject, prefix: string): Generator<ConfigKey> {
  for (const [name, schema] of Object.entries(object.shape) as [string, z.ZodType][]) {
    const key = prefix === '' ? name : `${prefix}.${name}`;
    const inner = objectIn(schema);
    if (inner !== undefined) {
      yield* keysOf(inner, key);
      continue;
    }
    if (schema.description === undefined) throw new Error(`config key ${key} has no description`);
    yield { key, description: schema.description, meta: CONFIG_KEY_META.get(schema), schema };
  }
}

/** Every key, in declaration order. */
export const CONFIG_KEYS: readonly ConfigKey[] = [...keysOf(ConfigSchema, '')];

// ---------------------------------------------------------------------------------------------------------------
// What leaves the schema

/** Freeze a parsed config all the way down (its records already have a null prototype). */
export function freezeConfig(parsed: z.output<typeof ConfigSchema>): Config {
  const freeze = (value: unknown): void => {
    if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return;
    Object.freeze(value);
    for (const child of Object.values(value)) freeze(child);
  };
  freeze(parsed);
  return parsed;
}

/**
 * The JSON Schema of a config file (what editors check and complete): the keys with their constraints, defaults
 * and descriptions; a `null` entry, which deletes a stage, priority or language, allowed in the records; and a
 * `$schema` key, so a file can name this schema.
 */
export function configJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(ConfigSchema, {
    io: 'input',
    override: ({ zodSchema, jsonSchema }) => {
      const entry = jsonSchema.additionalProperties;
      if (DELETABLE_ENTRIES.has(zodSchema) && typeof entry === 'object') jsonSchema.additionalProperties = { anyOf: [entry, { type: 'null' }] };
    },
  });
  const { $schema, ...rest } = schema;
  return {
    $schema,
    title: 'ovos-contests configuration',
    description: 'A config file for ovos-contests (--config FILE or OVOS_CONTESTS_CONFIG); every key is optional.',
    ...rest,
    properties: { $schema: { type: 'string', description: 'this schema, for editors; ignored' }, ...rest.properties },
  };
}
