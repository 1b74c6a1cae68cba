/**
 * The skills of the adversarial benchmark, in a child process of their own (`fork`, IPC), over real sockets to the
 * daemon. `argv[2]` is the bus URL, `argv[3]` the cast:
 *
 *  - `spec`: common-query skills `wiki` (claims with latency_ms 50, answers after 5 ms, conf 0.7), `slow` (latency_ms
 *    20, answers after 80 ms — over what it declared —, conf 0.8), `mute` (claims, never answers) and `crashy` (its own
 *    connection; latency_ms 40, answers after 15 ms, conf 0.75; on every 5th request its socket dies 10 ms in and
 *    reconnects 50 ms later); fallback skills `fb.silent` (priority 90, never pongs) and `fb.yes` (95, willing after
 *    10 ms, its handler 20 ms).
 *  - `legacy`: ovos-workshop skills on one bus client, as ovos-core's loader runs them: `wk.roll` (a FallbackSkill at
 *    priority 10, willing for "roll") and `cq.wiki` (an @common_query skill: searching, then its 0.8 answer after
 *    10 ms; it speaks itself on question:action). Neither sends its own ovos.utterance.handled (the newest
 *    ovos-workshop next to ovos-core ≥ 2.3.0a1). Every 20th fallback request its socket dies 5 ms after it answered;
 *    it reconnects 30 ms later and does not register again (ovos-bus-client + ovos-workshop).
 *  - `dead`: an ovos-workshop FallbackSkill `wk.dead` (priority 20) that registers, says it is ready and is then
 *    killed by the benchmark (SIGKILL): a skill that crashed.
 *
 * Sends `{ ready: true }` once connected and registered; on `stop`, `{ reconnects }` and exits.
 */
import { WebSocket } from 'ws';

type Frame = { type: string; data: Record<string, unknown>; context: Record<string, unknown> };
const url = process.argv[2]!;
const cast = process.argv[3];
let reconnects = 0;

const connect = (onFrame: (socket: WebSocket, frame: Frame) => void): Promise<WebSocket> =>
  new Promise((resolve, reject) => {
    const socket = new WebSocket(url);
    socket.once('open', () => resolve(socket));
    socket.once('error', reject);
    socket.on('message', (raw) => onFrame(socket, JSON.parse(String(raw)) as Frame));
  });
const frame = (type: string, data: Record<string, unknown>, context: Record<string, unknown>): string => JSON.stringify({ type, data, context });
const reply = (m: Frame, type: string, data: Record<string, unknown>, extra: Record<string, unknown> = {}): string => frame(type, data, { ...m.context, ...extra });
const later = (ms: number, fn: () => void): void => void setTimeout(fn, ms);
const send = (socket: WebSocket, text: string): void => {
  if (socket.readyState === WebSocket.OPEN) socket.send(text);
};

async function spec(): Promise<void> {
  const claimants: Record<string, { latency: number; after: number | null; conf: number }> = {
    wiki: { latency: 50, after: 5, conf: 0.7 },
    slow: { latency: 20, after: 80, conf: 0.8 },
    mute: { latency: 30, after: null, conf: 0 },
  };
  const main = await connect((socket, m) => {
    if (m.type === 'fb.yes.fallback.ping') later(10, () => send(socket, reply(m, 'fb.yes.fallback.pong', { skill_id: 'fb.yes', can_handle: true })));
    if (m.type === 'fb.yes:fallback') later(20, () => send(socket, reply(m, 'mycroft.skill.handler.complete', {}, { skill_id: 'fb.yes' })));
    const utterance = m.data['utterance'];
    if (m.type === 'ovos.common_query.ping' && typeof utterance === 'string') {
      for (const [id, s] of Object.entries(claimants)) later(2, () => send(socket, reply(m, 'ovos.common_query.pong', { utterance, skill_id: id, can_answer: true, latency_ms: s.latency })));
    }
    for (const [id, s] of Object.entries(claimants)) {
      const after = s.after;
      if (m.type === `${id}:common_query` && after !== null) later(after, () => send(socket, reply(m, `${id}.common_query.response`, { utterance, skill_id: id, answer: `${id} answer`, conf: s.conf })));
    }
  });
  for (const [skillId, priority] of [['fb.silent', 90], ['fb.yes', 95]] as const) {
    send(main, frame('ovos.fallback.register', { skill_id: skillId, priority }, { skill_id: skillId, session: { session_id: 'default' } }));
  }
  let asked = 0;
  const crashy = async (): Promise<void> => {
    await connect((socket, m) => {
      const utterance = m.data['utterance'];
      if (m.type === 'ovos.common_query.ping' && typeof utterance === 'string') send(socket, reply(m, 'ovos.common_query.pong', { utterance, skill_id: 'crashy', can_answer: true, latency_ms: 40 }));
      if (m.type === 'crashy:common_query') {
        if (++asked % 5 === 0) {
          later(10, () => {
            socket.terminate();
            reconnects++;
            later(50, () => void crashy());
          });
        } else later(15, () => send(socket, reply(m, 'crashy.common_query.response', { utterance, skill_id: 'crashy', answer: 'crashy answer', conf: 0.75 })));
      }
    });
  };
  await crashy();
}

async function legacy(): Promise<void> {
  let current: WebSocket | null = null;
  let requests = 0;
  const onFrame = (socket: WebSocket, m: Frame): void => {
    if (socket !== current) return;
    if (m.type === 'ovos.skills.fallback.ping') {
      const utterances = m.data['utterances'];
      const first = Array.isArray(utterances) && typeof utterances[0] === 'string' ? utterances[0] : '';
      send(socket, reply(m, 'ovos.skills.fallback.pong', { skill_id: 'wk.roll', can_handle: first.includes('roll') }, { skill_id: 'wk.roll' }));
    }
    if (m.type === 'ovos.skills.fallback.wk.roll.request') {
      send(socket, frame('ovos.skills.fallback.wk.roll.start', {}, m.context));
      send(socket, frame('speak', { utterance: 'rolling' }, m.context));
      send(socket, frame('ovos.skills.fallback.wk.roll.response', { result: true, fallback_handler: 'Roll.handle' }, m.context));
      if (++requests % 20 === 0) {
        later(5, () => {
          socket.terminate();
          current = null;
          later(30, () => void connect(onFrame).then((s) => ((current = s), reconnects++)));
        });
      }
    }
    if (m.type === 'question:query') {
      const phrase = m.data['phrase'];
      send(socket, reply(m, 'question:query.response', { phrase, skill_id: 'cq.wiki', searching: true }, { skill_id: 'cq.wiki' }));
      later(10, () => send(socket, reply(m, 'question:query.response', { phrase, skill_id: 'cq.wiki', answer: 'wiki answer', conf: 0.8, callback_data: { answer: 'wiki answer' } }, { skill_id: 'cq.wiki' })));
    }
    if (m.type === 'question:action.cq.wiki') {
      send(socket, reply(m, 'mycroft.skill.handler.start', { name: 'Wiki.cq' }, { skill_id: 'cq.wiki' }));
      send(socket, reply(m, 'speak', { utterance: 'wiki answer' }, { skill_id: 'cq.wiki' }));
      send(socket, reply(m, 'mycroft.skill.handler.complete', { name: 'Wiki.cq' }, { skill_id: 'cq.wiki' }));
    }
  };
  current = await connect(onFrame);
  send(current, frame('ovos.skills.fallback.register', { skill_id: 'wk.roll', priority: 10 }, {}));
  send(current, frame('ovos.common_query.pong', { skill_id: 'cq.wiki', is_classic_cq: false }, { skill_id: 'cq.wiki' }));
}

async function dead(): Promise<void> {
  const socket = await connect(() => {});
  send(socket, frame('ovos.skills.fallback.register', { skill_id: 'wk.dead', priority: 20 }, {}));
}

process.on('message', (message: { type?: string }) => {
  if (message.type === 'stop') process.send?.({ reconnects }, () => process.exit(0));
});
await (cast === 'legacy' ? legacy() : cast === 'dead' ? dead() : spec());
process.send?.({ ready: true });
