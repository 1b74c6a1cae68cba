/**
 * What the live inspector shows, recorded as it happens: a bounded ring of recent utterances, each with its
 * contests (machine, current state, how it ended), its timeline (every message carrying its utterance_id, every
 * state change and timeout of its contests, every drop tied to it with the reason code, at its ms offset from the
 * utterance's start) and its decision; the last decisions; drops that belong to no utterance.
 *
 * Fed from three places and nothing else: the bus (every message, once), the supervisor's observer (contests
 * started and ended, drops) and, while a page watches (detail mode), XState's inspection protocol on every contest
 * actor (state changes and fired delays). Recording keeps references — one small entry per message, no copies —
 * and views are built only when asked for (the page's feed, an export): measured in test/bench/inspector.ts.
 */
import type { AnyActorRef, InspectionEvent } from 'xstate';
import { isJsonObject, stringField, type Message } from '../bus/message.js';
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
  /** Each stage asked before the decision that gave nothing, and why (`no_match`, `timeout`, `error`, `rejected`). */
  readonly declined: ReadonlyArray<{ readonly stage: string; readonly why: string }>;
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
  /** Whether state changes and timeouts were recorded (a page was connected while it ran); else only final states. */
  readonly detailed: boolean;
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

/** A snapshot value as text: each active leaf by its full path; the regions of a parallel state joined by ", ". */
export function stateText(value: unknown): string {
  return leafPaths(value).join(', ');
}

function leafPaths(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, child]) => {
    const inner = leafPaths(child);
    return inner.length === 0 ? [key] : inner.map((path) => `${key}.${path}`);
  });
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
  /** The last snapshot value seen (a string, or an object for compound states) and its text. */
  value: unknown;
  state: string;
  status: ContestView['status'];
  reason: string | undefined;
  readonly startedAt: number;
  endedAt: number | undefined;
  /** The inspection subscription while a page watches (detail mode). */
  inspection: { unsubscribe(): void } | undefined;
}

/** What is kept per timeline entry: as little as possible, turned into a `TimelineEntry` only when viewed. */
type Raw =
  | { readonly at: number; readonly kind: 'message'; readonly message: Message }
  | { readonly at: number; readonly kind: 'state'; readonly contest: ContestRecord; readonly state: string }
  | { readonly at: number; readonly kind: 'timeout'; readonly contest: ContestRecord; readonly delay: string }
  | { readonly at: number; readonly kind: 'drop'; readonly drop: Drop }
  | { readonly at: number; readonly kind: 'contest'; readonly contest: ContestRecord; readonly ended: boolean }
  | { readonly at: number; readonly kind: 'decision' };

interface Decision {
  readonly time: number;
  readonly afterMs: number;
  readonly outcome: string;
  readonly stage: string | null;
  readonly skill_id: string | null;
  readonly declined: ReadonlyArray<{ readonly stage: string; readonly why: string }>;
}

/** The utterance machine's record of the stages that gave nothing (its `declined` context), read defensively. */
function declinedOf(actor: AnyActorRef): Decision['declined'] {
  const context = (actor.getSnapshot() as { context?: { declined?: unknown } }).context;
  const list = Array.isArray(context?.declined) ? (context.declined as unknown[]) : [];
  return list.flatMap((entry) => {
    const { stage, why } = (entry ?? {}) as { stage?: unknown; why?: unknown };
    return typeof stage === 'string' && typeof why === 'string' ? [{ stage, why }] : [];
  });
}

interface UtteranceRecord {
  readonly key: string;
  readonly sessionId: string;
  readonly utteranceId: string;
  utterance: string;
  readonly start: number;
  readonly time: number;
  readonly contests: ContestRecord[];
  readonly entries: Raw[];
  truncated: number;
  /** The fallback pools when the utterance began, or how to get them (computed when first asked for). */
  pools: Readonly<Record<string, readonly string[]>> | undefined;
  decision: Decision | undefined;
  live: boolean;
  detailed: boolean;
}

export type RecorderChange = { readonly utterance: string } | { readonly stray: StrayDrop };

const keyOf = (sessionId: string, utteranceId: string): string => `${sessionId}\u0000${utteranceId}`;
const where = (contest: ContestRecord): string => `${contest.info.kind}/${contest.info.label}`;

export class InspectorRecorder implements SupervisorObserver {
  readonly #clock: Clock;
  readonly #maxUtterances: number;
  readonly #maxEntries: number;
  readonly #maxDecisions: number;
  readonly #maxStrays: number;
  #poolsFor: PoolsOf | undefined;
  /** utterance_id → its record(s): one, unless two sessions used the same utterance_id. */
  readonly #utterances = new Map<string, UtteranceRecord | UtteranceRecord[]>();
  /** Records in arrival order (the ring). */
  readonly #ring: UtteranceRecord[] = [];
  /** Live contests by id. */
  readonly #contests = new Map<string, { readonly contest: ContestRecord; readonly utterance: UtteranceRecord }>();
  readonly #decisions: UtteranceRecord[] = [];
  readonly #strays: StrayDrop[] = [];
  #listeners: Array<(change: RecorderChange) => void> = [];
  #detailed = false;

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

  /**
   * Detail mode: every contest's state changes and fired delays, through XState's inspection protocol (its
   * `system.inspect`, live contests included). The inspector switches it on while a page is connected; without it
   * the recorder keeps the messages, contests (with the state each ended in), drops and decisions, and XState
   * builds no inspection events at all.
   */
  setDetailed(on: boolean): void {
    if (on === this.#detailed) return;
    this.#detailed = on;
    for (const { contest, utterance } of this.#contests.values()) {
      if (on) {
        contest.inspection ??= contest.actor.system.inspect(this.inspect);
        utterance.detailed = true;
      } else {
        contest.inspection?.unsubscribe();
        contest.inspection = undefined;
      }
    }
  }

  get detailed(): boolean {
    return this.#detailed;
  }

  /** Hear which utterance changed (the feed batches these). Nothing is built for a change nobody listens to. */
  onChange(listener: (change: RecorderChange) => void): Unsubscribe {
    this.#listeners = [...this.#listeners, listener];
    return () => {
      this.#listeners = this.#listeners.filter((l) => l !== listener);
    };
  }

  #find(sessionId: string, utteranceId: string): UtteranceRecord | undefined {
    const found = this.#utterances.get(utteranceId);
    if (found === undefined) return undefined;
    if (!Array.isArray(found)) return found.sessionId === sessionId ? found : undefined;
    return found.find((r) => r.sessionId === sessionId);
  }

  #ensure(sessionId: string, utteranceId: string): UtteranceRecord {
    const existing = this.#find(sessionId, utteranceId);
    if (existing !== undefined) return existing;
    const record: UtteranceRecord = {
      key: keyOf(sessionId, utteranceId),
      sessionId,
      utteranceId,
      utterance: '',
      start: this.#clock.now(),
      time: Date.now(),
      contests: [],
      entries: [],
      truncated: 0,
      pools: undefined,
      decision: undefined,
      live: true,
      detailed: this.#detailed,
    };
    const same = this.#utterances.get(utteranceId);
    this.#utterances.set(utteranceId, same === undefined ? record : Array.isArray(same) ? [...same, record] : [same, record]);
    this.#ring.push(record);
    if (this.#ring.length > this.#maxUtterances) this.#forget(this.#ring.shift()!);
    return record;
  }

  #forget(record: UtteranceRecord): void {
    const same = this.#utterances.get(record.utteranceId);
    if (same === record) this.#utterances.delete(record.utteranceId);
    else if (Array.isArray(same)) {
      const rest = same.filter((r) => r !== record);
      if (rest.length === 1) this.#utterances.set(record.utteranceId, rest[0]!);
      else this.#utterances.set(record.utteranceId, rest);
    }
  }

  #push(record: UtteranceRecord, entry: Raw): void {
    if (record.entries.length >= this.#maxEntries) record.truncated++;
    else record.entries.push(entry);
    for (const listener of this.#listeners) listener({ utterance: record.key });
  }

  #recordOf(message: Message): UtteranceRecord | undefined {
    const context = message.context;
    const utteranceId = context['utterance_id'];
    if (typeof utteranceId === 'string' && this.#utterances.has(utteranceId)) {
      const sessionId = sessionIdOf(message);
      if (sessionId !== undefined) {
        const record = this.#find(sessionId, utteranceId);
        if (record !== undefined) return record;
      }
    }
    const contestId = context['contest_id'];
    return typeof contestId === 'string' ? this.#contests.get(contestId)?.utterance : undefined;
  }

  /** Bus subscriber: every message carrying an utterance_id (or a live contest's contest_id) joins that utterance. */
  readonly onMessage = (message: Message): void => {
    const record = this.#recordOf(message);
    if (record !== undefined) this.#push(record, { at: this.#clock.now() - record.start, kind: 'message', message });
  };

  /** The XState inspection hook (detail mode): state changes and fired delays of every contest. */
  readonly inspect = (event: InspectionEvent): void => {
    if (event.type !== '@xstate.snapshot' && event.type !== '@xstate.event') return;
    const known = this.#contests.get((event.actorRef as AnyActorRef).id);
    if (known === undefined) return;
    const { contest, utterance } = known;
    if (event.type === '@xstate.event') {
      const type = event.event.type;
      if (type.startsWith('xstate.after.')) {
        const delay = type.slice('xstate.after.'.length).split('.')[0] ?? type;
        this.#push(utterance, { at: this.#clock.now() - utterance.start, kind: 'timeout', contest, delay });
      }
      return;
    }
    this.#stateOf(contest, utterance, (event.snapshot as { value?: unknown }).value);
  };

  #stateOf(contest: ContestRecord, utterance: UtteranceRecord, value: unknown): void {
    if (value === contest.value) return;
    const state = stateText(value);
    contest.value = value;
    if (state === contest.state) return;
    contest.state = state;
    this.#push(utterance, { at: this.#clock.now() - utterance.start, kind: 'state', contest, state });
  }

  contestStarted(info: ContestInfo, actor: AnyActorRef, input: unknown): void {
    if (info.utteranceId === undefined) return;
    const utterance = this.#ensure(info.sessionId, info.utteranceId);
    const logicId = (actor as { logic?: { id?: unknown } }).logic?.id;
    const contest: ContestRecord = {
      info,
      actor,
      machineId: typeof logicId === 'string' && Object.hasOwn(DIAGRAMS, logicId) ? logicId : undefined,
      value: undefined,
      state: '',
      status: 'live',
      reason: undefined,
      startedAt: this.#clock.now() - utterance.start,
      endedAt: undefined,
      inspection: this.#detailed ? actor.system.inspect(this.inspect) : undefined,
    };
    utterance.contests.push(contest);
    this.#contests.set(info.id, { contest, utterance });
    if (info.kind === 'utterance') {
      const request = isJsonObject(input) ? input['request'] : undefined;
      const utterances = isJsonObject(request) ? request['utterances'] : undefined;
      if (Array.isArray(utterances) && typeof utterances[0] === 'string') utterance.utterance = utterances[0];
      if (this.#detailed) this.#poolsOf(utterance);
      // The stamped entry message (the one on the bus carried no utterance_id yet).
      const entry = isJsonObject(request) ? request['entry'] : undefined;
      if (isJsonObject(entry) && typeof entry['type'] === 'string' && isJsonObject(entry['data']) && isJsonObject(entry['context'])) {
        this.#push(utterance, { at: contest.startedAt, kind: 'message', message: { type: entry['type'], data: entry['data'], context: entry['context'] } });
      }
    }
    this.#push(utterance, { at: contest.startedAt, kind: 'contest', contest, ended: false });
  }

  contestEnded(info: ContestInfo, result: ContestResult<unknown>): void {
    const known = this.#contests.get(info.id);
    if (known === undefined) return;
    this.#contests.delete(info.id);
    const { contest, utterance } = known;
    // XState reports the final snapshot only after the actor completed, and not at all without detail: read it here.
    this.#stateOf(contest, utterance, (contest.actor.getSnapshot() as { value?: unknown }).value);
    contest.inspection?.unsubscribe();
    contest.inspection = undefined;
    contest.status = result.status === 'done' ? 'done' : result.status;
    contest.reason = result.status === 'stopped' ? result.reason : result.status === 'error' ? 'contest_error' : undefined;
    contest.endedAt = this.#clock.now() - utterance.start;
    this.#push(utterance, { at: contest.endedAt, kind: 'contest', contest, ended: true });
    if (info.kind !== 'utterance') return;
    utterance.live = false;
    const output = result.status === 'done' && isJsonObject(result.output) ? (result.output as { outcome?: unknown; stage?: unknown; match?: { skill_id?: unknown } | null }) : undefined;
    utterance.decision = {
      time: Date.now(),
      afterMs: contest.endedAt,
      outcome: output === undefined ? (contest.reason ?? 'ended') : String(output.outcome),
      stage: typeof output?.stage === 'string' ? output.stage : null,
      skill_id: typeof output?.match?.skill_id === 'string' ? output.match.skill_id : null,
      declined: declinedOf(contest.actor),
    };
    this.#decisions.push(utterance);
    if (this.#decisions.length > this.#maxDecisions) this.#decisions.shift();
    this.#push(utterance, { at: contest.endedAt, kind: 'decision' });
  }

  dropped(drop: Drop): void {
    const record = drop.contest !== undefined ? this.#contests.get(drop.contest.id)?.utterance : drop.message === undefined ? undefined : this.#recordOf(drop.message);
    if (record !== undefined) {
      this.#push(record, { at: this.#clock.now() - record.start, kind: 'drop', drop });
      return;
    }
    const skillId = drop.skillId ?? (drop.message === undefined ? undefined : skillOf(drop.message));
    const stray: StrayDrop = {
      time: Date.now(),
      reason: drop.reason,
      type: drop.type.slice(0, 200),
      session_id: drop.message === undefined ? undefined : sessionIdOf(drop.message)?.slice(0, 200),
      skill_id: skillId?.slice(0, 200),
      detail: drop.detail?.slice(0, 200),
    };
    this.#strays.push(stray);
    if (this.#strays.length > this.#maxStrays) this.#strays.shift();
    for (const listener of this.#listeners) listener({ stray });
  }

  /** Recent utterances, newest first. */
  utterances(): UtteranceView[] {
    return [...this.#ring].reverse().map((record) => this.#view(record));
  }

  utterance(key: string): UtteranceView | undefined {
    const [sessionId = '', utteranceId = ''] = key.split('\u0000');
    const record = this.#find(sessionId, utteranceId);
    return record === undefined ? undefined : this.#view(record);
  }

  /** The last decisions, newest first. */
  decisions(): DecisionView[] {
    return [...this.#decisions].reverse().map((record) => this.#decisionView(record, record.decision!));
  }

  /** Drops tied to no recorded utterance (spoofed, malformed, or for an utterance long gone), newest first. */
  strays(): StrayDrop[] {
    return [...this.#strays].reverse();
  }

  /** One utterance's timeline in the format the timing harness replays (`ovos-contests replay-trace`). */
  trace(key: string): Trace | undefined {
    const [sessionId = '', utteranceId = ''] = key.split('\u0000');
    const record = this.#find(sessionId, utteranceId);
    if (record === undefined) return undefined;
    const messages: TraceEntry[] = [];
    for (const entry of record.entries) if (entry.kind === 'message') messages.push(traceEntry(entry.at, entry.message));
    return { format: TRACE_FORMAT, utterance: record.utterance, session_id: record.sessionId, pools: this.#poolsOf(record), messages };
  }

  /**
   * The fallback pools of the utterance's session, for its trace: taken when first asked for (an export, or the
   * page showing it), so recording pays nothing for them; a page open while the utterance runs takes them then.
   */
  #poolsOf(record: UtteranceRecord): Readonly<Record<string, readonly string[]>> {
    record.pools ??= this.#poolsFor?.(record.sessionId) ?? {};
    return record.pools;
  }

  #decisionView(record: UtteranceRecord, decision: Decision): DecisionView {
    let spoken: Message | undefined;
    for (const entry of record.entries) if (entry.kind === 'message' && (entry.message.type === 'ovos.utterance.speak' || entry.message.type === 'speak')) spoken = entry.message;
    const answer = spoken === undefined ? null : (stringField(spoken.data, 'utterance') ?? null);
    // Common query speaks the selected answer itself: the skill is the one whose response carried that answer.
    let answered: Message | undefined;
    if (answer !== null) {
      for (const entry of record.entries) {
        if (entry.kind === 'message' && entry.message !== spoken && stringField(entry.message.data, 'answer') === answer) {
          answered = entry.message;
          break;
        }
      }
    }
    return {
      key: record.key,
      session_id: record.sessionId,
      utterance_id: record.utteranceId,
      utterance: record.utterance,
      ...decision,
      answer,
      answered_by: answered === undefined ? null : (skillOf(answered) ?? null),
    };
  }

  #entryView(entry: Raw): TimelineEntry {
    switch (entry.kind) {
      case 'message': {
        const skill = skillOf(entry.message);
        return skill === undefined ? { at: entry.at, kind: 'message', type: entry.message.type } : { at: entry.at, kind: 'message', type: entry.message.type, skill_id: skill };
      }
      case 'state':
        return { at: entry.at, kind: 'state', type: entry.state, contest: where(entry.contest) };
      case 'timeout':
        return { at: entry.at, kind: 'timeout', type: entry.delay, contest: where(entry.contest) };
      case 'contest': {
        const reason = entry.ended ? entry.contest.reason : undefined;
        const view = { at: entry.at, kind: 'contest' as const, type: `${where(entry.contest)} ${entry.ended ? 'ended' : 'started'}`, contest: where(entry.contest) };
        return reason === undefined ? view : { ...view, reason };
      }
      case 'drop': {
        const { drop } = entry;
        const skillId = drop.skillId ?? (drop.message === undefined ? undefined : skillOf(drop.message));
        return {
          at: entry.at,
          kind: 'drop',
          type: drop.type,
          reason: drop.reason,
          ...(skillId === undefined ? {} : { skill_id: skillId }),
          ...(drop.contest === undefined ? {} : { contest: `${drop.contest.kind}/${drop.contest.label}` }),
          ...(drop.detail === undefined ? {} : { detail: drop.detail }),
        };
      }
      case 'decision':
        return { at: entry.at, kind: 'decision', type: '' };
    }
  }

  #view(record: UtteranceRecord): UtteranceView {
    const decision = record.decision === undefined ? undefined : this.#decisionView(record, record.decision);
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
        active: c.machineId === undefined ? [] : activeNodes(c.machineId, c.value),
        status: c.status,
        ...(c.reason === undefined ? {} : { reason: c.reason }),
        startedAt: c.startedAt,
        ...(c.endedAt === undefined ? {} : { endedAt: c.endedAt }),
      })),
      timeline: record.entries.map((entry) => {
        const view = this.#entryView(entry);
        if (entry.kind !== 'decision' || decision === undefined) return view;
        return decision.skill_id === null
          ? { ...view, type: decision.outcome }
          : { ...view, type: decision.outcome, skill_id: decision.skill_id, ...(decision.stage === null ? {} : { detail: decision.stage }) };
      }),
      truncated: record.truncated,
      detailed: record.detailed,
      decision,
    };
  }
}

/**
 * Create the contest system with `recorder` attached the one way that records everything once: the recorder
 * subscribes to the bus before the supervisor does (an utterance's own entry message is recorded from the
 * orchestrator's stamped copy, not twice) and observes the supervisor, which hands it every contest actor (it
 * attaches XState's inspection to them in detail mode). `options.inspect`, an embedder's own hook, is unaffected.
 * `detach` undoes the subscriptions (the system's own `close` is separate).
 */
export function createRecordedSystem(recorder: InspectorRecorder, options: SystemOptions): { readonly system: ContestSystem; readonly detach: () => void } {
  const unsubscribe = options.bus.subscribe(recorder.onMessage);
  const system = createContestSystem(options);
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
