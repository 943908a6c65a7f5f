import { createServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { serveRequests } from '../lib/ipc.js';
import { wallNow } from '../lib/processes.js';

/**
 * Local webhook receivers: plain node:http servers on 127.0.0.1 answering 200 (at once, or after
 * `answerAfterMs`: a slow receiver, scenario 11), or hanging without an answer (scenario 7). They
 * count what arrives (unique by the `webhook-id` header, so a retry is not counted twice) and when,
 * and can note the arrival time of each entity (scenario 5); arrival is when the request's body has
 * been read, before any answer.
 */
interface ReceiverStats {
  count: number;
  unique: number;
  first: number | undefined;
  last: number | undefined;
}

interface Receiver {
  server: Server;
  hangs: boolean;
  stats: ReceiverStats;
  ids: Set<string>;
}

const receivers: Receiver[] = [];
const sockets = new Set<Socket>();
let arrivals = new Map<string, number>();
let trackEntities = false;
let answerAfterMs = 0;

function emptyStats(): ReceiverStats {
  return { count: 0, unique: 0, first: undefined, last: undefined };
}

function listen(hangs: boolean): Promise<number> {
  const receiver: Receiver = { server: createServer(), hangs, stats: emptyStats(), ids: new Set() };
  receiver.server.keepAliveTimeout = 60_000;
  receiver.server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  receiver.server.on('request', (request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const at = wallNow();
      if (receiver.hangs) return; // until the sender gives up
      const stats = receiver.stats;
      stats.count++;
      const id = request.headers['webhook-id'];
      if (typeof id === 'string' && !receiver.ids.has(id)) {
        receiver.ids.add(id);
        stats.unique++;
        stats.first ??= at;
        stats.last = at;
      }
      if (trackEntities) {
        const entity = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { entity_id?: unknown }).entity_id;
        if (entity !== undefined && !arrivals.has(String(entity))) arrivals.set(String(entity), at);
      }
      const answer = () => response.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      if (answerAfterMs > 0) setTimeout(answer, answerAfterMs);
      else answer();
    });
  });
  receivers.push(receiver);
  return new Promise((resolve) =>
    receiver.server.listen(0, '127.0.0.1', () => {
      const address = receiver.server.address();
      resolve(typeof address === 'object' && address ? address.port : 0);
    }),
  );
}

serveRequests({
  /** Starts `count` receivers, the ones at the `hanging` positions never answering; returns their URLs. */
  start: async (job: { count: number; hanging?: number[]; trackEntities?: boolean; answerAfterMs?: number }) => {
    trackEntities = job.trackEntities ?? false;
    answerAfterMs = job.answerAfterMs ?? 0;
    const urls: string[] = [];
    for (let i = 0; i < job.count; i++) urls.push(`http://127.0.0.1:${await listen(job.hanging?.includes(i) ?? false)}`);
    return urls;
  },
  stats: () => receivers.map((receiver) => ({ ...receiver.stats, hangs: receiver.hangs })),
  reset: () => {
    for (const receiver of receivers) {
      receiver.stats = emptyStats();
      receiver.ids.clear();
    }
    arrivals = new Map();
  },
  arrivals: () => Object.fromEntries(arrivals),
});
