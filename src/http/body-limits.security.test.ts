import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { accessTokenFor, bearer, seedUser } from '../testing/fixtures.js';
import { sendUnfinishedBody } from '../testing/unfinished-body.js';

/** The first 16 KiB of a body announced as 1 MiB: a server that reads the body before answering never answers, one that authenticates first does. */
const firstBytes = `{"a":${'['.repeat(16 * 1024 - 5)}`;

// Issue 13 item 3: authenticate before reading bodies, and a body limit per route.

describe('authentication comes before the body', () => {
  let ctx: TestContext;
  let port: number;
  before(async () => {
    ctx = await createTestApp();
    await ctx.app.listen({ host: '127.0.0.1', port: 0 });
    port = (ctx.app.server.address() as AddressInfo).port;
  });
  after(() => ctx.close());

  test('POST /v1/{mkt}/events without a token: 401 while a deeply nested body is still arriving (nothing read or parsed)', async () => {
    const answer = await sendUnfinishedBody(port, 'POST', '/v1/MKT/events', {}, firstBytes);
    assert.equal(answer.status, 401);
    assert.equal(JSON.parse(answer.body).code, 'unauthorized');
  });

  test('every route that requires a token answers 401 before reading a body', async () => {
    const openapi = (await ctx.app.inject({ url: '/openapi.json' })).json() as { paths: Record<string, Record<string, { security?: unknown[] }>> };
    const routes = Object.entries(openapi.paths).flatMap(([path, operations]) =>
      Object.entries(operations)
        .filter(([method, operation]) => ['post', 'put', 'patch', 'delete'].includes(method) && (operation.security?.length ?? 0) > 0)
        .map(([method]) => ({ method: method.toUpperCase(), path: path.replace(/\{[^}]+\}/g, 'x') })),
    );
    assert.ok(routes.length >= 8, `found only ${routes.length} authenticated routes with a body`);
    for (const route of routes) {
      const answer = await sendUnfinishedBody(port, route.method, route.path, bearer('not.a.token'), firstBytes);
      assert.equal(answer.status, 401, `${route.method} ${route.path}`);
    }
  });

  test('headers too large are refused by the HTTP parser with a 431 problem that carries its request id, as every answer does', async () => {
    const answer = await new Promise<{ status: number; requestId: unknown; body: string }>((resolve, reject) => {
      const req = request({ port, path: '/api/v2/products', headers: { authorization: `Bearer ${'x'.repeat(20_000)}` } }, (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, requestId: res.headers['x-request-id'], body }));
      });
      req.on('error', reject);
      req.end();
    });
    assert.equal(answer.status, 431);
    const problem = JSON.parse(answer.body) as { code: string; request_id: string };
    assert.equal(problem.code, 'headers_too_large');
    assert.equal(answer.requestId, problem.request_id);
  });
});

describe('body limits per route', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestApp();
  });
  after(() => ctx.close());

  const post = (url: string, payload: unknown, headers: Record<string, string> = {}) =>
    ctx.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', ...headers }, payload: JSON.stringify(payload) });

  test('login, refresh and password change: over 32 KiB is 413, a body that fits is read', async () => {
    assert.equal((await post('/api/v2/auth/login', { username: 'u', password: 'p'.repeat(33 * 1024) })).statusCode, 413);
    assert.equal((await post('/api/v2/auth/refresh', { refresh_token: 't'.repeat(33 * 1024) })).statusCode, 413);
    // 3 KiB fits the limit: the validation answers (the password is over its 1024 characters).
    const fits = await post('/api/v2/auth/login', { username: 'u', password: 'p'.repeat(3 * 1024) });
    assert.equal(fits.statusCode, 400);
    assert.equal(fits.json().code, 'validation_failed');
  });

  test('BODY_LIMIT_BYTES below those limits lowers them too, login and password change included', async () => {
    const small = await createTestApp({ BODY_LIMIT_BYTES: '1024' });
    try {
      const login = await small.app.inject({ method: 'POST', url: '/api/v2/auth/login', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ username: 'u', password: 'p'.repeat(2048) }) });
      assert.equal(login.statusCode, 413);
    } finally {
      await small.close();
    }
  });

  test('the longest valid passwords are read when a client escapes every non-ASCII character (6 bytes each)', async () => {
    const escaped = (payload: unknown) => JSON.stringify(payload).replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
    const send = (url: string, payload: unknown, headers: Record<string, string> = {}) =>
      ctx.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', ...headers }, payload: escaped(payload) });
    // An emoji is two UTF-16 units, escaped as two \uXXXX: 12 bytes a character, 24 KiB for two passwords.
    const user = await seedUser(ctx.db, { password: '😀'.repeat(1024) });
    assert.ok(escaped({ current_password: user.password, new_password: user.password }).length > 24 * 1024, 'two passwords take over 24 KiB');
    const login = await send('/api/v2/auth/login', { username: user.username, password: user.password });
    assert.equal(login.statusCode, 200, login.body);
    // 1 024 different emoji, in no order the strength rule sees as a sequence: a new password it accepts.
    const newPassword = Array.from({ length: 1024 }, (_, i) => String.fromCodePoint(0x1f300 + ((i * 7) % 1024))).join('');
    const change = await send('/api/v2/auth/password', { current_password: user.password, new_password: newPassword }, { authorization: `Bearer ${login.json().token}` });
    assert.equal(change.statusCode, 204, change.body);
  });

  test('event intake keeps BODY_LIMIT_BYTES (1 MiB): a 512 KiB event is read, other routes stop at 64 KiB', async () => {
    const user = await seedUser(ctx.db, { role: 'admin' });
    const auth = bearer(await accessTokenFor(ctx, user));
    const big = { filler: 'x'.repeat(512 * 1024) };
    const event = await post('/v1/MKT/events', big, auth);
    assert.notEqual(event.statusCode, 413);
    assert.equal(event.json().code, 'validation_failed');
    assert.equal((await post('/v1/MKT/events', { filler: 'x'.repeat(1024 * 1024) }, auth)).statusCode, 413);
    assert.equal((await post('/v1/MKT/webhooks', { filler: 'x'.repeat(65 * 1024) }, auth)).statusCode, 413);
  });
});

// Issue 35: the portal's forms had a limit of their own, 64 KiB, whatever BODY_LIMIT_BYTES said.
describe('the portal reads forms within the limits the API reads JSON', () => {
  /** A body of exactly `bytes` bytes: `name=xxx…`. */
  const bodyOf = (name: string, bytes: number) => `${name}=${'x'.repeat(bytes - name.length - 1)}`;
  const send = (ctx: TestContext, url: string, type: 'form' | 'json', bytes: number) =>
    ctx.app.inject({
      method: 'POST',
      url,
      headers: { 'content-type': type === 'form' ? 'application/x-www-form-urlencoded' : 'application/json' },
      payload: type === 'form' ? bodyOf('username', bytes) : `{"username":"${'x'.repeat(bytes - 15)}"}`,
    });
  // The API's login (JSON), the portal's sign-in form, and a portal form of a signed-in page.
  const routes = [['/api/v2/auth/login', 'json'], ['/portal/login', 'form'], ['/portal/logout', 'form']] as const;

  test('BODY_LIMIT_BYTES set low: a body of exactly that size is read on each of them, one byte more is 413 on each', async () => {
    const small = await createTestApp({ BODY_LIMIT_BYTES: '1024' });
    try {
      for (const [url, type] of routes) {
        assert.notEqual((await send(small, url, type, 1024)).statusCode, 413, `${url}: 1024 bytes`);
        assert.equal((await send(small, url, type, 1025)).statusCode, 413, `${url}: 1025 bytes`);
      }
    } finally {
      await small.close();
    }
  });

  test('by default: sign-in stops at 32 KiB in the API and in the portal, the portal\'s other forms at 64 KiB as the API\'s other routes', async () => {
    const ctx = await createTestApp();
    try {
      const signIn = [...routes.slice(0, 2), ['/portal/link', 'form'], ['/portal/login/mfa', 'form'], ['/portal/login/enrol', 'form'], ['/portal/login/passkey/options', 'json'], ['/portal/login/passkey', 'json']] as const;
      for (const [url, type] of signIn) {
        assert.notEqual((await send(ctx, url, type, 32 * 1024)).statusCode, 413, url);
        assert.equal((await send(ctx, url, type, 32 * 1024 + 1)).statusCode, 413, url);
      }
      assert.notEqual((await send(ctx, '/portal/logout', 'form', 64 * 1024)).statusCode, 413);
      assert.equal((await send(ctx, '/portal/logout', 'form', 64 * 1024 + 1)).statusCode, 413);
    } finally {
      await ctx.close();
    }
  });
});
