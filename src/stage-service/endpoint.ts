/**
 * The stage service's direct link (src/ovos-plugin/README.md, Protocol §8): a websocket on 127.0.0.1 where the
 * ovos-core plugin sends the same stage requests it would put on the bus, and gets each reply back on the same
 * connection. It exists for the stock ovos-messagebus, which holds small frames back (Nagle's algorithm, up to 40 ms
 * a hop while a client's link is busy with the broadcast traffic): a request and its reply would each pay that. The
 * skills are still asked on the bus, as ovos-core asks them.
 *
 * Only the ovos-core plugin may open it: the upgrade carries the link's token (`Authorization: Bearer …`,
 * link-token.ts), names a loopback host and no page elsewhere (a browser page cannot open it). It is bounded like the
 * bus: at most `MAX_LINKS` connections, `MAX_IN_FLIGHT` requests in flight on one (more are answered `unavailable`),
 * and a connection whose replies pile up unread (`MAX_UNREAD_BYTES`) is not read from until they drain — and is
 * closed if they have not within `SLOW_READER_MS`. Only stage requests are read; anything else is dropped with a
 * reason. Every refusal is logged (one warning a minute per reason, the rest counted in `suppressed`) and counted
 * (`refused`).
 */
import type { IncomingMessage } from 'node:http';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { nonLocalRequest } from '../bus/loopback.js';
import { decodeFrame, encodeMessage, reply, stringField, type Message } from '../bus/message.js';
import type { Logger } from '../log/logger.js';
import { LogRateLimiter } from '../log/rate-limit.js';
import type { LinkToken } from './link-token.js';
import { STAGE_PROTOCOL_VERSION, stageTopics, type StageService } from './stage-service.js';

/** The link's path; the plugin's default `daemon_url` is ws://127.0.0.1:8183/contests. */
export const STAGE_LINK_PATH = '/contests';
/** A stage request is a few hundred bytes; anything near this is not one. */
const MAX_FRAME_BYTES = 256 * 1024;
/** Connections at once: one per ovos-core process (both plugins share one), a few to spare. */
export const MAX_LINKS = 8;
/** Requests in flight on one connection: ovos-core asks one stage of an utterance at a time, per session. */
export const MAX_IN_FLIGHT = 64;
/** Replies a connection has not read, in bytes, before the link stops reading its requests. */
export const MAX_UNREAD_BYTES = 1024 * 1024;
/** How long a connection may leave its replies unread before it is closed. */
export const SLOW_READER_MS = 10_000;

/**
 * Why the link refused a connection, a request or a frame (the log line's reason is `stage_link_<reason>`): a
 * connection's (`unauthorized`, `not_local`, `too_many_links`), a request's (`too_many_in_flight`), a reader's
 * (`slow_reader`), or a frame's (`not_text`, `not_a_stage_request`, or why it did not decode: `frame_not_json`, …).
 */
export type LinkRefusal = 'unauthorized' | 'not_local' | 'too_many_links' | 'too_many_in_flight' | 'slow_reader' | 'not_text' | 'not_a_stage_request' | `frame_${string}`;

const LOG_LINE: Readonly<Record<'connection' | 'request' | 'frame', string>> = {
  connection: 'stage link: connection refused',
  request: 'stage link: request refused',
  frame: 'frame on the stage link dropped',
};

export interface StageEndpoint {
  readonly port: number;
  readonly url: string;
  /** What the link refused since it started, by reason (the metrics read it). */
  refused(): Readonly<Partial<Record<LinkRefusal, number>>>;
  close(): Promise<void>;
}

export interface StageEndpointOptions {
  readonly service: Pick<StageService, 'answer'>;
  /** On 127.0.0.1; 0 for any free port. */
  readonly port: number;
  readonly logger: Logger;
  /** The credential a connection must carry (link-token.ts). */
  readonly token: LinkToken;
}

/** Listens, or rejects with the listen error (EADDRINUSE: the caller logs it and runs on with the bus alone). */
export async function startStageEndpoint({ service, port, logger, token }: StageEndpointOptions): Promise<StageEndpoint> {
  const refused: Partial<Record<LinkRefusal, number>> = {};
  const drops = new LogRateLimiter(60_000, 64);
  const refuse = (reason: LinkRefusal, detail: string, what: keyof typeof LOG_LINE = 'frame'): void => {
    refused[reason] = (refused[reason] ?? 0) + 1;
    const { log, suppressed } = drops.shouldLog(reason, Date.now());
    if (log) logger.warn({ reason: `stage_link_${reason}`, detail: detail.slice(0, 200), suppressed }, LOG_LINE[what]);
  };
  const server: WebSocketServer = new WebSocketServer({
    host: '127.0.0.1',
    port,
    path: STAGE_LINK_PATH,
    maxPayload: MAX_FRAME_BYTES,
    perMessageDeflate: false,
    verifyClient: ({ req }: { req: IncomingMessage }, done: (ok: boolean, code?: number, message?: string) => void) => {
      const local = nonLocalRequest(req.headers);
      if (local !== undefined) {
        refuse('not_local', local, 'connection');
        return done(false, 403, `refused (${local})`);
      }
      if (!token.admits(req.headers.authorization)) {
        refuse('unauthorized', req.headers.authorization === undefined ? 'no Authorization header' : 'a wrong token', 'connection');
        return done(false, 401, 'refused (unauthorized): the stage link takes the token in orchestrator.stageTokenFile');
      }
      if (server.clients.size >= MAX_LINKS) {
        refuse('too_many_links', `${MAX_LINKS} open`, 'connection');
        return done(false, 503, `refused (too_many_links): at most ${MAX_LINKS}`);
      }
      done(true);
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('listening', () => resolve());
    server.once('error', reject);
  });
  server.on('connection', (socket: WebSocket) => {
    logger.info({ reason: 'stage_link_open' }, 'ovos-core plugin linked (stage requests past the bus)');
    let inFlight = 0;
    let unreadSince: number | undefined;
    let watch: ReturnType<typeof setInterval> | undefined;
    // Replies piled up unread: stop reading requests until they drain (the plugin's requests wait in its socket),
    // and close a connection that has not read them within SLOW_READER_MS.
    const backpressure = (): void => {
      if (socket.bufferedAmount <= MAX_UNREAD_BYTES || watch !== undefined) return;
      socket.pause();
      unreadSince = Date.now();
      refuse('slow_reader', `${socket.bufferedAmount} bytes of replies unread: not reading its requests until they drain`, 'request');
      watch = setInterval(() => {
        if (socket.bufferedAmount <= MAX_UNREAD_BYTES / 4) {
          clearInterval(watch);
          watch = undefined;
          unreadSince = undefined;
          socket.resume();
        } else if (Date.now() - (unreadSince ?? Date.now()) > SLOW_READER_MS) {
          clearInterval(watch);
          socket.terminate();
        }
      }, 50);
      watch.unref();
    };
    socket.on('message', (raw: RawData, binary: boolean) => {
      if (binary) return refuse('not_text', 'a binary frame');
      const decoded = decodeFrame(raw.toString());
      if (!decoded.ok) return refuse(`frame_${decoded.reason.replace(/^frame_/, '')}`, decoded.detail ?? '');
      if (decoded.message.type !== stageTopics.match) return refuse('not_a_stage_request', decoded.message.type);
      if (inFlight >= MAX_IN_FLIGHT) {
        refuse('too_many_in_flight', `${MAX_IN_FLIGHT} requests in flight on one link`, 'request');
        socket.send(encodeMessage(unavailable(decoded.message, `too many requests in flight on this link (at most ${MAX_IN_FLIGHT})`)));
        backpressure();
        return;
      }
      inFlight++;
      void service.answer(decoded.message).then((response) => {
        inFlight--;
        if (socket.readyState !== socket.OPEN) return;
        socket.send(encodeMessage(response));
        backpressure();
      });
    });
    socket.on('close', () => {
      if (watch !== undefined) clearInterval(watch);
      logger.info({ reason: 'stage_link_closed' }, 'ovos-core plugin link closed');
    });
    socket.on('error', (error) => logger.debug({ reason: 'stage_link_socket_error', err: error }, 'stage link: socket error'));
  });
  const address = server.address();
  const bound = typeof address === 'object' && address !== null ? address.port : port;
  return {
    port: bound,
    url: `ws://127.0.0.1:${bound}${STAGE_LINK_PATH}`,
    refused: () => ({ ...refused }),
    close: async () => {
      for (const client of server.clients) client.terminate();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The reply to a request the link will not take now (Protocol §6 `unavailable`): the plugin's stage gives nothing. */
function unavailable(message: Message, detail: string): Message {
  const requestId = stringField(message.data, 'request_id');
  return reply(message, stageTopics.response, { version: STAGE_PROTOCOL_VERSION, ...(requestId === undefined ? {} : { request_id: requestId }), match: null, error: 'unavailable', detail });
}
