/**
 * How a daemon's NATS access is read from its configuration (src/cluster/nats-auth.ts; src/cluster/README.md "Who
 * can join"): one way to authenticate, secrets from files or the environment, TLS demanded where asked, and no secret
 * in anything that is shown.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatConfigError, loadConfig } from '../../src/config/config.js';
import { NATS_PASSWORD_ENV, NATS_TOKEN_ENV, NatsAccessError, natsAccess, natsRefusal, redactNatsUrls, scrub, type NatsAuthConfig } from '../../src/cluster/nats-auth.js';
import { configErrorOf } from '../support/config-error.js';

const SECRET = 's3cret-pa55word-of-the-daemons';
const NONE: NatsAuthConfig = { nats: 'nats://127.0.0.1:4222', user: null, passwordFile: null, tokenFile: null, nkeyFile: null, credsFile: null, tlsCaFile: null, tlsCertFile: null, tlsKeyFile: null };

function file(text: string, mode = 0o600): string {
  const path = join(mkdtempSync(join(tmpdir(), 'ovos-contests-nats-auth-')), 'secret');
  writeFileSync(path, text);
  chmodSync(path, mode);
  return path;
}

/** The error `natsAccess` throws for `config` and `env`. */
function refusal(config: Partial<NatsAuthConfig>, env: Record<string, string> = {}): NatsAccessError {
  try {
    natsAccess({ ...NONE, ...config }, env);
  } catch (error) {
    expect(error).toBeInstanceOf(NatsAccessError);
    expect((error as Error).message).not.toContain(SECRET);
    return error as NatsAccessError;
  }
  throw new Error('expected a NatsAccessError');
}

describe('NATS access (src/cluster/nats-auth.ts)', () => {
  it('shows every server without its secret: a password becomes ***, a user name stays, a token is hidden whole', () => {
    expect(redactNatsUrls(`nats://daemon:${SECRET}@10.0.0.1:4222,tls://${SECRET}@nats.example:4222,nats://127.0.0.1:4222`)).toBe('nats://daemon:***@10.0.0.1:4222,tls://***@nats.example:4222,nats://127.0.0.1:4222');
    const access = natsAccess({ ...NONE, nats: `nats://daemon:${SECRET}@127.0.0.1:4222` }, {});
    expect(access).toMatchObject({ servers: ['nats://127.0.0.1:4222'], shown: 'nats://daemon:***@127.0.0.1:4222', method: 'password', user: 'daemon', pass: SECRET });
    expect(access.notes.map((note) => note.reason)).toEqual(['nats_secret_in_url']);
    expect(natsAccess({ ...NONE, nats: `tls://${SECRET}@127.0.0.1:4222` }, {})).toMatchObject({ method: 'token', token: SECRET, servers: ['tls://127.0.0.1:4222'], tls: {} });
  });

  it('a password with any characters is hidden whole: "/", "@", "%", "#", spaces; user info without a scheme too', () => {
    for (const password of ['pa/ss', 'p@ss@word', 'p%41ss', 'pa#ss', 'pa ss', `${SECRET}/x@y`]) {
      const shown = redactNatsUrls(`nats://daemon:${password}@127.0.0.1:4222,tls://${password}@10.0.0.2:4222`);
      expect(shown).toBe('nats://daemon:***@127.0.0.1:4222,tls://***@10.0.0.2:4222');
    }
    expect(redactNatsUrls(`daemon:${SECRET}@127.0.0.1:4222`)).toBe('daemon:***@127.0.0.1:4222');
    expect(natsAccess({ ...NONE, nats: `nats://daemon:${encodeURIComponent('p@ss/word')}@127.0.0.1:4222` }, {})).toMatchObject({ pass: 'p@ss/word', shown: 'nats://daemon:***@127.0.0.1:4222' });
    expect(refusal({ nats: `nats://daemon:${SECRET}@127.0.0.1:4222,nats://other:${SECRET}@127.0.0.1:4223` }).code).toBe('nats_auth_ambiguous');
  });

  it('no credentials: method none, no TLS unless asked, nothing to warn of in how secrets were given', () => {
    expect(natsAccess(NONE, {})).toEqual({ servers: ['nats://127.0.0.1:4222'], shown: 'nats://127.0.0.1:4222', method: 'none', notes: [] });
  });

  it('a password from a file (trailing newline trimmed) or from OVOS_CONTESTS_NATS_PASSWORD, with cluster.user', () => {
    expect(natsAccess({ ...NONE, user: 'daemon', passwordFile: file(`${SECRET}\n`) }, {})).toMatchObject({ method: 'password', user: 'daemon', pass: SECRET, notes: [] });
    expect(natsAccess({ ...NONE, user: 'daemon' }, { [NATS_PASSWORD_ENV]: SECRET })).toMatchObject({ method: 'password', user: 'daemon', pass: SECRET });
    expect(natsAccess({ ...NONE, tokenFile: file(SECRET) }, {})).toMatchObject({ method: 'token', token: SECRET });
    expect(natsAccess(NONE, { [NATS_TOKEN_ENV]: SECRET })).toMatchObject({ method: 'token', token: SECRET });
  });

  it('one way to authenticate: two are refused, a password without a user and a user without a password too', () => {
    expect(refusal({ user: 'daemon', passwordFile: file(SECRET) }, { [NATS_PASSWORD_ENV]: SECRET }).code).toBe('nats_auth_ambiguous');
    expect(refusal({ user: 'daemon', passwordFile: file(SECRET), tokenFile: file(SECRET) }).code).toBe('nats_auth_ambiguous');
    expect(refusal({ nats: `nats://daemon:${SECRET}@127.0.0.1:4222`, user: 'other' }).code).toBe('nats_auth_ambiguous');
    expect(refusal({ passwordFile: file(SECRET) }).code).toBe('nats_auth_incomplete');
    expect(refusal({ user: 'daemon' }).code).toBe('nats_auth_incomplete');
    expect(refusal({ tlsCertFile: file('cert') }).code).toBe('nats_auth_incomplete');
  });

  it('a secret file: a regular file (a link is not followed), not empty; one other users can read is warned about', () => {
    const real = file(SECRET);
    const link = join(mkdtempSync(join(tmpdir(), 'ovos-contests-nats-auth-')), 'link');
    symlinkSync(real, link);
    expect(refusal({ user: 'daemon', passwordFile: link }).message).toMatch(/is a symbolic link \(not followed\)/);
    // A FIFO (or any file that is not a regular one) never hangs the start.
    const fifo = join(mkdtempSync(join(tmpdir(), 'ovos-contests-nats-auth-')), 'fifo');
    execFileSync('mkfifo', [fifo]);
    expect(refusal({ user: 'daemon', passwordFile: fifo }).message).toMatch(/not a regular file/);
    expect(refusal({ user: 'daemon', passwordFile: tmpdir() }).message).toMatch(/not a regular file/);
    expect(refusal({ user: 'daemon', passwordFile: '/nonexistent/secret' }).message).toMatch(/cannot read \/nonexistent\/secret \(ENOENT\)/);
    expect(refusal({ user: 'daemon', passwordFile: file('\n') }).message).toMatch(/is empty/);
    const open = natsAccess({ ...NONE, user: 'daemon', passwordFile: file(SECRET, 0o644) }, {});
    expect(open.notes.map((note) => note.reason)).toEqual(['nats_secret_file_open']);
  });

  it('an NKey seed and a credentials file are checked for their shape, never echoed', () => {
    expect(refusal({ nkeyFile: file(SECRET) }).message).toMatch(/NKey seed/);
    expect(refusal({ credsFile: file(SECRET) }).message).toMatch(/credentials file/);
  });

  it('TLS is demanded by a tls:// server or a CA file, with the files given to the client', () => {
    const ca = file('-----BEGIN CERTIFICATE-----\n');
    expect(natsAccess({ ...NONE, tlsCaFile: ca }, {}).tls).toEqual({ caFile: ca });
    expect(natsAccess({ ...NONE, nats: 'nats://127.0.0.1:1,tls://127.0.0.1:2' }, {}).tls).toEqual({});
    expect(natsAccess(NONE, {}).tls).toBeUndefined();
  });

  it('what a server or the client library says is scrubbed of the secrets before it is shown', () => {
    const access = natsAccess({ ...NONE, user: 'daemon' }, { [NATS_PASSWORD_ENV]: SECRET });
    expect(scrub(`echoed ${SECRET} back`, access)).toBe('echoed *** back');
    const refused = natsRefusal(Object.assign(new Error(`Authorization Violation ${SECRET}`), { name: 'AuthorizationError' }), access);
    expect(refused.code).toBe('nats_auth_refused');
    expect(refused.message).toBe('the NATS server at nats://127.0.0.1:4222 refused this daemon with its user "daemon" and password: Authorization Violation ***');
    expect(natsRefusal(new Error('CONNECTION_REFUSED'), access).code).toBe('nats_unreachable');
    // The client's own refusal of a server without TLS, when TLS is demanded: said as such.
    const tls = natsAccess({ ...NONE, nats: 'tls://127.0.0.1:4222' }, {});
    expect(natsRefusal(new Error("server does not support 'tls'"), tls).code).toBe('nats_tls_unavailable');
  });

  it('a bad cluster.nats is a config error that never repeats the password in it', () => {
    for (const bad of [`nats://daemon:${SECRET}@127.0.0.1:4222 extra`, `nats://daemon:pa ss${SECRET}@h:1`, `nats://u:pa/ss${SECRET}@h:1,foo`, `daemon:${SECRET}@127.0.0.1:4222`]) {
      const error = configErrorOf(() => loadConfig({ argv: ['--nats', bad], env: {} }));
      expect(formatConfigError(error)).toContain('cluster.nats');
      expect(formatConfigError(error)).not.toContain(SECRET.slice(0, 8));
    }
    expect(loadConfig({ argv: ['--nats', 'tls://127.0.0.1:4222', '--nats-user', 'daemon', '--nats-password-file', '/run/secrets/nats'], env: {} }).config.cluster).toMatchObject({ nats: 'tls://127.0.0.1:4222', user: 'daemon', passwordFile: '/run/secrets/nats' });
  });
});
