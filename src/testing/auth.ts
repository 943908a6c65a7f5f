import assert from 'node:assert/strict';
import type { TestContext } from './test-app.js';
import { SESSION_ENDED } from '../auth/authenticate.js';
import type { TokenPair } from '../auth/token-pair.js';

/** Helpers for the auth tests: the API called exactly as a client would. */
export function postLogin(ctx: TestContext, body: unknown, headers: Record<string, string> = {}) {
  return ctx.app.inject({ method: 'POST', url: '/api/v2/auth/login', payload: body as object, headers });
}

/** A login with this name and password from `remoteAddress`: what the login limits count by. */
export function loginFrom(ctx: TestContext, username: string, password: string, remoteAddress: string, headers: Record<string, string> = {}) {
  return ctx.app.inject({ method: 'POST', url: '/api/v2/auth/login', payload: { username, password }, remoteAddress, headers });
}

export async function loginOk(ctx: TestContext, user: { username: string; password: string }, headers: Record<string, string> = {}): Promise<TokenPair> {
  const response = await postLogin(ctx, { username: user.username, password: user.password }, headers);
  assert.equal(response.statusCode, 200, response.body);
  return response.json() as TokenPair;
}

export function postRefresh(ctx: TestContext, refreshToken: unknown, headers: Record<string, string> = {}) {
  return ctx.app.inject({ method: 'POST', url: '/api/v2/auth/refresh', payload: { refresh_token: refreshToken }, headers });
}

export function getProducts(ctx: TestContext, accessToken: string, query = '') {
  return ctx.app.inject({ method: 'GET', url: `/api/v2/products${query}`, headers: { authorization: `Bearer ${accessToken}` } });
}

export interface TokenRow {
  id: number;
  session_id: string;
  parent_id: number | null;
  revoked_reason: string | null;
  revoked_at: Date | null;
}

export async function refreshTokensOf(ctx: TestContext, userId: number): Promise<TokenRow[]> {
  const { rows } = await ctx.db.query<TokenRow>(
    `SELECT id, session_id, parent_id, revoked_reason, revoked_at FROM refresh_tokens WHERE user_id = $1 ORDER BY id`,
    [userId],
  );
  return rows;
}

export async function authEventsOf(ctx: TestContext, userId: number): Promise<{ type: string; detail: Record<string, unknown> | null }[]> {
  const { rows } = await ctx.db.query<{ type: string; detail: Record<string, unknown> | null }>(
    `SELECT type, detail FROM auth_events WHERE user_id = $1 ORDER BY id`,
    [userId],
  );
  return rows;
}

/** The claims of a JWT, unverified (tests inspect what the service issued). */
export function claimsOf(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as Record<string, unknown>;
}

/** A Bearer token refused because its session ended (ACCESS_TOKEN_REVOCATION=session). */
export function assertSessionEnded(response: { statusCode: number; body: string; headers: Record<string, unknown>; json(): { code: string; detail: string } }): void {
  assert.equal(response.statusCode, 401, response.body);
  assert.equal(response.json().code, 'unauthorized');
  assert.equal(response.json().detail, SESSION_ENDED);
  assert.equal(response.headers['www-authenticate'], 'Bearer error="invalid_token"');
}
