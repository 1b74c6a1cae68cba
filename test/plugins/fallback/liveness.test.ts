/**
 * Dead fallback skills must not stall every utterance (OVOS-FALLBACK-1 §6.1: a silent skill costs the whole ping
 * timeout). On the embedded bus a closed connection removes what was registered over it; on any bus — and on a
 * foreign one it is the only protection — a skill that keeps timing out is suspended by the circuit breaker.
 * Harness: LocalBus (connections played by name) + ManualClock; no sleeps.
 */
import { describe, expect, it } from 'vitest';
import { createMessage, forward, reply, type JsonObject, type Message } from '../../../src/bus/message.js';
import { sessionFromObject } from '../../../src/bus/session.js';
import { createHarness, fallbackSkill, withConfig, type Harness } from '../../support/harness.js';

const CONFIG = withConfig((config) => ({ ...config, pipeline: ['fallback_high', 'fallback_medium', 'fallback_low'] }));
const PING_TIMEOUT_MS = CONFIG.fallback.pingTimeoutMs;
const SUSPEND_MS = CONFIG.fallback.suspendMs;

const session = (id: string): JsonObject => ({ session_id: id });
const withReason = (h: Harness, reason: string): Array<Record<string, unknown>> => h.logs.filter((line) => line['reason'] === reason);
const KEPT = 'fallback registrations kept, unbound: asked again once their skill is heard from or may be back (those away: once a client connection opens)';
const dispatches = (h: Harness): string[] => h.wire.filter((m) => m.type.endsWith(':fallback')).map((m) => m.type);

/** A fallback skill playing over the named client connection: registers (in each session given), answers pings. */
function connectedSkill(
  h: Harness,
  skillId: string,
  priority: number,
  connection: string,
  options: { sessions?: readonly string[]; verdict?: boolean | 'silent' } = {},
): { pings: Message[]; register: (connectionNow?: string) => void } {
  const pings: Message[] = [];
  const verdict = options.verdict ?? 'silent';
  h.bus.subscribe((m) => {
    if (m.type === `${skillId}.fallback.ping`) {
      pings.push(m);
      if (verdict !== 'silent') h.bus.publish(reply(m, `${skillId}.fallback.pong`, { skill_id: skillId, can_handle: verdict }), connection);
    } else if (m.type === `${skillId}:fallback`) {
      h.bus.publish(forward(m, 'ovos.utterance.speak', { utterance: `${skillId} says hi` }), connection);
      h.bus.publish(reply(m, 'mycroft.skill.handler.complete'), connection);
    }
  });
  const register = (connectionNow = connection): void => {
    for (const id of options.sessions ?? ['default']) {
      h.bus.publish(createMessage('ovos.fallback.register', { skill_id: skillId, priority }, { skill_id: skillId, session: session(id) }), connectionNow);
    }
  };
  register();
  return { pings, register };
}

describe('FALLBACK-1 §3.4 / §6.1 a closed connection takes its registrations out of the pools (embedded bus)', () => {
  it('FALLBACK-1 §6.1: after the connection of a dead skill closes, the next utterance pays no ping timeout for it', async () => {
    const h = createHarness(CONFIG);
    const dead = connectedSkill(h, 'dead', 10, 'c1', { sessions: ['default', 'kitchen'] });
    fallbackSkill(h, 'live', 20);
    await h.settle();
    expect(h.system.fallback.registry.availableFor('kitchen').has('dead')).toBe(true);

    h.bus.closeConnection('c1');
    await h.settle();
    expect(h.system.fallback.registry.availableFor('kitchen').has('dead')).toBe(false);
    expect(h.system.fallback.registry.availableFor('default').has('dead')).toBe(false);
    const line = withReason(h, 'connection_closed').find((l) => l['msg'] === KEPT);
    expect(line).toMatchObject({ level: 30, connection: 'c1', skills: ['dead'], sessions: ['default', 'kitchen'], away: ['dead'] });

    h.utter('hello', { session: session('kitchen') });
    await h.advance(1);
    expect(dead.pings).toEqual([]);
    expect(dispatches(h)).toEqual(['live:fallback']);
    expect(h.of('ovos.utterance.handled')).toHaveLength(1);
  });

  it('FALLBACK-1 §3.1: a skill that re-registered over a newer connection keeps that registration when the old one closes', async () => {
    const h = createHarness(CONFIG);
    const a = connectedSkill(h, 'a', 10, 'old', { verdict: true });
    await h.settle();
    a.register('new'); // reconnected before the old socket was noticed dead
    await h.settle();
    h.bus.closeConnection('old');
    await h.settle();
    expect(h.system.fallback.registry.availableFor('default').has('a')).toBe(true);
    expect(withReason(h, 'connection_closed').filter((l) => l['msg'] === KEPT)).toEqual([]); // nothing was bound to it any more

    h.bus.closeConnection('new');
    await h.settle();
    expect(h.system.fallback.registry.availableFor('default').has('a')).toBe(false);
  });

  it('FALLBACK-1 §3.4: closing a connection leaves registrations made over other connections and in-process alone', async () => {
    const h = createHarness(CONFIG);
    connectedSkill(h, 'a', 10, 'c1', { sessions: ['s1'] });
    connectedSkill(h, 'b', 20, 'c2', { sessions: ['s1'] });
    fallbackSkill(h, 'local', 30, { session: session('s1') });
    await h.settle();
    h.bus.closeConnection('c1');
    await h.settle();
    expect([...h.system.fallback.registry.availableFor('s1').keys()].sort()).toEqual(['b', 'local']);
  });
});

describe('FALLBACK-1 §6.1 circuit breaker through the plugin (no connection identity: a foreign bus)', () => {
  it('FALLBACK-1 §6.1: 3 consecutive timeouts suspend a skill for suspendMs (one warn), the others keep their order; at suspendMs it is probed again', async () => {
    const h = createHarness(CONFIG);
    const dead = fallbackSkill(h, 'dead', 20, { decide: () => 'silent' });
    fallbackSkill(h, 'first', 10, { decide: () => false });
    fallbackSkill(h, 'live', 30);
    await h.settle();
    const view = sessionFromObject(session('s1'));

    for (let i = 1; i <= 3; i++) {
      h.utter(`utterance ${i}`, { session: session('s1') });
      await h.advance(PING_TIMEOUT_MS);
      expect(dispatches(h)).toHaveLength(i);
    }
    const suspendedAt = h.clock.now();
    expect(dead.pings).toHaveLength(3);
    const suspended = withReason(h, 'skill_suspended');
    expect(suspended).toHaveLength(1);
    expect(suspended[0]).toMatchObject({ level: 40, skill_id: 'dead', timeouts: 3, for_ms: SUSPEND_MS });
    // Left out after §5, like a policy filter: the others keep their order.
    expect(h.system.fallback.pool(view, [0, 49])).toEqual(['first', 'live']);

    // Suspended: the next utterance is answered at once, the dead skill not asked.
    h.utter('utterance 4', { session: session('s1') });
    await h.advance(1);
    expect(dispatches(h)).toHaveLength(4);
    expect(dead.pings).toHaveLength(3);

    expect(h.clock.pending).toBe(0);
    h.clock.advance(suspendedAt + SUSPEND_MS - 1 - h.clock.now());
    h.utter('utterance 5', { session: session('s1') });
    await h.settle();
    expect(dispatches(h)).toHaveLength(5);
    expect(dead.pings).toHaveLength(3); // at suspendMs - 1: still out

    expect(h.clock.pending).toBe(0);
    h.clock.advance(1);
    h.utter('utterance 6', { session: session('s1') });
    await h.settle();
    expect(dead.pings).toHaveLength(4); // at suspendMs: half-open, asked again
    await h.advance(PING_TIMEOUT_MS);
    expect(dispatches(h)).toHaveLength(6);
    // The probe timed out: suspended again at once, for twice as long. Still one warn per transition.
    expect(withReason(h, 'skill_suspended').map((l) => [l['timeouts'], l['for_ms']])).toEqual([[3, SUSPEND_MS], [4, 2 * SUSPEND_MS]]);
    expect(h.system.fallback.breaker.suspended('dead')).toBe(true);
  });

  it('FALLBACK-1 §6.1: a ping timeout is a warn, at most once per skill per 60 s, then with the suppressed count', async () => {
    const h = createHarness(CONFIG);
    fallbackSkill(h, 'dead', 10, { decide: () => 'silent' });
    fallbackSkill(h, 'live', 30);
    await h.settle();
    const start = h.clock.now();
    for (let i = 1; i <= 2; i++) {
      h.utter(`utterance ${i}`, { session: session('s1') });
      await h.advance(PING_TIMEOUT_MS);
    }
    const first = withReason(h, 'ping_timeout');
    expect(first).toHaveLength(1);
    expect(first[0]).toMatchObject({ level: 40, skill_id: 'dead', after_ms: PING_TIMEOUT_MS, suppressed: 0 });

    expect(h.clock.pending).toBe(0);
    h.clock.advance(start + 60_000 - h.clock.now());
    h.utter('utterance 3', { session: session('s1') });
    await h.advance(PING_TIMEOUT_MS);
    const lines = withReason(h, 'ping_timeout');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatchObject({ level: 40, skill_id: 'dead', suppressed: 1 });
  });

  it('FALLBACK-1 §6.1: any pong — even a late one, dropped — counts as alive and resets the count', async () => {
    const h = createHarness(CONFIG);
    const slow = fallbackSkill(h, 'slow', 10, { decide: () => 'silent' });
    fallbackSkill(h, 'live', 30);
    await h.settle();
    for (let i = 1; i <= 2; i++) {
      h.utter(`utterance ${i}`, { session: session('s1') });
      await h.advance(PING_TIMEOUT_MS);
    }
    // The answer to the second ping arrives after its contest ended: dropped, but the skill is alive.
    h.bus.publish(reply(slow.pings[1]!, 'slow.fallback.pong', { skill_id: 'slow', can_handle: false }));
    await h.settle();
    expect(withReason(h, 'finished_contest').map((l) => l['type'])).toEqual(['slow.fallback.pong']);

    h.utter('utterance 3', { session: session('s1') });
    await h.advance(PING_TIMEOUT_MS);
    expect(withReason(h, 'skill_suspended')).toEqual([]);
    expect(h.system.fallback.breaker.suspended('slow')).toBe(false);
  });

  it('FALLBACK-1 §6.1: a pong from a suspended skill resumes it (info, once); a re-registration does too', async () => {
    const h = createHarness(CONFIG);
    const dead = fallbackSkill(h, 'dead', 10, { decide: () => 'silent' });
    fallbackSkill(h, 'live', 30);
    await h.settle();
    for (let i = 1; i <= 3; i++) {
      h.utter(`utterance ${i}`, { session: session('s1') });
      await h.advance(PING_TIMEOUT_MS);
    }
    expect(h.system.fallback.breaker.suspended('dead')).toBe(true);
    h.bus.publish(reply(dead.pings[2]!, 'dead.fallback.pong', { skill_id: 'dead', can_handle: false }));
    await h.settle();
    expect(withReason(h, 'skill_resumed')).toEqual([expect.objectContaining({ level: 30, skill_id: 'dead' })]);
    h.utter('utterance 4', { session: session('s1') });
    await h.settle();
    expect(dead.pings).toHaveLength(4);
    await h.advance(PING_TIMEOUT_MS);

    // Suspend it again (two more timeouts make three), then register again: a fresh start.
    for (let i = 5; i <= 6; i++) {
      h.utter(`utterance ${i}`, { session: session('s1') });
      await h.advance(PING_TIMEOUT_MS);
    }
    expect(h.system.fallback.breaker.suspended('dead')).toBe(true);
    h.bus.publish(createMessage('ovos.fallback.register', { skill_id: 'dead', priority: 10 }, { skill_id: 'dead', session: session('default') }));
    await h.settle();
    expect(h.system.fallback.breaker.suspended('dead')).toBe(false);
    expect(withReason(h, 'skill_resumed')).toHaveLength(2);
  });
});

describe('FALLBACK-1 §6.1 a skill whose connection closes during a contest', () => {
  it('FALLBACK-1 §6.1: the awaited skill\'s connection closes → the next skill is asked at once, not after the ping timeout', async () => {
    const h = createHarness(CONFIG);
    const dead = connectedSkill(h, 'dead', 10, 'c1'); // silent: it will never answer
    const live = fallbackSkill(h, 'live', 20);
    await h.settle();
    h.utter('hello', { session: session('s1') });
    await h.advance(5);
    expect(dead.pings).toHaveLength(1);
    expect(live.pings).toHaveLength(0);
    h.bus.closeConnection('c1');
    await h.advance(1);
    expect(live.pings).toHaveLength(1);
    expect(dispatches(h)).toEqual(['live:fallback']);
    expect(h.of('ovos.utterance.handled')).toHaveLength(1);
    expect(withReason(h, 'ping_timeout')).toEqual([]);
  });

  it('FALLBACK-1 §6.1: a skill still ahead in the pool whose connection closes is skipped when its turn comes', async () => {
    const h = createHarness(withConfig((config) => ({ ...config, pipeline: ['fallback_high'], fallback: { ...config.fallback, stages: { fallback_high: [0, 100] } } })));
    fallbackSkill(h, 'first', 10, { decide: () => 'silent' });
    const doomed = connectedSkill(h, 'doomed', 20, 'c2', { verdict: true });
    const last = fallbackSkill(h, 'last', 30);
    await h.settle();
    h.utter('hello', { session: session('s1') });
    await h.advance(5);
    h.bus.closeConnection('c2'); // while 'first' is being asked
    await h.advance(PING_TIMEOUT_MS);
    expect(doomed.pings).toEqual([]);
    expect(last.pings).toHaveLength(1);
    expect(dispatches(h)).toEqual(['last:fallback']);
    expect(h.of('ovos.utterance.handled')).toHaveLength(1);
  });
});

describe('ovos-wire-today: a legacy fallback skill (ovos-workshop) whose connection drops and comes back is asked again', () => {
  /**
   * An ovos-workshop FallbackSkill: registers once (at its start-up) over `connection`, answers every broadcast ping
   * over the connection it is on now (`on.connection`, changed by its bus client's reconnect; null while it is down).
   */
  function workshopSkill(h: Harness, skillId: string, priority: number, connection: string): { on: { connection: string | null }; requests: Message[] } {
    const on: { connection: string | null } = { connection };
    const requests: Message[] = [];
    h.bus.subscribe((m) => {
      if (on.connection === null) return;
      if (m.type === 'ovos.skills.fallback.ping') h.bus.publish(reply(m, 'ovos.skills.fallback.pong', { skill_id: skillId, can_handle: true }), on.connection);
      else if (m.type === `ovos.skills.fallback.${skillId}.request`) {
        requests.push(m);
        h.bus.publish({ ...m, type: `ovos.skills.fallback.${skillId}.response`, data: { result: true, fallback_handler: 'X.handle_fallback' } }, on.connection);
        h.bus.publish({ ...m, type: 'ovos.utterance.handled', data: {} }, on.connection);
      }
    });
    h.bus.publish(createMessage('ovos.skills.fallback.register', { skill_id: skillId, priority }, { session: session('default') }), connection);
    return { on, requests };
  }
  const winners = (h: Harness): unknown[] => h.of('ovos.intent.matched').map((m) => m.data['skill_id']);

  /** Its bus client reconnects (ovos-bus-client does): a new connection opens, and the skill speaks over it. */
  const reconnect = (h: Harness, skill: { on: { connection: string | null } }, connection: string): void => {
    h.bus.openConnection(connection);
    skill.on.connection = connection;
  };
  /** A legacy skill (priority 10, on c1) and a catch-all (90); the skill's socket has just dropped (not yet back). */
  async function dropped(skillId: string): Promise<{ h: Harness; skill: { on: { connection: string | null } } }> {
    const h = createHarness(CONFIG);
    const skill = workshopSkill(h, skillId, 10, 'c1');
    fallbackSkill(h, 'catch.all', 90);
    await h.settle();
    skill.on.connection = null;
    h.bus.closeConnection('c1');
    return { h, skill };
  }

  it('FALLBACK-1 §3.1 + ovos-wire-today: after a reconnect the skill, which never registers again, answers the next utterance and wins it', async () => {
    const h = createHarness(CONFIG);
    const skill = workshopSkill(h, 'wiki.fb', 10, 'c1');
    fallbackSkill(h, 'catch.all', 90);
    await h.settle();
    h.bus.closeConnection('c1');
    reconnect(h, skill, 'c2');
    await h.settle();
    expect(withReason(h, 'connection_closed').find((l) => l['msg'] === KEPT)).toMatchObject({ skills: ['wiki.fb'], sessions: ['default'] });
    expect(h.system.fallback.registry.entry('default', 'wiki.fb')).toEqual({ priority: 10, connection: undefined, legacy: true, unheard: true, backSince: 1 });

    h.utter('what is a barrel roll', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(5);
    expect(winners(h)).toEqual(['wiki.fb']);
    expect(skill.requests).toHaveLength(1);
    expect(h.of('ovos.utterance.handled')).toHaveLength(1);
    expect(h.system.fallback.registry.entry('default', 'wiki.fb')?.connection).toBe('c2');
    // Bound again: when c2 closes, it is kept again — never lost.
    h.bus.closeConnection('c2');
    await h.settle();
    expect(h.system.fallback.registry.entry('default', 'wiki.fb')).toEqual({ priority: 10, connection: undefined, legacy: true, unheard: true, away: true });
  });

  it('FALLBACK-1 §6.1: a legacy skill whose connection closes mid-contest is passed over at once in that contest; it is kept for the next ones', async () => {
    const h = createHarness(CONFIG);
    const skill = workshopSkill(h, 'wiki.fb', 10, 'c1');
    skill.on.connection = null; // hung: it will not answer this ping
    fallbackSkill(h, 'catch.all', 90);
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(5);
    expect(winners(h)).toEqual([]);
    h.bus.closeConnection('c1');
    await h.advance(1);
    expect(winners(h)).toEqual(['catch.all']);
    expect(withReason(h, 'ping_timeout')).toEqual([]);
    reconnect(h, skill, 'c2');
    h.utter('hello again', { session: session('s1'), utteranceId: 'u2' });
    await h.advance(5);
    expect(winners(h)).toEqual(['catch.all', 'wiki.fb']);
    expect(h.of('ovos.utterance.handled')).toHaveLength(2);
  });

  it('FALLBACK-1 §6.1: while it is away (no client connection opened since its closed), no contest waits for it — not even a burst; back, it wins', async () => {
    const { h, skill } = await dropped('wiki.fb');
    await h.settle();
    for (const id of ['b1', 'b2', 'b3', 'b4']) h.utter('hello', { session: session(id), utteranceId: id });
    await h.advance(1);
    expect(winners(h)).toEqual(['catch.all', 'catch.all', 'catch.all', 'catch.all']);
    expect(h.of('ovos.skills.fallback.ping')).toEqual([]);
    reconnect(h, skill, 'c2');
    h.utter('what is a barrel roll', { session: session('s1'), utteranceId: 'after' });
    await h.advance(5);
    expect(winners(h).at(-1)).toBe('wiki.fb');
    expect(h.of('ovos.utterance.handled')).toHaveLength(5);
    expect(withReason(h, 'ping_timeout')).toEqual([]);
  });

  it('FALLBACK-1 §6.1: a connection that opens and is not it brings it back to the pools; silent, it costs one ping timeout, then is dormant — no later utterance or connection waits for it', async () => {
    const { h } = await dropped('gone.fb');
    h.bus.openConnection('someone-else');
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'u0' });
    await h.advance(PING_TIMEOUT_MS - 1);
    expect(winners(h)).toEqual([]);
    await h.advance(1);
    expect(winners(h)).toEqual(['catch.all']);
    expect(h.system.fallback.registry.entry('default', 'gone.fb')).toEqual({ priority: 10, connection: undefined, legacy: true, unheard: true, away: true, dormant: true });
    expect(withReason(h, 'maybe_back_missed')).toEqual([expect.objectContaining({ level: 30, skill_id: 'gone.fb', sessions: ['default'] })]);
    for (let i = 1; i <= 5; i++) {
      h.bus.openConnection(`client-${i}`);
      h.utter('hello', { session: session('s1'), utteranceId: `u${i}` });
      await h.advance(1);
      expect(winners(h)).toHaveLength(i + 1);
    }
    expect(winners(h)).toEqual(Array(6).fill('catch.all'));
    expect(withReason(h, 'ping_timeout')).toHaveLength(1);
    expect(withReason(h, 'skill_suspended')).toEqual([]);
  });

  const AWAY_AGAIN = 'fallback skills away again: every connection they might have been on has closed without them being heard';

  it('FALLBACK-1 §6.1: a short-lived connection (the say command) that brought it back closes without it: away again, no contest waits for it', async () => {
    const { h } = await dropped('gone.fb');
    h.bus.openConnection('say-1');
    await h.settle();
    expect(h.system.fallback.registry.availableFor('s1').has('gone.fb')).toBe(true);
    h.bus.closeConnection('say-1');
    await h.settle();
    expect(h.system.fallback.registry.entry('default', 'gone.fb')).toEqual({ priority: 10, connection: undefined, legacy: true, unheard: true, away: true });
    expect(withReason(h, 'connection_closed').filter((l) => l['msg'] === AWAY_AGAIN)).toEqual([
      expect.objectContaining({ connection: 'say-1', skills: ['gone.fb'], sessions: ['default'] }),
    ]);
    for (const id of ['u1', 'u2', 'u3', 'u4']) h.utter('hello', { session: session(id), utteranceId: id });
    await h.advance(1);
    expect(winners(h)).toEqual(['catch.all', 'catch.all', 'catch.all', 'catch.all']);
    expect(h.of('ovos.skills.fallback.ping')).toEqual([]);
    expect(withReason(h, 'ping_timeout')).toEqual([]);
  });

  it('FALLBACK-1 §6.1: a contest waiting for it when the connection that brought it back closes passes it over at once, not after its ping timeout', async () => {
    const { h } = await dropped('gone.fb');
    h.bus.openConnection('say-1');
    await h.settle();
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(PING_TIMEOUT_MS - 1);
    expect(winners(h)).toEqual([]);
    h.bus.closeConnection('say-1');
    await h.advance(1);
    expect(winners(h)).toEqual(['catch.all']);
    expect(withReason(h, 'ping_timeout')).toEqual([]);
    expect(h.of('ovos.utterance.handled')).toHaveLength(1);
  });

  it('FALLBACK-1 §6.1: two connections opened since it went away: it stays in the pools while either is open, and its pong on the second binds it', async () => {
    const { h, skill } = await dropped('wiki.fb');
    h.bus.openConnection('say-1');
    reconnect(h, skill, 'c2');
    await h.settle();
    h.bus.closeConnection('say-1');
    await h.settle();
    expect(h.system.fallback.registry.entry('default', 'wiki.fb')).toEqual({ priority: 10, connection: undefined, legacy: true, unheard: true, backSince: 1 });
    expect(withReason(h, 'connection_closed').filter((l) => l['msg'] === AWAY_AGAIN)).toEqual([]);
    h.utter('what is a barrel roll', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(5);
    expect(winners(h)).toEqual(['wiki.fb']);
    expect(h.system.fallback.registry.entry('default', 'wiki.fb')).toEqual({ priority: 10, connection: 'c2', legacy: true });
  });

  it('FALLBACK-1 §6.1: closed within the reconnect window of a connection that then closes without it: away again', async () => {
    const h = createHarness(CONFIG);
    workshopSkill(h, 'wiki.fb', 10, 'c1');
    fallbackSkill(h, 'catch.all', 90);
    await h.settle();
    h.bus.openConnection('listener');
    h.bus.closeConnection('c1', true); // noticed by the heartbeat
    await h.settle();
    expect(h.system.fallback.registry.entry('default', 'wiki.fb')).toEqual({ priority: 10, connection: undefined, legacy: true, unheard: true, backSince: 1 });
    h.bus.closeConnection('listener');
    await h.settle();
    expect(h.system.fallback.registry.entry('default', 'wiki.fb')?.away).toBe(true);
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(1);
    expect(winners(h)).toEqual(['catch.all']);
  });

  it('FALLBACK-1 §6.1: contests that ask at once while it may be back but is silent each wait its ping timeout once, and count once with the circuit breaker', async () => {
    const { h, skill } = await dropped('wiki.fb');
    h.bus.openConnection('c2'); // its socket is open, its client not yet ready
    await h.settle();
    for (const id of ['b1', 'b2', 'b3', 'b4']) h.utter('hello', { session: session(id), utteranceId: id });
    await h.advance(PING_TIMEOUT_MS - 1);
    expect(winners(h)).toEqual([]);
    await h.advance(1);
    expect(winners(h)).toEqual(['catch.all', 'catch.all', 'catch.all', 'catch.all']);
    expect(withReason(h, 'skill_suspended')).toEqual([]);
    expect(withReason(h, 'maybe_back_missed')).toHaveLength(1);
    // Dormant, it is not waited for; the next utterance's one broadcast ping, at its arrival, lets it be heard — back
    // before that utterance's fallback stages, its "yes" in hand there.
    skill.on.connection = 'c2';
    h.utter('what is a barrel roll', { session: session('s1'), utteranceId: 'after' });
    await h.advance(5);
    expect(winners(h).at(-1)).toBe('wiki.fb');
    expect(h.of('ovos.skills.fallback.ping').filter((m) => m.context['utterance_id'] === 'after')).toHaveLength(1);
    expect(h.system.fallback.registry.entry('default', 'wiki.fb')).toEqual({ priority: 10, connection: 'c2', legacy: true });
    h.utter('what is a barrel roll', { session: session('s1'), utteranceId: 'after-2' });
    await h.advance(5);
    expect(winners(h).at(-1)).toBe('wiki.fb');
    expect(withReason(h, 'ping_timeout')).toHaveLength(1);
  });

  const HEARTBEAT_MS = CONFIG.bus.heartbeatMs;

  it('FALLBACK-1 §6.1: its bus client reconnected before the old socket was noticed dead (within two heartbeats): not away — back, it wins', async () => {
    const h = createHarness(CONFIG);
    const skill = workshopSkill(h, 'wiki.fb', 10, 'c1');
    fallbackSkill(h, 'catch.all', 90);
    await h.settle();
    reconnect(h, skill, 'c2'); // the new socket, silent until asked
    await h.advance(2 * HEARTBEAT_MS); // the dead c1 is noticed as late as the bus server can notice it
    h.bus.closeConnection('c1', true);
    await h.settle();
    expect(h.system.fallback.registry.entry('default', 'wiki.fb')).toEqual({ priority: 10, connection: undefined, legacy: true, unheard: true, backSince: 1 });
    expect(withReason(h, 'connection_closed').find((l) => l['msg'] === KEPT)).toMatchObject({ skills: ['wiki.fb'], away: [] });
    h.utter('what is a barrel roll', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(5);
    expect(winners(h)).toEqual(['wiki.fb']);
  });

  it('FALLBACK-1 §6.1: a connection opened longer than two heartbeats before the close is not taken for its reconnect: away', async () => {
    const h = createHarness(CONFIG);
    workshopSkill(h, 'wiki.fb', 10, 'c1');
    h.bus.openConnection('listener');
    await h.advance(2 * HEARTBEAT_MS + 1);
    h.bus.closeConnection('c1', true); // noticed by the heartbeat
    await h.settle();
    expect(h.system.fallback.registry.entry('default', 'wiki.fb')).toEqual({ priority: 10, connection: undefined, legacy: true, unheard: true, away: true });
    expect(withReason(h, 'connection_closed').find((l) => l['msg'] === KEPT)).toMatchObject({ away: ['wiki.fb'] });
  });

  it('FALLBACK-1 §6.1: closed as it happened (its process died, or it closed the socket), right after another client connected: away at once', async () => {
    const h = createHarness(CONFIG);
    const skill = workshopSkill(h, 'wiki.fb', 10, 'c1');
    fallbackSkill(h, 'catch.all', 90);
    await h.settle();
    h.bus.openConnection('front-end'); // another client, still open
    skill.on.connection = null;
    h.bus.closeConnection('c1'); // noticed at once: its bus client can only reconnect after
    await h.settle();
    expect(h.system.fallback.registry.entry('default', 'wiki.fb')).toEqual({ priority: 10, connection: undefined, legacy: true, unheard: true, away: true });
    expect(withReason(h, 'connection_closed').find((l) => l['msg'] === KEPT)).toMatchObject({ away: ['wiki.fb'] });
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(1);
    expect(winners(h)).toEqual(['catch.all']);
    expect(withReason(h, 'ping_timeout')).toEqual([]);
    reconnect(h, skill, 'c2');
    h.utter('what is a barrel roll', { session: session('s1'), utteranceId: 'u2' });
    await h.advance(5);
    expect(winners(h)).toEqual(['catch.all', 'wiki.fb']);
  });

  it('FALLBACK-1 §6.1: a connection that opened and closed again before the close does not count', async () => {
    const h = createHarness(CONFIG);
    workshopSkill(h, 'wiki.fb', 10, 'c1');
    h.bus.openConnection('cli');
    h.bus.closeConnection('cli');
    h.bus.closeConnection('c1', true); // noticed by the heartbeat
    await h.settle();
    expect(h.system.fallback.registry.entry('default', 'wiki.fb')?.away).toBe(true);
  });

  it('FALLBACK-1 §3.4: already speaking over its new connection when the old one is noticed dead: bound to the new one at once', async () => {
    const h = createHarness(CONFIG);
    const skill = workshopSkill(h, 'wiki.fb', 10, 'c1');
    await h.settle();
    reconnect(h, skill, 'c2');
    // It answers another broadcast over c2 (an utterance no stage of its holds: a pong nobody awaits still counts as heard).
    h.bus.publish(createMessage('ovos.skills.fallback.pong', { skill_id: 'wiki.fb', can_handle: false }, { session: session('s9'), utterance_id: 'elsewhere' }), 'c2');
    await h.settle();
    h.bus.closeConnection('c1');
    await h.settle();
    expect(h.system.fallback.registry.entry('default', 'wiki.fb')).toEqual({ priority: 10, connection: 'c2', legacy: true });
  });

  it('FALLBACK-1 §3.4 + §6.1: a session\'s own instance going with its connection does not pass over the "default" instance, still registered in process', async () => {
    const h = createHarness(CONFIG);
    h.bus.subscribe((m) => {
      if (m.type === 'X.fallback.ping') h.clock.setTimeout(() => h.bus.publish(reply(m, 'X.fallback.pong', { skill_id: 'X', can_handle: true })), 200);
      else if (m.type === 'X:fallback') h.bus.publish(reply(m, 'mycroft.skill.handler.complete'));
    });
    h.bus.publish(createMessage('ovos.fallback.register', { skill_id: 'X', priority: 10 }, { skill_id: 'X', session: session('default') }));
    h.bus.publish(createMessage('ovos.fallback.register', { skill_id: 'X', priority: 10 }, { skill_id: 'X', session: session('kitchen') }), 'c1');
    fallbackSkill(h, 'catch.all', 90);
    await h.settle();
    h.utter('hello', { session: session('kitchen'), utteranceId: 'u1' });
    await h.advance(50);
    h.bus.closeConnection('c1');
    await h.advance(1000);
    expect(winners(h)).toEqual(['X']);
  });

  it('FALLBACK-1 §3.1: a spec skill whose socket drops keeps its registration: away, then maybe back on a new connection, where its pong wins — it never registered again', async () => {
    const h = createHarness(CONFIG);
    const spec = connectedSkill(h, 'spec.fb', 10, 'c1'); // its answers are played over c2 below
    fallbackSkill(h, 'catch.all', 90);
    await h.settle();
    h.bus.closeConnection('c1');
    await h.settle();
    expect(h.system.fallback.registry.entry('default', 'spec.fb')).toEqual({ priority: 10, connection: undefined, legacy: false, unheard: true, away: true });
    expect(withReason(h, 'connection_closed').find((l) => l['msg'] === KEPT)).toMatchObject({ skills: ['spec.fb'], away: ['spec.fb'] });
    h.utter('hello', { session: session('s1'), utteranceId: 'u1' });
    await h.advance(1);
    expect(winners(h)).toEqual(['catch.all']);
    expect(spec.pings).toHaveLength(0);
    // Its socket comes back (answering over c2 from now on): asked, it answers, wins, and is bound to c2.
    h.bus.openConnection('c2');
    const pong = spec.pings.length;
    h.bus.subscribe((m) => {
      if (m.type === 'spec.fb.fallback.ping') h.bus.publish(reply(m, 'spec.fb.fallback.pong', { skill_id: 'spec.fb', can_handle: true }), 'c2');
    });
    h.utter('hello', { session: session('s1'), utteranceId: 'u2' });
    await h.advance(5);
    expect(spec.pings.length).toBe(pong + 1);
    expect(winners(h)).toEqual(['catch.all', 'spec.fb']);
    expect(h.system.fallback.registry.entry('default', 'spec.fb')?.connection).toBe('c2');
  });
});
