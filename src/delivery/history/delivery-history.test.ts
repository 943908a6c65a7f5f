import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { deliveriesOf, insertWebhook, order, postEvent, sampleEvent, seedWorld, type World } from '../../testing/events.js';
import { encodeCursor } from '../../http/cursor.js';
import { seedUser } from '../../testing/fixtures.js';
import { createTestApp, type TestContext } from '../../testing/test-app.js';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

describe('delivery history: per-entity waiting (blocked_by) and the one cursor', () => {
  let ctx: TestContext;
  let world: World;
  let hook: { id: number; code: string };
  let otherHook: { id: number; code: string };
  let portalCookie: string;
  const host = 'plaza.test';

  before(async () => {
    ctx = await createTestApp({ ACCESS_TOKEN_TTL_SECONDS: '86400' });
    world = await seedWorld(ctx);
    await seedUser(ctx.db, { username: 'history-seller', password: 'history-pass-1', sellerId: 1 });
    const login = await ctx.app.inject({
      method: 'POST', url: '/portal/login', headers: { ...FORM, host, origin: `http://${host}` }, payload: 'username=history-seller&password=history-pass-1',
    });
    assert.equal(login.statusCode, 303, login.body);
    portalCookie = String(login.headers['set-cookie']).split(';')[0]!;
  });
  after(() => ctx.close());
  beforeEach(async () => {
    await ctx.db.exec(`DELETE FROM deliveries; DELETE FROM events; DELETE FROM webhooks;`);
    // Seller 1's own webhooks: the API (as seller 1) and the portal (its user) see them.
    hook = await insertWebhook(ctx.db, { tenantKind: 'seller', tenantId: '1', code: 'orders', topic: 'order/create' });
    otherHook = await insertWebhook(ctx.db, { tenantKind: 'seller', tenantId: '1', code: 'orders_too', topic: 'order/create' });
  });

  const base = '/v1/MKT/webhooks/orders';
  const get = (url: string) => ctx.app.inject({ method: 'GET', url, headers: world.headers.seller1 });
  const portal = (url: string) => ctx.app.inject({ method: 'GET', url, headers: { host, cookie: portalCookie } });
  /** One order event per entity given, in that order; the hook's delivery ids, oldest first. */
  const sendOrders = async (...entities: string[]) => {
    for (const [i, entity] of entities.entries()) {
      const response = await postEvent(ctx, world.headers.seller1, sampleEvent('order/create', world, { event_id: `evt-${i}`, entity_id: entity, order: order(entity) }));
      assert.equal(response.statusCode, 202, response.body);
    }
    return (await deliveriesOf(ctx.db, hook.id)).map((row) => Number(row.id));
  };
  // What the worker does to a delivery (queue/complete.ts): each status change moves the row between partitions.
  const setStatus = (id: number, status: 'delivering' | 'succeeded' | 'failed' | 'held') =>
    ctx.db.query(`UPDATE deliveries SET status = $2, completed_at = CASE WHEN $2 IN ('succeeded', 'failed') THEN now() END WHERE id = $1`, [id, status]);
  const blockedInList = async () => {
    const response = await get(`${base}/deliveries`);
    assert.equal(response.statusCode, 200, response.body);
    return Object.fromEntries(response.json().items.map((item: { id: number; blocked_by: number | null }) => [item.id, item.blocked_by]));
  };
  const blockedInGet = async (id: number) => (await get(`${base}/deliveries/${id}`)).json().blocked_by;

  test('blocked_by names the earliest unfinished earlier delivery of the same entity and webhook, and clears when it finishes', async () => {
    const [first, second, otherEntity, fourth] = (await sendOrders('ORD-1', 'ORD-1', 'ORD-2', 'ORD-1')) as [number, number, number, number];
    // Not the previous one (second): the earliest, which the claim sends first.
    assert.deepEqual(await blockedInList(), { [first]: null, [second]: first, [otherEntity]: null, [fourth]: first });
    assert.equal(await blockedInGet(fourth), first);
    assert.equal(await blockedInGet(first), null);
    const event = (await get('/v1/MKT/events/evt-3/deliveries')).json();
    assert.deepEqual(event.deliveries.map((delivery: { webhook_code: string; blocked_by: number | null }) => [delivery.webhook_code, delivery.blocked_by]), [
      ['orders', first],
      ['orders_too', (await deliveriesOf(ctx.db, otherHook.id))[0]!.id],
    ]);

    // Being sent is not waiting; the later ones still wait for it.
    await setStatus(first, 'delivering');
    assert.deepEqual(await blockedInList(), { [first]: null, [second]: first, [otherEntity]: null, [fourth]: first });

    // Finished: the next in line waits for none, and the one after it for that one. The other
    // webhook's deliveries of the same entity (ids in between) are not waited for.
    await setStatus(first, 'succeeded');
    assert.deepEqual(await blockedInList(), { [first]: null, [second]: null, [otherEntity]: null, [fourth]: second });
    assert.equal(await blockedInGet(fourth), second);

    await setStatus(second, 'failed');
    assert.deepEqual(await blockedInList(), { [first]: null, [second]: null, [otherEntity]: null, [fourth]: null });

    // A retried delivery goes before the later pending ones of its entity: they wait for it again.
    const retried = await ctx.app.inject({ method: 'POST', url: `${base}/deliveries/${first}/retry`, headers: world.headers.seller1 });
    assert.equal(retried.statusCode, 202, retried.body);
    assert.equal(retried.json().blocked_by, null);
    assert.deepEqual(await blockedInList(), { [first]: null, [second]: null, [otherEntity]: null, [fourth]: first });

    // One already being sent when the earlier one was retried is not waiting either.
    await setStatus(fourth, 'delivering');
    assert.equal(await blockedInGet(fourth), null);

    // Held (its webhook paused) is not in the queue: it waits for the resume, not for an entity.
    await setStatus(fourth, 'held');
    assert.equal(await blockedInGet(fourth), null);
  });

  test('the portal\'s log and delivery page say "waiting behind #N", linked, until that one finishes', async () => {
    const [first, second] = (await sendOrders('ORD-1', 'ORD-1')) as [number, number];
    const log = `/portal/MKT/webhooks/orders/deliveries`;
    const waiting = (id: number) => `<a href="/portal/MKT/webhooks/orders/deliveries/${id}">waiting behind #${id}</a>`;
    const page = await portal(log);
    assert.equal(page.statusCode, 200, page.body);
    assert.equal(page.body.split(waiting(first)).length, 2, 'once: the second delivery waits behind the first');
    assert.ok((await portal(`${log}/${second}`)).body.includes(waiting(first)));
    assert.ok(!(await portal(`${log}/${first}`)).body.includes('waiting behind'));

    await setStatus(first, 'succeeded');
    assert.ok(!(await portal(log)).body.includes('waiting behind'));
    assert.ok(!(await portal(`${log}/${second}`)).body.includes('waiting behind'));
  });

  test('a cursor the service did not issue is the catalogue\'s 400 in the API and in the portal; an older cursor still pages', async () => {
    const ids = await sendOrders('ORD-1', 'ORD-2', 'ORD-3');
    const forged = encodeCursor([1.5, 2]);
    for (const cursor of [forged, 'bm90LWEtY3Vyc29y']) {
      const api = await get(`${base}/deliveries?cursor=${cursor}`);
      assert.equal(api.statusCode, 400);
      assert.equal(api.json().code, 'validation_failed');
      assert.equal(api.json().detail, 'query.cursor: is not a cursor this service issued');
      assert.deepEqual(api.json().errors, [{ field: 'query.cursor', message: 'is not a cursor this service issued' }]);
      const page = await portal(`/portal/MKT/webhooks/orders/deliveries?status=pending&cursor=${cursor}`);
      assert.equal(page.statusCode, 400);
      assert.match(page.body, /role="alert"><p>query\.cursor: is not a cursor this service issued</);
      assert.match(page.body, /<option value="pending" selected>/, 'the filter form keeps its values');
    }
    // The form the log issued before the one codec, `<µs>.<id>`: the page after the newest delivery.
    const { rows } = await ctx.db.query<{ micros: string }>(`SELECT ((extract(epoch FROM created_at) * 1000000)::numeric)::bigint::text AS micros FROM deliveries WHERE id = $1`, [ids[2]]);
    const older = Buffer.from(`${rows[0]!.micros}.${ids[2]}`).toString('base64url');
    assert.deepEqual((await get(`${base}/deliveries?cursor=${older}`)).json().items.map((item: { id: number }) => item.id), [ids[1], ids[0]]);
  });
});
