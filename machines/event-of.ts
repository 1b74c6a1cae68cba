/**
 * The event a named guard or action receives, narrowed to the one type it is wired to. XState hands every named
 * guard and action the machine's whole event union; wiring one to another event is a programming error, so it
 * throws (`assertEvent`) instead of quietly answering `false`.
 */
import { assertEvent, type EventObject } from 'xstate';

export function eventOf<E extends EventObject, T extends E['type']>(event: E, type: T | readonly T[]): Extract<E, { type: T }> {
  assertEvent(event, typeof type === 'string' ? type : [...type]);
  return event as unknown as Extract<E, { type: T }>;
}
