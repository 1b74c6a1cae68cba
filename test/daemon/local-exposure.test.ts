/**
 * What the daemon exposes to others, said at start (daemon.ts; src/plugins/README.md "Beyond this machine", "One registry file per
 * bus"): a bus served beyond loopback has no authentication (bus_not_loopback), a bus joined over ws:// beyond
 * loopback travels in clear (bus_unencrypted); and its registry file in the state folder is kept from other local
 * users (0700 folder, 0600 file, no symbolic links, a size cap). Real daemons on ephemeral ports, no example skills,
 * no sleeps.
 */
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, statSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BusServer } from '../../src/bus/ws-server.js';
import { busExposure, isLoopbackHost, startDaemon, type Daemon } from '../../src/daemon/daemon.js';
import { silentLogger } from '../../src/log/logger.js';
import { REGISTRY_FORMAT, REGISTRY_MAX_BYTES } from '../../src/plugins/fallback/registry-store.js';
import { captureLogs, configWith, type LogLine } from '../integration/probe.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function started(override: Record<string, unknown>): Promise<{ daemon: Daemon; lines: readonly LogLine[] }> {
  const { logger, lines } = captureLogs('info');
  const daemon = await startDaemon(configWith({ exampleSkills: false, inspector: { enabled: false }, ...override }), logger);
  cleanups.push(() => daemon.close());
  return { daemon, lines: lines.items };
}

const warns = (lines: readonly LogLine[]): LogLine[] => lines.filter((line) => line.level >= 40);
const modeOf = (path: string): number => statSync(path).mode & 0o777;

/** `XDG_STATE_HOME` pointed at a fresh folder for the length of `body`. */
async function withStateHome(body: (state: string) => Promise<void>): Promise<void> {
  const state = mkdtempSync(join(tmpdir(), 'ovos-exposure-state-'));
  const before = process.env['XDG_STATE_HOME'];
  process.env['XDG_STATE_HOME'] = state;
  try {
    await body(state);
  } finally {
    if (before === undefined) delete process.env['XDG_STATE_HOME'];
    else process.env['XDG_STATE_HOME'] = before;
  }
}

describe('bus exposure warnings', () => {
  it('a bus served on every address (--host 0.0.0.0) logs one warn, bus_not_loopback: no authentication, anyone who reaches it drives the assistant and reads every message', async () => {
    const { daemon, lines } = await started({ bus: { host: '0.0.0.0', port: 0 } });
    expect(warns(lines)).toMatchObject([{ reason: 'bus_not_loopback', host: '0.0.0.0', url: daemon.url }]);
    expect(warns(lines)[0]!.msg).toMatch(/no authentication.*drive the assistant.*read every message/);
  });

  it.each(['localhost', '127.0.0.2'])('a bus served on loopback (%s) logs no warn', async (host) => {
    const { lines } = await started({ bus: { host, port: 0 } });
    expect(lines.some((line) => line.msg === 'OVOS bus listening')).toBe(true);
    expect(warns(lines)).toEqual([]);
  });

  it('a bus joined over ws:// at an address beyond loopback logs one warn, bus_unencrypted: readable and forgeable on the network, use wss://', async () => {
    const messagebus = await BusServer.start({ host: '127.0.0.1', port: 0, route: '/core', maxFrameBytes: 1 << 20, logger: silentLogger() });
    cleanups.push(() => messagebus.close());
    // 0.0.0.0 is not a loopback address, yet a connection to it reaches this machine on Linux: a bus to join without
    // serving one on the network.
    const url = `ws://0.0.0.0:${messagebus.port}/core`;
    const { lines } = await started({ bus: { url } });
    expect(warns(lines)).toMatchObject([{ reason: 'bus_unencrypted', url }]);
    expect(warns(lines)[0]!.msg).toMatch(/read every message and forge.*wss:\/\//);
  });

  it.each(['127.0.0.1', 'localhost'])('a bus joined over ws:// on loopback (%s) logs no warn', async (host) => {
    const messagebus = await BusServer.start({ host: '127.0.0.1', port: 0, route: '/core', maxFrameBytes: 1 << 20, logger: silentLogger() });
    cleanups.push(() => messagebus.close());
    const { lines } = await started({ bus: { url: `ws://${host}:${messagebus.port}/core` } });
    expect(lines.some((line) => line.msg === 'connecting to an existing OVOS messagebus')).toBe(true);
    expect(warns(lines)).toEqual([]);
  });

  it('which hosts are loopback: 127.0.0.0/8, ::1 (also IPv4-mapped, also in URL brackets) and localhost; every other address and name is not', () => {
    for (const host of ['127.0.0.1', '127.8.9.10', '::1', '[::1]', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1', 'localhost', 'LocalHost']) expect(isLoopbackHost(host), host).toBe(true);
    for (const host of ['0.0.0.0', '::', '[::]', '192.168.1.20', '10.0.0.5', 'fd00::2', 'fe80::1%eth0', '::ffff:10.0.0.5', 'bus.example', 'my-laptop', 'localhost.example', '']) expect(isLoopbackHost(host), host).toBe(false);
  });

  it('which buses are exposed: served beyond loopback, or joined with ws:// beyond loopback; wss:// never warns', () => {
    const reason = (bus: { url: string | null; host: string }): string | undefined => busExposure(bus)?.reason;
    expect(reason({ url: null, host: '::' })).toBe('bus_not_loopback');
    expect(reason({ url: null, host: '192.168.1.20' })).toBe('bus_not_loopback');
    expect(reason({ url: null, host: '::1' })).toBeUndefined();
    expect(reason({ url: 'ws://10.0.0.5:8181/core', host: '127.0.0.1' })).toBe('bus_unencrypted');
    expect(reason({ url: 'ws://bus.example:8181/core', host: '127.0.0.1' })).toBe('bus_unencrypted');
    expect(reason({ url: 'ws://[::1]:8181/core', host: '0.0.0.0' })).toBeUndefined(); // bus.host is not used when joining
    expect(reason({ url: 'wss://10.0.0.5:8181/core', host: '127.0.0.1' })).toBeUndefined();
  });
});

describe('the registry file in the state folder', () => {
  it('a registry file over the size cap: the daemon starts with an empty registry, the file set aside (registry_file_too_large)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ovos-exposure-'));
    const file = join(dir, 'registry.json');
    writeFileSync(file, '');
    truncateSync(file, REGISTRY_MAX_BYTES + 1);
    const { daemon, lines } = await started({ bus: { port: 0 }, fallback: { registryFile: file } });
    expect(daemon.system.fallback.registry.entries()).toEqual([]);
    expect(warns(lines)).toMatchObject([{ reason: 'registry_file_too_large', file, size: REGISTRY_MAX_BYTES + 1 }]);
    expect(readdirSync(dir).filter((name) => name.startsWith('registry.json.corrupt-'))).toHaveLength(1);
  });

  it('upgrade: the shared file adopted from an open state folder ends 0600, in a folder made 0700', async () => {
    await withStateHome(async (state) => {
      const own = join(state, 'ovos-contests');
      mkdirSync(own);
      chmodSync(own, 0o755);
      const shared = join(own, 'fallback-registry.json');
      writeFileSync(shared, JSON.stringify({ format: REGISTRY_FORMAT, entries: [{ session_id: 'default', skill_id: 'kept.workshop', priority: 10, legacy: true, last_seen: Date.now() }] }));
      chmodSync(shared, 0o644);
      const { daemon, lines } = await started({ bus: { port: 0 }, fallback: { registryFile: '$STATE/fallback-registry-$BUS.json' } });
      expect(daemon.system.fallback.registry.holds('kept.workshop')).toBe(true);
      const [adopted] = lines.filter((line) => line.reason === 'registry_file_adopted');
      expect(modeOf(String(adopted!['file']))).toBe(0o600);
      expect(modeOf(own)).toBe(0o700);
      expect(warns(lines)).toEqual([]);
    });
  });

  it('upgrade: a shared file that is a symbolic link is not adopted and its target is left untouched (registry_file_symlink)', async () => {
    await withStateHome(async (state) => {
      const own = join(state, 'ovos-contests');
      mkdirSync(own, { mode: 0o700 });
      const target = join(state, 'someone-elses.json');
      const text = JSON.stringify({ format: REGISTRY_FORMAT, entries: [{ session_id: 'default', skill_id: 'planted.skill', priority: 10, legacy: true, last_seen: Date.now() }] });
      writeFileSync(target, text);
      chmodSync(target, 0o644);
      const shared = join(own, 'fallback-registry.json');
      symlinkSync(target, shared);
      const { daemon, lines } = await started({ bus: { port: 0 }, fallback: { registryFile: '$STATE/fallback-registry-$BUS.json' } });
      expect(daemon.system.fallback.registry.entries()).toEqual([]);
      expect(warns(lines)).toMatchObject([{ reason: 'registry_file_symlink', from: shared }]);
      expect(lstatSync(shared).isSymbolicLink()).toBe(true);
      expect(readFileSync(target, 'utf8')).toBe(text);
      expect(modeOf(target)).toBe(0o644);
      expect(readdirSync(own)).toEqual(['fallback-registry.json']);
    });
  });
});
