/**
 * The registry finds what a connection opening or closing, a skill speaking or a new registration at the bound touches
 * through indexes (src/plugins/fallback/registry.ts), not by walking every registration. Seeded random sequences of
 * every operation, with what each must give computed from the registry's full listing (`entries()`) just before it —
 * the definition in FALLBACK-1 §3.4 and §6.1 terms — so an index that drifts from the entries shows at once.
 */
import { describe, expect, it } from 'vitest';
import { FallbackRegistry, type RegistryEntry } from '../../../src/plugins/fallback/registry.js';
import { seededRandom } from '../../support/random.js';

type Listed = RegistryEntry & { readonly sessionId: string; readonly skillId: string };
const key = (e: { sessionId: string; skillId: string }): string => `${e.sessionId}/${e.skillId}`;

/**
 * What §3.4's bounds make of a registration (maxSkillsPerSession 6, maxSessions 4, maxSkillsPerConnection 4), from the
 * listing before it: refused for the connection's quota in the session; a new session past the bound takes the place
 * of the oldest session whose every registration is dormant, else away, else is refused; a new skill in a full session
 * takes the place of its first dormant registration, else its first away one, else is refused.
 */
function expectedRegistration(before: readonly Listed[], sessionId: string, skillId: string, connection: string | undefined): { result: string; evicted: string[] } {
  const inSession = before.filter((e) => e.sessionId === sessionId);
  if (connection !== undefined && inSession.filter((e) => e.skillId !== skillId && e.connection === connection).length >= 4) return { result: 'connection_quota', evicted: [] };
  if (inSession.length === 0) {
    const others = [...new Set(before.filter((e) => e.sessionId !== 'default').map((e) => e.sessionId))];
    if (sessionId === 'default' || others.length < 4) return { result: 'registered', evicted: [] };
    const all = (session: string, gone: (e: Listed) => boolean): boolean => before.filter((e) => e.sessionId === session).every(gone);
    const victim = others.find((o) => all(o, (e) => e.dormant === true)) ?? others.find((o) => all(o, (e) => e.away === true));
    if (victim === undefined) return { result: 'registry_full', evicted: [] };
    return { result: 'registered', evicted: before.filter((e) => e.sessionId === victim).map(key) };
  }
  if (inSession.some((e) => e.skillId === skillId) || inSession.length < 6) return { result: 'registered', evicted: [] };
  const victim = inSession.find((e) => e.dormant === true) ?? inSession.find((e) => e.away === true);
  return victim === undefined ? { result: 'registry_full', evicted: [] } : { result: 'registered', evicted: [key(victim)] };
}

describe('FALLBACK-1 §3.4 / §6.1 registry indexes agree with its entries', () => {
  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
    it(`seed ${seed}: 3,000 random registrations, deregistrations, connections opening and closing, pings answered and missed`, () => {
      const random = seededRandom(seed);
      const pick = <T,>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
      const evicted: string[] = [];
      const registry = new FallbackRegistry({ maxSkillsPerSession: 6, maxSessions: 4, maxSkillsPerConnection: 4, onEvict: (e) => evicted.push(key(e)) });
      const sessions = ['default', 's1', 's2', 's3', 's4', 's5', 's6'];
      const skills = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
      const open: string[] = [];
      let connections = 0;
      let time = 0;
      for (let step = 0; step < 3_000; step++) {
        const before: Listed[] = registry.entries();
        const op = Math.floor(random() * 9);
        time += 10;
        if (op === 0 || op === 1) {
          const sessionId = pick(sessions);
          const skillId = pick(skills);
          const connection = open.length > 0 && random() < 0.8 ? pick(open) : undefined;
          const expected = expectedRegistration(before, sessionId, skillId, connection);
          expect(registry.register(sessionId, skillId, Math.floor(random() * 100), connection, random() < 0.5)).toBe(expected.result);
          expect(evicted.splice(0)).toEqual(expected.evicted);
        } else if (op === 2) {
          const sessionId = pick(sessions);
          const skillId = pick(skills);
          const had = before.some((e) => e.sessionId === sessionId && e.skillId === skillId);
          expect(registry.deregister(sessionId, skillId)).toBe(had);
        } else if (op === 3) {
          const connection = `c${++connections}`;
          open.push(connection);
          const away = before.filter((e) => e.away === true && e.dormant !== true).length;
          expect(registry.connectionOpened(connection, time)).toBe(away);
        } else if (op === 4 && open.length > 0) {
          const connection = open.splice(Math.floor(random() * open.length), 1)[0]!;
          const late = random() < 0.3;
          const released = registry.releaseConnection(connection, late ? time - 50 : undefined);
          // Every registration bound to it, and those maybe back on no open connection any more — none else.
          const bound = before.filter((e) => e.connection === connection).map(key).sort();
          expect(released.filter((r) => r.bound).map(key).sort()).toEqual(bound);
          for (const r of released.filter((x) => !x.bound)) expect(before.find((e) => key(e) === key(r))?.backSince).toBeDefined();
          if (open.length === 0) expect(released.filter((r) => !r.bound).map(key).sort()).toEqual(before.filter((e) => e.backSince !== undefined).map(key).sort());
          // In the order the registry keeps its entries (its listing puts "default" first; the others keep that order).
          const order = before.map(key);
          const positions = released.filter((r) => r.sessionId !== 'default').map((r) => order.indexOf(key(r)));
          expect(positions).toEqual([...positions].sort((x, y) => x - y));
        } else if (op === 5) {
          const skillId = pick(skills);
          const connection = open.length > 0 ? pick(open) : undefined;
          const unheard = before.filter((e) => e.skillId === skillId && e.unheard === true).map(key).sort();
          expect(registry.heard(skillId, connection).map(key).sort()).toEqual(unheard);
        } else if (op === 6 && open.length > 0) {
          registry.answered(pick(skills), pick(open));
        } else if (op === 7) {
          const skillId = pick(skills);
          const maybe = before.filter((e) => e.skillId === skillId && e.unheard === true && e.away !== true).map(key).sort();
          expect(registry.missed(skillId).map(key).sort()).toEqual(maybe);
        } else {
          registry.lapse(pick(skills));
        }
        const after = registry.entries();
        for (const skillId of skills) expect(registry.holds(skillId)).toBe(after.some((e) => e.skillId === skillId));
        for (const legacy of [true, false]) expect(registry.hasDormant(legacy)).toBe(after.some((e) => e.dormant === true && e.legacy === legacy));
        expect(registry.sessionCount).toBe(new Set(after.filter((e) => e.sessionId !== 'default').map((e) => e.sessionId)).size);
        expect(registry.sessionCount).toBeLessThanOrEqual(4);
        for (const sessionId of sessions) expect(after.filter((e) => e.sessionId === sessionId).length).toBeLessThanOrEqual(6);
        expect(evicted.splice(0)).toEqual([]);
      }
    });
  }
});
