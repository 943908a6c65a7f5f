import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { completeAttempts } from './queue/complete.js';
import { clockOffsetMs } from '../db/database-clock.js';
import { claim, createDeliverer, deliverDue, type Deliverer } from './dispatch/deliver.js';
import { attemptRows, deliveryRow, seedDelivery, seedWebhook } from '../testing/deliveries.js';
import { Receiver } from '../testing/receiver.js';
import { pruneExpired } from './maintenance.js';
import { disableFailingWebhooks } from './queue/webhook-health.js';

describe('delivery maintenance and edge cases', () => {
  let ctx: TestContext;
  let receiver: Receiver;
  let deliverer: Deliverer;
  before(async () => {
    ctx = await createTestApp({ DELIVERY_RETENTION_DAYS: '30', DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK: '100' });
    receiver = await Receiver.start();
    deliverer = createDeliverer({ ...ctx, workerId: 'maint' });
  });
  after(async () => {
    await deliverer.close();
    await receiver.close();
    await ctx.close();
  });
  beforeEach(() => ctx.db.query(`DELETE FROM deliveries`));

  test('prunes attempts, finished deliveries and their events after the retention; keeps unfinished work', async () => {
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
    const old = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
    await deliverDue(deliverer);
    const waiting = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
    await ctx.db.query(`UPDATE deliveries SET next_attempt_at = $2 WHERE id = $1`, [waiting.id, new Date(ctx.clock.now().getTime() + 86_400_000 * 60)]);

    assert.deepEqual(await pruneExpired(ctx.db, ctx.clock.now(), 30), { attempts: 0, deliveries: 0, events: 0 });
    const later = new Date(ctx.clock.now().getTime() + 31 * 86_400_000);
    assert.deepEqual(await pruneExpired(ctx.db, later, 30), { attempts: 1, deliveries: 1, events: 1 });
    assert.equal((await ctx.db.query(`SELECT 1 FROM deliveries WHERE id = $1`, [old.id])).rowCount, 0);
    assert.equal((await ctx.db.query(`SELECT 1 FROM events WHERE id = $1`, [old.eventRowId])).rowCount, 0);
    assert.equal((await deliveryRow(ctx.db, waiting.id)).status, 'pending');
    assert.equal((await ctx.db.query(`SELECT 1 FROM events WHERE id = $1`, [waiting.eventRowId])).rowCount, 1);
  });

  test('NOTIFICATION_RETENTION_DAYS keeps finished, superseded and held deliveries (and their events) for the feed; the longer retention wins', async () => {
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
    const sent = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
    await deliverDue(deliverer);
    const superseded = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
    const held = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
    await ctx.db.query(`UPDATE deliveries SET status = 'superseded', superseded_by = $2, completed_at = $3 WHERE id = $1`, [superseded.id, held.id, ctx.clock.now()]);
    await ctx.db.query(`UPDATE deliveries SET status = 'held' WHERE id = $1`, [held.id]);
    const kept = async () => (await ctx.db.query(`SELECT 1 FROM deliveries WHERE id = ANY($1::bigint[])`, [[sent.id, superseded.id, held.id]])).rowCount;
    const events = async () => (await ctx.db.query(`SELECT 1 FROM events WHERE id = ANY($1::bigint[])`, [[sent.eventRowId, superseded.eventRowId, held.eventRowId]])).rowCount;
    const day = (n: number) => new Date(ctx.clock.now().getTime() + n * 86_400_000);
    // 31 days: past DELIVERY_RETENTION_DAYS (30), within a feed of 60 days: all kept, events too.
    assert.equal((await pruneExpired(ctx.db, day(31), 30, 60)).deliveries, 0);
    assert.equal(await kept(), 3);
    assert.equal(await events(), 3);
    // 61 days: past both.
    assert.equal((await pruneExpired(ctx.db, day(61), 30, 60)).deliveries, 3);
    assert.equal(await kept(), 0);
    assert.equal(await events(), 0);
  });

  test('the periodic check disables webhooks failing for longer than the limit', async () => {
    const failing = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
    const healthy = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
    const now = ctx.clock.now();
    await ctx.db.query(`UPDATE webhooks SET failing_since = $2 WHERE id = $1`, [failing.id, new Date(now.getTime() - 6 * 86_400_000)]);
    await ctx.db.query(`UPDATE webhooks SET failing_since = $2 WHERE id = $1`, [healthy.id, new Date(now.getTime() - 4 * 86_400_000)]);
    assert.equal((await disableFailingWebhooks(ctx.db, now, 5)).length, 1);
    const { rows } = await ctx.db.query<{ id: number; active: boolean }>(`SELECT id, active FROM webhooks WHERE id = ANY($1::bigint[]) ORDER BY id`, [[failing.id, healthy.id]]);
    assert.deepEqual(rows.map((row) => row.active), [false, true]);
  });

  test('deleting a webhook deletes its deliveries; a send in flight then changes nothing', async () => {
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
    const inFlight = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
    await claim(deliverer, 10);
    await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
    await ctx.db.query(`DELETE FROM webhooks WHERE id = $1`, [webhook.id]);
    assert.equal((await ctx.db.query(`SELECT 1 FROM deliveries WHERE webhook_id = $1`, [webhook.id])).rowCount, 0);
    const recorded = (await completeAttempts(ctx.db, [
        { deliveryId: inFlight.id, webhookId: webhook.id, startedAt: ctx.clock.now(), durationMs: 1, statusCode: 200, error: null, responseBody: null, outcome: { kind: 'succeeded' } },
      ], { workerId: 'maint', clockOffsetMs: clockOffsetMs(ctx.clock), disableAfterDays: 5 })).recorded.has(inFlight.id);
    assert.equal(recorded, false);
  });

  test('concurrent claims never hand one delivery to two workers', async () => {
    const workers = [deliverer, createDeliverer({ ...ctx, workerId: 'w2' }), createDeliverer({ ...ctx, workerId: 'w3' })];
    try {
      for (let h = 0; h < 4; h++) {
        const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
        for (let i = 0; i < 8; i++) await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
      }
      const batches = await Promise.all(workers.map(async (worker) => (await claim(worker, 12)).deliveries));
      const ids = batches.flat().map((row) => row.id);
      assert.equal(new Set(ids).size, ids.length);
      const { rows } = await ctx.db.query<{ leased_by: string; n: number }>(`SELECT leased_by, count(*)::int AS n FROM deliveries WHERE leased_by IS NOT NULL GROUP BY leased_by`);
      const byWorker = Object.fromEntries(rows.map((row) => [row.leased_by, row.n]));
      workers.forEach((worker, index) => assert.equal(byWorker[worker.workerId] ?? 0, batches[index]!.length));
      // Rows skipped because another worker held them are taken by later rounds: all 32, each once.
      for (let round = 0; round < 10 && ids.length < 32; round++) ids.push(...((await claim(workers[round % 3]!, 12)).deliveries).map((row) => row.id));
      assert.equal(ids.length, 32);
      assert.equal(new Set(ids).size, 32);
    } finally {
      await workers[1]!.close();
      await workers[2]!.close();
    }
  });

  test('keeps the first 4 KiB of the answer, with NUL bytes replaced', async () => {
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
    receiver.respond({ status: 500, body: `a\u0000b${'x'.repeat(10_000)}` });
    const delivery = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
    await deliverDue(deliverer);
    const [attempt] = await attemptRows(ctx.db, delivery.id);
    assert.equal(attempt!.response_body!.length, 4096);
    assert.ok(attempt!.response_body!.startsWith('a\uFFFDbxxx'));
  });
});
