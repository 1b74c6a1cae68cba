/**
 * Membership (src/cluster/membership.ts; src/cluster/README.md "Partitions"): who is alive and who shares the
 * partitions, in rounds of this daemon's own heartbeats.
 */
import { describe, expect, it } from 'vitest';
import { Membership } from '../../src/cluster/membership.js';

const said = (over: Partial<{ leaving: boolean; boot: string; ends: boolean; sync: boolean }> = {}) => ({ leaving: false, boot: 'b1', ends: true, sync: true, ...over });

describe('cluster membership', () => {
  it('a daemon heard is a member while heard within deadRounds of this daemon\'s own heartbeats, alive as long; this daemon always', () => {
    const m = new Membership('a', 2);
    expect(m.heard('b', said())).toBe('joined');
    expect(m.members(false)).toEqual(['a', 'b']);
    m.ownBeat();
    m.ownBeat();
    expect(m.alive('b')).toBe(true);
    expect(m.members(false)).toEqual(['a', 'b']);
    m.ownBeat();
    expect(m.alive('b')).toBe(false);
    expect(m.members(false)).toEqual(['a']);
    expect(m.alive('a')).toBe(true);
    expect(m.alive('never-heard')).toBe(false);
  });

  it('a leaving daemon is alive but no member; this daemon leaving is no member of its own list', () => {
    const m = new Membership('a', 2);
    expect(m.heard('c', said({ leaving: true }))).toBe('leaving');
    expect(m.heard('b', said())).toBe('joined');
    expect(m.heard('b', said({ leaving: true }))).toBe('leaving');
    expect(m.heard('b', said())).toBe('back');
    expect(m.heard('b', said())).toBe('unchanged');
    expect(m.members(false)).toEqual(['a', 'b']);
    expect(m.members(true)).toEqual(['b']);
    expect(m.alive('c')).toBe(true);
  });

  it('a heartbeat with another boot is the daemon started again under its name; what it reads is its last heartbeat\'s', () => {
    const m = new Membership('a', 2);
    m.heard('b', said({ sync: false }));
    expect(m.of('b')?.sync).toBe(false);
    expect(m.heard('b', said({ boot: 'b2', sync: true }))).toBe('started again');
    expect(m.of('b')).toEqual({ leaving: false, boot: 'b2', ends: true, sync: true, round: 0 });
  });

  it('settled once more rounds than deadRounds have passed: every live daemon has been heard by then', () => {
    const m = new Membership('a', 3);
    for (let i = 0; i < 3; i++) {
      expect(m.settled()).toBe(false);
      m.ownBeat();
    }
    m.ownBeat();
    expect(m.settled()).toBe(true);
    expect(m.round).toBe(4);
  });
});
