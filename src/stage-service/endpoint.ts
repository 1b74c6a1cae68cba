/**
 * The stage service's direct link (src/ovos-plugin/README.md, Protocol §8): a websocket on 127.0.0.1 where the
 * ovos-core plugin sends the same stage requests it would put on the bus, and gets each reply back on the same
 * connection. It exists for the stock ovos-messagebus, which holds small frames back (Nagle's algorithm, up to 40 ms
 * a hop while a client's link is busy with the broadcast traffic): a request and its reply would each pay that. The
 * skills are still asked on the bus, as ovos-core asks them.
 *
 * Only stage requests are read here; anything else is dropped with a reason (one warning a minute per reason, the
 * rest counted). A browser page cannot open it (an Origin other than loopback is refused).
 */
import type { IncomingMessage } from 'node:http';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { decodeFrame, encodeMessage } from '../bus/message.js';
import { originAllowed } from '../bus/ws-server.js';
import type { Logger } from '../log/logger.js';
import { LogRateLimiter } from '../log/rate-limit.js';
import { stageTopics, type StageService } from './stage-service.js';

/** The link's path; the plugin's default `daemon_url` is ws://127.0.0.1:8183/contests. */
export const STAGE_LINK_PATH = '/contests';
/** A stage request is a few hundred bytes; anything near this is not one. */
const MAX_FRAME_BYTES = 256 * 1024;
const NO_ORIGINS: ReadonlySet<string> = new Set();

export interface StageEndpoint {
  readonly port: number;
  readonly url: string;
  close(): Promise<void>;
}

export interface StageEndpointOptions {
  readonly service: Pick<StageService, 'answer'>;
  /** On 127.0.0.1; 0 for any free port. */
  readonly port: number;
  readonly logger: Logger;
}

/** Listens, or rejects with the listen error (EADDRINUSE: the caller logs it and runs on with the bus alone). */
export async function startStageEndpoint({ service, port, logger }: StageEndpointOptions): Promise<StageEndpoint> {
  const server = new WebSocketServer({
    host: '127.0.0.1',
    port,
    path: STAGE_LINK_PATH,
    maxPayload: MAX_FRAME_BYTES,
    perMessageDeflate: false,
    verifyClient: ({ req }: { req: IncomingMessage }) => {
      const origin = req.headers.origin;
      return origin === undefined || origin === '' || originAllowed(origin, NO_ORIGINS);
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('listening', () => resolve());
    server.once('error', reject);
  });
  const drops = new LogRateLimiter(60_000, 64);
  const drop = (reason: string, detail: string): void => {
    const { log, suppressed } = drops.shouldLog(reason, Date.now());
    if (log) logger.warn({ reason: `stage_link_${reason}`, detail: detail.slice(0, 200), suppressed }, 'frame on the stage link dropped');
  };
  server.on('connection', (socket: WebSocket) => {
    logger.info({ reason: 'stage_link_open' }, 'ovos-core plugin linked (stage requests past the bus)');
    socket.on('message', (raw: RawData, binary: boolean) => {
      if (binary) return drop('not_text', 'a binary frame');
      const decoded = decodeFrame(raw.toString());
      if (!decoded.ok) return drop(decoded.reason, decoded.detail ?? '');
      if (decoded.message.type !== stageTopics.match) return drop('not_a_stage_request', decoded.message.type);
      void service.answer(decoded.message).then((response) => {
        if (socket.readyState === socket.OPEN) socket.send(encodeMessage(response));
      });
    });
    socket.on('close', () => logger.info({ reason: 'stage_link_closed' }, 'ovos-core plugin link closed'));
    socket.on('error', (error) => drop('socket_error', error.message));
  });
  const address = server.address();
  const bound = typeof address === 'object' && address !== null ? address.port : port;
  return {
    port: bound,
    url: `ws://127.0.0.1:${bound}${STAGE_LINK_PATH}`,
    close: async () => {
      for (const client of server.clients) client.terminate();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
