import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { accessTokenFor, bearer, seedUser } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { waitFor } from '../testing/wait.js';
import { createDeliverer, deliverDue, type Deliverer } from './dispatch/deliver.js';
import { attemptRows, databaseNow, deliveryRow, seedDelivery, seedWebhook } from '../testing/deliveries.js';
import { Receiver } from '../testing/receiver.js';
import { disableFailingWebhooks } from './queue/webhook-health.js';

/** What a tenant reads about failures: last_error for a status, disabled_reason as a code, updated_at moving (issue 13, item 13). */
describe('delivery errors and automatic disables as the API shows them', () => {
  let ctx: TestContext;
  let deliverer: Deliverer;
  let receiver: Receiver;
  let admin: Awaited<ReturnType<typeof seedUser>>;
  // Fresh each time: the tests move the clock by days.
  const auth = async () => bearer(await accessTokenFor(ctx, admin));
  before(async () => {
    ctx = await createTestApp({ DELIVERY_RETRY_JITTER: '0' });
    deliverer = createDeliverer(ctx);
    receiver = await Receiver.start();
    admin = await seedUser(ctx.db, { role: 'admin' });
  });
  after(async () => {
    await deliverer.close();
    await receiver.close();
    await ctx.close();
  });

  const webhookOf = async (marketplaceCode: string, code: string) => {
    const response = await ctx.app.inject({ url: `/v1/${marketplaceCode}/webhooks/${code}`, headers: await auth() });
    assert.equal(response.statusCode, 200);
    return response.json<{ active: boolean; disabled_reason: string | null; disabled_message: string | null; updated_at: string }>();
  };

  test('an HTTP error status is last_error "HTTP 500", in the delivery and its attempt', async () => {
    receiver.respond(500);
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
    const delivery = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
    await deliverDue(deliverer);
    assert.equal((await deliveryRow(ctx.db, delivery.id)).last_error, 'HTTP 500');
    assert.equal((await attemptRows(ctx.db, delivery.id))[0]!.error, 'HTTP 500');
    const shown = await ctx.app.inject({ url: `/v1/${webhook.marketplaceCode}/webhooks/${webhook.code}/deliveries/${delivery.id}`, headers: await auth() });
    assert.equal(shown.json().last_error, 'HTTP 500');
  });

  test('a 410 disables with the code receiver_gone, a message beside it, and a new updated_at', async () => {
    receiver.fallback = (_request, response) => response.writeHead(410).end();
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
    const before = await webhookOf(webhook.marketplaceCode, webhook.code);
    ctx.clock.advanceSeconds(60);
    await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
    await deliverDue(deliverer);
    const after = await webhookOf(webhook.marketplaceCode, webhook.code);
    assert.equal(after.active, false);
    assert.equal(after.disabled_reason, 'receiver_gone');
    assert.match(after.disabled_message ?? '', /410 Gone/);
    // Written by the database's clock, offset to the test clock (database-clock.ts): the same
    // instant give or take the milliseconds between the disable and this read.
    assert.ok(Math.abs(Date.parse(after.updated_at) - (await databaseNow(ctx.db, ctx.clock))) < 1000, `${after.updated_at} is the disable's time`);
    assert.ok(Date.parse(after.updated_at) > Date.parse(before.updated_at));
  });

  test('the sweep that disables long-failing webhooks sets failing_too_long and updated_at', async () => {
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
    await ctx.db.query(`UPDATE webhooks SET failing_since = $2 WHERE id = $1`, [webhook.id, ctx.clock.now()]);
    ctx.clock.advanceSeconds(6 * 86_400);
    assert.equal((await disableFailingWebhooks(ctx.db, ctx.clock.now(), 5)).length, 1);
    const shown = await webhookOf(webhook.marketplaceCode, webhook.code);
    assert.equal(shown.disabled_reason, 'failing_too_long');
    assert.match(shown.disabled_message ?? '', /without one success/);
    assert.equal(shown.updated_at, ctx.clock.now().toISOString());
  });

  test('a retry or a replay meeting a delivery that moves to the other partition meanwhile answers as after the move, not 503', async () => {
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
    const url = `/v1/${webhook.marketplaceCode}/webhooks/${webhook.code}`;
    const cases = [
      // A pending delivery whose attempt is recorded (queue → at rest) as a retry comes: then retried.
      { before: 'pending', after: 'succeeded', request: (id: number) => ({ url: `${url}/deliveries/${id}/retry`, payload: undefined }), status: 202 },
      // A failed one that is retried (at rest → queue) as a replay of failed ones comes: then not matched.
      { before: 'failed', after: 'pending', request: () => ({ url: `${url}/replay`, payload: { status: ['failed'] } }), status: 202 },
    ];
    for (const { before, after, request, status } of cases) {
      const delivery = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
      await ctx.db.query(`UPDATE deliveries SET status = $2 WHERE id = $1`, [delivery.id, before]);
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let moved!: () => void;
      const movedNow = new Promise<void>((resolve) => (moved = resolve));
      const move = ctx.db.transaction(async (tx) => {
        await tx.query(`UPDATE deliveries SET status = $2 WHERE id = $1`, [delivery.id, after]);
        moved();
        await gate;
      });
      await movedNow;
      const { url: path, payload } = request(delivery.id);
      const answer = ctx.app.inject({ method: 'POST', url: path, headers: await auth(), ...(payload ? { payload } : {}) });
      // Until the request waits for the moving row's lock.
      await waitFor(async () => {
        const { rows } = await ctx.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE NOT l.granted AND a.datname = current_database()`);
        return rows[0]!.n > 0;
      }, { timeoutMs: 5000, message: `${before} → ${after}: the request never waited for the moving row's lock` });
      release();
      await move;
      const response = await answer;
      assert.equal(response.statusCode, status, `${before} → ${after}: ${response.body}`);
    }
  });

  test('a PATCH disable is the code disabled_by_user; re-enabling clears both fields', async () => {
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
    const url = `/v1/${webhook.marketplaceCode}/webhooks/${webhook.code}`;
    const paused = await ctx.app.inject({ method: 'PATCH', url, headers: await auth(), payload: { active: false } });
    assert.deepEqual([paused.json().disabled_reason, typeof paused.json().disabled_message], ['disabled_by_user', 'string']);
    const enabled = await ctx.app.inject({ method: 'PATCH', url, headers: await auth(), payload: { active: true } });
    assert.deepEqual([enabled.json().disabled_reason, enabled.json().disabled_message], [null, null]);
  });
});
