/**
 * `npm start` (and `ovos-contests` with no command): the daemon with its embedded defaults. The deployment's mycroft.conf (where ovos-config finds it),
 * a JSON config file, env and flags override them, in that order (`--help` lists them); a bad value stops start-up
 * with a message naming the key.
 */
import { homedir } from 'node:os';

import { ConfigError, configHelp, describeMycroftReport, formatConfigError, loadConfig } from '../config/config.js';
import { createLogger } from '../log/logger.js';
import { startDaemon } from './daemon.js';
import { stopSignals } from './stop-signals.js';
import { isMain } from '../is-main.js';
import { runPrimary, workerConfig, workerIndex } from './workers.js';
import nodeCluster from 'node:cluster';

/** Run the daemon until a signal stops it. `helpPrefix` goes before the options in `--help`. */
export async function runDaemon(argv: readonly string[], helpPrefix = ''): Promise<void> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${helpPrefix}${configHelp()}\n`);
    process.exit(0);
  }

  let loaded;
  try {
    loaded = loadConfig({ argv, env: process.env, mycroftDiscovery: { home: homedir() } });
  } catch (error) {
    if (error instanceof ConfigError) {
      // `config error (CONFIG_INVALID): bus.port: expected …`: the key once (the message never repeats it).
      process.stderr.write(`config error (${error.code}): ${formatConfigError(error)}\n`);
      process.exit(2);
    }
    throw error;
  }

  const logger = createLogger({ level: loaded.config.log.level });
  // Once at start: which mycroft.conf supplied which of our keys, before the bus is up.
  if (loaded.mycroft !== undefined) {
    if (loaded.mycroft.files.length > 0) logger.info(describeMycroftReport(loaded.mycroft), 'mycroft.conf read');
    for (const note of loaded.mycroft.notes) logger[note.level]({ reason: note.reason, ...(note.file === undefined ? {} : { file: note.file }) }, note.message);
  }
  // `--workers N`: this process starts nats-server and the workers, and stops them (src/daemon/workers.ts).
  if (loaded.config.cluster.workers !== null && nodeCluster.isPrimary) {
    await runPrimary(loaded.config, logger);
    return;
  }
  const worker = workerIndex();
  const config = worker === undefined ? loaded.config : workerConfig(loaded.config, worker);

  // Logging never decides whether the daemon can stop: a reader of stdout that went away (`npm start | head -1`, a
  // restarted log collector) makes writes fail with EPIPE — ignored, and the daemon goes on (and stops) without them.
  process.stdout.on('error', () => {});
  process.stderr.on('error', () => {});
  const say = (level: 'info' | 'warn', fields: Record<string, unknown>, text: string): void => {
    try {
      logger[level](fields, text);
    } catch {
      // stdout gone
    }
  };

  // Signals are heard from the start: one during start-up exits at once (nothing is in flight yet); one later is a
  // graceful shutdown (Daemon.close); its copies (the whole group was signalled, npm forwards one) change nothing, and
  // a second stop a person sends later exits at once (stop-signals.ts).
  let daemon: Awaited<ReturnType<typeof startDaemon>> | undefined;
  const signals = stopSignals();
  const stop = (signal: string): void => {
    const heard = signals.heard(signal);
    if (heard === 'repeat') {
      say('info', { signal, reason: 'signal_repeated' }, 'the same stop again (the process group was signalled): still draining');
      return;
    }
    if (heard === 'force') {
      say('warn', { signal, reason: 'second_signal' }, 'second signal: exiting now');
      process.exit(1);
    }
    if (daemon === undefined) {
      say('info', { signal }, 'signal during start-up: exiting');
      process.exit(0);
    }
    say('info', { signal, grace_ms: config.shutdown.graceMs }, 'shutting down: no new utterances; those in flight may finish');
    daemon.close().then(
      () => {
        say('info', {}, 'stopped');
        process.exit(0);
      },
      () => process.exit(1),
    );
  };
  if (worker === undefined) process.on('SIGINT', () => stop('SIGINT'));
  else {
    // A worker stops when the primary says so (SIGTERM), or when the primary is gone; a Ctrl-C is the primary's.
    process.on('SIGINT', () => {});
    process.on('disconnect', () => stop('primary_gone'));
  }
  process.on('SIGTERM', () => stop('SIGTERM'));

  daemon = await startDaemon(config, logger).catch(async (error: unknown) => {
    const code = (error as { code?: unknown }).code;
    const { host, port } = config.bus;
    if ((error as { service?: unknown }).service === 'metrics' && (code === 'EADDRINUSE' || code === 'EACCES')) {
      process.stderr.write(`cannot serve metrics: 127.0.0.1:${config.metrics.port} is ${code === 'EADDRINUSE' ? 'already in use' : 'not allowed'}. Choose another --metrics-port\n`);
      process.exit(1);
    }
    if ((error as { service?: unknown }).service === 'nats') {
      // A NatsAccessError's message names the servers and files, never a secret (src/cluster/nats-auth.ts). Loaded
      // only here: a daemon alone never loads the NATS client.
      const { NatsAccessError, redactNatsUrls } = await import('../cluster/nats-auth.js');
      const access = error instanceof NatsAccessError ? error : undefined;
      const detail = access?.message ?? `no NATS server with JetStream answered at ${redactNatsUrls(config.cluster.nats ?? '')} (${redactNatsUrls(error instanceof Error ? error.message : String(error))})`;
      const hint = access === undefined || access.code === 'nats_unreachable' ? '. Start one (nats-server -js; Debian: apt install nats-server), or drop --nats to run one daemon alone' : '';
      process.stderr.write(`cannot join the cluster (${access?.code ?? 'nats_unreachable'}): ${detail}${hint}\n`);
      process.exit(access === undefined || access.code === 'nats_unreachable' || access.code === 'nats_auth_refused' ? 1 : 2);
    }
    if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL') {
      // One line a person can act on, no stack trace. 8181 is also ovos-messagebus's default port.
      const why = code === 'EADDRINUSE' ? `${host}:${port} is already in use${port === 8181 ? ' (8181 is also ovos-messagebus\'s default port: is it running?)' : ''}` : code === 'EACCES' ? `no permission to listen on ${host}:${port}` : `${host} is not an address of this machine`;
      process.stderr.write(`cannot start the bus: ${why}. Start with --port <free port>, or join the running bus with --bus ws://${host}:${port}${config.bus.route}\n`);
      process.exit(1);
    }
    logger.fatal({ err: error }, 'daemon failed to start');
    process.exit(1);
  });
}

if (isMain(import.meta.url)) await runDaemon(process.argv.slice(2));
