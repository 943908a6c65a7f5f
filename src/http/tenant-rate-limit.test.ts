import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { seedWebhook } from '../testing/deliveries.js';
import { postEvent, sampleEvent, seedWorld, type World } from '../testing/events.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';

describe('per-tenant rate limits: 429 with Retry-After, one tenant never spends another\'s budget', () => {
  let ctx: TestContext;
  let world: World;
  before(async () => {
    ctx = await createTestApp({
      TENANT_EVENTS_BURST: '3',
      TENANT_EVENTS_PER_SECOND: '1',
      TENANT_RETRIES_PER_MINUTE: '2',
      TENANT_REPLAYS_PER_MINUTE: '2',
      TENANT_TESTS_PER_MINUTE: '2',
    });
    world = await seedWorld(ctx);
  });
  after(() => ctx.close());

  const assertLimited = (response: { statusCode: number; headers: Record<string, unknown>; json(): Record<string, unknown> }, seconds: number) => {
    assert.equal(response.statusCode, 429);
    assert.equal(response.headers['retry-after'], String(seconds));
    assert.equal(response.json().code, 'rate_limited');
    assert.equal(response.json().retry_after, seconds);
  };

  test('event intake: a burst, then 429 for that seller only, then refilled with time', async () => {
    const event = () => sampleEvent('publication/update', world);
    for (let i = 0; i < 3; i++) assert.equal((await postEvent(ctx, world.headers.seller1, event())).statusCode, 202);
    assertLimited(await postEvent(ctx, world.headers.seller1, event()), 1);
    // Seller 2 and an admin are other tenants: untouched.
    assert.equal((await postEvent(ctx, world.headers.seller2, { ...event(), seller_id: 2, marketplace_connection_id: world.connections['2:MKT'] })).statusCode, 202);
    assert.equal((await postEvent(ctx, world.headers.admin, event())).statusCode, 202);
    ctx.clock.advanceSeconds(1);
    assert.equal((await postEvent(ctx, world.headers.seller1, event())).statusCode, 202);
    assertLimited(await postEvent(ctx, world.headers.seller1, event()), 1);
  });

  test('retry, replay and test notifications each have their own per-minute budget', async () => {
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: 'http://127.0.0.1:9/never', marketplaceCode: 'MKT' });
    const base = `/v1/MKT/webhooks/${webhook.code}`;
    const calls = [
      () => ctx.app.inject({ method: 'POST', url: `${base}/deliveries/999999/retry`, headers: world.headers.admin }),
      () => ctx.app.inject({ method: 'POST', url: `${base}/replay`, headers: world.headers.admin, payload: { since: ctx.clock.now().toISOString() } }),
      () => ctx.app.inject({ method: 'POST', url: `${base}/test`, headers: world.headers.admin }),
    ];
    for (const call of calls) {
      for (let i = 0; i < 2; i++) assert.notEqual((await call()).statusCode, 429);
      // 2 per minute: one more is there after 30 s.
      assertLimited(await call(), 30);
    }
    ctx.clock.advanceSeconds(30);
    for (const call of calls) assert.notEqual((await call()).statusCode, 429);
  });
});
