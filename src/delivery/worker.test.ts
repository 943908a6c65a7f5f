import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { systemClock } from '../clock.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { encryptSecret, newWebhookSecret } from '../keys/secret-box.js';
import { completeAttempts } from './queue/complete.js';
import { clockOffsetMs } from '../db/database-clock.js';
import { claim, createDeliverer, deliverDue, type Deliverer } from './dispatch/deliver.js';
import { attemptRows, databaseNow, deliveryRow, seedDelivery, seedWebhook } from '../testing/deliveries.js';
import { Receiver } from '../testing/receiver.js';
import { USER_AGENT } from './dispatch/sender.js';

describe('delivery worker: sending, signing, retries', () => {
  let ctx: TestContext;
  let deliverer: Deliverer;
  let receiver: Receiver;

  before(async () => {
    ctx = await createTestApp({ DELIVERY_RETRY_SCHEDULE: '5s,30s,2m', DELIVERY_TIMEOUT_MS: '1500', DELIVERY_RETRY_AFTER_MAX_SECONDS: '600' });
    deliverer = createDeliverer({ ...ctx, workerId: 'worker-a' });
  });
  after(async () => {
    await deliverer.close();
    await ctx.close();
  });
  beforeEach(async () => {
    // Each test sees only its own deliveries.
    await ctx.db.query(`DELETE FROM deliveries`);
    receiver?.close().catch(() => {});
    receiver = await Receiver.start();
  });
  after(() => receiver?.close());

  const resultFor = async (id: number) => {
    const results = await deliverDue(deliverer);
    const result = results.find((entry) => entry.deliveryId === id);
    assert.ok(result, `delivery ${id} was not claimed`);
    return result;
  };

  test('POSTs the event body byte for byte with the webhook headers, verifiable with standardwebhooks', async () => {
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url('/hook?x=1'), headers: { 'X-Api-Key': 'k-123', Authorization: 'Basic abc' } });
    const delivery = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now(), body: { seller_id: 1, topic_path: 'order/mkt/create', entity_id: 'R-1', payload: { order: { note: 'ünïcödé "quoted"' }, state_from: null, state_to: 'new', author: 'x' } } });
    const result = await resultFor(delivery.id);
    assert.equal(result.outcome, 'succeeded');

    assert.equal(receiver.requests.length, 1);
    const request = receiver.requests[0]!;
    const stored = await ctx.db.query<{ body: string }>(`SELECT body::text AS body FROM events WHERE id = $1`, [delivery.eventRowId]);
    assert.equal(request.method, 'POST');
    assert.equal(request.url, '/hook?x=1');
    assert.deepEqual(request.body, Buffer.from(stored.rows[0]!.body, 'utf8'));
    assert.equal(request.headers['content-type'], 'application/json');
    assert.equal(request.headers['user-agent'], USER_AGENT);
    assert.match(USER_AGENT, /^Plaza\/\d+\.\d+\.\d+/);
    assert.equal(request.headers['x-api-key'], 'k-123');
    assert.equal(request.headers.authorization, 'Basic abc');
    assert.equal(request.headers['webhook-id'], delivery.messageId);
    assert.equal(request.headers['webhook-timestamp'], String(Math.floor(ctx.clock.now().getTime() / 1000)));
    assert.equal(String(request.headers['webhook-signature']).split(' ').length, 1);
    const verified = new Webhook(webhook.secret).verify(request.body.toString('utf8'), request.headers as Record<string, string>);
    assert.deepEqual(verified, JSON.parse(stored.rows[0]!.body));
    // A wrong secret or a changed body does not verify.
    assert.throws(() => new Webhook(newWebhookSecret()).verify(request.body.toString('utf8'), request.headers as Record<string, string>));
    assert.throws(() => new Webhook(webhook.secret).verify(request.body.toString('utf8').replace('R-1', 'R-2'), request.headers as Record<string, string>));

    const row = await deliveryRow(ctx.db, delivery.id);
    assert.equal(row.status, 'succeeded');
    assert.equal(row.attempts, 1);
    assert.equal(row.last_status_code, 200);
    assert.equal(row.leased_by, null);
    assert.ok(row.completed_at);
    const attempts = await attemptRows(ctx.db, delivery.id);
    assert.equal(attempts.length, 1);
    assert.equal(attempts[0]!.status_code, 200);
    assert.equal(attempts[0]!.response_body, 'ok');
  });

  test('during a secret rotation both signatures are sent and each secret verifies', async () => {
    const previous = newWebhookSecret();
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url(), previousSecret: previous, previousExpiresAt: new Date(ctx.clock.now().getTime() + 3_600_000) });
    const delivery = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
    await resultFor(delivery.id);
    const request = receiver.requests[0]!;
    assert.equal(String(request.headers['webhook-signature']).split(' ').length, 2);
    for (const secret of [webhook.secret, previous]) {
      assert.doesNotThrow(() => new Webhook(secret).verify(request.body.toString('utf8'), request.headers as Record<string, string>));
    }
  });

  test('a secret changed after a send signs the next notification (the worker keeps keys by their stored form)', async () => {
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
    await resultFor((await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() })).id);
    const secret = newWebhookSecret();
    await ctx.db.query('UPDATE webhooks SET secret_encrypted = $2 WHERE id = $1', [webhook.id, encryptSecret(ctx.keys.webhookSecretsKey, secret)]);
    await resultFor((await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() })).id);
    const [first, second] = receiver.requests.map((request) => (key: string) => new Webhook(key).verify(request.body.toString('utf8'), request.headers as Record<string, string>));
    assert.doesNotThrow(() => first!(webhook.secret));
    assert.doesNotThrow(() => second!(secret));
    assert.throws(() => second!(webhook.secret));
  });

  test('an expired previous secret no longer signs', async () => {
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url(), previousSecret: newWebhookSecret(), previousExpiresAt: new Date(ctx.clock.now().getTime() - 1000) });
    const delivery = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
    await resultFor(delivery.id);
    assert.equal(String(receiver.requests[0]!.headers['webhook-signature']).split(' ').length, 1);
  });

  test('500, 500, 200 succeeds on the third attempt, with the same webhook-id and body each time', async () => {
    receiver.respond({ status: 500, body: 'boom' }, 500);
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
    const delivery = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });

    const before = await databaseNow(ctx.db, ctx.clock);
    assert.equal((await resultFor(delivery.id)).outcome, 'retry');
    let row = await deliveryRow(ctx.db, delivery.id);
    const after = await databaseNow(ctx.db, ctx.clock);
    assert.equal(row.status, 'pending');
    assert.equal(row.attempts, 1);
    assert.equal(row.last_status_code, 500);
    // First retry after 5 s ± 20 %.
    assertWaitWithin(row.next_attempt_at, before, after, 4000, 6000);
    // Not due before its time.
    assert.equal((await deliverDue(deliverer)).length, 0);

    ctx.clock.advanceSeconds(6);
    assert.equal((await resultFor(delivery.id)).outcome, 'retry');
    ctx.clock.advanceSeconds(36);
    assert.equal((await resultFor(delivery.id)).outcome, 'succeeded');

    row = await deliveryRow(ctx.db, delivery.id);
    assert.equal(row.status, 'succeeded');
    assert.equal(row.attempts, 3);
    const attempts = await attemptRows(ctx.db, delivery.id);
    assert.deepEqual(attempts.map((attempt) => [attempt.attempt, attempt.status_code]), [[1, 500], [2, 500], [3, 200]]);
    assert.equal(attempts[0]!.response_body, 'boom');
    assert.equal(new Set(receiver.requests.map((request) => request.headers['webhook-id'])).size, 1);
    assert.equal(new Set(receiver.requests.map((request) => request.body.toString('hex'))).size, 1);
    const health = await ctx.db.query<{ last_success_at: Date | null; failing_since: Date | null }>(`SELECT last_success_at, failing_since FROM webhooks WHERE id = $1`, [webhook.id]);
    assert.ok(health.rows[0]!.last_success_at);
    assert.equal(health.rows[0]!.failing_since, null);
  });

  test('after the last scheduled retry the delivery fails for good', async () => {
    receiver.fallback = (_request, response) => response.writeHead(500).end();
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
    const delivery = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
    const outcomes: string[] = [];
    for (let i = 0; i < 4; i++) {
      outcomes.push((await resultFor(delivery.id)).outcome);
      ctx.clock.advanceSeconds(150);
    }
    assert.deepEqual(outcomes, ['retry', 'retry', 'retry', 'failed']);
    const row = await deliveryRow(ctx.db, delivery.id);
    assert.equal(row.status, 'failed');
    assert.equal(row.attempts, 4);
    assert.ok(row.completed_at);
    assert.equal((await deliverDue(deliverer)).length, 0);
  });

  test('a receiver that hangs times out and is retried', async () => {
    receiver.hang();
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
    const delivery = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
    const result = await resultFor(delivery.id);
    assert.equal(result.outcome, 'retry');
    const row = await deliveryRow(ctx.db, delivery.id);
    assert.equal(row.last_status_code, null);
    assert.match(row.last_error ?? '', /timeout/);
    assert.match((await attemptRows(ctx.db, delivery.id))[0]!.error ?? '', /timeout/);
  });

  test('410 Gone fails the delivery and disables the webhook', async () => {
    receiver.respond(410);
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
    const delivery = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
    const waiting = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
    const results = await deliverDue(deliverer, 1);
    assert.equal(results[0]!.outcome, 'gone');
    assert.equal((await deliveryRow(ctx.db, delivery.id)).status, 'failed');
    const state = await ctx.db.query<{ active: boolean; disabled_reason: string; disabled_at: Date }>(`SELECT active, disabled_reason, disabled_at FROM webhooks WHERE id = $1`, [webhook.id]);
    assert.equal(state.rows[0]!.active, false);
    assert.equal(state.rows[0]!.disabled_reason, 'receiver_gone');
    assert.ok(state.rows[0]!.disabled_at);
    // Nothing more goes to a disabled webhook; its deliveries wait for a re-enable.
    assert.equal((await deliverDue(deliverer)).length, 0);
    assert.equal((await deliveryRow(ctx.db, waiting.id)).status, 'pending');
    await ctx.db.query(`UPDATE webhooks SET active = true WHERE id = $1`, [webhook.id]);
    assert.equal((await resultFor(waiting.id)).outcome, 'succeeded');
  });

  test('429 and 503 honour Retry-After in seconds and as an HTTP date, bounded, and never retry sooner than the schedule', async () => {
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
    // [status, Retry-After, the least and the most wait, attempts before]: the scheduled delay after a
    // first attempt is 5 s ± 20 % (DELIVERY_RETRY_JITTER), after a second 30 s ± 20 %; a longer
    // Retry-After waits that instead.
    const cases: [number, string, number, number, number?][] = [
      [429, '120', 120_000, 120_000],
      // An HTTP date has whole seconds: up to a second shorter (the test clock stands still).
      [503, new Date(ctx.clock.now().getTime() + 300_000).toUTCString(), 299_000, 300_000],
      [429, '999999', 600_000, 600_000],
      // Retried sooner, these would spend the whole schedule within a minute.
      [429, '0', 4000, 6000],
      [429, '2', 4000, 6000],
      [503, new Date(ctx.clock.now().getTime() - 60_000).toUTCString(), 4000, 6000],
      [429, '2', 24_000, 36_000, 1],
    ];
    for (const [status, header, least, most, attempts = 0] of cases) {
      receiver.respond({ status, headers: { 'retry-after': header } });
      const delivery = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
      await ctx.db.query(`UPDATE deliveries SET attempts = $2 WHERE id = $1`, [delivery.id, attempts]);
      const before = await databaseNow(ctx.db, ctx.clock);
      await resultFor(delivery.id);
      const row = await deliveryRow(ctx.db, delivery.id);
      const after = await databaseNow(ctx.db, ctx.clock);
      assertWaitWithin(row.next_attempt_at, before, after, least, most, `${status} ${header}: `);
    }
  });

  test('a redirect is not followed: 3xx is a failure', async () => {
    const other = await Receiver.start();
    try {
      receiver.respond({ status: 302, headers: { location: other.url() } }, { status: 307, headers: { location: other.url() } });
      const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
      const first = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
      const second = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
      await deliverDue(deliverer);
      assert.equal(other.requests.length, 0);
      for (const id of [first.id, second.id]) {
        const row = await deliveryRow(ctx.db, id);
        assert.equal(row.status, 'pending');
        assert.ok([302, 307].includes(row.last_status_code!));
      }
    } finally {
      await other.close();
    }
  });

  test('a closed port is a connection error, retried', async () => {
    const gone = await Receiver.start();
    const url = gone.url();
    await gone.close();
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: url });
    const delivery = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
    assert.equal((await resultFor(delivery.id)).outcome, 'retry');
    assert.match((await deliveryRow(ctx.db, delivery.id)).last_error ?? '', /ECONNREFUSED/);
  });

  test('per-entity order holds while the first delivery is retried; other entities go on', async () => {
    receiver.respond(500);
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
    const first = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now(), entityKey: 'P-1', body: { n: 1 } });
    const second = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now(), entityKey: 'P-1', body: { n: 2 } });
    const other = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now(), entityKey: 'P-2', body: { n: 3 } });

    let results = await deliverDue(deliverer);
    assert.deepEqual(results.map((result) => result.deliveryId).sort(), [first.id, other.id].sort());
    // The first is waiting for its retry: the second may not overtake it, however long it waits.
    ctx.clock.advanceSeconds(2);
    assert.deepEqual(await deliverDue(deliverer), []);
    assert.equal((await deliveryRow(ctx.db, second.id)).attempts, 0);

    ctx.clock.advanceSeconds(10);
    results = await deliverDue(deliverer);
    assert.deepEqual(results.map((result) => [result.deliveryId, result.outcome]), [[first.id, 'succeeded']]);
    results = await deliverDue(deliverer);
    assert.deepEqual(results.map((result) => [result.deliveryId, result.outcome]), [[second.id, 'succeeded']]);
    const order = receiver.requests.filter((request) => JSON.parse(request.body.toString()).n !== 3).map((request) => JSON.parse(request.body.toString()).n);
    assert.deepEqual(order, [1, 1, 2]);
  });

  test('a delivery that failed for good releases the next one of its entity', async () => {
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
    const first = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now(), entityKey: 'O-1' });
    const second = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now(), entityKey: 'O-1' });
    await ctx.db.query(`UPDATE deliveries SET status = 'failed', completed_at = $2 WHERE id = $1`, [first.id, ctx.clock.now()]);
    assert.deepEqual((await deliverDue(deliverer)).map((result) => result.deliveryId), [second.id]);
  });

  test('a lease that expires is taken again by another worker; the first worker then changes nothing', async () => {
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
    const delivery = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
    const other = createDeliverer({ ...ctx, workerId: 'worker-b' });
    try {
      const taken = (await claim(deliverer, 10)).deliveries;
      assert.deepEqual(taken.map((row) => row.id), [delivery.id]);
      assert.equal((await deliveryRow(ctx.db, delivery.id)).leased_by, 'worker-a');
      // While the lease lives, nobody else gets it.
      assert.deepEqual((await claim(other, 10)).deliveries, []);
      ctx.clock.advanceSeconds(ctx.config.DELIVERY_LEASE_SECONDS + 1);
      const retaken = (await claim(other, 10)).deliveries;
      assert.deepEqual(retaken.map((row) => [row.id, row.message_id]), [[delivery.id, delivery.messageId]]);
      assert.equal((await deliveryRow(ctx.db, delivery.id)).leased_by, 'worker-b');

      const late = (await completeAttempts(ctx.db, [
        { deliveryId: delivery.id, webhookId: webhook.id, startedAt: ctx.clock.now(), durationMs: 1, statusCode: 200, error: null, responseBody: null, outcome: { kind: 'succeeded' } },
      ], { workerId: 'worker-a', clockOffsetMs: clockOffsetMs(ctx.clock), disableAfterDays: 5 })).recorded.has(delivery.id);
      assert.equal(late, false);
      assert.equal((await deliveryRow(ctx.db, delivery.id)).status, 'delivering');
      assert.equal((await attemptRows(ctx.db, delivery.id)).length, 0);
      // Nor can its failures touch the webhook: a late 410 would disable it, a late 500 mark it failing.
      for (const [statusCode, outcome] of [[410, { kind: 'gone' }], [500, { kind: 'retry', delayMs: 60_000 }]] as const) {
        const lateFailure = await completeAttempts(ctx.db, [
          { deliveryId: delivery.id, webhookId: webhook.id, startedAt: ctx.clock.now(), durationMs: 1, statusCode, error: null, responseBody: null, outcome },
        ], { workerId: 'worker-a', clockOffsetMs: clockOffsetMs(ctx.clock), disableAfterDays: 5 });
        assert.equal(lateFailure.recorded.size, 0);
        assert.equal(lateFailure.disabledWebhooks.size, 0);
      }
      const { rows: [health] } = await ctx.db.query<{ active: boolean; disabled_reason: string | null; failing_since: Date | null }>(
        `SELECT active, disabled_reason, failing_since FROM webhooks WHERE id = $1`, [webhook.id]);
      assert.deepEqual(health, { active: true, disabled_reason: null, failing_since: null });
    } finally {
      await other.close();
    }
  });

  test('a claim passes over a due delivery that another transaction holds and takes the next ones (it does not wait)', async () => {
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
    const ids: number[] = [];
    for (let n = 0; n < 3; n++) ids.push((await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() })).id);
    // A webhook's DELETE cascading over its backlog, or a deactivation holding its rows, say.
    let locked!: () => void;
    let release!: () => void;
    const lockTaken = new Promise<void>((resolve) => (locked = resolve));
    const released = new Promise<void>((resolve) => (release = resolve));
    const holder = ctx.db.transaction(async (tx) => {
      await tx.query(`SELECT id FROM deliveries WHERE id = $1 FOR UPDATE`, [ids[0]]);
      locked();
      await released;
    });
    await lockTaken;
    const claiming = claim(deliverer, 10).then((result) => result.deliveries);
    const outcome = await Promise.race([claiming, new Promise<'waited'>((resolve) => setTimeout(() => resolve('waited'), 3000))]);
    release();
    await holder;
    await claiming;
    assert.notEqual(outcome, 'waited', 'the claim waited for the lock');
    assert.deepEqual((outcome as { id: number }[]).map((row) => row.id).sort((a, b) => a - b), ids.slice(1));
  });

  test('leases and due times are the database\'s time, not the host\'s: a host clock an hour ahead moves neither', async () => {
    const local = createDeliverer({ ...ctx, clock: systemClock, workerId: 'worker-host-ahead' });
    const realNow = Date.now;
    try {
      const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
      const delivery = await seedDelivery(ctx.db, webhook, { now: new Date(realNow() - 1000) });
      Date.now = () => realNow() + 3_600_000;
      const taken = (await claim(local, 10)).deliveries;
      assert.deepEqual(taken.map((row) => row.id), [delivery.id]);
      const { rows: [leased] } = await ctx.db.query<{ expires_in: number }>(
        `SELECT extract(epoch FROM lease_expires_at - now())::float8 AS expires_in FROM deliveries WHERE id = $1`, [delivery.id]);
      assert.ok(Math.abs(leased!.expires_in - ctx.config.DELIVERY_LEASE_SECONDS) < 10, `lease expires in ${leased!.expires_in} s`);
      await completeAttempts(ctx.db, [
        { deliveryId: delivery.id, webhookId: webhook.id, startedAt: new Date(), durationMs: 1, statusCode: 500, error: null, responseBody: null, outcome: { kind: 'retry', delayMs: 60_000 } },
      ], { workerId: 'worker-host-ahead', clockOffsetMs: clockOffsetMs(systemClock), disableAfterDays: 5 });
      Date.now = realNow;
      const { rows: [row] } = await ctx.db.query<{ due_in: number }>(
        `SELECT extract(epoch FROM next_attempt_at - now())::float8 AS due_in FROM deliveries WHERE id = $1`, [delivery.id]);
      assert.ok(Math.abs(row!.due_in - 60) < 10, `due in ${row!.due_in} s, not 60 s by the database's clock`);
    } finally {
      Date.now = realNow;
      await local.close();
    }
  });

  test("a batch's latest recorded outcome per webhook sets its health; an attempt not recorded counts for nothing", async () => {
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
    await ctx.db.query(`UPDATE webhooks SET failing_since = now() - interval '1 hour' WHERE id = $1`, [webhook.id]);
    for (let n = 0; n < 3; n++) await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
    const [first, second, third] = (await claim(deliverer, 3)).deliveries;
    const record = (id: number, statusCode: number) => ({
      deliveryId: id, webhookId: webhook.id, startedAt: ctx.clock.now(), durationMs: 1, statusCode, error: null, responseBody: null,
      outcome: statusCode === 200 ? { kind: 'succeeded' as const } : { kind: 'retry' as const, delayMs: 60_000 },
    });
    const complete = (records: ReturnType<typeof record>[]) => completeAttempts(ctx.db, records, { workerId: deliverer.workerId, clockOffsetMs: clockOffsetMs(ctx.clock), disableAfterDays: 5 });
    const health = async () => (await ctx.db.query<{ last_success_at: Date | null; failing_since: Date | null }>(`SELECT last_success_at, failing_since FROM webhooks WHERE id = $1`, [webhook.id])).rows[0]!;

    await complete([record(first!.id, 200), record(second!.id, 500)]);
    assert.notEqual((await health()).failing_since, null, 'the latest outcome, a failure, decides');
    assert.equal((await health()).last_success_at, null);
    // first is recorded already: this worker no longer holds it, so its success changes nothing.
    assert.equal((await complete([record(first!.id, 200)])).recorded.size, 0);
    assert.notEqual((await health()).failing_since, null);
    await complete([record(third!.id, 200)]);
    assert.equal((await health()).failing_since, null, 'a success clears the failing state');
    assert.ok((await health()).last_success_at);
  });

  test('at most DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK per webhook are claimed, so a slow webhook leaves room for others', async () => {
    const local = await createTestApp({ DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK: '2' });
    const worker = createDeliverer({ ...local, workerId: 'w1' });
    try {
      const slow = await seedWebhook(local.db, local.keys, { callbackUrl: receiver.url('/slow') });
      const fast = await seedWebhook(local.db, local.keys, { callbackUrl: receiver.url('/fast') });
      for (let i = 0; i < 5; i++) await seedDelivery(local.db, slow, { now: local.clock.now() });
      for (let i = 0; i < 2; i++) await seedDelivery(local.db, fast, { now: local.clock.now() });
      const first = (await claim(worker, 100)).deliveries;
      const count = (rows: { webhook_id: number }[], id: number) => rows.filter((row) => row.webhook_id === id).length;
      assert.equal(count(first, slow.id), 2);
      assert.equal(count(first, fast.id), 2);
      // The slow webhook's two are still in flight: nothing more of it, even with free slots.
      assert.deepEqual((await claim(worker, 100)).deliveries, []);
    } finally {
      await worker.close();
      await local.close();
    }
  });

  test('a webhook failing for DELIVERY_DISABLE_AFTER_DAYS without a success is disabled', async () => {
    receiver.fallback = (_request, response) => response.writeHead(500).end();
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
    const first = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
    await resultFor(first.id);
    let state = await ctx.db.query<{ active: boolean; failing_since: Date | null }>(`SELECT active, failing_since FROM webhooks WHERE id = $1`, [webhook.id]);
    assert.equal(state.rows[0]!.active, true);
    assert.ok(state.rows[0]!.failing_since);
    ctx.clock.advanceSeconds(5 * 86_400 + 60);
    const later = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now(), entityKey: 'other' });
    await resultFor(later.id);
    const disabled = await ctx.db.query<{ active: boolean; disabled_reason: string }>(`SELECT active, disabled_reason FROM webhooks WHERE id = $1`, [webhook.id]);
    assert.equal(disabled.rows[0]!.active, false);
    assert.equal(disabled.rows[0]!.disabled_reason, 'failing_too_long');
    state = await ctx.db.query(`SELECT active, failing_since FROM webhooks WHERE id = $1`, [webhook.id]);
    assert.equal(state.rows[0]!.active, false);
  });
});

/**
 * A due time set by a completion that ran between the database readings `before` and `after` (its
 * clock moves with real time): the wait the completion chose lies within [least, most].
 */
function assertWaitWithin(dueAt: string | Date, before: number, after: number, least: number, most: number, label = ''): void {
  const due = new Date(dueAt).getTime();
  assert.ok(due - before >= least && due - after <= most, `${label}due ${due - before} ms after the send began, ${due - after} ms after it ended; expected a wait of ${least}–${most} ms`);
}
