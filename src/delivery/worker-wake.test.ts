import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import pino from 'pino';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { deliveryRow, seedDelivery, seedWebhook, type SeededWebhook } from '../testing/deliveries.js';
import type { Database, Queryable } from '../db/database.js';
import { Receiver } from '../testing/receiver.js';
import { eventually, waitFor } from '../testing/wait.js';
import { DELIVERY_CHANNEL } from '../webhooks/deliveries.repository.js';
import { startDeliveryWorker } from './worker.js';

const logger = pino({ level: 'silent' });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The worker must never need its safety-net poll while it runs: every delivery is claimed because
 * an intake's NOTIFY, the end of a send, a contended lane or the next due time woke a claim. With
 * the poll an hour away, a wake that is lost shows here as deliveries left pending.
 */
describe('the worker wakes for every delivery without the poll', () => {
  const settings = {
    DELIVERY_POLL_INTERVAL_MS: '3600000',
    DELIVERY_CONCURRENCY: '6',
    DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK: '3',
    DELIVERY_TENANT_SHARE: '1',
  };

  /**
   * 12 producers write 25 deliveries each, concurrently, into 3 webhooks, 4 sellers and a few
   * entities per seller (so that deliveries also wait behind earlier ones of their entity), each in a
   * transaction that notifies as the intake does. Returns once every delivery finished, or after 60 s.
   */
  async function produceAndDrain(ctx: TestContext, receiver: Receiver): Promise<void> {
    const webhooks: SeededWebhook[] = [];
    for (let w = 0; w < 3; w++) webhooks.push(await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url(`/hook/${w}`) }));
    const worker = await startDeliveryWorker({ ...ctx, logger });
    try {
      await Promise.all(
        Array.from({ length: 12 }, async (_, p) => {
          for (let n = 0; n < 25; n++) {
            await ctx.db.transaction(async (tx) => {
              await seedDelivery(tx, webhooks[(p + n) % webhooks.length]!, { now: ctx.clock.now(), entityKey: `mkt:${(p + n) % 4}:${n % 3}` });
              await tx.query(`SELECT pg_notify($1, '')`, [DELIVERY_CHANNEL]);
            });
            if (n % 5 === 0) await sleep(Math.floor(Math.random() * 3));
          }
        }),
      );
      await eventually(async () => (await unfinished(ctx)) === 0, { timeoutMs: 60_000 });
    } finally {
      await worker.stop();
    }
    const { rows } = await ctx.db.query<{ status: string; n: number }>(`SELECT status, count(*)::int AS n FROM deliveries GROUP BY status ORDER BY status`);
    assert.deepEqual(rows, [{ status: 'succeeded', n: 300 }], 'every delivery sent without the poll');
  }

  async function unfinished(ctx: TestContext): Promise<number> {
    const { rows } = await ctx.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM deliveries WHERE status <> 'succeeded'`);
    return rows[0]!.n;
  }

  test('receivers that answer 2xx after 0–4 ms', async () => {
    const ctx = await createTestApp(settings);
    const receiver = await Receiver.start();
    receiver.fallback = (_request, response) => setTimeout(() => response.writeHead(204).end(), Math.floor(Math.random() * 5));
    try {
      await produceAndDrain(ctx, receiver);
      assert.equal(receiver.requests.length, 300);
    } finally {
      await receiver.close();
      await ctx.close();
    }
  });

  test('a retry is sent at its due time when nothing else wakes the worker', async () => {
    const ctx = await createTestApp({ ...settings, DELIVERY_RETRY_SCHEDULE: '300ms', DELIVERY_RETRY_JITTER: '0' });
    const receiver = await Receiver.start();
    receiver.respond(503);
    const worker = await startDeliveryWorker({ ...ctx, logger });
    try {
      const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
      await ctx.db.transaction(async (tx) => {
        await seedDelivery(tx, webhook, { now: ctx.clock.now() });
        await tx.query(`SELECT pg_notify($1, '')`, [DELIVERY_CHANNEL]);
      });
      await eventually(() => receiver.requests.length >= 2, { timeoutMs: 10_000 });
      assert.equal(receiver.requests.length, 2, 'the retry was sent, 300 ms after the 503, without the poll');
    } finally {
      await worker.stop();
      await receiver.close();
      await ctx.close();
    }
  });

  test('a retry due after the one the timer is armed for is still sent (the timer keeps the sooner one only)', async () => {
    // CI (stop 40) once left one of 300 deliveries pending in the test below: a retry due after the
    // armed timer was dropped, the timer's claim took only the sooner one, and with a send in flight
    // nothing looked for the next due time again.
    const ctx = await createTestApp({ ...settings, DELIVERY_RETRY_SCHEDULE: '150ms', DELIVERY_RETRY_JITTER: '0' });
    const receiver = await Receiver.start();
    const seen = new Set<string>();
    receiver.fallback = (request, response) => {
      const first = !seen.has(request.webhookId);
      seen.add(request.webhookId);
      response.writeHead(first ? 503 : 204).end();
    };
    const worker = await startDeliveryWorker({ ...ctx, logger });
    try {
      const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
      // The second fails 60 ms after the first: its retry is due 60 ms after the armed timer.
      for (const n of [1, 2]) {
        await ctx.db.transaction(async (tx) => {
          await seedDelivery(tx, webhook, { now: ctx.clock.now(), entityKey: `mkt:1:order-${n}` });
          await tx.query(`SELECT pg_notify($1, '')`, [DELIVERY_CHANNEL]);
        });
        await receiver.waitFor(n);
        await sleep(60);
      }
      await waitFor(() => receiver.requests.length >= 4, { timeoutMs: 5000, message: () => `${receiver.requests.length} of 4 requests: a retry was never woken` });
      assert.equal(await unfinished(ctx), 0);
    } finally {
      await worker.stop();
      await receiver.close();
      await ctx.close();
    }
  });

  test("a due delivery past the webhooks a claim may scan goes at once, whatever waits for later retries before it", async () => {
    // 25 webhooks (ids before the healthy one's) each hold a retry due in an hour: the worker's first
    // claim scans 10 of them (DELIVERY_CLAIM_SCAN_WEBHOOKS), finds none due, and once stopped there:
    // one tenant's failing webhooks held another's notification back until the poll.
    const ctx = await createTestApp({ ...settings, DELIVERY_CLAIM_SCAN_WEBHOOKS: '10' });
    const receiver = await Receiver.start();
    const counted = countingClaims(ctx.db);
    const worker = await startDeliveryWorker({ ...ctx, db: counted.db, logger });
    try {
      for (let w = 0; w < 25; w++) {
        const failing = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url('/failing'), tenantKind: 'seller', tenantId: '1' });
        const retry = await seedDelivery(ctx.db, failing, { now: ctx.clock.now() });
        await ctx.db.query(`UPDATE deliveries SET attempts = 1, next_attempt_at = next_attempt_at + interval '1 hour' WHERE id = $1`, [retry.id]);
      }
      const healthy = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url('/healthy'), tenantKind: 'seller', tenantId: '2' });
      await ctx.db.transaction(async (tx) => {
        await seedDelivery(tx, healthy, { now: ctx.clock.now() });
        await tx.query(`SELECT pg_notify($1, '')`, [DELIVERY_CHANNEL]);
      });
      await waitFor(() => receiver.requests.length >= 1, { timeoutMs: 3000, message: 'the healthy webhook waited for the poll' });
      assert.deepEqual(receiver.requests.map((request) => request.url), ['/healthy']);
      // With nothing due anywhere the scan does not go on: no claim runs while nothing wakes the worker.
      await sleep(200);
      const idle = counted.claims();
      await sleep(500);
      assert.equal(counted.claims(), idle, 'claims ran with nothing due');
    } finally {
      await worker.stop();
      await receiver.close();
      await ctx.close();
    }
  });

  test('receivers that fail every fourth request: the retries are woken by their due time', async () => {
    const ctx = await createTestApp({ ...settings, DELIVERY_RETRY_SCHEDULE: '20ms,40ms,60ms,80ms,100ms,120ms,140ms,160ms', DELIVERY_RETRY_JITTER: '0' });
    const receiver = await Receiver.start();
    let n = 0;
    receiver.fallback = (_request, response) => setTimeout(() => response.writeHead(++n % 4 === 0 ? 503 : 204).end(), Math.floor(Math.random() * 5));
    try {
      await produceAndDrain(ctx, receiver);
      assert.ok(receiver.requests.length > 300, `some were retried (${receiver.requests.length} requests)`);
    } finally {
      await receiver.close();
      await ctx.close();
    }
  });
});

/** The worker's database, counting the claims begun (a claim's transaction opens with its settings). */
function countingClaims(db: Database): { db: Database; claims: () => number } {
  let claims = 0;
  const wrapped: Database = {
    query: (sql, params, options) => db.query(sql, params, options),
    exec: (sql) => db.exec(sql),
    transaction: (work) =>
      db.transaction((tx) =>
        work({
          query: (sql, params, options) => tx.query(sql, params, options),
          exec: (sql) => {
            if (sql.includes('enable_bitmapscan')) claims++;
            return tx.exec(sql);
          },
        }),
      ),
    listen: (channel, handler) => db.listen(channel, handler),
    close: async () => {},
  };
  return { db: wrapped, claims: () => claims };
}

/**
 * At low load a delivery waits for the claim in progress, if any, before its own: claims that find
 * nothing are latency for the next event (issue 29, scenario 5). A finished send claims only when
 * the last claim left due work behind; what it leaves behind still goes without the poll.
 */
describe('claims after a finished send', () => {
  const settings = { DELIVERY_POLL_INTERVAL_MS: '3600000', SHUTDOWN_TIMEOUT_MS: '300' };
  const notified = <T>(ctx: TestContext, work: (tx: Queryable) => Promise<T>) =>
    ctx.db.transaction(async (tx) => {
      const result = await work(tx);
      await tx.query(`SELECT pg_notify($1, '')`, [DELIVERY_CHANNEL]);
      return result;
    });

  test('events one at a time: one claim each, none for the end of a send or its record', async () => {
    const ctx = await createTestApp(settings);
    const receiver = await Receiver.start();
    const counted = countingClaims(ctx.db);
    const worker = await startDeliveryWorker({ ...ctx, db: counted.db, logger });
    try {
      const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
      await eventually(() => counted.claims() >= 1, { timeoutMs: 5000 });
      const atStart = counted.claims();
      for (let n = 1; n <= 6; n++) {
        const delivery = await notified(ctx, (tx) => seedDelivery(tx, webhook, { now: ctx.clock.now() }));
        await receiver.waitFor(n);
        await waitFor(async () => (await deliveryRow(ctx.db, delivery.id)).status === 'succeeded', { timeoutMs: 5000 });
        await sleep(30);
      }
      // Before: a claim for the NOTIFY, one when the send ended and one when it was recorded (18).
      assert.equal(counted.claims() - atStart, 6, 'one claim per event');
    } finally {
      await worker.stop();
      await receiver.close();
      await ctx.close();
    }
  });

  test("an entity's next delivery goes once the one before is recorded, without the poll", async () => {
    const ctx = await createTestApp(settings);
    const receiver = await Receiver.start();
    receiver.setDelay(150);
    const worker = await startDeliveryWorker({ ...ctx, logger });
    try {
      const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
      const [first, second] = await notified(ctx, async (tx) => [
        await seedDelivery(tx, webhook, { now: ctx.clock.now(), entityKey: 'mkt:1:order-1' }),
        await seedDelivery(tx, webhook, { now: ctx.clock.now(), entityKey: 'mkt:1:order-1' }),
      ]);
      await waitFor(() => receiver.requests.length === 2, { timeoutMs: 10_000, message: () => `${receiver.requests.length} of 2 arrived` });
      assert.deepEqual(receiver.requests.map((request) => request.webhookId), [first!.messageId, second!.messageId]);
    } finally {
      await worker.stop();
      await receiver.close();
      await ctx.close();
    }
  });

  test("a stopping worker's claims go to an idle worker at once, not at its poll", async () => {
    const ctx = await createTestApp(settings);
    const receiver = await Receiver.start();
    receiver.hangAll();
    const stopping = await startDeliveryWorker({ ...ctx, logger, workerId: 'stopping' });
    let idle: Awaited<ReturnType<typeof startDeliveryWorker>> | undefined;
    try {
      const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
      const delivery = await notified(ctx, (tx) => seedDelivery(tx, webhook, { now: ctx.clock.now() }));
      await receiver.waitFor(1);
      idle = await startDeliveryWorker({ ...ctx, logger, workerId: 'idle' });
      // Its first claim, which finds the delivery leased.
      await sleep(200);
      await stopping.stop();
      await waitFor(async () => (await deliveryRow(ctx.db, delivery.id)).leased_by === 'idle', { timeoutMs: 3000, message: 'the idle worker never took the released claim' });
    } finally {
      await stopping.stop();
      await idle?.stop();
      await receiver.close();
      await ctx.close();
    }
  });
});
