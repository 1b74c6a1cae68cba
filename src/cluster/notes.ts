/**
 * What daemons say to each other on NATS besides bus frames — heartbeats, partition notes, connection changes,
 * deadline syncs, suspensions, redelivery requests — and what they keep in the JetStream buckets, as types and as
 * readers (src/cluster/README.md, "Subjects"). What a daemon reads from NATS is untrusted input, as a bus frame is:
 * each reader takes the decoded JSON and returns the typed note, or the reason it is not one; the cluster drops it
 * with that reason (`cluster_message_invalid`) and counts it. With authentication on, only daemons can publish on
 * these subjects (README, "Who can join"); the readers still keep a faulty or foreign publisher from reaching a
 * contest, a partition or the registry with values of the wrong shape.
 */

/** A daemon's name (`cluster.nodeId`, or random hex) and a run's `boot` (random hex at each start). */
const NAME = /^[A-Za-z0-9_-]{1,64}$/;
/**
 * The longest id a note carries (a connection, an utterance, a skill): no note is larger than a NATS message (1 MiB
 * unless the servers say otherwise), and a daemon relays ids as its clients sent them.
 */
const MAX_ID = 1_048_576;

/** A daemon's heartbeat (`NODE_SUBJECT`): its run, the last number it published, what it can do. */
export interface NodeNote {
  readonly node: string;
  readonly leaving?: boolean;
  readonly boot?: string;
  readonly seq?: number;
  /** It reads ends digests (`ENDS_SUBJECT`). */
  readonly ends?: boolean;
  /** It answers `SYNC_SUBJECT`. */
  readonly sync?: boolean;
}

/**
 * An utterance a daemon hands to a partition's owner: one taken by a daemon's run that is gone, or one no daemon has
 * taken that the owner never heard (`untaken`: it joined after the entry arrived).
 */
export interface Orphan {
  readonly frame: string;
  /** The entry as it arrived (encoded), the client connection it came over. */
  readonly message: string;
  readonly connection?: string;
  /** The daemon that took it (untaken: the one that hands it on). */
  readonly node: string;
  readonly boot?: string;
  readonly utterance_id: string;
  /** No daemon took it: it runs on the owner as any entry does. */
  readonly untaken?: boolean;
  readonly decided?: 'matched' | 'unmatched';
  readonly handler?: 'complete' | 'error';
}

/** A partition note (`PARTITION_SUBJECT`). */
export type Note =
  | { readonly kind: 'taken'; readonly partition: number; readonly node: string; readonly boot?: string; readonly frame: string; readonly utterance_id: string }
  /**
   * `node` hands `to`, the partition's owner now, the utterances of it it heard taken by a daemon's run that is gone
   * and not ended (the owner may have joined after they were taken, or be that daemon started again).
   */
  | { readonly kind: 'orphans'; readonly partition: number; readonly node: string; readonly to: string; readonly entries: readonly Orphan[] }
  | { readonly kind: 'released'; readonly partition: number; readonly node: string }
  /** `node` took the partition over from `from`, which it took for gone (every daemon fences `from`'s output of it). */
  | { readonly kind: 'takenOver'; readonly partition: number; readonly node: string; readonly from: string };

/** A client connection opened or closed on some daemon (`CONNECTION_SUBJECT`, and `c.<connection>` in the state). */
export type ConnectionNote = { readonly connection: string; readonly closed?: boolean; readonly late?: boolean; readonly heldBack?: boolean };

/**
 * Deadlines fell due on daemon `by`, in its run `boot`, which asks the daemons in `ask` (`SYNC_SUBJECT`); or daemon
 * `by` answers daemon `to` (`SYNCED_SUBJECT`), echoing its `boot` and `round`.
 */
export type SyncNote = { readonly by: string; readonly boot: string; readonly round: number; readonly ask?: readonly string[]; readonly to?: string };

/** A daemon's circuit breaker suspended a fallback skill (`for_ms` from `at`, epoch ms) or heard it again. */
export type BreakerNote = { readonly type: 'suspended' | 'resumed'; readonly skill_id: string; readonly node: string; readonly at: number; readonly for_ms?: number };

/** A registration in the state bucket: the register message as its skill sent it, and the connection it came over. */
export type RegistrationValue = { readonly frame: string; readonly connection?: string };

/** A receiver missed `from`..`through` of `to`'s run `boot` (redelivery.ts). */
export type ResendNote = { readonly to: string; readonly boot: string; readonly from: number; readonly through: number; readonly by?: string };

/** A row of the partition table (`PARTITION_BUCKET`): its owner (null: free) and how many times it changed hands. */
export type TableValue = { readonly owner: string | null; readonly epoch: number };

/** A note, or why the value read is not one (a phrase for the log line). */
export type Read<T> = { readonly ok: true; readonly note: T } | { readonly ok: false; readonly why: string };

type Fields = Readonly<Record<string, unknown>>;

const fail = (why: string): { readonly ok: false; readonly why: string } => ({ ok: false, why });
const isObject = (value: unknown): value is Fields => typeof value === 'object' && value !== null && !Array.isArray(value);
const isName = (value: unknown): value is string => typeof value === 'string' && NAME.test(value);
const isId = (value: unknown): value is string => typeof value === 'string' && value !== '' && value.length <= MAX_ID;
const optional = (value: unknown, test: (value: unknown) => boolean): boolean => value === undefined || test(value);
const isBool = (value: unknown): boolean => typeof value === 'boolean';
const isCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;

/** A daemon's heartbeat. */
export function readNodeNote(value: unknown): Read<NodeNote> {
  if (!isObject(value)) return fail('a heartbeat is an object');
  if (!isName(value['node'])) return fail('a heartbeat names its daemon (letters, digits, "_", "-"; at most 64)');
  if (!optional(value['boot'], isName)) return fail("a heartbeat's boot is a run's name");
  if (!optional(value['seq'], isCount)) return fail("a heartbeat's seq is a count");
  if (!optional(value['leaving'], isBool) || !optional(value['ends'], isBool) || !optional(value['sync'], isBool)) return fail("a heartbeat's leaving, ends and sync are booleans");
  return { ok: true, note: value as unknown as NodeNote };
}

/** A partition note of a cluster of `partitions` partitions, heard from daemon `by` (a daemon speaks for itself). */
export function readNote(value: unknown, partitions: number, by?: string): Read<Note> {
  if (!isObject(value)) return fail('a partition note is an object');
  const { kind, partition, node } = value;
  if (!Number.isInteger(partition) || (partition as number) < 0 || (partition as number) >= partitions) return fail(`a partition note names a partition in [0, ${partitions})`);
  if (!isName(node)) return fail('a partition note names its daemon');
  if (by !== undefined && node !== by) return fail('a daemon speaks for itself only: a partition note names the daemon that published it');
  switch (kind) {
    case 'taken':
      if (!isId(value['frame']) || !isId(value['utterance_id']) || !optional(value['boot'], isName)) return fail('a taken note names the frame, the utterance and the run');
      break;
    case 'released':
      break;
    case 'takenOver':
      if (!isName(value['from'])) return fail('a takenOver note names the daemon it took over from');
      break;
    case 'orphans':
      if (!isName(value['to']) || !Array.isArray(value['entries'])) return fail('an orphans note names its daemon and lists its utterances');
      break;
    default:
      return fail('a partition note is taken, released, takenOver or orphans');
  }
  return { ok: true, note: value as unknown as Note };
}

/** One utterance of an orphans note. */
export function readOrphan(value: unknown): Read<Orphan> {
  if (!isObject(value)) return fail('an orphan is an object');
  if (!isId(value['frame']) || typeof value['message'] !== 'string' || !isId(value['utterance_id']) || !isName(value['node'])) return fail('an orphan names its frame, message, utterance and daemon');
  if (!optional(value['connection'], isId) || !optional(value['boot'], isName)) return fail("an orphan's connection and run are ids");
  if (!optional(value['decided'], (d) => d === 'matched' || d === 'unmatched') || !optional(value['handler'], (h) => h === 'complete' || h === 'error')) return fail("an orphan's decided and handler are as an end says");
  if (!optional(value['untaken'], isBool)) return fail("an orphan's untaken is a boolean");
  return { ok: true, note: value as unknown as Orphan };
}

/**
 * A connection opened or closed. Heard from a daemon (`by`), it names one of that daemon's own connections: a daemon
 * only ever speaks of its own clients (the others close a gone daemon's connections themselves).
 */
export function readConnectionNote(value: unknown, by?: string): Read<ConnectionNote> {
  if (!isObject(value)) return fail('a connection note is an object');
  const { connection } = value;
  if (!isId(connection) || connection.indexOf('/') < 1) return fail('a connection note names a connection (<daemon>/<id>)');
  if (by !== undefined && !connection.startsWith(`${by}/`)) return fail("a daemon speaks of its own connections only, not another daemon's");
  if (!optional(value['closed'], isBool) || !optional(value['late'], isBool) || !optional(value['heldBack'], isBool)) return fail("a connection note's closed, late and heldBack are booleans");
  return { ok: true, note: value as unknown as ConnectionNote };
}

/** A deadline sync question or answer, heard from daemon `by`. */
export function readSyncNote(value: unknown, by?: string): Read<SyncNote> {
  if (!isObject(value)) return fail('a sync note is an object');
  if (!isName(value['by']) || !isName(value['boot']) || !isCount(value['round'])) return fail('a sync note names its daemon, run and round');
  if (by !== undefined && value['by'] !== by) return fail('a daemon speaks for itself only: a sync note names the daemon that published it');
  if (!optional(value['to'], isName) || !optional(value['ask'], (ask) => Array.isArray(ask) && ask.length <= 10_000 && ask.every(isName))) return fail("a sync note's to and ask name daemons");
  return { ok: true, note: value as unknown as SyncNote };
}

/** A suspension or resumption of a fallback skill, heard from daemon `by` (or replayed from the state). */
export function readBreakerNote(value: unknown, by?: string): Read<BreakerNote> {
  if (!isObject(value)) return fail('a breaker note is an object');
  if (value['type'] !== 'suspended' && value['type'] !== 'resumed') return fail('a breaker note is suspended or resumed');
  if (!isId(value['skill_id']) || !isName(value['node'])) return fail('a breaker note names the skill and the daemon');
  if (by !== undefined && value['node'] !== by) return fail('a daemon speaks for itself only: a breaker note names the daemon that decided it');
  if (typeof value['at'] !== 'number' || !Number.isFinite(value['at'])) return fail('a breaker note says when (epoch ms)');
  if (value['type'] === 'suspended' && !(typeof value['for_ms'] === 'number' && Number.isFinite(value['for_ms']) && value['for_ms'] > 0)) return fail('a suspension says for how long (ms > 0)');
  return { ok: true, note: value as unknown as BreakerNote };
}

/** A request to publish missed numbers again. */
export function readResendNote(value: unknown): Read<ResendNote> {
  if (!isObject(value)) return fail('a resend note is an object');
  const { from, through } = value;
  if (!isName(value['to']) || !isName(value['boot']) || !optional(value['by'], isName)) return fail('a resend note names the daemon, its run and the asker');
  if (!isCount(from) || !isCount(through) || from < 1 || through < from) return fail('a resend note names numbers from ≥ 1 through ≥ from');
  return { ok: true, note: value as unknown as ResendNote };
}

/** A registration kept in the state bucket. */
export function readRegistrationValue(value: unknown): Read<RegistrationValue> {
  if (!isObject(value)) return fail('a registration is an object');
  if (typeof value['frame'] !== 'string' || !optional(value['connection'], isId)) return fail('a registration holds its frame and connection');
  return { ok: true, note: value as unknown as RegistrationValue };
}

/** A row of the partition table. */
export function readTableValue(value: unknown): Read<TableValue> {
  if (!isObject(value)) return fail('a partition table row is an object');
  if (!(value['owner'] === null || isName(value['owner'])) || !isCount(value['epoch'])) return fail('a partition table row names its owner (or null) and epoch');
  return { ok: true, note: value as unknown as TableValue };
}

/** JSON text parsed, or undefined (never a throw). */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
