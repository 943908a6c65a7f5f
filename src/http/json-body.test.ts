import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { seedWebhook } from '../testing/deliveries.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { accessTokenFor, bearer, seedUser } from '../testing/fixtures.js';

// Issue 28 item 14: clients configured to send Content-Type: application/json on every call.

describe('an empty body with Content-Type: application/json is answered as without the header', () => {
  let ctx: TestContext;
  let admin: Record<string, string>;
  before(async () => {
    ctx = await createTestApp();
    admin = bearer(await accessTokenFor(ctx, await seedUser(ctx.db, { role: 'admin' })));
  });
  after(() => ctx.close());

  const JSON_TYPE = { 'content-type': 'application/json' };
  const withLength = { 'content-type': 'application/json; charset=utf-8', 'content-length': '0' };

  test('webhook delete, rotate-secret and test', async () => {
    for (const headers of [JSON_TYPE, withLength, {}]) {
      const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: 'http://127.0.0.1:9/never', marketplaceCode: 'MKT' });
      const base = `/v1/MKT/webhooks/${webhook.code}`;
      const rotate = await ctx.app.inject({ method: 'POST', url: `${base}/rotate-secret`, headers: { ...admin, ...headers } });
      assert.equal(rotate.statusCode, 200, rotate.body);
      const sent = await ctx.app.inject({ method: 'POST', url: `${base}/test`, headers: { ...admin, ...headers } });
      assert.equal(sent.statusCode, 200, sent.body);
      const deleted = await ctx.app.inject({ method: 'DELETE', url: base, headers: { ...admin, ...headers } });
      assert.equal(deleted.statusCode, 204, deleted.body);
    }
  });

  test('logout and revoke-all', async () => {
    for (const headers of [JSON_TYPE, withLength, {}]) {
      const user = bearer(await accessTokenFor(ctx, await seedUser(ctx.db)));
      assert.equal((await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/logout', headers: { ...user, ...headers } })).statusCode, 204);
      assert.equal((await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/revoke-all', headers: { ...user, ...headers } })).statusCode, 204);
    }
  });

  test('a route that needs a body names the missing body, as without the header; a body of blanks is still malformed', async () => {
    const empty = await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/login', headers: JSON_TYPE });
    const none = await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/login' });
    assert.equal(empty.statusCode, 400);
    assert.equal(empty.json().code, 'validation_failed');
    assert.deepEqual(empty.json().errors, none.json().errors);
    const blanks = await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/login', headers: JSON_TYPE, payload: '  ' });
    assert.equal(blanks.json().code, 'malformed_json');
  });
});
