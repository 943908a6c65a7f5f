import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { insertWebhook, postEvent, publication, sampleEvent, seedWorld, type World } from '../testing/events.js';

describe('event storage: a byte budget per tenant, and no body kept that nothing will send', () => {
  let ctx: TestContext;
  let world: World;
  before(async () => {
    // 20 kB at once, then 1 000 bytes per second (3.6 MB per hour).
    ctx = await createTestApp({ TENANT_EVENT_BURST_BYTES: '20000', TENANT_EVENT_BYTES_PER_HOUR: '3600000' });
    world = await seedWorld(ctx);
  });
  after(() => ctx.close());
  beforeEach(async () => {
    await ctx.db.exec(`DELETE FROM deliveries; DELETE FROM events; DELETE FROM webhooks;`);
  });

  /** An event of seller `sellerId` whose notification body is about 8 kB. */
  const large = (sellerId: 1 | 2, eventId: string) =>
    sampleEvent('publication/update', world, {
      event_id: eventId,
      seller_id: sellerId,
      marketplace_connection_id: world.connections[`${sellerId}:MKT`],
      publication: publication(101, { description: 'x'.repeat(8000) }),
    });

  test('a tenant past its byte budget gets 429 with Retry-After; other tenants, and repeats, are still answered', async () => {
    await insertWebhook(ctx.db, { topic: 'publication/update' });
    for (const id of ['a1', 'a2']) assert.equal((await postEvent(ctx, world.headers.seller1, large(1, id))).statusCode, 202);
    const refused = await postEvent(ctx, world.headers.seller1, large(1, 'a3'));
    assert.equal(refused.statusCode, 429, refused.body);
    assert.equal(refused.json().code, 'rate_limited');
    const wait = Number(refused.headers['retry-after']);
    // About 4 kB left of 20 kB, about 8 kB needed, 1 000 bytes per second.
    assert.ok(wait >= 3 && wait <= 6, `Retry-After ${String(refused.headers['retry-after'])}`);
    assert.equal(refused.json().retry_after, wait);
    assert.equal((await ctx.db.query(`SELECT 1 FROM events WHERE event_id = 'a3'`)).rowCount, 0, 'nothing stored');

    // A repeat of a stored event stores nothing and costs nothing: still its first answer.
    const repeat = await postEvent(ctx, world.headers.seller1, large(1, 'a1'));
    assert.equal(repeat.statusCode, 202);
    assert.deepEqual(repeat.json(), { event_id: 'a1', deliveries: 1 });
    // Another seller, and the marketplace sending for seller 1, spend budgets of their own: the
    // credential's tenant pays, so nobody can use up another tenant's storage.
    assert.equal((await postEvent(ctx, world.headers.seller2, large(2, 'b1'))).statusCode, 202);
    assert.equal((await postEvent(ctx, world.headers.marketplace, large(1, 'm1'))).statusCode, 202);

    ctx.clock.advanceSeconds(wait);
    assert.equal((await postEvent(ctx, world.headers.seller1, large(1, 'a3'))).statusCode, 202);
  });

  test('an event that matches no webhook keeps no body, and its event_id still answers repeats', async () => {
    await insertWebhook(ctx.db, { topic: 'order/create' });
    const lonely = sampleEvent('publication/update', world, { event_id: 'lonely' });
    const first = await postEvent(ctx, world.headers.seller2, { ...lonely, seller_id: 2, marketplace_connection_id: world.connections['2:MKT'] });
    assert.equal(first.statusCode, 202, first.body);
    assert.deepEqual(first.json(), { event_id: 'lonely', deliveries: 0 });
    const { rows } = await ctx.db.query<{ body: unknown }>(`SELECT body FROM events WHERE event_id = 'lonely'`);
    assert.equal(rows.length, 1, 'the row stays, for its event_id');
    assert.equal(rows[0]!.body, null);

    const again = await postEvent(ctx, world.headers.seller2, { ...lonely, seller_id: 2, marketplace_connection_id: world.connections['2:MKT'] });
    assert.equal(again.statusCode, 202);
    assert.deepEqual(again.json(), first.json());
    const changed = await postEvent(ctx, world.headers.seller2, { ...lonely, seller_id: 2, marketplace_connection_id: world.connections['2:MKT'], author: 'someone else' });
    assert.equal(changed.statusCode, 409);
    assert.equal((await ctx.db.query(`SELECT 1 FROM events WHERE event_id = 'lonely'`)).rowCount, 1);

    // An event with a delivery keeps the body the delivery sends.
    const matched = await postEvent(ctx, world.headers.seller2, sampleEvent('order/create', world, { event_id: 'matched', seller_id: 2 }));
    assert.deepEqual(matched.json(), { event_id: 'matched', deliveries: 1 });
    const kept = await ctx.db.query<{ topic_path: string }>(`SELECT body->>'topic_path' AS topic_path FROM events WHERE event_id = 'matched'`);
    assert.equal(kept.rows[0]!.topic_path, 'order/MKT/create');
  });
});
