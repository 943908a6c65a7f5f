import assert from 'node:assert/strict';
import { bearer, accessTokenFor, type SeededUser } from './fixtures.js';
import type { TestContext } from './test-app.js';
import { totpAt } from '../auth/mfa/totp.js';

/** Second-factor helpers for tests: the API called as a client would. */
export const verifyMfa = (ctx: TestContext, body: { mfa_token: unknown; code: unknown }, headers: Record<string, string> = {}) =>
  ctx.app.inject({ method: 'POST', url: '/api/v2/auth/mfa/verify', payload: body, headers });

/** The current code of a secret at the test clock's time (or `offsetSteps` steps away). */
export const codeOf = (ctx: TestContext, secret: string, offsetSteps = 0) => totpAt(secret, new Date(ctx.clock.now().getTime() + offsetSteps * 30_000));

/** Enrols and activates TOTP for a user through the API; returns the secret. Moves the clock one step on, so the next code is fresh. */
export async function enrolTotp(ctx: TestContext, user: SeededUser): Promise<string> {
  const headers = bearer(await accessTokenFor(ctx, user));
  const started = await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/mfa/totp', headers });
  assert.equal(started.statusCode, 201, started.body);
  const { secret } = started.json() as { secret: string };
  const activated = await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/mfa/totp/activate', headers, payload: { code: codeOf(ctx, secret) } });
  assert.equal(activated.statusCode, 204, activated.body);
  ctx.clock.advanceSeconds(30);
  return secret;
}

export async function recoveryCodesOf(ctx: TestContext, user: SeededUser): Promise<string[]> {
  const response = await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/mfa/recovery-codes', headers: bearer(await accessTokenFor(ctx, user)), payload: { password: user.password } });
  assert.equal(response.statusCode, 201, response.body);
  return (response.json() as { recovery_codes: string[] }).recovery_codes;
}
