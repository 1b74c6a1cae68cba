import { BlockList, isIP } from 'node:net';

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/**
 * Whether `host` (an address, `[v6]` as in a URL, or a name) stays on this machine: 127.0.0.0/8, ::1 (also
 * IPv4-mapped) and `localhost`. Any other name counts as beyond it: where it resolves is not ours to know.
 */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1');
  if (bare.toLowerCase() === 'localhost') return true;
  const family = isIP(bare);
  if (family === 0) return false;
  try {
    return LOOPBACK.check(bare, family === 4 ? 'ipv4' : 'ipv6');
  } catch {
    return false; // a zone index (fe80::1%eth0) is no loopback address
  }
}
