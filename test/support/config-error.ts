import { expect } from 'vitest';
import { ConfigError } from '../../src/config/config.js';

/** The ConfigError thrown by `fn`; fails the test when nothing or something else is thrown. */
export function configErrorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError, nothing was thrown');
}
