/**
 * pino, the edge that turns what the core reports into log lines (STYLE 8). One child logger per contest
 * (`{ session_id, utterance_id, contest }`); every drop carries a `reason` code; untrusted payloads go under
 * their own key (`frame`, `payload`). Pretty output when stdout is a terminal, JSON lines otherwise.
 */
import { pino, type Logger as PinoLogger, type Level } from 'pino';
import pretty from 'pino-pretty';

export type Logger = PinoLogger;
export type LogLevel = Level | 'silent';

export function createLogger(options: { level: LogLevel; pretty?: boolean; name?: string }): Logger {
  const usePretty = options.pretty ?? process.stdout.isTTY === true;
  const base = { level: options.level, name: options.name ?? 'ovos-contests' };
  if (!usePretty) return pino(base);
  return pino(base, pretty({ sync: true, colorize: true, translateTime: 'HH:MM:ss.l', ignore: 'pid,hostname,name' }));
}

/** A logger that writes nothing: for tests and for embedding without logs. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
