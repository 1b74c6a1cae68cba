/**
 * Prometheus metrics: counted from the supervisor's observer, the bus and the fallback plugin — on the deterministic
 * clock for the numbers that depend on time, and scraped over HTTP from the daemon the way Prometheus does.
 */
import { request as httpRequest } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { createMessage } from '../../src/bus/message.js';
import { DEFAULT_CONFIG } from '../../src/config/defaults.js';
import { startDaemon } from '../../src/daemon/daemon.js';
import { silentLogger } from '../../src/log/logger.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { Probe, configWith } from '../integration/probe.js';
import { createHarness, fallbackSkill } from '../support/harness.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The value of one sample in Prometheus text exposition (labels in any order), or undefined. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const set = /\{([^}]*)\}/.exec(line)?.[1] ?? '';
    if (Object.entries(labels).every(([k, v]) => set.includes(`${k}="${v}"`))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

describe('metrics', () => {
  it('OVOS-FALLBACK-1 §6.1 on the deterministic clock: a silent skill\'s ping timeouts and its suspension per skill, the decision latency of the stage that answered', async () => {
    const h = createHarness();
    const metrics = createMetrics(h.system);
    cleanups.push(async () => metrics.close());
    // A silent skill first, a willing one after it: each utterance waits out the ping timeout once.
    h.bus.publish(createMessage('ovos.fallback.register', { skill_id: 'silent.skill', priority: 10 }, { skill_id: 'silent.skill' }));
    fallbackSkill(h, 'ok.skill', 20);
    await h.settle();
    for (let i = 0; i < 3; i++) {
      h.utter('blorp the flange', { session: { session_id: `m${i}` } });
      await h.advance(DEFAULT_CONFIG.fallback.pingTimeoutMs + 10);
    }
    const text = await metrics.text();
    expect(sample(text, 'ovos_fallback_ping_timeouts_total', { skill_id: 'silent.skill' })).toBe(3);
    expect(sample(text, 'ovos_fallback_suspensions_total', { skill_id: 'silent.skill' })).toBe(1); // fallback.suspendAfterTimeouts = 3
    expect(sample(text, 'ovos_decision_seconds_count', { stage: 'fallback_high' })).toBe(3);
    // Each decided exactly at the ping timeout (ManualClock): 3 × 0.5 s.
    expect(sample(text, 'ovos_decision_seconds_sum', { stage: 'fallback_high' })).toBeCloseTo(3 * (DEFAULT_CONFIG.fallback.pingTimeoutMs / 1000), 6);
    expect(sample(text, 'ovos_decision_seconds_bucket', { stage: 'fallback_high', le: '0.25' })).toBe(0);
    expect(sample(text, 'ovos_decision_seconds_bucket', { stage: 'fallback_high', le: '0.5' })).toBe(3);
    expect(sample(text, 'ovos_contests_ended_total', { kind: 'utterance', outcome: 'completed' })).toBe(3);
    expect(sample(text, 'ovos_contests_started_total', { kind: 'fallback' })).toBe(3);
    expect(sample(text, 'ovos_live_contests')).toBe(0);
    expect(sample(text, 'ovos_utterances_in_flight')).toBe(0);
  });

  it('drops are counted by their reason code; an unmatched utterance is a decision of stage "unmatched"', async () => {
    const h = createHarness();
    const metrics = createMetrics(h.system);
    cleanups.push(async () => metrics.close());
    h.bus.publish(createMessage('ghost.fallback.pong', { skill_id: 'ghost', can_handle: true }, { session: { session_id: 'x' } }));
    h.bus.publish(createMessage('ghost.fallback.pong', { skill_id: 7, can_handle: true }, { session: { session_id: 'x' } }));
    h.utter('blorp the flange', { session: { session_id: 'y' } });
    await h.advance(200);
    const text = await metrics.text();
    expect(sample(text, 'ovos_messages_dropped_total', { reason: 'no_live_contest' })).toBe(1);
    expect(sample(text, 'ovos_messages_dropped_total', { reason: 'skill_id_missing' })).toBe(1);
    expect(sample(text, 'ovos_decision_seconds_count', { stage: 'unmatched' })).toBe(1);
    expect(sample(text, 'ovos_contests_ended_total', { kind: 'utterance', outcome: 'unmatched' })).toBe(1);
  });

  it('--metrics-port: the daemon serves GET /metrics on loopback — connected clients, contests, decisions per stage — and nothing else', async () => {
    const daemon = await startDaemon(configWith({ bus: { port: 0 }, exampleSkills: true, log: { level: 'silent' }, metrics: { port: 0 } }), silentLogger());
    cleanups.push(() => daemon.close());
    expect(daemon.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const probe = await Probe.connect(daemon.url);
    cleanups.push(() => probe.close());
    probe.utter('what is the meaning of life', { utteranceId: 'm-1', session: { session_id: 'a' } });
    probe.utter('what is the speed of light', { utteranceId: 'm-2', session: { session_id: 'b' } });
    await probe.handled('m-1');
    await probe.handled('m-2');
    const response = await fetch(daemon.metricsUrl!);
    expect(response.headers.get('content-type')).toContain('text/plain');
    const text = await response.text();
    expect(sample(text, 'ovos_bus_clients')).toBe(4); // the three example skills and this probe
    expect(sample(text, 'ovos_contests_started_total', { kind: 'utterance' })).toBe(2);
    expect(sample(text, 'ovos_decision_seconds_count', { stage: 'fallback_high' })).toBe(1);
    expect(sample(text, 'ovos_decision_seconds_count', { stage: 'common_query' })).toBe(1);
    expect(sample(text, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect((await fetch(daemon.metricsUrl!.replace('/metrics', '/other'))).status).toBe(404);
  });

  it('GET /metrics answers this machine\'s programs only: a request naming another host (DNS rebinding), a page\'s Origin elsewhere or a cross-site fetch is refused', async () => {
    const daemon = await startDaemon(configWith({ bus: { port: 0 }, exampleSkills: false, log: { level: 'silent' }, metrics: { port: 0 } }), silentLogger());
    cleanups.push(() => daemon.close());
    const status = (headers: Record<string, string>): Promise<number> =>
      new Promise((resolve, reject) => {
        const req = httpRequest(daemon.metricsUrl!, { headers }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end();
      });
    const port = new URL(daemon.metricsUrl!).port;
    expect(await status({ host: `attacker.example:${port}` })).toBe(403);
    expect(await status({ origin: 'https://attacker.example' })).toBe(403);
    expect(await status({ 'sec-fetch-site': 'cross-site' })).toBe(403);
    expect(await status({ host: `localhost:${port}` })).toBe(200);
    expect(await status({})).toBe(200);
  });

  it('metrics are off by default', async () => {
    const daemon = await startDaemon(configWith({ bus: { port: 0 }, exampleSkills: false, log: { level: 'silent' } }), silentLogger());
    cleanups.push(() => daemon.close());
    expect(daemon.metricsUrl).toBeUndefined();
  });
});
