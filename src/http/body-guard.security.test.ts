import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { accessTokenFor, bearer, seedUser } from '../testing/fixtures.js';
import { JsonDepthScan, MAX_JSON_DEPTH } from './body-guard.js';
import { sendUnfinishedBody } from '../testing/unfinished-body.js';

// Issue 28 item 7: a token holder's body costs nothing before the tenant's limit is taken, and a
// body is refused by size, content coding and nesting depth before it is parsed (or read whole).

describe('bodies are refused before they are parsed', () => {
  let ctx: TestContext;
  let port: number;
  let auth: Record<string, string>;
  before(async () => {
    ctx = await createTestApp({ TENANT_EVENTS_BURST: '1', TENANT_EVENTS_PER_SECOND: '1', TENANT_REPLAYS_PER_MINUTE: '1' });
    await ctx.app.listen({ host: '127.0.0.1', port: 0 });
    port = (ctx.app.server.address() as AddressInfo).port;
    auth = bearer(await accessTokenFor(ctx, await seedUser(ctx.db, { role: 'admin' })));
  });
  after(() => ctx.close());

  test('a token holder\'s deeply nested body is 400 after its first 65 brackets, while the rest is still coming', async () => {
    const answer = await sendUnfinishedBody(port, 'POST', '/v1/MKT/webhooks', auth, `{"a":${'['.repeat(16 * 1024)}`, 60 * 1024);
    assert.equal(answer.status, 400);
    const problem = JSON.parse(answer.body) as { code: string; errors: unknown };
    assert.equal(problem.code, 'validation_failed');
    assert.deepEqual(problem.errors, [{ field: 'body', message: `is nested deeper than ${MAX_JSON_DEPTH} levels` }]);
  });

  test('a tenant past its event limit gets 429 while its body is still coming: the body is neither read nor parsed', async () => {
    // The one event of the burst is spent (on an invalid body: the limit counts requests, taken first).
    const spent = await ctx.app.inject({ method: 'POST', url: '/v1/MKT/events', headers: { 'content-type': 'application/json', ...auth }, payload: '{}' });
    assert.equal(spent.statusCode, 400);
    const answer = await sendUnfinishedBody(port, 'POST', '/v1/MKT/events', auth, `{"a":${'['.repeat(60)}`);
    assert.equal(answer.status, 429, answer.body);
    assert.equal(JSON.parse(answer.body).code, 'rate_limited');
  });

  test('replay takes its limit before the body too', async () => {
    const spent = await ctx.app.inject({ method: 'POST', url: '/v1/MKT/webhooks/none/replay', headers: { 'content-type': 'application/json', ...auth }, payload: '{}' });
    assert.notEqual(spent.statusCode, 429);
    const answer = await sendUnfinishedBody(port, 'POST', '/v1/MKT/webhooks/none/replay', auth, '{"status":', 1024);
    assert.equal(answer.status, 429, answer.body);
  });

  test('a body announced over the route\'s limit is 413 before a byte of it is read', async () => {
    const answer = await sendUnfinishedBody(port, 'POST', '/v1/MKT/webhooks', auth, '{', 65 * 1024);
    assert.equal(answer.status, 413);
    assert.equal(JSON.parse(answer.body).code, 'payload_too_large');
  });

  test('a chunked body is 413 once it passes the limit, not read to its end', async () => {
    const answer = await sendUnfinishedBody(port, 'POST', '/v1/MKT/webhooks', auth, `{"name":"${'x'.repeat(70 * 1024)}`, 'chunked');
    assert.equal(answer.status, 413);
  });

  test('a body in a content coding Plaza does not take (gzip, br, …) is 415, not malformed_json', async () => {
    const body = gzipSync(JSON.stringify({ username: 'u', password: 'p' }));
    for (const coding of ['gzip', 'br', 'x-unknown']) {
      const response = await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/login', headers: { 'content-type': 'application/json', 'content-encoding': coding }, payload: body });
      assert.equal(response.statusCode, 415, coding);
      assert.equal(response.json().code, 'unsupported_media_type');
      assert.match(response.json().detail, /Content-Encoding/);
    }
    // identity is the body as sent.
    const identity = await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/login', headers: { 'content-type': 'application/json', 'content-encoding': 'identity' }, payload: { username: 'u', password: 'p' } });
    assert.equal(identity.statusCode, 401);
  });

  test(`${MAX_JSON_DEPTH} levels are read; one more is refused; brackets in strings do not count`, async () => {
    const nested = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
    const login = (extra: string) =>
      ctx.app.inject({ method: 'POST', url: '/api/v2/auth/login', headers: { 'content-type': 'application/json' }, payload: `{"username":"u","password":"p","x":${extra}}` });
    // The top-level object is level 1.
    assert.equal((await login(nested(MAX_JSON_DEPTH - 1))).statusCode, 401);
    assert.equal((await login(nested(MAX_JSON_DEPTH))).json().errors[0].message, `is nested deeper than ${MAX_JSON_DEPTH} levels`);
    assert.equal((await login(JSON.stringify(`\\"${'[{'.repeat(100)}`))).statusCode, 401);
  });
});

describe('JsonDepthScan', () => {
  const scan = async (...chunks: string[]) => {
    const out: Buffer[] = [];
    for await (const chunk of Readable.from(chunks.map((c) => Buffer.from(c))).pipe(new JsonDepthScan())) out.push(chunk as Buffer);
    return Buffer.concat(out).toString();
  };

  test('passes a body through unchanged, whatever the chunks, multi-byte characters split included', async () => {
    const text = JSON.stringify({ a: ['é😀"[', { b: '\\' }], c: '{{{{' });
    assert.equal(await scan(text), text);
    // Byte by byte: every UTF-8 character split.
    const out: Buffer[] = [];
    for await (const chunk of Readable.from([...Buffer.from(text)].map((byte) => Buffer.from([byte]))).pipe(new JsonDepthScan())) out.push(chunk as Buffer);
    assert.equal(Buffer.concat(out).toString(), text);
  });

  test('an escaped quote split from its backslash across chunks keeps the string open', async () => {
    await assert.doesNotReject(scan('{"a":"\\', `"${'['.repeat(100)}"}`));
    await assert.rejects(scan('{"a":"x","b":', '['.repeat(MAX_JSON_DEPTH)), /nested deeper/);
  });
});
