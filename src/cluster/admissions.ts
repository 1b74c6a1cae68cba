/**
 * The utterance entries a daemon takes, handed to its contests a few at a time (src/cluster/README.md "Partitions",
 * "Taking a burst"). Starting a contest is the costliest thing a daemon does with a frame: a burst of entries started
 * in one turn of the event loop would hold up, behind them, the frames this daemon relays for the contests of other
 * daemons — its skills' replies, whose bounds run on those daemons' clocks. So at most `perTurn` entries reach the
 * contests in one turn; the others follow in the next turns, in the order taken (a session's utterances stay in
 * order). Pure: what a turn is comes from `nextTurn` (`setImmediate` in the daemon).
 */
export class Admissions<T> {
  readonly #waiting: T[] = [];
  readonly #perTurn: number;
  readonly #admit: (item: T) => void;
  readonly #nextTurn: (run: () => void) => void;
  #thisTurn = 0;
  #scheduled = false;

  constructor(options: { readonly perTurn: number; readonly admit: (item: T) => void; readonly nextTurn: (run: () => void) => void }) {
    this.#perTurn = options.perTurn;
    this.#admit = options.admit;
    this.#nextTurn = options.nextTurn;
  }

  /** An entry taken: to the contests now, or after the entries taken before it. */
  push(item: T): void {
    this.#schedule();
    if (this.#waiting.length === 0 && this.#thisTurn < this.#perTurn) {
      this.#thisTurn++;
      this.#admit(item);
    } else this.#waiting.push(item);
  }

  /** The next turn starts the count again and hands on what waits (and, if any did, schedules the one after). */
  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    this.#nextTurn(() => {
      this.#scheduled = false;
      this.#thisTurn = 0;
      if (this.#waiting.length === 0) return;
      this.#schedule();
      for (const item of this.#waiting.splice(0, this.#perTurn)) {
        this.#thisTurn++;
        this.#admit(item);
      }
    });
  }
}
