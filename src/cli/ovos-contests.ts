#!/usr/bin/env node
/**
 * `ovos-contests`: with no command, the daemon (the same as `npm start`; `--help` lists its options); with a
 * command, `test-timing` (the timing harness on your deployment, src/cli/test-timing.ts) or `replay-trace` (a
 * recorded utterance replayed on the deterministic clock, src/cli/replay-trace.ts).
 */
import { runDaemon } from '../daemon/main.js';
import { replayTraceCommand } from './replay-trace.js';
import { testTiming } from './test-timing.js';

const COMMANDS = [
  'usage: ovos-contests [options]            run the daemon (options below)',
  '       ovos-contests test-timing --skills FILE [--config FILE] [--mycroft-conf FILE] [--verbose]',
  '       ovos-contests replay-trace --trace FILE [--config FILE] [--mycroft-conf FILE]',
  '       ovos-say "utterance" [--bus URL] …    send one utterance and print its timeline (ovos-say --help)',
  '',
].join('\n');
const [command, ...args] = process.argv.slice(2);
const out = (line: string): void => {
  process.stdout.write(`${line}\n`);
};
if (command === 'test-timing') process.exitCode = await testTiming(args, out);
else if (command === 'replay-trace') process.exitCode = await replayTraceCommand(args, out);
else if (command === undefined || command.startsWith('-')) await runDaemon(process.argv.slice(2), `${COMMANDS}\n`);
else {
  process.stderr.write(`unknown command ${command}\n${COMMANDS}`);
  process.exitCode = 2;
}
