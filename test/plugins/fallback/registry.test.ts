import { describe, expect, it } from 'vitest';
import { FallbackRegistry } from '../../../src/plugins/fallback/registry.js';

const view = (registry: FallbackRegistry, sessionId: string): Array<[string, number]> =>
  [...registry.availableFor(sessionId).entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

describe('OVOS-FALLBACK-1 §3.1 register', () => {
  it('§3.1: a registration is visible with its priority', () => {
    const registry = new FallbackRegistry();
    registry.register('default', 'a', 10);
    expect(view(registry, 'default')).toEqual([['a', 10]]);
  });

  it('§3.1: re-registration with the same skill_id replaces the prior entry (no duplicate)', () => {
    const registry = new FallbackRegistry();
    registry.register('default', 'a', 10);
    registry.register('default', 'a', 80);
    expect(view(registry, 'default')).toEqual([['a', 80]]);
  });

  it('§3.1: re-registration of one skill leaves the others untouched', () => {
    const registry = new FallbackRegistry();
    registry.register('default', 'a', 10);
    registry.register('default', 'b', 20);
    registry.register('default', 'a', 30);
    expect(view(registry, 'default')).toEqual([
      ['a', 30],
      ['b', 20],
    ]);
  });
});

describe('OVOS-FALLBACK-1 §3.2 deregister', () => {
  it('§3.2: deregister removes the skill', () => {
    const registry = new FallbackRegistry();
    registry.register('default', 'a', 10);
    registry.register('default', 'b', 20);
    expect(registry.deregister('default', 'a')).toBe(true);
    expect(view(registry, 'default')).toEqual([['b', 20]]);
  });

  it('§3.2: an unknown skill_id is a no-op', () => {
    const registry = new FallbackRegistry();
    registry.register('default', 'a', 10);
    expect(registry.deregister('default', 'ghost')).toBe(false);
    expect(view(registry, 'default')).toEqual([['a', 10]]);
  });

  it('§3.2: deregistering from an unknown session is a no-op', () => {
    const registry = new FallbackRegistry();
    registry.register('default', 'a', 10);
    expect(registry.deregister('nobody', 'a')).toBe(false);
    expect(view(registry, 'default')).toEqual([['a', 10]]);
  });

  it('§3.2: deregistering twice is a no-op the second time', () => {
    const registry = new FallbackRegistry();
    registry.register('default', 'a', 10);
    expect(registry.deregister('default', 'a')).toBe(true);
    expect(registry.deregister('default', 'a')).toBe(false);
    expect(view(registry, 'default')).toEqual([]);
  });

  it('§3.2 + §3.1: a skill can register again after deregistering', () => {
    const registry = new FallbackRegistry();
    registry.register('s1', 'a', 10);
    registry.deregister('s1', 'a');
    registry.register('s1', 'a', 40);
    expect(view(registry, 's1')).toEqual([['a', 40]]);
  });
});

describe('OVOS-FALLBACK-1 §3.4 session-scoped registration', () => {
  it('§3.4: "default" registrations are visible to every session', () => {
    const registry = new FallbackRegistry();
    registry.register('default', 'a', 10);
    expect(view(registry, 'default')).toEqual([['a', 10]]);
    expect(view(registry, 'kitchen')).toEqual([['a', 10]]);
    expect(view(registry, 'car')).toEqual([['a', 10]]);
  });

  it('§3.4: a session registration is visible to that session only', () => {
    const registry = new FallbackRegistry();
    registry.register('default', 'a', 10);
    registry.register('kitchen', 'k', 20);
    expect(view(registry, 'kitchen')).toEqual([
      ['a', 10],
      ['k', 20],
    ]);
    expect(view(registry, 'car')).toEqual([['a', 10]]);
    expect(view(registry, 'default')).toEqual([['a', 10]]);
  });

  it('§3.4: a session entry overrides the default priority for that session only', () => {
    const registry = new FallbackRegistry();
    registry.register('default', 'a', 10);
    registry.register('kitchen', 'a', 90);
    expect(view(registry, 'kitchen')).toEqual([['a', 90]]);
    expect(view(registry, 'car')).toEqual([['a', 10]]);
    expect(view(registry, 'default')).toEqual([['a', 10]]);
  });

  it('§3.4: deregistering a session entry reveals the default entry again', () => {
    const registry = new FallbackRegistry();
    registry.register('default', 'a', 10);
    registry.register('kitchen', 'a', 90);
    expect(registry.deregister('kitchen', 'a')).toBe(true);
    expect(view(registry, 'kitchen')).toEqual([['a', 10]]);
  });

  it('§3.4: a session cannot deregister a "default" registration', () => {
    const registry = new FallbackRegistry();
    registry.register('default', 'a', 10);
    expect(registry.deregister('kitchen', 'a')).toBe(false);
    expect(view(registry, 'kitchen')).toEqual([['a', 10]]);
    expect(view(registry, 'default')).toEqual([['a', 10]]);
  });

  it('§3.4: availableFor returns a copy — mutating it does not touch the registry', () => {
    const registry = new FallbackRegistry();
    registry.register('default', 'a', 10);
    registry.availableFor('default').set('intruder', 1);
    registry.availableFor('kitchen').delete('a');
    expect(view(registry, 'default')).toEqual([['a', 10]]);
    expect(view(registry, 'kitchen')).toEqual([['a', 10]]);
  });

  it('§3.4: an empty registry has nothing for anyone', () => {
    const registry = new FallbackRegistry();
    expect(view(registry, 'default')).toEqual([]);
    expect(view(registry, 'kitchen')).toEqual([]);
  });
});
