import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { createDeliverer, deliverDue, type Deliverer } from '../delivery/dispatch/deliver.js';
import { seedWebhook } from '../testing/deliveries.js';
import { Receiver } from '../testing/receiver.js';
import { order, postEvent, sampleEvent, seedWorld, type World } from '../testing/events.js';

/** Issue 30: the plaza-entity-sequence of each notification. */
describe('per-entity sequence numbers', () => {
  let ctx: TestContext;
  let world: World;
  let receiver: Receiver;
  let deliverer: Deliverer;

  before(async () => {
    ctx = await createTestApp({ DELIVERY_RETRY_SCHEDULE: '5s,30s', DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK: '100', ACCESS_TOKEN_TTL_SECONDS: String(86_400) });
    world = await seedWorld(ctx);
    receiver = await Receiver.start();
    deliverer = createDeliverer({ ...ctx, workerId: 'seq' });
  });
  after(async () => {
    await deliverer.close();
    await receiver.close();
    await ctx.close();
  });
  beforeEach(() => ctx.db.exec(`DELETE FROM deliveries; DELETE FROM events; DELETE FROM webhooks;`));

  const orderEvent = (reference: string, n: number) =>
    sampleEvent('order/create', world, { event_id: `${reference}-${n}-${Math.random()}`, entity_id: reference, order: order(reference, { id: n }) });
  const sequencesOf = async (webhookId: number, reference: string) => {
    const { rows } = await ctx.db.query<{ id: number; sequence: number }>(
      `SELECT id, sequence FROM deliveries WHERE webhook_id = $1 AND entity_key = $2 ORDER BY id`,
      [webhookId, `MKT:1:${reference}`],
    );
    return rows.map((row) => Number(row.sequence));
  };

  test('concurrent intakes of one entity get 1..n in delivery id order, without gaps or duplicates, per webhook', async () => {
    const first = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url(), marketplaceCode: 'MKT', topic: 'order/create' });
    const second = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url(), marketplaceCode: 'MKT', topic: 'order/create' });
    const n = 24;
    const answers = await Promise.all(Array.from({ length: n }, (_, i) => postEvent(ctx, world.headers.admin, orderEvent('ORD-7', i))));
    assert.deepEqual(answers.map((answer) => answer.statusCode), Array(n).fill(202));
    const expected = Array.from({ length: n }, (_, i) => i + 1);
    // Ordered by delivery id: the numbers follow the ids.
    assert.deepEqual(await sequencesOf(first.id, 'ORD-7'), expected);
    assert.deepEqual(await sequencesOf(second.id, 'ORD-7'), expected);

    // Another entity counts on its own; a webhook created later starts at 1.
    await postEvent(ctx, world.headers.admin, orderEvent('ORD-8', 0));
    const later = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url(), marketplaceCode: 'MKT', topic: 'order/create' });
    await postEvent(ctx, world.headers.admin, orderEvent('ORD-7', 99));
    assert.deepEqual(await sequencesOf(first.id, 'ORD-8'), [1]);
    assert.deepEqual(await sequencesOf(first.id, 'ORD-7'), [...expected, n + 1]);
    assert.deepEqual(await sequencesOf(later.id, 'ORD-7'), [1]);
  });

  test('the header goes out on the wire, outside the signature, and is the same on a retry', async () => {
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url('/seq'), marketplaceCode: 'MKT', topic: 'order/create' });
    await postEvent(ctx, world.headers.admin, orderEvent('ORD-9', 1));
    await postEvent(ctx, world.headers.admin, orderEvent('ORD-9', 2));
    receiver.respond(200, 500);
    await deliverDue(deliverer);
    // Per-entity order: the second goes once the first succeeded.
    await deliverDue(deliverer);
    ctx.clock.advanceSeconds(7);
    await deliverDue(deliverer);
    const sent = receiver.requestsTo('/seq');
    assert.equal(sent.length, 3);
    assert.deepEqual(sent.map((request) => request.headers['plaza-entity-sequence']), ['1', '2', '2']);
    assert.equal(sent[1]!.headers['webhook-id'], sent[2]!.headers['webhook-id']);
    // The signature still verifies with the Standard Webhooks library: it covers id, timestamp and body only.
    const verify = new Webhook(webhook.secret);
    assert.doesNotThrow(() => verify.verify(sent[2]!.body.toString('utf8'), sent[2]!.headers as Record<string, string>));
    // The attempt's recorded headers show it too.
    const { rows } = await ctx.db.query<{ request_headers: Record<string, string> }>(
      `SELECT a.request_headers FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id WHERE d.webhook_id = $1 ORDER BY a.id`,
      [webhook.id],
    );
    assert.deepEqual(rows.map((row) => row.request_headers['plaza-entity-sequence']), ['1', '2', '2']);
  });

  test('the delivery API shows the sequence', async () => {
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url(), marketplaceCode: 'MKT', topic: 'order/create', code: 'seq-api' });
    await postEvent(ctx, world.headers.admin, orderEvent('ORD-3', 1));
    await postEvent(ctx, world.headers.admin, orderEvent('ORD-3', 2));
    const response = await ctx.app.inject({ method: 'GET', url: `/v1/MKT/webhooks/${webhook.code}/deliveries`, headers: world.headers.admin });
    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json().items.map((item: { sequence: number }) => item.sequence), [2, 1]);
  });
});
