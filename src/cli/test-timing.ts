/**
 * `ovos-contests test-timing --skills FILE [--config FILE] [--mycroft-conf FILE] [--verbose]`
 *
 * The timing harness on a deployment's own configuration (read as the daemon reads it: mycroft.conf, config file,
 * env, flags) and skill roster: every question of the skills file, and every boundary variant of it, replayed
 * against the real contest system on a deterministic clock and compared with the spec model. Prints one line per
 * path, and for each failing path what differed (naming the boundary and the clause), the model's reasoning and the
 * session's wire. Exit 0 when every path agrees, 1 when one does not, 2 on a bad config or skills file.
 */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { ConfigError, formatConfigError, loadConfig } from '../config/config.js';
import { runTimingSuite } from '../testing/run.js';
import { parseSkillsFile, SkillsFileError } from '../testing/skills-file.js';

const DEFAULT_UTTERANCE = 'what is the speed of light';

export async function testTiming(argv: readonly string[], out: (line: string) => void): Promise<number> {
  const rest: string[] = [];
  let skillsPath: string | undefined;
  let verbose = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--skills') skillsPath = argv[++i];
    else if (arg.startsWith('--skills=')) skillsPath = arg.slice('--skills='.length);
    else if (arg === '--verbose') verbose = true;
    else rest.push(arg);
  }
  if (skillsPath === undefined) {
    out('usage: ovos-contests test-timing --skills FILE [--config FILE] [--mycroft-conf FILE] [--verbose]');
    return 2;
  }
  let config;
  let file;
  try {
    config = loadConfig({ argv: rest, env: process.env, mycroftDiscovery: { home: homedir() } }).config;
    file = parseSkillsFile(readFileSync(skillsPath, 'utf8'));
  } catch (error) {
    if (error instanceof ConfigError || error instanceof SkillsFileError) {
      out(error instanceof ConfigError ? `config: ${formatConfigError(error)}` : `skills file ${skillsPath}: ${error.message}`);
      return 2;
    }
    if (error instanceof Error && 'code' in error && error.code === 'ENOENT') {
      out(`skills file ${skillsPath}: not found`);
      return 2;
    }
    throw error;
  }
  const utterances = file.utterances ?? [DEFAULT_UTTERANCE];
  const report = await runTimingSuite(config, utterances.map((utterance) => ({ name: utterance, utterance, skills: file.skills, ...(file.sessions === undefined ? {} : { sessions: file.sessions }) })));
  for (const finding of report.configFindings) out(`config: ${finding}`);
  for (const path of report.paths) {
    const e = path.expected;
    out(`${path.ok ? 'ok  ' : 'FAIL'} ${path.name} → ${e.decidedBy}${e.skill_id === null ? '' : ` ${e.skill_id}`} at ${e.decidedAt} ms, handled at ${e.handledAt} ms`);
    if (!path.ok || verbose) {
      for (const failure of path.failures) out(`       ${failure}`);
      out('       model:');
      for (const step of e.trail) out(`         ${step}`);
      out('       wire:');
      for (const line of path.timeline) out(`         ${line}`);
    }
  }
  const failed = report.paths.filter((p) => !p.ok).length;
  out(`${report.paths.length} paths, ${failed} failed${report.configFindings.length === 0 ? '' : `, ${report.configFindings.length} config findings`}`);
  return report.ok ? 0 : 1;
}
