/**
 * The V8 flags the daemon runs with: `npm start` passes them on node's command line, and `--workers` gives them to
 * every worker it forks (src/daemon/README.md, "Memory for speed").
 *
 * `--max-semi-space-size=64`: V8's young generation grows to 64 MiB per semi-space instead of 16. What an utterance
 * allocates mostly dies young, but a scavenge copies everything still alive — every contest in flight — and a small
 * young generation is scavenged four times as often, copying the same live contests each time. A daemon of a cluster
 * keeps its contests alive longer (each waits on round trips across NATS), and pays for it most.
 */
export const DAEMON_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=64'];

/** `execArgv` with every daemon flag it does not set already (one set by hand, with its own value, is kept). */
export function withDaemonFlags(execArgv: readonly string[]): string[] {
  const nameOf = (flag: string): string => flag.split('=')[0]!;
  const set = new Set(execArgv.map(nameOf));
  return [...execArgv, ...DAEMON_NODE_FLAGS.filter((flag) => !set.has(nameOf(flag)))];
}
