/**
 * How a daemon proves itself to NATS, and how it speaks of the servers (src/cluster/README.md, "Who can join"): the one
 * place that reads a secret. A secret comes from a file or an environment variable (from a URL's user info too, but
 * never needed there); what this module returns for logs and errors (`shown`, every error's message) never holds one.
 *
 * NATS offers four ways to authenticate a client — user and password, a token, an NKey, a credentials file (a user
 * JWT with its NKey seed) — and TLS beneath any of them; a daemon uses exactly one (or none) and demands TLS when a
 * server URL says `tls://` or a CA, certificate or key file is configured.
 */
import type { Authenticator, ConnectionOptions, NatsConnection } from '@nats-io/transport-node';
import { isLoopbackHost } from '../bus/loopback.js';
import { redactUserinfo } from '../config/errors.js';
import { readSecretFile } from '../config/secret-file.js';
import { CodedError } from '../errors.js';

/** The environment variables that carry a secret itself (a file names it otherwise: `cluster.passwordFile`, …). */
export const NATS_PASSWORD_ENV = 'OVOS_CONTESTS_NATS_PASSWORD';
export const NATS_TOKEN_ENV = 'OVOS_CONTESTS_NATS_TOKEN';

/** The keys of `cluster` this module reads. */
export interface NatsAuthConfig {
  readonly nats: string;
  readonly user: string | null;
  readonly passwordFile: string | null;
  readonly tokenFile: string | null;
  readonly nkeyFile: string | null;
  readonly credsFile: string | null;
  readonly tlsCaFile: string | null;
  readonly tlsCertFile: string | null;
  readonly tlsKeyFile: string | null;
}

export type NatsAuthMethod = 'none' | 'password' | 'token' | 'nkey' | 'creds';

/**
 * What a connection to NATS needs, as plain data: it is handed to the heartbeat's thread as well. `servers` carry no
 * user info; `shown` is what logs and errors say of them.
 */
export interface NatsAccess {
  readonly servers: readonly string[];
  readonly shown: string;
  readonly method: NatsAuthMethod;
  readonly user?: string;
  readonly pass?: string;
  readonly token?: string;
  /** An NKey seed (`SU…`), for `method: 'nkey'`. */
  readonly nkeySeed?: string;
  /** A credentials file's text (user JWT and seed), for `method: 'creds'`. */
  readonly creds?: string;
  /** Present: TLS is demanded (the files may be absent: the system's CAs verify the server). */
  readonly tls?: { readonly caFile?: string; readonly certFile?: string; readonly keyFile?: string };
  /** Warnings about how the secrets were given (a password in a URL, a file others can read). */
  readonly notes: ReadonlyArray<{ readonly reason: string; readonly message: string }>;
}

export type NatsAccessErrorCode = 'nats_url_invalid' | 'nats_secret_unreadable' | 'nats_auth_ambiguous' | 'nats_auth_incomplete' | 'nats_tls_unavailable' | 'nats_auth_refused' | 'nats_unreachable';

/** A reason the daemon cannot reach NATS as configured; its message names files, keys and servers, never a secret. */
export class NatsAccessError extends CodedError<NatsAccessErrorCode> {}

/** A secret file larger than this is not a secret file (a credentials file is about 1 KB). */
const MAX_SECRET_BYTES = 64 * 1024;

const SCHEME = /^(nats|tls):\/\//i;

/** One server of `cluster.nats`: its scheme, user info (if any) and host:port. */
function parseServer(text: string): { readonly tls: boolean; readonly userinfo?: string; readonly hostPort: string; readonly host: string } {
  const scheme = SCHEME.exec(text);
  if (scheme === null) throw new NatsAccessError('nats_url_invalid', `not a nats:// or tls:// URL: ${redactNatsUrls(text)}`);
  const rest = text.slice(scheme[0].length).replace(/\/+$/, '');
  const at = rest.lastIndexOf('@');
  const userinfo = at >= 0 ? rest.slice(0, at) : undefined;
  const hostPort = at >= 0 ? rest.slice(at + 1) : rest;
  let host: string;
  try {
    host = new URL(`http://${hostPort}`).hostname;
  } catch {
    throw new NatsAccessError('nats_url_invalid', `not a nats:// or tls:// URL: ${redactNatsUrls(text)}`);
  }
  if (host === '' || hostPort.includes('/')) throw new NatsAccessError('nats_url_invalid', `not a nats:// or tls:// URL: ${redactNatsUrls(text)}`);
  return { tls: scheme[1]!.toLowerCase() === 'tls', ...(userinfo === undefined || userinfo === '' ? {} : { userinfo }), hostPort, host };
}

/** `cluster.nats` (or any text naming its servers) as logs and errors show it: every URL's user info is `***`. */
export const redactNatsUrls = redactUserinfo;

/** A secret read from a file (src/config/secret-file.ts); one other users can read is noted. */
function readSecret(file: string, key: string, notes: Array<{ reason: string; message: string }>): string {
  let read;
  try {
    read = readSecretFile(file, `cluster.${key}`, MAX_SECRET_BYTES);
  } catch (error) {
    throw new NatsAccessError('nats_secret_unreadable', error instanceof Error ? error.message : String(error));
  }
  if ((read.mode & 0o077) !== 0) notes.push({ reason: 'nats_secret_file_open', message: `cluster.${key}: ${file} can be read by other users of this machine (chmod 600 it)` });
  return read.text;
}

/**
 * The access `config` describes, the secrets read. Exactly one way to authenticate may be named (a password — with a
 * user —, a token, an NKey seed, a credentials file) or none; throws a `NatsAccessError` otherwise.
 */
export function natsAccess(config: NatsAuthConfig, env: Readonly<Record<string, string | undefined>>): NatsAccess {
  const notes: Array<{ reason: string; message: string }> = [];
  const parsed = config.nats.split(',').map((text) => parseServer(text.trim()));
  const servers = parsed.map((server) => `${server.tls ? 'tls' : 'nats'}://${server.hostPort}`);
  const shown = redactNatsUrls(config.nats);
  const infos = new Set(parsed.flatMap((server) => (server.userinfo === undefined ? [] : [server.userinfo])));
  if (infos.size > 1) throw new NatsAccessError('nats_auth_ambiguous', 'the servers of cluster.nats carry different user info: give the credentials once (cluster.user and cluster.passwordFile)');
  const inUrl = [...infos][0];

  let user = config.user ?? undefined;
  let pass: string | undefined;
  let token: string | undefined;
  if (inUrl !== undefined) {
    const colon = inUrl.indexOf(':');
    const decode = (text: string): string => {
      try {
        return decodeURIComponent(text);
      } catch {
        return text;
      }
    };
    if (colon >= 0) {
      if (user !== undefined && user !== decode(inUrl.slice(0, colon))) throw new NatsAccessError('nats_auth_ambiguous', 'cluster.user and the user in cluster.nats differ: name the user once');
      user = decode(inUrl.slice(0, colon));
      pass = decode(inUrl.slice(colon + 1));
    } else token = decode(inUrl);
    notes.push({ reason: 'nats_secret_in_url', message: 'a NATS secret is in cluster.nats: given as --nats or OVOS_CONTESTS_NATS it shows in the process list; use cluster.passwordFile / cluster.tokenFile or OVOS_CONTESTS_NATS_PASSWORD / OVOS_CONTESTS_NATS_TOKEN' });
  }
  const fromEnv = (name: string): string | undefined => (env[name] === undefined || env[name] === '' ? undefined : env[name]);
  const given: string[] = [];
  const take = (what: string, value: string | undefined): string | undefined => {
    if (value !== undefined) given.push(what);
    return value;
  };
  const passwords = [pass === undefined ? undefined : 'the URL', config.passwordFile === null ? undefined : 'cluster.passwordFile', fromEnv(NATS_PASSWORD_ENV) === undefined ? undefined : NATS_PASSWORD_ENV].filter((x) => x !== undefined);
  const tokens = [token === undefined ? undefined : 'the URL', config.tokenFile === null ? undefined : 'cluster.tokenFile', fromEnv(NATS_TOKEN_ENV) === undefined ? undefined : NATS_TOKEN_ENV].filter((x) => x !== undefined);
  if (passwords.length > 1) throw new NatsAccessError('nats_auth_ambiguous', `a NATS password is given more than once (${passwords.join(', ')}): give it once`);
  if (tokens.length > 1) throw new NatsAccessError('nats_auth_ambiguous', `a NATS token is given more than once (${tokens.join(', ')}): give it once`);
  pass = take('a password', pass ?? (config.passwordFile === null ? fromEnv(NATS_PASSWORD_ENV) : readSecret(config.passwordFile, 'passwordFile', notes)));
  token = take('a token', token ?? (config.tokenFile === null ? fromEnv(NATS_TOKEN_ENV) : readSecret(config.tokenFile, 'tokenFile', notes)));
  const nkeySeed = take('an NKey (cluster.nkeyFile)', config.nkeyFile === null ? undefined : readSecret(config.nkeyFile, 'nkeyFile', notes).trim());
  const creds = take('a credentials file (cluster.credsFile)', config.credsFile === null ? undefined : readSecret(config.credsFile, 'credsFile', notes));
  if (given.length > 1) throw new NatsAccessError('nats_auth_ambiguous', `NATS authentication is given ${given.length} ways (${given.join(', ')}): name one`);
  if (pass !== undefined && user === undefined) throw new NatsAccessError('nats_auth_incomplete', 'a NATS password needs a user: set cluster.user (--nats-user)');
  if (pass === undefined && user !== undefined) throw new NatsAccessError('nats_auth_incomplete', `cluster.user is set but no password: set cluster.passwordFile (--nats-password-file) or ${NATS_PASSWORD_ENV}`);
  if (nkeySeed !== undefined && !/^SU[A-Z2-7]{50,}$/.test(nkeySeed)) throw new NatsAccessError('nats_secret_unreadable', 'cluster.nkeyFile: does not hold a user NKey seed (SU…)');
  if (creds !== undefined && !/-----BEGIN NATS USER JWT-----/.test(creds)) throw new NatsAccessError('nats_secret_unreadable', 'cluster.credsFile: not a NATS credentials file (no user JWT)');

  const tlsDemanded = parsed.some((server) => server.tls) || config.tlsCaFile !== null || config.tlsCertFile !== null || config.tlsKeyFile !== null;
  if ((config.tlsCertFile === null) !== (config.tlsKeyFile === null)) throw new NatsAccessError('nats_auth_incomplete', 'cluster.tlsCertFile and cluster.tlsKeyFile go together (a client certificate and its key)');
  for (const [key, file] of [['tlsCaFile', config.tlsCaFile], ['tlsCertFile', config.tlsCertFile], ['tlsKeyFile', config.tlsKeyFile]] as const) {
    if (file !== null) readSecret(file, key, key === 'tlsKeyFile' ? notes : []);
  }
  const method: NatsAuthMethod = pass !== undefined ? 'password' : token !== undefined ? 'token' : nkeySeed !== undefined ? 'nkey' : creds !== undefined ? 'creds' : 'none';
  return {
    servers,
    shown,
    method,
    ...(user === undefined || pass === undefined ? {} : { user, pass }),
    ...(token === undefined ? {} : { token }),
    ...(nkeySeed === undefined ? {} : { nkeySeed }),
    ...(creds === undefined ? {} : { creds }),
    ...(tlsDemanded
      ? {
          tls: {
            ...(config.tlsCaFile === null ? {} : { caFile: config.tlsCaFile }),
            ...(config.tlsCertFile === null ? {} : { certFile: config.tlsCertFile }),
            ...(config.tlsKeyFile === null ? {} : { keyFile: config.tlsKeyFile }),
          },
        }
      : {}),
    notes,
  };
}

/**
 * The NATS client's options for `access` (its servers, credentials and TLS), with the client's own authenticators
 * (passed in: this module loads no NATS client, so a daemon alone never does).
 */
export function connectOptions(
  access: NatsAccess,
  { nkeyAuthenticator, credsAuthenticator }: { readonly nkeyAuthenticator: (seed: Uint8Array) => Authenticator; readonly credsAuthenticator: (creds: Uint8Array) => Authenticator },
): Pick<ConnectionOptions, 'servers' | 'user' | 'pass' | 'token' | 'authenticator' | 'tls'> {
  const encoder = new TextEncoder();
  return {
    servers: [...access.servers],
    ...(access.user === undefined ? {} : { user: access.user, pass: access.pass }),
    ...(access.token === undefined ? {} : { token: access.token }),
    ...(access.nkeySeed === undefined ? {} : { authenticator: nkeyAuthenticator(encoder.encode(access.nkeySeed)) }),
    ...(access.creds === undefined ? {} : { authenticator: credsAuthenticator(encoder.encode(access.creds)) }),
    // TLS demanded: the client refuses, at every connect and reconnect, a server that offers none, before it sends a
    // credential (`server does not support 'tls'`).
    ...(access.tls === undefined ? {} : { tls: { ...access.tls } }),
  };
}

/** Whether `nc`'s connection to its current server is encrypted (TLS). */
export function encrypted(nc: NatsConnection): boolean {
  const transport = (nc as unknown as { readonly protocol?: { readonly transport?: { isEncrypted?: () => boolean } } }).protocol?.transport;
  return transport?.isEncrypted?.() === true;
}

/**
 * What joining this NATS server exposes, one warning each (as the bus warns when it listens beyond loopback): a server
 * that admits clients without credentials, or a connection beyond this machine in clear.
 */
export function natsExposure(access: NatsAccess, nc: NatsConnection): Array<{ readonly reason: 'nats_unauthenticated' | 'nats_unencrypted'; readonly message: string }> {
  const warnings: Array<{ readonly reason: 'nats_unauthenticated' | 'nats_unencrypted'; readonly message: string }> = [];
  if (nc.info?.auth_required !== true) {
    warnings.push({
      reason: 'nats_unauthenticated',
      message:
        'the NATS server admits clients without credentials: anyone who reaches it reads every utterance and answer, speaks as a daemon, takes partitions and writes the registrations (give the daemons an account: src/cluster/README.md, "Who can join")',
    });
  }
  const beyond = access.servers.some((server) => !isLoopbackHost(hostOf(server)));
  if (beyond && !encrypted(nc)) {
    warnings.push({
      reason: 'nats_unencrypted',
      message: 'NATS is joined beyond this machine without TLS: anyone on the network path reads every utterance and the credentials, and can forge messages (use tls:// and cluster.tlsCaFile)',
    });
  }
  return warnings;
}

/** `text` with every secret of `access` in it replaced by `***` (what a server or a library echoes never leaks one). */
export function scrub(text: string, access: NatsAccess): string {
  let scrubbed = redactNatsUrls(text);
  for (const secret of [access.pass, access.token, access.nkeySeed, access.creds]) {
    if (secret !== undefined && secret.length >= 4) scrubbed = scrubbed.split(secret).join('***');
  }
  return scrubbed;
}

/** A failed connect as one line a person can act on: who refused, or who did not answer, and no secret. */
export function natsRefusal(error: unknown, access: NatsAccess): NatsAccessError {
  if (error instanceof NatsAccessError) return error;
  const detail = scrub(error instanceof Error ? error.message : String(error), access);
  const name = error instanceof Error ? error.name : '';
  if (access.tls !== undefined && /does not support 'tls'|tls.*not available/i.test(detail)) {
    return new NatsAccessError('nats_tls_unavailable', `the NATS server at ${access.shown} offers no TLS, which this daemon demands (tls:// or cluster.tlsCaFile): nothing was sent to it`);
  }
  if (/authori[sz]ation|authentication/i.test(`${name} ${detail}`)) {
    const how = access.method === 'none' ? 'without credentials (it requires some: cluster.user and cluster.passwordFile, cluster.tokenFile, cluster.nkeyFile or cluster.credsFile)' : `with its ${access.method === 'password' ? `user "${access.user ?? ''}" and password` : access.method === 'creds' ? 'credentials file' : access.method === 'nkey' ? 'NKey' : 'token'}`;
    return new NatsAccessError('nats_auth_refused', `the NATS server at ${access.shown} refused this daemon ${how}: ${detail}`);
  }
  return new NatsAccessError('nats_unreachable', `no NATS server with JetStream answered at ${access.shown} (${detail})`);
}

/** The host of a server as the NATS client names it (`host:port`, with or without a scheme). */
export function hostOf(server: string): string {
  try {
    return new URL(`http://${server.replace(SCHEME, '')}`).hostname;
  } catch {
    return '';
  }
}
