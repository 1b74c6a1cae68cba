/**
 * The supervisor's view of client connections (src/plugins/README.md "Dead skills", FALLBACK-1 §6.1 / COMMON-QUERY-1 §6.3 as we
 * apply them on the embedded bus): which skills spoke over which connection, which of them are gone when one
 * closes, and what it tells the plugins. The plugins' reactions (a contest moving on, a handler ending) are tested
 * with them; this is the bookkeeping they rely on, at its bounds.
 */
import { describe, expect, it } from 'vitest';
import { LocalBus } from '../../src/bus/local-bus.js';
import { createMessage, type Message } from '../../src/bus/message.js';
import { ManualClock } from '../../src/clock/manual-clock.js';
import { captureLogs } from '../support/log-capture.js';
import { Supervisor } from '../../src/supervisor/supervisor.js';

function setup() {
  const bus = new LocalBus();
  const { logger, logs } = captureLogs();
  const supervisor = new Supervisor({ bus, clock: new ManualClock(), logger });
  const closed: Array<{ connection: string; skills: readonly string[]; spoke: readonly string[]; late?: true }> = [];
  supervisor.onConnectionClosed((connection, skills, spoke, late) => closed.push({ connection, skills: [...skills], spoke: [...spoke], ...(late ? { late } : {}) }));
  /** A skill speaking over a connection: a fallback registration names it. */
  const speak = async (skillId: string, connection: string): Promise<void> => {
    bus.publish(createMessage('ovos.fallback.register', { skill_id: skillId, priority: 50 }, { skill_id: skillId, session: { session_id: 'default' } }), connection);
    await bus.idle();
  };
  const close = async (connection: string, late = false): Promise<void> => {
    bus.closeConnection(connection, late);
    await bus.idle();
  };
  return { bus, supervisor, logs, closed, speak, close };
}

describe('Supervisor: skills and their connections (src/plugins/README.md "Dead skills")', () => {
  it('a skill that spoke over a connection is on it while it is open; when it closes the skill is gone and the plugins are told, with one info line', async () => {
    const s = setup();
    await s.speak('fb.a', 'c1');
    expect(s.supervisor.skillsOn('c1')).toEqual(['fb.a']);
    expect(s.supervisor.latestConnectionOf('fb.a')).toBe('c1');
    expect(s.supervisor.isOpen('c1')).toBe(true);
    expect(s.supervisor.isGone('fb.a')).toBe(false);

    await s.close('c1');
    expect(s.closed).toEqual([{ connection: 'c1', skills: ['fb.a'], spoke: ['fb.a'] }]);
    expect(s.supervisor.isGone('fb.a')).toBe(true);
    expect(s.supervisor.isOpen('c1')).toBe(false);
    expect(s.supervisor.skillsOn('c1')).toEqual([]);
    expect(s.supervisor.latestConnectionOf('fb.a')).toBeUndefined();
    const lines = s.logs.filter((l) => l['msg'] === 'skill connection closed');
    expect(lines).toEqual([expect.objectContaining({ level: 30, connection: 'c1', skills: ['fb.a'], spoke: ['fb.a'] })]);
    expect(s.logs.filter((l) => Number(l['level']) >= 50)).toEqual([]); // nothing threw on the way
  });

  it('FALLBACK-1 §6.1: a close the bus reports late (it may have come after the peer reconnected) reaches the plugins as late; the reconnect window applies to it alone', async () => {
    const s = setup();
    await s.speak('fb.a', 'c1');
    await s.speak('fb.b', 'c2');
    await s.close('c1', true);
    await s.close('c2');
    expect(s.closed).toEqual([
      { connection: 'c1', skills: ['fb.a'], spoke: ['fb.a'], late: true },
      { connection: 'c2', skills: ['fb.b'], spoke: ['fb.b'] },
    ]);
  });

  it('a connection nobody spoke over has no skills', () => {
    const s = setup();
    expect(s.supervisor.skillsOn('never-seen')).toEqual([]);
    expect(s.supervisor.isOpen('never-seen')).toBe(false);
  });

  it('a skill that also speaks over another open connection (it reconnected) is not gone when the old one closes, and its latest connection moves', async () => {
    const s = setup();
    await s.speak('fb.a', 'old');
    await s.speak('fb.a', 'new');
    await s.speak('fb.a', 'old'); // the old socket spoke last: it is the latest
    expect(s.supervisor.latestConnectionOf('fb.a')).toBe('old');
    await s.close('old');
    expect(s.closed).toEqual([{ connection: 'old', skills: [], spoke: ['fb.a'] }]);
    expect(s.supervisor.isGone('fb.a')).toBe(false);
    expect(s.supervisor.latestConnectionOf('fb.a')).toBe('new');
  });

  it('closing a connection that was not the skill\'s latest leaves its latest where it is', async () => {
    const s = setup();
    await s.speak('fb.a', 'first');
    await s.speak('fb.a', 'second');
    await s.speak('fb.a', 'third');
    await s.close('first');
    expect(s.supervisor.latestConnectionOf('fb.a')).toBe('third');
    expect(s.supervisor.isGone('fb.a')).toBe(false);
  });

  it('a gone skill that speaks again (a restarted skill on a new connection) is no longer gone', async () => {
    const s = setup();
    await s.speak('fb.a', 'c1');
    await s.close('c1');
    expect(s.supervisor.isGone('fb.a')).toBe(true);
    await s.speak('fb.a', 'c2');
    expect(s.supervisor.isGone('fb.a')).toBe(false);
    expect(s.supervisor.latestConnectionOf('fb.a')).toBe('c2');
  });

  it('a connection that never spoke as a skill closes quietly: the plugins hear of it with no skills, no log line', async () => {
    const s = setup();
    s.bus.publish(createMessage('ovos.utterance.handle', { utterances: ['hi'] }, { session: { session_id: 's1' } }), 'front-end');
    await s.bus.idle();
    expect(s.supervisor.isOpen('front-end')).toBe(false); // spoke, but never as a skill
    await s.close('front-end');
    expect(s.closed).toEqual([{ connection: 'front-end', skills: [], spoke: [] }]);
    expect(s.logs.filter((l) => l['msg'] === 'skill connection closed')).toEqual([]);
  });

  it('at most 256 skills are remembered per connection; a known one keeps being tracked past the bound', async () => {
    const s = setup();
    for (let i = 0; i < 300; i++) await s.speak(`fb.${i}`, 'busy');
    expect(s.supervisor.skillsOn('busy')).toHaveLength(256);
    expect(s.supervisor.latestConnectionOf('fb.255')).toBe('busy');
    expect(s.supervisor.latestConnectionOf('fb.256')).toBeUndefined();
    await s.speak('fb.0', 'other');
    await s.speak('fb.0', 'busy'); // already known on "busy": still tracked there
    expect(s.supervisor.latestConnectionOf('fb.0')).toBe('busy');
  });

  it('at most 4096 gone skills are remembered, the oldest forgotten first', async () => {
    const s = setup();
    for (let i = 0; i < 4100; i++) {
      // One connection per skill, opened and closed in order: fb.0 is gone first.
      s.bus.publish(createMessage('ovos.fallback.register', { skill_id: `fb.${i}`, priority: 50 }, { skill_id: `fb.${i}`, session: { session_id: 'default' } }), `c${i}`);
      s.bus.closeConnection(`c${i}`);
    }
    await s.bus.idle();
    expect(s.supervisor.isGone('fb.4099')).toBe(true);
    expect(s.supervisor.isGone('fb.4')).toBe(true);
    expect(s.supervisor.isGone('fb.3')).toBe(false);
    expect(s.supervisor.isGone('fb.0')).toBe(false);
  });

  it('a connection-closed handler that throws is logged with reason service_threw; the other handlers still hear of it', async () => {
    const s = setup();
    const heard: string[] = [];
    s.supervisor.onConnectionClosed(() => {
      throw new Error('plugin bug');
    });
    s.supervisor.onConnectionClosed((connection) => heard.push(connection));
    await s.speak('fb.a', 'c1');
    await s.close('c1');
    expect(heard).toEqual(['c1']);
    expect(s.closed).toHaveLength(1);
    expect(s.logs).toContainEqual(expect.objectContaining({ level: 50, reason: 'service_threw', connection: 'c1', msg: 'connection-closed handler threw' }));
  });

  it('a handler unsubscribed is not called any more', async () => {
    const s = setup();
    const heard: string[] = [];
    const off = s.supervisor.onConnectionClosed((connection) => heard.push(connection));
    await s.speak('fb.a', 'c1');
    off();
    await s.close('c1');
    expect(heard).toEqual([]);
    expect(s.closed).toHaveLength(1);
  });

  it('a message on a bus without connection identity teaches nothing (a foreign bus): no skill is ever gone there', async () => {
    const s = setup();
    const message: Message = createMessage('ovos.fallback.register', { skill_id: 'fb.a', priority: 50 }, { skill_id: 'fb.a', session: { session_id: 'default' } });
    s.bus.publish(message);
    await s.bus.idle();
    expect(s.supervisor.latestConnectionOf('fb.a')).toBeUndefined();
    expect(s.supervisor.isGone('fb.a')).toBe(false);
  });
});
