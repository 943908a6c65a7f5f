import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { deliveriesOf, insertWebhook, postEvent, sampleEvent, seedWorld, type World } from '../testing/events.js';

describe('event intake: who may send what', () => {
  let ctx: TestContext;
  let world: World;
  before(async () => {
    ctx = await createTestApp();
    world = await seedWorld(ctx);
  });
  after(() => ctx.close());
  beforeEach(async () => {
    await ctx.db.exec(`DELETE FROM deliveries; DELETE FROM events; DELETE FROM webhooks;`);
  });

  const eventCount = async () => (await ctx.db.query(`SELECT 1 FROM events`)).rowCount;

  test('without a valid bearer token: 401, and nothing is validated or stored', async () => {
    for (const headers of [{}, { authorization: 'Bearer nope' }, { authorization: 'Basic YTpi' }]) {
      const response = await ctx.app.inject({ method: 'POST', url: '/v1/MKT/events', headers, payload: {} });
      assert.equal(response.statusCode, 401);
      assert.equal(response.json().code, 'unauthorized');
    }
    assert.equal(await eventCount(), 0);
  });

  test('a marketplace user may send events for any seller connected to its marketplace, and only there', async () => {
    assert.equal((await postEvent(ctx, world.headers.marketplace, sampleEvent('order/create', world))).statusCode, 202);
    assert.equal((await postEvent(ctx, world.headers.marketplace, sampleEvent('order/create', world, { seller_id: 2 }))).statusCode, 202);
    // Seller 3 sells only on OTHER: not connected to MKT.
    const unconnected = await postEvent(ctx, world.headers.marketplace, sampleEvent('order/create', world, { seller_id: 3 }));
    assert.equal(unconnected.statusCode, 400);
    assert.deepEqual(unconnected.json().errors.map((e: { field: string }) => e.field), ['body.seller_id']);
    // Another marketplace: the same 404 as for an unknown one.
    const elsewhere = await postEvent(ctx, world.headers.marketplace, sampleEvent('order/create', world, { seller_id: 3 }), 'OTHER');
    assert.equal(elsewhere.statusCode, 404);
    assert.equal(await eventCount(), 2);
  });

  test('a seller user may send for its own seller only', async () => {
    assert.equal((await postEvent(ctx, world.headers.seller1, sampleEvent('order/create', world))).statusCode, 202);
    const forOther = await postEvent(ctx, world.headers.seller1, sampleEvent('order/create', world, { seller_id: 2 }));
    assert.equal(forOther.statusCode, 403);
    assert.equal(forOther.json().code, 'forbidden');
    assert.equal(await eventCount(), 1);
  });

  test('a seller user on a marketplace its seller is not connected to gets the 404 the webhooks API gives', async () => {
    // Seller 2 sells on MKT only.
    const response = await postEvent(ctx, world.headers.seller2, sampleEvent('order/create', world, { seller_id: 2 }), 'OTHER');
    assert.equal(response.statusCode, 404);
    const webhooks = await ctx.app.inject({ url: '/v1/OTHER/webhooks', headers: world.headers.seller2 });
    assert.equal(webhooks.statusCode, 404);
    assert.equal(response.json().detail, webhooks.json().detail);
    assert.equal(await eventCount(), 0);
  });

  test('a seller user cannot borrow another seller\'s marketplace connection', async () => {
    const response = await postEvent(ctx, world.headers.seller1, sampleEvent('publication/create', world, { marketplace_connection_id: world.connections['2:MKT'] }));
    assert.equal(response.statusCode, 400);
    assert.deepEqual(response.json().errors.map((e: { field: string }) => e.field), ['body.marketplace_connection_id']);
  });

  test('a seller user\'s events never reach another seller\'s webhooks, whatever their seller filter', async () => {
    const mine = await insertWebhook(ctx.db, { tenantKind: 'seller', tenantId: '1', topic: 'order/create' });
    const theirs = await insertWebhook(ctx.db, { tenantKind: 'seller', tenantId: '2', topic: 'order/create' });
    const theirsAskingForMe = await insertWebhook(ctx.db, { tenantKind: 'seller', tenantId: '2', topic: 'order/create', sellerId: '1' });
    const response = await postEvent(ctx, world.headers.seller1, sampleEvent('order/create', world));
    assert.equal(response.json().deliveries, 1);
    assert.equal((await deliveriesOf(ctx.db, mine.id)).length, 1);
    assert.equal((await deliveriesOf(ctx.db, theirs.id)).length, 0);
    assert.equal((await deliveriesOf(ctx.db, theirsAskingForMe.id)).length, 0);
  });

  test('event_id keys of one seller cannot be used to read another seller\'s event', async () => {
    await postEvent(ctx, world.headers.seller1, sampleEvent('order/create', world, { event_id: 'shared-key' }));
    // Same key, seller 2's own event: keys are scoped to the seller, so it is a new event of seller 2,
    // neither refused (no probing which keys seller 1 used) nor answered with seller 1's result.
    const response = await postEvent(ctx, world.headers.seller2, sampleEvent('order/create', world, { event_id: 'shared-key', seller_id: 2 }));
    assert.equal(response.statusCode, 202);
    assert.equal(await eventCount(), 2);
    // Seller 2 cannot reach into seller 1's scope by naming seller 1.
    const foreign = await postEvent(ctx, world.headers.seller2, sampleEvent('order/create', world, { event_id: 'shared-key' }));
    assert.equal(foreign.statusCode, 403);
  });
});
