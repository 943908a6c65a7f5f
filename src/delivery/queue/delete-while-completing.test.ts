import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { seedWorld, type World } from '../../testing/events.js';
import { createTestApp, type TestContext } from '../../testing/test-app.js';
import { claim, createDeliverer, type Deliverer } from '../dispatch/deliver.js';
import { completeAttempts } from './complete.js';
import { clockOffsetMs } from '../../db/database-clock.js';
import { seedDelivery, seedWebhook } from '../../testing/deliveries.js';

/**
 * Issue 10, problem 4: DELETE of a webhook (webhook row, then its deliveries by cascade) racing a
 * batch of completions that touches the same webhook. Both take the webhook first, so neither
 * deadlocks: no 500, and no delivery lost (the other webhook's) or resurrected (the deleted one's).
 */
describe('deleting a webhook while its deliveries complete', () => {
  let ctx: TestContext;
  let world: World;
  let deliverer: Deliverer;
  before(async () => {
    ctx = await createTestApp({ DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK: '100', DELIVERY_TENANT_SHARE: '1' });
    world = await seedWorld(ctx);
    deliverer = createDeliverer({ ...ctx, workerId: 'completing' });
  });
  after(async () => {
    await deliverer.close();
    await ctx.close();
  });

  test('20 rounds of DELETE racing one completion batch over the deleted and a kept webhook', async () => {
    for (let round = 0; round < 20; round++) {
      const doomed = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: 'http://127.0.0.1:9/', marketplaceCode: 'MKT', code: `doomed-${round}` });
      const kept = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: 'http://127.0.0.1:9/', marketplaceCode: 'MKT', code: `kept-${round}` });
      for (let n = 0; n < 15; n++) {
        await seedDelivery(ctx.db, doomed, { now: ctx.clock.now() });
        await seedDelivery(ctx.db, kept, { now: ctx.clock.now() });
      }
      const claimed = (await claim(deliverer, 100)).deliveries;
      assert.equal(claimed.length, 30);
      // Interleaved webhooks in one batch: the completion needs both webhooks' rows.
      const records = claimed.map((delivery) => ({
        deliveryId: delivery.id, webhookId: delivery.webhook_id, startedAt: ctx.clock.now(), durationMs: 1,
        statusCode: round % 2 ? 500 : 200, error: null, responseBody: null,
        outcome: round % 2 ? { kind: 'retry' as const, delayMs: 5000 } : { kind: 'succeeded' as const },
      }));
      const [recorded, deleted] = await Promise.all([
        completeAttempts(ctx.db, records, { workerId: deliverer.workerId, clockOffsetMs: clockOffsetMs(ctx.clock), disableAfterDays: 5 }),
        ctx.app.inject({ method: 'DELETE', url: `/v1/MKT/webhooks/${doomed.code}`, headers: world.headers.admin }),
      ]);
      assert.equal(deleted.statusCode, 204, `round ${round}: ${deleted.body}`);

      const left = await ctx.db.query(`SELECT 1 FROM deliveries WHERE webhook_id = $1`, [doomed.id]);
      assert.equal(left.rowCount, 0, 'a deleted webhook\'s delivery came back');
      const keptRows = await ctx.db.query<{ status: string; attempts: number }>(`SELECT status, attempts FROM deliveries WHERE webhook_id = $1`, [kept.id]);
      assert.equal(keptRows.rowCount, 15);
      for (const row of keptRows.rows) assert.deepEqual(row, { status: round % 2 ? 'pending' : 'succeeded', attempts: 1 });
      const keptIds = claimed.filter((delivery) => delivery.webhook_id === kept.id).map((delivery) => delivery.id);
      assert.equal(keptIds.length, 15);
      assert.ok(keptIds.every((id) => recorded.recorded.has(id)));
      const orphans = await ctx.db.query(`SELECT 1 FROM delivery_attempts a LEFT JOIN deliveries d ON d.id = a.delivery_id WHERE d.id IS NULL`);
      assert.equal(orphans.rowCount, 0);
      await ctx.db.exec(`DELETE FROM deliveries; DELETE FROM events; DELETE FROM webhooks;`);
    }
  });
});
