import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { buildApp, type App } from './app.js';
import { buildOperationsApp, type OperationsListener } from './operations/operations-listener.js';
import { createTestApp, type TestContext } from './testing/test-app.js';
import { createDeliverer, deliverDue } from './delivery/dispatch/deliver.js';
import { seedDelivery, seedWebhook } from './testing/deliveries.js';
import { Receiver } from './testing/receiver.js';
import { createMetrics } from './metrics.js';

describe('GET /metrics on the operations listener', () => {
  let ctx: TestContext;
  let app: App;
  let operations: OperationsListener;
  let receiver: Receiver;
  const metrics = createMetrics();
  before(async () => {
    ctx = await createTestApp();
    // The same database, with metrics shared between the app and the worker as `serve --role all` does.
    app = await buildApp({ config: ctx.config, db: ctx.db, keys: ctx.keys, clock: ctx.clock, logger: false, metrics });
    operations = await buildOperationsApp({ config: ctx.config, db: ctx.db, clock: ctx.clock, metrics });
    receiver = await Receiver.start();
  });
  after(async () => {
    await operations.close();
    await receiver.close();
    await app.close();
    await ctx.close();
  });

  // The gauges are measured on an interval; the tests measure now instead of waiting for it.
  const scrape = async () => {
    await operations.gauges.refresh();
    const response = await operations.app.inject({ url: '/metrics' });
    assert.equal(response.statusCode, 200);
    assert.match(String(response.headers['content-type']), /^text\/plain/);
    return response.body;
  };
  const value = (text: string, series: string) => {
    const line = text.split('\n').find((entry) => entry.startsWith(`${series} `));
    return line === undefined ? undefined : Number(line.slice(series.length + 1));
  };

  test('exposes delivery outcomes, attempt durations, queue depth and age, HTTP durations', async () => {
    receiver.respond(500);
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
    await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
    await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
    ctx.clock.advanceSeconds(30);

    let text = await scrape();
    assert.equal(value(text, 'plaza_deliveries_due'), 2);
    assert.equal(value(text, 'plaza_deliveries_oldest_due_age_seconds'), 30);
    assert.equal(value(text, 'plaza_deliveries_failed'), 0);

    const deliverer = createDeliverer({ ...ctx, metrics });
    await deliverDue(deliverer);
    await deliverer.close();
    await ctx.db.query(`UPDATE deliveries SET status = 'failed', completed_at = $1 WHERE status = 'pending'`, [ctx.clock.now()]);

    text = await scrape();
    assert.equal(value(text, 'plaza_deliveries_due'), 0);
    assert.equal(value(text, 'plaza_deliveries_oldest_due_age_seconds'), 0);
    assert.equal(value(text, 'plaza_deliveries_failed'), 1);
    assert.equal(value(text, 'plaza_delivery_attempts_total{outcome="succeeded"}'), 1);
    assert.equal(value(text, 'plaza_delivery_attempts_total{outcome="retry"}'), 1);
    assert.equal(value(text, 'plaza_deliveries_completed_total{outcome="succeeded"}'), 1);
    assert.equal(value(text, 'plaza_delivery_attempt_duration_seconds_count{outcome="succeeded"}'), 1);
    assert.match(text, /^plaza_delivery_attempt_duration_seconds_bucket\{le="\+Inf",outcome="retry"\} 1$/m);
    // Outcomes not seen yet are there at 0 from the start.
    assert.equal(value(text, 'plaza_delivery_attempts_total{outcome="gone"}'), 0);
    assert.equal(value(text, 'plaza_deliveries_completed_total{outcome="failed"}'), 0);
  });

  test('the HTTP histogram names route patterns, not raw URLs', async () => {
    await app.inject({ url: '/no/such/path/123' });
    await app.inject({ url: '/healthz' });
    const text = await scrape();
    assert.match(text, /plaza_http_request_duration_seconds_count\{method="GET",route="\/healthz",status_code="200"\}/);
    assert.match(text, /plaza_http_request_duration_seconds_count\{method="GET",route="unmatched",status_code="404"\}/);
    assert.doesNotMatch(text, /no\/such\/path/);
  });

  test('the public API port does not serve /metrics', async () => {
    const response = await app.inject({ url: '/metrics' });
    assert.equal(response.statusCode, 404);
    assert.doesNotMatch(response.body, /plaza_/);
  });

  test('a fresh process has every outcome label at 0 before any delivery', async () => {
    const fresh = await buildOperationsApp({ config: ctx.config, db: ctx.db, clock: ctx.clock, metrics: createMetrics() });
    try {
      const text = (await fresh.app.inject({ url: '/metrics' })).body;
      for (const outcome of ['succeeded', 'retry', 'failed', 'gone']) assert.equal(value(text, `plaza_delivery_attempts_total{outcome="${outcome}"}`), 0);
      assert.equal(value(text, 'plaza_delivery_attempt_duration_seconds_count{outcome="gone"}'), 0);
    } finally {
      await fresh.close();
    }
  });
});
