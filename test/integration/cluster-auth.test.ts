/**
 * Who can join a cluster (src/cluster/README.md, "Who can join"): daemons authenticate to a real nats-server that
 * requires it — user and password, an NKey, a credentials file, over TLS with a CA the test makes — serve the bus and
 * fail over; a client without credentials is refused; a wrong password is one clear error naming the server, never
 * the secret; joining a server that admits anyone warns. Counted for every utterance: exactly one
 * ovos.utterance.handled (OVOS-PIPELINE-1 §6) and the winner the pool order gives (OVOS-FALLBACK-1 §6.2).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { connect, nkeys } from '@nats-io/transport-node';
import { createAccount, createOperator, createUser, encodeAccount, encodeOperator, encodeUser, fmtCreds } from '@nats-io/jwt';
import { partitionOf } from '../../src/cluster/subjects.js';
import { NatsAccessError } from '../../src/cluster/nats-auth.js';
import { startDaemon, type Daemon } from '../../src/daemon/daemon.js';
import { silentLogger, type Logger } from '../../src/log/logger.js';
import { natsServerAbsent, startNatsServerWith, type NatsServer } from '../support/nats-server.js';
import { startTcpProxy } from '../support/tcp-proxy.js';
import { specWordSkill } from '../support/word-skills.js';
import { Probe, captureLogs, configWith, type LogLine } from './probe.js';
import type { Recorder } from '../support/recorder.js';

const absent = natsServerAbsent();
if (absent !== undefined) console.warn(absent);
const noOpenssl = spawnSync('openssl', ['version']).status !== 0;
if (noOpenssl) console.warn('no openssl on this machine: the TLS case of the cluster authentication suite is skipped');

const PARTITIONS = 8;
const CLUSTER = { partitions: PARTITIONS, heartbeatMs: 100, deadAfterMs: 1_500 };
const PASSWORD = 'correct-horse-battery-staple-7731';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
}, 30_000);

function dir(): string {
  return mkdtempSync(join(tmpdir(), 'ovos-contests-auth-'));
}

/** `text` in a new file of mode 0600. */
function secretFile(text: string): string {
  const file = join(dir(), 'secret');
  writeFileSync(file, `${text}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return file;
}

async function natsWith(conf: (port: number, dir: string) => string, scheme: 'nats' | 'tls' = 'nats'): Promise<NatsServer> {
  const server = await startNatsServerWith(conf, scheme);
  cleanups.push(() => server.stop());
  return server;
}

const jetstream = (port: number, store: string, extra: string): string => `listen: "127.0.0.1:${port}"\njetstream { store_dir: ${JSON.stringify(store)} }\n${extra}\n`;
const passwordServer = (): Promise<NatsServer> => natsWith((port, store) => jetstream(port, store, `authorization { user: "daemon", password: "${PASSWORD}" }`));

async function daemon(nats: string, nodeId: string, cluster: Record<string, unknown>, logger: Logger = silentLogger()): Promise<Daemon> {
  const config = configWith({ bus: { port: 0 }, exampleSkills: false, log: { level: 'silent' }, inspector: { port: 0 }, cluster: { ...CLUSTER, ...cluster, nats, nodeId }, fallback: { pingTimeoutMs: 10_000 } });
  const started = await startDaemon(config, logger);
  cleanups.push(() => started.close());
  return started;
}

async function probe(url: string): Promise<Probe> {
  const connected = await Probe.connect(url);
  cleanups.push(() => connected.close());
  return connected;
}

/** A question from `user` in `session` that only "a.spec" is willing for: one handled, a.spec the winner. */
async function asked(user: Probe, session: string, id: string): Promise<{ readonly handled: number; readonly winner: unknown }> {
  user.utter('alpha one', { utteranceId: id, session: { session_id: session }, lang: 'en-US' });
  await user.handled(id, 15_000);
  await user.barrier();
  const messages = user.of(id);
  return { handled: messages.filter((m) => m.type === 'ovos.utterance.handled').length, winner: messages.find((m) => m.type === 'ovos.intent.matched')?.data['skill_id'] };
}

/** A skill "a.spec" on `skillUrl`, known to every daemon of `daemons`. */
async function skillOn(skillUrl: string, daemons: readonly Daemon[]): Promise<void> {
  await specWordSkill(await probe(skillUrl), 'a.spec', 10, 'alpha');
  await expect.poll(() => daemons.map((d) => [...d.system.fallback.registry.availableFor('default').keys()].join()), { timeout: 10_000 }).toEqual(daemons.map(() => 'a.spec'));
}

/**
 * Two daemons with `auth` on `server` — A directly, B through a TCP proxy — serve the bus (a skill on A answers a user
 * on B, in a session B runs) and fail over (B cut off: A takes every partition over, writing the partition table with
 * its credentials, and runs that session). What A logged.
 */
async function servesAndFailsOver(server: NatsServer, auth: Record<string, unknown>, scheme: 'nats' | 'tls' = 'nats'): Promise<Recorder<LogLine>> {
  const proxy = await startTcpProxy(server.port);
  cleanups.push(() => proxy.close());
  const logs = captureLogs('info');
  const a = await daemon(server.url, 'node-a', auth, logs.logger);
  const b = await daemon(`${scheme}://127.0.0.1:${new URL(proxy.url).port}`, 'node-b', auth);
  await expect.poll(() => a.cluster!.view().owned.length > 0 && b.cluster!.view().owned.length > 0 && a.cluster!.view().owned.length + b.cluster!.view().owned.length === PARTITIONS, { timeout: 10_000 }).toBe(true);
  await skillOn(a.url, [a, b]);
  const ownedByB = b.cluster!.view().owned;
  const session = [...Array(100).keys()].map((n) => `auth-s${n}`).find((s) => ownedByB.includes(partitionOf(s, PARTITIONS)))!;
  const userB = await probe(b.url);
  await expect.poll(() => a.cluster!.view().connectionsElsewhere, { timeout: 5_000 }).toBeGreaterThan(0);
  expect(await asked(userB, session, `${session}-1`)).toEqual({ handled: 1, winner: 'a.spec' });
  proxy.cut();
  await expect.poll(() => a.cluster!.view().owned.length, { timeout: 15_000 }).toBe(PARTITIONS);
  const userA = await probe(a.url);
  expect(await asked(userA, session, `${session}-2`)).toEqual({ handled: 1, winner: 'a.spec' });
  proxy.heal(); // B back: it stops as any daemon does, not as one cut off
  return logs.lines;
}

describe.skipIf(absent !== undefined)('a cluster only its own daemons can join (src/cluster/README.md "Who can join")', () => {
  it('PIPELINE-1 §6, FALLBACK-1 §6.2: daemons with a user and a password from a file serve the bus and fail over; a client without credentials is refused', async () => {
    const server = await passwordServer();
    await expect(connect({ servers: server.url, reconnect: false })).rejects.toThrow(/authorization/i);
    const lines = await servesAndFailsOver(server, { user: 'daemon', passwordFile: secretFile(PASSWORD) });
    // Authentication on: no warning that the server admits anyone, and the secret in no log line.
    expect(lines.items.filter((line) => line.reason === 'nats_unauthenticated')).toEqual([]);
    expect(JSON.stringify(lines.items)).not.toContain(PASSWORD);
  }, 60_000);

  it('a wrong password: one clear error that names the server and the user, never the secret (also given in the URL)', async () => {
    const server = await passwordServer();
    const wrong = 'not-the-password-4242';
    const failure = await daemon(server.url, 'node-w', { user: 'daemon', passwordFile: secretFile(wrong) }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(NatsAccessError);
    expect((failure as NatsAccessError).code).toBe('nats_auth_refused');
    expect((failure as NatsAccessError).message).toContain(server.url);
    expect((failure as NatsAccessError).message).toContain('"daemon"');
    expect((failure as NatsAccessError).message).not.toContain(wrong);
    const inUrl = `nats://daemon:${wrong}@127.0.0.1:${server.port}`;
    const fromUrl = await daemon(inUrl, 'node-u', {}).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect((fromUrl as NatsAccessError).code).toBe('nats_auth_refused');
    expect((fromUrl as NatsAccessError).message).toContain(`nats://daemon:***@127.0.0.1:${server.port}`);
    expect((fromUrl as NatsAccessError).message).not.toContain(wrong);
  }, 30_000);

  it('PIPELINE-1 §6: the user and password in the URL work too, and the daemon warns that they show in the process list', async () => {
    const server = await passwordServer();
    const logs = captureLogs('info');
    const a = await daemon(`nats://daemon:${PASSWORD}@127.0.0.1:${server.port}`, 'node-a', {}, logs.logger);
    await skillOn(a.url, [a]);
    expect(await asked(await probe(a.url), 'url-s', 'url-1')).toEqual({ handled: 1, winner: 'a.spec' });
    expect(logs.lines.items.filter((line) => line.reason === 'nats_secret_in_url')).toHaveLength(1);
    expect(JSON.stringify(logs.lines.items)).not.toContain(PASSWORD);
  }, 30_000);

  it('PIPELINE-1 §6: a daemon with an NKey (cluster.nkeyFile) joins a server that knows only its public key', async () => {
    const user = nkeys.createUser();
    const seed = new TextDecoder().decode(user.getSeed());
    const server = await natsWith((port, store) => jetstream(port, store, `authorization { users: [ { nkey: "${user.getPublicKey()}" } ] }`));
    await expect(connect({ servers: server.url, reconnect: false })).rejects.toThrow(/authorization/i);
    const a = await daemon(server.url, 'node-a', { nkeyFile: secretFile(seed) });
    await skillOn(a.url, [a]);
    expect(await asked(await probe(a.url), 'nkey-s', 'nkey-1')).toEqual({ handled: 1, winner: 'a.spec' });
  }, 30_000);

  it('PIPELINE-1 §6: daemons with a credentials file (cluster.credsFile: a user JWT and its seed) serve the bus and fail over on a server in operator mode; a client without them is refused', async () => {
    const operator = createOperator();
    const system = createAccount();
    const account = createAccount();
    const user = createUser();
    const operatorJwt = await encodeOperator('ovos-contests-test', operator, { system_account: system.getPublicKey() });
    const systemJwt = await encodeAccount('SYS', system, {}, { signer: operator });
    const unlimited = { subs: -1, conn: -1, leaf: -1, imports: -1, exports: -1, data: -1, payload: -1, wildcards: true, mem_storage: -1, disk_storage: -1, streams: -1, consumer: -1 };
    const accountJwt = await encodeAccount('daemons', account, { limits: unlimited }, { signer: operator });
    const creds = new TextDecoder().decode(fmtCreds(await encodeUser('daemon', user, account), user));
    const server = await natsWith((port, store) =>
      jetstream(port, store, `operator: "${operatorJwt}"\nsystem_account: ${system.getPublicKey()}\nresolver: MEMORY\nresolver_preload: {\n  ${account.getPublicKey()}: "${accountJwt}"\n  ${system.getPublicKey()}: "${systemJwt}"\n}`),
    );
    await expect(connect({ servers: server.url, reconnect: false })).rejects.toThrow(/authorization/i);
    await servesAndFailsOver(server, { credsFile: secretFile(creds) });
  }, 60_000);

  it.skipIf(noOpenssl)('PIPELINE-1 §6: over TLS (tls://, a CA the test makes) with a password, daemons serve the bus and fail over; a daemon that demands TLS of a server without it sends nothing and says so', async () => {
    const pki = dir();
    const ssl = (...args: string[]): void => void execFileSync('openssl', args, { cwd: pki, stdio: 'ignore' });
    ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=ovos-contests test CA');
    ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1');
    writeFileSync(join(pki, 'san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
    ssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.pem', '-days', '2', '-extfile', 'san.ext');
    const server = await natsWith(
      (port, store) => jetstream(port, store, `tls { cert_file: "${join(pki, 'server.pem')}", key_file: "${join(pki, 'server.key')}" }\nauthorization { user: "daemon", password: "${PASSWORD}" }`),
      'tls',
    );
    const lines = await servesAndFailsOver(server, { user: 'daemon', passwordFile: secretFile(PASSWORD), tlsCaFile: join(pki, 'ca.pem') }, 'tls');
    expect(lines.items.filter((line) => line.reason === 'nats_unauthenticated' || line.reason === 'nats_unencrypted')).toEqual([]);
    // The CA is not the system's: without it, the server's certificate is not trusted.
    const untrusted = await daemon(server.url, 'node-x', { user: 'daemon', passwordFile: secretFile(PASSWORD) }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(untrusted).toBeInstanceOf(NatsAccessError);
    // TLS demanded of a server that offers none: refused before a credential is sent.
    const plain = await passwordServer();
    const refused = await daemon(`tls://127.0.0.1:${plain.port}`, 'node-p', { user: 'daemon', passwordFile: secretFile(PASSWORD), tlsCaFile: join(pki, 'ca.pem') }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect((refused as NatsAccessError).code).toBe('nats_tls_unavailable');
    expect(plain.output()).not.toMatch(/authorization violation/i);
  }, 60_000);

  it('a daemon joining a server that admits clients without credentials warns once, naming the risk', async () => {
    const server = await natsWith((port, store) => jetstream(port, store, ''));
    const logs = captureLogs('info');
    await daemon(server.url, 'node-a', {}, logs.logger);
    const warned = logs.lines.items.filter((line) => line.reason === 'nats_unauthenticated');
    expect(warned).toHaveLength(1);
    expect(String(warned[0]!.msg)).toMatch(/without credentials/);
  }, 30_000);
});
