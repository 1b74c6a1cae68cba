/**
 * Graceful shutdown (`Daemon.close`, what SIGTERM / SIGINT run): no new utterance is taken — each is answered at
 * once with its one handled (OVOS-PIPELINE-1 §6) — those in flight finish within `shutdown.graceMs` with their own
 * decision and handled, those still running after it are stopped with theirs, and clients see close code 1001.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createMessage, reply } from '../../src/bus/message.js';
import { startDaemon } from '../../src/daemon/daemon.js';
import { silentLogger } from '../../src/log/logger.js';
import { Probe, configWith } from './probe.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A daemon with one fallback skill on its own connection that pongs only when the test says so. */
async function daemonWithHeldSkill(graceMs: number) {
  const daemon = await startDaemon(
    configWith({ bus: { port: 0 }, exampleSkills: false, log: { level: 'silent' }, shutdown: { graceMs }, fallback: { pingTimeoutMs: 60_000 }, orchestrator: { matchTimeoutMs: 120_000 } }),
    silentLogger(),
  );
  let closed = false;
  cleanups.push(async () => {
    if (!closed) await daemon.close();
  });
  const skill = await Probe.connect(daemon.url);
  const user = await Probe.connect(daemon.url);
  cleanups.push(() => skill.close(), () => user.close());
  skill.send(createMessage('ovos.fallback.register', { skill_id: 'held.skill', priority: 10 }, { skill_id: 'held.skill' }));
  await skill.barrier();
  return { daemon, skill, user, close: () => ((closed = true), daemon.close()) };
}

describe('graceful shutdown', () => {
  it('an utterance in flight finishes with its own answer; one that arrives meanwhile gets its handled at once (shutting_down); clients see 1001', async () => {
    const { skill, user, close } = await daemonWithHeldSkill(60_000);
    user.utter('blorp the flange', { utteranceId: 'in-flight', session: { session_id: 'a' } });
    const ping = await skill.waitFor((m) => m.type === 'held.skill.fallback.ping', 'ping');

    const closing = close();
    user.utter('blorp again', { utteranceId: 'too-late', session: { session_id: 'b' } });
    const refused = await user.handled('too-late');
    expect(refused.data).toEqual({ error: 'shutting_down' });
    expect(user.typesOf('too-late')).toEqual(['ovos.utterance.handle', 'ovos.utterance.handled']);

    // The skill still answers and handles: the first utterance ends as it would have.
    skill.send(reply(ping, 'held.skill.fallback.pong', { skill_id: 'held.skill', can_handle: true }));
    const dispatch = await skill.waitFor((m) => m.type === 'held.skill:fallback', 'dispatch');
    skill.send(reply(dispatch, 'mycroft.skill.handler.complete', {}));
    const handled = await user.handled('in-flight');
    expect(handled.data['error']).toBeUndefined();
    expect(user.typesOf('in-flight').filter((t) => t === 'ovos.utterance.handled')).toHaveLength(1);
    expect(user.typesOf('in-flight')).toContain('ovos.intent.handler.complete');

    await closing;
    expect(await user.closed()).toBe(1001);
    expect(await skill.closed()).toBe(1001);
  });

  it('past the grace an utterance still in flight is stopped — with exactly one handled saying so', async () => {
    const { skill, user, close } = await daemonWithHeldSkill(0);
    user.utter('blorp the flange', { utteranceId: 'stuck', session: { session_id: 'a' } });
    await skill.waitFor((m) => m.type === 'held.skill.fallback.ping', 'ping');
    await close();
    const handled = user.messages.filter((m) => m.type === 'ovos.utterance.handled' && m.context['utterance_id'] === 'stuck');
    expect(handled).toHaveLength(1);
    expect(handled[0]!.data).toEqual({ error: 'shutdown' });
    expect(await user.closed()).toBe(1001);
  });
});
