/**
 * What the live inspector shows, recorded as it happens: a bounded ring of recent utterances, each with its
 * contests (machine, current state, how it ended), its timeline (every message carrying its utterance_id, every
 * state change and timeout of its contests, every drop tied to it with the reason code, at its ms offset from the
 * utterance's start) and its decision; the last decisions; drops that belong to no utterance.
 *
 * Fed from three places and nothing else: the bus (every message, once), the supervisor's observer (contests
 * started and ended, drops) and, while a page watches (detail mode), XState's inspection protocol on every contest
 * actor (state changes and fired delays). Recording keeps references — one small entry per message, a copy only
 * of a message too large to keep whole — and views are built only when asked for (the page's feed, an export): measured in test/bench/inspector.ts.
 *
 * What it holds is bounded in bytes as well as in entries, whatever a client sends: a message whose JSON is past
 * `MESSAGE_CAP_BYTES` is recorded as a clipped copy (long strings cut, long lists and deep nesting summarised), each
 * utterance counts the bytes it keeps, and past `maxBytes` in all the oldest utterances are forgotten first. An
 * utterance forgotten while it runs records nothing more. Sizes are estimates of the JSON text (a character a
 * byte, a number or literal 8 bytes) plus a fixed cost per object kept, counted without serialising anything.
 */
import type { AnyActorRef, InspectionEvent } from 'xstate';
import { isJsonObject, MAX_FRAME_DEPTH, MAX_TYPE_LENGTH, stringField, type Json, type JsonObject, type Message } from '../bus/message.js';
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
  /** A message recorded as a clipped copy (its JSON was past `MESSAGE_CAP_BYTES`); `detail` says how large it was. */
  readonly clipped?: true;
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
  /** Bytes kept for all utterances together (estimated, see above); past it the oldest is forgotten first. */
  readonly maxBytes?: number;
}

/** A recorded message whose JSON is past this is kept as a clipped copy, never whole. */
export const MESSAGE_CAP_BYTES = 8 * 1024;
/** The recorder's default byte budget (`inspector.maxBytes`). */
const DEFAULT_MAX_BYTES = 32 * 1024 * 1024;
/** In a clipped copy: characters kept of a string, of a key; items kept of a list or object; levels kept. */
const CLIP_TEXT = 1024;
const CLIP_KEY = 128;
const CLIP_ITEMS = 32;
const CLIP_DEPTH = 8;
/** How far a clipped message's original size is counted, to say how large it was (a frame is far smaller). */
const ORIGINAL_LIMIT_BYTES = 64 * 1024 * 1024;
/** Characters kept of each field of a stray drop. */
const STRAY_TEXT = 200;
/** What the recorder's own objects cost besides the strings they hold (estimates, counted towards `maxBytes`). */
const RECORD_BYTES = 512;
const CONTEST_BYTES = 256;
const ENTRY_BYTES = 64;
const DECISION_BYTES = 128;

/**
 * The size of `value` as JSON text, estimated (a character a byte, a number or literal 8 bytes) and counted only
 * until it passes `limit`: the walk stops there, so a huge value costs no more to measure than a small one. Nesting
 * deeper than a frame may (MAX_FRAME_DEPTH) measures as Infinity. Allocates nothing.
 */
function jsonBytes(value: unknown, limit = Number.POSITIVE_INFINITY): number {
  return measure(value, 0, limit, 0);
}

function measure(value: unknown, total: number, limit: number, depth: number): number {
  if (typeof value === 'string') return total + value.length + 2;
  if (typeof value !== 'object' || value === null) return total + 8;
  return measureIn(value, total, limit, depth);
}

/** `measure` of a list or object. Strings and literals inside are counted in the loop: most of a message is leaves. */
function measureIn(value: object, total: number, limit: number, depth: number): number {
  if (depth >= MAX_FRAME_DEPTH) return Number.POSITIVE_INFINITY;
  total += 2;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      if (typeof item === 'string') total += item.length + 3;
      else if (typeof item !== 'object' || item === null) total += 9;
      else total = measureIn(item, total + 1, limit, depth + 1);
      if (total > limit) return total;
    }
    return total;
  }
  for (const key in value) {
    const item: unknown = (value as Record<string, unknown>)[key];
    if (typeof item === 'string') total += key.length + item.length + 6;
    else if (typeof item !== 'object' || item === null) total += key.length + 12;
    else total = measureIn(item, total + key.length + 4, limit, depth + 1);
    if (total > limit) return total;
  }
  return total;
}

/** A message's JSON size (`jsonBytes`), counted until it passes `limit`. */
function messageBytes(message: Message, limit = Number.POSITIVE_INFINITY): number {
  const total = measureIn(message.data, message.type.length + 32, limit, 1);
  return total > limit ? total : measureIn(message.context, total, limit, 1);
}

/**
 * `text` as kept: itself when at most `max` characters; else its first `max` characters and how many were cut,
 * copied into a string of its own (a slice would keep the whole original alive).
 */
function clipText(text: string, max: number): string {
  if (text.length <= max) return text;
  return Buffer.from(`${text.slice(0, max)}…[clipped ${text.length - max} chars]`, 'utf16le').toString('utf16le');
}

/** What a clipped copy may still take, shared by everything copied into one object. */
interface Room {
  left: number;
}

function clipJson(value: Json, room: Room, depth: number): Json {
  if (typeof value === 'string') {
    const text = clipText(value, CLIP_TEXT);
    room.left -= text.length + 2;
    return text;
  }
  if (typeof value !== 'object' || value === null) {
    room.left -= 8;
    return value;
  }
  if (depth >= CLIP_DEPTH) {
    room.left -= 32;
    return Array.isArray(value) ? ['…[clipped: nested deeper]'] : { '…': '[clipped: nested deeper]' };
  }
  room.left -= 2;
  if (Array.isArray(value)) {
    const items: Json[] = [];
    for (const item of value) {
      if (items.length === CLIP_ITEMS || room.left <= 0) {
        items.push(`…[clipped ${value.length - items.length} items]`);
        break;
      }
      room.left -= 1;
      items.push(clipJson(item, room, depth + 1));
    }
    return items;
  }
  return clipObject(value, room, depth);
}

function clipObject(value: JsonObject, room: Room, depth: number): JsonObject {
  const entries: Array<[string, Json]> = [];
  for (const key in value) {
    if (entries.length === CLIP_ITEMS || room.left <= 0) {
      entries.push(['…', '[clipped: more keys]']);
      break;
    }
    const name = clipText(key, CLIP_KEY);
    room.left -= name.length + 4;
    entries.push([name, clipJson(value[key]!, room, depth + 1)]);
  }
  // fromEntries defines each key as the object's own, `__proto__` included.
  return Object.fromEntries(entries) as JsonObject;
}

/** A copy of `message` within about `MESSAGE_CAP_BYTES`: half for its data, half for its context. */
function clipMessage(message: Message): Message {
  return {
    type: clipText(message.type, MAX_TYPE_LENGTH),
    data: clipObject(message.data, { left: MESSAGE_CAP_BYTES / 2 }, 1),
    context: clipObject(message.context, { left: MESSAGE_CAP_BYTES / 2 }, 1),
  };
}

/** How large a clipped message was, as its timeline entry says it. */
function sizeText(bytes: number): string {
  if (!Number.isFinite(bytes)) return 'nested deeper than a frame may';
  if (bytes > ORIGINAL_LIMIT_BYTES) return `over ${ORIGINAL_LIMIT_BYTES / 1024 / 1024} MiB`;
  return bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** The fallback pools a session would be asked in, per stage, for a trace (`Trace.pools`). */
export type PoolsOf = (sessionId: string) => Readonly<Record<string, readonly string[]>>;

/** XState machine id → the diagram it is drawn on (visualizations/<name>.machine.svg). */
const DIAGRAMS: Readonly<Record<string, string>> = { fallback: 'fallback', commonQuery: 'common-query', utterance: 'utterance' };

const dotName = (name: string): string => name.replace(/[^A-Za-z0-9_]/g, '_');

/** The id of a machine the inspector has a diagram of, else undefined. */
const diagramOf = (id: unknown): string | undefined => (typeof id === 'string' && Object.hasOwn(DIAGRAMS, id) ? id : undefined);

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
  /** While the contest runs (its ended snapshot may hold a large input: not kept). */
  actor: AnyActorRef | undefined;
  /** Known once its logic or its first snapshot names a machine with a diagram. */
  machineId: string | undefined;
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

/** A drop as kept: its fields clipped, not the message it dropped. */
interface KeptDrop {
  readonly reason: string;
  readonly type: string;
  readonly skillId: string | undefined;
  /** `kind/label` of the contest whose machine ignored it. */
  readonly contest: string | undefined;
  readonly detail: string | undefined;
}

/** What is kept per timeline entry: as little as possible, turned into a `TimelineEntry` only when viewed. */
type Raw =
  /** `clipped`: the original's size (`messageBytes`) when `message` is a clipped copy. */
  | { readonly at: number; readonly kind: 'message'; readonly message: Message; readonly clipped?: number }
  | { readonly at: number; readonly kind: 'state'; readonly contest: ContestRecord; readonly state: string }
  | { readonly at: number; readonly kind: 'timeout'; readonly contest: ContestRecord; readonly delay: string }
  | { readonly at: number; readonly kind: 'drop'; readonly drop: KeptDrop }
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
  /** What it keeps, counted towards `maxBytes`. */
  bytes: number;
  /** Its contests still running. */
  running: number;
  /** Out of the ring: records nothing more, and is kept only (empty) while a contest of it runs. */
  forgotten: boolean;
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
  readonly #maxBytes: number;
  /** Bytes the ring's records keep, all together. */
  #bytes = 0;
  #poolsFor: PoolsOf | undefined;
  /** utterance_id → its record(s): one, unless two sessions used the same utterance_id. */
  readonly #utterances = new Map<string, UtteranceRecord | UtteranceRecord[]>();
  /** Records in arrival order (the ring). */
  readonly #ring: UtteranceRecord[] = [];
  /** Live contests by id. */
  readonly #contests = new Map<string, { readonly contest: ContestRecord; readonly utterance: UtteranceRecord }>();
  /** The same live contests by actor: what XState's inspection events name (a child's actor id is not its contest id). */
  readonly #byActor = new WeakMap<AnyActorRef, { readonly contest: ContestRecord; readonly utterance: UtteranceRecord }>();
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
    this.#maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  }

  /** The bytes kept for utterances (estimated as the class comment says): never above `maxBytes` between calls. */
  get bytes(): number {
    return this.#bytes;
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
      if (utterance.forgotten) continue;
      if (on) {
        // A child's events come through its parent's system.
        if (contest.info.child !== true) contest.inspection ??= contest.actor?.system.inspect(this.inspect);
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
      bytes: 0,
      running: 0,
      forgotten: false,
    };
    const same = this.#utterances.get(utteranceId);
    this.#utterances.set(utteranceId, same === undefined ? record : Array.isArray(same) ? [...same, record] : [same, record]);
    this.#ring.push(record);
    if (this.#ring.length > this.#maxUtterances) this.#forget(this.#ring.shift()!);
    // Counted now, the budget held at the caller's next charge (once the record has its contest).
    this.#count(record, RECORD_BYTES + record.key.length + sessionId.length + utteranceId.length);
    return record;
  }

  #count(record: UtteranceRecord, bytes: number): void {
    record.bytes += bytes;
    this.#bytes += bytes;
  }

  /** Count `bytes` more kept for `record`; past the budget, forget the oldest records (`record` too, if it is one). */
  #charge(record: UtteranceRecord, bytes: number): void {
    if (record.forgotten) return;
    this.#count(record, bytes);
    while (this.#bytes > this.#maxBytes && this.#ring.length > 0) this.#forget(this.#ring.shift()!);
  }

  /** A record out of the ring: its entries, contests and decision go; it stays findable (empty) while a contest of it runs. */
  #forget(record: UtteranceRecord): void {
    record.forgotten = true;
    this.#bytes -= record.bytes;
    record.bytes = 0;
    record.entries.length = 0;
    for (const contest of record.contests) {
      contest.inspection?.unsubscribe();
      contest.inspection = undefined;
    }
    record.contests.length = 0;
    record.pools = undefined;
    const decided = this.#decisions.indexOf(record);
    if (decided >= 0) this.#decisions.splice(decided, 1);
    if (record.running === 0) this.#unindex(record);
  }

  #unindex(record: UtteranceRecord): void {
    const same = this.#utterances.get(record.utteranceId);
    if (same === record) this.#utterances.delete(record.utteranceId);
    else if (Array.isArray(same)) {
      const rest = same.filter((r) => r !== record);
      if (rest.length === 1) this.#utterances.set(record.utteranceId, rest[0]!);
      else this.#utterances.set(record.utteranceId, rest);
    }
  }

  /** Keep `entry` (costing `bytes` besides the entry itself), or count it left out past the per-utterance bound. */
  #push(record: UtteranceRecord, entry: Raw, bytes: number): void {
    if (record.forgotten) return;
    if (record.entries.length >= this.#maxEntries) record.truncated++;
    else {
      record.entries.push(entry);
      this.#charge(record, ENTRY_BYTES + bytes);
    }
    for (const listener of this.#listeners) listener({ utterance: record.key });
  }

  /** A message joins `record` by reference, or as a clipped copy when its JSON is past `MESSAGE_CAP_BYTES`. */
  #pushMessage(record: UtteranceRecord, at: number, message: Message): void {
    if (record.forgotten || record.entries.length >= this.#maxEntries) {
      this.#push(record, { at, kind: 'message', message }, 0);
      return;
    }
    const bytes = messageBytes(message, MESSAGE_CAP_BYTES);
    if (bytes <= MESSAGE_CAP_BYTES) {
      this.#push(record, { at, kind: 'message', message }, bytes);
      return;
    }
    const kept = clipMessage(message);
    this.#push(record, { at, kind: 'message', message: kept, clipped: messageBytes(message, ORIGINAL_LIMIT_BYTES) }, messageBytes(kept));
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
    if (record !== undefined) this.#pushMessage(record, this.#clock.now() - record.start, message);
  };

  /** The XState inspection hook (detail mode): state changes and fired delays of every contest. */
  readonly inspect = (event: InspectionEvent): void => {
    if (event.type !== '@xstate.snapshot' && event.type !== '@xstate.event') return;
    const known = this.#byActor.get(event.actorRef as AnyActorRef);
    if (known === undefined) return;
    const { contest, utterance } = known;
    if (utterance.forgotten) return;
    if (event.type === '@xstate.event') {
      const type = event.event.type;
      if (type.startsWith('xstate.after.')) {
        const delay = type.slice('xstate.after.'.length).split('.')[0] ?? type;
        this.#push(utterance, { at: this.#clock.now() - utterance.start, kind: 'timeout', contest, delay }, delay.length);
      }
      return;
    }
    contest.machineId ??= diagramOf((event.snapshot as { machine?: { id?: unknown } }).machine?.id);
    this.#stateOf(contest, utterance, (event.snapshot as { value?: unknown }).value);
  };

  #stateOf(contest: ContestRecord, utterance: UtteranceRecord, value: unknown): void {
    if (value === contest.value) return;
    const state = stateText(value);
    contest.value = value;
    if (state === contest.state) return;
    contest.state = state;
    this.#push(utterance, { at: this.#clock.now() - utterance.start, kind: 'state', contest, state }, state.length);
  }

  contestStarted(info: ContestInfo, actor: AnyActorRef, input: unknown): void {
    if (info.utteranceId === undefined) return;
    const utterance = this.#ensure(info.sessionId, info.utteranceId);
    const watched = this.#detailed && !utterance.forgotten;
    const logicId = (actor as { logic?: { id?: unknown } }).logic?.id;
    const contest: ContestRecord = {
      info,
      actor,
      machineId: diagramOf(logicId),
      value: undefined,
      state: '',
      status: 'live',
      reason: undefined,
      startedAt: this.#clock.now() - utterance.start,
      endedAt: undefined,
      // A child's events come through its parent's system, already inspected.
      inspection: watched && info.child !== true ? actor.system.inspect(this.inspect) : undefined,
    };
    utterance.running++;
    const known = { contest, utterance };
    this.#contests.set(info.id, known);
    this.#byActor.set(actor, known);
    if (utterance.forgotten) return;
    utterance.contests.push(contest);
    this.#charge(utterance, CONTEST_BYTES + info.id.length + info.kind.length + info.label.length);
    if (info.kind === 'utterance') {
      const request = isJsonObject(input) ? input['request'] : undefined;
      const utterances = isJsonObject(request) ? request['utterances'] : undefined;
      if (Array.isArray(utterances) && typeof utterances[0] === 'string') {
        utterance.utterance = clipText(utterances[0], CLIP_TEXT);
        this.#charge(utterance, utterance.utterance.length);
      }
      if (this.#detailed) this.#poolsOf(utterance);
      // The stamped entry message (the one on the bus carried no utterance_id yet).
      const entry = isJsonObject(request) ? request['entry'] : undefined;
      if (isJsonObject(entry) && typeof entry['type'] === 'string' && isJsonObject(entry['data']) && isJsonObject(entry['context'])) {
        this.#pushMessage(utterance, contest.startedAt, { type: entry['type'], data: entry['data'], context: entry['context'] });
      }
    }
    this.#push(utterance, { at: contest.startedAt, kind: 'contest', contest, ended: false }, 0);
  }

  contestEnded(info: ContestInfo, result: ContestResult<unknown>): void {
    const known = this.#contests.get(info.id);
    if (known === undefined) return;
    this.#contests.delete(info.id);
    const { contest, utterance } = known;
    const actor = contest.actor!;
    this.#byActor.delete(actor);
    contest.actor = undefined;
    contest.inspection?.unsubscribe();
    contest.inspection = undefined;
    utterance.running--;
    if (utterance.forgotten) {
      if (utterance.running === 0) this.#unindex(utterance);
      return;
    }
    // XState reports the final snapshot only after the actor completed, and not at all without detail: read it here.
    const snapshot = actor.getSnapshot() as { value?: unknown; machine?: { id?: unknown } };
    // A child contest's logic is chosen as it starts (src/supervisor/delegate.ts): its snapshot names its machine.
    contest.machineId ??= diagramOf(snapshot.machine?.id);
    this.#stateOf(contest, utterance, snapshot.value);
    contest.status = result.status === 'done' ? 'done' : result.status;
    contest.reason = result.status === 'stopped' ? clipText(result.reason, CLIP_TEXT) : result.status === 'error' ? 'contest_error' : undefined;
    contest.endedAt = this.#clock.now() - utterance.start;
    this.#push(utterance, { at: contest.endedAt, kind: 'contest', contest, ended: true }, contest.reason?.length ?? 0);
    if (info.kind !== 'utterance') return;
    utterance.live = false;
    if (utterance.forgotten) return;
    const output = result.status === 'done' && isJsonObject(result.output) ? (result.output as { outcome?: unknown; stage?: unknown; match?: { skill_id?: unknown } | null }) : undefined;
    const decision: Decision = {
      time: Date.now(),
      afterMs: contest.endedAt,
      outcome: output === undefined ? (contest.reason ?? 'ended') : clipText(String(output.outcome), CLIP_TEXT),
      stage: typeof output?.stage === 'string' ? clipText(output.stage, CLIP_TEXT) : null,
      skill_id: typeof output?.match?.skill_id === 'string' ? clipText(output.match.skill_id, CLIP_TEXT) : null,
      declined: declinedOf(actor).map(({ stage, why }) => ({ stage: clipText(stage, CLIP_TEXT), why: clipText(why, CLIP_TEXT) })),
    };
    utterance.decision = decision;
    this.#decisions.push(utterance);
    if (this.#decisions.length > this.#maxDecisions) this.#decisions.shift();
    this.#charge(utterance, DECISION_BYTES + decision.outcome.length + (decision.stage?.length ?? 0) + (decision.skill_id?.length ?? 0) + jsonBytes(decision.declined));
    this.#push(utterance, { at: contest.endedAt, kind: 'decision' }, 0);
  }

  dropped(drop: Drop): void {
    const record = drop.contest !== undefined ? this.#contests.get(drop.contest.id)?.utterance : drop.message === undefined ? undefined : this.#recordOf(drop.message);
    if (record?.forgotten === true) return;
    const skillId = drop.skillId ?? (drop.message === undefined ? undefined : skillOf(drop.message));
    if (record !== undefined) {
      const kept: KeptDrop = {
        reason: clipText(drop.reason, CLIP_TEXT),
        type: clipText(drop.type, MAX_TYPE_LENGTH),
        skillId: skillId === undefined ? undefined : clipText(skillId, CLIP_TEXT),
        contest: drop.contest === undefined ? undefined : clipText(`${drop.contest.kind}/${drop.contest.label}`, CLIP_TEXT),
        detail: drop.detail === undefined ? undefined : clipText(drop.detail, CLIP_TEXT),
      };
      const bytes = kept.reason.length + kept.type.length + (kept.skillId?.length ?? 0) + (kept.contest?.length ?? 0) + (kept.detail?.length ?? 0);
      this.#push(record, { at: this.#clock.now() - record.start, kind: 'drop', drop: kept }, bytes);
      return;
    }
    const sessionId = drop.message === undefined ? undefined : sessionIdOf(drop.message);
    const stray: StrayDrop = {
      time: Date.now(),
      reason: clipText(drop.reason, STRAY_TEXT),
      type: clipText(drop.type, STRAY_TEXT),
      session_id: sessionId === undefined ? undefined : clipText(sessionId, STRAY_TEXT),
      skill_id: skillId === undefined ? undefined : clipText(skillId, STRAY_TEXT),
      detail: drop.detail === undefined ? undefined : clipText(drop.detail, STRAY_TEXT),
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
    return record === undefined || record.forgotten ? undefined : this.#view(record);
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
    if (record === undefined || record.forgotten) return undefined;
    const messages: TraceEntry[] = [];
    for (const entry of record.entries) if (entry.kind === 'message') messages.push(traceEntry(entry.at, entry.message));
    return { format: TRACE_FORMAT, utterance: record.utterance, session_id: record.sessionId, pools: this.#poolsOf(record), messages };
  }

  /**
   * The fallback pools of the utterance's session, for its trace: taken when first asked for (an export, or the
   * page showing it), so recording pays nothing for them; a page open while the utterance runs takes them then.
   */
  #poolsOf(record: UtteranceRecord): Readonly<Record<string, readonly string[]>> {
    if (record.pools !== undefined) return record.pools;
    const pools = this.#poolsFor?.(record.sessionId) ?? {};
    if (record.forgotten) return pools;
    record.pools = pools;
    this.#charge(record, jsonBytes(pools));
    return pools;
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
        const view: TimelineEntry = skill === undefined ? { at: entry.at, kind: 'message', type: entry.message.type } : { at: entry.at, kind: 'message', type: entry.message.type, skill_id: skill };
        return entry.clipped === undefined ? view : { ...view, clipped: true, detail: `clipped: the message was ${sizeText(entry.clipped)}` };
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
        return {
          at: entry.at,
          kind: 'drop',
          type: drop.type,
          reason: drop.reason,
          ...(drop.skillId === undefined ? {} : { skill_id: drop.skillId }),
          ...(drop.contest === undefined ? {} : { contest: drop.contest }),
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
      contests: record.contests.map((c) => {
        // A live child contest names its machine in its snapshot only (its logic is chosen as it starts).
        c.machineId ??= diagramOf((c.actor?.getSnapshot() as { machine?: { id?: unknown } } | undefined)?.machine?.id);
        return {
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
        };
      }),
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
