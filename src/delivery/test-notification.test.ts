import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { accessTokenFor, bearer, seedConnection, seedUser } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { eventually } from '../testing/wait.js';
import { seedWebhook } from '../testing/deliveries.js';
import { Receiver } from '../testing/receiver.js';

describe('POST /v1/{mkt}/webhooks/{code}/test', () => {
  let ctx: TestContext;
  let receiver: Receiver;
  let token: string;
  before(async () => {
    ctx = await createTestApp({ DELIVERY_TIMEOUT_MS: '2000' });
    receiver = await Receiver.start();
    token = await accessTokenFor(ctx, await seedUser(ctx.db, { role: 'admin' }));
  });
  after(async () => {
    await receiver.close();
    await ctx.close();
  });

  const send = (marketplace: string, code: string, headers = bearer(token)) =>
    ctx.app.inject({ method: 'POST', url: `/v1/${marketplace}/webhooks/${code}/test`, headers });

  test('sends one signed test notification and reports success; nothing is stored', async () => {
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url(), headers: { 'x-tenant': 't1' } });
    const response = await send(webhook.marketplaceCode, webhook.code);
    assert.equal(response.statusCode, 200);
    const result = response.json();
    assert.equal(result.success, true);
    assert.equal(result.status_code, 200);
    assert.equal(result.error, null);
    assert.equal(typeof result.duration_ms, 'number');

    const request = receiver.requests.at(-1)!;
    assert.equal(request.headers['x-tenant'], 't1');
    assert.match(String(request.headers['webhook-id']), /^msg_test_/);
    const body = new Webhook(webhook.secret).verify(request.body.toString(), request.headers as Record<string, string>) as Record<string, unknown>;
    assert.equal(body.type, 'webhook.test');
    assert.equal(body.webhook_code, webhook.code);
    assert.equal(body.marketplace_code, webhook.marketplaceCode);
    const stored = await ctx.db.query(`SELECT 1 FROM deliveries WHERE webhook_id = $1`, [webhook.id]);
    assert.equal(stored.rowCount, 0);
  });

  test('reports a failing receiver: status code, or the error of a timeout', async () => {
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
    receiver.respond(500);
    let result = (await send(webhook.marketplaceCode, webhook.code)).json();
    assert.deepEqual([result.success, result.status_code, result.error], [false, 500, 'HTTP 500']);
    receiver.hang();
    result = (await send(webhook.marketplaceCode, webhook.code)).json();
    assert.equal(result.success, false);
    assert.equal(result.status_code, null);
    assert.match(result.error, /timeout/);
  });

  test('refuses an address outside the allowed networks, like a real delivery', async () => {
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: 'http://169.254.169.254/latest/meta-data/' });
    const result = (await send(webhook.marketplaceCode, webhook.code)).json();
    assert.equal(result.success, false);
    // A bare code: the range and address stay in the server log.
    assert.equal(result.error, 'destination_blocked');
    assert.doesNotMatch(JSON.stringify(result), /169\.254|linkLocal/);
  });

  test('needs a token and a webhook the caller may see', async () => {
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
    assert.equal((await send(webhook.marketplaceCode, webhook.code, {} as never)).statusCode, 401);
    assert.equal((await send(webhook.marketplaceCode, 'missing')).statusCode, 404);
    const seller = await accessTokenFor(ctx, await seedUser(ctx.db, { sellerId: 42 }));
    const before = receiver.requests.length;
    assert.equal((await send(webhook.marketplaceCode, webhook.code, bearer(seller))).statusCode, 404);
    assert.equal(receiver.requests.length, before);
  });
});

describe('test notifications of two tenants to one receiver host', () => {
  let ctx: TestContext;
  let receiver: Receiver;
  before(async () => {
    // A per-webhook limit of 2: a cap of that size per receiver origin, shared by every tenant,
    // would be full with the first tenant's held requests.
    ctx = await createTestApp({ DELIVERY_TIMEOUT_MS: '3000', DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK: '2' });
    receiver = await Receiver.start();
    receiver.hangPaths('/held');
  });
  after(async () => {
    await receiver.close();
    await ctx.close();
  });

  test("one tenant's tests held open by the receiver do not hold back another tenant's test to the same host", async () => {
    const tenant = async (sellerId: number, path: string) => {
      await seedConnection(ctx.db, sellerId, 'mkt');
      const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url(path), tenantKind: 'seller', tenantId: String(sellerId) });
      const token = bearer(await accessTokenFor(ctx, await seedUser(ctx.db, { sellerId })));
      return () => ctx.app.inject({ method: 'POST', url: `/v1/mkt/webhooks/${webhook.code}/test`, headers: token });
    };
    const testA = await tenant(1, '/held');
    const testB = await tenant(2, '/hook');
    // Within A's TENANT_TESTS_PER_MINUTE, which is what bounds its sockets.
    const held = Array.from({ length: 6 }, () => testA());
    await eventually(() => receiver.requestsTo('/held').length >= 6, { timeoutMs: 5000 });
    assert.equal(receiver.requestsTo('/held').length, 6, "A's tests all reach the receiver: no cap per receiver origin holds them back");
    // Order, not elapsed time: B's answer comes while every one of A's tests is still held open
    // (they end only with DELIVERY_TIMEOUT_MS); behind A, it would come after them.
    let aFinished = 0;
    for (const request of held) void request.then(() => aFinished++, () => aFinished++);
    const b = (await testB()).json<{ success: boolean; status_code: number | null }>();
    assert.deepEqual([b.success, b.status_code], [true, 200]);
    assert.equal(aFinished, 0, "B's test waited behind A's");
    const a = (await Promise.all(held)).map((response) => response.json<{ success: boolean; error: string }>());
    assert.equal(a.length, 6);
    assert.ok(a.every((result) => !result.success && /timeout/.test(result.error)), JSON.stringify(a));
  });
});
