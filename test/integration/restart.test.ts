/**
 * A restart loses no skill (OVOS-FALLBACK-1 §3 registrations; src/plugins/README.md "Restarts"): the registry is kept on disk,
 * restored at start and reconciled with liveness. The skill here registers once and never again — what an
 * ovos-workshop FallbackSkill does (it registers only at its own start-up) — and still takes part after a restart.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createMessage, reply } from '../../src/bus/message.js';
import { busKey, registryPath, startDaemon, type Daemon } from '../../src/daemon/daemon.js';
import { silentLogger } from '../../src/log/logger.js';
import { REGISTRY_FORMAT, RegistryStore } from '../../src/plugins/fallback/registry-store.js';
import { Probe, captureLogs, configWith, freePort } from './probe.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function daemon(file: string, port = 0, heartbeatMs?: number): Promise<Daemon> {
  const started = await startDaemon(configWith({ bus: heartbeatMs === undefined ? { port } : { port, heartbeatMs }, exampleSkills: false, log: { level: 'silent' }, inspector: { enabled: false }, fallback: { registryFile: file } }), silentLogger());
  let closed = false;
  cleanups.push(async () => {
    if (!closed) await started.close();
  });
  return Object.assign(Object.create(started) as Daemon, {
    close: async () => {
      closed = true;
      await started.close();
    },
  });
}

/** A skill process's connection: answers its pings (willing) and completes its dispatches; registers only if told. */
async function skillConnection(url: string, skillId: string): Promise<Probe> {
  const probe = await Probe.connect(url);
  cleanups.push(() => probe.close());
  probe.frames.subscribe((frame) => {
    const message = frame.message;
    if (message === undefined) return;
    if (message.type === `${skillId}.fallback.ping`) probe.send(reply(message, `${skillId}.fallback.pong`, { skill_id: skillId, can_handle: true }));
    if (message.type === `${skillId}:fallback`) {
      probe.send(reply(message, 'ovos.utterance.speak', { utterance: `${skillId} here` }));
      probe.send(reply(message, 'mycroft.skill.handler.complete', {}));
    }
  });
  return probe;
}

/** An ovos-workshop FallbackSkill's connection: answers broadcast pings (willing) and its requests, as the workshop does. */
async function workshopConnection(url: string, skillId: string, autoPong = true): Promise<Probe> {
  const probe = await Probe.connect(url, undefined, { autoPong });
  cleanups.push(() => probe.close());
  probe.frames.subscribe((frame) => {
    const message = frame.message;
    if (message === undefined) return;
    if (message.type === 'ovos.skills.fallback.ping') probe.send(reply(message, 'ovos.skills.fallback.pong', { skill_id: skillId, can_handle: true }));
    if (message.type === `ovos.skills.fallback.${skillId}.request`) {
      probe.send({ ...message, type: 'speak', data: { utterance: `${skillId} here` } });
      probe.send({ ...message, type: `ovos.skills.fallback.${skillId}.response`, data: { result: true, fallback_handler: 'X.handle_fallback' } });
      probe.send({ ...message, type: 'ovos.utterance.handled', data: {} });
    }
  });
  return probe;
}

const storedSkills = (file: string): string[] =>
  existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as { entries: Array<{ skill_id: string }> }).entries.map((e) => e.skill_id).sort() : [];

describe('restart', () => {
  it('FALLBACK-1 §3.1: after a restart a legacy skill that registered once is asked again without registering; a spec one once heard from (the SDK registers again); a deregistration is kept too', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ovos-registry-'));
    const file = join(dir, 'fallback-registry.json');
    const port = await freePort();
    const first = await daemon(file, port);
    const once = await workshopConnection(first.url, 'once.skill');
    once.send(createMessage('ovos.skills.fallback.register', { skill_id: 'once.skill', priority: 10 }, {}));
    const quiet = await skillConnection(first.url, 'quiet.spec');
    quiet.send(createMessage('ovos.fallback.register', { skill_id: 'quiet.spec', priority: 5 }, { skill_id: 'quiet.spec' }));
    const gone = await skillConnection(first.url, 'gone.skill');
    gone.send(createMessage('ovos.fallback.register', { skill_id: 'gone.skill', priority: 20 }, { skill_id: 'gone.skill' }));
    await once.barrier();
    await quiet.barrier();
    await gone.barrier();
    // Asked once before the restart (it answers the broadcast): heard. One nobody ever answered for comes back dormant
    // (test/plugins/fallback/binding.test.ts).
    const before = await Probe.connect(first.url);
    cleanups.push(() => before.close());
    before.utter('blorp the flange', { utteranceId: 'before-restart' });
    await before.handled('before-restart');
    gone.send(createMessage('ovos.fallback.deregister', { skill_id: 'gone.skill' }, { skill_id: 'gone.skill' }));
    await gone.barrier();
    await first.close();
    expect(storedSkills(file)).toEqual(['once.skill', 'quiet.spec']);

    // The daemon comes back; both skills' processes reconnect (as ovos-bus-client does) but do not register.
    const second = await daemon(file, port);
    expect([...second.system.fallback.registry.availableFor('default').keys()]).toEqual([]);
    await workshopConnection(second.url, 'once.skill');
    const quietAgain = await skillConnection(second.url, 'quiet.spec');
    const user = await Probe.connect(second.url);
    cleanups.push(() => user.close());
    user.utter('blorp the flange', { utteranceId: 'after-restart' });
    await user.handled('after-restart');
    expect(user.of('after-restart').find((m) => m.type === 'ovos.intent.matched')?.data['skill_id']).toBe('once.skill');
    expect(user.of('after-restart').find((m) => m.type === 'speak')?.data['utterance']).toBe('once.skill here');
    // The spec skill was not waited for (restored, not heard from): no ping. Registering again brings it back.
    expect(user.of('after-restart').filter((m) => m.type === 'quiet.spec.fallback.ping')).toEqual([]);
    quietAgain.send(createMessage('ovos.fallback.register', { skill_id: 'quiet.spec', priority: 5 }, { skill_id: 'quiet.spec' }));
    await quietAgain.barrier();
    user.utter('blorp the flange', { utteranceId: 'registered-again' });
    await user.handled('registered-again');
    expect(user.of('registered-again').find((m) => m.type === 'ovos.intent.matched')?.data['skill_id']).toBe('quiet.spec');
  });

  it('liveness: a restored skill is bound to the connection it is heard on — when that closes it is away in the live registry, and kept in the file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ovos-registry-'));
    const file = join(dir, 'fallback-registry.json');
    writeFileSync(file, JSON.stringify({ format: REGISTRY_FORMAT, entries: [{ session_id: 'default', skill_id: 'back.skill', priority: 10, legacy: true, last_seen: Date.now() }] }));
    const d = await daemon(file);
    const skill = await workshopConnection(d.url, 'back.skill');
    const user = await Probe.connect(d.url);
    cleanups.push(() => user.close());
    user.utter('blorp', { utteranceId: 'u1' });
    await user.handled('u1');
    expect(d.system.fallback.registry.entry('default', 'back.skill')?.connection).toEqual(expect.any(String));
    await skill.close();
    await expect.poll(() => d.system.fallback.registry.entry('default', 'back.skill')?.away, { timeout: 10_000 }).toBe(true);
    await d.close();
    expect(storedSkills(file)).toEqual(['back.skill']);
  });

  it('ovos-wire-today: a legacy skill whose socket drops while the daemon runs is asked again over its new socket, without registering again', async () => {
    const d = await daemon(join(mkdtempSync(join(tmpdir(), 'ovos-registry-')), 'r.json'));
    const first = await workshopConnection(d.url, 'wiki.fb');
    first.send(createMessage('ovos.skills.fallback.register', { skill_id: 'wiki.fb', priority: 10 }, {}));
    await first.barrier();
    expect(d.system.fallback.registry.entry('default', 'wiki.fb')?.connection).toEqual(expect.any(String));
    await first.close();
    await expect.poll(() => d.system.fallback.registry.entry('default', 'wiki.fb'), { timeout: 10_000 }).toEqual({ priority: 10, connection: undefined, legacy: true, unheard: true, away: true });
    // ovos-bus-client reconnects; ovos-workshop does not register again. Its new connection opening brings it back.
    await workshopConnection(d.url, 'wiki.fb');
    await expect.poll(() => d.system.fallback.registry.entry('default', 'wiki.fb')?.away, { timeout: 10_000 }).toBeUndefined();
    const user = await Probe.connect(d.url);
    cleanups.push(() => user.close());
    user.utter('what is a barrel roll', { utteranceId: 'after-reconnect' });
    await user.handled('after-reconnect');
    expect(user.of('after-reconnect').find((m) => m.type === 'ovos.intent.matched')?.data['skill_id']).toBe('wiki.fb');
    expect(user.of('after-reconnect').filter((m) => m.type === 'ovos.utterance.handled')).toHaveLength(1);
    expect(d.system.fallback.registry.entry('default', 'wiki.fb')?.connection).toEqual(expect.any(String));
  });

  it('ovos-wire-today: a legacy skill whose new socket opens before its old one is noticed dead (by the heartbeat) is still asked (not taken for away)', async () => {
    // Heartbeat 1 s: the old socket, its network gone, misses its first heartbeat ping and is dropped at the next one,
    // a heartbeat later. Its bus client reconnects once the old socket is dead, here right after that first ping: the
    // new socket opens a heartbeat before the drop, well within the 2 s window even when the drop comes late on a
    // loaded machine (where opening it right after the old one left a margin of a few ms).
    const d = await daemon(join(mkdtempSync(join(tmpdir(), 'ovos-registry-')), 'r.json'), 0, 1_000);
    const user = await Probe.connect(d.url); // the listener's long-lived connection
    cleanups.push(() => user.close());
    const first = await workshopConnection(d.url, 'wiki.fb', false); // its network gone: no pong to the heartbeat
    const unanswered = first.pinged();
    first.send(createMessage('ovos.skills.fallback.register', { skill_id: 'wiki.fb', priority: 10 }, {}));
    await first.barrier();
    await unanswered;
    const second = await workshopConnection(d.url, 'wiki.fb'); // ovos-bus-client's new socket, silent until asked
    await second.barrier();
    await first.closed(); // the daemon's heartbeat drops the old socket, at most two heartbeats after it opened
    await expect.poll(() => d.system.fallback.registry.entry('default', 'wiki.fb')?.connection, { timeout: 10_000 }).toBeUndefined();
    expect(d.system.fallback.registry.entry('default', 'wiki.fb')?.away).toBeUndefined();
    user.utter('what is a barrel roll', { utteranceId: 'u1' });
    await user.handled('u1');
    expect(user.of('u1').find((m) => m.type === 'ovos.intent.matched')?.data['skill_id']).toBe('wiki.fb');
  });

  it('FALLBACK-1 §6.1: a legacy skill whose socket closed, brought back by a short-lived client (the say command) that then goes: away again — the next utterance does not wait for it', async () => {
    const d = await daemon(join(mkdtempSync(join(tmpdir(), 'ovos-registry-')), 'r.json'));
    const user = await Probe.connect(d.url);
    cleanups.push(() => user.close());
    const catchAll = await skillConnection(d.url, 'catch.all');
    catchAll.send(createMessage('ovos.fallback.register', { skill_id: 'catch.all', priority: 90 }, { skill_id: 'catch.all' }));
    const skill = await workshopConnection(d.url, 'wiki.fb');
    skill.send(createMessage('ovos.skills.fallback.register', { skill_id: 'wiki.fb', priority: 10 }, {}));
    await skill.barrier();
    await catchAll.barrier();
    await skill.close(); // its process died: the socket closes at once
    await expect.poll(() => d.system.fallback.registry.entry('default', 'wiki.fb')?.away, { timeout: 10_000 }).toBe(true);
    const say = await Probe.connect(d.url);
    await expect.poll(() => d.system.fallback.registry.entry('default', 'wiki.fb')?.away, { timeout: 10_000 }).toBeUndefined();
    await say.close();
    await expect.poll(() => d.system.fallback.registry.entry('default', 'wiki.fb')?.away, { timeout: 10_000 }).toBe(true);
    user.utter('hello', { utteranceId: 'u1' });
    await user.handled('u1');
    expect(user.of('u1').find((m) => m.type === 'ovos.intent.matched')?.data['skill_id']).toBe('catch.all');
    expect(user.of('u1').filter((m) => m.type === 'ovos.skills.fallback.ping')).toEqual([]);
  });

  it('crash-safe: the file is written as registrations happen (no clean stop needed), and an unreadable one is set aside with a warning', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ovos-registry-'));
    const file = join(dir, 'fallback-registry.json');
    const running = await daemon(file);
    const skill = await skillConnection(running.url, 'fresh.skill');
    skill.send(createMessage('ovos.fallback.register', { skill_id: 'fresh.skill', priority: 30 }, { skill_id: 'fresh.skill' }));
    await expect.poll(() => storedSkills(file), { timeout: 10_000 }).toEqual(['fresh.skill']);
    // Never stopped: another daemon started from the same file (as after a power cut) restores it.
    const after = await daemon(file);
    expect(after.system.fallback.registry.holds('fresh.skill')).toBe(true);

    writeFileSync(file, '{"format": "ovos-contests-registry/1", "entries": [ {"sess');
    const { logger, lines } = captureLogs('info');
    const store = RegistryStore.open(file, { logger, forgetAfterMs: 1_000 });
    expect(store.entries()).toEqual([]);
    expect(lines.items.filter((l) => l.reason === 'registry_file_unreadable')).toHaveLength(1);
    expect(readdirSync(dir).some((f) => f.startsWith('fallback-registry.json.corrupt-'))).toBe(true);
  });

  it('a registration not heard from for the forget period is dropped at start; $STATE/ is the XDG state folder', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ovos-registry-'));
    const file = join(dir, 'r.json');
    const now = 1_800_000_000_000;
    writeFileSync(file, JSON.stringify({ format: REGISTRY_FORMAT, entries: [
      { session_id: 'default', skill_id: 'old', priority: 10, legacy: true, last_seen: now - 31 * 86_400_000 },
      { session_id: 'default', skill_id: 'recent', priority: 10, legacy: true, last_seen: now - 86_400_000 },
      { session_id: 'default', skill_id: 'malformed', priority: 'ten' },
    ] }));
    const store = RegistryStore.open(file, { logger: silentLogger(), now: () => now, forgetAfterMs: 30 * 86_400_000 });
    expect(store.entries().map((e) => e.skill_id)).toEqual(['recent']);
    expect(registryPath('$STATE/fallback-registry-$BUS.json', '127.0.0.1-8181-core', { XDG_STATE_HOME: '/var/lib/x' })).toBe('/var/lib/x/ovos-contests/fallback-registry-127.0.0.1-8181-core.json');
    expect(registryPath('/etc/ovos/reg.json', 'any', {})).toBe('/etc/ovos/reg.json');
    expect(registryPath('/etc/ovos/reg-$BUS.json', 'ws-h-1-core', {})).toBe('/etc/ovos/reg-ws-h-1-core.json');
  });

  it('one registry per bus: two daemons of one user on two ports, from one file pattern, keep two files and never restore each other\'s skills', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ovos-registry-'));
    const pattern = join(dir, 'fallback-registry-$BUS.json');
    const [portA, portB] = [await freePort(), await freePort()];
    const a = await daemon(pattern, portA);
    const skill = await skillConnection(a.url, 'only.on.a');
    skill.send(createMessage('ovos.fallback.register', { skill_id: 'only.on.a', priority: 10 }, { skill_id: 'only.on.a' }));
    await skill.barrier();
    await a.close();
    const b = await daemon(pattern, portB);
    expect(b.system.fallback.registry.entries()).toEqual([]);
    await b.close();
    expect(readdirSync(dir).sort()).toEqual([`fallback-registry-127.0.0.1-${portA}-core.json`]);
    const again = await daemon(pattern, portA);
    expect(again.system.fallback.registry.holds('only.on.a')).toBe(true);
  });

  it('upgrade: the first daemon started with the default registry file adopts the file every daemon used to share (renamed: a second one does not)', async () => {
    const state = mkdtempSync(join(tmpdir(), 'ovos-state-'));
    mkdirSync(join(state, 'ovos-contests'));
    const shared = join(state, 'ovos-contests', 'fallback-registry.json');
    writeFileSync(shared, JSON.stringify({ format: REGISTRY_FORMAT, entries: [{ session_id: 'default', skill_id: 'kept.workshop', priority: 10, legacy: true, last_seen: Date.now() }] }));
    const before = process.env['XDG_STATE_HOME'];
    process.env['XDG_STATE_HOME'] = state;
    try {
      const [portA, portB] = [await freePort(), await freePort()];
      const a = await daemon('$STATE/fallback-registry-$BUS.json', portA);
      expect(a.system.fallback.registry.holds('kept.workshop')).toBe(true);
      expect(existsSync(shared)).toBe(false);
      expect(existsSync(join(state, 'ovos-contests', `fallback-registry-127.0.0.1-${portA}-core.json`))).toBe(true);
      const b = await daemon('$STATE/fallback-registry-$BUS.json', portB);
      expect(b.system.fallback.registry.entries()).toEqual([]);
    } finally {
      if (before === undefined) delete process.env['XDG_STATE_HOME'];
      else process.env['XDG_STATE_HOME'] = before;
    }
  });

  it('one registry per bus: the file is named after the bus served (host, port, route) or joined (its URL)', () => {
    const served = { url: null, host: '127.0.0.1', route: '/core' };
    expect(busKey(served, 8181)).toBe('127.0.0.1-8181-core');
    expect(busKey(served, 8182)).toBe('127.0.0.1-8182-core');
    expect(busKey({ ...served, host: '::1', route: '/' }, 8181)).toBe('1-8181');
    expect(busKey({ ...served, url: 'ws://10.0.0.5:8181/core' }, 8181)).toBe('ws-10.0.0.5-8181-core');
    expect(busKey({ ...served, url: 'wss://bus.example/core' }, 8181)).toBe('wss-bus.example-443-core');
    expect(busKey({ ...served, url: 'ws://bus.example/other' }, 8181)).not.toBe(busKey({ ...served, url: 'ws://bus.example/core' }, 8181));
  });
});
