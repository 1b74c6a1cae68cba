/**
 * How the OVOS bus travels over NATS (src/cluster/README.md, "Subjects"): pure functions, no connection.
 *
 * Every bus frame is published on `ovos.bus.<topic>`, the topic's dots kept as NATS token separators so a user can
 * watch a family of topics (`nats sub 'ovos.bus.ovos.skills.fallback.>'`). A NATS subject token cannot be empty and
 * cannot hold whitespace or the wildcards `*` and `>`; `%` escapes those (and itself) as `%XX`, and an empty token
 * (a topic with `..`, or a leading or trailing dot) is a lone `%`. `:` is an ordinary subject character and stays.
 * The frame's own `type` is what daemons read; the subject only routes.
 */

import { createHash } from 'node:crypto';

export const BUS_PREFIX = 'ovos.bus';
/** Connection opened / closed on one daemon's websocket endpoint, heard by every daemon. */
export const CONNECTION_SUBJECT = 'ovos.contests.connection';
/** A daemon's heartbeat and goodbye (membership). */
export const NODE_SUBJECT = 'ovos.contests.node';
/** A daemon took an utterance of a partition it owns, or released a partition after its last utterance ended. */
export const PARTITION_SUBJECT = 'ovos.contests.partition';
/**
 * How a daemon's own utterances ended while no other daemon has a client (`ovos.intent.matched` / `.unmatched`, the
 * handler's end, `ovos.utterance.handled`): one message per turn of its event loop, `[end, utterance_id, partition,
 * connection?]` each (`connection`: the client that said it; none for the contests), what every daemon reads for
 * failover without the frames themselves (src/cluster/README.md "Kept where it is needed").
 */
export const ENDS_SUBJECT = 'ovos.contests.ends';
/** A daemon asks another to publish again what it relayed and this one did not hear (a gap in its numbers). */
export const RESEND_SUBJECT = 'ovos.contests.resend';
/**
 * What a daemon publishes again goes to the daemon that asked only: `ovos.contests.resent.<that daemon>`, the
 * original subject as the payload's first line. A daemon that joined since never takes old messages for new ones.
 */
export const RESENT_PREFIX = 'ovos.contests.resent';
/**
 * Deadlines fell due on a daemon (`{by, boot, round, ask}`): each daemon in `ask` answers on `SYNCED_SUBJECT`
 * (`{to, boot, round, by}`) once it has published what its clients had sent it until then — the replies that reached
 * the cluster before the deadlines (src/cluster/README.md, "Deadlines").
 */
export const SYNC_SUBJECT = 'ovos.contests.sync';
export const SYNCED_SUBJECT = 'ovos.contests.synced';
/** A daemon's circuit breaker suspended a fallback skill, or heard it again (every daemon does the same). */
export const BREAKER_SUBJECT = 'ovos.contests.breaker';
/**
 * JetStream KV bucket holding what a joining daemon replays — the registrations, the client connections open, the
 * suspensions — one key each, its latest value only (`stateKey`).
 */
export const STATE_BUCKET = 'ovos-contests-state';
/** The stream earlier versions kept that history in (every change, not the latest): removed at start. */
export const FORMER_STATE_STREAM = 'OVOS_CONTESTS_STATE';
/** JetStream KV bucket holding the partition table: key `p<n>` → `{ owner, epoch }`. */
export const PARTITION_BUCKET = 'ovos-contests-partitions';

/** Ids longer than this are keyed by their hash: a key is a subject, and a NATS server takes lines of 4 KB at most. */
const KEY_ID_MAX = 96;

/**
 * A string as one KV key token: base64url (letters, digits, `-` and `_`, which every key allows); `=` for empty; a long
 * one `=` and its SHA-256 (base64url never holds `=`, so neither is taken for another id).
 */
function keyToken(value: string): string {
  if (value === '') return '=';
  if (value.length > KEY_ID_MAX) return `=${createHash('sha256').update(value, 'utf8').digest('base64url')}`;
  return Buffer.from(value, 'utf8').toString('base64url');
}

/**
 * The keys of the state bucket: `r.<session>.<skill>` a fallback registration (its latest accepted register; a
 * deregister deletes it), `c.<connection>` a client connection open on some daemon, `s.<skill>` a suspension.
 */
export const stateKey = {
  registration: (sessionId: string, skillId: string): string => `r.${keyToken(sessionId)}.${keyToken(skillId)}`,
  connection: (connection: string): string => `c.${keyToken(connection)}`,
  suspension: (skillId: string): string => `s.${keyToken(skillId)}`,
} as const;

const PLAIN = /^[A-Za-z0-9_\-:]$/;

function escapeToken(token: string): string {
  if (token === '') return '%';
  let out = '';
  for (const char of token) {
    if (PLAIN.test(char)) {
      out += char;
      continue;
    }
    for (const byte of Buffer.from(char, 'utf8')) out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** A topic whose every token is non-empty and plain: its subject is the topic itself, after the prefix. */
const PLAIN_TOPIC = /^[A-Za-z0-9_\-:]+(?:\.[A-Za-z0-9_\-:]+)*$/;

/** The NATS subject a bus frame of this topic is published on. */
export function busSubject(topic: string): string {
  if (PLAIN_TOPIC.test(topic)) return `${BUS_PREFIX}.${topic}`;
  return `${BUS_PREFIX}.${topic.split('.').map(escapeToken).join('.')}`;
}

/** The topic a bus subject carries (the inverse of `busSubject`); undefined for any other subject. */
export function topicOf(subject: string): string | undefined {
  if (!subject.startsWith(`${BUS_PREFIX}.`)) return undefined;
  const tokens = subject.slice(BUS_PREFIX.length + 1).split('.');
  return tokens
    .map((token) => {
      if (token === '%') return '';
      const bytes: number[] = [];
      for (let i = 0; i < token.length; i++) {
        if (token[i] === '%') {
          bytes.push(Number.parseInt(token.slice(i + 1, i + 3), 16));
          i += 2;
        } else bytes.push(token.charCodeAt(i));
      }
      return Buffer.from(bytes).toString('utf8');
    })
    .join('.');
}

/**
 * What a daemon publishes on its cluster connection — a bus frame, or a note of its own (a connection opened or
 * closed, a partition taken or released) — as it travels on NATS: one line naming the daemon that relayed it, that
 * daemon's run (`boot`: random at each start, so a restarted daemon's numbering is never taken for old), its sequence
 * number in that run, the client connection it came from (`-`: the daemon's own) and the partition of the utterance it
 * belongs to (`-`: none, or it names no session), then the payload verbatim. A gap in one run's numbers is what a
 * receiver asks again for (redelivery.ts). Cheaper than NATS headers, which the client encodes and parses per
 * message; node, boot and connection ids never hold a space or a newline.
 */
export function envelope(node: string, boot: string, seq: number, connection: string | undefined, partition: number | undefined, frame: Uint8Array): Buffer {
  const head = `${node} ${boot} ${seq} ${connection ?? '-'} ${partition ?? '-'}\n`;
  const headBytes = Buffer.byteLength(head, 'utf8');
  const data = Buffer.allocUnsafe(headBytes + frame.byteLength);
  data.write(head, 0, 'utf8');
  data.set(frame, headBytes);
  return data;
}

export interface Opened {
  readonly node: string;
  /** The relaying daemon's run (random at each start). */
  readonly boot: string;
  readonly seq: number;
  readonly connection: string | undefined;
  readonly partition: number | undefined;
  readonly frame: Buffer;
}

const ENVELOPE_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** The parts of an `envelope`; undefined for anything else (a foreign publisher on our subjects). */
export function openEnvelope(data: Uint8Array): Opened | undefined {
  const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const end = bytes.indexOf(10);
  if (end < 0 || end > 1024) return undefined;
  const fields = bytes.subarray(0, end).toString('utf8').split(' ');
  const [node, boot, seq, connection, partition, extra] = fields;
  // A daemon's name and run are what `cluster.nodeId` allows (a random name and run are hex); numbers are safe integers.
  if (node === undefined || !ENVELOPE_NAME.test(node) || boot === undefined || !ENVELOPE_NAME.test(boot) || seq === undefined || !/^\d{1,15}$/.test(seq) || connection === undefined || connection === '' || extra !== undefined) return undefined;
  if (partition === undefined || (partition !== '-' && !/^\d{1,9}$/.test(partition))) return undefined;
  return { node, boot, seq: Number(seq), connection: connection === '-' ? undefined : connection, partition: partition === '-' ? undefined : Number(partition), frame: bytes.subarray(end + 1) };
}

/**
 * The partition a session belongs to: FNV-1a (32 bit) of its id, modulo the partition count — the hash NATS's own
 * subject-mapping `partition()` uses, so a server-side mapping of the same sessions agrees with ours.
 */
export function partitionOf(sessionId: string, partitions: number): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(sessionId, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % partitions;
}

/**
 * Which live daemon a partition belongs on: rendezvous (highest-random-weight) hashing. Every daemon computes the
 * same answer from the same membership; a daemon joining or leaving moves only the partitions it gains or had.
 */
export function preferredOwner(partition: number, nodes: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestWeight = -1;
  for (const node of nodes) {
    const weight = fnv(`${node}\u0000${partition}`);
    if (weight > bestWeight || (weight === bestWeight && best !== undefined && node < best)) {
      best = node;
      bestWeight = weight;
    }
  }
  return best;
}

function fnv(text: string): number {
  // FNV-1a then a final avalanche (murmur3's fmix32): node ids differing in one character spread evenly.
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(text, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193);
  }
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return hash >>> 0;
}
