/**
 * The stage service's direct link (src/stage-service/endpoint.ts; src/ovos-plugin/README.md, Protocol §8): the
 * ovos-core plugin's requests over a websocket of their own, each reply on the connection its request came from —
 * never on the bus — while the skills are still asked on the bus. Real sockets, the daemon in-process with its
 * embedded bus; every wait is on an event, with a guard timeout only.
 */
import { once } from 'node:events';
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

async function daemon(orchestrator: Record<string, unknown>, port = 0) {
  const { logger, lines } = captureLogs('info');
  const started: Daemon = await startDaemon(configWith({ bus: { port }, exampleSkills: false, inspector: { enabled: false }, orchestrator }), logger);
  cleanups.push(() => started.close());
  return { daemon: started, lines };
}

/** The plugin's end of the link: sends text frames, records every reply. */
async function link(url: string, headers: Record<string, string> = {}): Promise<{ socket: WebSocket; replies: Recorder<Message> }> {
  const socket = new WebSocket(url, { headers });
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

  it('a browser page cannot open the link (a foreign Origin is refused); loopback is served', async () => {
    const { daemon: d } = await daemon({ takesUtterances: false, stagePort: 0 });
    const refused = new WebSocket(d.stageLinkUrl!, { headers: { origin: 'https://evil.example' } });
    const failed = once(refused, 'error');
    const [, response] = (await within(once(refused, 'unexpected-response'), 5_000, 'the refusal')) as [unknown, { statusCode: number }];
    expect(response.statusCode).toBe(401);
    refused.terminate();
    await failed; // terminate() before the handshake ends reports an error: expected here
    await link(d.stageLinkUrl!, { origin: 'http://127.0.0.1:8182' });
  });

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
