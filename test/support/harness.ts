/**
 * Test harness: the whole actor system on an in-process bus and a deterministic clock, plus scripted skills.
 * Every message on the bus is recorded, so tests assert what a user would see on the wire.
 *
 * The harness's config (`HARNESS_CONFIG`, and `withConfig`'s starting point) is the default one past the common-query
 * cold start (`commonQuery.warmupPolls: 0`): the tests of the poll's rules are of a deployment that has run a while,
 * and the cold start (src/plugins/README.md "Common-query poll") has tests of its own that set `warmupPolls`.
 */
import { LocalBus } from '../../src/bus/local-bus.js';
import { createMessage, forward, reply, type JsonObject, type Message } from '../../src/bus/message.js';
import { ManualClock } from '../../src/clock/manual-clock.js';
import { DEFAULT_CONFIG, type Config } from '../../src/config/defaults.js';
import type { Reranker } from '../../machines/common-query/selection.js';
import { createContestSystem, type ContestSystem } from '../../src/system.js';
import { createRecordedSystem, InspectorRecorder, type RecorderOptions } from '../../src/inspect/recorder.js';
import type { RegistryStore } from '../../src/plugins/fallback/registry-store.js';
import { pino } from 'pino';
import { Writable } from 'node:stream';

export interface Harness {
  readonly bus: LocalBus;
  readonly clock: ManualClock;
  readonly system: ContestSystem;
  /** The live inspector's recorder, wired as the daemon wires it (only with `options.recorder`). */
  readonly recorder: InspectorRecorder | undefined;
  readonly wire: Message[];
  readonly logs: Array<Record<string, unknown>>;
  /** Messages of one type, in order. */
  of(type: string): Message[];
  /** Types seen for one session, in order. */
  timeline(sessionId: string): string[];
  /** Let promise continuations run (no real time passes). */
  settle(): Promise<void>;
  /** Advance the clock by `ms`, letting promise continuations run between due timers. */
  advance(ms: number): Promise<void>;
  utter(utterance: string, options?: { session?: JsonObject; lang?: string; utteranceId?: string }): Message;
}

/** The default config past the common-query cold start (see the top of this file). */
export const HARNESS_CONFIG: Config = { ...DEFAULT_CONFIG, commonQuery: { ...DEFAULT_CONFIG.commonQuery, warmupPolls: 0 } };

export function withConfig(patch: (config: Config) => Config): Config {
  return patch(structuredClone(HARNESS_CONFIG) as Config);
}

/** More due instants than this within one `advance` is a timer loop, not a contest. */
const MAX_ADVANCE_STEPS = 100_000;

export function createHarness(
  config: Config = HARNESS_CONFIG,
  options: {
    reranker?: Reranker;
    recorder?: Omit<RecorderOptions, 'clock'>;
    /** A bus of the test's own (one that reports status changes, say); a fresh LocalBus otherwise. */
    bus?: LocalBus;
    /** The fallback registry file, opened on the harness's clock (a daemon restart: a second harness on the same file). */
    registryStore?: (clock: ManualClock) => RegistryStore;
  } = {},
): Harness {
  const bus = options.bus ?? new LocalBus();
  const clock = new ManualClock();
  const wire: Message[] = [];
  const logs: Array<Record<string, unknown>> = [];
  bus.subscribe((m) => wire.push(m));
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const line of String(chunk).split('\n')) if (line) logs.push(JSON.parse(line) as Record<string, unknown>);
      cb();
    },
  });
  const logger = pino({ level: 'debug' }, sink);
  const systemOptions = {
    bus,
    clock,
    config,
    logger,
    ...(options.reranker ? { reranker: options.reranker } : {}),
    ...(options.registryStore ? { registryStore: options.registryStore(clock) } : {}),
  };
  const recorder = options.recorder === undefined ? undefined : new InspectorRecorder({ clock, ...options.recorder });
  const system = recorder === undefined ? createContestSystem(systemOptions) : createRecordedSystem(recorder, systemOptions).system;
  const settle = async (): Promise<void> => {
    for (let i = 0; i < 10; i++) await new Promise<void>((resolve) => setImmediate(resolve));
  };
  return {
    bus,
    clock,
    system,
    recorder,
    wire,
    logs,
    of: (type) => wire.filter((m) => m.type === type),
    timeline: (sessionId) =>
      wire
        .filter((m) => {
          const s = m.context['session'];
          return typeof s === 'object' && s !== null && !Array.isArray(s) && (s['session_id'] ?? 'default') === sessionId;
        })
        .map((m) => m.type),
    settle,
    advance: async (ms) => {
      // From one due timer to the next, settling at each, so promise continuations armed by a timer run (and may arm
      // timers of their own) before the next timer is due; then to the end of the span.
      if (!(ms >= 0)) throw new Error(`harness.advance: ${ms} ms — time only moves forward`);
      const end = clock.now() + ms;
      await settle();
      let steps = 0;
      for (let next = clock.nextDue(); next !== undefined && next <= end; next = clock.nextDue()) {
        // A timer that keeps re-arming itself at 0 ms would otherwise never let the span end.
        if (++steps > MAX_ADVANCE_STEPS) throw new Error(`harness.advance: more than ${MAX_ADVANCE_STEPS} timer instants in ${ms} ms — a timer re-arming itself at 0 ms?`);
        clock.advance(next - clock.now());
        await settle();
      }
      clock.advance(end - clock.now());
      await settle();
    },
    utter: (utterance, options = {}) => {
      const context: JsonObject = { source: 'test', destination: 'orchestrator', session: options.session ?? { session_id: 'default' } };
      if (options.utteranceId !== undefined) context['utterance_id'] = options.utteranceId;
      const message = createMessage('ovos.utterance.handle', { utterances: [utterance], ...(options.lang ? { lang: options.lang } : {}) }, context);
      bus.publish(message);
      return message;
    },
  };
}

/** A scripted fallback skill on the bus: registers, answers pings per `decide`, completes its handler. */
export function fallbackSkill(
  h: Harness,
  skillId: string,
  priority: number,
  behaviour: {
    decide?: (utterance: string) => boolean | 'silent';
    session?: JsonObject;
    onDispatch?: (dispatch: Message) => 'complete' | 'error' | 'silent';
  } = {},
): { pings: Message[] } {
  const pings: Message[] = [];
  h.bus.subscribe((m) => {
    if (m.type === `${skillId}.fallback.ping`) {
      pings.push(m);
      const utterances = m.data['utterances'];
      const first = Array.isArray(utterances) && typeof utterances[0] === 'string' ? utterances[0] : '';
      const verdict = behaviour.decide ? behaviour.decide(first) : true;
      if (verdict !== 'silent') h.bus.publish(reply(m, `${skillId}.fallback.pong`, { skill_id: skillId, can_handle: verdict }));
    } else if (m.type === `${skillId}:fallback`) {
      const outcome = behaviour.onDispatch ? behaviour.onDispatch(m) : 'complete';
      if (outcome === 'silent') return;
      h.bus.publish(forward(m, 'ovos.utterance.speak', { utterance: `${skillId} says hi` }));
      h.bus.publish(reply(m, outcome === 'complete' ? 'mycroft.skill.handler.complete' : 'mycroft.skill.handler.error', outcome === 'error' ? { exception: 'boom' } : {}));
    }
  });
  h.bus.publish(createMessage('ovos.fallback.register', { skill_id: skillId, priority }, { skill_id: skillId, session: behaviour.session ?? { session_id: 'default' } }));
  return { pings };
}
