/**
 * Skills that register and then leave for good (uninstalled, a test run's), in a child process of their own (`fork`,
 * IPC), over real sockets to the daemon: `argv[2]` the bus URL, `argv[3]` the cast — `spec`: five spec fallback skills,
 * each over its own connection (`ovos.fallback.register` with its context.skill_id, priorities 10–50); `legacy`: two
 * ovos-workshop FallbackSkills on one bus client (`ovos.skills.fallback.register`, no context.skill_id; priorities
 * 20 and 40). None ever answers a ping. Sends `{ ready: true }` once every registration is sent; the benchmark then
 * kills the process (SIGKILL): nobody deregisters.
 */
import { WebSocket } from 'ws';

export const SPEC_LEAVERS = ['skill-a.test', 'skill-b.test', 'drain.test', 'skill-c.test', 'skill-d.test'] as const;
export const LEGACY_LEAVERS = ['wk-gone-1.test', 'wk-gone-2.test'] as const;

const open = (url: string): Promise<WebSocket> =>
  new Promise((resolve, reject) => {
    const socket = new WebSocket(url);
    socket.once('open', () => resolve(socket));
    socket.once('error', reject);
  });

async function main(): Promise<void> {
  const url = process.argv[2]!;
  const cast = process.argv[3];
  if (cast === 'spec') {
    for (const [i, skillId] of SPEC_LEAVERS.entries()) {
      const socket = await open(url);
      socket.send(JSON.stringify({ type: 'ovos.fallback.register', data: { skill_id: skillId, priority: 10 * (i + 1) }, context: { skill_id: skillId, session: { session_id: 'default' } } }));
    }
  } else {
    const socket = await open(url);
    for (const [i, skillId] of LEGACY_LEAVERS.entries()) {
      socket.send(JSON.stringify({ type: 'ovos.skills.fallback.register', data: { skill_id: skillId, priority: 20 * (i + 1) }, context: { session: { session_id: 'default' } } }));
    }
  }
  process.send?.({ ready: true });
}

// Only as the forked child (the benchmark imports the skill ids from this file).
if (process.argv[3] === 'spec' || process.argv[3] === 'legacy') void main();
