/** A pino logger (debug and up) whose lines are kept, parsed, for a test to assert on. */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { Logger } from '../../src/log/logger.js';

export function captureLogs(): { readonly logger: Logger; readonly logs: Array<Record<string, unknown>> } {
  const logs: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _encoding, callback) {
      for (const line of String(chunk).split('\n')) if (line) logs.push(JSON.parse(line) as Record<string, unknown>);
      callback();
    },
  });
  return { logger: pino({ level: 'debug' }, sink), logs };
}
