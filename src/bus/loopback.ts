/**
 * What stays on this machine: loopback addresses and names, and the check every HTTP endpoint of the daemon makes
 * (the inspector, the metrics) so that a web page the user visits — DNS rebinding included — cannot read them.
 */
import type { IncomingHttpHeaders } from 'node:http';
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

/** A `Host` header naming this machine by a loopback name (a rebinding page's request carries its own name). */
const LOOPBACK_HOST_HEADER = /^(127\.0\.0\.1|localhost|\[::1\])(:\d{1,5})?$/i;
/** An `Origin` of a page served from this machine's loopback names. */
const LOOPBACK_ORIGIN = /^https?:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d{1,5})?$/i;

/**
 * Why an HTTP request to a loopback-only endpoint is refused, or undefined: its `Host` is not a loopback name (a
 * DNS-rebinding page), it carries the `Origin` of a page elsewhere, or the browser says it comes from another site
 * (`Sec-Fetch-Site: cross-site`). A client that is not a browser (curl, Prometheus) sends neither of the last two.
 */
export function nonLocalRequest(headers: IncomingHttpHeaders): 'host_not_loopback' | 'origin_not_loopback' | 'cross_site' | undefined {
  if (!LOOPBACK_HOST_HEADER.test(headers.host ?? '')) return 'host_not_loopback';
  const origin = headers.origin;
  if (origin !== undefined && !LOOPBACK_ORIGIN.test(origin)) return 'origin_not_loopback';
  if (headers['sec-fetch-site'] === 'cross-site') return 'cross_site';
  return undefined;
}
