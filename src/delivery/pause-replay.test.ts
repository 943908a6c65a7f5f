import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, beforeEach, describe, test } from 'node:test';
import pino from 'pino';
import { deliveriesOf, postEvent, sampleEvent, seedWorld, type World } from '../testing/events.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { eventually } from '../testing/wait.js';
import { createDeliverer, deliverDue, type Deliverer } from './dispatch/deliver.js';
import { databaseNow } from '../testing/deliveries.js';
import { Receiver } from '../testing/receiver.js';
import { DELIVERY_CHANNEL } from '../webhooks/deliveries.repository.js';
import { pruneExpired } from './maintenance.js';

const MINUTE = 60_000;
const DAY = 86_400_000;

/** A pino logger at the default level whose lines the test can read. */
function capturingLogger() {
  const lines: { level: number; msg: string; [key: string]: unknown }[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

describe('pause, replay, sent headers and failure logs (API)', () => {
  let ctx: TestContext;
  let world: World;
  let receiver: Receiver;
  let deliverer: Deliverer;
  let log: ReturnType<typeof capturingLogger>;
  const base = '/v1/MKT/webhooks/orders';

  before(async () => {
    ctx = await createTestApp({ ACCESS_TOKEN_TTL_SECONDS: String(365 * 86_400), DELIVERY_RETRY_SCHEDULE: '1h,1h', DELIVERY_RETRY_JITTER: '0' });
    world = await seedWorld(ctx);
    receiver = await Receiver.start();
    log = capturingLogger();
    deliverer = createDeliverer({ ...ctx, logger: log.logger, workerId: 'pause-test' });
  });
  after(async () => {
    await deliverer.close();
    await receiver.close();
    await ctx.close();
  });
  beforeEach(async () => {
    await ctx.db.exec(`DELETE FROM deliveries; DELETE FROM events; DELETE FROM webhooks;`);
    receiver.requests.length = 0;
    log.lines.length = 0;
  });

  const call = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object, headers = world.headers.admin) =>
    ctx.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });
  const createHook = async (code = 'orders', extra: Record<string, unknown> = {}, headers = world.headers.admin) => {
    const response = await call('POST', '/v1/MKT/webhooks', { code, name: code, topic: 'order/create', callback_url: receiver.url(`/${code}`), ...extra }, headers);
    assert.equal(response.statusCode, 201, response.body);
  };
  const webhookId = async (code: string) => Number((await ctx.db.query<{ id: number }>(`SELECT id FROM webhooks WHERE code = $1`, [code])).rows[0]!.id);
  const sendOrder = async (eventId: string, reference = 'ORD-1', headers = world.headers.admin) => {
    ctx.clock.advance(MINUTE);
    const response = await postEvent(ctx, headers, sampleEvent('order/create', world, { event_id: eventId, entity_id: reference, order: { reference_order: reference } }));
    assert.equal(response.statusCode, 202, response.body);
  };

  test('an attempt records the headers it sent; secret-looking custom values are masked, the receiver got them whole', async () => {
    await createHook('orders', { headers: { Authorization: 'Bearer s3cr3t-value-123', 'X-Shop': 'north-1', 'X-Api-Key': 'k' } });
    await sendOrder('evt-1');
    receiver.respond({ status: 500, body: 'database down' });
    await deliverDue(deliverer);
    const [delivery] = await deliveriesOf(ctx.db, await webhookId('orders'));
    const detail = (await call('GET', `${base}/deliveries/${delivery!.id}`)).json();
    const [attempt] = detail.attempts;
    const received = receiver.requests[0]!.headers;
    assert.equal(received.authorization, 'Bearer s3cr3t-value-123');
    assert.deepEqual(attempt.request_headers, {
      authorization: 'Bear…[masked]',
      'x-shop': 'north-1',
      'x-api-key': '[masked]',
      'content-type': 'application/json',
      'user-agent': received['user-agent'],
      'webhook-id': delivery!.message_id,
      'webhook-timestamp': received['webhook-timestamp'],
      'webhook-signature': received['webhook-signature'],
      'plaza-entity-sequence': '1',
    });
    assert.equal(attempt.status_code, 500);
    assert.equal(attempt.response_body, 'database down');
    assertNear(detail.next_attempt_at, (await databaseNow(ctx.db, ctx.clock)) + 3600_000);
    assert.doesNotMatch(JSON.stringify(log.lines), /s3cr3t/);
  });

  test('a failed attempt logs at info; a 410 and an automatic disable log at warn; the webhook shows its health', async () => {
    await createHook('orders');
    await sendOrder('evt-1');
    receiver.respond(503);
    await deliverDue(deliverer);
    const failed = log.lines.find((line) => line.msg === 'delivery attempt failed');
    assert.equal(failed?.level, 30);
    assert.equal(failed?.status, 503);
    let webhook = (await call('GET', base)).json();
    assertNear(webhook.failing_since, await databaseNow(ctx.db, ctx.clock));
    assert.equal(webhook.last_success_at, null);

    await sendOrder('evt-2', 'ORD-2');
    receiver.respond(410);
    await deliverDue(deliverer);
    const gone = log.lines.find((line) => line.msg === 'webhook disabled: the receiver answered 410 Gone');
    assert.equal(gone?.level, 40);
    webhook = (await call('GET', base)).json();
    assert.equal(webhook.active, false);
    assertNear(webhook.disabled_at, await databaseNow(ctx.db, ctx.clock));

    // Failing for longer than DELIVERY_DISABLE_AFTER_DAYS (5): the next failure disables it.
    await createHook('second');
    await ctx.db.query(`UPDATE webhooks SET failing_since = $1 WHERE code = 'second'`, [new Date(ctx.clock.now().getTime() - 6 * DAY)]);
    await sendOrder('evt-3', 'ORD-3');
    receiver.respond(500);
    await deliverDue(deliverer);
    const disabled = log.lines.find((line) => line.msg === 'webhook disabled: deliveries kept failing');
    assert.equal(disabled?.level, 40);
    assert.equal(disabled?.webhookId, await webhookId('second'));
  });

  test('filters: event_id, entity_id and topic; one event seen across the caller\'s webhooks only', async () => {
    await createHook('orders');
    await createHook('copy');
    await createHook('sellers', {}, world.headers.seller1);
    await sendOrder('evt-a', 'ORD-A');
    await sendOrder('evt-b', 'ORD-B');
    await sendOrder('evt-c', 'ORD-A');
    const ids = (url: string) => call('GET', url).then((response) => response.json().items.map((item: { event_id: string }) => item.event_id));
    assert.deepEqual(await ids(`${base}/deliveries?event_id=evt-b`), ['evt-b']);
    assert.deepEqual(await ids(`${base}/deliveries?entity_id=ORD-A`), ['evt-c', 'evt-a']);
    assert.deepEqual(await ids(`${base}/deliveries?topic=order/create&entity_id=ORD-B`), ['evt-b']);
    assert.deepEqual(await ids(`${base}/deliveries?topic=order/update`), []);
    assert.equal((await call('GET', `${base}/deliveries?topic=nope`)).statusCode, 400);

    const admin = (await call('GET', '/v1/MKT/events/evt-a/deliveries')).json();
    assert.equal(admin.entity_id, 'ORD-A');
    assert.deepEqual(admin.deliveries.map((row: { webhook_code: string }) => row.webhook_code), ['copy', 'orders', 'sellers']);
    const seller = (await call('GET', '/v1/MKT/events/evt-a/deliveries', undefined, world.headers.seller1)).json();
    assert.deepEqual(seller.deliveries.map((row: { webhook_code: string }) => row.webhook_code), ['sellers']);
    // Seller 2 has no webhook the event reached: the event is not disclosed.
    assert.equal((await call('GET', '/v1/MKT/events/evt-a/deliveries', undefined, world.headers.seller2)).statusCode, 404);
    assert.equal((await call('GET', '/v1/MKT/events/nope/deliveries')).statusCode, 404);
  });

  test('pause holds matching events; resume sends them in order at once, retries scheduled hours away too, and wakes the workers', async () => {
    await createHook('orders');
    await sendOrder('evt-0', 'ORD-0');
    receiver.respond(500);
    await deliverDue(deliverer); // evt-0 now waits an hour for its retry
    const paused = await call('PATCH', base, { active: false });
    assert.equal(paused.json().disabled_reason, 'disabled_by_user');
    for (const [event, entity] of [['evt-1', 'ORD-1'], ['evt-2', 'ORD-2'], ['evt-3', 'ORD-1']] as const) await sendOrder(event, entity);
    const webhook = (await call('GET', base)).json();
    assert.equal(webhook.held_count, 3);
    assert.deepEqual((await call('GET', `${base}/deliveries?status=held`)).json().items.map((item: { event_id: string }) => item.event_id), ['evt-3', 'evt-2', 'evt-1']);
    assert.deepEqual(await deliverDue(deliverer), [], 'nothing goes out while paused');
    assert.equal(receiver.requests.length, 1);
    // A held delivery is not retried: the resume sends it, in order.
    const held = (await call('GET', `${base}/deliveries?status=held`)).json().items[0] as { id: number };
    const retried = await call('POST', `${base}/deliveries/${held.id}/retry`);
    assert.equal(retried.statusCode, 409, retried.body);
    assert.match(retried.json().detail, /held while its webhook is paused/);
    assert.equal((await call('GET', base)).json().held_count, 3, 'still held');

    const notified: string[] = [];
    const unlisten = await ctx.db.listen(DELIVERY_CHANNEL, () => notified.push('woken'));
    try {
      const resumed = await call('PATCH', base, { active: true });
      assert.equal(resumed.json().held_count, 0);
      await eventually(() => notified.length > 0, { timeoutMs: 5000 });
      assert.ok(notified.length > 0, 'the resume notifies the workers');
    } finally {
      await unlisten();
    }
    // No clock change: the hour-away retry and the first held delivery of each entity are due now.
    const sent = await deliverDue(deliverer, 10);
    assert.equal(sent.length, 3);
    const statuses = (await deliveriesOf(ctx.db, await webhookId('orders'))).map((row) => row.status);
    assert.deepEqual(statuses, ['succeeded', 'succeeded', 'succeeded', 'pending'], 'ORD-1\'s second event waits for its first');
    assert.equal((await deliverDue(deliverer, 10)).length, 1);
    const events = receiver.requests.slice(1).map((request) => JSON.parse(request.body.toString()) as { entity_id: string });
    assert.deepEqual(events.map((body) => body.entity_id).sort(), ['ORD-0', 'ORD-1', 'ORD-1', 'ORD-2']);
  });

  test('a disabled webhook (not paused) holds nothing; held deliveries older than the retention are pruned', async () => {
    await createHook('orders');
    await ctx.db.query(`UPDATE webhooks SET active = false, disabled_reason = 'The receiver answered 410 Gone.'`);
    await sendOrder('evt-1');
    assert.equal((await deliveriesOf(ctx.db, await webhookId('orders'))).length, 0);
    await call('PATCH', base, { active: true });
    await call('PATCH', base, { active: false });
    await sendOrder('evt-2');
    assert.equal((await call('GET', base)).json().held_count, 1);
    assert.equal((await pruneExpired(ctx.db, new Date(ctx.clock.now().getTime() + 29 * DAY), 30)).deliveries, 0);
    assert.equal((await pruneExpired(ctx.db, new Date(ctx.clock.now().getTime() + 31 * DAY), 30)).deliveries, 1);
    assert.equal((await call('GET', base)).json().held_count, 0);
  });

  test('replay by filter: dry run counts and changes nothing; sending is paced oldest first; statuses, topic, entity, event and window narrow it', async () => {
    await createHook('orders');
    for (let i = 0; i < 5; i++) await sendOrder(`evt-${i}`, i % 2 === 0 ? 'ORD-EVEN' : 'ORD-ODD');
    const rows = await deliveriesOf(ctx.db, await webhookId('orders'));
    await ctx.db.query(`UPDATE deliveries SET status = CASE WHEN id % 2 = 0 THEN 'failed' ELSE 'succeeded' END, completed_at = $1`, [ctx.clock.now()]);
    const statusOf = async () => (await deliveriesOf(ctx.db, await webhookId('orders'))).map((row) => row.status);
    const before = await statusOf();

    const dry = await call('POST', `${base}/replay`, { status: ['failed', 'succeeded'], dry_run: true });
    assert.equal(dry.statusCode, 200);
    assert.deepEqual(dry.json(), { replayed: 0, matched: 5, dry_run: true });
    assert.deepEqual(await statusOf(), before);
    assert.equal((await call('POST', `${base}/replay`, { status: ['succeeded', 'failed'], entity_id: 'ORD-ODD', dry_run: true })).json().matched, 2);
    assert.equal((await call('POST', `${base}/replay`, { status: ['succeeded', 'failed'], event_id: 'evt-3', dry_run: true })).json().matched, 1);
    assert.equal((await call('POST', `${base}/replay`, { status: ['succeeded', 'failed'], topic: 'order/update', dry_run: true })).json().matched, 0);
    const window = { since: new Date(rows[1]!.next_attempt_at).toISOString(), until: new Date(rows[3]!.next_attempt_at).toISOString() };
    assert.equal((await call('POST', `${base}/replay`, { status: ['succeeded', 'failed'], ...window, dry_run: true })).json().matched, 2);

    const sent = await call('POST', `${base}/replay`, { status: ['succeeded', 'failed'] });
    assert.equal(sent.statusCode, 202);
    assert.deepEqual(sent.json(), { replayed: 5, matched: 5, dry_run: false });
    const after = await deliveriesOf(ctx.db, await webhookId('orders'));
    assert.deepEqual(after.map((row) => row.status), Array(5).fill('pending'));
    // DELIVERY_REPLAY_RATE_PER_SECOND=10: 100 ms apart, in the order the events arrived.
    const offsets = after.map((row) => new Date(row.next_attempt_at).getTime() - ctx.clock.now().getTime());
    // Due times come from the database's clock: the first is its now, up to this test's run time.
    assertNear(after[0]!.next_attempt_at.toISOString(), await databaseNow(ctx.db, ctx.clock));
    assert.deepEqual(offsets.map((offset) => offset - offsets[0]!), [0, 100, 200, 300, 400]);
    assert.equal(after[0]!.message_id, rows[0]!.message_id, 'the webhook-id stays');
  });

  test('a replay larger than DELIVERY_REPLAY_MAX_DELIVERIES is refused and changes nothing', async () => {
    const small = await createTestApp({ DELIVERY_REPLAY_MAX_DELIVERIES: '2' });
    try {
      const smallWorld = await seedWorld(small);
      await small.app.inject({ method: 'POST', url: '/v1/MKT/webhooks', headers: smallWorld.headers.admin, payload: { code: 'orders', name: 'o', topic: 'order/create', callback_url: receiver.url() } });
      for (let i = 0; i < 3; i++) await postEvent(small, smallWorld.headers.admin, sampleEvent('order/create', smallWorld, { event_id: `e${i}` }));
      await small.db.query(`UPDATE deliveries SET status = 'failed'`);
      const refused = await small.app.inject({ method: 'POST', url: `${base}/replay`, headers: smallWorld.headers.admin, payload: {} });
      assert.equal(refused.statusCode, 400);
      assert.match(refused.json().detail, /matches 3 deliveries; one replay sends at most 2/);
      assert.equal((await small.db.query(`SELECT 1 FROM deliveries WHERE status = 'failed'`)).rowCount, 3);
    } finally {
      await small.close();
    }
  });
});

/** Times set by the database's clock (databaseNow, see database-clock.ts) equal the expected one up to the test's run time. */
function assertNear(actual: string, expectedMs: number): void {
  const distance = new Date(actual).getTime() - expectedMs;
  assert.ok(distance > -1000 && distance < 2000, `${actual} is ${distance} ms from the expected time`);
}
