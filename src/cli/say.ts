/**
 * `npm run say -- "utterance" [--session ID] [--lang TAG] [--bus URL] [--timeout MS]`
 *
 * Sends one `ovos.utterance.handle` over a real websocket and prints the message timeline of that utterance
 * (topic, ms since sending, key fields) until its `ovos.utterance.handled`.
 */
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import { decodeFrame, encodeMessage, type Message } from '../bus/message.js';

interface SayOptions {
  utterance: string;
  session: string;
  lang: string | undefined;
  bus: string;
  timeoutMs: number;
}

function parse(argv: readonly string[]): SayOptions {
  const options: SayOptions = { utterance: '', session: 'default', lang: undefined, bus: 'ws://127.0.0.1:8181/core', timeoutMs: 30_000 };
  const words: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [flag, inline] = arg.startsWith('--') && arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    const value = (): string => {
      const v = inline ?? argv[++i];
      if (v === undefined) throw new Error(`${flag} needs a value`);
      return v;
    };
    if (flag === '--session') options.session = value();
    else if (flag === '--lang') options.lang = value();
    else if (flag === '--bus') options.bus = value();
    else if (flag === '--timeout') {
      options.timeoutMs = Number(value());
      if (!Number.isInteger(options.timeoutMs) || options.timeoutMs <= 0) throw new Error('--timeout takes a whole number of milliseconds > 0');
    }
    else if (flag.startsWith('--')) throw new Error(`unknown flag ${flag}`);
    else words.push(arg);
  }
  options.utterance = words.join(' ').trim();
  if (options.utterance === '') throw new Error('usage: npm run say -- "utterance" [--session ID] [--lang TAG] [--bus URL]');
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
    case message.type === 'ovos.utterance.speak':
      return pick('utterance');
    case message.type.startsWith('ovos.intent.handler'):
      return pick('skill_id', 'intent_name', 'exception');
    default:
      return pick('utterance', 'utterances', 'skill_id');
  }
}

async function main(): Promise<number> {
  const options = parse(process.argv.slice(2));
  const utteranceId = randomUUID();
  const ws = new WebSocket(options.bus, { handshakeTimeout: 5_000 });
  ws.on('upgrade', (response) => response.socket.setNoDelay(true));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', (error) => reject(new Error(`cannot reach the bus at ${options.bus}: ${error.message} (is \`npm start\` running?)`)));
  });
  const started = performance.now();
  let spoken: string | undefined;
  const finished = new Promise<number>((resolve) => {
    const timer = setTimeout(() => {
      process.stdout.write(`no ovos.utterance.handled within ${options.timeoutMs} ms\n`);
      resolve(1);
    }, options.timeoutMs);
    ws.on('message', (raw) => {
      const decoded = decodeFrame(raw.toString());
      if (!decoded.ok || decoded.message.context['utterance_id'] !== utteranceId) return;
      const message = decoded.message;
      const ms = (performance.now() - started).toFixed(1).padStart(8);
      process.stdout.write(`${ms} ms  ${message.type.padEnd(42)} ${summary(message)}\n`);
      if (message.type === 'ovos.utterance.speak' && typeof message.data['utterance'] === 'string') spoken = message.data['utterance'];
      if (message.type === 'ovos.utterance.handled') {
        clearTimeout(timer);
        resolve(0);
      }
    });
  });
  const session: Record<string, string> = { session_id: options.session };
  if (options.lang !== undefined) session['lang'] = options.lang;
  ws.send(
    encodeMessage({
      type: 'ovos.utterance.handle',
      data: options.lang === undefined ? { utterances: [options.utterance] } : { utterances: [options.utterance], lang: options.lang },
      context: { source: 'say', destination: 'orchestrator', session, utterance_id: utteranceId },
    }),
  );
  const code = await finished;
  if (spoken !== undefined) process.stdout.write(`\nspoken: ${spoken}\n`);
  ws.close();
  return code;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`${(error as Error).message}\n`);
    process.exit(2);
  },
);
