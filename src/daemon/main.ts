/**
 * `npm start`: the daemon with its embedded defaults. The deployment's mycroft.conf (where ovos-config finds it),
 * a JSON config file, env and flags override them, in that order (`--help` lists them); a bad value stops start-up
 * with a message naming the key.
 */
import { homedir } from 'node:os';

import { ConfigError, configHelp, describeMycroftReport, loadConfig } from '../config/config.js';
import { createLogger } from '../log/logger.js';
import { startDaemon } from './daemon.js';

const argv = process.argv.slice(2);
if (argv.includes('--help') || argv.includes('-h')) {
  process.stdout.write(`${configHelp()}\n`);
  process.exit(0);
}

let loaded;
try {
  loaded = loadConfig({ argv, env: process.env, mycroftDiscovery: { home: homedir() } });
} catch (error) {
  if (error instanceof ConfigError) {
    // The message names the key itself when it starts with it: say it once.
    const named = error.key === undefined || error.message.startsWith(error.key);
    process.stderr.write(`config error (${error.code}${named ? '' : `, ${error.key}`}): ${error.message}\n`);
    process.exit(2);
  }
  throw error;
}

const logger = createLogger({ level: loaded.config.log.level });
// Once at start: which mycroft.conf supplied which of our keys (issue 8), before the bus is up.
if (loaded.mycroft !== undefined) {
  if (loaded.mycroft.files.length > 0) logger.info(describeMycroftReport(loaded.mycroft), 'mycroft.conf read');
  for (const note of loaded.mycroft.notes) logger[note.level]({ reason: note.reason, ...(note.file === undefined ? {} : { file: note.file }) }, note.message);
}
const daemon = await startDaemon(loaded.config, logger).catch((error: unknown) => {
  const code = (error as { code?: unknown }).code;
  const { host, port } = loaded.config.bus;
  if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL') {
    // One line a person can act on, no stack trace. 8181 is also ovos-messagebus's default port.
    const why = code === 'EADDRINUSE' ? `${host}:${port} is already in use${port === 8181 ? ' (8181 is also ovos-messagebus\'s default port: is it running?)' : ''}` : code === 'EACCES' ? `no permission to listen on ${host}:${port}` : `${host} is not an address of this machine`;
    process.stderr.write(`cannot start the bus: ${why}. Start with --port <free port>, or join the running bus with --bus ws://${host}:${port}${loaded.config.bus.route}\n`);
    process.exit(1);
  }
  logger.fatal({ err: error }, 'daemon failed to start');
  process.exit(1);
});

let stopping = false;
const stop = (signal: string): void => {
  if (stopping) return;
  stopping = true;
  logger.info({ signal }, 'shutting down');
  void daemon.close().then(() => process.exit(0));
};
process.on('SIGINT', () => stop('SIGINT'));
process.on('SIGTERM', () => stop('SIGTERM'));
