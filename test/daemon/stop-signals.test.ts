/** One stop however many processes of the group receive it (src/daemon/stop-signals.ts), on a clock of the test's. */
import { describe, expect, it } from 'vitest';
import { REPEAT_MS, stopSignals } from '../../src/daemon/stop-signals.js';

describe('stop signals', () => {
  it('the first starts the stop; a copy within REPEAT_MS (npm forwarding, the group signalled) changes nothing; one at REPEAT_MS or later forces the exit', () => {
    const signals = stopSignals();
    expect(signals.heard('SIGTERM', 1_000)).toBe('first');
    expect(signals.heard('SIGTERM', 1_040)).toBe('repeat');
    expect(signals.heard('SIGINT', 1_000 + REPEAT_MS - 1)).toBe('repeat');
    expect(signals.heard('SIGINT', 1_000 + REPEAT_MS)).toBe('force');
  });
});
