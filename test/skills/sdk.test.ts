/**
 * `ovos-contests/skill`, used the way its doc comment shows: a skill in its own connection to the daemon's bus —
 * registering, answering pings, an async handler whose answer is spoken and whose end is reported, a failing
 * handler reported as an error, and registering again after the daemon restarts (OVOS-FALLBACK-1 §3.1, §6; the
 * src/skills/README.md).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startDaemon } from '../../src/daemon/daemon.js';
import { silentLogger } from '../../src/log/logger.js';
import { connectSkill, runCommonQuerySkill, runFallbackSkill } from '../../src/skills/index.js';
import { Probe, configWith, freePort } from '../integration/probe.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('skill SDK', () => {
  it('a fallback skill: its async answer is spoken and its handler completes; a throwing one ends with handler.error', async () => {
    const port = await freePort();
    const daemon = await startDaemon(configWith({ bus: { port }, exampleSkills: false, log: { level: 'silent' }, inspector: { enabled: false } }), silentLogger());
    cleanups.push(() => daemon.close());
    const weather = await connectSkill(daemon.url, (bus) =>
      runFallbackSkill(bus, {
        skillId: 'weather.me',
        priority: 10,
        canHandle: (utterances) => utterances.some((u) => u.includes('weather')),
        answer: async () => 'It is 21 degrees.',
      }),
    );
    const broken = await connectSkill(daemon.url, (bus) =>
      runFallbackSkill(bus, {
        skillId: 'broken.me',
        priority: 20,
        canHandle: (utterances) => utterances.some((u) => u.includes('crash')),
        answer: () => {
          throw new Error('no network');
        },
      }),
    );
    cleanups.push(() => weather.close(), () => broken.close());
    const user = await Probe.connect(daemon.url);
    cleanups.push(() => user.close());
    await user.barrier();

    user.utter('how is the weather', { utteranceId: 'w-1' });
    await user.handled('w-1');
    expect(user.of('w-1').find((m) => m.type === 'ovos.utterance.speak')?.data['utterance']).toBe('It is 21 degrees.');
    expect(user.typesOf('w-1')).toContain('ovos.intent.handler.complete');

    user.utter('crash please', { utteranceId: 'c-1' });
    await user.handled('c-1');
    const error = user.of('c-1').find((m) => m.type === 'ovos.intent.handler.error');
    expect(error?.data['exception']).toBe('Error: no network');
  });

  it('a common-query skill answers through the contest; a fallback skill registers again after the daemon restarts', async () => {
    const port = await freePort();
    const first = await startDaemon(configWith({ bus: { port }, exampleSkills: false, log: { level: 'silent' }, inspector: { enabled: false } }), silentLogger());
    const facts = await connectSkill(first.url, (bus) =>
      runCommonQuerySkill(bus, {
        skillId: 'facts.me',
        latencyMs: 20,
        canAnswer: (utterance) => utterance.includes('moon'),
        answer: async () => ({ answer: 'The moon is 384,400 km away.', conf: 0.8 }),
      }),
    );
    const catchAll = await connectSkill(first.url, (bus) => runFallbackSkill(bus, { skillId: 'catch-all.me', priority: 90, canHandle: () => true, answer: () => 'no idea' }));
    cleanups.push(() => facts.close(), () => catchAll.close());
    let user = await Probe.connect(first.url);
    user.utter('how far is the moon', { utteranceId: 'q-1' });
    await user.handled('q-1');
    expect(user.of('q-1').find((m) => m.type === 'ovos.utterance.speak')?.data['utterance']).toBe('The moon is 384,400 km away.');
    await user.close();

    // The daemon restarts on the same port: its registry starts empty; the skill's connection comes back and it
    // registers again without being told.
    await first.close();
    const second = await startDaemon(configWith({ bus: { port }, exampleSkills: false, log: { level: 'silent' }, inspector: { enabled: false } }), silentLogger());
    cleanups.push(() => second.close());
    await expect.poll(() => second.system.fallback.registry.availableFor('default').has('catch-all.me'), { timeout: 15_000, interval: 20 }).toBe(true);
    user = await Probe.connect(second.url);
    cleanups.push(() => user.close());
    user.utter('do a barrel roll', { utteranceId: 'r-1' });
    await user.handled('r-1');
    expect(user.of('r-1').find((m) => m.type === 'ovos.utterance.speak')?.data['utterance']).toBe('no idea');
  });
});
