/**
 * A stop signal to the whole process group is one stop (src/daemon/stop-signals.ts; src/daemon/README.md): systemd's
 * `KillMode=control-group` (the shipped unit, src/daemon/ovos-contests.service) and a terminal's Ctrl-C signal npm and
 * the daemon together, and npm forwards its copy. With a skill's handler in flight, the daemon drains: the utterance
 * ends with its own handled (OVOS-PIPELINE-1 §6), the stop is logged, and `npm start` exits 0.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createMessage, reply } from '../../src/bus/message.js';
import { Probe, freePort, within } from './probe.js';
import { ROOT, watchOutput } from './spawn-daemon.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

/** `npm start` in a process group of its own, as systemd starts a unit's command (and a terminal its foreground job). */
function startInGroup(port: number) {
  const child = spawn('npm', ['start', '--', '--port', String(port), '--no-example-skills', '--inspector-port', '0'], {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1', XDG_STATE_HOME: mkdtempSync(join(tmpdir(), 'ovos-contests-group-')) },
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  cleanups.push(() => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // gone
    }
  });
  return { child, exited, ...watchOutput(child) };
}

describe('a stop signal to the process group (systemctl stop, Ctrl-C)', () => {
  it('the shipped systemd unit runs npm start and lets systemd signal the whole group (KillMode=control-group)', () => {
    const unit = readFileSync(join(ROOT, 'src', 'daemon', 'ovos-contests.service'), 'utf8');
    expect(unit).toMatch(/^ExecStart=\/usr\/bin\/npm start$/m);
    expect(unit).toMatch(/^KillMode=control-group$/m);
    expect(unit).toMatch(/^KillSignal=SIGTERM$/m);
  });

  it.each(['SIGTERM', 'SIGINT'] as const)('PIPELINE-1 §6: %s to the group with a handler in flight: it drains — the utterance ends with its own handled — logs the stop and exits 0', async (signal) => {
    const port = await freePort();
    const daemon = startInGroup(port);
    await within(daemon.printed('OVOS bus listening'), 60_000, 'the daemon listening');
    const url = `ws://127.0.0.1:${port}/core`;
    const skill = await Probe.connect(url);
    const user = await Probe.connect(url);
    cleanups.push(() => void skill.close(), () => void user.close());
    skill.frames.subscribe(({ message }) => {
      if (message?.type === 'held.skill.fallback.ping') skill.send(reply(message, 'held.skill.fallback.pong', { skill_id: 'held.skill', can_handle: true }));
    });
    skill.send(createMessage('ovos.fallback.register', { skill_id: 'held.skill', priority: 10 }, { skill_id: 'held.skill' }));
    await skill.barrier();
    user.utter('blorp the flange', { utteranceId: 'in-flight', session: { session_id: 'a' } });
    const dispatch = await skill.waitFor((m) => m.type === 'held.skill:fallback', 'the dispatch');

    // As systemd and a terminal do: the signal to every process of the group (npm, and the daemon it exec'd).
    process.kill(-daemon.child.pid!, signal);
    await within(daemon.until((output) => (output.match(/"msg":"shutting down/g) ?? []).length >= 1), 10_000, 'the stop logged');
    // npm's forwarded copy arrives while the handler still runs (the daemon says what it made of it); then it ends. On
    // a loaded machine both copies can reach the daemon before it runs, and the kernel delivers them as one signal:
    // then there is no copy to wait for (3 s at most), and the stop is one stop all the same.
    await within(daemon.until((output) => /signal_repeated|second signal/.test(output)), 3_000, "npm's copy of the signal").catch(() => {});
    skill.send(reply(dispatch, 'ovos.utterance.speak', { utterance: 'held here' }));
    skill.send(reply(dispatch, 'mycroft.skill.handler.complete', {}));
    const handled = await user.handled('in-flight');
    expect(handled.data['error']).toBeUndefined();
    expect(await within(daemon.exited, 30_000, 'npm start exiting')).toBe(0);
    expect(daemon.output()).toContain('"msg":"stopped"');
    expect(daemon.output()).not.toContain('second signal');
  }, 90_000);
});
