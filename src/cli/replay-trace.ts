/**
 * `ovos-contests replay-trace --trace FILE [--config FILE] [--mycroft-conf FILE]`
 *
 * Replays a trace written by `npm run say -- "…" --trace FILE` (src/testing/trace.ts) on the deterministic clock:
 * prints the skill roster read back from it (paste it into a skills file to keep it as a test), the recorded
 * decision, the replay's, and the spec model's reasoning. Exit 0 when the replay reproduces the recorded decision and
 * agrees with the model, 1 when not (the trace is then a failing test), 2 on a bad trace or config.
 */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { ConfigError, formatConfigError, loadConfig } from '../config/config.js';
import { parseTrace, replayTrace, TraceError } from '../testing/trace.js';

export async function replayTraceCommand(argv: readonly string[], out: (line: string) => void): Promise<number> {
  const rest: string[] = [];
  let tracePath: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--trace') tracePath = argv[++i];
    else if (arg.startsWith('--trace=')) tracePath = arg.slice('--trace='.length);
    else rest.push(arg);
  }
  if (tracePath === undefined) {
    out('usage: ovos-contests replay-trace --trace FILE [--config FILE] [--mycroft-conf FILE]');
    return 2;
  }
  let config;
  let trace;
  try {
    config = loadConfig({ argv: rest, env: process.env, mycroftDiscovery: { home: homedir() } }).config;
    trace = parseTrace(readFileSync(tracePath, 'utf8'));
  } catch (error) {
    if (error instanceof ConfigError || error instanceof TraceError) {
      out(error instanceof ConfigError ? `config: ${formatConfigError(error)}` : `trace ${tracePath}: ${error.message}`);
      return 2;
    }
    if (error instanceof Error && 'code' in error && error.code === 'ENOENT') {
      out(`trace ${tracePath}: not found`);
      return 2;
    }
    throw error;
  }
  const result = await replayTrace(config, trace);
  const decision = (d: { decidedBy: string | null; skill_id: string | null; decidedAt: number | null }): string =>
    `${d.decidedBy ?? 'nothing'}${d.skill_id === null ? '' : ` ${d.skill_id}`}${d.decidedAt === null ? '' : ` at ${d.decidedAt} ms`}`;
  out(`utterance: ${trace.utterance} (session ${trace.session_id})`);
  for (const note of result.notes) out(`note: ${note}`);
  out('skills read back from the trace:');
  out(JSON.stringify({ skills: result.scenario.skills, utterances: [trace.utterance] }, null, 1));
  out(`recorded:  ${decision(result.recorded)}`);
  out(`replayed:  ${decision(result.replay.observed)}${result.driftMs === null ? '' : ` (the recorded decision came ${result.driftMs} ms after the replay's)`}`);
  out(`the spec:  ${decision(result.replay.expected)}`);
  for (const step of result.replay.expected.trail) out(`  ${step}`);
  for (const failure of result.replay.failures) out(`DISAGREES: ${failure}`);
  if (!result.reproduced) out('NOT REPRODUCED: the replay decides differently from the recorded run (see the notes above)');
  return result.reproduced && result.replay.ok ? 0 : 1;
}
