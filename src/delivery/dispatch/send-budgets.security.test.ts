import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestContext } from '../../testing/test-app.js';
import { createDeliverer, deliverDue, type Deliverer, type DeliveryResult } from './deliver.js';
import { databaseNow, deliveryRow, seedDelivery, seedWebhook } from '../../testing/deliveries.js';
import { Receiver } from '../../testing/receiver.js';

const body = { payload: 'x'.repeat(10_000) };

/** Delivers what is due until nothing is left, moving the test clock past each next due time. */
async function deliverAll(ctx: TestContext, deliverer: Deliverer, rounds = 10): Promise<DeliveryResult[]> {
  const all: DeliveryResult[] = [];
  for (let i = 0; i < rounds; i++) {
    all.push(...(await deliverDue(deliverer)));
    const { rows } = await ctx.db.query<{ next: Date | null }>(`SELECT min(next_attempt_at) AS next FROM deliveries WHERE status = 'pending'`);
    if (!rows[0]!.next) return all;
    // To the due time measured from the test clock, not the database's: the database's time runs on with
    // real time and the budgets' clock (the test clock) does not, so advancing only to the database's
    // due time could leave a budget short and postpone again, more so on a slow machine.
    ctx.clock.advance(Math.max(0, rows[0]!.next.getTime() - ctx.clock.now().getTime()) + 1);
  }
  throw new Error('deliveries still pending');
}

describe('send budgets: keyed by the address connected to, and per tenant', () => {
  describe('per destination address', () => {
    let ctx: TestContext;
    let deliverer: Deliverer;
    let receiver: Receiver;
    before(async () => {
      // Room for one 10 kB notification per destination, refilled at 1 kB/s; no tenant budget.
      ctx = await createTestApp({ DELIVERY_HOST_BURST_BYTES: '15000', DELIVERY_HOST_BYTES_PER_SECOND: '1000', TENANT_SEND_BYTES_PER_MINUTE: '0' });
      // Two names of the receiver, as a DNS server under the tenant's control could give them.
      deliverer = createDeliverer({ ...ctx, resolve: async (name) => (['localhost', 'receiver.example'].includes(name) ? ['127.0.0.1'] : []) });
      receiver = await Receiver.start();
    });
    after(async () => {
      await deliverer.close();
      await receiver.close();
      await ctx.close();
    });

    test('five spellings of one loopback receiver share one budget', async () => {
      const port = receiver.port;
      const spellings = [`127.0.0.1:${port}`, `127.1:${port}`, `localhost:${port}`, `[::ffff:127.0.0.1]:${port}`, `receiver.example:${port}`];
      const deliveries = [];
      for (const [i, host] of spellings.entries()) {
        const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: `http://${host}/spelling${i}` });
        deliveries.push(await seedDelivery(ctx.db, webhook, { now: ctx.clock.now(), body }));
      }
      const first = await deliverDue(deliverer);
      assert.deepEqual(first.map((result) => result.outcome).sort(), ['postponed', 'postponed', 'postponed', 'postponed', 'succeeded']);
      assert.equal(receiver.requests.length, 1);
      for (const delivery of deliveries) {
        const row = await deliveryRow(ctx.db, delivery.id);
        assert.ok(row.status === 'succeeded' || (row.status === 'pending' && row.attempts === 0), JSON.stringify(row));
      }
      // Nothing dropped: all of them arrive as the budget refills, one at a time.
      const rest = await deliverAll(ctx, deliverer);
      assert.equal(rest.filter((result) => result.outcome === 'succeeded').length, 4);
      assert.deepEqual(receiver.requests.map((request) => request.url).sort(), spellings.map((_, i) => `/spelling${i}`));
    });
  });

  describe('per tenant', () => {
    let ctx: TestContext;
    let deliverer: Deliverer;
    let receiver: Receiver;
    before(async () => {
      // 15 kB per minute per tenant (one 10 kB notification at once, then 250 bytes per second); no destination budget.
      ctx = await createTestApp({ TENANT_SEND_BYTES_PER_MINUTE: '15000', DELIVERY_HOST_BYTES_PER_SECOND: '0' });
      deliverer = createDeliverer(ctx);
      receiver = await Receiver.start();
    });
    after(async () => {
      await deliverer.close();
      await receiver.close();
      await ctx.close();
    });

    test('a tenant over its send budget waits (postponed, nothing dropped); another tenant is sent to at once', async () => {
      const heavy = [];
      for (let i = 0; i < 3; i++) {
        const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url(`/heavy${i}`), tenantKind: 'seller', tenantId: '1' });
        heavy.push(await seedDelivery(ctx.db, webhook, { now: ctx.clock.now(), body }));
      }
      const other = await seedDelivery(ctx.db, await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url('/other'), tenantKind: 'seller', tenantId: '2' }), { now: ctx.clock.now(), body });

      const first = await deliverDue(deliverer);
      const outcome = (id: number) => first.find((result) => result.deliveryId === id)?.outcome;
      assert.equal(outcome(other.id), 'succeeded', 'the other tenant is not held back');
      assert.deepEqual(heavy.map((delivery) => outcome(delivery.id)).sort(), ['postponed', 'postponed', 'succeeded']);
      for (const delivery of heavy) {
        const row = await deliveryRow(ctx.db, delivery.id);
        if (row.status !== 'succeeded') {
          assert.equal(row.status, 'pending');
          assert.equal(row.attempts, 0, 'a postponement is not an attempt');
          // About 5 kB left, 10 kB needed, 250 bytes per second: about 20 s.
          const waitMs = row.next_attempt_at.getTime() - (await databaseNow(ctx.db, ctx.clock));
          assert.ok(waitMs >= 15_000 && waitMs <= 25_000, `postponed by ${waitMs} ms`);
        }
      }
      await deliverAll(ctx, deliverer);
      assert.deepEqual(receiver.requests.map((request) => request.url).sort(), ['/heavy0', '/heavy1', '/heavy2', '/other']);
      for (const delivery of heavy) assert.deepEqual(await deliveryRow(ctx.db, delivery.id).then((row) => [row.status, row.attempts]), ['succeeded', 1]);
    });
  });
});
