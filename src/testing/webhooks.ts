import assert from 'node:assert/strict';
import type { Role } from '../accounts/accounts.repository.js';
import { accessTokenFor, bearer, seedConnection, seedMarketplace, seedUser } from './fixtures.js';
import type { TestContext } from './test-app.js';

/** Shared by the webhook tests: users of each role with their tokens, and API calls as a client makes them. */
export interface Actor {
  role: Role;
  sellerId: number;
  marketplaceCode: string | null;
  headers: { authorization: string };
}

export async function actor(ctx: TestContext, options: { role?: Role; sellerId: number; marketplaceCode?: string }): Promise<Actor> {
  const user = await seedUser(ctx.db, { role: options.role ?? 'seller', sellerId: options.sellerId, marketplaceCode: options.marketplaceCode });
  return { role: user.role, sellerId: user.sellerId, marketplaceCode: user.marketplaceCode, headers: bearer(await accessTokenFor(ctx, user)) };
}

export { seedConnection, seedMarketplace };

export function webhookBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { code: 'orders', name: 'Orders', topic: 'order/create', callback_url: 'https://receiver.example.com/hook', ...overrides };
}

type Payload = Record<string, unknown> | unknown[] | string;

export function call(ctx: TestContext, who: Actor | undefined, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: Payload) {
  return ctx.app.inject({ method, url, headers: who?.headers ?? {}, ...(payload === undefined ? {} : { payload }) });
}

export async function createWebhookAs(ctx: TestContext, who: Actor, marketplaceCode: string, overrides: Record<string, unknown> = {}) {
  const response = await call(ctx, who, 'POST', `/v1/${marketplaceCode}/webhooks`, webhookBody(overrides));
  assert.equal(response.statusCode, 201, response.body);
  return response.json() as Record<string, unknown>;
}

export function assertProblem(response: { statusCode: number; headers: Record<string, unknown>; json(): Record<string, unknown> }, status: number, code: string) {
  assert.equal(response.statusCode, status, JSON.stringify(response.json()));
  assert.match(String(response.headers['content-type']), /^application\/problem\+json/);
  const body = response.json();
  assert.equal(body.code, code);
  return body as { detail: string; errors?: { field: string; message: string }[] };
}
