import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { deliveriesOf, insertWebhook, order, postEvent, sampleEvent, seedWorld, type World } from '../testing/events.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { DELIVERY_CHANNEL } from '../webhooks/deliveries.repository.js';
import { databaseNow } from '../testing/deliveries.js';

const MINUTE = 60_000;
const DAY = 86_400_000;

describe('seeing and steering deliveries', () => {
  let ctx: TestContext;
  let world: World;
  let hook: { id: number; code: string };
  let sellerHook: { id: number; code: string };
  let otherHook: { id: number; code: string };

  before(async () => {
    // The clock moves by minutes and days here; the seeded tokens must outlive it.
    ctx = await createTestApp({ ACCESS_TOKEN_TTL_SECONDS: String(365 * 86_400) });
    world = await seedWorld(ctx);
  });
  after(() => ctx.close());
  beforeEach(async () => {
    await ctx.db.exec(`DELETE FROM deliveries; DELETE FROM events; DELETE FROM webhooks;`);
    hook = await insertWebhook(ctx.db, { code: 'orders', topic: 'order/create' });
    otherHook = await insertWebhook(ctx.db, { code: 'orders_too', topic: 'order/create' });
    sellerHook = await insertWebhook(ctx.db, { tenantKind: 'seller', tenantId: '1', code: 'mine', topic: 'publication/update' });
  });

  /** Sends `n` order events a minute apart; returns hook's delivery ids, oldest first. */
  const sendOrders = async (n: number) => {
    for (let i = 0; i < n; i++) {
      ctx.clock.advance(MINUTE);
      const response = await postEvent(ctx, world.headers.admin, sampleEvent('order/create', world, { event_id: `evt-${i}` }));
      assert.equal(response.statusCode, 202);
    }
    return (await deliveriesOf(ctx.db, hook.id)).map((row) => Number(row.id));
  };
  const setStatus = (id: number, status: string) => ctx.db.query(`UPDATE deliveries SET status = $2 WHERE id = $1`, [id, status]);
  const get = (url: string, headers = world.headers.admin) => ctx.app.inject({ method: 'GET', url, headers });
  const post = (url: string, payload?: object, headers = world.headers.admin) =>
    ctx.app.inject({ method: 'POST', url, headers, ...(payload ? { payload } : {}) });
  const base = '/v1/MKT/webhooks/orders';
  // Due times are the database's now (database-clock.ts), equal up to the test's run time.
  const assertNearNow = async (time: string | Date) => {
    const distance = new Date(time).getTime() - (await databaseNow(ctx.db, ctx.clock));
    assert.ok(distance > -1000 && distance < 2000, `due ${distance} ms from the database's now`);
  };

  test('the list shows each delivery newest first, with the documented fields', async () => {
    const ids = await sendOrders(3);
    await ctx.db.query(`UPDATE deliveries SET status = 'failed', attempts = 11, last_status_code = 500, last_error = 'HTTP 500', completed_at = $2 WHERE id = $1`, [ids[0], ctx.clock.now()]);
    const response = await get(`${base}/deliveries`);
    assert.equal(response.statusCode, 200);
    const { items, next_cursor } = response.json();
    assert.equal(next_cursor, null);
    assert.equal(response.headers.link, undefined);
    assert.deepEqual(items.map((item: { id: number }) => item.id), [...ids].reverse());
    assert.deepEqual(items[0], {
      id: ids[2],
      event_id: 'evt-2',
      topic_path: 'order/MKT/create',
      status: 'pending',
      attempts: 0,
      // Due times are the database's now (assertNearNow below).
      next_attempt_at: items[0].next_attempt_at,
      last_status_code: null,
      last_error: null,
      created_at: ctx.clock.now().toISOString(),
      completed_at: null,
      // The same order as ids[1], still pending: per-entity order makes this one wait for it.
      blocked_by: ids[1],
      // The third notification of this order for this webhook.
      sequence: 3,
      superseded_by: null,
    });
    await assertNearNow(items[0].next_attempt_at);
    assert.equal(items[2].status, 'failed');
    assert.equal(items[2].next_attempt_at, null);
    assert.equal(items[2].last_status_code, 500);
    assert.equal(items[2].last_error, 'HTTP 500');
    assert.equal(items[2].completed_at, ctx.clock.now().toISOString());
  });

  test('pages follow next_cursor and Link rel="next" until the end, keeping the filters', async () => {
    const ids = await sendOrders(5);
    const seen: number[] = [];
    let url = `${base}/deliveries?limit=2&status=pending`;
    for (let page = 0; page < 3; page++) {
      const response = await get(url);
      assert.equal(response.statusCode, 200);
      const body = response.json();
      seen.push(...body.items.map((item: { id: number }) => item.id));
      if (page < 2) {
        const link = String(response.headers.link);
        const match = /^<([^>]+)>; rel="next"$/.exec(link);
        assert.ok(match, link);
        assert.ok(match[1]!.includes(`cursor=${body.next_cursor}`));
        assert.ok(match[1]!.includes('status=pending') && match[1]!.includes('limit=2'));
        url = match[1]!;
      } else {
        assert.equal(body.next_cursor, null);
      }
    }
    assert.deepEqual(seen, [...ids].reverse());
  });

  test('deliveries of one instant, and of sub-millisecond instants, page without skips or repeats', async () => {
    const ids = await sendOrders(6);
    // Two share an instant; others differ by microseconds only (what the database keeps, a JS Date cannot).
    const stamps = ['2026-03-01T10:00:00.000100Z', '2026-03-01T10:00:00.000100Z', '2026-03-01T10:00:00.000200Z', '2026-03-01T10:00:00.000999Z', '2026-03-01T10:00:00.001Z', '2026-03-01T10:00:00.001Z'];
    for (const [i, id] of ids.entries()) await ctx.db.query(`UPDATE deliveries SET created_at = $2::timestamptz WHERE id = $1`, [id, stamps[i]]);
    const seen: number[] = [];
    let cursor: string | null = '';
    while (cursor !== null) {
      const response = await get(`${base}/deliveries?limit=1${cursor ? `&cursor=${cursor}` : ''}`);
      const body: { items: { id: number }[]; next_cursor: string | null } = response.json();
      seen.push(...body.items.map((item) => item.id));
      cursor = body.next_cursor;
      assert.ok(seen.length <= ids.length, 'pagination does not end');
    }
    assert.deepEqual(seen, [...ids].reverse());
  });

  test('filters: status, since (inclusive) and until (exclusive)', async () => {
    const start = ctx.clock.now().getTime();
    const ids = await sendOrders(4); // created at start + 1, 2, 3, 4 minutes
    await setStatus(ids[1]!, 'succeeded');
    const list = async (query: string) => (await get(`${base}/deliveries?${query}`)).json().items.map((item: { id: number }) => item.id);
    assert.deepEqual(await list('status=succeeded'), [ids[1]]);
    assert.deepEqual(await list('status=pending'), [ids[3], ids[2], ids[0]]);
    const at = (minutes: number) => encodeURIComponent(new Date(start + minutes * MINUTE).toISOString());
    assert.deepEqual(await list(`since=${at(2)}`), [ids[3], ids[2], ids[1]]);
    assert.deepEqual(await list(`until=${at(3)}`), [ids[1], ids[0]]);
    assert.deepEqual(await list(`since=${at(2)}&until=${at(3)}&status=succeeded`), [ids[1]]);
  });

  test('bad list parameters are 400 with the field named', async () => {
    for (const [query, field] of [
      ['limit=101', 'query.limit'],
      ['limit=0', 'query.limit'],
      // Number() reads these as 16 and 100: one value, several spellings.
      ['limit=0x10', 'query.limit'],
      ['limit=1e2', 'query.limit'],
      ['limit=%2016', 'query.limit'],
      ['status=lost', 'query.status'],
      // Issue 10: nothing ever set `cancelled`, so it is no status any more (API, OpenAPI, docs).
      ['status=cancelled', 'query.status'],
      ['since=yesterday', 'query.since'],
      // RFC 3339 allows a leap second; JavaScript's Date does not read it (it was a 500).
      ['since=2016-12-31T23:59:60Z', 'query.since'],
      ['until=2016-12-31T19:59:60-04:00', 'query.until'],
      ['cursor=bm90LWEtY3Vyc29y', 'query.cursor'],
      ['entity_id=%00', 'query.entity_id'],
    ] as const) {
      const response = await get(`${base}/deliveries?${query}`);
      assert.equal(response.statusCode, 400, query);
      assert.ok(response.json().errors.some((error: { field: string }) => error.field === field), query);
    }
    const document = (await ctx.app.inject({ url: '/openapi.json' })).json() as { paths: Record<string, { get: { parameters: { name: string; schema: { enum?: string[]; anyOf?: { const?: string }[] } }[] } }> };
    const statusParameter = document.paths['/v1/{marketplace_code}/webhooks/{code}/deliveries']!.get.parameters.find((parameter) => parameter.name === 'status')!;
    const advertised = statusParameter.schema.enum ?? statusParameter.schema.anyOf!.map((option) => option.const);
    assert.deepEqual([...advertised].sort(), ['delivering', 'failed', 'held', 'pending', 'succeeded', 'superseded']);
    const oddId = await get(`${base}/deliveries/1.0`);
    assert.equal(oddId.statusCode, 400, oddId.body);
    assert.equal(oddId.json().errors[0].field, 'path.id');
    const replay = await post(`${base}/replay`, { entity_id: '\u0000', dry_run: true });
    assert.equal(replay.statusCode, 400, replay.body);
    assert.equal(replay.json().errors[0].field, 'body.entity_id');
  });

  test('an event whose strings hold a NUL or an unpaired surrogate is refused (400, field named): the delivery log stays readable', async () => {
    await sendOrders(1);
    // Written as JSON text: the escapes reach the server as a producer would send them.
    for (const [extra, field] of [
      ['{"note":"\\u0000"}', 'body.order.extra.note'],
      ['{"note":"a\\ud800"}', 'body.order.extra.note'],
      ['{"\\udc00":"x"}', 'body.order.extra'],
    ]) {
      const event = JSON.stringify(sampleEvent('order/create', world, { event_id: 'poison' })).replace('"reference_order"', `"extra":${extra},"reference_order"`);
      const response = await ctx.app.inject({ method: 'POST', url: '/v1/MKT/events', headers: { ...world.headers.admin, 'content-type': 'application/json' }, payload: event });
      assert.equal(response.statusCode, 400, `${extra}: ${response.body}`);
      assert.equal(response.json().errors[0].field, field, extra);
    }
    const nulKey = await postEvent(ctx, world.headers.admin, sampleEvent('order/create', world, { event_id: 'poison', entity_id: 'ORD\u0000' }));
    assert.equal(nulKey.statusCode, 400, nulKey.body);
    // A surrogate pair is text: accepted.
    assert.equal((await postEvent(ctx, world.headers.admin, sampleEvent('order/create', world, { event_id: 'emoji', order: { ...order('ORD-1'), note: '\ud83d\ude00' } }))).statusCode, 202);
    assert.equal((await get(`${base}/deliveries`)).statusCode, 200);
  });

  test('one delivery shows its attempts, oldest first, with the stored response prefix', async () => {
    const [id] = await sendOrders(1);
    const started = ctx.clock.now();
    await ctx.db.query(
      `INSERT INTO delivery_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error, response_body)
       VALUES ($1, 2, $3, 15, 200, NULL, 'ok'), ($1, 1, $2, 3000, NULL, 'connect ECONNREFUSED', NULL)`,
      [id, started, new Date(started.getTime() + 5000)],
    );
    await ctx.db.query(`UPDATE deliveries SET status = 'succeeded', attempts = 2, last_status_code = 200, completed_at = $2 WHERE id = $1`, [id, started]);
    const response = await get(`${base}/deliveries/${id}`);
    assert.equal(response.statusCode, 200);
    const body = response.json();
    assert.equal(body.id, id);
    assert.equal(body.status, 'succeeded');
    assert.equal(body.attempt_count, 2);
    assert.equal(body.topic_path, 'order/MKT/create');
    assert.deepEqual(body.attempts, [
      { attempt: 1, started_at: started.toISOString(), duration_ms: 3000, status_code: null, error: 'connect ECONNREFUSED', response_body: null, request_headers: null },
      { attempt: 2, started_at: new Date(started.getTime() + 5000).toISOString(), duration_ms: 15, status_code: 200, error: null, response_body: 'ok', request_headers: null },
    ]);
  });

  test('a delivery of another webhook, or none, is 404 on get and retry', async () => {
    await sendOrders(1);
    const [foreign] = await deliveriesOf(ctx.db, otherHook.id);
    for (const id of [Number(foreign!.id), 999_999]) {
      assert.equal((await get(`${base}/deliveries/${id}`)).statusCode, 404);
      assert.equal((await post(`${base}/deliveries/${id}/retry`)).statusCode, 404);
    }
    assert.equal((await get(`/v1/MKT/webhooks/nope/deliveries`)).statusCode, 404);
    assert.equal((await get(`/v1/NOPE/webhooks/orders/deliveries`)).statusCode, 404);
  });

  test('retry: a finished delivery is pending and due now, the workers are woken; a delivering one is 409', async () => {
    const [id] = await sendOrders(1);
    await ctx.db.query(`UPDATE deliveries SET status = 'failed', attempts = 11, completed_at = $2 WHERE id = $1`, [id, ctx.clock.now()]);
    ctx.clock.advance(DAY);
    let woke!: () => void;
    const woken = new Promise<void>((resolve) => (woke = resolve));
    const stop = await ctx.db.listen(DELIVERY_CHANNEL, () => woke());
    try {
      const response = await post(`${base}/deliveries/${id}/retry`);
      assert.equal(response.statusCode, 202);
      assert.equal(response.json().status, 'pending');
      await assertNearNow(response.json().next_attempt_at);
      assert.equal(response.json().completed_at, null);
      await woken;
    } finally {
      await stop();
    }
    const [row] = await deliveriesOf(ctx.db, hook.id);
    assert.equal(row!.status, 'pending');
    assert.equal(row!.attempts, 11);
    await assertNearNow(row!.next_attempt_at);

    for (const status of ['succeeded', 'failed', 'pending']) {
      await setStatus(id!, status);
      assert.equal((await post(`${base}/deliveries/${id}/retry`)).statusCode, 202, status);
    }
    await setStatus(id!, 'delivering');
    const busy = await post(`${base}/deliveries/${id}/retry`);
    assert.equal(busy.statusCode, 409);
    assert.equal(busy.json().code, 'conflict');
    assert.equal((await deliveriesOf(ctx.db, hook.id))[0]!.status, 'delivering');
  });

  test('replay requeues the failed deliveries since a time, at most 14 days back', async () => {
    const ids = await sendOrders(4);
    const since = new Date(ctx.clock.now().getTime() - 2 * MINUTE + 1); // after ids[1] was created
    for (const id of [ids[0]!, ids[2]!, ids[3]!]) await setStatus(id, 'failed');
    await setStatus(ids[1]!, 'succeeded');
    const [foreign] = await deliveriesOf(ctx.db, otherHook.id);
    await setStatus(Number(foreign!.id), 'failed');

    const response = await post(`${base}/replay`, { since: since.toISOString() });
    assert.equal(response.statusCode, 202);
    assert.deepEqual(response.json(), { replayed: 2, matched: 2, dry_run: false });
    const statuses = Object.fromEntries((await deliveriesOf(ctx.db, hook.id)).map((row) => [Number(row.id), row.status]));
    assert.deepEqual(statuses, { [ids[0]!]: 'failed', [ids[1]!]: 'succeeded', [ids[2]!]: 'pending', [ids[3]!]: 'pending' });
    assert.equal((await deliveriesOf(ctx.db, otherHook.id))[0]!.status, 'failed');

    const tooOld = new Date(ctx.clock.now().getTime() - 14 * DAY - 1000).toISOString();
    const refused = await post(`${base}/replay`, { since: tooOld });
    assert.equal(refused.statusCode, 400);
    assert.deepEqual(refused.json().errors.map((error: { field: string }) => error.field), ['body.since']);
    const limit = new Date(ctx.clock.now().getTime() - 14 * DAY).toISOString();
    assert.deepEqual((await post(`${base}/replay`, { since: limit })).json(), { replayed: 1, matched: 1, dry_run: false });
    for (const payload of [{ since: 'last week' }, { since: '2026-11-24T23:59:60Z', dry_run: true }, { until: '2026-11-24T23:59:60Z' }, { since: limit, extra: 1 }, { status: ['pending'] }, { status: [] }]) {
      assert.equal((await post(`${base}/replay`, payload)).statusCode, 400, JSON.stringify(payload));
    }
  });

  test('another tenant sees none of it: 404 on list, get, retry and replay; the owner sees its own', async () => {
    await postEvent(ctx, world.headers.seller1, sampleEvent('publication/update', world));
    const [delivery] = await deliveriesOf(ctx.db, sellerHook.id);
    const mine = '/v1/MKT/webhooks/mine';
    assert.equal((await get(`${mine}/deliveries`, world.headers.seller1)).json().items.length, 1);
    assert.equal((await get(`${mine}/deliveries/${delivery!.id}`, world.headers.seller1)).statusCode, 200);
    for (const headers of [world.headers.seller2, world.headers.marketplace]) {
      assert.equal((await get(`${mine}/deliveries`, headers)).statusCode, 404);
      assert.equal((await get(`${mine}/deliveries/${delivery!.id}`, headers)).statusCode, 404);
      assert.equal((await post(`${mine}/deliveries/${delivery!.id}/retry`, undefined, headers)).statusCode, 404);
      assert.equal((await post(`${mine}/replay`, { since: ctx.clock.now().toISOString() }, headers)).statusCode, 404);
    }
    // An admin webhook is not a seller's either.
    assert.equal((await get(`${base}/deliveries`, world.headers.seller1)).statusCode, 404);
    for (const response of [await get(`${mine}/deliveries`, {} as never), await post(`${mine}/replay`, { since: ctx.clock.now().toISOString() }, {} as never)]) {
      assert.equal(response.statusCode, 401);
    }
  });
});
