import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestContext } from '../../testing/test-app.js';
import { createDeliverer, deliverDue, type Deliverer } from './deliver.js';
import { databaseNow, deliveryRow, seedDelivery, seedWebhook } from '../../testing/deliveries.js';
import { Receiver } from '../../testing/receiver.js';

describe('per-destination-host send budget in the worker', () => {
  let ctx: TestContext;
  let deliverer: Deliverer;
  let hostA: Receiver;
  let hostB: Receiver;
  const body = { payload: 'x'.repeat(10_000) };
  before(async () => {
    // Room for one 10 kB notification per host, refilled at 1 kB/s.
    ctx = await createTestApp({ DELIVERY_HOST_BURST_BYTES: '15000', DELIVERY_HOST_BYTES_PER_SECOND: '1000' });
    deliverer = createDeliverer(ctx);
    hostA = await Receiver.start();
    // Another host: another loopback address (Linux answers on all of 127.0.0.0/8).
    hostB = await Receiver.start({ host: '127.0.0.2' });
  });
  after(async () => {
    await deliverer.close();
    await hostA.close();
    await hostB.close();
    await ctx.close();
  });

  test('a host that used its budget waits (postponed, no attempt counted); another host is sent to', async () => {
    const webhookA = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: hostA.url() });
    const otherA = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: hostA.url('/second') });
    const webhookB = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: hostB.url() });
    const first = await seedDelivery(ctx.db, webhookA, { now: ctx.clock.now(), body });
    const second = await seedDelivery(ctx.db, otherA, { now: ctx.clock.now(), body });
    const onB = await seedDelivery(ctx.db, webhookB, { now: ctx.clock.now(), body });

    const results = await deliverDue(deliverer);
    const outcome = (id: number) => results.find((result) => result.deliveryId === id)?.outcome;
    assert.equal(outcome(first.id), 'succeeded');
    assert.equal(outcome(second.id), 'postponed');
    assert.equal(outcome(onB.id), 'succeeded');
    assert.equal(hostA.requests.length, 1);
    assert.equal(hostB.requests.length, 1);

    const postponed = await deliveryRow(ctx.db, second.id);
    assert.equal(postponed.status, 'pending');
    assert.equal(postponed.attempts, 0);
    // About 10 kB needed, about 5 kB left, 1 kB/s: due in about 5 s (whole seconds, rounded up).
    const waitMs = new Date(postponed.next_attempt_at).getTime() - (await databaseNow(ctx.db, ctx.clock));
    assert.ok(waitMs >= 5000 && waitMs <= 7000, `postponed by ${waitMs} ms`);

    ctx.clock.advanceSeconds(1);
    assert.deepEqual(await deliverDue(deliverer), [], 'not due before its wait');
    ctx.clock.advanceSeconds(waitMs / 1000);
    const later = await deliverDue(deliverer);
    assert.deepEqual(later.map((result) => [result.deliveryId, result.outcome]), [[second.id, 'succeeded']]);
    assert.equal(hostA.requests.length, 2);
  });
});
