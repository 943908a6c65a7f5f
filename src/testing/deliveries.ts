import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Clock } from '../clock.js';
import type { Queryable } from '../db/database.js';
import type { Keys } from '../keys.js';
import { seedMarketplace } from './fixtures.js';
import { encryptSecret, newWebhookSecret } from '../keys/secret-box.js';
import { clockOffsetMs, dbNow } from '../db/database-clock.js';

/** Test helpers of the delivery tests: a real HTTP receiver and rows inserted with SQL. */

export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

type Handler = (request: ReceivedRequest, response: ServerResponse) => void;

/** An HTTP server on 127.0.0.1 that answers with queued handlers (then `fallback`) and records every request. */
export class Receiver {
  readonly requests: ReceivedRequest[] = [];
  private readonly queue: Handler[] = [];
  private waiters: { count: number; resolve: () => void }[] = [];
  private readonly hanging = new Set<ServerResponse>();
  fallback: Handler = (_request, response) => response.writeHead(200).end('ok');

  private constructor(private readonly server: Server) {}

  static async start(): Promise<Receiver> {
    const holder: { receiver?: Receiver } = {};
    const server = createServer((request: IncomingMessage, response: ServerResponse) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const receiver = holder.receiver!;
        const received = { method: request.method ?? '', url: request.url ?? '', headers: request.headers, body: Buffer.concat(chunks) };
        receiver.requests.push(received);
        (receiver.queue.shift() ?? receiver.fallback)(received, response);
        receiver.waiters = receiver.waiters.filter((waiter) => {
          if (receiver.requests.length < waiter.count) return true;
          waiter.resolve();
          return false;
        });
      });
    });
    const receiver = new Receiver(server);
    holder.receiver = receiver;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  url(path = '/hook'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** Answers the next requests with these statuses (then the fallback). */
  respond(...statuses: (number | { status: number; headers?: Record<string, string>; body?: string })[]): void {
    for (const answer of statuses) {
      const { status, headers, body } = typeof answer === 'number' ? { status: answer, headers: {}, body: '' } : answer;
      this.queue.push((_request, response) => response.writeHead(status, headers).end(body ?? ''));
    }
  }

  /** The next request gets no answer until close(). */
  hang(): void {
    this.queue.push((_request, response) => this.hanging.add(response));
  }

  /** From now on no request gets an answer until close() (a receiver that holds every request). */
  hangAll(): void {
    this.hangPaths('/');
  }

  /** From now on requests to paths starting with `prefix` get no answer until close(); the rest 200. */
  hangPaths(prefix: string): void {
    this.fallback = (request, response) => (request.url.startsWith(prefix) ? this.hanging.add(response) : response.writeHead(200).end('ok'));
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

  async close(): Promise<void> {
    for (const response of this.hanging) response.destroy();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

export interface SeededWebhook {
  id: number;
  secret: string;
  code: string;
  marketplaceCode: string;
}

let sequence = 0;

export async function seedWebhook(
  db: Queryable,
  keys: Keys,
  options: {
    callbackUrl: string; marketplaceCode?: string; headers?: Record<string, string>; previousSecret?: string; previousExpiresAt?: Date; code?: string;
    /** The owner (default: the admins) and topic (default publication/update). */
    tenantKind?: 'admin' | 'seller' | 'marketplace'; tenantId?: string; topic?: string;
  },
): Promise<SeededWebhook> {
  const marketplaceCode = options.marketplaceCode ?? 'mkt';
  await seedMarketplace(db, marketplaceCode);
  const secret = newWebhookSecret();
  const code = options.code ?? `hook${++sequence}`;
  const { rows } = await db.query<{ id: number }>(
    `INSERT INTO webhooks (tenant_kind, tenant_id, marketplace_code, code, name, topic, callback_url, headers,
                           secret_encrypted, previous_secret_encrypted, previous_secret_expires_at)
     VALUES ($8, $9, $1, $2, 'test', $10, $3, $4::jsonb, $5, $6, $7) RETURNING id`,
    [
      marketplaceCode, code, options.callbackUrl, JSON.stringify(options.headers ?? {}), encryptSecret(keys.webhookSecretsKey, secret),
      options.previousSecret ? encryptSecret(keys.webhookSecretsKey, options.previousSecret) : null, options.previousExpiresAt ?? null,
      options.tenantKind ?? 'admin', options.tenantId ?? '*', options.topic ?? 'publication/update',
    ],
  );
  return { id: rows[0]!.id, secret, code, marketplaceCode };
}

export interface SeededDelivery {
  id: number;
  messageId: string;
  eventRowId: number;
}

/** An event and its pending delivery, due at `now`, as the intake writes them. */
export async function seedDelivery(
  db: Queryable,
  webhook: SeededWebhook,
  options: { now: Date; entityKey?: string; body?: unknown },
): Promise<SeededDelivery> {
  const entityKey = options.entityKey ?? `entity-${++sequence}`;
  const body = options.body ?? { seller_id: 1, marketplace_connection_id: 1, topic_path: `publication/${webhook.marketplaceCode}/update`, entity_id: 7, payload: { publication: { id: 7 }, changes: null, author: 'test' } };
  const event = await db.query<{ id: number }>(
    `INSERT INTO events (event_id, marketplace_code, topic, seller_id, entity_id, body, delivery_count, request_hash, created_at)
     VALUES ($1, $2, 'publication/update', 1, $3, $4::jsonb, 1, 'x', $5) RETURNING id`,
    [`evt_${randomBytes(8).toString('hex')}`, webhook.marketplaceCode, entityKey, JSON.stringify(body), options.now],
  );
  const messageId = `msg_${randomBytes(12).toString('hex')}`;
  const delivery = await db.query<{ id: number }>(
    `INSERT INTO deliveries (event_id, webhook_id, entity_key, message_id, status, next_attempt_at, created_at, updated_at)
     VALUES ($1, $2, $3, $4, 'pending', $5, $5, $5) RETURNING id`,
    [event.rows[0]!.id, webhook.id, entityKey, messageId, options.now],
  );
  return { id: delivery.rows[0]!.id, messageId, eventRowId: event.rows[0]!.id };
}

export interface DeliveryRow {
  status: string;
  attempts: number;
  next_attempt_at: Date;
  last_status_code: number | null;
  last_error: string | null;
  leased_by: string | null;
  completed_at: Date | null;
}

export async function deliveryRow(db: Queryable, id: number): Promise<DeliveryRow> {
  const { rows } = await db.query<DeliveryRow>(`SELECT * FROM deliveries WHERE id = $1`, [id]);
  return rows[0]!;
}

export async function attemptRows(db: Queryable, deliveryId: number) {
  const { rows } = await db.query<{ attempt: number; status_code: number | null; error: string | null; response_body: string | null; duration_ms: number }>(
    `SELECT * FROM delivery_attempts WHERE delivery_id = $1 ORDER BY id`,
    [deliveryId],
  );
  return rows;
}

/**
 * The database's "now" in milliseconds, as the delivery SQL sees it (database-clock.ts): the test
 * clock's time plus the real time that has passed since it was made or last advanced. Compare times
 * the database wrote (next_attempt_at, a disable's updated_at) with this, not with the test clock.
 */
export async function databaseNow(db: Queryable, clock: Clock): Promise<number> {
  const { rows } = await db.query<{ now: Date }>(`SELECT ${dbNow(1)} AS now`, [clockOffsetMs(clock)]);
  return rows[0]!.now.getTime();
}
