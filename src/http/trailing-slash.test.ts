import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { accessTokenFor, bearer, seedConnection, seedUser } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';

const SAMPLE: Record<string, string> = { marketplace_code: 'mkt', code: 'orders-main', id: '1', event_id: '1', token: 'x' };

describe('a path with a trailing slash', () => {
  let ctx: TestContext;
  let headers: { authorization: string };
  before(async () => {
    ctx = await createTestApp();
    const user = await seedUser(ctx.db, { sellerId: 7 });
    await seedConnection(ctx.db, 7, 'mkt');
    headers = bearer(await accessTokenFor(ctx, user));
  });
  after(() => ctx.close());

  const assertSlashNotFound = (response: { statusCode: number; body: string; headers: Record<string, unknown>; json(): { code: string; detail: string } }, what: string) => {
    assert.equal(response.statusCode, 404, `${what}: ${response.body}`);
    if (String(response.headers['content-type']).startsWith('text/html')) {
      // The portal's pages answer in HTML, with the same words.
      assert.match(response.body, /do not end in a slash/, what);
      return;
    }
    assert.equal(response.json().code, 'not_found', what);
    assert.match(response.json().detail, /do not end in a slash/, what);
  };

  test('GET /v1/{marketplace_code}/webhooks/ is 404 saying why, not 400 about the code', async () => {
    assert.equal((await ctx.app.inject({ url: '/v1/mkt/webhooks', headers })).statusCode, 200);
    const response = await ctx.app.inject({ url: '/v1/mkt/webhooks/', headers });
    assertSlashNotFound(response, 'GET /v1/mkt/webhooks/');
    assert.equal(response.json().detail, "No route for GET /v1/mkt/webhooks/: Plaza's paths do not end in a slash (/v1/mkt/webhooks).");
  });

  test('every operation of the OpenAPI document, and the portal, answer the same, with or without a token', async () => {
    const document = (await ctx.app.inject({ url: '/openapi.json' })).json() as { paths: Record<string, Record<string, unknown>> };
    const cases: [string, string][] = [];
    for (const [path, operations] of Object.entries(document.paths)) {
      const url = path.replace(/\{(\w+)\}/g, (_, name: string) => SAMPLE[name] ?? 'x');
      for (const method of Object.keys(operations)) cases.push([method.toUpperCase(), `${url}/`]);
    }
    for (const url of ['/portal/', '/portal/login/', '/portal/mkt/webhooks/', '/portal/mkt/webhooks/orders-main/deliveries/', '/portal/mkt/events/']) cases.push(['GET', url]);
    assert.ok(cases.length > 30, `${cases.length} cases`);
    for (const [method, url] of cases) {
      for (const withToken of [true, false]) {
        const response = await ctx.app.inject({ method: method as 'GET', url: `${url}?limit=5`, headers: withToken ? headers : {}, ...(method === 'GET' || method === 'HEAD' || method === 'DELETE' ? {} : { payload: {} }) });
        if (method === 'HEAD') assert.equal(response.statusCode, 404, `HEAD ${url}`);
        else assertSlashNotFound(response, `${method} ${url} ${withToken ? 'with' : 'without'} a token`);
      }
    }
  });

  test('the API browser keeps its own /docs/', async () => {
    assert.equal((await ctx.app.inject({ url: '/docs/' })).statusCode, 200);
  });
});
