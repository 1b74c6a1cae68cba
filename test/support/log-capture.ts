/** A pino logger (debug and up, or from `level`) whose lines are kept, parsed, for a test to assert on. */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { Logger, LogLevel } from '../../src/log/logger.js';

export function captureLogs(level: LogLevel = 'debug'): { readonly logger: Logger; readonly logs: Array<Record<string, unknown>> } {
  const logs: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _encoding, callback) {
      for (const line of String(chunk).split('\n')) if (line) logs.push(JSON.parse(line) as Record<string, unknown>);
      callback();
    },
  });
  return { logger: pino({ level }, sink), logs };
}
