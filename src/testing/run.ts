/**
 * The timing harness (`ovos-contests/testing`): a deployer's config and skill roster, replayed against the real
 * contest system — orchestrator, supervisor, both plugins — on an in-process bus and a `ManualClock`, compared with
 * the timing model (model.ts) written from the specs. Every delay the machines arm is exercised at T−1, T and T+1
 * (boundaries.ts); each variant is one question on a fresh system whose roster was learnt by warm-up questions.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { LocalBus } from '../bus/local-bus.js';
import { createMessage, forward, isJsonObject, reply, stringField, withContext, type JsonObject, type Message } from '../bus/message.js';
import { ManualClock } from '../clock/manual-clock.js';
import { configWarnings } from '../config/config.js';
import { sessionIdOf } from '../bus/session.js';
import { legacyTopics } from '../dialect/legacy-dialect.js';
import type { Config } from '../config/defaults.js';
import { createContestSystem } from '../system.js';
import { boundaryVariants, type Variant } from './boundaries.js';
import { gateAccepts } from './gate-verdict.js';
import { expectedOutcome, WARM_UPS, type Expected } from './model.js';
import type { SkillScript, TimingScenario } from './scenario.js';

export interface Observed {
  readonly decidedBy: string | null;
  readonly skill_id: string | null;
  readonly decidedAt: number | null;
  readonly handler: 'complete' | 'error' | 'timeout' | 'disconnected' | null;
  readonly handledAt: number | null;
  readonly handledCount: number;
  /** Classic CommonQuerySkills other than the winner that sent an `ovos.utterance.handled` (see `classic`). */
  readonly strayClassicHandled: readonly string[];
}

export interface PathResult {
  readonly name: string;
  /** The delay this path sits on (a machine delay name) and its offset, when it is a boundary variant. */
  readonly boundary: Variant['boundary'];
  readonly clause: string;
  readonly expected: Expected;
  /** What the first session's wire showed (`failures` covers every session). */
  readonly observed: Observed;
  readonly ok: boolean;
  /** What differs, naming the boundary and the clause; empty when ok. */
  readonly failures: readonly string[];
  /** Each session's wire, one line per message: `+<ms> <type> <detail>` (with ` [<session_id>]` after the ms when the
   * question was asked in several sessions). */
  readonly timeline: readonly string[];
}

export interface TimingReport {
  readonly paths: readonly PathResult[];
  /** Configuration findings that cut contests short (pool × timeout over the match bound, …), with their clause. */
  readonly configFindings: readonly string[];
  readonly ok: boolean;
}

const SESSION = 'timing';

/**
 * Replay one scenario. The gate's verdict on its utterance (§4, measured on its own corpus) is taken as given.
 * `options.systemConfig` runs the system on another config than the one the expectations are computed for: a
 * what-if ("which decisions does this change move?"), and how the harness's own tests show it catches a deviation.
 */
export async function runScenario(
  config: Config,
  scenario: TimingScenario,
  meta: Pick<PathResult, 'name' | 'boundary' | 'clause'> = { name: scenario.name, boundary: null, clause: '' },
  options: { readonly systemConfig?: Config } = {},
): Promise<PathResult> {
  const accepted = gateAccepts(config, scenario.utterance);
  const expected = expectedOutcome(config, scenario, accepted);
  const bus = new LocalBus();
  const clock = new ManualClock();
  const sink = new Writable({ write: (_chunk, _enc, cb) => cb() }); // the report is the output, not the logs
  const system = createContestSystem({ bus, clock, config: options.systemConfig ?? config, logger: pino({ level: 'silent' }, sink) });
  const settle = async (): Promise<void> => {
    for (let i = 0; i < 10; i++) await new Promise<void>((resolve) => setImmediate(resolve));
  };
  const runUntil = async (end: number, done: () => boolean = () => false): Promise<void> => {
    await settle();
    for (;;) {
      if (done()) return;
      const next = clock.nextDue();
      if (next === undefined || next > end) break;
      clock.advance(Math.max(0, next - clock.now()));
      await settle();
    }
  };
  const players = scenario.skills.map((skill) => playSkill(bus, clock, skill));
  await settle();
  const cqId = config.commonQuery.pipelineId;
  // A running deployment is past its cold start (src/plugins/README.md "Common-query poll"): its first
  // `warmupPolls` questions, then WARM_UPS to learn the roster as the model has it.
  const coldPolls = (options.systemConfig ?? config).commonQuery.warmupPolls;
  const hasCqSkills = scenario.skills.some((s) => s.kind === 'common_query');
  if (accepted && config.pipeline.includes(cqId)) {
    for (let i = 0; i < coldPolls + (hasCqSkills ? WARM_UPS : 0); i++) {
      bus.publish(entry(config, scenario.utterance, { session_id: `warm-up-${i}`, pipeline: [cqId] }));
      await runUntil(clock.now() + 60_000);
    }
  }
  // The question in each session, at the same ms; each session's wire apart.
  const count = scenario.sessions ?? 1;
  if (!Number.isInteger(count) || count < 1) throw new RangeError(`sessions: a whole number ≥ 1 (got ${count})`);
  const sessions = Array.from({ length: count }, (_, i) => (i === 0 ? SESSION : `${SESSION}-${i + 1}`));
  const wires = new Map(sessions.map((id) => [id, [] as Array<{ at: number; message: Message }>]));
  const t0 = clock.now();
  bus.subscribe((message) => {
    const id = sessionIdOf(message);
    if (id !== undefined) wires.get(id)?.push({ at: clock.now() - t0, message });
  });
  // Armed before the question is published: at the same ms, a connection closes before anything else happens.
  for (const player of players) player.armDisconnect();
  for (const id of sessions) bus.publish(entry(config, scenario.utterance, { session_id: id }));
  const horizon = t0 + (config.pipeline.length + 1) * config.orchestrator.matchTimeoutMs + config.orchestrator.handlerTimeoutMs + 1_000;
  await runUntil(horizon);
  system.close();
  // Every session must come out as the model says the question does alone: one session's replies, timeouts and
  // handled never decide another's (TimingScenario.sessions).
  const several = sessions.length > 1;
  const results = sessions.map((id) => {
    const wire = wires.get(id)!;
    const observed = observe(wire, cqId, scenario);
    const failures = compare(expected, observed, meta).map((failure) => (several ? `session ${id}: ${failure}` : failure));
    const timeline = wire.map(({ at, message }) => `+${at}${several ? ` [${id}]` : ''} ${message.type}${detail(message)}`);
    return { observed, failures, timeline };
  });
  const failures = results.flatMap((r) => r.failures);
  return {
    ...meta,
    expected,
    observed: results[0]!.observed,
    ok: failures.length === 0,
    failures,
    timeline: results.flatMap((r) => r.timeline),
  };
}

/** The scenario, then every boundary variant of it; config findings first. */
export async function runTimingSuite(config: Config, scenarios: readonly TimingScenario[]): Promise<TimingReport> {
  const paths: PathResult[] = [];
  for (const scenario of scenarios) {
    paths.push(await runScenario(config, scenario));
    for (const variant of boundaryVariants(config, scenario)) {
      paths.push(await runScenario(variant.config, variant.scenario, { name: variant.name, boundary: variant.boundary, clause: variant.clause }));
    }
  }
  const configFindings = configWarnings(config).map((w) => `${w.key}: ${w.message}`);
  return { paths, configFindings, ok: paths.every((p) => p.ok) };
}

/** The utterance as a client of the deployment sends it: the spec entry, or the OVOS voice loop's when only legacy is spoken. */
function entry(config: Config, utterance: string, session: JsonObject): Message {
  return createMessage(config.dialects.spec ? 'ovos.utterance.handle' : legacyTopics.recognizerUtterance, { utterances: [utterance] }, { source: 'timing-harness', destination: 'orchestrator', session });
}

/**
 * A scripted skill on the bus, on a client connection of its own: registers (fallback), pongs, answers and completes
 * at its script's times; `armDisconnect` closes its connection `disconnectAtMs` after now (the question), after which
 * it sends nothing.
 */
export function playSkill(bus: LocalBus, clock: ManualClock, skill: SkillScript): { armDisconnect(): void } {
  const connection = `skill:${skill.skill_id}`;
  let dead = false;
  const send = (message: Message): void => {
    if (!dead) bus.publish(message, connection);
  };
  /** Runs `fn` `ms` from now (at once for 0); returns what cancels it. */
  const later = (ms: number | 'never' | undefined, fn: () => void): (() => void) => {
    if (ms === 'never' || dead) return () => {};
    if (ms === undefined || ms <= 0) {
      fn();
      return () => {};
    }
    const id = clock.setTimeout(fn, ms);
    return () => clock.clearTimeout(id);
  };
  const disconnect = (): void => {
    dead = true;
    bus.closeConnection(connection);
  };
  // At 0: gone before the question is delivered (the bus queues the close ahead of it).
  const armDisconnect = (): void => {
    if (skill.disconnectAtMs === undefined) return;
    if (skill.disconnectAtMs <= 0) disconnect();
    else clock.setTimeout(disconnect, skill.disconnectAtMs);
  };
  if (skill.kind === 'fallback' && skill.dialect === 'legacy') {
    // ovos-workshop's FallbackSkill (ovos-wire-today.md): registers without context.skill_id, answers every broadcast
    // by reply, and on its request sends .start, then .response and the utterance's ovos.utterance.handled.
    const prefix = `ovos.skills.fallback.${skill.skill_id}`;
    const fallback_handler = `${skill.skill_id}.handle_fallback`;
    // Its handlers in flight (one per request: two sessions can each have one running).
    const running = new Map<Message, () => void>();
    send(createMessage(legacyTopics.fallbackRegister, { skill_id: skill.skill_id, priority: skill.priority }, { session: { session_id: 'default' } }));
    bus.subscribe((m) => {
      if (m.type === legacyTopics.fallbackPing) {
        later(skill.pongAfterMs, () => send(withContext(reply(m, legacyTopics.fallbackPong, { skill_id: skill.skill_id, can_handle: skill.willing ?? true }), { skill_id: skill.skill_id })));
      } else if (m.type === legacyTopics.fallbackRequest(skill.skill_id)) {
        send(forward(m, `${prefix}.start`));
        // Completing at the handler timeout's very ms, it has heard force_timeout first: the harness's time rule (a
        // deadline at T fires before a message a skill sends at T), so what is due at that ms is delivered first.
        const cancel = later(skill.handlerMs, () => {
          void bus.idle().then(() => {
            if (!running.delete(m)) return;
            if (skill.handlerFails === true) {
              send(forward(m, `${prefix}.response`, { result: false, fallback_handler }));
              return;
            }
            send(forward(m, `${prefix}.response`, { result: true, fallback_handler }));
            send(forward(m, legacyTopics.utteranceHandled));
          });
        });
        running.set(m, cancel);
      } else if (m.type === legacyTopics.fallbackForceTimeout && m.data['skill_id'] === skill.skill_id) {
        // ovos-workshop's killable_event: a running handler of the skill is killed by a force_timeout of its own
        // session only ("dont kill events from other sessions"); it answers .response and .killed, and no handled.
        for (const [request, cancel] of [...running]) {
          if (sessionIdOf(request) !== sessionIdOf(m)) continue;
          running.delete(request);
          cancel();
          send(forward(request, `${prefix}.response`, { result: false, fallback_handler }));
          send(forward(request, `${prefix}.killed`, { error: 'timed out' }));
        }
      }
    });
    return { armDisconnect };
  }
  if (skill.kind === 'fallback') {
    send(createMessage('ovos.fallback.register', { skill_id: skill.skill_id, priority: skill.priority }, { skill_id: skill.skill_id, session: { session_id: 'default' } }));
    bus.subscribe((m) => {
      if (m.type === `${skill.skill_id}.fallback.ping`) {
        later(skill.pongAfterMs, () => send(reply(m, `${skill.skill_id}.fallback.pong`, { skill_id: skill.skill_id, can_handle: skill.willing ?? true })));
      } else if (m.type === `${skill.skill_id}:fallback`) {
        const end = skill.handlerFails === true ? reply(m, 'mycroft.skill.handler.error', { exception: `${skill.skill_id}: scripted failure` }) : reply(m, 'mycroft.skill.handler.complete');
        later(skill.handlerMs, () => send(withContext(end, { skill_id: skill.skill_id })));
      }
    });
    return { armDisconnect };
  }
  if (skill.dialect === 'legacy') {
    // An ovos-workshop `@common_query` skill (test/support/cq-skills.ts plays the same on the unit harness): announces
    // itself at start-up and to every ping; to `question:query` it replies `searching: true`, then its answer
    // or `searching: false` (times from the question); selected, it speaks and ends the utterance itself. A classic
    // `CommonQuerySkill` answers with `handles_speech: true` and runs its wrapped handler on every bare
    // `question:action` (common_query_skill.py: the handler returns early unless the action names it; the wrapper's
    // start, complete and, as an intent handler, `ovos.utterance.handled` go out regardless).
    const classic = skill.classic === true;
    const announce = (from?: Message): void => {
      const data = { skill_id: skill.skill_id, is_classic_cq: classic };
      send(from === undefined ? createMessage(legacyTopics.commonQueryPong, data, { skill_id: skill.skill_id, session: { session_id: 'default' } }) : reply(from, legacyTopics.commonQueryPong, data));
    };
    bus.subscribe((m) => {
      // ovos-workshop answers every ovos.common_query.ping with its id — the spec contest's ping too.
      if (m.type === legacyTopics.commonQueryPing) announce(m);
      if (m.type === legacyTopics.questionQuery) {
        const phrase = stringField(m.data, 'phrase') ?? '';
        const respond = (data: JsonObject): void => send(withContext(reply(m, legacyTopics.questionQueryResponse, { phrase, skill_id: skill.skill_id, ...data }), { skill_id: skill.skill_id }));
        const pong = skill.pong ?? 'claim';
        if (pong === 'silent') return;
        if (pong === 'decline') {
          later(skill.pongAfterMs, () => respond({ searching: false }));
          return;
        }
        later(skill.pongAfterMs, () => respond({ searching: true }));
        const answer = skill.answer === undefined ? `${skill.skill_id} answer` : skill.answer;
        const after = skill.answerAfterMs === 'never' ? 'never' : Math.max(skill.answerAfterMs ?? 0, skill.pongAfterMs ?? 0);
        const answered: JsonObject = { answer, callback_data: { answer }, conf: skill.conf ?? 0.7, ...(classic ? { handles_speech: true } : {}) };
        later(after, () => respond(answer === null ? { searching: false } : answered));
      }
      if (m.type === legacyTopics.questionAction(skill.skill_id, classic)) {
        const as = (type: string, data: JsonObject = {}): Message => withContext(forward(m, type, data), { skill_id: skill.skill_id });
        const callback = m.data['callback_data'];
        const name = `${skill.skill_id}.${classic ? '__handle_query_action' : 'handle_question_action'}`;
        send(as('mycroft.skill.handler.start', { name }));
        if (!classic || m.data['skill_id'] === skill.skill_id) send(as('speak', { utterance: isJsonObject(callback) ? String(callback['answer']) : '', expect_response: false }));
        send(as('mycroft.skill.handler.complete', { name }));
        send(as(legacyTopics.utteranceHandled, classic ? { name } : {}));
      }
    });
    announce();
    return { armDisconnect };
  }
  bus.subscribe((m) => {
    const utterance = stringField(m.data, 'utterance');
    if (utterance === undefined) return;
    if (m.type === 'ovos.common_query.ping') {
      const pong = skill.pong ?? 'claim';
      if (pong === 'silent') return;
      const data: JsonObject = { utterance, skill_id: skill.skill_id, can_answer: pong === 'claim' };
      if (skill.latencyMs !== undefined) data['latency_ms'] = skill.latencyMs;
      later(skill.pongAfterMs, () => send(reply(m, 'ovos.common_query.pong', data)));
    } else if (m.type === `${skill.skill_id}:common_query`) {
      const answer = skill.answer === undefined ? `${skill.skill_id} answer` : skill.answer;
      const data: JsonObject = answer === null ? { utterance, skill_id: skill.skill_id } : { utterance, skill_id: skill.skill_id, answer, conf: skill.conf ?? 0.7 };
      later(skill.answerAfterMs, () => send(reply(m, `${skill.skill_id}.common_query.response`, data)));
    }
  });
  return { armDisconnect };
}

function observe(wire: ReadonlyArray<{ at: number; message: Message }>, cqId: string, scenario: TimingScenario): Observed {
  const first = (type: string) => wire.find((w) => w.message.type === type);
  const matched = first('ovos.intent.matched');
  const unmatched = first('ovos.intent.unmatched');
  const handled = wire.filter((w) => w.message.type === 'ovos.utterance.handled');
  const complete = first('ovos.intent.handler.complete');
  const error = first('ovos.intent.handler.error');
  let decidedBy: string | null = null;
  let skillId: string | null = null;
  if (matched !== undefined) {
    decidedBy = stringField(matched.message.data, 'pipeline_id') ?? null;
    skillId = stringField(matched.message.data, 'skill_id') ?? null;
    if (decidedBy === cqId && skillId === cqId) {
      const spoken = wire.find((w) => w.message.type === 'ovos.utterance.speak');
      const text = spoken === undefined ? undefined : stringField(spoken.message.data, 'utterance');
      const cq = scenario.skills.find((s) => s.kind === 'common_query' && (s.answer === undefined ? `${s.skill_id} answer` : s.answer) === text);
      skillId = cq?.skill_id ?? null;
    }
  } else if (unmatched !== undefined) {
    decidedBy = 'unmatched';
  }
  // A winner that is a bus skill — any fallback skill, a legacy common-query skill — runs its own handler.
  const skillWin = matched !== undefined && stringField(matched.message.data, 'skill_id') !== cqId;
  return {
    decidedBy,
    skill_id: skillId,
    decidedAt: (matched ?? unmatched)?.at ?? null,
    handler: !skillWin ? null : complete !== undefined ? 'complete' : error === undefined ? null : handlerEnd(String(error.message.data['exception'])),
    handledAt: handled[0]?.at ?? null,
    handledCount: handled.length,
    strayClassicHandled: handled.flatMap((w) => {
      const sender = stringField(w.message.context, 'skill_id');
      const classic = scenario.skills.some((s) => s.kind === 'common_query' && s.classic === true && s.skill_id === sender);
      return classic && sender !== skillId && sender !== undefined ? [sender] : [];
    }),
  };
}

/** What ended a handler, read from the exception of ovos.intent.handler.error (the utterance machine's wording). */
function handlerEnd(exception: string): 'disconnected' | 'timeout' | 'error' {
  if (exception.startsWith('SkillDisconnected: the bus connection of')) return 'disconnected';
  return exception.startsWith('TimeoutError: handler did not complete within') ? 'timeout' : 'error';
}

function compare(expected: Expected, observed: Observed, meta: Pick<PathResult, 'boundary' | 'clause'>): string[] {
  const where = meta.boundary === null ? '' : ` [boundary ${meta.boundary.delay} ${meta.boundary.offset >= 0 ? '+' : ''}${meta.boundary.offset === 0 ? '±0' : meta.boundary.offset}${meta.clause === '' ? '' : `, ${meta.clause}`}]`;
  const failures: string[] = [];
  const check = (what: string, want: unknown, got: unknown): void => {
    if (want !== got) failures.push(`${what}: expected ${JSON.stringify(want)}, observed ${JSON.stringify(got)}${where}`);
  };
  check('decided by', expected.decidedBy, observed.decidedBy);
  check('winner', expected.skill_id, observed.skill_id);
  check('decided at (ms)', expected.decidedAt, observed.decidedAt);
  check('handler', expected.handler, observed.handler);
  check('handled at (ms)', expected.handledAt, observed.handledAt);
  if (observed.handledCount !== 1) {
    const stray = observed.strayClassicHandled.length === 0 ? '' : `; ${observed.strayClassicHandled.length} of them from classic CommonQuerySkill ${observed.strayClassicHandled.join(', ')}, which ends every bare question:action it hears, the winner's too (ovos-workshop; the daemon cannot prevent it — make it an @common_query skill)`;
    failures.push(`ovos.utterance.handled sent ${observed.handledCount} times, expected exactly once (OVOS-PIPELINE-1 §6)${stray}${where}`);
  }
  return failures;
}

function detail(message: Message): string {
  const parts: string[] = [];
  for (const key of ['skill_id', 'pipeline_id', 'can_handle', 'can_answer', 'answer', 'conf', 'utterance', 'exception']) {
    const value = message.data[key];
    if (value !== undefined && !(key === 'utterance' && message.type !== 'ovos.utterance.speak')) parts.push(`${key}=${JSON.stringify(value)}`);
  }
  return parts.length === 0 ? '' : ` ${parts.join(' ')}`;
}
