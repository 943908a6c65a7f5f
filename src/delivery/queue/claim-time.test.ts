import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Database } from '../../db/database.js';
import { clockOffsetMs, dbNow } from '../../db/database-clock.js';
import { createTestApp, type TestContext } from '../../testing/test-app.js';
import { seedDelivery, seedWebhook } from '../../testing/deliveries.js';
import { claimWork, createDeliverer } from '../dispatch/deliver.js';

/** The database, with `beforeTake` run before the claim's take (its only statement that locks rows). */
function withHookBeforeTake(db: Database, beforeTake: () => Promise<unknown>): Database {
  return {
    ...db,
    transaction: (work) =>
      db.transaction((tx) =>
        work({
          exec: (sql) => tx.exec(sql),
          query: async (sql, params, options) => {
            if (sql.includes('SKIP LOCKED')) await beforeTake();
            return tx.query(sql, params, options);
          },
        }),
      ),
  };
}

/**
 * A claim counts what is due at one time, its first statement's: the worker trusts its `left` to know
 * whether another claim could find work (worker.ts, `owed`). A row that fell due between the read
 * and the take once filled the quota of a counted row that could not go (waiting behind its
 * entity), so the claim said nothing was left and that row waited for the poll (a lost wake that
 * left one of 300 deliveries pending in worker-wake.test.ts).
 */
describe('the time a claim counts as now', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestApp({ DELIVERY_CONCURRENCY: '10' });
  });
  after(async () => {
    await ctx.close();
  });

  test('a row that falls due during a claim is not taken by it; the row it counted and could not take is reported left', async () => {
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: 'http://127.0.0.1:9/' });
    const now = ctx.clock.now();
    // The entity's first delivery waits for its retry, due in an hour; its second is due and waits behind it.
    const first = await seedDelivery(ctx.db, webhook, { now, entityKey: 'mkt:1:order-1' });
    const retryDue = (interval: string) =>
      ctx.db.query(`UPDATE deliveries SET attempts = 1, next_attempt_at = ${dbNow(2)} + $3::interval WHERE id = $1`, [first.id, clockOffsetMs(ctx.clock), interval]);
    await retryDue('1 hour');
    await seedDelivery(ctx.db, webhook, { now, entityKey: 'mkt:1:order-1' });

    // The retry falls due after the claim's read and before its take.
    let takes = 0;
    const deliverer = createDeliverer({ ...ctx, db: withHookBeforeTake(ctx.db, () => (takes++, retryDue('0 seconds'))) });
    try {
      const claim = await claimWork(deliverer, 10);
      assert.equal(takes, 1, 'the hook ran before the take');
      assert.deepEqual(claim.deliveries.map((delivery) => delivery.id), [], 'the retry fell due after the claim counted the due rows');
      assert.equal(claim.left, true, 'the second delivery was counted due and left behind');
    } finally {
      await deliverer.close();
    }
  });
});
