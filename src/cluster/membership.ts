/**
 * Who is in the cluster (src/cluster/README.md, "Partitions"), as one daemon hears it: every daemon's heartbeat
 * (heartbeat.ts) names it, its run (boot) and what it reads; time is counted in this daemon's own heartbeats
 * (rounds), so a daemon whose own timers run late does not take the others for gone. A daemon is alive while heard
 * within the last `deadRounds` rounds; the members — the daemons partitions are shared among (rendezvous hashing,
 * subjects.ts) — are those alive and not leaving.
 */

/** What a daemon's last heartbeat said, and in which of this daemon's rounds it came. */
export interface Heard {
  readonly round: number;
  readonly leaving: boolean;
  /** Its run: a daemon started again under the same name has another. */
  readonly boot: string | undefined;
  /** It reads ends digests (a daemon of an earlier version does not). */
  readonly ends: boolean;
  /** It answers the deadline barrier's questions. */
  readonly sync: boolean;
}

/** How a heartbeat changed what this daemon knows of its sender. */
export type MemberChange = 'joined' | 'leaving' | 'back' | 'started again' | 'unchanged';

export class Membership {
  readonly node: string;
  readonly #deadRounds: number;
  readonly #heard = new Map<string, Heard>();
  #round = 0;

  /** `deadRounds`: this daemon's heartbeats a daemon may go unheard for and still be alive (at least 2). */
  constructor(node: string, deadRounds: number) {
    this.node = node;
    this.#deadRounds = deadRounds;
  }

  /** Rounds of its own heartbeats this daemon has heard. */
  get round(): number {
    return this.#round;
  }

  /** This daemon's own heartbeat: one round more. */
  ownBeat(): void {
    this.#round++;
  }

  /** Another daemon's heartbeat. */
  heard(node: string, said: Omit<Heard, 'round'>): MemberChange {
    const known = this.#heard.get(node);
    this.#heard.set(node, { ...said, round: this.#round });
    if (known !== undefined && known.boot !== undefined && said.boot !== undefined && known.boot !== said.boot) return 'started again';
    if (known === undefined) return said.leaving ? 'leaving' : 'joined';
    if (known.leaving !== said.leaving) return said.leaving ? 'leaving' : 'back';
    return 'unchanged';
  }

  /** What `node`'s last heartbeat said, if one was heard. */
  of(node: string): Heard | undefined {
    return this.#heard.get(node);
  }

  /** Every daemon heard from, alive or not. */
  known(): IterableIterator<[string, Heard]> {
    return this.#heard.entries();
  }

  /** The daemons alive and not leaving, this one included unless `leaving`, sorted. */
  members(leaving: boolean): string[] {
    const members = leaving ? [] : [this.node];
    for (const [node, heard] of this.#heard) if (!heard.leaving && this.#round - heard.round <= this.#deadRounds) members.push(node);
    return members.sort();
  }

  /** Whether a daemon still runs (leaving or not): heard within the last `deadRounds` rounds; this one always. */
  alive(node: string): boolean {
    if (node === this.node) return true;
    const heard = this.#heard.get(node);
    return heard !== undefined && this.#round - heard.round <= this.#deadRounds;
  }

  /** This daemon has been up long enough to have heard every live daemon: it may take a silent one for gone. */
  settled(): boolean {
    return this.#round > this.#deadRounds;
  }
}
