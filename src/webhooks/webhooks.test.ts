import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { decryptSecret } from '../keys/secret-box.js';
import { actor, assertProblem, call, createWebhookAs, seedConnection, seedMarketplace, webhookBody, type Actor } from '../testing/webhooks.js';

describe('webhooks API', () => {
  let ctx: TestContext;
  let seller1: Actor;
  let marketplaceUser: Actor;
  let admin: Actor;

  before(async () => {
    ctx = await createTestApp();
    await seedConnection(ctx.db, 1, 'mlb');
    await seedConnection(ctx.db, 2, 'mlb');
    await seedConnection(ctx.db, 1, 'mla');
    await seedMarketplace(ctx.db, 'lonely');
    seller1 = await actor(ctx, { sellerId: 1 });
    marketplaceUser = await actor(ctx, { role: 'marketplace', sellerId: 900, marketplaceCode: 'mlb' });
    admin = await actor(ctx, { role: 'admin', sellerId: 901 });
  });
  after(() => ctx.close());

  const storedRow = async (code: string) => {
    const { rows } = await ctx.db.query<Record<string, unknown>>(`SELECT * FROM webhooks WHERE code = $1 ORDER BY id`, [code]);
    return rows;
  };

  test('create answers 201 with Location, the get shape, a whsec_ secret and created_at; seller_id defaults to *', async () => {
    const response = await call(ctx, seller1, 'POST', '/v1/mlb/webhooks', webhookBody({ code: 'create-1', name: '  Orders to ERP  ', headers: { 'X-Shop': 'a' } }));
    assert.equal(response.statusCode, 201, response.body);
    assert.equal(response.headers.location, '/v1/mlb/webhooks/create-1');
    assert.equal(response.headers['cache-control'], 'no-store');
    const body = response.json();
    assert.deepEqual(Object.keys(body).sort(), ['active', 'callback_url', 'code', 'created_at', 'delivery_mode', 'disabled_at', 'disabled_message', 'disabled_reason', 'failing_since', 'filter', 'headers', 'held_count', 'last_success_at', 'name', 'secret', 'seller_id', 'send_traceparent', 'topic', 'updated_at']);
    assert.equal(body.code, 'create-1');
    assert.equal(body.name, 'Orders to ERP');
    assert.equal(body.seller_id, '*');
    assert.deepEqual(body.headers, { 'X-Shop': 'a' });
    assert.equal(body.active, true);
    assert.equal(body.created_at, ctx.clock.now().toISOString());
    assert.match(body.secret, /^whsec_[A-Za-z0-9+/=]{20,}$/);

    const [row] = await storedRow('create-1');
    assert.equal(row!.tenant_kind, 'seller');
    assert.equal(row!.tenant_id, '1');
    assert.ok(!String(row!.secret_encrypted).includes(body.secret.slice(6)), 'the secret is stored encrypted');
    assert.equal(decryptSecret(ctx.keys.webhookSecretsKey, String(row!.secret_encrypted)), body.secret);

    const get = await call(ctx, seller1, 'GET', '/v1/mlb/webhooks/create-1');
    assert.equal(get.statusCode, 200);
    const { secret: _secret, ...withoutSecret } = body;
    assert.deepEqual(get.json(), withoutSecret);
    assert.ok(!get.body.includes('whsec_') && !get.body.includes('secret'));
  });

  test('send_traceparent is off by default, set at create and by PATCH, and each change is in the history', async () => {
    const plain = await call(ctx, seller1, 'POST', '/v1/mlb/webhooks', webhookBody({ code: 'trace-off' }));
    assert.equal(plain.json().send_traceparent, false);
    assert.equal((await storedRow('trace-off'))[0]!.send_traceparent, false);
    const traced = await call(ctx, seller1, 'POST', '/v1/mlb/webhooks', webhookBody({ code: 'trace-on', send_traceparent: true }));
    assert.equal(traced.statusCode, 201, traced.body);
    assert.equal(traced.json().send_traceparent, true);
    assert.equal((await call(ctx, seller1, 'GET', '/v1/mlb/webhooks/trace-on')).json().send_traceparent, true);
    const patched = await call(ctx, seller1, 'PATCH', '/v1/mlb/webhooks/trace-on', { send_traceparent: false });
    assert.equal(patched.statusCode, 200, patched.body);
    assert.equal((await call(ctx, seller1, 'GET', '/v1/mlb/webhooks/trace-on')).json().send_traceparent, false);
    // Another field left out keeps it.
    await call(ctx, seller1, 'PATCH', '/v1/mlb/webhooks/trace-off', { send_traceparent: true });
    await call(ctx, seller1, 'PATCH', '/v1/mlb/webhooks/trace-off', { name: 'Renamed' });
    assert.equal((await call(ctx, seller1, 'GET', '/v1/mlb/webhooks/trace-off')).json().send_traceparent, true);
    const history = (await call(ctx, seller1, 'GET', '/v1/mlb/webhooks/trace-on/history')).json() as { items: { action: string; changes: { field: string; before?: unknown; after?: unknown }[] }[] };
    assert.deepEqual(history.items.map((item) => item.changes.filter((change) => change.field === 'send_traceparent')), [
      [{ field: 'send_traceparent', before: true, after: false }],
      [{ field: 'send_traceparent', after: true }],
    ]);
    assertProblem(await call(ctx, seller1, 'PATCH', '/v1/mlb/webhooks/trace-on', { send_traceparent: 'yes' }), 400, 'validation_failed');
  });

  test('the status topic is accepted in both forms and stored as entered_<code>; fixed topics unchanged', async () => {
    const a = await createWebhookAs(ctx, seller1, 'mlb', { code: 'topic-a', topic: 'order/status_change/paid' });
    const b = await createWebhookAs(ctx, seller1, 'mlb', { code: 'topic-b', topic: 'order/status_change/entered_paid' });
    assert.equal(a.topic, 'order/status_change/entered_paid');
    assert.equal(b.topic, 'order/status_change/entered_paid');
    assert.equal((await call(ctx, seller1, 'GET', '/v1/mlb/webhooks/topic-a')).json().topic, 'order/status_change/entered_paid');
    for (const topic of ['publication/create', 'publication/update', 'order/create', 'order/update', 'order/invoice_upload', 'order/status_change']) {
      const created = await createWebhookAs(ctx, seller1, 'mla', { code: `fixed-${topic.replaceAll('/', '_')}`, topic });
      assert.equal(created.topic, topic);
    }
    for (const topic of ['order/delete', 'ORDER/CREATE', 'order/status_change/', 'order/status_change/a-b', `order/status_change/${'x'.repeat(33)}`, 'order/status_change/entered_', '', 'order/create ']) {
      if (topic === 'order/status_change/entered_') continue; // "entered_" is itself a valid status code
      const body = assertProblem(await call(ctx, seller1, 'POST', '/v1/mlb/webhooks', webhookBody({ code: 'bad-topic', topic })), 400, 'validation_failed');
      assert.deepEqual(body.errors!.map((e) => e.field), ['body.topic'], topic);
    }
  });

  test('list items leave seller_id out, ordered by code; get includes it', async () => {
    await createWebhookAs(ctx, seller1, 'mla', { code: 'list-b', seller_id: '1' });
    await createWebhookAs(ctx, seller1, 'mla', { code: 'list-A' });
    const response = await call(ctx, seller1, 'GET', '/v1/mla/webhooks');
    assert.equal(response.statusCode, 200);
    const items = response.json() as Record<string, unknown>[];
    assert.ok(Array.isArray(items));
    for (const item of items) assert.deepEqual(Object.keys(item).sort(), ['callback_url', 'code', 'headers', 'name', 'topic']);
    const codes = items.map((item) => item.code as string);
    assert.deepEqual(codes, [...codes].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)));
    assert.ok(codes.includes('list-A') && codes.includes('list-b'));
    const get = (await call(ctx, seller1, 'GET', '/v1/mla/webhooks/list-b')).json();
    assert.equal(get.seller_id, '1');
  });

  test('update changes name, callback_url, seller_id and replaces the headers map', async () => {
    await createWebhookAs(ctx, seller1, 'mlb', { code: 'upd', headers: { 'X-A': '1', 'X-B': '2' } });
    ctx.clock.advanceSeconds(60);
    const response = await call(ctx, seller1, 'PATCH', '/v1/mlb/webhooks/upd', { name: 'Renamed', callback_url: 'https://other.example.com/x', seller_id: 1, headers: { 'X-C': '3' } });
    assert.equal(response.statusCode, 200, response.body);
    const body = response.json();
    assert.equal(body.name, 'Renamed');
    assert.equal(body.callback_url, 'https://other.example.com/x');
    assert.equal(body.seller_id, '1');
    assert.deepEqual(body.headers, { 'X-C': '3' });
    assert.equal(body.updated_at, ctx.clock.now().toISOString());
    assert.notEqual(body.created_at, body.updated_at);
    assert.ok(!('secret' in body));
    assert.deepEqual((await call(ctx, seller1, 'GET', '/v1/mlb/webhooks/upd')).json(), body);
    const cleared = await call(ctx, seller1, 'PATCH', '/v1/mlb/webhooks/upd', { headers: {} });
    assert.deepEqual(cleared.json().headers, {});
  });

  test('code and topic cannot be updated (immutable_field); unknown fields and an empty body are 400', async () => {
    await createWebhookAs(ctx, seller1, 'mlb', { code: 'immut' });
    for (const patch of [{ code: 'other' }, { topic: 'order/update' }, { code: 'immut', name: 'x' }, { topic: 'order/create' }]) {
      const body = assertProblem(await call(ctx, seller1, 'PATCH', '/v1/mlb/webhooks/immut', patch), 400, 'immutable_field');
      assert.ok(body.errors!.length > 0 && body.errors!.every((e) => e.field === 'body.code' || e.field === 'body.topic'), JSON.stringify(body.errors));
    }
    const unknown = assertProblem(await call(ctx, seller1, 'PATCH', '/v1/mlb/webhooks/immut', { name: 'x', colour: 'red' }), 400, 'validation_failed');
    assert.deepEqual(unknown.errors!.map((e) => e.field), ['body.colour']);
    assertProblem(await call(ctx, seller1, 'PATCH', '/v1/mlb/webhooks/immut', {}), 400, 'validation_failed');
    assertProblem(await call(ctx, seller1, 'POST', '/v1/mlb/webhooks', webhookBody({ code: 'extra', colour: 'red' })), 400, 'validation_failed');
    const stored = (await call(ctx, seller1, 'GET', '/v1/mlb/webhooks/immut')).json();
    assert.equal(stored.topic, 'order/create');
    assert.equal(stored.name, 'Orders');
  });

  test('active=false pauses; active=true re-enables and clears the disable bookkeeping', async () => {
    await createWebhookAs(ctx, seller1, 'mlb', { code: 'toggle' });
    const paused = (await call(ctx, seller1, 'PATCH', '/v1/mlb/webhooks/toggle', { active: false })).json();
    assert.equal(paused.active, false);
    assert.equal(paused.disabled_reason, 'disabled_by_user');
    // As the delivery does when a receiver keeps failing.
    await ctx.db.query(`UPDATE webhooks SET disabled_reason = 'failing_too_long', failing_since = $1 WHERE code = 'toggle'`, [ctx.clock.now()]);
    const enabled = (await call(ctx, seller1, 'PATCH', '/v1/mlb/webhooks/toggle', { active: true })).json();
    assert.equal(enabled.active, true);
    assert.equal(enabled.disabled_reason, null);
    const [row] = await storedRow('toggle');
    assert.equal(row!.disabled_at, null);
    assert.equal(row!.failing_since, null);
    assertProblem(await call(ctx, seller1, 'PATCH', '/v1/mlb/webhooks/toggle', { active: 'yes' }), 400, 'validation_failed');
  });

  test('delete answers 204 without body; the webhook is gone', async () => {
    await createWebhookAs(ctx, seller1, 'mlb', { code: 'gone' });
    const response = await call(ctx, seller1, 'DELETE', '/v1/mlb/webhooks/gone');
    assert.equal(response.statusCode, 204);
    assert.equal(response.body, '');
    assertProblem(await call(ctx, seller1, 'GET', '/v1/mlb/webhooks/gone'), 404, 'not_found');
    assertProblem(await call(ctx, seller1, 'DELETE', '/v1/mlb/webhooks/gone'), 404, 'not_found');
    assert.equal((await storedRow('gone')).length, 0);
  });

  test('rotate-secret returns a new secret; the previous one stays for WEBHOOK_SECRET_OVERLAP_SECONDS', async () => {
    const created = await createWebhookAs(ctx, seller1, 'mlb', { code: 'rot' });
    const response = await call(ctx, seller1, 'POST', '/v1/mlb/webhooks/rot/rotate-secret');
    assert.equal(response.statusCode, 200, response.body);
    const body = response.json();
    assert.deepEqual(Object.keys(body).sort(), ['previous_secret_expires_at', 'secret']);
    assert.equal(response.headers['cache-control'], 'no-store');
    assert.match(body.secret, /^whsec_/);
    assert.notEqual(body.secret, created.secret);
    assert.equal(body.previous_secret_expires_at, new Date(ctx.clock.now().getTime() + 86_400_000).toISOString());
    const [row] = await storedRow('rot');
    assert.equal(decryptSecret(ctx.keys.webhookSecretsKey, String(row!.secret_encrypted)), body.secret);
    assert.equal(decryptSecret(ctx.keys.webhookSecretsKey, String(row!.previous_secret_encrypted)), created.secret);
    assert.ok(!(await call(ctx, seller1, 'GET', '/v1/mlb/webhooks/rot')).body.includes('whsec_'));
  });

  test('a code is unique per tenant and marketplace: 409 webhook_code_taken, also under a race', async () => {
    await createWebhookAs(ctx, seller1, 'mlb', { code: 'uniq' });
    assertProblem(await call(ctx, seller1, 'POST', '/v1/mlb/webhooks', webhookBody({ code: 'uniq' })), 409, 'webhook_code_taken');
    await createWebhookAs(ctx, seller1, 'mla', { code: 'uniq' });
    await createWebhookAs(ctx, marketplaceUser, 'mlb', { code: 'uniq' });
    await createWebhookAs(ctx, seller1, 'mlb', { code: 'Uniq' }); // codes are case-sensitive

    const racers = await Promise.all(Array.from({ length: 6 }, () => call(ctx, seller1, 'POST', '/v1/mlb/webhooks', webhookBody({ code: 'race' }))));
    assert.deepEqual(racers.map((r) => r.statusCode).sort(), [201, 409, 409, 409, 409, 409]);
    for (const r of racers.filter((x) => x.statusCode === 409)) assert.equal(r.json().code, 'webhook_code_taken');
  });

  test('a validation error lists every bad field', async () => {
    const body = assertProblem(
      await call(ctx, seller1, 'POST', '/v1/mlb/webhooks', { code: 'ok-code', name: '   ', topic: 'nope', callback_url: 'ftp://x.example.com/', seller_id: 'abc' }),
      400,
      'validation_failed',
    );
    assert.deepEqual(body.errors!.map((e) => e.field).sort(), ['body.callback_url', 'body.name', 'body.seller_id', 'body.topic']);
    const missing = assertProblem(await call(ctx, seller1, 'POST', '/v1/mlb/webhooks', {}), 400, 'validation_failed');
    assert.deepEqual(missing.errors!.map((e) => e.field).sort(), ['body.callback_url', 'body.code', 'body.name', 'body.topic']);
    const badCode = assertProblem(await call(ctx, seller1, 'POST', '/v1/mlb/webhooks', webhookBody({ code: 'has space' })), 400, 'validation_failed');
    assert.deepEqual(badCode.errors!.map((e) => e.field), ['body.code']);
    assertProblem(await call(ctx, seller1, 'POST', '/v1/mlb/webhooks', webhookBody({ code: 'x'.repeat(101) })), 400, 'validation_failed');
    assertProblem(await call(ctx, seller1, 'POST', '/v1/mlb/webhooks', webhookBody({ code: '' })), 400, 'validation_failed');
    assertProblem(await call(ctx, seller1, 'POST', '/v1/mlb/webhooks', webhookBody({ code: 'long-name', name: 'n'.repeat(201) })), 400, 'validation_failed');
    await createWebhookAs(ctx, seller1, 'mlb', { code: 'x'.repeat(100), name: 'n'.repeat(200) });
  });

  test('seller users: own seller id (string or number) or *; another id is 403 forbidden', async () => {
    assert.equal((await createWebhookAs(ctx, seller1, 'mlb', { code: 'sid-own', seller_id: '1' })).seller_id, '1');
    assert.equal((await createWebhookAs(ctx, seller1, 'mlb', { code: 'sid-num', seller_id: 1 })).seller_id, '1');
    assert.equal((await createWebhookAs(ctx, seller1, 'mlb', { code: 'sid-star', seller_id: '*' })).seller_id, '*');
    assertProblem(await call(ctx, seller1, 'POST', '/v1/mlb/webhooks', webhookBody({ code: 'sid-other', seller_id: '2' })), 403, 'forbidden');
    assertProblem(await call(ctx, seller1, 'POST', '/v1/mlb/webhooks', webhookBody({ code: 'sid-other', seller_id: 2 })), 403, 'forbidden');
    assertProblem(await call(ctx, seller1, 'PATCH', '/v1/mlb/webhooks/sid-own', { seller_id: '2' }), 403, 'forbidden');
    for (const seller_id of ['0', '-1', 'abc', '01', '1.5', '', ' 1', 1.5, 0, -3, 2_147_483_648, null, true]) {
      assertProblem(await call(ctx, seller1, 'POST', '/v1/mlb/webhooks', webhookBody({ code: 'sid-bad', seller_id })), 400, 'validation_failed');
    }
  });

  test('marketplace users: * or a seller connected to their marketplace', async () => {
    assert.equal((await createWebhookAs(ctx, marketplaceUser, 'mlb', { code: 'm-star' })).seller_id, '*');
    assert.equal((await createWebhookAs(ctx, marketplaceUser, 'mlb', { code: 'm-two', seller_id: 2 })).seller_id, '2');
    const body = assertProblem(await call(ctx, marketplaceUser, 'POST', '/v1/mlb/webhooks', webhookBody({ code: 'm-x', seller_id: '77' })), 400, 'validation_failed');
    assert.deepEqual(body.errors!.map((e) => e.field), ['body.seller_id']);
    assertProblem(await call(ctx, marketplaceUser, 'PATCH', '/v1/mlb/webhooks/m-two', { seller_id: '77' }), 400, 'validation_failed');
    const [row] = await storedRow('m-star');
    assert.equal(row!.tenant_kind, 'marketplace');
    assert.equal(row!.tenant_id, 'mlb');
  });

  test('admins: any seller id, any marketplace, every tenant listed; a code shared by tenants prefers the admins\' own, else 409', async () => {
    assert.equal((await createWebhookAs(ctx, admin, 'lonely', { code: 'adm', seller_id: '12345' })).seller_id, '12345');
    const seller2 = await actor(ctx, { sellerId: 2 });
    await createWebhookAs(ctx, seller1, 'mlb', { code: 'shared', name: 'of seller 1' });
    await createWebhookAs(ctx, seller2, 'mlb', { code: 'shared', name: 'of seller 2' });
    assertProblem(await call(ctx, admin, 'GET', '/v1/mlb/webhooks/shared'), 409, 'conflict');
    const listed = (await call(ctx, admin, 'GET', '/v1/mlb/webhooks')).json() as { code: string; name: string }[];
    assert.deepEqual(listed.filter((w) => w.code === 'shared').map((w) => w.name).sort(), ['of seller 1', 'of seller 2']);
    await createWebhookAs(ctx, admin, 'mlb', { code: 'shared', name: 'of the admins' });
    assert.equal((await call(ctx, admin, 'GET', '/v1/mlb/webhooks/shared')).json().name, 'of the admins');
    await createWebhookAs(ctx, seller2, 'mlb', { code: 'only-2', name: 'single' });
    assert.equal((await call(ctx, admin, 'PATCH', '/v1/mlb/webhooks/only-2', { name: 'by admin' })).json().name, 'by admin');
    assert.equal((await call(ctx, seller2, 'GET', '/v1/mlb/webhooks/only-2')).json().name, 'by admin');
    const [row] = await storedRow('only-2');
    assert.equal(row!.tenant_id, '2', 'an admin\'s change keeps the owner');
    // The owner's rules bind an admin too: a seller's webhook receives only that seller's events.
    assertProblem(await call(ctx, admin, 'PATCH', '/v1/mlb/webhooks/only-2', { seller_id: '1' }), 400, 'validation_failed');
    assert.equal((await call(ctx, admin, 'PATCH', '/v1/mlb/webhooks/only-2', { seller_id: 2 })).json().seller_id, '2');
    await createWebhookAs(ctx, marketplaceUser, 'mlb', { code: 'of-mlb' });
    assertProblem(await call(ctx, admin, 'PATCH', '/v1/mlb/webhooks/of-mlb', { seller_id: '12345' }), 400, 'validation_failed');
    assert.equal((await call(ctx, admin, 'PATCH', '/v1/mlb/webhooks/of-mlb', { seller_id: '1' })).json().seller_id, '1');
  });

  test('every endpoint needs a valid access token (401)', async () => {
    await createWebhookAs(ctx, seller1, 'mlb', { code: 'authn' });
    const requests: ['GET' | 'POST' | 'PATCH' | 'DELETE', string, Record<string, unknown>?][] = [
      ['POST', '/v1/mlb/webhooks', webhookBody({ code: 'authn-2' })],
      ['GET', '/v1/mlb/webhooks'],
      ['GET', '/v1/mlb/webhooks/authn'],
      ['PATCH', '/v1/mlb/webhooks/authn', { code: 'changed' }],
      ['DELETE', '/v1/mlb/webhooks/authn'],
      ['POST', '/v1/mlb/webhooks/authn/rotate-secret'],
    ];
    const forged = { role: 'seller' as const, sellerId: 1, marketplaceCode: null, headers: { authorization: 'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0.' } };
    for (const [method, url, payload] of requests) {
      assertProblem(await call(ctx, undefined, method, url, payload), 401, 'unauthorized');
      assertProblem(await call(ctx, forged, method, url, payload), 401, 'unauthorized');
    }
    assert.equal((await storedRow('authn')).length, 1);
  });

  test('an unknown marketplace, or one the seller is not connected to, is 404', async () => {
    assertProblem(await call(ctx, seller1, 'GET', '/v1/nowhere/webhooks'), 404, 'not_found');
    assertProblem(await call(ctx, admin, 'POST', '/v1/nowhere/webhooks', webhookBody()), 404, 'not_found');
    assertProblem(await call(ctx, seller1, 'POST', '/v1/lonely/webhooks', webhookBody()), 404, 'not_found');
    assertProblem(await call(ctx, seller1, 'GET', '/v1/lonely/webhooks'), 404, 'not_found');
    assertProblem(await call(ctx, marketplaceUser, 'GET', '/v1/mla/webhooks'), 404, 'not_found');
  });
});
