import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ManualClock } from '../../clock.js';
import { seedDelivery, seedWebhook, type SeededWebhook } from '../../testing/deliveries.js';
import { createTestApp, type TestContext } from '../../testing/test-app.js';
import { HEALTH_WINDOWS, retryLookbackMs, webhookHealth, type HealthBucket } from './attempt-health.js';

const HOUR = 3_600_000;

/**
 * The portal's health chart data on a real database, with the injected clock as "now": attempts
 * per bucket by outcome, p50 and p95 of the answered ones, only this webhook's, only in the window.
 */
describe('webhook health: attempts per bucket by outcome, response time percentiles', () => {
  const now = new Date('2026-03-10T10:30:00Z');
  let ctx: TestContext;
  let hook: SeededWebhook;
  let other: SeededWebhook;

  const attempt = async (webhook: SeededWebhook, startedAt: string, durationMs: number, statusCode: number | null, createdAt = startedAt) => {
    const delivery = await seedDelivery(ctx.db, webhook, { now: new Date(createdAt) });
    await ctx.db.query(
      `INSERT INTO delivery_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error) VALUES ($1, 1, $2, $3, $4, $5)`,
      [delivery.id, startedAt, durationMs, statusCode, statusCode === null ? 'timeout' : null],
    );
  };

  before(async () => {
    ctx = await createTestApp({ DELIVERY_RETRY_SCHEDULE: '1m,1h', DELIVERY_RETRY_JITTER: '0.5', DELIVERY_RETRY_AFTER_MAX_SECONDS: '600' }, { clock: new ManualClock(now) });
    hook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: 'https://receiver.example/a', code: 'health-a' });
    other = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: 'https://receiver.example/b', code: 'health-b' });
    // The 10:00 hour: four 2xx, one 500, one without an answer (not a response time).
    await attempt(hook, '2026-03-10T10:00:00Z', 100, 200);
    await attempt(hook, '2026-03-10T10:10:00Z', 200, 204);
    await attempt(hook, '2026-03-10T10:20:00Z', 300, 200);
    await attempt(hook, '2026-03-10T10:29:59.999Z', 400, 299);
    await attempt(hook, '2026-03-10T10:05:00Z', 1000, 500);
    await attempt(hook, '2026-03-10T10:06:00Z', 5000, null);
    // The 08:00 hour: one success.
    await attempt(hook, '2026-03-10T08:59:59Z', 50, 200);
    // Yesterday 10:59: before the 24 hours (they start at 11:00), inside the 7 days.
    await attempt(hook, '2026-03-09T10:59:00Z', 70, 404);
    // A retry now of a delivery created 45 minutes ago: counted (within the retry lookback).
    await attempt(hook, '2026-03-10T09:15:00Z', 80, 503, '2026-03-10T08:30:00Z');
    // A retry now of a delivery created before both windows by more than the lookback (1 h 40 min
    // here): left out, as documented (a replay of an old delivery).
    await attempt(hook, '2026-03-10T10:25:00Z', 60, 200, '2026-03-02T00:00:00Z');
    // Another webhook's attempt in the same hour: not this webhook's.
    await attempt(other, '2026-03-10T10:15:00Z', 9000, 200);
  });
  after(() => ctx.close());

  const counts = (bucket: HealthBucket) => [bucket.succeeded, bucket.failed, bucket.noAnswer];

  test('the last 24 hours: one bucket per hour, ending with the hour that holds now', async () => {
    const day = await webhookHealth(ctx).one(hook.id, HEALTH_WINDOWS[0]);
    assert.equal(day.since.toISOString(), '2026-03-09T11:00:00.000Z');
    assert.equal(day.until.toISOString(), '2026-03-10T11:00:00.000Z');
    assert.equal(day.buckets.length, 24);
    assert.equal(day.buckets[0]!.start.toISOString(), '2026-03-09T11:00:00.000Z');
    const at = (iso: string) => day.buckets.find((bucket) => bucket.start.toISOString() === iso)!;
    const ten = at('2026-03-10T10:00:00.000Z');
    assert.deepEqual(counts(ten), [4, 1, 1]);
    // Answered durations 100, 200, 300, 400, 1000: percentile_cont interpolates.
    assert.equal(ten.p50, 300);
    assert.equal(ten.p95, 880);
    assert.deepEqual(counts(at('2026-03-10T08:00:00.000Z')), [1, 0, 0]);
    assert.equal(at('2026-03-10T08:00:00.000Z').p50, 50);
    assert.deepEqual(counts(at('2026-03-10T09:00:00.000Z')), [0, 1, 0]);
    const empty = at('2026-03-10T07:00:00.000Z');
    assert.deepEqual([...counts(empty), empty.p50, empty.p95], [0, 0, 0, null, null]);
    // The whole window: 50, 80, 100, 200, 300, 400, 1000 answered.
    assert.deepEqual([day.total.succeeded, day.total.failed, day.total.noAnswer], [5, 2, 1]);
    assert.equal(day.total.p50, 200);
    assert.equal(day.total.p95, 820);
    assert.equal(day.buckets.reduce((sum, bucket) => sum + bucket.succeeded + bucket.failed + bucket.noAnswer, 0), 8);
  });

  test('the last 7 days: 28 buckets of 6 hours from 00, 06, 12, 18 UTC', async () => {
    const week = await webhookHealth(ctx).one(hook.id, HEALTH_WINDOWS[1]);
    assert.equal(week.until.toISOString(), '2026-03-10T12:00:00.000Z');
    assert.equal(week.since.toISOString(), '2026-03-03T12:00:00.000Z');
    assert.equal(week.buckets.length, 28);
    const at = (iso: string) => week.buckets.find((bucket) => bucket.start.toISOString() === iso)!;
    assert.deepEqual(counts(at('2026-03-10T06:00:00.000Z')), [5, 2, 1]);
    assert.deepEqual(counts(at('2026-03-09T06:00:00.000Z')), [0, 1, 0]);
    assert.equal(at('2026-03-09T06:00:00.000Z').p95, 70);
    assert.deepEqual([week.total.succeeded, week.total.failed, week.total.noAnswer], [5, 3, 1]);
  });

  test('"now" is the injected clock: moved on a day, the 10:00 attempts leave the 24 hours', async () => {
    ctx.clock.advance(24 * HOUR);
    try {
      const day = await webhookHealth(ctx).one(hook.id, HEALTH_WINDOWS[0]);
      assert.equal(day.until.toISOString(), '2026-03-11T11:00:00.000Z');
      assert.deepEqual([day.total.succeeded, day.total.failed, day.total.noAnswer], [0, 0, 0]);
    } finally {
      ctx.clock.advance(-24 * HOUR);
    }
  });

  test('the lookback is the retry schedule at its most jitter, each delay at least the longest Retry-After', () => {
    // 1m × 1.5 = 90 s, raised to the 600 s Retry-After cap; 1h × 1.5 = 5 400 s.
    assert.equal(retryLookbackMs(ctx.config), 600_000 + 5_400_000);
  });
});
