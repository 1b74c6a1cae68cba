/**
 * pino, the edge that turns what the core reports into log lines. One child logger per contest
 * (`{ session_id, utterance_id, contest }`); every drop carries a `reason` code; untrusted payloads go under
 * their own key (`frame`, `payload`). Pretty output when stdout is a terminal, JSON lines otherwise.
 *
 * JSON lines go to `processStdoutDestination()` (stdout-destination.ts): the daemon never waits for whoever reads its
 * stdout, and never hangs on exit when that reader has gone.
 */
import { pino, type Logger as PinoLogger, type Level } from 'pino';
import pretty from 'pino-pretty';
import { Writable } from 'node:stream';
import { processStdoutDestination } from './stdout-destination.js';

export type Logger = PinoLogger;
export type LogLevel = Level | 'silent';

/**
 * `write`: where pretty lines go (default stdout); JSON lines always go to stdout. In a terminal every C1 control
 * (U+0080–U+009F: U+009B starts a control sequence as ESC [ does) and every bidirectional override or isolate
 * (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C), line and paragraph separator, a skill id or an utterance
 * carries, is shown as `\uXXXX`: what a log line says cannot rewrite the terminal or reorder what it shows. (JSON
 * lines escape the C0 controls; a reader of the JSON sees the characters as sent.)
 */
export function createLogger(options: { level: LogLevel; pretty?: boolean; name?: string; write?: (text: string) => void }): Logger {
  const usePretty = options.pretty ?? process.stdout.isTTY === true;
  const base = { level: options.level, name: options.name ?? 'ovos-contests' };
  if (!usePretty) return pino(base, processStdoutDestination());
  const write = options.write ?? ((text: string) => void process.stdout.write(text));
  const destination = new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      write(escapeForTerminal(chunk.toString()));
      done();
    },
  });
  return pino(base, pretty({ sync: true, colorize: true, translateTime: 'HH:MM:ss.l', ignore: 'pid,hostname,name', destination }));
}

/** Characters a terminal would act on or reorder, besides the colours pino-pretty writes itself (ESC stays). */
const TERMINAL_UNSAFE = /[\u0000-\u0008\u000b-\u001a\u001c-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** `text` with every character a terminal would act on or reorder written as `\uXXXX` (newlines, tabs and ESC kept). */
export function escapeForTerminal(text: string): string {
  return text.replace(TERMINAL_UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** A logger that writes nothing: for tests and for embedding without logs. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

/** At most `max` characters of an untrusted string for a log line, saying how much was cut. */
export function clip(text: string, max = 200): string {
  return text.length <= max ? text : `${text.slice(0, max)}…(+${text.length - max} chars)`;
}

/**
 * At most `max` items of a list for a log line, each clipped, and `…(+N more)` for the rest: a line that names what a
 * client registered stays bounded whatever it registered.
 */
export function clipList(items: readonly string[], max = 20): string[] {
  const shown = items.slice(0, max).map((item) => clip(item, 100));
  return items.length <= max ? shown : [...shown, `…(+${items.length - max} more)`];
}

/**
 * An untrusted payload as JSON text of at most about `max` characters, for a log line. It stops walking once the
 * budget is spent, so a 30 MB payload costs what its first `max` characters cost, never a full serialisation.
 */
export function boundedJson(value: unknown, max = 500): string {
  let out = '';
  let full = false;
  const write = (text: string): void => {
    if (full) return;
    if (out.length + text.length > max) {
      out += text.slice(0, max - out.length);
      full = true;
    } else out += text;
  };
  const visit = (v: unknown, depth: number): void => {
    if (full) return;
    if (typeof v === 'string') write(JSON.stringify(v.length > max ? v.slice(0, max) : v));
    else if (v === null || typeof v !== 'object') write(String(JSON.stringify(v) ?? 'null'));
    else if (depth >= 16) write('"…"');
    else if (Array.isArray(v)) {
      write('[');
      for (let i = 0; i < v.length && !full; i++) {
        if (i > 0) write(',');
        visit(v[i], depth + 1);
      }
      write(']');
    } else {
      write('{');
      let first = true;
      for (const key in v) {
        if (full) break;
        if (!Object.hasOwn(v, key)) continue;
        if (!first) write(',');
        first = false;
        write(`${JSON.stringify(key.length > max ? key.slice(0, max) : key)}:`);
        visit((v as Record<string, unknown>)[key], depth + 1);
      }
      write('}');
    }
  };
  visit(value, 0);
  return full ? `${out}…(truncated)` : out;
}
