import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { deliveriesOf, insertWebhook, order, postEvent, sampleEvent, seedWorld, type World } from '../../events/test-support.js';
import { encodeCursor } from '../../http/cursor.js';
import { seedUser } from '../../testing/fixtures.js';
import { createTestApp, type TestContext } from '../../testing/test-app.js';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

describe('delivery history: the one cursor', () => {
  let ctx: TestContext;
  let world: World;
  let hook: { id: number; code: string };
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
    // Seller 1's own webhook: the API (as seller 1) and the portal (its user) see it.
    hook = await insertWebhook(ctx.db, { tenantKind: 'seller', tenantId: '1', code: 'orders', topic: 'order/create' });
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
