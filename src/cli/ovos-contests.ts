#!/usr/bin/env node
/**
 * `ovos-contests <command>`: `test-timing` (the timing harness on your deployment, src/cli/test-timing.ts) and
 * `replay-trace` (a recorded utterance replayed on the deterministic clock, src/cli/replay-trace.ts).
 */
import { replayTraceCommand } from './replay-trace.js';
import { testTiming } from './test-timing.js';

const USAGE = [
  'usage: ovos-contests test-timing --skills FILE [--config FILE] [--mycroft-conf FILE] [--verbose]',
  '       ovos-contests replay-trace --trace FILE [--config FILE] [--mycroft-conf FILE]',
].join('\n');
const [command, ...args] = process.argv.slice(2);
const out = (line: string): void => {
  process.stdout.write(`${line}\n`);
};
if (command === 'test-timing') process.exitCode = await testTiming(args, out);
else if (command === 'replay-trace') process.exitCode = await replayTraceCommand(args, out);
else {
  out(USAGE);
  process.exitCode = command === undefined || command === '--help' ? 0 : 2;
}
