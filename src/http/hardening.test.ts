import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { seedWebhook } from '../testing/deliveries.js';
import { accessTokenFor, bearer, seedUser } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';

describe('method not allowed and response hardening headers', () => {
  let ctx: TestContext;
  let headers: { authorization: string };
  before(async () => {
    ctx = await createTestApp();
    headers = bearer(await accessTokenFor(ctx, await seedUser(ctx.db, { role: 'admin' })));
  });
  after(() => ctx.close());

  test('a method a path does not support is 405 method_not_allowed with Allow', async () => {
    const cases: [string, string, string][] = [
      ['DELETE', '/v1/mkt/events', 'POST'],
      ['PUT', '/v1/mkt/webhooks/some-code', 'DELETE, GET, HEAD, PATCH'],
      ['GET', '/api/v2/auth/login', 'POST'],
      ['POST', '/healthz', 'GET, HEAD'],
    ];
    for (const [method, url, allow] of cases) {
      const response = await ctx.app.inject({ method: method as 'GET', url, headers });
      assert.equal(response.statusCode, 405, `${method} ${url}`);
      assert.equal(response.headers.allow, allow, `${method} ${url}`);
      assert.equal(response.json().code, 'method_not_allowed');
    }
  });

  test('a path that does not exist stays 404, whatever the method', async () => {
    for (const method of ['GET', 'POST', 'DELETE'] as const) {
      const response = await ctx.app.inject({ method, url: '/v1/mkt/no-such-thing/at/all' });
      assert.equal(response.statusCode, 404);
      assert.equal(response.headers.allow, undefined);
    }
    // A trailing slash is another path (it was a 405 that allowed the very method it refused);
    // src/http/trailing-slash.test.ts covers every route.
    for (const url of ['/portal/', '/healthz/']) {
      const response = await ctx.app.inject({ method: 'GET', url });
      assert.equal(response.statusCode, 404, url);
      assert.equal(response.headers.allow, undefined, url);
    }
  });

  test('every answer says nosniff; answers with webhook headers are no-store', async () => {
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: 'https://erp.example.com/hook', headers: { authorization: 'Bearer receiver-credential' } });
    const responses = [
      await ctx.app.inject({ url: `/v1/${webhook.marketplaceCode}/webhooks/${webhook.code}`, headers }),
      await ctx.app.inject({ url: `/v1/${webhook.marketplaceCode}/webhooks`, headers }),
      await ctx.app.inject({ method: 'PATCH', url: `/v1/${webhook.marketplaceCode}/webhooks/${webhook.code}`, headers, payload: { name: 'renamed' } }),
    ];
    for (const response of responses) {
      assert.equal(response.statusCode, 200, response.body);
      assert.match(response.body, /receiver-credential/);
      assert.equal(response.headers['cache-control'], 'no-store');
      assert.equal(response.headers['x-content-type-options'], 'nosniff');
    }
    for (const url of ['/healthz', '/no/such/path', '/openapi.json']) {
      assert.equal((await ctx.app.inject({ url })).headers['x-content-type-options'], 'nosniff', url);
    }
  });
});
