import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { waitFor } from '../testing/wait.js';
import { deliveryRow, seedDelivery, seedWebhook } from '../testing/deliveries.js';
import { Receiver } from '../testing/receiver.js';
import { DELIVERY_CHANNEL } from '../webhooks/deliveries.repository.js';
import { startDeliveryWorker } from './worker.js';

const logger = pino({ level: 'silent' });

describe('the long-running worker', () => {
  let ctx: TestContext;
  let receiver: Receiver;
  before(async () => {
    // A poll interval longer than the test timeout: only NOTIFY (or finishing a send) can wake the worker.
    ctx = await createTestApp({ DELIVERY_POLL_INTERVAL_MS: '3600000', SHUTDOWN_TIMEOUT_MS: '2000' });
    receiver = await Receiver.start();
  });
  after(async () => {
    await receiver.close();
    await ctx.close();
  });

  const waitForStatusIn = (app: TestContext, id: number, status: string) =>
    waitFor(async () => (await deliveryRow(app.db, id)).status === status, { timeoutMs: 5000, message: `delivery ${id} never became ${status}` });
  const waitForStatus = (id: number, status: string) => waitForStatusIn(ctx, id, status);

  test('NOTIFY on plaza_deliveries wakes the worker: the first attempt does not wait for the poll', async () => {
    const worker = await startDeliveryWorker({ ...ctx, logger });
    try {
      const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
      for (let n = 1; n <= 2; n++) {
        const delivery = await ctx.db.transaction(async (tx) => {
          const created = await seedDelivery(tx, webhook, { now: ctx.clock.now() });
          await tx.query(`SELECT pg_notify($1, '')`, [DELIVERY_CHANNEL]);
          return created;
        });
        await receiver.waitFor(n);
        await waitForStatus(delivery.id, 'succeeded');
      }
    } finally {
      await worker.stop();
    }
  });

  test('stop() lets an in-flight send finish', async () => {
    receiver.requests.length = 0;
    receiver.respond();
    receiver.fallback = (_request, response) => setTimeout(() => response.writeHead(204).end(), 100);
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
    const delivery = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
    const worker = await startDeliveryWorker({ ...ctx, logger });
    await receiver.waitFor(1);
    await worker.stop();
    const row = await deliveryRow(ctx.db, delivery.id);
    assert.equal(row.status, 'succeeded');
    assert.equal(row.last_status_code, 204);
  });

  test('the worker never sends more than DELIVERY_CONCURRENCY at once, nor holds more than twice that many leases (sends and unrecorded attempts), and sends everything', async () => {
    // One tenant may take every slot here: DELIVERY_CONCURRENCY is the only bound left to hold.
    const app = await createTestApp({ DELIVERY_POLL_INTERVAL_MS: '3600000', DELIVERY_CONCURRENCY: '4', DELIVERY_TENANT_SHARE: '1' });
    const slow = await Receiver.start();
    let open = 0;
    let most = 0;
    slow.fallback = (_request, response) => {
      most = Math.max(most, ++open);
      setTimeout(() => {
        open -= 1;
        response.writeHead(204).end();
      }, 20);
    };
    try {
      const ids: number[] = [];
      for (let w = 0; w < 3; w++) {
        const webhook = await seedWebhook(app.db, app.keys, { callbackUrl: slow.url(`/hook/${w}`) });
        for (let n = 0; n < 8; n++) ids.push((await seedDelivery(app.db, webhook, { now: app.clock.now() })).id);
      }
      const worker = await startDeliveryWorker({ ...app, logger });
      // The leases the worker holds: being sent, or sent and waiting for their record. It claims
      // only for free send slots, and stops claiming while DELIVERY_CONCURRENCY wait for their record.
      let leasesHeld = 0;
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          const { rows } = await app.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM deliveries WHERE status = 'delivering'`);
          leasesHeld = Math.max(leasesHeld, rows[0]!.n);
        }
      })();
      try {
        await slow.waitFor(ids.length);
        for (const id of ids) await waitForStatusIn(app, id, 'succeeded');
      } finally {
        sampling = false;
        await sampler;
        await worker.stop();
      }
      assert.equal(slow.requests.length, ids.length, 'each delivery sent once');
      assert.ok(most <= 4, `at most DELIVERY_CONCURRENCY sends at once (saw ${most})`);
      assert.ok(most >= 3, `the slots are used (saw ${most})`);
      assert.ok(leasesHeld <= 2 * 4, `at most 2 × DELIVERY_CONCURRENCY leases held (saw ${leasesHeld})`);
    } finally {
      await slow.close();
      await app.close();
    }
  });

  test('stop() releases the claims of sends that do not finish within SHUTDOWN_TIMEOUT_MS', async () => {
    receiver.requests.length = 0;
    receiver.hang();
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
    const delivery = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
    const worker = await startDeliveryWorker({ ...ctx, logger });
    await receiver.waitFor(1);
    assert.equal((await deliveryRow(ctx.db, delivery.id)).status, 'delivering');
    await worker.stop();
    const row = await deliveryRow(ctx.db, delivery.id);
    assert.equal(row.status, 'pending');
    assert.equal(row.leased_by, null);
    assert.equal(row.attempts, 0);
  });
});
