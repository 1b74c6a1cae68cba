/**
 * The registry's connection bookkeeping and bounds (src/plugins/fallback/registry.ts). Session ids and skill ids
 * come off the bus, so what one client can make the registry hold is bounded; what a connection registered leaves
 * with it.
 */
import { describe, expect, it } from 'vitest';
import { FallbackRegistry } from '../../../src/plugins/fallback/registry.js';

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

  it('FALLBACK-1 §3.4: releaseConnection removes that connection’s spec registrations in every session, and nothing else', () => {
    const registry = new FallbackRegistry();
    registry.register('default', 'a', 10, 'c1');
    registry.register('kitchen', 'a', 90, 'c1');
    registry.register('car', 'k', 30, 'c1');
    registry.register('default', 'b', 20, 'c2');
    registry.register('default', 'local', 30);
    expect(registry.releaseConnection('c1')).toEqual([
      { sessionId: 'default', skillId: 'a', kept: false, bound: true },
      { sessionId: 'kitchen', skillId: 'a', kept: false, bound: true },
      { sessionId: 'car', skillId: 'k', kept: false, bound: true },
    ]);
    expect(ids(registry, 'kitchen')).toEqual(['b', 'local']);
    expect(ids(registry, 'car')).toEqual(['b', 'local']);
    expect(registry.sessionCount).toBe(0);
    expect(registry.holds('a')).toBe(false);
    expect(registry.holds('b')).toBe(true);
    expect(registry.releaseConnection('c1')).toEqual([]);
  });

  it('ovos-wire-today (legacy skills never register again): releaseConnection keeps a legacy registration, unbound, until bindUnbound', () => {
    const registry = new FallbackRegistry();
    registry.register('default', 'legacy.a', 10, 'c1', true);
    registry.register('kitchen', 'legacy.a', 20, 'c1', true);
    registry.register('default', 'spec.b', 30, 'c1');
    expect(registry.releaseConnection('c1')).toEqual([
      { sessionId: 'default', skillId: 'legacy.a', kept: true, bound: true },
      { sessionId: 'default', skillId: 'spec.b', kept: false, bound: true },
      { sessionId: 'kitchen', skillId: 'legacy.a', kept: true, bound: true },
    ]);
    expect(registry.entry('default', 'legacy.a')).toEqual({ priority: 10, connection: undefined, legacy: true, away: true });
    expect(registry.entry('kitchen', 'legacy.a')).toEqual({ priority: 20, connection: undefined, legacy: true, away: true });
    expect(registry.holds('spec.b')).toBe(false);
    expect(registry.releaseConnection('c1')).toEqual([]);
    // Away: in no pool, in no session — until a client connection opens.
    expect(registry.availableFor('default').has('legacy.a')).toBe(false);
    expect(registry.availableFor('kitchen').has('legacy.a')).toBe(false);
    expect(registry.connectionOpened('c2', 0)).toBe(2);
    expect(registry.connectionOpened('c3', 0)).toBe(0);
    expect(registry.availableFor('kitchen').get('legacy.a')).toBe(20);
    // Maybe on any connection from the first opened since (open number 1) on.
    expect(registry.entry('default', 'legacy.a')).toEqual({ priority: 10, connection: undefined, legacy: true, backSince: 1 });
    expect(registry.bindUnbound('legacy.a', 'c2')).toBe(2);
    expect(registry.entry('kitchen', 'legacy.a')).toEqual({ priority: 20, connection: 'c2', legacy: true });
  });

  it('FALLBACK-1 §6.1: a legacy registration back in the pools is away again once every connection opened since has closed without it being heard', () => {
    const registry = new FallbackRegistry();
    registry.connectionOpened('front-end', 0); // open before it went away, and still open: not its reconnect
    registry.register('default', 'legacy.a', 10, 'c1', true);
    registry.register('kitchen', 'legacy.a', 20, 'c1', true);
    registry.register('default', 'restored', 30, undefined, true); // after a restart: unbound, never away
    registry.releaseConnection('c1');
    expect(registry.entry('kitchen', 'legacy.a')?.away).toBe(true);
    expect(registry.connectionOpened('cli', 1)).toBe(2);
    expect(registry.connectionOpened('c2', 2)).toBe(0);
    expect(registry.entry('kitchen', 'legacy.a')).toEqual({ priority: 20, connection: undefined, legacy: true, backSince: 2 });
    expect(registry.entry('default', 'restored')).toEqual({ priority: 30, connection: undefined, legacy: true });
    // One of two closes: it may still be on the other, and stays in the pools.
    expect(registry.releaseConnection('cli')).toEqual([]);
    expect(registry.availableFor('kitchen').get('legacy.a')).toBe(20);
    // The last closes (the front end, older, is still open): away again, in no pool; kept, not bound to that connection.
    expect(registry.releaseConnection('c2')).toEqual([
      { sessionId: 'default', skillId: 'legacy.a', kept: true, bound: false },
      { sessionId: 'kitchen', skillId: 'legacy.a', kept: true, bound: false },
    ]);
    expect(registry.entry('default', 'legacy.a')).toEqual({ priority: 10, connection: undefined, legacy: true, away: true });
    expect(registry.availableFor('kitchen').has('legacy.a')).toBe(false);
    expect(registry.availableFor('default').get('restored')).toBe(30);
    expect(registry.releaseConnection('c2')).toEqual([]);
    // Back again with the next connection, and bound for good once heard on it.
    expect(registry.connectionOpened('c3', 3)).toBe(2);
    expect(registry.bindUnbound('legacy.a', 'c3')).toBe(2);
    expect(registry.entry('default', 'legacy.a')).toEqual({ priority: 10, connection: 'c3', legacy: true });
    expect(registry.connectionOpened('c4', 4)).toBe(0);
    expect(registry.releaseConnection('c4')).toEqual([]);
    expect(registry.entry('default', 'legacy.a')).toEqual({ priority: 10, connection: 'c3', legacy: true });
  });

  it('FALLBACK-1 §6.1: a legacy registration whose close may have come after its reconnect stays in the pools, maybe on the connections opened from then on', () => {
    const registry = new FallbackRegistry();
    registry.connectionOpened('old', 0);
    registry.connectionOpened('c1', 10);
    registry.register('default', 'legacy.a', 10, 'c1', true);
    registry.register('default', 'spec.b', 20, 'c1');
    registry.connectionOpened('c2', 100);
    registry.connectionOpened('c3', 150);
    expect(registry.releaseConnection('c1', 100)).toEqual([
      { sessionId: 'default', skillId: 'legacy.a', kept: true, bound: true },
      { sessionId: 'default', skillId: 'spec.b', kept: false, bound: true },
    ]);
    expect(registry.entry('default', 'legacy.a')).toEqual({ priority: 10, connection: undefined, legacy: true, backSince: 3 });
    expect(registry.availableFor('default').get('legacy.a')).toBe(10);
    expect(registry.releaseConnection('c3')).toEqual([]);
    expect(registry.releaseConnection('c2')).toEqual([{ sessionId: 'default', skillId: 'legacy.a', kept: true, bound: false }]);
    expect(registry.availableFor('default').has('legacy.a')).toBe(false);
    // None opened at or after the time given: away at once.
    registry.register('default', 'legacy.c', 10, 'c4', true);
    expect(registry.releaseConnection('c4', 1_000)).toEqual([{ sessionId: 'default', skillId: 'legacy.c', kept: true, bound: true }]);
    expect(registry.entry('default', 'legacy.c')?.away).toBe(true);
    // A connection opened within that time but before its own cannot be its reconnect: away.
    registry.connectionOpened('listener', 2_000);
    registry.connectionOpened('c5', 2_001);
    registry.register('default', 'legacy.d', 10, 'c5', true);
    registry.releaseConnection('c5', 1_500);
    expect(registry.entry('default', 'legacy.d')?.away).toBe(true);
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
