/**
 * What the live inspector shows, recorded as it happens: a bounded ring of recent utterances, each with its
 * contests (machine, current state, how it ended), its timeline (every message carrying its utterance_id, every
 * state change and timeout of its contests, every drop tied to it with the reason code, at its ms offset from the
 * utterance's start) and its decision; the last decisions; drops that belong to no utterance.
 *
 * Fed from three places and nothing else: the bus (every message, once), the one XState inspection hook (state
 * changes and delayed events of every contest actor) and the supervisor's observer (contests started and ended,
 * drops). Recording is a few map lookups and array pushes per message; views are built only when asked for (the
 * page's feed, an export), so a daemon with no browser connected pays next to nothing (README, bench figure).
 */
import type { AnyActorRef, InspectionEvent } from 'xstate';
import { isJsonObject, stringField, utteranceIdOf, type Message } from '../bus/message.js';
import { sessionIdOf } from '../bus/session.js';
import type { Clock } from '../clock/clock.js';
import type { Unsubscribe } from '../bus/bus.js';
import type { ContestInfo, ContestResult, Drop, SupervisorObserver } from '../supervisor/supervisor.js';
import { TRACE_FORMAT, traceEntry, type Trace, type TraceEntry } from '../testing/trace.js';
import { createContestSystem, type ContestSystem, type SystemOptions } from '../system.js';

export type TimelineKind = 'message' | 'state' | 'timeout' | 'drop' | 'contest' | 'decision';

export interface TimelineEntry {
  /** ms since the utterance's start. */
  readonly at: number;
  readonly kind: TimelineKind;
  /** The topic, the state entered, the delay that fired, or the dropped message's topic. */
  readonly type: string;
  readonly skill_id?: string;
  /** `kind/label` of the contest it happened in. */
  readonly contest?: string;
  /** Drop reason code, or how a contest ended. */
  readonly reason?: string;
  readonly detail?: string;
}

export interface ContestView {
  readonly id: string;
  readonly kind: string;
  readonly label: string;
  /** The diagram it is drawn on (`/diagrams/<machine>.svg`), when its logic is one of our machines. */
  readonly machine: string | undefined;
  /** The current (or final) state, dotted: `polling.open`. */
  readonly state: string;
  /** The diagram nodes to highlight: leaf states and the clusters of their compound parents (DOT names). */
  readonly active: readonly string[];
  readonly status: 'live' | 'done' | 'stopped' | 'error';
  readonly reason?: string;
  readonly startedAt: number;
  readonly endedAt?: number;
}

export interface DecisionView {
  readonly key: string;
  readonly session_id: string;
  readonly utterance_id: string;
  readonly utterance: string;
  /** Wall-clock time of the decision (epoch ms). */
  readonly time: number;
  /** ms from the utterance's start to its end. */
  readonly afterMs: number;
  /** `completed`, `unmatched`, `handler_error`, `handler_timeout`, or why the utterance ended early. */
  readonly outcome: string;
  readonly stage: string | null;
  readonly skill_id: string | null;
  /** What was spoken for it, if anything. */
  readonly answer: string | null;
  /** The skill whose answer was spoken, when a plugin (common query) spoke it for that skill. */
  readonly answered_by: string | null;
}

export interface UtteranceView {
  readonly key: string;
  readonly session_id: string;
  readonly utterance_id: string;
  readonly utterance: string;
  /** Wall-clock start (epoch ms). */
  readonly time: number;
  readonly live: boolean;
  readonly contests: readonly ContestView[];
  readonly timeline: readonly TimelineEntry[];
  /** Timeline entries left out past the per-utterance bound. */
  readonly truncated: number;
  readonly decision: DecisionView | undefined;
}

export interface StrayDrop {
  readonly time: number;
  readonly reason: string;
  readonly type: string;
  readonly session_id: string | undefined;
  readonly skill_id: string | undefined;
  readonly detail: string | undefined;
}

export interface RecorderOptions {
  readonly clock: Clock;
  /** Utterances kept (the ring); the oldest is forgotten first. */
  readonly maxUtterances?: number;
  /** Timeline entries (and trace messages) kept per utterance. */
  readonly maxEntries?: number;
  readonly maxDecisions?: number;
  readonly maxStrays?: number;
}

/** The fallback pools a session would be asked in, per stage, for a trace (`Trace.pools`). */
export type PoolsOf = (sessionId: string) => Readonly<Record<string, readonly string[]>>;

/** XState machine id → the diagram it is drawn on (visualizations/<name>.machine.svg). */
const DIAGRAMS: Readonly<Record<string, string>> = { fallback: 'fallback', commonQuery: 'common-query', utterance: 'utterance' };

const dotName = (name: string): string => name.replace(/[^A-Za-z0-9_]/g, '_');

/** The DOT names of the active state nodes of a snapshot value (src/inspect/diagram.ts names them the same way). */
export function activeNodes(machineId: string, value: unknown): string[] {
  if (typeof value === 'string') return [dotName(`${machineId}_${value}`)];
  if (value === null || typeof value !== 'object') return [];
  const nodes: string[] = [];
  for (const [key, child] of Object.entries(value)) {
    const name = dotName(`${machineId}_${key}`);
    nodes.push(`cluster_${name}`, ...activeNodes(name, child));
  }
  return nodes;
}

export function stateText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === null || typeof value !== 'object') return '';
  return Object.entries(value).map(([key, child]) => {
    const inner = stateText(child);
    return inner === '' ? key : `${key}.${inner}`;
  }).join(', ');
}

/** The skill a message is from or for: `data.skill_id`, `context.skill_id`, else the topic's `<skill_id>.` or `<skill_id>:` prefix. */
export function skillOf(message: Message): string | undefined {
  const named = stringField(message.data, 'skill_id') ?? stringField(message.context, 'skill_id');
  if (named !== undefined) return named;
  const type = message.type;
  const colon = type.indexOf(':');
  if (colon > 0 && !type.startsWith('recognizer_loop') && !type.startsWith('question')) return type.slice(0, colon);
  for (const suffix of ['.fallback.ping', '.fallback.pong', '.common_query.response']) if (type.endsWith(suffix)) return type.slice(0, -suffix.length);
  return undefined;
}

interface ContestRecord {
  readonly info: ContestInfo;
  readonly actor: AnyActorRef;
  readonly machineId: string | undefined;
  state: string;
  active: readonly string[];
  status: ContestView['status'];
  reason: string | undefined;
  readonly startedAt: number;
  endedAt: number | undefined;
}

interface UtteranceRecord {
  readonly key: string;
  readonly sessionId: string;
  readonly utteranceId: string;
  utterance: string;
  readonly start: number;
  readonly time: number;
  readonly contests: ContestRecord[];
  readonly timeline: TimelineEntry[];
  readonly messages: TraceEntry[];
  truncated: number;
  pools: Readonly<Record<string, readonly string[]>>;
  decision: DecisionView | undefined;
  live: boolean;
}

export type RecorderChange = { readonly utterance: string } | { readonly stray: StrayDrop };

const keyOf = (sessionId: string, utteranceId: string): string => `${sessionId}\u0000${utteranceId}`;

export class InspectorRecorder implements SupervisorObserver {
  readonly #clock: Clock;
  readonly #maxUtterances: number;
  readonly #maxEntries: number;
  readonly #maxDecisions: number;
  readonly #maxStrays: number;
  #poolsFor: PoolsOf | undefined;
  readonly #utterances = new Map<string, UtteranceRecord>();
  /** Live contests by id, with the utterance they belong to. */
  readonly #contests = new Map<string, { readonly contest: ContestRecord; readonly utterance: UtteranceRecord }>();
  readonly #decisions: DecisionView[] = [];
  readonly #strays: StrayDrop[] = [];
  #listeners: Array<(change: RecorderChange) => void> = [];

  constructor(options: RecorderOptions) {
    this.#clock = options.clock;
    this.#maxUtterances = options.maxUtterances ?? 200;
    this.#maxEntries = options.maxEntries ?? 400;
    this.#maxDecisions = options.maxDecisions ?? 100;
    this.#maxStrays = options.maxStrays ?? 100;
  }

  /** Where a trace's pools come from (createRecordedSystem sets the fallback plugin's). */
  usePools(poolsOf: PoolsOf): void {
    this.#poolsFor = poolsOf;
  }

  /** Hear which utterance changed (the feed batches these). Nothing is built for a change nobody listens to. */
  onChange(listener: (change: RecorderChange) => void): Unsubscribe {
    this.#listeners = [...this.#listeners, listener];
    return () => {
      this.#listeners = this.#listeners.filter((l) => l !== listener);
    };
  }

  #changed(change: RecorderChange): void {
    for (const listener of this.#listeners) listener(change);
  }

  #ensure(sessionId: string, utteranceId: string): UtteranceRecord {
    const key = keyOf(sessionId, utteranceId);
    let record = this.#utterances.get(key);
    if (record !== undefined) return record;
    record = {
      key,
      sessionId,
      utteranceId,
      utterance: '',
      start: this.#clock.now(),
      time: Date.now(),
      contests: [],
      timeline: [],
      messages: [],
      truncated: 0,
      pools: {},
      decision: undefined,
      live: true,
    };
    this.#utterances.set(key, record);
    if (this.#utterances.size > this.#maxUtterances) {
      const oldest = this.#utterances.keys().next().value;
      if (oldest !== undefined) this.#utterances.delete(oldest);
    }
    return record;
  }

  #push(record: UtteranceRecord, entry: Omit<TimelineEntry, 'at'>): void {
    if (record.timeline.length >= this.#maxEntries) {
      record.truncated++;
      return;
    }
    record.timeline.push({ at: this.#clock.now() - record.start, ...entry });
    this.#changed({ utterance: record.key });
  }

  /** Bus subscriber: every message carrying an utterance_id (or a live contest's contest_id) joins that utterance. */
  readonly onMessage = (message: Message): void => {
    let record: UtteranceRecord | undefined;
    const utteranceId = utteranceIdOf(message);
    const sessionId = sessionIdOf(message);
    if (utteranceId !== undefined && sessionId !== undefined) record = this.#utterances.get(keyOf(sessionId, utteranceId));
    if (record === undefined) {
      const contestId = stringField(message.context, 'contest_id');
      if (contestId !== undefined) record = this.#contests.get(contestId)?.utterance;
    }
    if (record === undefined) return;
    const skill = skillOf(message);
    if (record.messages.length < this.#maxEntries) record.messages.push(traceEntry(this.#clock.now() - record.start, message));
    this.#push(record, skill === undefined ? { kind: 'message', type: message.type } : { kind: 'message', type: message.type, skill_id: skill });
  };

  /** The XState inspection hook: state changes and fired delays of every contest the supervisor spawned. */
  readonly inspect = (event: InspectionEvent): void => {
    if (event.type !== '@xstate.snapshot' && event.type !== '@xstate.event') return;
    const known = this.#contests.get((event.actorRef as AnyActorRef).id);
    if (known === undefined) return;
    const { contest, utterance } = known;
    if (event.type === '@xstate.event') {
      const type = event.event.type;
      if (type.startsWith('xstate.after.')) {
        const delay = type.slice('xstate.after.'.length).split('.')[0] ?? type;
        this.#push(utterance, { kind: 'timeout', type: delay, contest: `${contest.info.kind}/${contest.info.label}` });
      }
      return;
    }
    this.#stateOf(contest, utterance, (event.snapshot as { value?: unknown }).value);
  };

  #stateOf(contest: ContestRecord, utterance: UtteranceRecord, value: unknown): void {
    const state = stateText(value);
    if (state === contest.state) return;
    contest.state = state;
    contest.active = contest.machineId === undefined ? [] : activeNodes(contest.machineId, value);
    this.#push(utterance, { kind: 'state', type: state, contest: `${contest.info.kind}/${contest.info.label}` });
  }

  contestStarted(info: ContestInfo, actor: AnyActorRef, input: unknown): void {
    if (info.utteranceId === undefined) return;
    const utterance = this.#ensure(info.sessionId, info.utteranceId);
    const logicId = (actor as { logic?: { id?: unknown } }).logic?.id;
    const machineId = typeof logicId === 'string' && Object.hasOwn(DIAGRAMS, logicId) ? logicId : undefined;
    const contest: ContestRecord = {
      info,
      actor,
      machineId,
      state: '',
      active: [],
      status: 'live',
      reason: undefined,
      startedAt: this.#clock.now() - utterance.start,
      endedAt: undefined,
    };
    utterance.contests.push(contest);
    this.#contests.set(info.id, { contest, utterance });
    if (info.kind === 'utterance') {
      const request = isJsonObject(input) ? input['request'] : undefined;
      const utterances = isJsonObject(request) ? request['utterances'] : undefined;
      if (Array.isArray(utterances) && typeof utterances[0] === 'string') utterance.utterance = utterances[0];
      if (this.#poolsFor !== undefined) utterance.pools = this.#poolsFor(info.sessionId);
      const entry = isJsonObject(request) ? request['entry'] : undefined;
      if (isJsonObject(entry) && typeof entry['type'] === 'string' && isJsonObject(entry['data']) && isJsonObject(entry['context'])) {
        utterance.messages.push(traceEntry(0, { type: entry['type'], data: entry['data'], context: entry['context'] }));
        this.#push(utterance, { kind: 'message', type: entry['type'] });
      }
    }
    this.#push(utterance, { kind: 'contest', type: `${info.kind}/${info.label} started`, contest: `${info.kind}/${info.label}` });
  }

  contestEnded(info: ContestInfo, result: ContestResult<unknown>): void {
    const known = this.#contests.get(info.id);
    if (known === undefined) return;
    this.#contests.delete(info.id);
    const { contest, utterance } = known;
    // XState reports the final snapshot to the inspection hook only after the actor completed: read it here.
    this.#stateOf(contest, utterance, (contest.actor.getSnapshot() as { value?: unknown }).value);
    contest.status = result.status === 'done' ? 'done' : result.status;
    contest.reason = result.status === 'stopped' ? result.reason : result.status === 'error' ? 'contest_error' : undefined;
    contest.endedAt = this.#clock.now() - utterance.start;
    const where = `${info.kind}/${info.label}`;
    this.#push(utterance, contest.reason === undefined ? { kind: 'contest', type: `${where} ended`, contest: where } : { kind: 'contest', type: `${where} ended`, contest: where, reason: contest.reason });
    if (info.kind !== 'utterance') return;
    utterance.live = false;
    const output = result.status === 'done' && isJsonObject(result.output) ? (result.output as { outcome?: unknown; stage?: unknown; match?: { skill_id?: unknown } | null }) : undefined;
    const spoken = [...utterance.messages].reverse().find((m) => m.type === 'ovos.utterance.speak' || m.type === 'speak');
    const answer = spoken === undefined ? null : (stringField(spoken.data, 'utterance') ?? null);
    // Common query speaks the selected answer itself: the skill is the one whose response carried that answer.
    const answered = answer === null ? undefined : utterance.messages.find((m) => m !== spoken && stringField(m.data, 'answer') === answer);
    const decision: DecisionView = {
      key: utterance.key,
      session_id: utterance.sessionId,
      utterance_id: utterance.utteranceId,
      utterance: utterance.utterance,
      time: Date.now(),
      afterMs: contest.endedAt,
      outcome: output === undefined ? (contest.reason ?? 'ended') : String(output.outcome),
      stage: typeof output?.stage === 'string' ? output.stage : null,
      skill_id: typeof output?.match?.skill_id === 'string' ? output.match.skill_id : null,
      answer,
      answered_by: answered === undefined ? null : (stringField(answered.data, 'skill_id') ?? skillOf({ type: answered.type, data: answered.data, context: answered.context }) ?? null),
    };
    utterance.decision = decision;
    this.#decisions.push(decision);
    if (this.#decisions.length > this.#maxDecisions) this.#decisions.shift();
    this.#push(utterance, decision.skill_id === null
      ? { kind: 'decision', type: decision.outcome }
      : { kind: 'decision', type: decision.outcome, skill_id: decision.skill_id, detail: decision.stage ?? undefined });
  }

  dropped(drop: Drop): void {
    let record: UtteranceRecord | undefined;
    if (drop.contest !== undefined) record = this.#contests.get(drop.contest.id)?.utterance;
    else if (drop.message !== undefined) {
      const utteranceId = utteranceIdOf(drop.message);
      const sessionId = sessionIdOf(drop.message);
      if (utteranceId !== undefined && sessionId !== undefined) record = this.#utterances.get(keyOf(sessionId, utteranceId));
      const contestId = stringField(drop.message.context, 'contest_id');
      if (record === undefined && contestId !== undefined) record = this.#contests.get(contestId)?.utterance;
    }
    const skillId = drop.skillId ?? (drop.message === undefined ? undefined : skillOf(drop.message));
    if (record !== undefined) {
      const where = drop.contest === undefined ? undefined : `${drop.contest.kind}/${drop.contest.label}`;
      this.#push(record, {
        kind: 'drop',
        type: drop.type,
        reason: drop.reason,
        ...(skillId === undefined ? {} : { skill_id: skillId }),
        ...(where === undefined ? {} : { contest: where }),
        ...(drop.detail === undefined ? {} : { detail: drop.detail }),
      });
      return;
    }
    const stray: StrayDrop = {
      time: Date.now(),
      reason: drop.reason,
      type: drop.type.slice(0, 200),
      session_id: drop.message === undefined ? undefined : sessionIdOf(drop.message),
      skill_id: skillId?.slice(0, 200),
      detail: drop.detail,
    };
    this.#strays.push(stray);
    if (this.#strays.length > this.#maxStrays) this.#strays.shift();
    this.#changed({ stray });
  }

  /** Recent utterances, newest first. */
  utterances(): UtteranceView[] {
    return [...this.#utterances.values()].reverse().map((record) => this.#view(record));
  }

  utterance(key: string): UtteranceView | undefined {
    const record = this.#utterances.get(key);
    return record === undefined ? undefined : this.#view(record);
  }

  /** The last decisions, newest first. */
  decisions(): DecisionView[] {
    return [...this.#decisions].reverse();
  }

  /** Drops tied to no recorded utterance (spoofed, malformed, or for an utterance long gone), newest first. */
  strays(): StrayDrop[] {
    return [...this.#strays].reverse();
  }

  /** One utterance's timeline in the format the timing harness replays (`ovos-contests replay-trace`). */
  trace(key: string): Trace | undefined {
    const record = this.#utterances.get(key);
    if (record === undefined) return undefined;
    return { format: TRACE_FORMAT, utterance: record.utterance, session_id: record.sessionId, pools: record.pools, messages: [...record.messages] };
  }

  #view(record: UtteranceRecord): UtteranceView {
    return {
      key: record.key,
      session_id: record.sessionId,
      utterance_id: record.utteranceId,
      utterance: record.utterance,
      time: record.time,
      live: record.live,
      contests: record.contests.map((c) => ({
        id: c.info.id,
        kind: c.info.kind,
        label: c.info.label,
        machine: c.machineId === undefined ? undefined : DIAGRAMS[c.machineId],
        state: c.state,
        active: c.active,
        status: c.status,
        ...(c.reason === undefined ? {} : { reason: c.reason }),
        startedAt: c.startedAt,
        ...(c.endedAt === undefined ? {} : { endedAt: c.endedAt }),
      })),
      timeline: [...record.timeline],
      truncated: record.truncated,
      decision: record.decision,
    };
  }
}

/**
 * Create the contest system with `recorder` attached the one way that records everything once: the recorder
 * subscribes to the bus before the supervisor does (an utterance's own entry message is recorded from the
 * orchestrator's stamped copy, not twice), gets the inspection hook, and observes the supervisor. `detach` undoes
 * the subscriptions (the system's own `close` is separate).
 */
export function createRecordedSystem(recorder: InspectorRecorder, options: Omit<SystemOptions, 'inspect'>): { readonly system: ContestSystem; readonly detach: () => void } {
  const unsubscribe = options.bus.subscribe(recorder.onMessage);
  const system = createContestSystem({ ...options, inspect: recorder.inspect });
  const unobserve = system.supervisor.observe(recorder);
  // What `ovos.pipeline.<stage>.intents.list` would answer for the session: the pools as `say --trace` records them.
  recorder.usePools((sessionId) =>
    Object.fromEntries(Object.entries(system.config.fallback.stages).map(([stage, range]) => [stage, system.fallback.pool({ sessionId, blacklistedSkills: [] }, range)])),
  );
  return {
    system,
    detach: () => {
      unobserve();
      unsubscribe();
    },
  };
}
