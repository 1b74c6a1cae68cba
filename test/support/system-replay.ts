/**
 * Helpers to replay an abstract test model's path against the WHOLE system (createHarness: orchestrator,
 * supervisor, plugins, LocalBus, ManualClock) at exact clock times.
 *
 *  - `driveClock(h)`: the harness clock driven to absolute times through `h.advance`, which jumps from one due
 *    timer to the next (promise continuations settled after each), so a 5 s collection ceiling costs a handful of
 *    steps; zero-delay timers fire before anything else happens at the same instant (a `setTimeout(…, 0)` fires
 *    before a message that needs a bus round trip).
 *  - `puppetCqSkill(h, id)`: a common-query skill (OVOS-COMMON-QUERY-1 §11) that does nothing on its own: the test
 *    makes it pong or respond at the model's times, derived via reply from the ping / request it received
 *    (utterance echoed), optionally over its own connection (`h.bus.publish(message, connection)`). A warm-up can
 *    give it an automatic behaviour.
 *  - `holdingFallbackSkill(h, id, priority, holdMs)`: a fallback skill that answers its ping `holdMs` later.
 *  - `wireLog(h)`: every delivered message with the clock time it was delivered at.
 */
import { createMessage, reply, utteranceIdOf, type JsonObject, type Message } from '../../src/bus/message.js';
import type { Harness } from './harness.js';

export interface ClockDriver {
  /** Clock time now (epoch ms). */
  now(): number;
  /** Fire every timer due up to `at` (epoch ms) in due order, settling between instants; leave the clock at `at`. */
  advanceTo(at: number): Promise<void>;
  /** Settle, firing timers that are already due (zero delays armed just now). */
  flush(): Promise<void>;
  /** Timers armed and not yet fired or cleared. */
  pending(): number;
}

/** The harness clock as a driver of absolute times (`h.advance` jumps from one due timer to the next). */
export function driveClock(h: Harness): ClockDriver {
  const clock = h.clock;
  const advanceTo = async (at: number): Promise<void> => {
    if (at < clock.now()) throw new Error(`driveClock: cannot go back from ${clock.now()} to ${at}`);
    await h.advance(at - clock.now());
  };
  return {
    now: () => clock.now(),
    advanceTo,
    flush: () => advanceTo(clock.now()),
    pending: () => clock.pending,
  };
}

export interface Timed {
  readonly at: number;
  readonly message: Message;
}

/** Every message delivered on the bus from now on, with the clock time it was delivered at. */
export function wireLog(h: Harness): Timed[] {
  const seen: Timed[] = [];
  h.bus.subscribe((message) => seen.push({ at: h.clock.now(), message }));
  return seen;
}

export interface PuppetAuto {
  /** Pong every ping at once: `can_answer` (latency_ms from the puppet). */
  readonly pong?: boolean;
  /** Answer every request `afterMs` later (0: at once); `null` answer = a response without `answer`. */
  readonly answer?: { readonly answer: string | null; readonly conf: number; readonly afterMs: number };
}

export interface PuppetCqSkill {
  readonly skillId: string;
  readonly pings: Timed[];
  readonly requests: Timed[];
  /** Automatic behaviour (warm-ups, scripted companions); null = the test drives it. */
  auto: PuppetAuto | null;
  /** §6.2 pong to the ping of `utteranceId` (default: the latest ping). */
  pong(canAnswer: boolean, options?: { readonly utteranceId?: string }): void;
  /** §7.1 response to the request of `utteranceId` (default: the latest request); `null` answer = no `answer`. */
  respond(answer: string | null, conf: number, options?: { readonly utteranceId?: string }): void;
}

export function puppetCqSkill(h: Harness, skillId: string, options: { readonly latencyMs?: number; readonly connection?: string } = {}): PuppetCqSkill {
  const pings: Timed[] = [];
  const requests: Timed[] = [];
  const publish = (message: Message): void => {
    if (options.connection === undefined) h.bus.publish(message);
    else h.bus.publish(message, options.connection);
  };
  const pick = (list: Timed[], utteranceId: string | undefined, what: string): Message => {
    const found = utteranceId === undefined ? list.at(-1) : [...list].reverse().find((t) => utteranceIdOf(t.message) === utteranceId);
    if (found === undefined) throw new Error(`puppet ${skillId}: no ${what}${utteranceId === undefined ? '' : ` for ${utteranceId}`} to answer`);
    return found.message;
  };
  const utteranceOf = (message: Message): string => {
    const utterance = message.data['utterance'];
    if (typeof utterance !== 'string') throw new Error(`puppet ${skillId}: ${message.type} without utterance`);
    return utterance;
  };
  const pongTo = (ping: Message, canAnswer: boolean): void => {
    const data: JsonObject = { utterance: utteranceOf(ping), skill_id: skillId, can_answer: canAnswer };
    if (options.latencyMs !== undefined) data['latency_ms'] = options.latencyMs;
    publish(reply(ping, 'ovos.common_query.pong', data));
  };
  const respondTo = (request: Message, answer: string | null, conf: number): void => {
    const utterance = utteranceOf(request);
    const data: JsonObject = answer === null ? { utterance, skill_id: skillId } : { utterance, skill_id: skillId, answer, conf };
    publish(reply(request, `${skillId}.common_query.response`, data));
  };
  const puppet: PuppetCqSkill = {
    skillId,
    pings,
    requests,
    auto: null,
    pong: (canAnswer, { utteranceId } = {}) => pongTo(pick(pings, utteranceId, 'ping'), canAnswer),
    respond: (answer, conf, { utteranceId } = {}) => respondTo(pick(requests, utteranceId, 'request'), answer, conf),
  };
  h.bus.subscribe((message) => {
    if (message.type === 'ovos.common_query.ping') {
      pings.push({ at: h.clock.now(), message });
      const pong = puppet.auto?.pong;
      if (pong !== undefined) pongTo(message, pong);
    } else if (message.type === `${skillId}:common_query`) {
      requests.push({ at: h.clock.now(), message });
      const answer = puppet.auto?.answer;
      if (answer === undefined) return;
      if (answer.afterMs <= 0) respondTo(message, answer.answer, answer.conf);
      else h.clock.setTimeout(() => respondTo(message, answer.answer, answer.conf), answer.afterMs);
    }
  });
  return puppet;
}

/** OVOS-FALLBACK-1 skill that holds every pong `holdMs` on the clock, then answers `can_handle` (default false). */
export function holdingFallbackSkill(h: Harness, skillId: string, priority: number, holdMs: number, canHandle = false): { readonly pings: Timed[] } {
  const pings: Timed[] = [];
  h.bus.subscribe((message) => {
    if (message.type !== `${skillId}.fallback.ping`) return;
    pings.push({ at: h.clock.now(), message });
    h.clock.setTimeout(() => h.bus.publish(reply(message, `${skillId}.fallback.pong`, { skill_id: skillId, can_handle: canHandle })), holdMs);
  });
  h.bus.publish(createMessage('ovos.fallback.register', { skill_id: skillId, priority }, { skill_id: skillId, session: { session_id: 'default' } }));
  return { pings };
}
