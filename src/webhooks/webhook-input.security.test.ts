import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { actor, assertProblem, call, createWebhookAs, seedConnection, webhookBody, type Actor } from '../testing/webhooks.js';

/** Hostile input: header injection, headers that would override the service's own, callbacks aimed inside the network. */
describe('webhook input hardening', () => {
  let ctx: TestContext;
  let seller: Actor;

  before(async () => {
    // No allowed networks: the production default.
    ctx = await createTestApp({ WEBHOOK_ALLOWED_NETWORKS: '' });
    await seedConnection(ctx.db, 1, 'mlb');
    seller = await actor(ctx, { sellerId: 1 });
    await createWebhookAs(ctx, seller, 'mlb', { code: 'existing' });
  });
  after(() => ctx.close());

  const refusedHeaders = async (headers: Record<string, unknown>, expectedField?: string) => {
    const created = assertProblem(await call(ctx, seller, 'POST', '/v1/mlb/webhooks', webhookBody({ code: 'hdr', headers })), 400, 'validation_failed');
    const updated = assertProblem(await call(ctx, seller, 'PATCH', '/v1/mlb/webhooks/existing', { headers }), 400, 'validation_failed');
    for (const body of [created, updated]) {
      assert.ok(body.errors!.length > 0 && body.errors!.every((e) => e.field.startsWith('body.headers')), JSON.stringify(body.errors));
      if (expectedField) assert.ok(body.errors!.some((e) => e.field === expectedField), `${expectedField} in ${JSON.stringify(body.errors)}`);
    }
    return created;
  };

  test('headers the service sets itself are refused, naming the header, whatever the case', async () => {
    const reserved = ['host', 'Content-Length', 'content-type', 'Transfer-Encoding', 'connection', 'TE', 'trailer', 'upgrade', 'keep-alive',
      'proxy-authorization', 'Proxy-Connection', 'user-agent', 'webhook-id', 'Webhook-Timestamp', 'WEBHOOK-SIGNATURE'];
    for (const name of reserved) {
      const body = await refusedHeaders({ 'X-Fine': 'ok', [name]: 'x' }, `body.headers.${name}`);
      assert.ok(body.detail.includes(name), body.detail);
    }
  });

  test('CR, LF and NUL in values (header injection) and bad names are refused', async () => {
    await refusedHeaders({ 'X-Inject': 'a\r\nX-Evil: 1' }, 'body.headers.X-Inject');
    await refusedHeaders({ 'X-Inject': 'a\nb' }, 'body.headers.X-Inject');
    await refusedHeaders({ 'X-Inject': 'a\rb' }, 'body.headers.X-Inject');
    await refusedHeaders({ 'X-Nul': 'a\u0000b' }, 'body.headers.X-Nul');
    await refusedHeaders({ 'X-Bell': 'a\u0007' }, 'body.headers.X-Bell');
    for (const name of ['X Space', 'X:Colon', 'X-Inj\r\nHost', '', 'X-Ü', '(x)', 'x/y']) await refusedHeaders({ [name]: 'v' });
    await refusedHeaders({ 'X-Num': 5 });
    await refusedHeaders({ 'X-Dup': 'a', 'x-dup': 'b' });
    assertProblem(await call(ctx, seller, 'POST', '/v1/mlb/webhooks', webhookBody({ code: 'hdr', headers: ['X-A: 1'] })), 400, 'validation_failed');
  });

  test('at most 20 headers and 8 KiB in all', async () => {
    const many = (n: number, size = 1) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`X-H${i}`, 'v'.repeat(size)]));
    await createWebhookAs(ctx, seller, 'mlb', { code: 'twenty', headers: many(20) });
    await refusedHeaders(many(21), 'body.headers');
    await createWebhookAs(ctx, seller, 'mlb', { code: 'big', headers: { 'X-Big': 'v'.repeat(8192 - 5) } });
    await refusedHeaders({ 'X-Big': 'v'.repeat(8192 - 4) }, 'body.headers');
    await refusedHeaders(many(4, 2100), 'body.headers');
  });

  test('a valid header map is stored and returned unchanged', async () => {
    const headers = { Authorization: 'Bearer abc.def', 'X-Tab': 'a\tb', "X-Tok!#$%&'*+.^_`|~": ' spaced value ' };
    const created = await createWebhookAs(ctx, seller, 'mlb', { code: 'good-headers', headers });
    assert.deepEqual(created.headers, headers);
    assert.deepEqual((await call(ctx, seller, 'GET', '/v1/mlb/webhooks/good-headers')).json().headers, headers);
  });

  test('callbacks to a literal IP in a blocked range are refused, in every spelling of the address', async () => {
    const blocked = [
      'http://127.0.0.1/', 'http://127.1/', 'http://2130706433/', 'http://0x7f.0.0.1/', 'http://0177.0.0.1/', 'http://0/', 'http://0.0.0.0/',
      'http://10.0.0.1/', 'http://172.16.5.4/', 'http://192.168.1.1:8080/', 'http://100.64.0.1/', 'http://169.254.169.254/latest/meta-data',
      'http://[::1]/', 'http://[::]/', 'http://[::ffff:127.0.0.1]/', 'http://[::ffff:7f00:1]/', 'http://[fd00::1]/', 'http://[fe80::1]/',
      'http://[64:ff9b::a9fe:a9fe]/', 'http://224.0.0.1/', 'http://255.255.255.255/',
    ];
    for (const callback_url of blocked) {
      const body = assertProblem(await call(ctx, seller, 'POST', '/v1/mlb/webhooks', webhookBody({ code: 'ip', callback_url })), 400, 'validation_failed');
      assert.deepEqual(body.errors!.map((e) => e.field), ['body.callback_url'], callback_url);
      assertProblem(await call(ctx, seller, 'PATCH', '/v1/mlb/webhooks/existing', { callback_url }), 400, 'validation_failed');
    }
    await createWebhookAs(ctx, seller, 'mlb', { code: 'public-ip', callback_url: 'https://93.184.216.34:8443/hook' });
    await createWebhookAs(ctx, seller, 'mlb', { code: 'public-v6', callback_url: 'https://[2606:2800:220:1:248:1893:25c8:1946]/hook' });
  });

  test('malformed callback URLs are refused', async () => {
    const bad = [
      'ftp://example.com/', 'javascript:alert(1)', 'file:///etc/passwd', '/relative', 'example.com/hook', 'https://user:pw@example.com/',
      'https://user@example.com/', 'https://example.com/#frag', 'https://example.com/#', 'https://exa mple.com/', ' https://example.com/',
      'https://example.com/\r\nX: y', 'https://example.com/\t', 'http://', `https://example.com/${'a'.repeat(2048)}`,
    ];
    for (const callback_url of bad) {
      const body = assertProblem(await call(ctx, seller, 'POST', '/v1/mlb/webhooks', webhookBody({ code: 'url', callback_url })), 400, 'validation_failed');
      assert.deepEqual(body.errors!.map((e) => e.field), ['body.callback_url'], callback_url);
    }
  });

  test('secrets never appear in list, get or update responses', async () => {
    const created = await createWebhookAs(ctx, seller, 'mlb', { code: 'quiet' });
    const secret = String(created.secret);
    for (const response of [
      await call(ctx, seller, 'GET', '/v1/mlb/webhooks'),
      await call(ctx, seller, 'GET', '/v1/mlb/webhooks/quiet'),
      await call(ctx, seller, 'PATCH', '/v1/mlb/webhooks/quiet', { name: 'still quiet' }),
    ]) {
      assert.equal(response.statusCode, 200);
      assert.ok(!response.body.includes(secret) && !response.body.includes('whsec_') && !response.body.includes('secret'), response.body);
    }
  });
});

describe('WEBHOOK_ALLOWED_NETWORKS', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestApp({ WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8, 10.1.0.0/16' });
    await seedConnection(ctx.db, 1, 'mlb');
  });
  after(() => ctx.close());

  test('lets callbacks reach the listed ranges, and only those', async () => {
    const seller = await actor(ctx, { sellerId: 1 });
    await createWebhookAs(ctx, seller, 'mlb', { code: 'local', callback_url: 'http://127.0.0.1:4000/hook' });
    await createWebhookAs(ctx, seller, 'mlb', { code: 'mapped', callback_url: 'http://[::ffff:127.0.0.1]:4000/hook' });
    await createWebhookAs(ctx, seller, 'mlb', { code: 'lan', callback_url: 'http://10.1.2.3/hook' });
    assertProblem(await call(ctx, seller, 'POST', '/v1/mlb/webhooks', webhookBody({ code: 'other', callback_url: 'http://10.2.0.1/' })), 400, 'validation_failed');
    assertProblem(await call(ctx, seller, 'POST', '/v1/mlb/webhooks', webhookBody({ code: 'v6', callback_url: 'http://[::1]/' })), 400, 'validation_failed');
  });
});
