import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { Socket } from 'node:net';

export interface ReceivedRequest {
  webhookId: string;
  headers: IncomingMessage['headers'];
  body: string;
  json: Record<string, unknown> | undefined;
  receivedAt: number;
  path: string;
}

export interface ReceiverOptions {
  /** Status to answer (default 200); may depend on the request. */
  status?: (request: ReceivedRequest) => number | { status: number; headers?: Record<string, string> };
  /** Answer after this many ms (keeps sends in flight long enough to kill a worker mid-send). */
  delayMs?: number;
  /** Loopback address to listen on (default 127.0.0.1). */
  host?: string;
}

/** A webhook receiver on 127.0.0.1 that records every request, and can go down and come back. */
export class Receiver {
  readonly requests: ReceivedRequest[] = [];
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  port = 0;

  constructor(private readonly options: ReceiverOptions = {}) {}

  /** Changes how long the receiver takes to answer from now on. */
  setDelay(delayMs: number): void {
    this.options.delayMs = delayMs;
  }

  /** Requests received and not answered yet. */
  pending = 0;

  static async start(options: ReceiverOptions = {}): Promise<Receiver> {
    const receiver = new Receiver(options);
    await receiver.up();
    return receiver;
  }

  get url(): string {
    return `http://${this.options.host ?? '127.0.0.1'}:${this.port}/hook`;
  }

  async up(): Promise<void> {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        let json: Record<string, unknown> | undefined;
        try {
          json = JSON.parse(body) as Record<string, unknown>;
        } catch {
          json = undefined;
        }
        const record: ReceivedRequest = { webhookId: String(req.headers['webhook-id'] ?? ''), headers: req.headers, body, json, receivedAt: Date.now(), path: req.url ?? '' };
        const answer = this.options.status?.(record) ?? 200;
        const { status, headers } = typeof answer === 'number' ? { status: answer, headers: {} } : answer;
        this.pending++;
        const respond = () => {
          this.pending--;
          if (status >= 200 && status < 300) this.requests.push(record);
          else this.failures.push(record);
          res.writeHead(status, headers).end('ok');
        };
        this.all.push(record);
        if (this.options.delayMs) setTimeout(respond, this.options.delayMs);
        else respond();
      });
    });
    server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, this.options.host ?? '127.0.0.1', () => resolve());
    });
    const address = server.address();
    if (typeof address === 'object' && address) this.port = address.port;
    this.server = server;
  }

  /** Every request, whatever the answer. */
  readonly all: ReceivedRequest[] = [];

  /** Requests answered with a non-2xx status. */
  readonly failures: ReceivedRequest[] = [];

  /** Stops listening and cuts open connections: the receiver is down until up(). */
  async down(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Distinct webhook-ids received with a 2xx answer. */
  distinctIds(): Set<string> {
    return new Set(this.requests.map((r) => r.webhookId));
  }

  /** How many 2xx-answered requests repeated a webhook-id already seen. */
  duplicates(): number {
    return this.requests.length - this.distinctIds().size;
  }
}

/** Polls until `check` is true; fails with `message` after timeoutMs. */
export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs: number, message: string | (() => string | Promise<string>)): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(typeof message === 'string' ? message : await message());
}
