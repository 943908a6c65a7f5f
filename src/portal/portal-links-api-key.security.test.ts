import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { accessTokenFor, bearer, seedConnection, seedUser, type SeededUser } from '../testing/fixtures.js';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const host = 'plaza.test';
const origin = `http://${host}`;

/**
 * Portal links made with an API key (issue 34): within what the key may do. A seller's key makes
 * none (403), another marketplace's key is 404, and the link's session acts as the key: it sees
 * what the key sees through the API, in the link's scope, and ends when the key is revoked or expires.
 */
describe('portal links made with an API key', () => {
  let ctx: TestContext;
  let admin: SeededUser;
  let seller: SeededUser;
  const keys: Record<string, { id: number; key: string }> = {};

  const asAdmin = async () => bearer(await accessTokenFor(ctx, admin));
  const makeKey = async (name: string, body: object) => {
    const response = await ctx.app.inject({ method: 'POST', url: '/api/v2/admin/api-keys', headers: await asAdmin(), payload: { name, ...body } });
    assert.equal(response.statusCode, 201, response.body);
    return response.json() as { id: number; key: string };
  };
  const link = (key: string, mkt: string, body: object = { seller_id: 1 }) =>
    ctx.app.inject({ method: 'POST', url: `/v1/${mkt}/portal-links`, headers: { ...bearer(key), host }, payload: body });
  const open = async (url: string) => {
    const token = url.split('/').at(-1)!;
    return ctx.app.inject({ method: 'POST', url: '/portal/link', headers: { ...FORM, host, origin }, payload: `token=${token}` });
  };
  const openSession = async (key: string, mkt = 'MKT', body: object = { seller_id: 1 }) => {
    const made = await link(key, mkt, body);
    assert.equal(made.statusCode, 201, made.body);
    const opened = await open((made.json() as { url: string }).url);
    assert.equal(opened.statusCode, 303, opened.body);
    return String(opened.headers['set-cookie']).split(';')[0]!;
  };
  const get = (url: string, cookie: string) => ctx.app.inject({ method: 'GET', url, headers: { host, cookie } });

  before(async () => {
    ctx = await createTestApp({ ACCESS_TOKEN_TTL_SECONDS: '86400' });
    await seedConnection(ctx.db, 1, 'MKT');
    await seedConnection(ctx.db, 1, 'OTHER');
    admin = await seedUser(ctx.db, { username: 'lk-admin', role: 'admin' });
    seller = await seedUser(ctx.db, { username: 'lk-seller', sellerId: 1 });
    keys.mkt = await makeKey('mkt key', { role: 'marketplace', marketplace_code: 'MKT' });
    keys.other = await makeKey('other key', { role: 'marketplace', marketplace_code: 'OTHER' });
    keys.seller = await makeKey('seller key', { role: 'seller', seller_id: 1 });
    keys.admin = await makeKey('admin key', { role: 'admin' });
    // The marketplace's webhook for seller 1 (made with the key), and seller 1's own webhook.
    const hook = await ctx.app.inject({ method: 'POST', url: '/v1/MKT/webhooks', headers: bearer(keys.mkt!.key), payload: { code: 'mkt-for-1', name: 'Mkt for 1', topic: 'order/create', callback_url: 'https://erp.example/a', seller_id: '1' } });
    assert.equal(hook.statusCode, 201, hook.body);
    const own = await ctx.app.inject({ method: 'POST', url: '/v1/MKT/webhooks', headers: bearer(await accessTokenFor(ctx, seller)), payload: { code: 'own', name: 'Own', topic: 'order/create', callback_url: 'https://erp.example/b' } });
    assert.equal(own.statusCode, 201, own.body);
  });
  after(() => ctx.close());

  test('a seller\'s key makes no link (403); a marketplace key makes none for another marketplace (404, as its other calls there)', async () => {
    assert.equal((await link(keys.seller!.key, 'MKT')).statusCode, 403);
    const elsewhere = await link(keys.mkt!.key, 'OTHER');
    assert.equal(elsewhere.statusCode, 404, elsewhere.body);
    assert.equal((await ctx.app.inject({ url: '/v1/OTHER/webhooks', headers: bearer(keys.mkt!.key) })).statusCode, 404, 'the same answer as its API calls there');
    assert.equal((await link(keys.other!.key, 'MKT')).statusCode, 404);
    const { rows } = await ctx.db.query(`SELECT 1 FROM portal_links`);
    assert.equal(rows.length, 0, 'no link was stored');
  });

  test('a marketplace key\'s link acts as the key: what the key sees through the API, in the scope; changes are the key\'s', async () => {
    const cookie = await openSession(keys.mkt!.key);
    const list = await get('/portal/MKT/webhooks', cookie);
    assert.equal(list.statusCode, 200);
    assert.match(list.body, /href="\/portal\/MKT\/webhooks\/mkt-for-1"/);
    // The seller's own webhook: read-only in the list, its page 404 as the key's API call is.
    assert.doesNotMatch(list.body, /href="\/portal\/MKT\/webhooks\/own"/);
    assert.equal((await ctx.app.inject({ url: '/v1/MKT/webhooks/own', headers: bearer(keys.mkt!.key) })).statusCode, 404);
    assert.equal((await get('/portal/MKT/webhooks/own', cookie)).statusCode, 404);
    // Never the seller's other marketplace.
    assert.equal((await get('/portal/OTHER/webhooks', cookie)).statusCode, 404);
    assert.doesNotMatch((await get('/portal/overview', cookie)).body, /OTHER/);
    // No account pages: a key has none.
    assert.equal((await get('/portal/account', cookie)).statusCode, 403);
    // A change in the session is recorded as the key's, through its link.
    const csrf = /name="_csrf" value="([^"]+)"/.exec(list.body)![1]!;
    const paused = await ctx.app.inject({ method: 'POST', url: '/portal/MKT/webhooks/mkt-for-1/pause', headers: { ...FORM, host, origin, cookie }, payload: `_csrf=${csrf}` });
    assert.equal(paused.statusCode, 303, paused.body);
    const { rows } = await ctx.db.query<{ actor_kind: string; actor_api_key_id: number | null; actor_user_id: number | null; actor_portal_link_id: string | null; actor_name: string }>(
      `SELECT actor_kind, actor_api_key_id, actor_user_id, actor_portal_link_id, actor_name FROM webhook_history WHERE action = 'pause'`,
    );
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.actor_kind, 'portal_link');
    assert.equal(rows[0]!.actor_api_key_id, keys.mkt!.id);
    assert.equal(rows[0]!.actor_user_id, null);
    assert.notEqual(rows[0]!.actor_portal_link_id, null);
    assert.equal(rows[0]!.actor_name, 'mkt key');
  });

  test('an admin key\'s link is confined to its marketplace and seller', async () => {
    const cookie = await openSession(keys.admin!.key);
    const list = (await get('/portal/MKT/webhooks', cookie)).body;
    assert.match(list, /href="\/portal\/MKT\/webhooks\/own"/);
    assert.match(list, /href="\/portal\/MKT\/webhooks\/mkt-for-1"/);
    assert.equal((await get('/portal/OTHER/webhooks', cookie)).statusCode, 404);
  });

  test('revoking the key ends its links\' sessions and refuses its unused links; an expired key too', async () => {
    const key = await makeKey('short', { role: 'marketplace', marketplace_code: 'MKT', expires_at: new Date(ctx.clock.now().getTime() + 3_600_000).toISOString() });
    const cookie = await openSession(key.key);
    const unused = (await link(key.key, 'MKT')).json() as { url: string };
    assert.equal((await get('/portal/MKT/webhooks', cookie)).statusCode, 200);
    const revoked = await ctx.app.inject({ method: 'DELETE', url: `/api/v2/admin/api-keys/${key.id}`, headers: await asAdmin() });
    assert.equal(revoked.statusCode, 204, revoked.body);
    const after = await get('/portal/MKT/webhooks', cookie);
    assert.equal(after.statusCode, 303);
    assert.equal(after.headers.location, '/portal/login');
    assert.equal((await open(unused.url)).statusCode, 410);

    const expiring = await makeKey('expiring', { role: 'marketplace', marketplace_code: 'MKT', expires_at: new Date(ctx.clock.now().getTime() + 60_000).toISOString() });
    const session = await openSession(expiring.key);
    const later = (await link(expiring.key, 'MKT')).json() as { url: string };
    assert.equal((await get('/portal/MKT/webhooks', session)).statusCode, 200);
    ctx.clock.advanceSeconds(61);
    assert.equal((await get('/portal/MKT/webhooks', session)).headers.location, '/portal/login');
    assert.equal((await open(later.url)).statusCode, 410);
  });
});
