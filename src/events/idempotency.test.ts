import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { insertWebhook, order, postEvent, sampleEvent, seedWorld, type World } from '../testing/events.js';

describe('event_id idempotency', () => {
  let ctx: TestContext;
  let world: World;
  before(async () => {
    ctx = await createTestApp();
    world = await seedWorld(ctx);
  });
  after(() => ctx.close());
  beforeEach(async () => {
    await ctx.db.exec(`DELETE FROM deliveries; DELETE FROM events; DELETE FROM webhooks;`);
    await insertWebhook(ctx.db, { topic: 'order/create' });
    await insertWebhook(ctx.db, { topic: 'order/create', sellerId: '1' });
  });

  const counts = async () => {
    const { rows } = await ctx.db.query<{ events: number; deliveries: number }>(
      `SELECT (SELECT count(*)::int FROM events) AS events, (SELECT count(*)::int FROM deliveries) AS deliveries`,
    );
    return rows[0]!;
  };

  test('the same event sent again returns the same answer and creates nothing', async () => {
    const event = sampleEvent('order/create', world, { event_id: 'evt-1' });
    const first = await postEvent(ctx, world.headers.admin, event);
    assert.equal(first.statusCode, 202);
    assert.deepEqual(first.json(), { event_id: 'evt-1', deliveries: 2 });
    // A webhook created in between does not change the answer of a repeat.
    await insertWebhook(ctx.db, { topic: 'order/create' });
    const reordered = Object.fromEntries(Object.entries(event).reverse());
    const second = await postEvent(ctx, world.headers.admin, reordered);
    assert.equal(second.statusCode, 202);
    assert.deepEqual(second.json(), first.json());
    assert.deepEqual(await counts(), { events: 1, deliveries: 2 });
  });

  test('the same event_id with a different body is 409 conflict', async () => {
    await postEvent(ctx, world.headers.admin, sampleEvent('order/create', world, { event_id: 'evt-2' }));
    const changed = sampleEvent('order/create', world, { event_id: 'evt-2', order: order('ORD-1', { status: 'PROC' }) });
    const response = await postEvent(ctx, world.headers.admin, changed);
    assert.equal(response.statusCode, 409);
    assert.equal(response.json().code, 'conflict');
    assert.deepEqual(await counts(), { events: 1, deliveries: 2 });
  });

  test('the same event_id in another marketplace is another event', async () => {
    await insertWebhook(ctx.db, { topic: 'order/create', marketplaceCode: 'OTHER' });
    const event = sampleEvent('order/create', world, { event_id: 'evt-3' });
    assert.equal((await postEvent(ctx, world.headers.admin, event)).json().deliveries, 2);
    assert.equal((await postEvent(ctx, world.headers.admin, event, 'OTHER')).json().deliveries, 1);
    assert.deepEqual(await counts(), { events: 2, deliveries: 3 });
  });

  test('10 parallel requests with one event_id create one event and all get the same answer', async () => {
    const event = sampleEvent('order/create', world, { event_id: 'evt-race' });
    const responses = await Promise.all(Array.from({ length: 10 }, () => postEvent(ctx, world.headers.admin, event)));
    for (const response of responses) {
      assert.equal(response.statusCode, 202);
      assert.deepEqual(response.json(), { event_id: 'evt-race', deliveries: 2 });
    }
    assert.deepEqual(await counts(), { events: 1, deliveries: 2 });
  });

  test('10 parallel requests with one event_id but different bodies: one wins, the others are 409', async () => {
    const responses = await Promise.all(
      Array.from({ length: 10 }, (_, i) => postEvent(ctx, world.headers.admin, sampleEvent('order/create', world, { event_id: 'evt-race-2', author: `author-${i}` }))),
    );
    const statuses = responses.map((response) => response.statusCode).sort();
    assert.deepEqual(statuses, [202, 409, 409, 409, 409, 409, 409, 409, 409, 409]);
    assert.deepEqual(await counts(), { events: 1, deliveries: 2 });
  });
});
