/**
 * The daemon's V8 flags (src/daemon/node-flags.ts): `npm start` passes them, `--workers` gives them to its workers,
 * and a flag a user set by hand keeps the user's value.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DAEMON_NODE_FLAGS, withDaemonFlags } from '../../src/daemon/node-flags.js';

describe('the daemon\'s V8 flags', () => {
  it('npm start gives every one of them to node in NODE_OPTIONS, before the user\'s own NODE_OPTIONS (whose value of a flag wins)', () => {
    const start = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { scripts: Record<string, string> }).scripts['start']!;
    expect(start).toContain(`NODE_OPTIONS="${DAEMON_NODE_FLAGS.join(' ')} $NODE_OPTIONS" exec node dist/src/daemon/main.js`);
  });

  it('added to what node was given, once; a flag given with its own value, on the command line or in NODE_OPTIONS, keeps it', () => {
    expect(withDaemonFlags([], '')).toEqual([...DAEMON_NODE_FLAGS]);
    expect(withDaemonFlags(['--enable-source-maps'], '')).toEqual(['--enable-source-maps', ...DAEMON_NODE_FLAGS]);
    expect(withDaemonFlags(['--max-semi-space-size=16'], '')).toEqual(['--max-semi-space-size=16']);
    expect(withDaemonFlags([], '--enable-source-maps  --max-semi-space-size=16')).toEqual([]);
    expect(withDaemonFlags(withDaemonFlags([], ''), '')).toEqual([...DAEMON_NODE_FLAGS]);
  });
});
