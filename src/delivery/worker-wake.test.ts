import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import pino from 'pino';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { seedDelivery, seedWebhook, type SeededWebhook } from '../testing/deliveries.js';
import { Receiver } from '../testing/receiver.js';
import { eventually } from '../testing/wait.js';
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
