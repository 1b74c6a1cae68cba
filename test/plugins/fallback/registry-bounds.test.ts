/**
 * The registry's connection bookkeeping and bounds (src/plugins/fallback/registry.ts). Session ids and skill ids
 * come off the bus, so what one client can make the registry hold is bounded; what a connection registered leaves
 * with it.
 */
import { describe, expect, it } from 'vitest';
import { FallbackRegistry, registrationBytes } from '../../../src/plugins/fallback/registry.js';

const ids = (registry: FallbackRegistry, sessionId: string): string[] => [...registry.availableFor(sessionId).keys()].sort();

describe('FALLBACK-1 §3.4 registrations remember their connection', () => {
  it('FALLBACK-1 §3.4: an entry remembers the connection it was registered over (undefined in-process)', () => {
    const registry = new FallbackRegistry();
    registry.register('default', 'a', 10, 'c1');
    registry.register('default', 'b', 20);
    expect(registry.entry('default', 'a')).toEqual({ priority: 10, connection: 'c1', legacy: false });
    expect(registry.entry('default', 'b')).toEqual({ priority: 20, connection: undefined, legacy: false });
    expect(registry.entry('kitchen', 'a')).toBeUndefined();
  });

  it('FALLBACK-1 §3.4: releaseConnection unbinds that connection’s registrations in every session, spec and legacy alike, and nothing else', () => {
    const registry = new FallbackRegistry();
    registry.register('default', 'a', 10, 'c1');
    registry.register('kitchen', 'a', 90, 'c1');
    registry.register('car', 'k', 30, 'c1', true);
    registry.register('default', 'b', 20, 'c2');
    registry.register('default', 'local', 30);
    expect(registry.releaseConnection('c1')).toEqual([
      { sessionId: 'default', skillId: 'a', bound: true },
      { sessionId: 'kitchen', skillId: 'a', bound: true },
      { sessionId: 'car', skillId: 'k', bound: true },
    ]);
    // Away: kept, in no pool — nobody waits for them.
    expect(registry.entry('default', 'a')).toEqual({ priority: 10, connection: undefined, legacy: false, unheard: true, away: true });
    expect(registry.entry('car', 'k')).toEqual({ priority: 30, connection: undefined, legacy: true, unheard: true, away: true });
    expect(ids(registry, 'kitchen')).toEqual(['b', 'local']);
    expect(ids(registry, 'car')).toEqual(['b', 'local']);
    expect(registry.holds('a')).toBe(true);
    expect(registry.releaseConnection('c1')).toEqual([]);
  });

  it('FALLBACK-1 §6.1: away until a client connection opens, then maybe back (in the pools) until heard from, which binds it', () => {
    const registry = new FallbackRegistry();
    registry.register('default', 'legacy.a', 10, 'c1', true);
    registry.register('kitchen', 'legacy.a', 20, 'c1', true);
    registry.register('default', 'spec.b', 30, 'c1');
    registry.releaseConnection('c1');
    expect(registry.availableFor('default').has('legacy.a')).toBe(false);
    expect(registry.availableFor('kitchen').has('legacy.a')).toBe(false);
    expect(registry.connectionOpened('c2', 0)).toBe(3);
    expect(registry.connectionOpened('c3', 0)).toBe(0);
    expect(registry.availableFor('kitchen').get('legacy.a')).toBe(20);
    expect(registry.availableFor('kitchen').get('spec.b')).toBe(30);
    // Maybe on any connection from the first opened since (open number 1) on.
    expect(registry.entry('default', 'legacy.a')).toEqual({ priority: 10, connection: undefined, legacy: true, unheard: true, backSince: 1 });
    expect(registry.heard('legacy.a', 'c2')).toEqual([
      { sessionId: 'default', skillId: 'legacy.a' },
      { sessionId: 'kitchen', skillId: 'legacy.a' },
    ]);
    expect(registry.entry('kitchen', 'legacy.a')).toEqual({ priority: 20, connection: 'c2', legacy: true });
    // Heard again: nothing changes.
    expect(registry.heard('legacy.a', 'c3')).toEqual([]);
  });

  it('FALLBACK-1 §6.1: maybe back and a missed ping: dormant — away, and connections opening do not bring it back; being heard does', () => {
    const registry = new FallbackRegistry();
    registry.register('default', 'a', 10, 'c1', true);
    registry.register('default', 'live', 20, 'c9', true);
    registry.releaseConnection('c1');
    registry.connectionOpened('c2', 0);
    expect(registry.missed('live')).toEqual([]); // heard all along: a missed ping is the circuit breaker's business
    expect(registry.missed('a')).toEqual([{ sessionId: 'default', skillId: 'a' }]);
    expect(registry.entry('default', 'a')).toEqual({ priority: 10, connection: undefined, legacy: true, unheard: true, away: true, dormant: true });
    expect(registry.missed('a')).toEqual([]);
    expect(registry.hasDormant(true)).toBe(true);
    expect(registry.connectionOpened('c3', 1)).toBe(0);
    expect(registry.availableFor('default').has('a')).toBe(false);
    registry.releaseConnection('c3');
    expect(registry.heard('a', 'c2')).toEqual([{ sessionId: 'default', skillId: 'a' }]);
    expect(registry.entry('default', 'a')).toEqual({ priority: 10, connection: 'c2', legacy: true });
    expect(registry.hasDormant(true)).toBe(false);
  });

  it('FALLBACK-1 §3.1: restored from disk — spec dormant, legacy away until a connection opens (maybe back at once without connection identity), dormant stays dormant', () => {
    const registry = new FallbackRegistry();
    registry.restore('default', 'spec', 10, { legacy: false, dormant: false }, true);
    registry.restore('default', 'legacy', 20, { legacy: true, dormant: false }, true);
    registry.restore('default', 'gone', 30, { legacy: true, dormant: true }, true);
    registry.restore('kitchen', 'foreign', 40, { legacy: true, dormant: false }, false);
    expect(ids(registry, 'default')).toEqual([]);
    expect(ids(registry, 'kitchen')).toEqual(['foreign']);
    expect(registry.entry('default', 'spec')).toEqual({ priority: 10, connection: undefined, legacy: false, unheard: true, away: true, dormant: true });
    registry.connectionOpened('c1', 0);
    expect(ids(registry, 'default')).toEqual(['legacy']);
    // Without connection identity, heard binds to nothing but still brings it back.
    expect(registry.missed('foreign')).toEqual([{ sessionId: 'kitchen', skillId: 'foreign' }]);
    expect(registry.heard('foreign', undefined)).toEqual([{ sessionId: 'kitchen', skillId: 'foreign' }]);
    expect(registry.entry('kitchen', 'foreign')).toEqual({ priority: 40, connection: undefined, legacy: true });
    expect(registry.heard('spec', 'c1')).toEqual([{ sessionId: 'default', skillId: 'spec' }]);
    expect(ids(registry, 'default')).toEqual(['legacy', 'spec']);
  });

  it('FALLBACK-1 §6.1: a registration back in the pools is away again once every connection opened since has closed without it being heard', () => {
    const registry = new FallbackRegistry();
    registry.connectionOpened('front-end', 0); // open before it went away, and still open: not its reconnect
    registry.register('default', 'legacy.a', 10, 'c1', true);
    registry.register('kitchen', 'legacy.a', 20, 'c1', true);
    registry.register('default', 'inproc', 30, undefined, true); // in process: never away
    registry.releaseConnection('c1');
    expect(registry.entry('kitchen', 'legacy.a')?.away).toBe(true);
    expect(registry.connectionOpened('cli', 1)).toBe(2);
    expect(registry.connectionOpened('c2', 2)).toBe(0);
    expect(registry.entry('kitchen', 'legacy.a')).toEqual({ priority: 20, connection: undefined, legacy: true, unheard: true, backSince: 2 });
    expect(registry.entry('default', 'inproc')).toEqual({ priority: 30, connection: undefined, legacy: true });
    // One of two closes: it may still be on the other, and stays in the pools.
    expect(registry.releaseConnection('cli')).toEqual([]);
    expect(registry.availableFor('kitchen').get('legacy.a')).toBe(20);
    // The last closes (the front end, older, is still open): away again, in no pool; kept, not bound to that connection.
    expect(registry.releaseConnection('c2')).toEqual([
      { sessionId: 'default', skillId: 'legacy.a', bound: false },
      { sessionId: 'kitchen', skillId: 'legacy.a', bound: false },
    ]);
    expect(registry.entry('default', 'legacy.a')).toEqual({ priority: 10, connection: undefined, legacy: true, unheard: true, away: true });
    expect(registry.availableFor('kitchen').has('legacy.a')).toBe(false);
    expect(registry.availableFor('default').get('inproc')).toBe(30);
    expect(registry.releaseConnection('c2')).toEqual([]);
    // Back again with the next connection, and bound for good once heard on it.
    expect(registry.connectionOpened('c3', 3)).toBe(2);
    expect(registry.heard('legacy.a', 'c3')).toHaveLength(2);
    expect(registry.entry('default', 'legacy.a')).toEqual({ priority: 10, connection: 'c3', legacy: true });
    expect(registry.connectionOpened('c4', 4)).toBe(0);
    expect(registry.releaseConnection('c4')).toEqual([]);
    expect(registry.entry('default', 'legacy.a')).toEqual({ priority: 10, connection: 'c3', legacy: true });
  });

  it('FALLBACK-1 §6.1: a registration whose close may have come after its reconnect stays in the pools, maybe on the connections opened from then on', () => {
    const registry = new FallbackRegistry();
    registry.connectionOpened('old', 0);
    registry.connectionOpened('c1', 10);
    registry.register('default', 'legacy.a', 10, 'c1', true);
    registry.register('default', 'spec.b', 20, 'c1');
    registry.connectionOpened('c2', 100);
    registry.connectionOpened('c3', 150);
    expect(registry.releaseConnection('c1', 100)).toEqual([
      { sessionId: 'default', skillId: 'legacy.a', bound: true },
      { sessionId: 'default', skillId: 'spec.b', bound: true },
    ]);
    expect(registry.entry('default', 'legacy.a')).toEqual({ priority: 10, connection: undefined, legacy: true, unheard: true, backSince: 3 });
    expect(registry.availableFor('default').get('spec.b')).toBe(20);
    expect(registry.releaseConnection('c3')).toEqual([]);
    expect(registry.releaseConnection('c2')).toEqual([
      { sessionId: 'default', skillId: 'legacy.a', bound: false },
      { sessionId: 'default', skillId: 'spec.b', bound: false },
    ]);
    expect(registry.availableFor('default').has('legacy.a')).toBe(false);
    // None opened at or after the time given: away at once.
    registry.register('default', 'legacy.c', 10, 'c4', true);
    expect(registry.releaseConnection('c4', 1_000)).toEqual([{ sessionId: 'default', skillId: 'legacy.c', bound: true }]);
    expect(registry.entry('default', 'legacy.c')?.away).toBe(true);
    // A connection opened within that time but before its own cannot be its reconnect: away.
    registry.connectionOpened('listener', 2_000);
    registry.connectionOpened('c5', 2_001);
    registry.register('default', 'legacy.d', 10, 'c5', true);
    registry.releaseConnection('c5', 1_500);
    expect(registry.entry('default', 'legacy.d')?.away).toBe(true);
  });

  it('FALLBACK-1 §3.4: a full registry gives the place of a registration away (oldest first) to a new skill; with none away it refuses', () => {
    const registry = new FallbackRegistry({ maxSkillsPerSession: 2, maxSessions: 1 });
    registry.register('default', 'a', 10, 'c1');
    registry.register('default', 'b', 20, 'c2');
    expect(registry.register('default', 'c', 30, 'c3')).toBe('registry_full');
    registry.releaseConnection('c1');
    expect(registry.register('default', 'c', 30, 'c3')).toBe('registered');
    expect(registry.holds('a')).toBe(false);
    registry.register('kitchen', 'k', 10, 'c4');
    expect(registry.register('car', 'k', 10, 'c5')).toBe('registry_full');
    registry.releaseConnection('c4');
    expect(registry.register('car', 'k', 10, 'c5')).toBe('registered');
    expect(registry.entry('kitchen', 'k')).toBeUndefined();
  });

  it('FALLBACK-1 §3.4: a session\'s own legacy registration away leaves the "default" one (another instance, still connected) available', () => {
    const registry = new FallbackRegistry();
    registry.register('default', 'legacy.a', 10, 'c2', true);
    registry.register('kitchen', 'legacy.a', 20, 'c1', true);
    expect(registry.availableFor('kitchen').get('legacy.a')).toBe(20);
    registry.releaseConnection('c1');
    expect(registry.availableFor('kitchen').get('legacy.a')).toBe(10);
  });

  it('FALLBACK-1 §3.1: a skill that re-registered over a newer connection keeps that registration when the old one closes', () => {
    const registry = new FallbackRegistry();
    registry.register('default', 'a', 10, 'old');
    registry.register('default', 'a', 10, 'new');
    expect(registry.releaseConnection('old')).toEqual([]);
    expect(ids(registry, 'default')).toEqual(['a']);
  });
});

describe('FALLBACK-1 §3.4 registry bounds', () => {
  it('FALLBACK-1 §3.4: a new skill beyond maxSkillsPerSession is refused (registry_full); re-registering an existing one is not', () => {
    const registry = new FallbackRegistry({ maxSkillsPerSession: 2 });
    expect(registry.register('kitchen', 'a', 10)).toBe('registered');
    expect(registry.register('kitchen', 'b', 20)).toBe('registered');
    expect(registry.register('kitchen', 'c', 30)).toBe('registry_full');
    expect(registry.register('kitchen', 'a', 40)).toBe('registered');
    expect(registry.register('default', 'c', 30)).toBe('registered'); // another session has its own bound
    expect(ids(registry, 'kitchen')).toEqual(['a', 'b', 'c']);
    expect(registry.availableFor('kitchen').get('a')).toBe(40);
    registry.deregister('kitchen', 'b');
    expect(registry.register('kitchen', 'c', 30)).toBe('registered');
  });

  it('FALLBACK-1 §3.4: a new session beyond maxSessions is refused; "default" does not count; a freed session makes room', () => {
    const registry = new FallbackRegistry({ maxSessions: 2 });
    expect(registry.register('default', 'a', 10)).toBe('registered');
    expect(registry.register('s1', 'a', 10)).toBe('registered');
    expect(registry.register('s2', 'a', 10)).toBe('registered');
    expect(registry.sessionCount).toBe(2);
    expect(registry.register('s3', 'a', 10)).toBe('registry_full');
    expect(registry.register('s1', 'b', 10)).toBe('registered'); // an existing session may grow
    expect(registry.register('default', 'b', 10)).toBe('registered');
    expect(ids(registry, 's3')).toEqual(['a', 'b']); // only what "default" offers
    registry.deregister('s2', 'a');
    expect(registry.register('s3', 'a', 10)).toBe('registered');
  });

  it('FALLBACK-1 §3.4: with no bounds given the registry is unbounded (library use)', () => {
    const registry = new FallbackRegistry();
    for (let i = 0; i < 200; i++) expect(registry.register(`s${i}`, `k${i}`, i)).toBe('registered');
    expect(registry.sessionCount).toBe(200);
  });
});

describe('FALLBACK-1 §3.4: what one connection may make the registry hold, in every session together', () => {
  it('a connection past maxRegistrationBytesPerConnection is refused (connection_quota) in any session; re-registering counts once, a deregistration frees its bytes, its closing frees them all; another connection is not affected', () => {
    // 100 registrations of s<i> × flood.skill (their ids and the overhead each) fill the budget exactly.
    const budget = Array.from({ length: 100 }, (_, i) => registrationBytes(`s${i}`, 'flood.skill')).reduce((x, y) => x + y, 0);
    const registry = new FallbackRegistry({ maxRegistrationBytesPerConnection: budget });
    registry.connectionOpened('c1', 0);
    registry.connectionOpened('c2', 0);
    for (let i = 0; i < 100; i++) expect(registry.register(`s${i}`, 'flood.skill', 50, 'c1')).toBe('registered');
    expect(registry.register('s100', 'flood.skill', 50, 'c1')).toBe('connection_quota');
    expect(registry.register('default', 'other.skill', 50, 'c1')).toBe('connection_quota');
    // The same registration again is a replacement (§3.1), not a new place.
    expect(registry.register('s7', 'flood.skill', 60, 'c1')).toBe('registered');
    expect(registry.register('default', 'real.skill', 50, 'c2')).toBe('registered');
    expect(registry.deregister('s3', 'flood.skill')).toBe(true);
    expect(registry.register('x3', 'flood.skill', 50, 'c1')).toBe('registered'); // the bytes s3 freed, to the byte
    expect(registry.register('s101', 'flood.skill', 50, 'c1')).toBe('connection_quota');
    registry.releaseConnection('c1');
    registry.connectionOpened('c3', 1);
    expect(registry.register('s101', 'flood.skill', 50, 'c3')).toBe('registered');
  });
});
