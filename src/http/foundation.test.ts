import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { accessTokenFor, bearer, seedUser } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';

describe('HTTP foundation', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestApp({ BODY_LIMIT_BYTES: '2048' });
  });
  after(() => ctx.close());

  const assertProblem = (response: { statusCode: number; headers: Record<string, unknown>; json(): Record<string, unknown> }, status: number, code: string) => {
    assert.equal(response.statusCode, status);
    assert.match(String(response.headers['content-type']), /^application\/problem\+json/);
    const body = response.json();
    assert.equal(body.status, status);
    assert.equal(body.code, code);
    assert.equal(body.type, `urn:plaza:problem:${code}`);
    assert.equal(typeof body.title, 'string');
    assert.equal(typeof body.detail, 'string');
    assert.equal(body.request_id, response.headers['x-request-id']);
    return body;
  };

  test('healthz and readyz answer 200', async () => {
    assert.deepEqual((await ctx.app.inject({ url: '/healthz' })).json(), { status: 'ok' });
    assert.deepEqual((await ctx.app.inject({ url: '/readyz' })).json(), { status: 'ready' });
  });

  test('an unknown route is a 404 problem', async () => {
    assertProblem(await ctx.app.inject({ url: '/nope' }), 404, 'not_found');
  });

  test('malformed JSON is a 400 problem', async () => {
    const response = await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/login', headers: { 'content-type': 'application/json' }, payload: '{"username": ' });
    assertProblem(response, 400, 'malformed_json');
  });

  test('valid JSON with a __proto__ key (or constructor.prototype) is refused as such, not as broken JSON', async () => {
    for (const payload of ['{"username": "u", "password": "p", "__proto__": {"admin": true}}', '{"username": {"constructor": {"prototype": {}}}, "password": "p"}']) {
      const response = await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/login', headers: { 'content-type': 'application/json' }, payload });
      assertProblem(response, 400, 'validation_failed');
      assert.equal(response.json().errors[0].field, 'body');
      assert.match(response.json().errors[0].message, /__proto__/);
    }
  });

  test('a body over the limit is a 413 problem', async () => {
    const response = await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/login', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ username: 'x'.repeat(32 * 1024), password: 'y' }) });
    assertProblem(response, 413, 'payload_too_large');
  });

  test('a body that is not JSON is a 415 problem', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      const response = await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/login', headers: { 'content-type': type }, payload: 'username=a&password=b' });
      assertProblem(response, 415, 'unsupported_media_type');
    }
  });

  test('validation errors list each bad field', async () => {
    const response = await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/login', payload: { username: 5 } });
    const body = assertProblem(response, 400, 'validation_failed');
    const fields = (body.errors as { field: string }[]).map((error) => error.field).sort();
    assert.deepEqual(fields, ['body.password', 'body.username']);
  });

  test('a body nested deeper than the limit is a 400 problem, not a stack overflow', async () => {
    const deep = `${'['.repeat(100)}${']'.repeat(100)}`;
    // Event intake reads bodies only from a caller with a token (an anonymous one gets 401 first).
    const token = await accessTokenFor(ctx, await seedUser(ctx.db, { role: 'admin' }));
    for (const url of ['/api/v2/auth/login', '/v1/any/events']) {
      const response = await ctx.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', ...bearer(token) }, payload: `{"username":${deep}}` });
      const body = assertProblem(response, 400, 'validation_failed');
      assert.deepEqual(body.errors, [{ field: 'body', message: 'is nested deeper than 64 levels' }]);
    }
    const fine = { a: { b: { c: [[[{ d: 1 }]]] } } };
    assert.equal((await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/login', payload: { username: 'x', password: 'y', fine } })).statusCode, 401);
  });

  test('a sane X-Request-Id is echoed, an insane one replaced', async () => {
    assert.equal((await ctx.app.inject({ url: '/healthz', headers: { 'x-request-id': 'abc-123' } })).headers['x-request-id'], 'abc-123');
    const replaced = (await ctx.app.inject({ url: '/healthz', headers: { 'x-request-id': 'a b\u0001' } })).headers['x-request-id'];
    assert.match(String(replaced), /^[0-9a-f-]{36}$/);
  });

  test('the OpenAPI 3.1 document and the docs page are served', async () => {
    const document = (await ctx.app.inject({ url: '/openapi.json' })).json();
    assert.equal(document.openapi, '3.1.0');
    assert.ok(document.paths['/healthz']);
    const docs = await ctx.app.inject({ url: '/docs' });
    assert.ok([200, 302].includes(docs.statusCode));
  });
});
