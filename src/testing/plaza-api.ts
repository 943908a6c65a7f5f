import type { Role } from '../accounts/accounts.repository.js';
import type { Queryable } from '../db/database.js';
import { seedConnection, seedUser, type SeededUser } from './fixtures.js';

export interface ApiResponse {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
}

export interface CallOptions {
  token?: string;
  body?: unknown;
  /** A raw body sent as is (invalid JSON, huge strings); with contentType. */
  rawBody?: string | Buffer;
  contentType?: string;
  headers?: Record<string, string>;
  timeoutMs?: number;
}

/** One HTTP call as a client makes it; network errors are thrown, statuses returned. */
export async function call(baseUrl: string, method: string, path: string, options: CallOptions = {}): Promise<ApiResponse> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  let body: string | Buffer | undefined;
  if (options.rawBody !== undefined) {
    body = options.rawBody;
    if (options.contentType) headers['content-type'] = options.contentType;
  } else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] = options.contentType ?? 'application/json';
  }
  const response = await fetch(`${baseUrl}${path}`, { method, headers, body, signal: AbortSignal.timeout(options.timeoutMs ?? 30_000) });
  const text = await response.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

export interface Tokens {
  token: string;
  refresh_token: string;
}

export async function login(baseUrl: string, username: string, password: string, ip?: string): Promise<Tokens> {
  const response = await call(baseUrl, 'POST', '/api/v2/auth/login', { body: { username, password }, headers: ip ? { 'x-forwarded-for': ip } : {} });
  if (response.status !== 200) throw new Error(`login of ${username} answered ${response.status}: ${response.text}`);
  return response.json as Tokens;
}

/** Tenants written straight to the database (the CLI does the same through the same functions). */
export async function seedTenant(db: Queryable, options: { sellerId: number; marketplaceCode: string; role?: Role; username?: string }): Promise<SeededUser & { connectionId: number }> {
  const connectionId = await seedConnection(db, options.sellerId, options.marketplaceCode);
  const user = await seedUser(db, {
    sellerId: options.sellerId,
    role: options.role ?? 'seller',
    ...(options.role === 'marketplace' ? { marketplaceCode: options.marketplaceCode } : {}),
    ...(options.username ? { username: options.username } : {}),
  });
  return { ...user, connectionId };
}

export async function createWebhook(baseUrl: string, token: string, marketplaceCode: string, webhook: { code: string; topic: string; callback_url: string; seller_id?: string; name?: string; headers?: Record<string, string>; send_traceparent?: boolean }): Promise<ApiResponse> {
  const response = await call(baseUrl, 'POST', `/v1/${marketplaceCode}/webhooks`, { token, body: { name: webhook.code, ...webhook } });
  if (response.status !== 201) throw new Error(`create webhook ${webhook.code} answered ${response.status}: ${response.text}`);
  return response;
}

/** An order/update event; `sequence` travels in the order so that receivers can check per-entity order. */
export function orderEvent(sellerId: number, reference: string, sequence: number, eventId?: string): Record<string, unknown> {
  return {
    ...(eventId ? { event_id: eventId } : {}),
    topic: 'order/update',
    seller_id: sellerId,
    entity_id: reference,
    order: { id: sequence, reference_order: reference, status: 'APRO', sequence },
    state_from: null,
    state_to: 'APRO',
    author: 'reliability-suite',
  };
}

export function sendEvent(baseUrl: string, token: string, marketplaceCode: string, event: Record<string, unknown>, timeoutMs?: number): Promise<ApiResponse> {
  return call(baseUrl, 'POST', `/v1/${marketplaceCode}/events`, { token, body: event, ...(timeoutMs ? { timeoutMs } : {}) });
}

/** Runs `work` over items with at most `concurrency` at once, in order of start. */
export async function inParallel<T, R>(items: readonly T[], concurrency: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const runners = Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]!, index);
    }
  });
  await Promise.all(runners);
  return results;
}

/** Scale of the load tests: PLAZA_RELIABILITY_SCALE=0.1 runs a tenth of the numbers. */
export function scaled(n: number): number {
  const scale = Number(process.env.PLAZA_RELIABILITY_SCALE ?? '1');
  return Math.max(1, Math.round(n * (Number.isFinite(scale) && scale > 0 ? scale : 1)));
}

/** Counts of deliveries by status, for assertions and figures. */
export async function deliveryCounts(db: Queryable): Promise<Record<string, number>> {
  const { rows } = await db.query<{ status: string; n: string }>(`SELECT status, count(*)::text AS n FROM deliveries GROUP BY status`);
  return Object.fromEntries(rows.map((row) => [row.status, Number(row.n)]));
}

/** A line the figures of docs/reliability.md are copied from. */
export function report(test: string, figures: Record<string, unknown>): void {
  console.log(`[reliability] ${test}: ${JSON.stringify(figures)}`);
}
