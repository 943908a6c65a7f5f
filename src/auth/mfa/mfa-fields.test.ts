import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestContext } from '../../testing/test-app.js';
import { MFA_CODE_MAX_LENGTH, MFA_TOKEN_MAX_LENGTH } from './mfa-fields.js';

// Issue 35: the code's and the mfa_token's bounds were written in the API's routes and again in the portal's forms.
describe('the second factor\'s fields have the same upper bounds in the API and in the portal sign-in', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestApp();
  });
  after(() => ctx.close());

  const statuses = async (fields: { mfa_token: string; code: string }) => [
    (await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/mfa/verify', payload: fields })).statusCode,
    (await ctx.app.inject({ method: 'POST', url: '/portal/login/mfa', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: new URLSearchParams(fields).toString() })).statusCode,
  ];
  const token = (length: number) => `mfa_${'t'.repeat(length - 4)}`;
  const code = (length: number) => '1'.repeat(length);

  test('the longest code and token are read (a token nobody was given: 401 from both), one character more is invalid (400) in both', async () => {
    assert.deepEqual(await statuses({ mfa_token: token(MFA_TOKEN_MAX_LENGTH), code: code(MFA_CODE_MAX_LENGTH) }), [401, 401]);
    assert.deepEqual(await statuses({ mfa_token: token(MFA_TOKEN_MAX_LENGTH + 1), code: code(6) }), [400, 400]);
    assert.deepEqual(await statuses({ mfa_token: token(40), code: code(MFA_CODE_MAX_LENGTH + 1) }), [400, 400]);
  });
});
