import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestContext } from '../../testing/test-app.js';
import { recordRoundTrips } from '../../testing/round-trips.js';
import { seedDelivery, seedWebhook } from '../../testing/deliveries.js';
import { claimWork, createDeliverer, type Deliverer } from '../dispatch/deliver.js';
import { completeAttempts } from './complete.js';
import { clockOffsetMs } from '../../db/database-clock.js';

/**
 * The round trips of the running worker's claim and of its records (docs/delivery.md, "The claim"):
 * a delivery waits for the claim in progress and then its own, so at low load each round trip is
 * latency (issue 29, scenario 5). A statement more fails here, on purpose; if one is needed, change
 * the count here and the explanation there, with the reason.
 */
describe('round trips of a claim and of a batch of records', () => {
  let ctx: TestContext;
  let deliverer: Deliverer;
  before(async () => {
    ctx = await createTestApp({ DELIVERY_CONCURRENCY: '10' });
    deliverer = createDeliverer(ctx);
  });
  after(async () => {
    await deliverer.close();
    await ctx.close();
  });

  test('a claim that takes rows: BEGIN with the settings, lanes, streams, take, COMMIT', async () => {
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: 'http://127.0.0.1:9/' });
    for (let i = 0; i < 3; i++) await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
    let taken = 0;
    const statements = await recordRoundTrips(async () => {
      taken = (await claimWork(deliverer, 10)).deliveries.length;
    });
    assert.equal(taken, 3);
    assert.equal(statements.length, 5, statements.join('\n'));
    assert.match(statements[0]!, /^BEGIN; SET LOCAL synchronous_commit = off; SET LOCAL /);
    assert.equal(statements.at(-1), 'COMMIT');
  });

  test('a claim that finds nothing due: BEGIN with the settings, lanes, COMMIT', async () => {
    const statements = await recordRoundTrips(async () => {
      assert.deepEqual((await claimWork(deliverer, 10)).deliveries, []);
    });
    assert.equal(statements.length, 3, statements.join('\n'));
  });

  test('a batch of successful records: BEGIN with the setting, webhook locks, records, COMMIT', async () => {
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: 'http://127.0.0.1:9/' });
    await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
    const [claimed] = (await claimWork(deliverer, 10)).deliveries;
    const record = {
      deliveryId: claimed!.id, webhookId: webhook.id, startedAt: ctx.clock.now(), durationMs: 1,
      statusCode: 200, error: null, responseBody: '', outcome: { kind: 'succeeded' as const },
    };
    let recorded = 0;
    const statements = await recordRoundTrips(async () => {
      const result = await completeAttempts(ctx.db, [record], { workerId: deliverer.workerId, clockOffsetMs: clockOffsetMs(ctx.clock), disableAfterDays: 5 });
      recorded = result.recorded.size;
    });
    assert.equal(recorded, 1);
    assert.equal(statements.length, 4, statements.join('\n'));
  });
});
