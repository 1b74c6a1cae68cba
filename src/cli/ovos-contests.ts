#!/usr/bin/env node
/**
 * `ovos-contests <command>`: `test-timing` (the timing harness on your deployment, src/cli/test-timing.ts).
 */
import { testTiming } from './test-timing.js';

const [command, ...args] = process.argv.slice(2);
if (command === 'test-timing') {
  process.exitCode = await testTiming(args, (line) => process.stdout.write(`${line}\n`));
} else {
  process.stdout.write('usage: ovos-contests test-timing --skills FILE [--config FILE] [--mycroft-conf FILE] [--verbose]\n');
  process.exitCode = command === undefined || command === '--help' ? 0 : 2;
}
