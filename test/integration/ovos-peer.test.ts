/**
 * Against the real OVOS programs (src/plugins/README.md "Liveness and restarts"): ovos-messagebus, ovos-bus-client and an unmodified
 * ovos-workshop FallbackSkill in Python processes, the daemon joined to that bus (`bus.url`, as `--bus` does).
 * Needs the OVOS peer built under ~/.ovos-peer (or $OVOS_PEER_ROOT) from source snapshots; CI cannot build it, so
 * without it this suite is skipped and says why.
 *
 *  - systemd order: the daemon starts first, then ovos-messagebus, then the skill — the daemon joins the bus within
 *    its first-join retry and the skill's one registration reaches it;
 *  - a workshop skill that registered before the daemon joined is learnt from its pong and answers;
 *  - three stale workshop registrations restored from the registry file, ahead of a live workshop skill, with a
 *    1.5 s match bound: the first utterance is answered by the live skill (the stale ones' ping timeouts run together
 *    from the one broadcast), not complete_intent_failure, and the next ones at once.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startDaemon, type Daemon } from '../../src/daemon/daemon.js';
import { REGISTRY_FORMAT } from '../../src/plugins/fallback/registry-store.js';
import { Probe, captureLogs, configWith, freePort, type LogLine } from './probe.js';
import type { Recorder } from '../support/recorder.js';
import { PY, peerHas, startMessagebus, startPython, type PyProcess } from '../support/ovos-peer.js';

const available = peerHas(['ovos_messagebus', 'ovos_bus_client', 'ovos_workshop']);
if (!available) {
  console.warn(`ovos-peer.test.ts skipped: the real OVOS programs are not built (no ${PY} importing ovos_messagebus, ovos_bus_client and ovos_workshop). Build them into ~/.ovos-peer (or set OVOS_PEER_ROOT) as test/integration/ovos-peer/README.md describes to run it.`);
}

const SKILL = `
import signal, sys
from ovos_bus_client import MessageBusClient
from ovos_workshop.skills.fallback import FallbackSkill
port, skill_id, priority = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
class Peer(FallbackSkill):
    def can_answer(self, message): return True
    def initialize(self): self.register_fallback(self.handle_fb, priority)
    def handle_fb(self, message):
        self.speak(skill_id + " here")
        return True
bus = MessageBusClient(host="127.0.0.1", port=port); bus.run_in_thread(); bus.connected_event.wait(30)
Peer(bus=bus, skill_id=skill_id)
print("SKILL UP", flush=True)
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
signal.pause()  # blocks until a signal: the SIGTERM handler exits
`;

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function python(args: readonly string[], env: NodeJS.ProcessEnv): PyProcess {
  const child = startPython(args, env);
  cleanups.push(child.stop);
  return child;
}

/** ovos-messagebus on `port`, with a mycroft.conf of its own; resolves once it serves. */
async function messagebus(port: number): Promise<void> {
  cleanups.push((await startMessagebus(port)).stop);
}

/** An unmodified ovos-workshop FallbackSkill (can_answer: yes) in its own Python process; resolves once it registered. */
async function workshopSkill(port: number, skillId: string, priority: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'ovos-peer-skill-'));
  writeFileSync(join(dir, 'skill.py'), SKILL);
  const skill = python([join(dir, 'skill.py'), String(port), skillId, String(priority)], { XDG_STATE_HOME: dir, XDG_CONFIG_HOME: dir });
  await skill.printed('SKILL UP');
}

async function joined(port: number, registryFile: string | null, extra: Record<string, unknown> = {}): Promise<{ daemon: Daemon; lines: Recorder<LogLine> }> {
  const { logger, lines } = captureLogs('info');
  const daemon = await startDaemon(
    configWith({ bus: { url: `ws://127.0.0.1:${port}/core` }, exampleSkills: false, inspector: { enabled: false }, fallback: { registryFile }, ...extra }),
    logger,
  );
  cleanups.push(() => daemon.close());
  return { daemon, lines };
}

async function frontEnd(port: number): Promise<Probe> {
  const probe = await Probe.connect(`ws://127.0.0.1:${port}/core`);
  cleanups.push(() => probe.close());
  return probe;
}

const spoken = (probe: Probe, id: string): unknown[] => probe.of(id).filter((m) => m.type === 'speak').map((m) => m.data['utterance']);

describe.skipIf(!available)('the real OVOS programs: ovos-messagebus, ovos-bus-client, ovos-workshop', () => {
  it('systemd order (daemon, then ovos-messagebus, then the skill): the daemon joins the bus as it comes up and the skill\'s one registration reaches it', async () => {
    const port = await freePort();
    const started = joined(port, null); // retries every 100 ms until the bus has been up once
    await messagebus(port);
    const { daemon, lines } = await started;
    await lines.waitFor((l) => l.msg === 'bus connected', 'joined', 0, 15_000);
    await workshopSkill(port, 'peer-late.test', 30);
    await lines.waitFor((l) => l.msg === 'fallback skill registered' && l['skill_id'] === 'peer-late.test', 'its registration', 0, 30_000);
    const user = await frontEnd(port);
    user.utter('blorf the zint', { utteranceId: 'u1' });
    await user.handled('u1', 15_000);
    expect(spoken(user, 'u1')).toEqual(['peer-late.test here']);
    expect(daemon.system.fallback.registry.entry('default', 'peer-late.test')?.legacy).toBe(true);
  }, 60_000);

  it('a workshop skill that registered before the daemon joined is learnt from its pong to the first utterance and answers the next', async () => {
    const port = await freePort();
    await messagebus(port);
    await workshopSkill(port, 'peer-early.test', 30);
    const { daemon, lines } = await joined(port, null);
    const user = await frontEnd(port);
    user.utter('blorf the zint', { utteranceId: 'u1' });
    await user.handled('u1', 15_000);
    await lines.waitFor((l) => l.reason === 'fallback_skill_learned' && l['skill_id'] === 'peer-early.test', 'learnt', 0, 15_000);
    user.utter('blorf the zint', { utteranceId: 'u2' });
    await user.handled('u2', 15_000);
    expect(spoken(user, 'u2')).toEqual(['peer-early.test here']);
    expect(daemon.system.fallback.registry.entry('default', 'peer-early.test')?.priority).toBe(50);
  }, 60_000);

  it('three stale workshop registrations restored ahead of a live one, 1.5 s match bound: the live skill answers the first utterance after one ping timeout, then at once', async () => {
    const port = await freePort();
    await messagebus(port);
    const dir = mkdtempSync(join(tmpdir(), 'ovos-peer-registry-'));
    const file = join(dir, 'registry.json');
    const stale = ['stale-1.test', 'stale-2.test', 'stale-3.test'].map((skill_id, i) => ({ session_id: 'default', skill_id, priority: 10 + i, legacy: true, last_seen: Date.now() }));
    writeFileSync(file, JSON.stringify({ format: REGISTRY_FORMAT, entries: stale }));
    const { lines } = await joined(port, file, {
      orchestrator: { matchTimeoutMs: 1_500 },
      commonQuery: { pollWindowMs: 500, collectionInitialMs: 1_000, collectionCeilingMs: 1_000 },
    });
    await workshopSkill(port, 'peer-live.test', 30);
    await lines.waitFor((l) => l.msg === 'fallback skill registered' && l['skill_id'] === 'peer-live.test', 'its registration', 0, 30_000);
    const user = await frontEnd(port);
    const t0 = Date.now();
    user.utter('blorf the zint', { utteranceId: 'u1' });
    await user.handled('u1', 15_000);
    const first = Date.now() - t0;
    expect(user.of('u1').some((m) => m.type === 'complete_intent_failure')).toBe(false);
    expect(spoken(user, 'u1')).toEqual(['peer-live.test here']);
    expect(lines.items.filter((l) => l.reason === 'ping_timeout').map((l) => l['skill_id']).sort()).toEqual(['stale-1.test', 'stale-2.test', 'stale-3.test']);
    const t1 = Date.now();
    user.utter('blorf the zint', { utteranceId: 'u2' });
    await user.handled('u2', 15_000);
    const second = Date.now() - t1;
    expect(spoken(user, 'u2')).toEqual(['peer-live.test here']);
    // Measured, not asserted as speed (README: the stale skills' one ping timeout once, then the live one at once).
    console.info(`ovos-peer: first utterance ${first} ms (one ping timeout), second ${second} ms`);
    expect(second).toBeLessThan(first);
  }, 60_000);
});
