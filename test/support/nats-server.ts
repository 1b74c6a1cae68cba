/**
 * A NATS server with JetStream for the cluster tests, started by the test itself on loopback with a folder of its
 * own: Debian's `nats-server` (`.ci/run` installs it). Without it the cluster suites skip and say so.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
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
  const child = spawn(BINARY, ['-js', '-a', '127.0.0.1', '-p', String(chosen), '-sd', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const watched = watchOutput(child);
  const ready = await Promise.race([watched.printed('Server is ready').then(() => true), exited.then(() => false)]);
  if (!ready) throw new Error(`nats-server did not start: ${watched.output()}`);
  return {
    url: `nats://127.0.0.1:${chosen}`,
    port: chosen,
    child,
    output: watched.output,
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
  const servers: NatsServer[] = [];
  const watchers: Array<ReturnType<typeof watchOutput>> = [];
  for (let i = 0; i < n; i++) {
    const dir = mkdtempSync(join(tmpdir(), 'ovos-contests-nats-'));
    const others = routes.filter((_, j) => j !== i).map((port) => `nats://127.0.0.1:${port}`).join(',');
    const args = ['-js', '-a', '127.0.0.1', '-p', String(ports[i]), '-sd', dir, '-n', `n${i}`, '--cluster_name', 'ovos-contests', '--cluster', `nats://127.0.0.1:${routes[i]}`, '--routes', others];
    const child = spawn(BINARY, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const watched = watchOutput(child);
    watchers.push(watched);
    servers.push({
      url: `nats://127.0.0.1:${ports[i]}`,
      port: ports[i]!,
      child,
      output: watched.output,
      stop: async (signal = 'SIGTERM') => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        child.kill(signal);
        await exited;
      },
    });
  }
  const leader = (output: string): boolean => /metadata leader|JetStream cluster new metadata leader/i.test(output);
  await Promise.race(watchers.map((watched) => watched.until(leader)));
  return servers;
}
