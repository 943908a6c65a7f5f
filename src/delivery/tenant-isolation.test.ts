import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { deliveriesOf, order, postEvent, sampleEvent, seedWorld, type World } from '../testing/events.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { createDeliverer, deliverDue, type Deliverer } from './dispatch/deliver.js';
import { seedWebhook, type SeededWebhook } from '../testing/deliveries.js';
import { Receiver } from '../testing/receiver.js';

/** Issue 10, problems 1 and 6: one seller can neither hold back nor squat another seller's notifications. */
describe('tenant isolation in ordering and idempotency', () => {
  let ctx: TestContext;
  let world: World;
  let receiver: Receiver;
  let deliverer: Deliverer;
  let hook: SeededWebhook;
  before(async () => {
    ctx = await createTestApp();
    world = await seedWorld(ctx);
    receiver = await Receiver.start();
    deliverer = createDeliverer({ ...ctx, workerId: 'isolation' });
  });
  after(async () => {
    await deliverer.close();
    await receiver.close();
    await ctx.close();
  });
  beforeEach(async () => {
    await ctx.db.exec(`DELETE FROM deliveries; DELETE FROM events; DELETE FROM webhooks;`);
    receiver.requests.length = 0;
    // The marketplace's webhook for all its sellers: the shared structure the old key leaked through.
    hook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url(), marketplaceCode: 'MKT', tenantKind: 'marketplace', tenantId: 'MKT', topic: 'order/create' });
  });

  const sellerOf = (index: number) => (JSON.parse(receiver.requests[index]!.body.toString()) as { seller_id: number }).seller_id;

  test("two sellers with the same entity id: seller 1's failing order does not hold back seller 2's", async () => {
    assert.equal((await postEvent(ctx, world.headers.seller1, sampleEvent('order/create', world, { entity_id: 'ORD-1' }))).statusCode, 202);
    assert.equal((await postEvent(ctx, world.headers.seller2, sampleEvent('order/create', world, { seller_id: 2, entity_id: 'ORD-1' }))).statusCode, 202);
    const [first, second] = await deliveriesOf(ctx.db, hook.id);
    assert.notEqual(first!.entity_key, second!.entity_key);

    receiver.respond(500);
    const results = await deliverDue(deliverer);
    // Both in the first round: seller 1's failure (a retry hours away on a long schedule) is not in seller 2's way.
    assert.equal(results.length, 2);
    assert.deepEqual(receiver.requests.map((_, index) => sellerOf(index)).sort(), [1, 2]);
    const statuses = Object.fromEntries((await deliveriesOf(ctx.db, hook.id)).map((row) => [row.id, row.status]));
    assert.deepEqual(Object.values(statuses).sort(), ['pending', 'succeeded']);

    // Seller 1's next order with the same entity still waits behind seller 1's retry (order per seller holds).
    await postEvent(ctx, world.headers.seller1, sampleEvent('order/create', world, { entity_id: 'ORD-1', author: 'again' }));
    assert.deepEqual(await deliverDue(deliverer), []);
  });

  test('two sellers with the same event_id: both accepted, each delivered, neither sees the other', async () => {
    const key = 'erp:ORD-1:v1';
    const one = await postEvent(ctx, world.headers.seller1, sampleEvent('order/create', world, { event_id: key }));
    const two = await postEvent(ctx, world.headers.seller2, sampleEvent('order/create', world, { event_id: key, seller_id: 2, entity_id: 'ORD-9', order: order('ORD-9') }));
    assert.deepEqual([one.statusCode, two.statusCode], [202, 202]);
    assert.deepEqual(two.json(), { event_id: key, deliveries: 1 });

    // A repeat answers from the caller's own scope: seller 1's retry gets seller 1's first answer...
    const again = await postEvent(ctx, world.headers.seller1, sampleEvent('order/create', world, { event_id: key }));
    assert.deepEqual([again.statusCode, again.json()], [202, { event_id: key, deliveries: 1 }]);
    // ...and a different event under seller 2's key conflicts with seller 2's own event only.
    const conflicting = await postEvent(ctx, world.headers.seller2, sampleEvent('order/create', world, { event_id: key, seller_id: 2, entity_id: 'ORD-10', order: order('ORD-10') }));
    assert.equal(conflicting.statusCode, 409);
    assert.doesNotMatch(conflicting.body, /ORD-1\b|seller_id":1/);
    assert.equal((await ctx.db.query(`SELECT 1 FROM events WHERE event_id = $1`, [key])).rowCount, 2);

    const results = await deliverDue(deliverer);
    assert.equal(results.length, 2);
    assert.deepEqual([sellerOf(0), sellerOf(1)].sort(), [1, 2]);

    // The marketplace's webhook got both: looking the key up never mixes the two events.
    const lookUp = (query = '') => ctx.app.inject({ url: `/v1/MKT/events/${key}/deliveries${query}`, headers: world.headers.marketplace });
    const ambiguous = await lookUp();
    assert.equal(ambiguous.statusCode, 409, ambiguous.body);
    assert.match(ambiguous.json().detail, /sellers 1, 2/);
    const second = (await lookUp('?seller_id=2')).json();
    assert.deepEqual([second.seller_id, second.entity_id, second.deliveries.length], [2, 'ORD-9', 1]);
    assert.equal((await lookUp('?seller_id=1')).json().entity_id, 'ORD-1');
    assert.equal((await lookUp('?seller_id=3')).statusCode, 404);
  });
});
