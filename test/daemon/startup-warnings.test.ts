/**
 * Never silent: the daemon says at start what its (valid) config already reveals about contests it will cut
 * short — before it says it is listening. Real embedded bus on an ephemeral port; no example skills, no sleeps.
 */
import { describe, expect, it } from 'vitest';
import { configWarnings } from '../../src/config/config.js';
import { startDaemon } from '../../src/daemon/daemon.js';
import { captureLogs, configWith } from '../integration/probe.js';

describe('daemon start-up warnings', () => {
  it('OVOS-FALLBACK-1 §6.1 / PIPELINE-1 §4.4 match bound: a match bound ≤ fallback.pingTimeoutMs is logged at warn when the daemon starts, before "OVOS bus listening"', async () => {
    const config = configWith({ bus: { port: 0 }, exampleSkills: false, fallback: { pingTimeoutMs: 10_000 } });
    expect(configWarnings(config).map((w) => w.reason)).toEqual(['match_bound_below_ping_timeout']);
    const { logger, lines } = captureLogs('info');
    const daemon = await startDaemon(config, logger);
    try {
      const warns = lines.items.filter((line) => line.level === 40);
      expect(warns).toHaveLength(1);
      expect(warns[0]).toMatchObject({ reason: 'match_bound_below_ping_timeout', key: 'orchestrator.matchTimeoutMs', match_timeout_ms: 10_000, ping_timeout_ms: 10_000 });
      const messages = lines.items.map((line) => line.msg);
      expect(messages.indexOf(warns[0]!.msg)).toBeLessThan(messages.indexOf('OVOS bus listening'));
    } finally {
      await daemon.close();
    }
  });

  it('the default config starts without a warning', async () => {
    const { logger, lines } = captureLogs('info');
    const daemon = await startDaemon(configWith({ bus: { port: 0 }, exampleSkills: false }), logger);
    try {
      expect(lines.items.some((line) => line.msg === 'OVOS bus listening')).toBe(true);
      expect(lines.items.filter((line) => line.level >= 40)).toEqual([]);
    } finally {
      await daemon.close();
    }
  });
});
