import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { accessTokenFor, bearer, seedConnection, seedUser, type SeededUser } from '../testing/fixtures.js';
import { order } from '../testing/events.js';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

describe('portal: webhook filters', () => {
  let ctx: TestContext;
  let seller: SeededUser;
  const host = 'plaza.test';
  const origin = `http://${host}`;

  before(async () => {
    ctx = await createTestApp({ ACCESS_TOKEN_TTL_SECONDS: '86400' });
    await seedConnection(ctx.db, 1, 'MKT');
    seller = await seedUser(ctx.db, { username: 'filter-seller', password: 'seller-pass-1', sellerId: 1 });
  });
  after(() => ctx.close());

  const signIn = async () => {
    const response = await ctx.app.inject({ method: 'POST', url: '/portal/login', headers: { ...FORM, host, origin }, payload: new URLSearchParams({ username: 'filter-seller', password: 'seller-pass-1' }).toString() });
    assert.equal(response.statusCode, 303, response.body);
    return String(response.headers['set-cookie']).split(';')[0]!;
  };
  const get = (url: string, cookie: string) => ctx.app.inject({ method: 'GET', url, headers: { host, cookie } });

  test('the form takes, shows and checks the filter; the detail page tests a filter on the latest notification', async () => {
    const cookie = await signIn();
    const csrf = /name="_csrf" value="([^"]+)"/.exec((await get('/portal/MKT/webhooks/new', cookie)).body)![1]!;
    const post = (url: string, fields: Record<string, string>) =>
      ctx.app.inject({ method: 'POST', url, headers: { ...FORM, host, cookie, origin }, payload: new URLSearchParams({ _csrf: csrf, ...fields }).toString() });
    const form = { code: 'filtered', name: 'Filtered', topic: 'order/create', callback_url: 'https://r.example.com/h' };

    const notJson = await post('/portal/MKT/webhooks/new', { ...form, filter: '{status: APRO}' });
    assert.equal(notJson.statusCode, 400);
    assert.match(notJson.body, /must be JSON/);
    const badOperator = await post('/portal/MKT/webhooks/new', { ...form, filter: '{"payload.order.status": {"$regex": "A"}}' });
    assert.equal(badOperator.statusCode, 400);
    assert.match(badOperator.body, /Filter: at payload\.order\.status\.\$regex, unknown operator \$regex/);

    const created = await post('/portal/MKT/webhooks/new', { ...form, filter: '{"payload.order.status": "APRO"}' });
    assert.equal(created.statusCode, 201, created.body);
    const detail = await get('/portal/MKT/webhooks/filtered', cookie);
    assert.match(detail.body, /&quot;payload\.order\.status&quot;: &quot;APRO&quot;/);
    const edit = await get('/portal/MKT/webhooks/filtered/edit', cookie);
    assert.match(edit.body, /<textarea id="f-filter" name="filter"[^>]*>\{\n {2}&quot;payload\.order\.status&quot;: &quot;APRO&quot;\n\}<\/textarea>/);

    const noneYet = await post('/portal/MKT/webhooks/filtered/filter-test', { filter: '{"payload.order.status": "APRO"}' });
    assert.equal(noneYet.statusCode, 200);
    assert.match(noneYet.body, /no notification yet/);

    const event = { event_id: 'portal-f1', topic: 'order/create', seller_id: 1, entity_id: 'ORD-9', order: order('ORD-9', { status: 'APRO' }), author: 'system' };
    const accepted = await ctx.app.inject({ method: 'POST', url: '/v1/MKT/events', headers: { ...bearer(await accessTokenFor(ctx, seller)), host }, payload: event });
    assert.deepEqual(accepted.json(), { event_id: 'portal-f1', deliveries: 1 });

    const yes = await post('/portal/MKT/webhooks/filtered/filter-test', { filter: '{"payload.order.status": "APRO"}' });
    assert.match(yes.body, /The filter matches the latest notification \(event portal-f1, order\/MKT\/create\)/);
    const no = await post('/portal/MKT/webhooks/filtered/filter-test', { filter: '{"payload.order.status": {"$ne": "APRO"}}' });
    assert.match(no.body, /The filter does not match the latest notification/);
    // The draft stays in the box.
    assert.match(no.body, /&quot;\$ne&quot;/);
    const invalid = await post('/portal/MKT/webhooks/filtered/filter-test', { filter: '{"$or": []}' });
    assert.equal(invalid.statusCode, 400);
    assert.match(invalid.body, /\$or: must be a non-empty array of filters/);

    // Emptied in the form: no filter.
    const saved = await post('/portal/MKT/webhooks/filtered/edit', { name: 'Filtered', callback_url: 'https://r.example.com/h', seller_id: '1', headers: '', filter: '' });
    assert.equal(saved.statusCode, 303, saved.body);
    assert.match((await get('/portal/MKT/webhooks/filtered', cookie)).body, /none: every notification of the topic/);
  });
});
