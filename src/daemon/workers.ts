/**
 * `npm start -- --workers N`: the cores of one machine without running a cluster by hand. The primary process starts
 * a nats-server with JetStream of its own (unless `--nats` names one) on loopback, with a password made at this start
 * that only the workers are given (files 0600 in the state directory: no other user or process of the machine can
 * join it), then N daemon processes (node:cluster) that
 * share the one bus port — the primary hands each new websocket connection to the next worker — and form a cluster on
 * that server (src/cluster/README.md). A worker that dies is replaced; its utterances fail over to the others.
 *
 * Signals: the primary alone decides. A Ctrl-C reaches the whole process group; the workers ignore SIGINT and stop
 * when the primary tells them (SIGTERM, each a graceful leave), then the primary stops its nats-server, which runs in
 * a process group of its own so that it outlives the workers' last messages.
 */
import cluster, { type Worker } from 'node:cluster';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, closeSync, lstatSync, mkdirSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { mergeConfig, validateConfig } from '../config/config.js';
import type { Config } from '../config/defaults.js';
import type { Logger } from '../log/logger.js';
import { stateDir } from './daemon.js';
import { withDaemonFlags } from './node-flags.js';
import { stopSignals } from './stop-signals.js';
import { redactNatsUrls } from '../cluster/nats-auth.js';

/** The environment a worker is started with: its index. */
export const WORKER_INDEX_ENV = 'OVOS_CONTESTS_WORKER_INDEX';
/** Set by the primary that started its own nats-server: the file (0600) holding this start's password for it. */
const WORKER_NATS_AUTH_ENV = 'OVOS_CONTESTS_WORKERS_NATS_AUTH';
/** The user the workers authenticate as on the primary's own nats-server. */
export const WORKERS_NATS_USER = 'ovos-contests';
/** The file in this start's folder (`$XDG_STATE_HOME/ovos-contests/nats/run-*`) that holds that user's password. */
const PASSWORD_FILE = 'workers-password';
/** The nats-server binary (default: `nats-server` on the PATH). */
const NATS_SERVER_ENV = 'OVOS_CONTESTS_NATS_SERVER';
/** A worker that died is started again after this long (not in a tight loop when it dies at start). */
const RESTART_DELAY_MS = 500;

/** This process's worker index, when it is a worker of `--workers`. */
export function workerIndex(): number | undefined {
  if (!cluster.isWorker) return undefined;
  const index = Number(process.env[WORKER_INDEX_ENV]);
  return Number.isInteger(index) && index >= 0 ? index : undefined;
}

/**
 * A worker's own configuration: the cluster's NATS (set by the primary), a name of its own for this incarnation, the
 * example skills in worker 0 only, the inspector and metrics on their port + index.
 */
export function workerConfig(config: Config, index: number, env: Readonly<Record<string, string | undefined>> = process.env): Config {
  const ownServer = env[WORKER_NATS_AUTH_ENV] === undefined || env[WORKER_NATS_AUTH_ENV] === '' ? undefined : env[WORKER_NATS_AUTH_ENV];
  const plus = (port: number | null): number | null => (port === null || port === 0 ? port : port + index);
  return validateConfig(
    mergeConfig(
      config,
      {
        exampleSkills: config.exampleSkills && index === 0,
        inspector: { port: plus(config.inspector.port) },
        metrics: { port: plus(config.metrics.port) },
        cluster: {
          nodeId: `${config.cluster.nodeId ?? 'w'}${index}-${randomBytes(3).toString('hex')}`,
          workers: null,
          ...(ownServer === undefined ? {} : { user: WORKERS_NATS_USER, passwordFile: ownServer, tokenFile: null, nkeyFile: null, credsFile: null, tlsCaFile: null, tlsCertFile: null, tlsKeyFile: null }),
        },
      },
      `worker ${index}`,
    ),
  );
}

/** Run the primary: nats-server (unless given), N workers, replacements, and the shutdown. Never resolves. */
export async function runPrimary(config: Config, logger: Logger): Promise<void> {
  const workers = config.cluster.workers ?? 1;
  let nats: ChildProcess | undefined;
  let credentials: string | undefined;
  let natsUrl = config.cluster.nats;
  if (natsUrl === null) {
    const binary = process.env[NATS_SERVER_ENV] ?? 'nats-server';
    if (spawnSync(binary, ['--version']).status !== 0) {
      process.stderr.write(`--workers needs nats-server with JetStream: not found (${binary}). Install it (Debian: apt install nats-server), or name a running one with --nats nats://host:4222\n`);
      process.exit(1);
    }
    const port = await freePort();
    const dir = join(stateDir(), 'nats');
    privateDir(dir);
    // Credentials of this start alone, in a folder of its own (0700, removed at exit): only the workers (and whoever
    // can read this user's files) can join.
    credentials = mkdtempSync(join(dir, 'run-'));
    const password = randomBytes(32).toString('base64url');
    const conf = join(credentials, 'server.conf');
    writePrivate(conf, [`listen: "127.0.0.1:${port}"`, `jetstream { store_dir: ${JSON.stringify(dir)} }`, `authorization { user: "${WORKERS_NATS_USER}", password: "${password}" }`, ''].join('\n'));
    writePrivate(join(credentials, PASSWORD_FILE), `${password}\n`);
    nats = spawn(binary, ['-c', conf], { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    await new Promise<void>((resolve, reject) => {
      let output = '';
      nats!.stderr!.on('data', (chunk: Buffer) => {
        output += chunk.toString('utf8');
        if (output.includes('Server is ready')) resolve();
      });
      nats!.once('exit', (code) => reject(new Error(`nats-server exited (${String(code)}): ${output.slice(-500)}`)));
    });
    nats.stderr!.resume();
    natsUrl = `nats://127.0.0.1:${port}`;
    // Never left behind by a primary that exits, nor its credentials.
    const ran = credentials;
    process.once('exit', () => {
      nats?.kill('SIGTERM');
      rmSync(ran, { recursive: true, force: true });
    });
    logger.info({ nats: natsUrl, dir, credentials }, 'nats-server started for the workers');
  }

  let stopping = false;
  const live = new Map<number, Worker>();
  const fork = (index: number): void => {
    const worker = cluster.fork({
      OVOS_CONTESTS_NATS: natsUrl ?? '',
      [WORKER_INDEX_ENV]: String(index),
      // The primary's own nats-server: its credentials of this start, whatever else the environment names.
      ...(credentials === undefined ? {} : { [WORKER_NATS_AUTH_ENV]: join(credentials, PASSWORD_FILE), OVOS_CONTESTS_NATS_PASSWORD: '', OVOS_CONTESTS_NATS_TOKEN: '' }),
    });
    live.set(index, worker);
    worker.once('exit', (code, signal) => {
      live.delete(index);
      if (stopping) return;
      logger.warn({ reason: 'worker_exited', worker: index, pid: worker.process.pid, code, signal }, 'a worker exited; another takes its place (its utterances fail over to the other workers)');
      setTimeout(() => {
        if (!stopping) fork(index);
      }, RESTART_DELAY_MS);
    });
  };
  // Every worker runs with the daemon's V8 flags, however the primary was started (`npx ovos-contests` passes none).
  cluster.setupPrimary({ execArgv: withDaemonFlags(process.execArgv) });
  for (let index = 0; index < workers; index++) fork(index);
  logger.info({ workers, nats: redactNatsUrls(natsUrl ?? ''), port: config.bus.port }, `${workers} workers started behind one bus port`);

  const signals = stopSignals();
  const stop = (signal: string): void => {
    const heard = signals.heard(signal);
    if (heard === 'repeat') return; // a copy of the same stop (the whole group was signalled)
    if (heard === 'force') {
      logger.warn({ signal, reason: 'second_signal' }, 'second signal: exiting now');
      for (const worker of live.values()) worker.process.kill('SIGKILL');
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal, workers: live.size }, 'shutting down: each worker hands its sessions on and stops');
    const exits = [...live.values()].map((worker) => new Promise<void>((resolve) => (worker.isDead() ? resolve() : worker.once('exit', () => resolve()))));
    for (const worker of live.values()) worker.process.kill('SIGTERM');
    void Promise.all(exits).then(async () => {
      if (nats !== undefined && nats.exitCode === null) {
        const exited = new Promise<void>((resolve) => nats!.once('exit', () => resolve()));
        nats.kill('SIGTERM');
        await exited;
      }
      logger.info({}, 'stopped');
      process.exit(0);
    });
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  await new Promise<never>(() => {});
}

/**
 * `dir` made if missing, and checked: a folder (not a link to one) of this user's, mode 0700 — another user who could
 * put a link or a folder of theirs there would read or replace the credentials.
 */
function privateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stat = lstatSync(dir);
  if (!stat.isDirectory() || (process.getuid !== undefined && stat.uid !== process.getuid())) {
    process.stderr.write(`--workers: ${dir} is not a folder of this user's (a link, or another user's): not used for the nats-server's credentials\n`);
    process.exit(1);
  }
  if ((stat.mode & 0o077) !== 0) chmodSync(dir, 0o700);
}

/** `text` in a new file only this user can read (never through a link: the file must not exist). */
function writePrivate(file: string, text: string): void {
  const fd = openSync(file, 'wx', 0o600);
  try {
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
