import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { buildApp, type App } from '../app.js';
import { ManualClock } from '../clock.js';
import { loadConfig } from '../config.js';
import { createMetrics } from '../metrics.js';
import { generateKeys } from '../keys.js';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.js';
import { OMITTED_DEFAULT_METRICS, startOperationsListener, type OperationsListener } from './operations-listener.js';

// Prometheus's own checker is the judge of the exposition format and naming rules. CI installs it
// (.ci/run); elsewhere the test is skipped when it is missing, but never in CI, where a missing
// tool must not pass for a clean result.
const hasPromtool = spawnSync('promtool', ['--version'], { encoding: 'utf8' }).status === 0;
if (!hasPromtool && process.env.CI === 'true') throw new Error('promtool is not installed: CI must install it (see .ci/run)');

describe('/metrics as `promtool check metrics` sees it', { skip: hasPromtool ? false : 'promtool is not installed' }, () => {
  let db: TestDatabase;
  let app: App;
  let operations: OperationsListener & { port: number };
  let body: string;

  before(async () => {
    db = await createTestDatabase();
    const config = loadConfig({ LOG_LEVEL: 'silent', METRICS_PORT: '0', METRICS_QUEUE_INTERVAL_SECONDS: '3600' });
    const clock = new ManualClock(new Date());
    const metrics = createMetrics();
    // The process's whole set, as `plaza serve` builds it: the API's request histogram with
    // samples, the worker's counters, the queue gauges and the runtime metrics.
    app = await buildApp({ config, db, keys: await generateKeys(), clock, metrics, logger: false });
    await app.ready();
    await app.inject({ url: '/healthz' });
    await app.inject({ url: '/v1/nowhere' });
    operations = await startOperationsListener({ config, db, clock, metrics }, pino({ level: 'silent' }));
    await operations.gauges.refresh();
    const response = await fetch(`http://127.0.0.1:${operations.port}/metrics`);
    assert.equal(response.status, 200);
    body = await response.text();
  });
  after(async () => {
    await operations?.close();
    await app?.close();
    await db?.close();
  });

  test('0 problems', () => {
    assert.match(body, /^plaza_http_request_duration_seconds_count\{/m);
    assert.match(body, /^nodejs_eventloop_lag_seconds /m);
    const result = spawnSync('promtool', ['check', 'metrics'], { input: body, encoding: 'utf8', timeout: 30_000 });
    // promtool writes its findings to stderr and exits 3 with any.
    assert.equal(`${result.stdout}${result.stderr}`.trim(), '');
    assert.equal(result.status, 0);
  });

  test('the left-out gauges are gone, their per-type series stay', () => {
    for (const name of OMITTED_DEFAULT_METRICS) {
      assert.doesNotMatch(body, new RegExp(`^${name}[ {]`, 'm'));
      assert.match(body, new RegExp(`^# TYPE ${name.replace(/_total$/, '')} gauge`, 'm'));
    }
  });
});
