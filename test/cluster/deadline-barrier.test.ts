/**
 * The deadline barrier (src/cluster/deadline-barrier.ts; src/cluster/README.md "Deadlines"): a deadline that falls due
 * acts once every other daemon with clients has said it has published what its clients sent, or after deadAfterMs;
 * a daemon that let a round run out is asked still but not waited for until it answers again. On ManualClock; the
 * answers are sent and counted after the turn's I/O (setImmediate), which the tests let pass.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock/manual-clock.js';
import { silentLogger } from '../../src/log/logger.js';
import { DeadlineBarrier } from '../../src/cluster/deadline-barrier.js';
import type { SyncNote } from '../../src/cluster/notes.js';

const DEAD_AFTER_MS = 1_000;
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function barrier(others: string[] = ['b', 'c'], closing = false) {
  const clock = new ManualClock();
  const sent: Array<{ kind: 'ask' | 'answer'; note: SyncNote }> = [];
  const state = { others, closing };
  const b = new DeadlineBarrier({
    node: 'a',
    boot: 'boot-a',
    clock,
    logger: silentLogger(),
    deadAfterMs: DEAD_AFTER_MS,
    toAsk: () => state.others,
    publish: (kind, note) => sent.push({ kind, note }),
    closing: () => state.closing,
  });
  let passed = 0;
  const wait = (): void => b.wait(() => passed++);
  return { b, clock, sent, state, wait, passed: () => passed };
}

const answer = (by: string, round: number, boot = 'boot-a', to = 'a'): SyncNote => ({ to, boot, round, by });

describe('cluster deadline barrier', () => {
  it('with no other daemon to ask, a deadline acts at once and nothing is published', () => {
    const t = barrier([]);
    t.wait();
    expect(t.passed()).toBe(1);
    expect(t.sent).toEqual([]);
    expect(t.b.counts()).toEqual({ asked: 0, answered: 0, timedOut: 0 });
  });

  it('asks the daemons named, and acts once each has answered — after the turn that read the last answer', async () => {
    const t = barrier();
    t.wait();
    expect(t.sent).toEqual([{ kind: 'ask', note: { by: 'a', boot: 'boot-a', round: 1, ask: ['b', 'c'] } }]);
    t.b.answered(answer('b', 1));
    await turn();
    expect(t.passed()).toBe(0);
    t.b.answered(answer('c', 1));
    expect(t.passed()).toBe(0);
    await turn();
    expect(t.passed()).toBe(1);
    expect(t.b.counts()).toEqual({ asked: 1, answered: 1, timedOut: 0 });
    // Its timer was cleared: nothing more happens when deadAfterMs passes.
    t.clock.advance(DEAD_AFTER_MS);
    expect(t.passed()).toBe(1);
  });

  it('an answer for another daemon, another run of this one (boot) or an unknown round passes nothing', async () => {
    const t = barrier(['b']);
    t.wait();
    t.b.answered(answer('b', 1, 'boot-old'));
    t.b.answered(answer('b', 1, 'boot-a', 'z'));
    t.b.answered(answer('b', 2));
    await turn();
    expect(t.passed()).toBe(0);
    t.clock.advance(DEAD_AFTER_MS - 1);
    expect(t.passed()).toBe(0);
    t.clock.advance(1);
    expect(t.passed()).toBe(1);
  });

  it('a round acts after deadAfterMs without a daemon\'s answer; that daemon is silent: asked again, not waited for, until it answers', async () => {
    const t = barrier(['b']);
    t.wait();
    t.clock.advance(DEAD_AFTER_MS);
    expect(t.passed()).toBe(1);
    expect(t.b.counts()).toEqual({ asked: 1, answered: 0, timedOut: 1 });
    // Silent: the next deadline asks it, and acts at once.
    t.wait();
    expect(t.sent.at(-1)).toEqual({ kind: 'ask', note: { by: 'a', boot: 'boot-a', round: 2, ask: ['b'] } });
    expect(t.passed()).toBe(2);
    // Its answer (to any round) ends the silence: waited for again.
    t.b.answered(answer('b', 2));
    t.wait();
    expect(t.passed()).toBe(2);
    t.b.answered(answer('b', 3));
    await turn();
    expect(t.passed()).toBe(3);
  });

  it('a daemon left without clients answers for itself in every round waiting; passAll acts on every round at once', async () => {
    const t = barrier(['b', 'c']);
    t.wait();
    t.wait();
    t.b.answered(answer('c', 1));
    t.b.answered(answer('c', 2));
    t.b.noLongerRelays('b');
    await turn();
    expect(t.passed()).toBe(2);
    t.wait();
    t.b.passAll();
    expect(t.passed()).toBe(3);
    t.clock.advance(DEAD_AFTER_MS);
    expect(t.passed()).toBe(3);
  });

  it('another daemon\'s question is answered after the turn, when it names this daemon; not its own, not one naming others, not while closing', async () => {
    const t = barrier();
    t.b.asked({ by: 'b', boot: 'boot-b', round: 7, ask: ['a', 'c'] });
    t.b.asked({ by: 'c', boot: 'boot-c', round: 1, ask: ['b'] });
    t.b.asked({ by: 'a', boot: 'boot-a', round: 9, ask: ['a'] });
    expect(t.sent).toEqual([]);
    await turn();
    expect(t.sent).toEqual([{ kind: 'answer', note: { to: 'b', boot: 'boot-b', round: 7, by: 'a' } }]);
    t.state.closing = true;
    t.b.asked({ by: 'b', boot: 'boot-b', round: 8, ask: ['a'] });
    await turn();
    expect(t.sent).toHaveLength(1);
  });
});
