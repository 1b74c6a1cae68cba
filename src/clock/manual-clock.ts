/**
 * A deterministic clock for tests and for the timing harness.
 *
 * Timers live in a binary heap ordered by (due time, arming order). `advance(ms)` fires them one at a time in due
 * order with `now()` stepped to each due time, so a timer armed by a firing timer starts at the right moment —
 * unlike XState's SimulatedClock, which fires everything with `now()` already at the end.
 */
import type { Clock, TimerId } from './clock.js';

interface Timer {
  readonly id: number;
  readonly due: number;
  readonly fn: () => void;
}

export class ManualClock implements Clock {
  #now: number;
  #seq = 0;
  #heap: Timer[] = [];
  /** Armed and neither fired nor cleared: a cleared timer stays in the heap until it reaches the top, then is skipped. */
  #live = new Set<number>();

  constructor(startEpochMs = 1_700_000_000_000) {
    this.#now = startEpochMs;
  }

  now(): number {
    return this.#now;
  }

  /** The same time as `now()`: a manual clock never steps but by `advance`. */
  monotonic(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): TimerId {
    const id = ++this.#seq;
    this.#push({ id, due: this.#now + Math.max(0, ms), fn });
    this.#live.add(id);
    return id;
  }

  clearTimeout(id: TimerId): void {
    // An id this clock never issued, or one already fired or cleared, is nothing to clear.
    if (typeof id === 'number') this.#live.delete(id);
  }

  /** Timers armed and not yet fired or cleared. */
  get pending(): number {
    return this.#live.size;
  }

  /** The due time of the next live timer, if any (the timing harness jumps from one to the next). */
  nextDue(): number | undefined {
    // Cancelled timers on top are dropped now rather than when they come due: the heap's top is then the answer.
    for (;;) {
      const top = this.#heap[0];
      if (top === undefined) return undefined;
      if (this.#live.has(top.id)) return top.due;
      this.#pop();
    }
  }

  /** Fire every timer due within `ms` from now, in due order, then leave `now()` at the end. */
  advance(ms: number): void {
    const end = this.#now + ms;
    for (;;) {
      const next = this.#heap[0];
      if (next === undefined || next.due > end) break;
      this.#pop();
      if (!this.#live.delete(next.id)) continue;
      this.#now = next.due;
      next.fn();
    }
    this.#now = end;
  }

  /** Fire timers until none is left (bounded, so a self-re-arming timer cannot hang a test). */
  runAll(maxTimers = 1_000_000): void {
    for (let fired = 0; fired < maxTimers; fired++) {
      const next = this.#heap[0];
      if (next === undefined) return;
      this.advance(Math.max(0, next.due - this.#now));
    }
  }

  #push(timer: Timer): void {
    const heap = this.#heap;
    heap.push(timer);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.#before(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  #pop(): void {
    const heap = this.#heap;
    const last = heap.pop();
    if (last === undefined || heap.length === 0) return;
    heap[0] = last;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let smallest = i;
      if (left < heap.length && this.#before(heap[left]!, heap[smallest]!)) smallest = left;
      if (right < heap.length && this.#before(heap[right]!, heap[smallest]!)) smallest = right;
      if (smallest === i) return;
      [heap[i], heap[smallest]] = [heap[smallest]!, heap[i]!];
      i = smallest;
    }
  }

  #before(a: Timer, b: Timer): boolean {
    return a.due < b.due || (a.due === b.due && a.id < b.id);
  }
}
