import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { claim, createDeliverer, deliverClaimed, deliverDue, type Deliverer } from '../delivery/dispatch/deliver.js';
import { Receiver } from '../testing/receiver.js';
import { order, postEvent, sampleEvent, seedWorld, type World } from '../testing/events.js';

/** Issue 30: delivery_mode "latest". */
describe('latest-state mode', () => {
  let ctx: TestContext;
  let world: World;
  let receiver: Receiver;
  let deliverer: Deliverer;

  before(async () => {
    ctx = await createTestApp({ DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK: '100', ACCESS_TOKEN_TTL_SECONDS: String(86_400) });
    world = await seedWorld(ctx);
    receiver = await Receiver.start();
    deliverer = createDeliverer({ ...ctx, workerId: 'latest' });
  });
  after(async () => {
    await deliverer.close();
    await receiver.close();
    await ctx.close();
  });
  beforeEach(() => ctx.db.exec(`DELETE FROM deliveries; DELETE FROM events; DELETE FROM webhooks;`));

  const api = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) =>
    ctx.app.inject({ method, url: `/v1/MKT/webhooks${url}`, headers: world.headers.admin, ...(payload ? { payload } : {}) });
  const create = async (code: string, mode?: string) => {
    const response = await api('POST', '', { code, name: code, topic: 'order/create', callback_url: receiver.url(`/${code}`), ...(mode ? { delivery_mode: mode } : {}) });
    assert.equal(response.statusCode, 201, response.body);
    return Number((await ctx.db.query<{ id: number }>(`SELECT id FROM webhooks WHERE code = $1`, [code])).rows[0]!.id);
  };
  let n = 0;
  const send = async (reference: string) => {
    const response = await postEvent(ctx, world.headers.admin, sampleEvent('order/create', world, { event_id: `e-${++n}`, entity_id: reference, order: order(reference, { id: n }) }));
    assert.equal(response.statusCode, 202);
  };
  const rows = async (webhookId: number) =>
    (await ctx.db.query<{ id: number; entity_key: string; status: string; sequence: number; superseded_by: number | null }>(
      `SELECT id, entity_key, status, sequence, superseded_by FROM deliveries WHERE webhook_id = $1 ORDER BY id`,
      [webhookId],
    )).rows.map((row) => ({ ...row, id: Number(row.id), sequence: Number(row.sequence), superseded_by: row.superseded_by === null ? null : Number(row.superseded_by) }));

  test('delivery_mode on create, update and get, not in list items; unknown is 400', async () => {
    await create('stock', 'latest');
    await create('orders');
    assert.equal((await api('GET', '/stock')).json().delivery_mode, 'latest');
    assert.equal((await api('GET', '/orders')).json().delivery_mode, 'all');
    const list = (await api('GET', '')).json();
    assert.ok(list.every((item: Record<string, unknown>) => !('delivery_mode' in item)));
    const changed = await api('PATCH', '/orders', { delivery_mode: 'latest' });
    assert.equal(changed.statusCode, 200);
    assert.equal(changed.json().delivery_mode, 'latest');
    for (const response of [await api('PATCH', '/orders', { delivery_mode: 'newest' }), await api('POST', '', { code: 'x', name: 'x', topic: 'order/create', callback_url: receiver.url(), delivery_mode: 'some' })]) {
      assert.equal(response.statusCode, 400);
      assert.equal(response.json().code, 'validation_failed');
    }
  });

  test('paused, three updates of one entity, resumed: only the newest is sent, the others superseded by it; other entities and webhooks unaffected', async () => {
    const latest = await create('stock', 'latest');
    const all = await create('all');
    assert.equal((await api('PATCH', '/stock', { active: false })).statusCode, 200);
    await send('SKU-1');
    await send('SKU-2');
    await send('SKU-1');
    await send('SKU-1');
    const held = await rows(latest);
    const newest = held[3]!.id;
    assert.deepEqual(held.map((row) => [row.entity_key, row.status, row.superseded_by]), [
      ['MKT:1:SKU-1', 'superseded', held[2]!.id],
      ['MKT:1:SKU-2', 'held', null],
      ['MKT:1:SKU-1', 'superseded', newest],
      ['MKT:1:SKU-1', 'held', null],
    ]);
    assert.equal((await api('PATCH', '/stock', { active: true })).statusCode, 200);
    // Per-entity order: one of an entity at a time (three of SKU-1 for the other webhook).
    for (let i = 0; i < 3; i++) await deliverDue(deliverer);
    const sent = receiver.requestsTo('/stock');
    assert.deepEqual(sent.map((request) => [JSON.parse(request.body.toString()).entity_id, request.headers['plaza-entity-sequence']]).sort(), [['SKU-1', '3'], ['SKU-2', '1']]);
    assert.deepEqual((await rows(latest)).map((row) => row.status), ['superseded', 'succeeded', 'superseded', 'succeeded']);
    // Mode "all": every one.
    assert.deepEqual((await rows(all)).map((row) => row.status), ['succeeded', 'succeeded', 'succeeded', 'succeeded']);

    // The history shows it, and a superseded delivery cannot be sent again.
    const shown = (await api('GET', `/stock/deliveries/${held[0]!.id}`)).json();
    assert.equal(shown.status, 'superseded');
    assert.equal(shown.superseded_by, held[2]!.id);
    const retry = await api('POST', `/stock/deliveries/${held[0]!.id}/retry`);
    assert.equal(retry.statusCode, 409);
    // The feed still lists all four.
    const feed = (await api('GET', '/stock/notifications')).json();
    assert.deepEqual(feed.items.map((item: { sequence: number }) => item.sequence), [1, 1, 2, 3]);
  });

  test('a send in progress is not cut; a retry waiting is superseded', async () => {
    const latest = await create('price', 'latest');
    await send('SKU-9');
    const { deliveries } = await claim(deliverer, 10);
    assert.equal(deliveries.length, 1);
    await send('SKU-9');
    await send('SKU-9');
    let now = await rows(latest);
    assert.deepEqual(now.map((row) => [row.status, row.superseded_by]), [['delivering', null], ['superseded', now[2]!.id], ['pending', null]]);
    // The send in progress finishes and is recorded; then the newest goes.
    assert.equal((await deliverClaimed(deliverer, deliveries[0]!)).outcome, 'succeeded');
    await deliverDue(deliverer);
    now = await rows(latest);
    assert.deepEqual(now.map((row) => row.status), ['succeeded', 'superseded', 'succeeded']);
    assert.deepEqual(receiver.requestsTo('/price').map((request) => request.headers['plaza-entity-sequence']), ['1', '3']);

    // A delivery waiting for its retry is unsent: superseded too.
    receiver.respond(500);
    await send('SKU-9');
    await deliverDue(deliverer);
    now = await rows(latest);
    assert.equal(now[3]!.status, 'pending');
    await send('SKU-9');
    now = await rows(latest);
    assert.deepEqual(now.slice(3).map((row) => [row.status, row.superseded_by]), [['superseded', now[4]!.id], ['pending', null]]);
  });
});
