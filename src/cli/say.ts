#!/usr/bin/env node
/**
 * `npm run say -- "utterance" [--session ID] [--lang TAG] [--bus URL] [--timeout MS] [--trace FILE]` (`--help`: USAGE)
 *
 * Sends one `ovos.utterance.handle` over a real websocket and prints the message timeline of that utterance
 * (topic, ms since sending, key fields) until its `ovos.utterance.handled`. `--trace FILE` also writes that timeline
 * as a trace (src/testing/trace.ts) with the session's fallback pools, which `ovos-contests replay-trace` replays.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import WebSocket from 'ws';
import { decodeFrame, encodeMessage, isJsonObject, type Message } from '../bus/message.js';
import { legacyTopics } from '../dialect/legacy-dialect.js';
import { TRACE_FORMAT, traceEntry, type Trace, type TraceEntry } from '../testing/trace.js';
import { isMain } from '../is-main.js';

export interface SayOptions {
  /** `-h` / `--help`: print USAGE and nothing else. */
  help: boolean;
  utterance: string;
  session: string;
  lang: string | undefined;
  bus: string;
  timeoutMs: number;
  trace: string | undefined;
}

export const USAGE = `usage: ovos-say "utterance" [options]          (in a clone: npm run say -- "utterance" [options])

Sends one ovos.utterance.handle to the bus and prints that utterance's messages until its ovos.utterance.handled.

  --session ID     session_id of the utterance (default "default")
  --lang TAG       its language (BCP 47), e.g. en-US
  --bus URL        the bus (default ws://127.0.0.1:8181/core)
  --timeout MS     give up after MS without its handled (default 75000: longer than the daemon's
                   worst case with default settings, 4 stages × 10 s match bound + 30 s handler timeout)
  --trace FILE     also write the timeline as a trace (npm run replay-trace -- --trace FILE)
  -h, --help       this text
`;

/** Default `--timeout`: past the daemon's own worst case with its defaults (pipeline × match bound + handler timeout). */
export const SAY_TIMEOUT_MS = 75_000;

/** The fallback stages whose pools a trace records (the default pipeline's). */
const TRACE_STAGES = ['fallback_high', 'fallback_medium', 'fallback_low'] as const;

export function parse(argv: readonly string[]): SayOptions {
  const options: SayOptions = { help: false, utterance: '', session: 'default', lang: undefined, bus: 'ws://127.0.0.1:8181/core', timeoutMs: SAY_TIMEOUT_MS, trace: undefined };
  const words: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [flag, inline] = arg.startsWith('--') && arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    const value = (): string => {
      const v = inline ?? argv[++i];
      if (v === undefined) throw new Error(`${flag} needs a value`);
      return v;
    };
    if (flag === '-h' || flag === '--help') options.help = true;
    else if (flag === '--session') options.session = value();
    else if (flag === '--lang') options.lang = value();
    else if (flag === '--bus') options.bus = value();
    else if (flag === '--trace') options.trace = value();
    else if (flag === '--timeout') {
      options.timeoutMs = Number(value());
      if (!Number.isInteger(options.timeoutMs) || options.timeoutMs <= 0) throw new Error('--timeout takes a whole number of milliseconds > 0');
    }
    else if (flag.startsWith('--')) throw new Error(`unknown flag ${flag}`);
    else words.push(arg);
  }
  options.utterance = words.join(' ').trim();
  if (options.utterance === '' && !options.help) throw new Error(USAGE);
  return options;
}

function summary(message: Message): string {
  const d = message.data;
  const pick = (...keys: string[]): string =>
    keys.filter((k) => d[k] !== undefined).map((k) => `${k}=${JSON.stringify(d[k])}`).join(' ');
  switch (true) {
    case message.type.endsWith('.fallback.ping'):
      return pick('utterances', 'lang');
    case message.type.endsWith('.fallback.pong'):
      return pick('skill_id', 'can_handle');
    case message.type === 'ovos.common_query.pong':
      return pick('skill_id', 'can_answer', 'latency_ms');
    case message.type.endsWith('.common_query.response'):
      return pick('skill_id', 'answer', 'conf');
    case message.type === 'ovos.intent.matched':
      return pick('skill_id', 'intent_name', 'pipeline_id', 'slots');
    case message.type === 'ovos.utterance.speak' || message.type === legacyTopics.speak:
      return pick('utterance');
    case message.type.startsWith('ovos.intent.handler'):
      return pick('skill_id', 'intent_name', 'exception');
    default:
      return pick('utterance', 'utterances', 'skill_id');
  }
}

/** Ask each fallback stage for its pool in `session` (OVOS-PIPELINE-1 §10); a stage that does not answer is left out. */
async function poolsOf(ws: WebSocket, session: Record<string, string>): Promise<Record<string, string[]>> {
  const pools: Record<string, string[]> = {};
  const waiting = new Map<string, (intents: string[]) => void>();
  const onMessage = (raw: WebSocket.RawData): void => {
    const decoded = decodeFrame(raw.toString());
    if (!decoded.ok) return;
    const stage = TRACE_STAGES.find((s) => decoded.message.type === `ovos.pipeline.${s}.intents.list.response`);
    const intents = decoded.message.data['intents'];
    if (stage === undefined || !Array.isArray(intents)) return;
    waiting.get(stage)?.(intents.flatMap((i) => (isJsonObject(i) && typeof i['skill_id'] === 'string' ? [i['skill_id']] : [])));
  };
  ws.on('message', onMessage);
  await Promise.all(
    TRACE_STAGES.map(
      (stage) =>
        new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 2_000);
          waiting.set(stage, (skills) => {
            clearTimeout(timer);
            pools[stage] = skills;
            resolve();
          });
          ws.send(encodeMessage({ type: `ovos.pipeline.${stage}.intents.list`, data: {}, context: { source: 'say', destination: 'orchestrator', session } }));
        }),
    ),
  );
  ws.off('message', onMessage);
  return pools;
}

/** Say one utterance; prints its timeline with `out`. Resolves 0 when it was handled, 1 on timeout or a bus that went away. */
export async function say(options: SayOptions, out: (text: string) => void): Promise<number> {
  const utteranceId = randomUUID();
  const ws = new WebSocket(options.bus, { handshakeTimeout: 5_000 });
  ws.on('upgrade', (response) => response.socket.setNoDelay(true));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', (error) => reject(new Error(`cannot reach the bus at ${options.bus}: ${error.message} (is \`npm start\` running?)`)));
  });
  const session: Record<string, string> = { session_id: options.session };
  if (options.lang !== undefined) session['lang'] = options.lang;
  const pools = options.trace === undefined ? {} : await poolsOf(ws, session);
  const recorded: TraceEntry[] = [];
  const started = performance.now();
  let spoken: string | undefined;
  let handled = false;
  const finished = new Promise<number>((resolve) => {
    const timer = setTimeout(() => {
      out(`no ovos.utterance.handled within ${options.timeoutMs} ms\n`);
      resolve(1);
    }, options.timeoutMs);
    ws.on('message', (raw) => {
      const decoded = decodeFrame(raw.toString());
      if (!decoded.ok || decoded.message.context['utterance_id'] !== utteranceId) return;
      const message = decoded.message;
      const at = performance.now() - started;
      recorded.push(traceEntry(at, message));
      out(`${at.toFixed(1).padStart(8)} ms  ${message.type.padEnd(42)} ${summary(message)}\n`);
      // What the plugin speaks, or a legacy winner itself (ovos-workshop's `speak`).
      if ((message.type === 'ovos.utterance.speak' || message.type === legacyTopics.speak) && typeof message.data['utterance'] === 'string') spoken = message.data['utterance'];
      if (message.type === 'ovos.utterance.handled') {
        handled = true;
        clearTimeout(timer);
        resolve(0);
      }
    });
    // A daemon that stops (or a bus that drops us) will never send the handled: say so now, not at the timeout.
    ws.on('close', (code) => {
      if (handled) return;
      clearTimeout(timer);
      out(`the bus closed the connection (code ${code}) before ovos.utterance.handled — did the daemon stop?\n`);
      resolve(1);
    });
  });
  ws.send(
    encodeMessage({
      type: 'ovos.utterance.handle',
      data: options.lang === undefined ? { utterances: [options.utterance] } : { utterances: [options.utterance], lang: options.lang },
      context: { source: 'say', destination: 'orchestrator', session, utterance_id: utteranceId },
    }),
  );
  const code = await finished;
  if (spoken !== undefined) out(`\nspoken: ${spoken}\n`);
  if (options.trace !== undefined) {
    const trace: Trace = { format: TRACE_FORMAT, utterance: options.utterance, session_id: options.session, pools, messages: recorded };
    writeFileSync(options.trace, `${JSON.stringify(trace, null, 1)}\n`);
    out(`trace written to ${options.trace} (replay: npm run replay-trace -- --trace ${options.trace})\n`);
  }
  ws.removeAllListeners('close');
  ws.close();
  return code;
}

if (isMain(import.meta.url)) {
  Promise.resolve()
    .then(() => {
      const options = parse(process.argv.slice(2));
      if (!options.help) return say(options, (text) => process.stdout.write(text));
      process.stdout.write(USAGE);
      return 0;
    })
    .then(
      (code) => process.exit(code),
      (error: unknown) => {
        process.stderr.write(`${(error as Error).message}\n`);
        process.exit(2);
      },
    );
}
