import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { createTestApp, type TestContext } from '../../testing/test-app.js';
import { eventually } from '../../testing/wait.js';
import { claim, createDeliverer, deliverDue, type Deliverer } from '../dispatch/deliver.js';
import { attemptRows, seedDelivery, seedWebhook } from '../../testing/deliveries.js';
import { Receiver } from '../../testing/receiver.js';
import { QueueVacuum } from './vacuum.js';

/** Migration 011: deliveries split by status into the queue and the rest; what the split must keep. */
describe('the delivery queue partition', () => {
  let ctx: TestContext;
  let receiver: Receiver;
  let deliverer: Deliverer;
  before(async () => {
    ctx = await createTestApp({ DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK: '100' });
    receiver = await Receiver.start();
    deliverer = createDeliverer({ ...ctx, workerId: 'queue-test' });
  });
  after(async () => {
    await deliverer.close();
    await receiver.close();
    await ctx.close();
  });

  const partitionOf = async (id: number) =>
    (await ctx.db.query<{ partition: string }>(`SELECT tableoid::regclass::text AS partition FROM deliveries WHERE id = $1`, [id])).rows[0]?.partition;

  test('a delivery stays in deliveries_queue while pending or delivering and moves to deliveries_at_rest when it ends, keeping its id', async () => {
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
    const delivery = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
    assert.equal(await partitionOf(delivery.id), 'deliveries_queue');
    const [claimed] = (await claim(deliverer, 1)).deliveries;
    assert.equal(claimed?.id, delivery.id);
    assert.equal(await partitionOf(delivery.id), 'deliveries_queue');
    await ctx.db.query(`UPDATE deliveries SET status = 'pending', leased_by = NULL, lease_expires_at = NULL WHERE id = $1`, [delivery.id]);

    const [result] = await deliverDue(deliverer);
    assert.equal(result?.outcome, 'succeeded');
    assert.equal(await partitionOf(delivery.id), 'deliveries_at_rest');
    assert.equal((await attemptRows(ctx.db, delivery.id)).length, 1);
    // A retry from the API moves it back, still one row with its id and message id.
    await ctx.db.query(`UPDATE deliveries SET status = 'pending' WHERE id = $1`, [delivery.id]);
    const rows = await ctx.db.query<{ partition: string; message_id: string }>(
      `SELECT tableoid::regclass::text AS partition, message_id FROM deliveries WHERE id = $1`,
      [delivery.id],
    );
    assert.deepEqual(rows.rows, [{ partition: 'deliveries_queue', message_id: delivery.messageId }]);
    await ctx.db.query(`DELETE FROM deliveries WHERE id = $1`, [delivery.id]);
  });

  test("deleting deliveries deletes their attempts (what the foreign key's cascade did), whatever deletes them", async () => {
    const gone = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
    const kept = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
    const ofGone = [await seedDelivery(ctx.db, gone, { now: ctx.clock.now() }), await seedDelivery(ctx.db, gone, { now: ctx.clock.now() })];
    const ofKept = await seedDelivery(ctx.db, kept, { now: ctx.clock.now() });
    receiver.respond(500, 500, 500);
    await deliverDue(deliverer);
    for (const delivery of [...ofGone, ofKept]) assert.equal((await attemptRows(ctx.db, delivery.id)).length, 1);
    // One pending (back in the queue after the 500), one at rest: both kinds of rows.
    await ctx.db.query(`UPDATE deliveries SET status = 'failed' WHERE id = $1`, [ofGone[1]!.id]);

    await ctx.db.query(`DELETE FROM webhooks WHERE id = $1`, [gone.id]);
    for (const delivery of ofGone) assert.equal((await attemptRows(ctx.db, delivery.id)).length, 0, 'cascade from the webhook');
    assert.equal((await attemptRows(ctx.db, ofKept.id)).length, 1, 'another webhook keeps its attempts');
    await ctx.db.query(`DELETE FROM events WHERE id = $1`, [ofKept.eventRowId]);
    assert.equal((await attemptRows(ctx.db, ofKept.id)).length, 0, 'cascade from the event');
  });

  test('the worker vacuums the queue once enough deliveries have finished', async () => {
    const vacuumCount = async () => {
      await ctx.db.query(`SELECT pg_stat_clear_snapshot()`);
      return (await ctx.db.query<{ n: number }>(`SELECT vacuum_count::int AS n FROM pg_stat_user_tables WHERE relname = 'deliveries_queue'`)).rows[0]!.n;
    };
    const vacuum = new QueueVacuum(ctx.db, pino({ level: 'silent' }), 3, 0);
    const before = await vacuumCount();
    vacuum.noteFinished();
    vacuum.noteFinished();
    await vacuum.idle();
    assert.equal(await vacuumCount(), before, 'not before the third');
    vacuum.noteFinished();
    await vacuum.idle();
    await eventually(async () => (await vacuumCount()) !== before, { timeoutMs: 5000 });
    assert.equal(await vacuumCount(), before + 1);
  });
});
