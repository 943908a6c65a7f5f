import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { PortalClient } from '../testing/webhook-history.js';
import { seedConnection, seedUser } from '../testing/fixtures.js';
import { seedDelivery } from '../testing/deliveries.js';

/** Issue 30 in the portal: the delivery mode on the webhook form; superseded deliveries in the log. */
describe('portal: delivery mode and superseded deliveries', () => {
  let ctx: TestContext;
  let portal: PortalClient;
  const get = (url: string) => portal.get(url);
  const post = (url: string, fields: Record<string, string>) => portal.post(url, fields);
  const modeOf = async (code: string) => (await ctx.db.query<{ delivery_mode: string; id: number }>(`SELECT id, delivery_mode FROM webhooks WHERE code = $1`, [code])).rows[0]!;

  before(async () => {
    ctx = await createTestApp();
    await seedConnection(ctx.db, 1, 'MKT');
    await seedUser(ctx.db, { username: 'mode-seller', password: 'seller-pass-1', sellerId: 1 });
    portal = await PortalClient.signIn(ctx, 'mode-seller', 'seller-pass-1', 'MKT');
  });
  after(() => ctx.close());

  test('the form sets the mode on create and edit; an unknown one is refused on its field', async () => {
    assert.match((await get('/portal/MKT/webhooks/new')).body, /<select id="f-delivery-mode" name="delivery_mode"/);
    const created = await post('/portal/MKT/webhooks/new', { code: 'stock', name: 'Stock', topic: 'publication/update', callback_url: 'https://erp.example/stock', seller_id: '1', delivery_mode: 'latest' });
    assert.equal(created.statusCode, 201, created.body);
    assert.equal((await modeOf('stock')).delivery_mode, 'latest');
    assert.match((await get('/portal/MKT/webhooks/stock')).body, /latest: only the newest state of each entity/);
    assert.match((await get('/portal/MKT/webhooks/stock/edit')).body, /<option value="latest" selected>/);

    const edited = await post('/portal/MKT/webhooks/stock/edit', { name: 'Stock', callback_url: 'https://erp.example/stock', seller_id: '1', delivery_mode: 'all' });
    assert.equal(edited.statusCode, 303, edited.body);
    assert.equal((await modeOf('stock')).delivery_mode, 'all');

    const refused = await post('/portal/MKT/webhooks/stock/edit', { name: 'Stock', callback_url: 'https://erp.example/stock', seller_id: '1', delivery_mode: 'newest' });
    assert.equal(refused.statusCode, 400);
    assert.match(refused.body, /id="f-delivery-mode-error"/);
    assert.equal((await modeOf('stock')).delivery_mode, 'all');
  });

  test('the trace context checkbox (issue 34): ticked on create sets send_traceparent, the edit form shows it, an edit without it clears it', async () => {
    const traced = async () => (await ctx.db.query<{ send_traceparent: boolean }>(`SELECT send_traceparent FROM webhooks WHERE code = 'traced'`)).rows[0]!.send_traceparent;
    assert.match((await get('/portal/MKT/webhooks/new')).body, /<input type="checkbox" id="f-send-traceparent" name="send_traceparent" value="true"/);
    const created = await post('/portal/MKT/webhooks/new', { code: 'traced', name: 'Traced', topic: 'order/create', callback_url: 'https://erp.example/t', seller_id: '1', send_traceparent: 'true' });
    assert.equal(created.statusCode, 201, created.body);
    assert.equal(await traced(), true);
    assert.match((await get('/portal/MKT/webhooks/traced/edit')).body, /name="send_traceparent" value="true" aria-describedby="f-send-traceparent-hint" checked>/);
    const edited = await post('/portal/MKT/webhooks/traced/edit', { name: 'Traced', callback_url: 'https://erp.example/t', seller_id: '1' });
    assert.equal(edited.statusCode, 303, edited.body);
    assert.equal(await traced(), false);
    assert.doesNotMatch((await get('/portal/MKT/webhooks/traced/edit')).body, /f-send-traceparent-hint" checked/);
  });

  test('the log shows "superseded by #N", linked, and the detail says it is never sent', async () => {
    const hook = await modeOf('stock');
    const webhook = { id: hook.id, secret: '', code: 'stock', marketplaceCode: 'MKT' };
    const older = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now(), entityKey: 'MKT:1:7' });
    const newer = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now(), entityKey: 'MKT:1:7' });
    await ctx.db.query(`UPDATE deliveries SET status = 'superseded', superseded_by = $2, completed_at = now() WHERE id = $1`, [older.id, newer.id]);
    const log = (await get('/portal/MKT/webhooks/stock/deliveries')).body;
    assert.match(log, new RegExp(`<a href="/portal/MKT/webhooks/stock/deliveries/${newer.id}">superseded by #${newer.id}</a>`));
    const detail = (await get(`/portal/MKT/webhooks/stock/deliveries/${older.id}`)).body;
    assert.match(detail, /Superseded by a newer notification/);
    assert.doesNotMatch(detail, /Retry now/);
  });
});
