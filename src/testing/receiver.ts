import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  method: string;
  /** The path and query, as sent. */
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** The webhook-id header ('' without one). */
  webhookId: string;
  /** The body as JSON; undefined when it is not JSON. */
  json: unknown;
}

type Handler = (request: ReceivedRequest, response: ServerResponse) => void;

export interface ReceiverOptions {
  /** The loopback address to listen on (default 127.0.0.1). */
  host?: string;
  /** Answer after this many ms (keeps sends in flight long enough to kill a worker mid-send). */
  delayMs?: number;
}

const ok: Handler = (_request, response) => response.writeHead(200).end('ok');

/**
 * The webhook receiver of the tests, in-process or against `plaza` processes: an HTTP server on a
 * loopback address that records every request and answers with the queued handlers (`respond`,
 * `hang`), then `fallback` (200). It can go down and come back on the same port, for outages.
 */
export class Receiver {
  /** Every request, in the order they arrived, whatever the answer. */
  readonly requests: ReceivedRequest[] = [];
  /** Requests that arrived and are not answered yet (nor given up by their sender). */
  pending = 0;
  fallback: Handler = ok;
  private readonly queue: Handler[] = [];
  private waiters: { count: number; resolve: () => void }[] = [];
  private readonly hanging = new Set<ServerResponse>();
  private server: Server | undefined;
  private listeningOn = 0;

  constructor(private readonly options: ReceiverOptions = {}) {
    if (options.delayMs) this.setDelay(options.delayMs);
  }

  static async start(options: ReceiverOptions = {}): Promise<Receiver> {
    const receiver = new Receiver(options);
    await receiver.up();
    return receiver;
  }

  /** The port, kept across down() and up() (0 before the first up()). */
  get port(): number {
    return this.listeningOn;
  }

  url(path = '/hook'): string {
    return `http://${this.options.host ?? '127.0.0.1'}:${this.port}${path}`;
  }

  /** Starts listening: on a free port the first time, on the same port after down(). */
  async up(): Promise<void> {
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      this.pending++;
      response.once('close', () => this.pending--);
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = Buffer.concat(chunks);
        const received = { method: request.method ?? '', url: request.url ?? '', headers: request.headers, body, webhookId: String(request.headers['webhook-id'] ?? ''), json: jsonOf(body) };
        this.requests.push(received);
        (this.queue.shift() ?? this.fallback)(received, response);
        this.waiters = this.waiters.filter((waiter) => {
          if (this.requests.length < waiter.count) return true;
          waiter.resolve();
          return false;
        });
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.listeningOn, this.options.host ?? '127.0.0.1', resolve);
    });
    this.listeningOn = (server.address() as AddressInfo).port;
    this.server = server;
  }

  /** Stops listening and cuts every connection, held answers too: the receiver is down until up(). */
  async down(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    for (const response of this.hanging) response.destroy();
    this.hanging.clear();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }

  /** down(), for good: for `after` hooks. */
  close(): Promise<void> {
    return this.down();
  }

  /** Answers the next requests with these statuses (then the fallback). */
  respond(...statuses: (number | { status: number; headers?: Record<string, string>; body?: string })[]): void {
    for (const answer of statuses) {
      const { status, headers, body } = typeof answer === 'number' ? { status: answer, headers: {}, body: '' } : answer;
      this.queue.push((_request, response) => response.writeHead(status, headers).end(body ?? ''));
    }
  }

  /** From now on the fallback answers 200 after `delayMs` (at once for 0). */
  setDelay(delayMs: number): void {
    this.fallback = delayMs > 0 ? (request, response) => setTimeout(() => ok(request, response), delayMs) : ok;
  }

  /** The next request gets no answer until down(). */
  hang(): void {
    this.queue.push((_request, response) => this.hanging.add(response));
  }

  /** From now on no request gets an answer until down() (a receiver that holds every request). */
  hangAll(): void {
    this.hangPaths('/');
  }

  /** From now on requests to paths starting with `prefix` get no answer until down(); the rest 200. */
  hangPaths(prefix: string): void {
    this.fallback = (request, response) => (request.url.startsWith(prefix) ? this.hanging.add(response) : ok(request, response));
  }

  /** Requests that arrived for paths starting with `prefix`. */
  requestsTo(prefix: string): ReceivedRequest[] {
    return this.requests.filter((request) => request.url.startsWith(prefix));
  }

  /** Resolves once `count` requests have arrived in total. */
  waitFor(count: number): Promise<void> {
    if (this.requests.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ count, resolve }));
  }

  /** The distinct webhook-ids received. */
  distinctIds(): Set<string> {
    return new Set(this.requests.map((request) => request.webhookId));
  }

  /** How many requests repeated a webhook-id already received. */
  duplicates(): number {
    return this.requests.length - this.distinctIds().size;
  }
}

function jsonOf(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}
