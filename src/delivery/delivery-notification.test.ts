import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { seedWorld, type World } from '../testing/events.js';
import { accessTokenFor, bearer, seedUser } from '../testing/fixtures.js';
import { seedDelivery, seedWebhook, type SeededWebhook } from '../testing/deliveries.js';
import { Receiver } from '../testing/receiver.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { createDeliverer, deliverDue, type Deliverer } from './dispatch/deliver.js';

/**
 * The API's delivery resource gives the notification body as sent (`notification`), spliced in as
 * stored: what the receiver got, token for token (1.0 stays 1.0, key order stays), for a delivered
 * and a pending delivery; the list does not carry it; other tenants get 404.
 */
describe('GET …/deliveries/{id}: notification, the body as sent', () => {
  let ctx: TestContext;
  let world: World;
  let deliverer: Deliverer;
  let receiver: Receiver;
  let webhook: SeededWebhook;
  let otherMarketplace: { authorization: string };
  // Written as a producer might never write it: parsed and stringified again it would change.
  const stored = (n: number) => `{"seller_id":1,"topic_path":"order/MKT/create","entity_id":"R-${n}","payload":{"order":{"total":10.50,"2":"second","1":"first","note":"ünï \\"q\\" \\u00e9"},"author":"x"}}`;

  before(async () => {
    ctx = await createTestApp({ ACCESS_TOKEN_TTL_SECONDS: '86400' });
    world = await seedWorld(ctx);
    receiver = await Receiver.start();
    deliverer = createDeliverer({ ...ctx, workerId: 'notification-test' });
    webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url('/hook'), marketplaceCode: 'MKT', code: 'sent-body', tenantKind: 'seller', tenantId: '1', topic: 'order/create' });
    const user = await seedUser(ctx.db, { role: 'marketplace', sellerId: 3, marketplaceCode: 'OTHER' });
    otherMarketplace = bearer(await accessTokenFor(ctx, user));
  });
  after(async () => {
    await deliverer.close();
    await receiver.close();
    await ctx.close();
  });

  const seedOrder = async (n: number) => {
    const delivery = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now(), entityKey: `MKT:1:R-${n}` });
    await ctx.db.query(`UPDATE events SET body = $2::json WHERE id = $1`, [delivery.eventRowId, stored(n)]);
    return delivery;
  };
  const get = (url: string, headers = world.headers.seller1) => ctx.app.inject({ method: 'GET', url, headers });
  const base = '/v1/MKT/webhooks/sent-body/deliveries';

  test('a delivered delivery: notification is the body the receiver got, byte for byte', async () => {
    const delivery = await seedOrder(1);
    const results = await deliverDue(deliverer);
    assert.equal(results.find((result) => result.deliveryId === delivery.id)?.outcome, 'succeeded');
    const received = receiver.requests.at(-1)!.body.toString('utf8');
    assert.equal(received, stored(1));

    const response = await get(`${base}/${delivery.id}`);
    assert.equal(response.statusCode, 200, response.body);
    assert.match(String(response.headers['content-type']), /^application\/json/);
    const detail = response.json();
    assert.equal(detail.status, 'succeeded');
    assert.equal(detail.attempts.length, 1);
    assert.deepEqual(detail.notification, JSON.parse(received));
    // Spliced, not rewritten: the receiver's bytes are in the answer as they are.
    assert.ok(response.body.endsWith(`,"notification":${received}}`), response.body);
    assert.ok(response.body.includes('"total":10.50'));

    const list = await get(base);
    assert.equal(list.statusCode, 200);
    assert.equal('notification' in list.json().items[0], false, 'the list carries no bodies');
  });

  test('a pending delivery: notification is the body it would be sent, the one the receiver then gets', async () => {
    await ctx.db.query(`UPDATE webhooks SET active = true WHERE id = $1`, [webhook.id]);
    ctx.clock.advance(1000);
    const delivery = await seedOrder(2);
    await ctx.db.query(`UPDATE deliveries SET next_attempt_at = now() + interval '1 hour' WHERE id = $1`, [delivery.id]);
    const pending = await get(`${base}/${delivery.id}`);
    assert.equal(pending.statusCode, 200, pending.body);
    assert.equal(pending.json().status, 'pending');
    assert.deepEqual(pending.json().attempts, []);
    assert.ok(pending.body.endsWith(`,"notification":${stored(2)}}`), pending.body);

    await ctx.db.query(`UPDATE deliveries SET next_attempt_at = now() - interval '1 second' WHERE id = $1`, [delivery.id]);
    const before = receiver.requests.length;
    await deliverDue(deliverer);
    assert.equal(receiver.requests.length, before + 1);
    assert.deepEqual(pending.json().notification, JSON.parse(receiver.requests.at(-1)!.body.toString('utf8')));
  });

  test('another tenant, or another marketplace, gets 404 and no body', async () => {
    const delivery = await seedOrder(3);
    const bySeller2 = await get(`${base}/${delivery.id}`, world.headers.seller2);
    assert.equal(bySeller2.statusCode, 404);
    const elsewhere = await get(`/v1/OTHER/webhooks/sent-body/deliveries/${delivery.id}`, otherMarketplace);
    assert.equal(elsewhere.statusCode, 404);
    for (const response of [bySeller2, elsewhere]) assert.doesNotMatch(response.body, /R-3|notification/);
    // The owner reads it; a delivery id of its webhook's that does not exist is 404 too.
    assert.equal((await get(`${base}/${delivery.id}`)).statusCode, 200);
    assert.equal((await get(`${base}/${delivery.id + 1000}`)).statusCode, 404);
  });
});
