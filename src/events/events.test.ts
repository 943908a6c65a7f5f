import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { DELIVERY_CHANNEL } from '../webhooks/deliveries.repository.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { EVENT_TOPICS } from './event-schema.js';
import { deliveriesOf, insertWebhook, order, postEvent, publication, sampleEvent, seedWorld, type World } from '../testing/events.js';

describe('event intake', () => {
  let ctx: TestContext;
  let world: World;
  before(async () => {
    ctx = await createTestApp();
    world = await seedWorld(ctx);
  });
  after(() => ctx.close());
  beforeEach(async () => {
    // And the snapshots: each test starts without an earlier event of its entities (change-aware-events.test.ts).
    await ctx.db.exec(`DELETE FROM deliveries; DELETE FROM events; DELETE FROM webhooks; DELETE FROM entity_snapshots;`);
  });

  const storedBody = async (eventId: string) => {
    const { rows } = await ctx.db.query<{ body: unknown }>(`SELECT body FROM events WHERE marketplace_code = 'MKT' AND event_id = $1`, [eventId]);
    assert.equal(rows.length, 1);
    return rows[0]!.body;
  };

  test('publication/create: the envelope is exactly the spec shape, and one delivery is pending', async () => {
    const hook = await insertWebhook(ctx.db, { topic: 'publication/create' });
    const event = sampleEvent('publication/create', world, { event_id: 'pub-1' });
    const response = await postEvent(ctx, world.headers.admin, event);
    assert.equal(response.statusCode, 202);
    assert.deepEqual(response.json(), { event_id: 'pub-1', deliveries: 1 });

    const body = (await storedBody('pub-1')) as Record<string, unknown>;
    assert.deepEqual(Object.keys(body), ['seller_id', 'marketplace_connection_id', 'topic_path', 'entity_id', 'payload']);
    assert.equal(body.seller_id, 1);
    assert.equal(body.marketplace_connection_id, world.connections['1:MKT']);
    assert.equal(body.topic_path, 'publication/MKT/create');
    assert.equal(body.entity_id, 101);
    assert.deepEqual(body.payload, { publication: publication(101), changes: null, author: 'jane@seller.example' });
    // The stored text is what the worker sends (and signs): compact, in the spec's key order.
    const { rows } = await ctx.db.query<{ text: string }>(`SELECT body::text AS text FROM events WHERE event_id = 'pub-1'`);
    assert.equal(rows[0]!.text, JSON.stringify(body));

    const [delivery, ...more] = await deliveriesOf(ctx.db, hook.id);
    assert.equal(more.length, 0);
    assert.equal(delivery!.status, 'pending');
    assert.equal(delivery!.attempts, 0);
    // Ordered per (webhook, marketplace, seller, entity): never shared across sellers.
    assert.equal(delivery!.entity_key, 'MKT:1:101');
    assert.match(delivery!.message_id, /^msg_[0-9a-f]{32}$/);
    // Due at once by the database's clock, which follows the test clock (database-clock.ts). The
    // test clock stands still, so `due` is how long the intake took after reading it: a few
    // milliseconds, but seconds on a machine busy with other suites (a 2 s bound was flaky there).
    const due = new Date(delivery!.next_attempt_at).getTime() - ctx.clock.now().getTime();
    assert.ok(due > -1000 && due < 10_000, `due ${due} ms from now`);
  });

  test('each topic has its topic_path and its envelope kind', async () => {
    const expected: Record<string, string> = {
      'publication/create': 'publication/MKT/create',
      'publication/update': 'publication/MKT/update',
      'order/create': 'order/MKT/create',
      'order/update': 'order/MKT/update',
      'order/invoice_upload': 'order/MKT/invoice_upload',
      'order/status_change': 'order/MKT/status_changed/entered_APRO',
    };
    assert.deepEqual(Object.keys(expected).sort(), [...EVENT_TOPICS].sort());
    for (const topic of EVENT_TOPICS) {
      // Each topic's event as the first of its entity: an update equal to the entity's last snapshot would send nothing.
      await ctx.db.exec(`DELETE FROM entity_snapshots`);
      const hook = await insertWebhook(ctx.db, { topic });
      const response = await postEvent(ctx, world.headers.admin, sampleEvent(topic, world, { event_id: `t-${topic}` }));
      assert.equal(response.statusCode, 202, topic);
      assert.equal(response.json().deliveries, 1, topic);
      assert.equal((await deliveriesOf(ctx.db, hook.id)).length, 1, topic);
      const body = (await storedBody(`t-${topic}`)) as Record<string, unknown>;
      assert.equal(body.topic_path, expected[topic], topic);
      if (topic.startsWith('publication/')) {
        assert.deepEqual(Object.keys(body), ['seller_id', 'marketplace_connection_id', 'topic_path', 'entity_id', 'payload'], topic);
        assert.deepEqual(Object.keys(body.payload as object), ['publication', 'changes', 'author'], topic);
      } else {
        assert.deepEqual(Object.keys(body), ['seller_id', 'topic_path', 'entity_id', 'payload'], topic);
        assert.equal(body.entity_id, 'ORD-1');
        assert.equal(body.seller_id, 1);
        assert.deepEqual(Object.keys(body.payload as object), ['order', 'state_from', 'state_to', 'author'], topic);
      }
    }
  });

  test('a sale envelope: order passed through, state_from null when absent on the first event (then the state it was in), state_to kept', async () => {
    // Bodies are stored for events that reached a webhook (an event that matched none keeps none).
    await insertWebhook(ctx.db, { topic: 'order/status_change' });
    await insertWebhook(ctx.db, { topic: 'order/update' });
    await postEvent(ctx, world.headers.admin, sampleEvent('order/status_change', world, { event_id: 'sc-1', state_to: 'PROC' }));
    assert.deepEqual(await storedBody('sc-1'), {
      seller_id: 1,
      topic_path: 'order/MKT/status_changed/entered_PROC',
      entity_id: 'ORD-1',
      payload: { order: order('ORD-1'), state_from: null, state_to: 'PROC', author: 'system' },
    });
    await postEvent(ctx, world.headers.admin, sampleEvent('order/update', world, { event_id: 'up-1' }));
    // Left out, state_from is the state the order was in (change-aware-events.test.ts).
    assert.deepEqual((await storedBody('up-1') as { payload: unknown }).payload, { order: order('ORD-1'), state_from: 'PROC', state_to: null, author: 'system' });
  });

  test('changes are passed through on publication/update', async () => {
    const changes = { price: { from: 10, to: 12 } };
    await insertWebhook(ctx.db, { topic: 'publication/update' });
    await postEvent(ctx, world.headers.admin, sampleEvent('publication/update', world, { event_id: 'chg', changes }));
    assert.deepEqual(((await storedBody('chg')) as { payload: { changes: unknown } }).payload.changes, changes);
  });

  test('seller filter: `*` and the event\'s seller match, another seller does not', async () => {
    const all = await insertWebhook(ctx.db, { topic: 'order/create', sellerId: '*' });
    const one = await insertWebhook(ctx.db, { topic: 'order/create', sellerId: '1' });
    const two = await insertWebhook(ctx.db, { topic: 'order/create', sellerId: '2' });
    const response = await postEvent(ctx, world.headers.admin, sampleEvent('order/create', world));
    assert.equal(response.json().deliveries, 2);
    assert.equal((await deliveriesOf(ctx.db, all.id)).length, 1);
    assert.equal((await deliveriesOf(ctx.db, one.id)).length, 1);
    assert.equal((await deliveriesOf(ctx.db, two.id)).length, 0);
  });

  test('tenancy: a seller\'s webhook gets only its own seller\'s events; marketplace and admin webhooks get connected sellers', async () => {
    const seller1 = await insertWebhook(ctx.db, { tenantKind: 'seller', tenantId: '1', topic: 'order/create' });
    const seller2 = await insertWebhook(ctx.db, { tenantKind: 'seller', tenantId: '2', topic: 'order/create' });
    const market = await insertWebhook(ctx.db, { tenantKind: 'marketplace', tenantId: 'MKT', topic: 'order/create' });
    const otherMarket = await insertWebhook(ctx.db, { tenantKind: 'marketplace', tenantId: 'OTHER', marketplaceCode: 'OTHER', topic: 'order/create' });
    // A seller-2 webhook that asks for seller 1 still gets nothing: the owner may not see seller 1.
    const spying = await insertWebhook(ctx.db, { tenantKind: 'seller', tenantId: '2', topic: 'order/create', sellerId: '1' });

    assert.equal((await postEvent(ctx, world.headers.admin, sampleEvent('order/create', world))).json().deliveries, 2);
    assert.equal((await deliveriesOf(ctx.db, seller1.id)).length, 1);
    assert.equal((await deliveriesOf(ctx.db, market.id)).length, 1);
    for (const hook of [seller2, otherMarket, spying]) assert.equal((await deliveriesOf(ctx.db, hook.id)).length, 0);

    const fromSeller2 = sampleEvent('order/create', world, { seller_id: 2 });
    assert.equal((await postEvent(ctx, world.headers.admin, fromSeller2)).json().deliveries, 2);
    assert.equal((await deliveriesOf(ctx.db, seller2.id)).length, 1);
    assert.equal((await deliveriesOf(ctx.db, seller1.id)).length, 1);
    assert.equal((await deliveriesOf(ctx.db, market.id)).length, 2);
  });

  test('a seller with no connection to the marketplace is refused, and nothing is queued', async () => {
    const market = await insertWebhook(ctx.db, { tenantKind: 'marketplace', tenantId: 'MKT', topic: 'order/create' });
    const response = await postEvent(ctx, world.headers.admin, sampleEvent('order/create', world, { seller_id: 3 }));
    assert.equal(response.statusCode, 400);
    assert.deepEqual(response.json().errors.map((e: { field: string }) => e.field), ['body.seller_id']);
    assert.equal((await deliveriesOf(ctx.db, market.id)).length, 0);
    assert.equal((await ctx.db.query(`SELECT 1 FROM events`)).rowCount, 0);
  });

  test('a status change reaches order/status_change and the subscribers of the status entered, not of other statuses', async () => {
    const any = await insertWebhook(ctx.db, { topic: 'order/status_change' });
    const apro = await insertWebhook(ctx.db, { topic: 'order/status_change/entered_APRO' });
    const proc = await insertWebhook(ctx.db, { topic: 'order/status_change/entered_PROC' });
    const update = await insertWebhook(ctx.db, { topic: 'order/update' });
    const response = await postEvent(ctx, world.headers.admin, sampleEvent('order/status_change', world, { state_from: 'PROC', state_to: 'APRO' }));
    assert.equal(response.json().deliveries, 2);
    assert.equal((await deliveriesOf(ctx.db, any.id)).length, 1);
    assert.equal((await deliveriesOf(ctx.db, apro.id)).length, 1);
    assert.equal((await deliveriesOf(ctx.db, proc.id)).length, 0);
    assert.equal((await deliveriesOf(ctx.db, update.id)).length, 0);
  });

  test('inactive webhooks and webhooks of another marketplace get nothing', async () => {
    const inactive = await insertWebhook(ctx.db, { topic: 'order/create', active: false });
    const elsewhere = await insertWebhook(ctx.db, { topic: 'order/create', marketplaceCode: 'OTHER' });
    const response = await postEvent(ctx, world.headers.admin, sampleEvent('order/create', world));
    assert.equal(response.statusCode, 202);
    assert.equal(response.json().deliveries, 0);
    assert.equal((await deliveriesOf(ctx.db, inactive.id)).length, 0);
    assert.equal((await deliveriesOf(ctx.db, elsewhere.id)).length, 0);
  });

  test('outbox: the deliveries are committed when the 202 is answered, with unique message ids', async () => {
    const hooks = [];
    for (let i = 0; i < 3; i++) hooks.push(await insertWebhook(ctx.db, { topic: 'publication/update' }));
    const response = await postEvent(ctx, world.headers.admin, sampleEvent('publication/update', world));
    assert.equal(response.statusCode, 202);
    const { rows } = await ctx.db.query<{ webhook_id: number; message_id: string; event_id: string }>(
      `SELECT d.webhook_id, d.message_id, e.event_id FROM deliveries d JOIN events e ON e.id = d.event_id ORDER BY d.webhook_id`,
    );
    assert.deepEqual(rows.map((row) => Number(row.webhook_id)), hooks.map((hook) => hook.id));
    assert.ok(rows.every((row) => row.event_id === response.json().event_id));
    assert.equal(new Set(rows.map((row) => row.message_id)).size, 3);
  });

  test('fan-out to 2 000 webhooks is one answer with 2 000 pending deliveries', async () => {
    await ctx.db.query(
      `INSERT INTO webhooks (tenant_kind, tenant_id, marketplace_code, code, name, topic, callback_url, secret_encrypted)
       SELECT 'admin', '*', 'MKT', 'bulk_' || n, 'bulk', 'order/create', 'https://receiver.example/' || n, 'v1.x.x.x' FROM generate_series(1, 2000) AS n`,
    );
    const response = await postEvent(ctx, world.headers.admin, sampleEvent('order/create', world));
    assert.equal(response.json().deliveries, 2000);
    const { rows } = await ctx.db.query<{ count: number }>(`SELECT count(DISTINCT message_id)::int AS count FROM deliveries WHERE status = 'pending'`);
    assert.equal(rows[0]!.count, 2000);
  });

  test('an accepted event wakes the delivery workers (NOTIFY plaza_deliveries on commit)', async () => {
    await insertWebhook(ctx.db, { topic: 'order/create' });
    let woke!: (payload: string) => void;
    const woken = new Promise<string>((resolve) => (woke = resolve));
    const stop = await ctx.db.listen(DELIVERY_CHANNEL, (payload) => woke(payload));
    try {
      assert.equal((await postEvent(ctx, world.headers.admin, sampleEvent('order/create', world))).statusCode, 202);
      assert.equal(await woken, '');
    } finally {
      await stop();
    }
  });

  test('the OpenAPI document describes the intake and the delivery endpoints', async () => {
    const document = (await ctx.app.inject({ url: '/openapi.json' })).json();
    assert.ok(document.paths['/v1/{marketplace_code}/events'].post.responses['202']);
    assert.ok(document.paths['/v1/{marketplace_code}/webhooks/{code}/deliveries'].get);
    assert.ok(document.paths['/v1/{marketplace_code}/webhooks/{code}/deliveries/{id}'].get);
    assert.ok(document.paths['/v1/{marketplace_code}/webhooks/{code}/deliveries/{id}/retry'].post);
    assert.ok(document.paths['/v1/{marketplace_code}/webhooks/{code}/replay'].post);
  });

  test('without event_id a UUID is generated', async () => {
    const response = await postEvent(ctx, world.headers.admin, sampleEvent('order/create', world));
    assert.match(response.json().event_id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});
