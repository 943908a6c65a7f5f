import assert from 'node:assert/strict';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import { collectDefaultMetrics } from 'prom-client';
import { loadConfig } from '../config.js';
import { createMetrics } from '../metrics.js';
import { seedWebhook } from '../testing/deliveries.js';
import { buildOperationsApp } from '../operations/operations-listener.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { accessTokenFor, bearer, seedUser } from '../testing/fixtures.js';
import { COMPRESSION_THRESHOLD_BYTES } from './compression.js';

// Issue 28 item 15: answers over about 1 KiB are compressed for clients that accept gzip or br.

const decode = (encoding: unknown, bytes: Buffer) => (encoding === 'br' ? brotliDecompressSync(bytes) : encoding === 'gzip' ? gunzipSync(bytes) : bytes).toString();

describe('response compression', () => {
  let ctx: TestContext;
  let admin: Record<string, string>;
  before(async () => {
    ctx = await createTestApp();
    admin = bearer(await accessTokenFor(ctx, await seedUser(ctx.db, { role: 'admin' })));
    for (let i = 0; i < 10; i++) await seedWebhook(ctx.db, ctx.keys, { callbackUrl: `https://erp.example.com/hook/${i}`, marketplaceCode: 'MKT' });
  });
  after(() => ctx.close());

  const list = (acceptEncoding?: string) =>
    ctx.app.inject({ url: '/v1/MKT/webhooks', headers: { ...admin, ...(acceptEncoding === undefined ? {} : { 'accept-encoding': acceptEncoding }) } });

  test('a JSON answer over the threshold is br or gzip as the client accepts, and decodes to the same JSON', async () => {
    const plain = await list();
    assert.equal(plain.statusCode, 200);
    assert.equal(plain.headers['content-encoding'], undefined);
    assert.ok(plain.rawPayload.length > COMPRESSION_THRESHOLD_BYTES, `the list is ${plain.rawPayload.length} bytes`);
    for (const [accept, expected] of [['gzip', 'gzip'], ['br', 'br'], ['gzip, deflate, br', 'br'], ['br;q=0.5, gzip', 'gzip'], ['br;q=0, gzip;q=0', undefined], ['identity', undefined]] as const) {
      const answer = await list(accept);
      assert.equal(answer.headers['content-encoding'], expected, accept);
      assert.deepEqual(JSON.parse(decode(expected, answer.rawPayload)), plain.json(), accept);
      if (expected) {
        assert.match(String(answer.headers.vary), /accept-encoding/i);
        assert.ok(answer.rawPayload.length < plain.rawPayload.length / 2, `${accept}: ${answer.rawPayload.length} bytes`);
      }
    }
  });

  test('an answer under the threshold is sent as is', async () => {
    const health = await ctx.app.inject({ url: '/healthz', headers: { 'accept-encoding': 'gzip, br' } });
    assert.equal(health.statusCode, 200);
    assert.ok(health.rawPayload.length < COMPRESSION_THRESHOLD_BYTES);
    assert.equal(health.headers['content-encoding'], undefined);
  });

  test('/metrics (operations listener) is compressed for a scraper that accepts gzip', async () => {
    const metrics = createMetrics();
    collectDefaultMetrics({ register: metrics.registry });
    const operations = await buildOperationsApp({ config: loadConfig({ LOG_LEVEL: 'silent', METRICS_QUEUE_INTERVAL_SECONDS: '3600' }), db: ctx.db, clock: ctx.clock, metrics });
    try {
      const plain = await operations.app.inject({ url: '/metrics' });
      const zipped = await operations.app.inject({ url: '/metrics', headers: { 'accept-encoding': 'gzip' } });
      assert.equal(zipped.headers['content-encoding'], 'gzip');
      assert.ok(zipped.rawPayload.length < plain.rawPayload.length / 3);
      assert.match(decode('gzip', zipped.rawPayload), /^# HELP /m);
    } finally {
      await operations.close();
    }
  });
});
