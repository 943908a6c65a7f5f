import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import pino from 'pino';
import { createTestApp, type TestContext } from '../../testing/test-app.js';
import { eventually } from '../../testing/wait.js';
import { claim, createDeliverer } from '../dispatch/deliver.js';
import { completeAttempts } from './complete.js';
import { clockOffsetMs } from '../../db/database-clock.js';
import { seedDelivery, seedWebhook } from '../../testing/deliveries.js';
import { Receiver } from '../../testing/receiver.js';
import { startDeliveryWorker } from '../worker.js';

const logger = pino({ level: 'silent' });

const SETTINGS = {
  DELIVERY_CONCURRENCY: '20',
  DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK: '10',
  DELIVERY_TENANT_SHARE: '0.5',
  DELIVERY_TIMEOUT_MS: '60000',
  DELIVERY_LEASE_SECONDS: '120',
  DELIVERY_POLL_INTERVAL_MS: '50',
  SHUTDOWN_TIMEOUT_MS: '0',
};

/** Issue 10, problems 2 and 3: tenants share the workers fairly, and workers share the backlog. */
describe('fair claiming between tenants and workers', () => {
  let ctx: TestContext;
  let healthy: Receiver;
  let hanging: Receiver;
  before(async () => {
    ctx = await createTestApp(SETTINGS);
    healthy = await Receiver.start();
    hanging = await Receiver.start();
    hanging.hangAll();
  });
  after(async () => {
    await hanging.close();
    await healthy.close();
    await ctx.close();
  });
  beforeEach(async () => {
    await ctx.db.exec(`DELETE FROM deliveries; DELETE FROM events; DELETE FROM webhooks;`);
  });

  test("a tenant with 10 hanging webhooks holds at most its share; another tenant's notifications keep arriving", async () => {
    for (let i = 0; i < 10; i++) {
      const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: hanging.url(`/a${i}`), tenantKind: 'seller', tenantId: '1' });
      for (let n = 0; n < 20; n++) await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
    }
    const b = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: healthy.url('/b'), tenantKind: 'seller', tenantId: '2' });
    const worker = await startDeliveryWorker({ ...ctx, logger });
    try {
      // Tenant A's 200 due deliveries on 10 webhooks could fill all 20 slots (10 per webhook): it gets 10.
      await hanging.waitFor(10);
      for (let n = 1; n <= 5; n++) {
        await seedDelivery(ctx.db, b, { now: ctx.clock.now() });
        const arrived = await Promise.race([healthy.waitFor(n).then(() => true), new Promise((resolve) => setTimeout(() => resolve(false), 3000))]);
        assert.ok(arrived, `tenant B's notification ${n} did not arrive while tenant A's receivers hang`);
      }
      assert.equal(hanging.requests.length, 10, "tenant A's sends stay within its share");
      // Its leases are its 10 sends: a worker claims only what it sends at once.
      const { rows } = await ctx.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM deliveries d JOIN webhooks w ON w.id = d.webhook_id WHERE w.tenant_id = '1' AND d.status = 'delivering'`,
      );
      assert.equal(rows[0]!.n, 10, `tenant A holds ${rows[0]!.n} leases`);
    } finally {
      await worker.stop();
    }
  });

  test("sellers in a marketplace's shared webhook: one seller's backlog does not hold back another's notification", async () => {
    const shared = await Receiver.start();
    // Slow answers: seller 1's 60 deliveries take 6 rounds of the webhook's 10 slots.
    shared.fallback = (_request, response) => setTimeout(() => response.writeHead(200).end(), 150);
    try {
      const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: shared.url('/m'), tenantKind: 'marketplace', tenantId: 'mkt' });
      for (let n = 0; n < 60; n++) await seedDelivery(ctx.db, webhook, { now: ctx.clock.now(), entityKey: `mkt:1:${n}` });
      const worker = await startDeliveryWorker({ ...ctx, logger });
      try {
        await shared.waitFor(10);
        const before = shared.requests.length;
        const b = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now(), entityKey: 'mkt:2:1' });
        await eventually(() => shared.requests.some((request) => request.headers['webhook-id'] === b.messageId), { timeoutMs: 10_000 });
        const at = shared.requests.findIndex((request) => request.headers['webhook-id'] === b.messageId);
        assert.ok(at >= 0, "seller 2's notification did not arrive");
        // Only the slots that freed together with the one it took may go to seller 1 first: one
        // round of the webhook's 10, not the 50 left of the backlog.
        assert.ok(at - before <= 10, `${at - before} of seller 1's notifications went first`);
      } finally {
        await worker.stop();
      }
    } finally {
      await shared.close();
    }
  });

  test("tenants on one receiver host: tenant A's hanging paths hold no socket that tenant B's notifications wait for", async () => {
    // Tenant A's share of a worker of 120 slots is 60 sends, all to one origin. The HTTP client
    // once kept at most 50 sockets per origin: B's notification to the same host then queued behind
    // A's hanging requests until their timeout, and that wait counted against B's own timeout.
    const local = await createTestApp({ ...SETTINGS, DELIVERY_CONCURRENCY: '120' });
    const shared = await Receiver.start();
    shared.hangPaths('/a');
    try {
      for (let i = 0; i < 7; i++) {
        const webhook = await seedWebhook(local.db, local.keys, { callbackUrl: shared.url(`/a${i}`), tenantKind: 'seller', tenantId: '1' });
        for (let n = 0; n < 20; n++) await seedDelivery(local.db, webhook, { now: local.clock.now() });
      }
      const b = await seedWebhook(local.db, local.keys, { callbackUrl: shared.url('/b'), tenantKind: 'seller', tenantId: '2' });
      const worker = await startDeliveryWorker({ ...local, logger });
      try {
        await shared.waitFor(60);
        for (let n = 1; n <= 3; n++) {
          await seedDelivery(local.db, b, { now: local.clock.now() });
          await eventually(() => shared.requestsTo('/b').length >= n, { timeoutMs: 3000 });
          assert.equal(shared.requestsTo('/b').length, n, `tenant B's notification ${n} did not arrive while tenant A's paths on the same host hang`);
        }
        assert.equal(shared.requestsTo('/a').length, 60, "tenant A's sends stay within its share");
      } finally {
        await worker.stop();
      }
    } finally {
      await shared.close();
      await local.close();
    }
  });

  test('4 workers claiming one backlog at once: they claim in parallel, no row twice, caps hold', async () => {
    const webhooks = [];
    for (let tenant = 1; tenant <= 4; tenant++) {
      for (let i = 0; i < 5; i++) webhooks.push(await seedWebhook(ctx.db, ctx.keys, { callbackUrl: healthy.url(), tenantKind: 'seller', tenantId: String(tenant) }));
    }
    const total = webhooks.length * 20;
    await ctx.db.query(
      `INSERT INTO events (event_id, marketplace_code, topic, seller_id, entity_id, body, delivery_count, request_hash, created_at)
       SELECT 'bulk-' || n, 'mkt', 'publication/update', 1, n::text, '{}'::json, 1, 'x', $1 FROM generate_series(1, $2::int) n`,
      [ctx.clock.now(), total],
    );
    await ctx.db.query(
      `INSERT INTO deliveries (event_id, webhook_id, entity_key, message_id, status, next_attempt_at, created_at, updated_at, sequence)
       SELECT e.id, ($2::bigint[])[1 + (row_number() OVER (ORDER BY e.id) - 1) % $3], e.entity_id, 'msg_' || e.id, 'pending', $1, $1, $1, e.id
         FROM events e WHERE e.event_id LIKE 'bulk-%'`,
      [ctx.clock.now(), webhooks.map((webhook) => webhook.id), webhooks.length],
    );
    const workers = [1, 2, 3, 4].map((n) => createDeliverer({ ...ctx, workerId: `w${n}` }));
    const seen = new Set<number>();
    const served = new Set<number>();
    try {
      let rounds = 0;
      while (seen.size < total) {
        assert.ok(++rounds < 50, 'the backlog was not drained');
        const batches = await Promise.all(workers.map(async (worker) => (await claim(worker, 15)).deliveries));
        // Claims at the same moment: more than one worker gets rows (a webhook whose lane another
        // claim holds is skipped, not waited for).
        if (rounds === 1) assert.ok(batches.filter((batch) => batch.length > 0).length >= 2, 'only one worker claimed');
        batches.forEach((batch, index) => batch.length > 0 && served.add(index));
        const { rows } = await ctx.db.query<{ n: number }>(
          `SELECT coalesce(max(n), 0)::int AS n FROM (SELECT count(*) AS n FROM deliveries WHERE status = 'delivering' GROUP BY webhook_id) s`,
        );
        assert.ok(rows[0]!.n <= 10, `a webhook has ${rows[0]!.n} in flight`);
        for (const [index, batch] of batches.entries()) {
          for (const delivery of batch) {
            assert.ok(!seen.has(delivery.id), `delivery ${delivery.id} claimed twice`);
            seen.add(delivery.id);
          }
          const recorded = await completeAttempts(
            ctx.db,
            batch.map((delivery) => ({ deliveryId: delivery.id, webhookId: delivery.webhook_id, startedAt: ctx.clock.now(), durationMs: 1, statusCode: 200, error: null, responseBody: null, outcome: { kind: 'succeeded' as const } })),
            { workerId: workers[index]!.workerId, clockOffsetMs: clockOffsetMs(ctx.clock), disableAfterDays: 5 },
          );
          assert.equal(recorded.recorded.size, batch.length);
        }
      }
      const { rows } = await ctx.db.query<{ status: string; n: number }>(`SELECT status, count(*)::int AS n FROM deliveries GROUP BY status`);
      assert.deepEqual(rows, [{ status: 'succeeded', n: total }]);
      assert.equal(served.size, 4, 'every worker got work');
      assert.equal((await ctx.db.query(`SELECT 1 FROM delivery_attempts`)).rowCount, total);
    } finally {
      await Promise.all(workers.map((worker) => worker.close()));
    }
  });

  test("a shared webhook: another seller's delivery gets the next free slot, ahead of a seller's backlog", async () => {
    // A marketplace's webhook for every seller: entity keys are marketplace:seller:entity.
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: healthy.url(), tenantKind: 'marketplace', tenantId: 'mkt' });
    for (let n = 0; n < 30; n++) await seedDelivery(ctx.db, webhook, { now: ctx.clock.now(), entityKey: `mkt:1:${n}` });
    const worker = createDeliverer({ ...ctx, workerId: 'w1' });
    try {
      // Seller 1's backlog fills the webhook's 10 slots.
      const first = (await claim(worker, 20)).deliveries;
      assert.equal(first.length, 10);
      const b = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now(), entityKey: 'mkt:2:1' });
      assert.deepEqual((await claim(worker, 20)).deliveries, [], 'the webhook is at its limit');
      // One of seller 1's sends is over: the slot it frees goes to seller 2, whose delivery came last.
      const [done] = first;
      const recorded = await completeAttempts(
        ctx.db,
        [{ deliveryId: done!.id, webhookId: webhook.id, startedAt: ctx.clock.now(), durationMs: 1, statusCode: 200, error: null, responseBody: null, outcome: { kind: 'succeeded' } }],
        { workerId: 'w1', clockOffsetMs: clockOffsetMs(ctx.clock), disableAfterDays: 5 },
      );
      assert.equal(recorded.recorded.size, 1);
      assert.deepEqual((await claim(worker, 20)).deliveries.map((delivery) => delivery.id), [b.id]);
    } finally {
      await worker.close();
    }
  });

  test("a shared webhook's seller cursor wraps around: a seller before it is served, never left waiting", async () => {
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: healthy.url(), tenantKind: 'marketplace', tenantId: 'mkt' });
    for (let n = 0; n < 12; n++) await seedDelivery(ctx.db, webhook, { now: ctx.clock.now(), entityKey: `mkt:1:${n}` });
    const worker = createDeliverer({ ...ctx, workerId: 'w1' });
    const succeeded = async (deliveries: { id: number }[]) =>
      completeAttempts(
        ctx.db,
        deliveries.map((delivery) => ({ deliveryId: delivery.id, webhookId: webhook.id, startedAt: ctx.clock.now(), durationMs: 1, statusCode: 200, error: null, responseBody: null, outcome: { kind: 'succeeded' as const } })),
        { workerId: 'w1', clockOffsetMs: clockOffsetMs(ctx.clock), disableAfterDays: 5 },
      );
    try {
      const first = (await claim(worker, 9)).deliveries;
      assert.equal(first.length, 9);
      await seedDelivery(ctx.db, webhook, { now: ctx.clock.now(), entityKey: 'mkt:2:1' });
      // The webhook's last free slot goes to seller 2, while seller 1 still has 3 due: the cursor is after seller 2.
      assert.deepEqual((await claim(worker, 10)).deliveries.length, 1);
      await succeeded(first);
      // The next claim scans past seller 2, wraps around and serves seller 1's 3.
      assert.equal((await claim(worker, 10)).deliveries.length, 3);
    } finally {
      await worker.close();
    }
  });

  test("a worker's sent deliveries awaiting their record free their webhook's room, and only those", async () => {
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: healthy.url(), tenantKind: 'seller', tenantId: '1' });
    for (let n = 0; n < 30; n++) await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
    const worker = createDeliverer({ ...ctx, workerId: 'w1' });
    const other = createDeliverer({ ...ctx, workerId: 'w2' });
    try {
      // The webhook's 10 in flight are all taken: nothing more, by this worker or another.
      assert.equal(((await claim(worker, 15)).deliveries).length, 10);
      assert.equal(((await claim(worker, 15)).deliveries).length, 0);
      // 4 of them were sent and wait to be recorded: they load no receiver, so 4 more may go.
      assert.equal((await claim(worker, 15, new Map([[webhook.id, 4]]))).deliveries.length, 4);
      // Another worker's leases are not this worker's to discount, nor another webhook's.
      assert.equal((await claim(other, 15, new Map([[webhook.id, 4]]))).deliveries.length, 0);
      assert.equal((await claim(worker, 15, new Map([[webhook.id + 1, 4]]))).deliveries.length, 0);
      const { rows } = await ctx.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM deliveries WHERE status = 'delivering'`);
      assert.equal(rows[0]!.n, 14);
    } finally {
      await worker.close();
      await other.close();
    }
  });
});
