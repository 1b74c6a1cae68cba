/**
 * The one clock every actor uses. XState v5 accepts `{ setTimeout, clearTimeout }` as `createActor(…, { clock })`;
 * we add `now()` (epoch milliseconds) so machines and the orchestrator never read `Date.now()` themselves.
 */
export type TimerId = unknown;

export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerId;
  clearTimeout(id: TimerId): void;
}

/** Wall-clock time for the daemon. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (id) => clearTimeout(id as ReturnType<typeof setTimeout>),
};
