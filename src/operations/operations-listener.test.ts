import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ManualClock } from '../clock.js';
import { loadConfig } from '../config.js';
import type { Database } from '../db/database.js';
import { createMetrics } from '../metrics.js';
import { seedDelivery, seedWebhook } from '../testing/deliveries.js';
import { generateKeys } from '../keys.js';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.js';
import { buildOperationsApp, type OperationsListener } from './operations-listener.js';

describe('operations listener: scrapes cost no query and survive a database outage', () => {
  let db: TestDatabase;
  let operations: OperationsListener;
  let queries = 0;
  const clock = new ManualClock(new Date());

  before(async () => {
    db = await createTestDatabase();
    // The real database, with every statement counted.
    const counted: Database = Object.create(db) as Database;
    counted.query = (sql, params) => {
      queries++;
      return db.query(sql, params);
    };
    const config = loadConfig({ LOG_LEVEL: 'silent', METRICS_QUEUE_INTERVAL_SECONDS: '3600' });
    operations = await buildOperationsApp({ config, db: counted, clock, metrics: createMetrics() });
  });
  after(async () => {
    await operations.close();
    await db.close().catch(() => {});
  });

  const gauge = (text: string, name: string) => Number(text.split('\n').find((line) => line.startsWith(`${name} `))?.split(' ')[1]);

  test('100 scrapes run no database query; the gauges come from the last measure', async () => {
    const webhook = await seedWebhook(db, (await generateKeys()), { callbackUrl: 'https://erp.example.com/hook' });
    await seedDelivery(db, webhook, { now: clock.now() });
    await operations.gauges.refresh();
    const before = queries;
    for (let i = 0; i < 100; i++) {
      const response = await operations.app.inject({ url: '/metrics' });
      assert.equal(response.statusCode, 200);
      assert.equal(gauge(response.body, 'plaza_deliveries_due'), 1);
    }
    assert.equal(queries - before, 0);
  });

  test('with the database gone, /metrics still answers 200 with the last values; /readyz says 503', async () => {
    await db.close();
    await operations.gauges.refresh();
    const response = await operations.app.inject({ url: '/metrics' });
    assert.equal(response.statusCode, 200);
    assert.equal(gauge(response.body, 'plaza_deliveries_due'), 1);
    assert.equal(gauge(response.body, 'plaza_queue_measure_failures_total'), 1);
    assert.ok(gauge(response.body, 'plaza_queue_measured_timestamp_seconds') > 0);
    assert.equal((await operations.app.inject({ url: '/healthz' })).statusCode, 200);
    assert.equal((await operations.app.inject({ url: '/readyz' })).statusCode, 503);
  });
});
