/**
 * A NATS server with JetStream for the cluster tests, started by the test itself on loopback with a folder of its
 * own: Debian's `nats-server` (`.ci/run` installs it). Without it the cluster suites skip and say so.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { watchOutput } from '../integration/spawn-daemon.js';
import { freePort } from '../integration/probe.js';

const BINARY = process.env['NATS_SERVER'] ?? 'nats-server';

/** Why the cluster suites cannot run here, or undefined when they can. */
export function natsServerAbsent(): string | undefined {
  const probe = spawnSync(BINARY, ['--version'], { encoding: 'utf8' });
  if (probe.error === undefined && probe.status === 0) return undefined;
  return `no ${BINARY} on this machine (Debian: apt install nats-server; .ci/run installs it): the cluster suite is skipped`;
}

export interface NatsServer {
  readonly url: string;
  readonly port: number;
  readonly child: ChildProcess;
  readonly output: () => string;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** `nats-server -js` on a free loopback port; resolves once it says it is ready. `dir` keeps JetStream's files (a restart passes it again). */
export async function startNatsServer(dir = mkdtempSync(join(tmpdir(), 'ovos-contests-nats-')), port?: number): Promise<NatsServer> {
  const chosen = port ?? (await freePort());
  const server = spawnServer(chosen, ['-sd', dir]);
  const exited = new Promise<boolean>((resolve) => server.child.once('exit', () => resolve(false)));
  const ready = await Promise.race([server.watched.printed('Server is ready').then(() => true), exited]);
  if (!ready) throw new Error(`nats-server did not start: ${server.output()}`);
  return server;
}

/**
 * `nats-server -c` with the configuration `conf` gives for a free loopback port and a folder of its own (JetStream's
 * store is in the folder: `conf` says so with `jetstream { store_dir: … }`); `scheme` is what its URL starts with.
 */
export async function startNatsServerWith(conf: (port: number, dir: string) => string, scheme: 'nats' | 'tls' = 'nats'): Promise<NatsServer> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'ovos-contests-nats-'));
  const file = join(dir, 'server.conf');
  writeFileSync(file, conf(port, dir));
  const server = spawnServer(port, ['-c', file], scheme);
  const exited = new Promise<boolean>((resolve) => server.child.once('exit', () => resolve(false)));
  const ready = await Promise.race([server.watched.printed('Server is ready').then(() => true), exited]);
  if (!ready) throw new Error(`nats-server did not start: ${server.output()}`);
  return server;
}

/** One `nats-server -js` on loopback at `port`, with `extra` arguments (or `-c FILE` alone); its output watched from the start. */
function spawnServer(port: number, extra: readonly string[], scheme: 'nats' | 'tls' = 'nats'): NatsServer & { readonly watched: ReturnType<typeof watchOutput> } {
  const args = extra[0] === '-c' ? extra : ['-js', '-a', '127.0.0.1', '-p', String(port), ...extra];
  const child = spawn(BINARY, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const watched = watchOutput(child);
  return {
    url: `${scheme}://127.0.0.1:${port}`,
    port,
    child,
    output: watched.output,
    watched,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill(signal);
      await exited;
    },
  };
}

/**
 * `n` NATS servers routed into one cluster with JetStream (each its own folder and name); resolves once JetStream
 * has a metadata leader, so streams and buckets can be made.
 */
export async function startNatsCluster(n = 3): Promise<NatsServer[]> {
  const ports = await Promise.all(Array.from({ length: n }, () => freePort()));
  const routes = await Promise.all(Array.from({ length: n }, () => freePort()));
  const servers = ports.map((port, i) => {
    const others = routes.filter((_, j) => j !== i).map((route) => `nats://127.0.0.1:${route}`).join(',');
    const dir = mkdtempSync(join(tmpdir(), 'ovos-contests-nats-'));
    return spawnServer(port, ['-sd', dir, '-n', `n${i}`, '--cluster_name', 'ovos-contests', '--cluster', `nats://127.0.0.1:${routes[i]}`, '--routes', others]);
  });
  const leader = (output: string): boolean => /metadata leader/i.test(output);
  await Promise.race(servers.map((server) => server.watched.until(leader)));
  return servers;
}
