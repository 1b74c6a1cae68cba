/**
 * The V8 flags the daemon runs with: `npm start` puts them in `NODE_OPTIONS`, before the user's own (a value the user
 * gives there wins), and `--workers` gives them to every worker it forks that has none of its own (src/daemon/README.md,
 * "Memory for speed").
 *
 * `--max-semi-space-size=64`: V8's young generation grows to 64 MiB per semi-space instead of 16. What an utterance
 * allocates mostly dies young, but a scavenge copies everything still alive — every contest in flight — and a small
 * young generation is scavenged four times as often, copying the same live contests each time. A daemon of a cluster
 * keeps its contests alive longer (each waits on round trips across NATS), and pays for it most.
 */
export const DAEMON_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=64'];

/**
 * `execArgv` with every daemon flag neither it nor `NODE_OPTIONS` sets already: one a user set, with its own value,
 * is kept (node reads `NODE_OPTIONS` first, so a flag on the command line would override it).
 */
export function withDaemonFlags(execArgv: readonly string[], nodeOptions: string = process.env['NODE_OPTIONS'] ?? ''): string[] {
  const nameOf = (flag: string): string => flag.split('=')[0]!;
  const set = new Set([...execArgv, ...nodeOptions.split(/\s+/).filter((option) => option !== '')].map(nameOf));
  return [...execArgv, ...DAEMON_NODE_FLAGS.filter((flag) => !set.has(nameOf(flag)))];
}
