/**
 * The stage service's direct link (src/stage-service/endpoint.ts; src/ovos-plugin/README.md, Protocol §8): the
 * ovos-core plugin's requests over a websocket of their own, each reply on the connection its request came from —
 * never on the bus — while the skills are still asked on the bus. Real sockets, the daemon in-process with its
 * embedded bus; every wait is on an event, with a guard timeout only.
 */
import { once } from 'node:events';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { createMessage, decodeFrame, encodeMessage, reply, type JsonObject, type Message } from '../../src/bus/message.js';
import { startDaemon, type Daemon } from '../../src/daemon/daemon.js';
import { stageTopics } from '../../src/stage-service/stage-service.js';
import { Probe, captureLogs, configWith, freePort, within, type LogLine } from './probe.js';
import { Recorder } from '../support/recorder.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The stage link's token file of the daemons of this suite (made by the first, read by every test's plugin end). */
const TOKEN_FILE = join(mkdtempSync(join(tmpdir(), 'ovos-contests-stage-link-')), 'stage-link-token');
const bearer = (): string => `Bearer ${readFileSync(TOKEN_FILE, 'utf8').trim()}`;

async function daemon(orchestrator: Record<string, unknown>, port = 0, metrics?: { port: number }) {
  const { logger, lines } = captureLogs('info');
  const started: Daemon = await startDaemon(configWith({ bus: { port }, exampleSkills: false, inspector: { enabled: false }, orchestrator: { stageTokenFile: TOKEN_FILE, ...orchestrator }, ...(metrics === undefined ? {} : { metrics }) }), logger);
  cleanups.push(() => started.close());
  return { daemon: started, lines };
}

/** The plugin's end of the link, with the link's token: sends text frames, records every reply. */
async function link(url: string, headers: Record<string, string> = {}): Promise<{ socket: WebSocket; replies: Recorder<Message> }> {
  const socket = new WebSocket(url, { headers: { authorization: bearer(), ...headers } });
  const replies = new Recorder<Message>();
  socket.on('message', (raw) => {
    const decoded = decodeFrame(String(raw));
    if (decoded.ok) replies.push(decoded.message);
  });
  await once(socket, 'open');
  cleanups.push(() => socket.close());
  return { socket, replies };
}

/** An ovos-workshop FallbackSkill on the bus: registers, answers every broadcast ping. */
async function workshopSkill(url: string, skillId: string, priority: number, lines: Recorder<LogLine>): Promise<Probe> {
  const skill = await Probe.connect(url);
  cleanups.push(() => skill.close());
  skill.frames.subscribe(({ message }) => {
    if (message?.type === 'ovos.skills.fallback.ping') skill.send(reply(message, 'ovos.skills.fallback.pong', { skill_id: skillId, can_handle: true }));
  });
  skill.send(createMessage('ovos.skills.fallback.register', { skill_id: skillId, priority }, {}));
  await lines.waitFor((l) => l['msg'] === 'fallback skill registered' && l['skill_id'] === skillId, 'its registration');
  return skill;
}

/** The status an upgrade to the link gets with `headers` (101: opened). */
function upgradeStatus(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url.replace('ws:', 'http:'), { headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', ...headers } });
    req.on('upgrade', (response, socket) => {
      socket.destroy();
      resolve(response.statusCode ?? 0);
    });
    req.on('response', (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

const request = (requestId: string, data: Partial<JsonObject> = {}): Message =>
  createMessage(stageTopics.match, { version: 1, request_id: requestId, stage: 'fallback_low', utterances: ['do a barrel roll'], lang: 'en-US', timeout_ms: 600, ...data }, { session: { session_id: 'kitchen' }, utterance_id: `u-${requestId}`, source: 'IntentService', destination: 'ovos-contests' });

describe('stage link: the ovos-core plugin\'s requests past the bus (Protocol §8)', () => {
  it('a request on the link is decided with the skills on the bus and answered on the link alone, in the request\'s context', async () => {
    const { daemon: d, lines } = await daemon({ takesUtterances: false, stagePort: 0 });
    expect(d.stageLinkUrl).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/contests$/);
    const watcher = await Probe.connect(d.url);
    cleanups.push(() => watcher.close());
    const skill = await workshopSkill(d.url, 'wk.low', 95, lines);
    const { socket, replies } = await link(d.stageLinkUrl!);
    socket.send(encodeMessage(request('r1')));
    const answer = await replies.waitFor((m) => m.data['request_id'] === 'r1', 'the reply on the link');
    expect(answer.type).toBe(stageTopics.response);
    expect(answer.data['match']).toMatchObject({ match_type: 'ovos.skills.fallback.wk.low.request', skill_id: null });
    expect(answer.context).toMatchObject({ session: { session_id: 'kitchen' }, utterance_id: 'u-r1', destination: 'IntentService' });
    // The skill was asked on the bus; neither the request nor the reply went there.
    expect(skill.messages.some((m) => m.type === 'ovos.skills.fallback.ping')).toBe(true);
    await watcher.barrier();
    expect(watcher.messages.filter((m) => m.type === stageTopics.match || m.type === stageTopics.response)).toEqual([]);
  });

  it('bad input on the link is dropped with a reason and the link answers the next request; a bad request gets its error reply', async () => {
    const { daemon: d, lines } = await daemon({ takesUtterances: false, stagePort: 0 });
    const { socket, replies } = await link(d.stageLinkUrl!);
    socket.send('{not json');
    socket.send(encodeMessage(createMessage('speak', { utterance: 'hi' }, {})));
    socket.send(encodeMessage(request('r2', { version: 'one' })));
    socket.send(encodeMessage(request('r3', { stage: 'no_such_stage' })));
    const bad = await replies.waitFor((m) => m.data['request_id'] === 'r2', 'the bad request\'s reply');
    expect(bad.data).toMatchObject({ match: null, error: 'bad_request' });
    expect((await replies.waitFor((m) => m.data['request_id'] === 'r3', 'the unknown stage\'s reply')).data).toMatchObject({ match: null, error: 'unknown_stage' });
    const reasons = lines.items.filter((l) => l['msg'] === 'frame on the stage link dropped').map((l) => l.reason);
    expect(reasons).toEqual(expect.arrayContaining(['stage_link_frame_not_json', 'stage_link_not_a_stage_request']));
    expect(replies.items).toHaveLength(2);
    expect(socket.readyState).toBe(WebSocket.OPEN);
  });

  it('a browser page cannot open the link (a foreign Origin, or a Host that is not a loopback name, is refused); loopback is served', async () => {
    const { daemon: d } = await daemon({ takesUtterances: false, stagePort: 0 });
    expect(await upgradeStatus(d.stageLinkUrl!, { authorization: bearer(), origin: 'https://evil.example' })).toBe(403);
    expect(await upgradeStatus(d.stageLinkUrl!, { authorization: bearer(), host: 'attacker.example' })).toBe(403);
    await link(d.stageLinkUrl!, { origin: 'http://127.0.0.1:8182' });
  });

  it('Protocol §8: only the ovos-core plugin opens the link — without the token, or with another, a connection is refused (401), logged once a minute and counted; the daemon made the token file 0600 and keeps it across restarts', async () => {
    const { daemon: d, lines } = await daemon({ takesUtterances: false, stagePort: 0 }, 0, { port: 0 });
    expect(statSync(TOKEN_FILE).mode & 0o777).toBe(0o600);
    expect(await upgradeStatus(d.stageLinkUrl!, {})).toBe(401);
    expect(await upgradeStatus(d.stageLinkUrl!, { authorization: 'Bearer guessed' })).toBe(401);
    expect(await upgradeStatus(d.stageLinkUrl!, { authorization: `${bearer()}x` })).toBe(401);
    expect(lines.items.filter((l) => l.reason === 'stage_link_unauthorized')).toHaveLength(1);
    expect(await (await fetch(d.metricsUrl!)).text()).toMatch(/ovos_stage_link_refused_total\{reason="unauthorized",service="ovos-contests"\} 3/);
    const token = readFileSync(TOKEN_FILE, 'utf8');
    await d.close();
    await daemon({ takesUtterances: false, stagePort: 0 });
    expect(readFileSync(TOKEN_FILE, 'utf8')).toBe(token);
  });

  it('bounded like the bus: at most 8 links (the ninth refused, 503), at most 64 requests in flight on one (the rest answered unavailable at once), each refusal counted', async () => {
    const { daemon: d, lines } = await daemon({ takesUtterances: false, stagePort: 0 });
    // A workshop skill that never answers its ping: every request stays in flight for its whole bound.
    const silent = await Probe.connect(d.url);
    cleanups.push(() => silent.close());
    silent.send(createMessage('ovos.skills.fallback.register', { skill_id: 'wk.silent', priority: 95 }, {}));
    await lines.waitFor((l) => l['msg'] === 'fallback skill registered' && l['skill_id'] === 'wk.silent', 'its registration');
    const links = [];
    for (let i = 0; i < 8; i++) links.push(await link(d.stageLinkUrl!));
    expect(await upgradeStatus(d.stageLinkUrl!, { authorization: bearer() })).toBe(503);
    const { socket, replies } = links[0]!;
    for (let i = 0; i < 100; i++) socket.send(encodeMessage(request(`f${i}`, { timeout_ms: 2_000 })));
    await replies.waitFor(() => replies.items.length >= 36, 'the refusals');
    expect(replies.items.every((m) => m.data['error'] === 'unavailable' && m.data['match'] === null)).toBe(true);
    await replies.waitFor(() => replies.items.length === 100, 'every reply', 10_000);
    expect(replies.items.filter((m) => m.data['error'] === 'unavailable')).toHaveLength(36);
    expect(lines.items.filter((l) => l.reason === 'stage_link_too_many_in_flight')).toHaveLength(1);
    expect(lines.items.filter((l) => l.reason === 'stage_link_too_many_links')).toHaveLength(1);
  });

  it('a client that sends requests and never reads the replies: the link stops reading it once 1 MiB of replies waits (what it holds is bounded), and closes it after 10 s', async () => {
    const { daemon: d, lines } = await daemon({ takesUtterances: false, stagePort: 0 });
    const { socket } = await link(d.stageLinkUrl!);
    // Never read: the replies pile up in the daemon, then in the kernel's buffers.
    (socket as unknown as { _socket: { pause(): void } })._socket.pause();
    const frame = encodeMessage(request('slow', { stage: 'unknown_stage_here' }));
    const closed = once(socket, 'close');
    for (let i = 0; i < 40_000; i++) socket.send(frame);
    await lines.waitFor((l) => l.reason === 'stage_link_slow_reader', 'the link stops reading', 20_000);
    await within(closed, 20_000, 'the slow reader closed');
  }, 60_000);

  it('not served while the daemon takes the utterances itself, nor with stagePort null; a port in use is logged and the daemon runs on', async () => {
    expect((await daemon({ takesUtterances: true, stagePort: 0 })).daemon.stageLinkUrl).toBeUndefined();
    expect((await daemon({ takesUtterances: false, stagePort: null })).daemon.stageLinkUrl).toBeUndefined();
    const taken = await freePort();
    const first = await daemon({ takesUtterances: false, stagePort: taken });
    expect(first.daemon.stageLinkUrl).toBe(`ws://127.0.0.1:${taken}/contests`);
    const second = await daemon({ takesUtterances: false, stagePort: taken });
    expect(second.daemon.stageLinkUrl).toBeUndefined();
    expect(second.lines.items.some((l) => l.reason === 'stage_port_in_use')).toBe(true);
  });
});
