import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../config.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { accessTokenFor, bearer, seedUser } from '../testing/fixtures.js';
import { parseCorsOrigins } from './cors.js';

// Issue 28 item 16: public documents to every origin, the API to the origins of CORS_ORIGINS.

const APP = 'https://app.example.com';
const OTHER = 'https://evil.example.net';

describe('CORS', () => {
  let ctx: TestContext;
  let seller: Record<string, string>;
  before(async () => {
    ctx = await createTestApp({ CORS_ORIGINS: `${APP}, http://localhost:3000` });
    seller = bearer(await accessTokenFor(ctx, await seedUser(ctx.db)));
  });
  after(() => ctx.close());

  const preflight = (url: string, origin: string, method = 'GET') =>
    ctx.app.inject({ method: 'OPTIONS', url, headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'authorization, content-type' } });

  test('/.well-known/jwks.json and /openapi.json answer every origin, preflight included', async () => {
    for (const url of ['/.well-known/jwks.json', '/openapi.json']) {
      const answer = await ctx.app.inject({ url, headers: { origin: OTHER } });
      assert.equal(answer.statusCode, 200, url);
      assert.equal(answer.headers['access-control-allow-origin'], '*', url);
      assert.equal(answer.headers['access-control-allow-credentials'], undefined);
      const before = await preflight(url, OTHER);
      assert.equal(before.statusCode, 204, url);
      assert.equal(before.headers['access-control-allow-origin'], '*');
      assert.match(String(before.headers['access-control-allow-methods']), /GET/);
    }
  });

  test('the API answers a configured origin, with its preflight; not credentials', async () => {
    const before = await preflight('/v1/MKT/webhooks', APP, 'POST');
    assert.equal(before.statusCode, 204, before.body);
    assert.equal(before.headers['access-control-allow-origin'], APP);
    assert.deepEqual(String(before.headers['access-control-allow-methods']).split(', ').filter((m) => m !== 'HEAD'), ['GET', 'POST']);
    assert.match(String(before.headers['access-control-allow-headers']), /Authorization/);
    assert.match(String(before.headers['access-control-allow-headers']), /Content-Type/);
    assert.match(String(before.headers['access-control-allow-headers']), /\bDPoP\b/, 'a browser client sends DPoP proofs');
    assert.ok(Number(before.headers['access-control-max-age']) > 0);
    assert.match(String(before.headers.vary), /Origin/);
    assert.equal(before.headers['access-control-allow-credentials'], undefined);

    const answer = await ctx.app.inject({ url: '/api/v2/products', headers: { origin: 'http://localhost:3000', ...seller } });
    assert.equal(answer.headers['access-control-allow-origin'], 'http://localhost:3000');
    assert.match(String(answer.headers['access-control-expose-headers']), /X-Request-Id/);
    assert.match(String(answer.headers.vary), /Origin/);
    // Errors carry it too: a page must be able to read a 401 or a 429.
    const refused = await ctx.app.inject({ url: '/api/v2/products', headers: { origin: APP } });
    assert.equal(refused.statusCode, 401);
    assert.equal(refused.headers['access-control-allow-origin'], APP);
  });

  test('another origin gets no CORS header from the API; its preflight is answered as any OPTIONS (405)', async () => {
    const answer = await ctx.app.inject({ url: '/api/v2/products', headers: { origin: OTHER, ...seller } });
    assert.equal(answer.headers['access-control-allow-origin'], undefined);
    const before = await preflight('/v1/MKT/webhooks', OTHER, 'POST');
    assert.equal(before.statusCode, 405);
    assert.equal(before.headers['access-control-allow-origin'], undefined);
    // A preflight to a path that does not exist is 404 for every origin.
    assert.equal((await preflight('/v1/nothing/here/at/all', APP)).statusCode, 404);
  });

  test('the portal is not CORS-enabled, even for a configured origin', async () => {
    const answer = await ctx.app.inject({ url: '/portal/login', headers: { origin: APP } });
    assert.equal(answer.headers['access-control-allow-origin'], undefined);
    assert.notEqual((await preflight('/portal/login', APP, 'POST')).statusCode, 204);
  });

  test('by default (CORS_ORIGINS empty) no origin is answered by the API', async () => {
    const plain = await createTestApp();
    try {
      const answer = await plain.app.inject({ url: '/healthz', headers: { origin: APP } });
      assert.equal(answer.headers['access-control-allow-origin'], undefined);
      assert.equal((await plain.app.inject({ url: '/openapi.json', headers: { origin: APP } })).headers['access-control-allow-origin'], '*');
    } finally {
      await plain.close();
    }
  });

  test('CORS_ORIGINS takes origins only', () => {
    assert.deepEqual([...parseCorsOrigins(' https://a.example.com ,http://localhost:8080')], ['https://a.example.com', 'http://localhost:8080']);
    for (const bad of ['*', 'https://a.example.com/', 'https://a.example.com/path', 'a.example.com', 'ftp://a.example.com', 'https://A.example.com']) {
      assert.throws(() => parseCorsOrigins(bad), /not an origin/, bad);
    }
    assert.throws(() => loadConfig({ CORS_ORIGINS: 'https://a.example.com/' }), /CORS_ORIGINS/);
  });
});
