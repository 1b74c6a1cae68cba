/**
 * `npm run say` edges a user meets: its flags, and a daemon that goes away mid-utterance — reported at once, not
 * after the timeout.
 */
import { describe, expect, it } from 'vitest';
import { BusServer } from '../../src/bus/ws-server.js';
import { DEFAULT_CONFIG } from '../../src/config/defaults.js';
import { parse, say, SAY_TIMEOUT_MS, USAGE } from '../../src/cli/say.js';
import { silentLogger } from '../../src/log/logger.js';

describe('say', () => {
  it('-h / --help anywhere asks for the usage; no utterance is a usage error; the default timeout outlasts the daemon\'s worst case', () => {
    expect(parse(['-h']).help).toBe(true);
    expect(parse(['what', 'is', 'this', '--help']).help).toBe(true);
    expect(parse(['-h', 'is', 'not', 'an', 'utterance']).help).toBe(true);
    expect(() => parse([])).toThrow(USAGE);
    expect(parse(['hello']).timeoutMs).toBe(SAY_TIMEOUT_MS);
    const { pipeline, orchestrator } = DEFAULT_CONFIG;
    expect(SAY_TIMEOUT_MS).toBeGreaterThan(pipeline.length * orchestrator.matchTimeoutMs + orchestrator.handlerTimeoutMs);
  });

  it('a bus that closes before the handled: says so at once and exits 1 (not after its timeout)', async () => {
    const server = await BusServer.start({ ...DEFAULT_CONFIG.bus, port: 0, logger: silentLogger() });
    // Nobody answers; the bus goes away as soon as the utterance is on it.
    server.subscribe((message) => {
      if (message.type === 'ovos.utterance.handle') void server.close();
    });
    const out: string[] = [];
    const code = await say(parse(['are you there', '--bus', server.url, '--timeout', String(SAY_TIMEOUT_MS)]), (text) => out.push(text));
    expect(code).toBe(1);
    expect(out.join('')).toMatch(/the bus closed the connection \(code \d+\) before ovos\.utterance\.handled — did the daemon stop\?/);
  });
});
