import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { accessTokenFor, bearer, seedConnection, seedUser, type SeededUser } from '../testing/fixtures.js';
import { seedDelivery, seedWebhook } from '../testing/deliveries.js';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

describe('portal sessions, links and page security', () => {
  let ctx: TestContext;
  let seller: SeededUser;
  let marketplace: SeededUser;
  const host = 'plaza.test';
  const origin = `http://${host}`;

  before(async () => {
    ctx = await createTestApp({ ACCESS_TOKEN_TTL_SECONDS: '86400' });
    await seedConnection(ctx.db, 1, 'MKT');
    await seedConnection(ctx.db, 2, 'MKT');
    await seedConnection(ctx.db, 3, 'OTHER');
    seller = await seedUser(ctx.db, { username: 'sec-seller', password: 'seller-pass-1', sellerId: 1 });
    marketplace = await seedUser(ctx.db, { username: 'sec-mkt', role: 'marketplace', marketplaceCode: 'MKT', sellerId: 1 });
  });
  after(() => ctx.close());

  const signIn = async (username = 'sec-seller', password = 'seller-pass-1') => {
    const response = await ctx.app.inject({ method: 'POST', url: '/portal/login', headers: { ...FORM, host, origin }, payload: new URLSearchParams({ username, password }).toString() });
    assert.equal(response.statusCode, 303, response.body);
    const setCookie = String(response.headers['set-cookie']);
    assert.match(setCookie, /HttpOnly/);
    assert.match(setCookie, /SameSite=Strict/);
    assert.match(setCookie, /Path=\/portal/);
    return setCookie.split(';')[0]!;
  };
  const get = (url: string, cookie?: string) => ctx.app.inject({ method: 'GET', url, headers: { host, ...(cookie ? { cookie } : {}) } });
  const csrfOf = async (cookie: string) => /name="_csrf" value="([^"]+)"/.exec((await get('/portal/MKT/webhooks/new', cookie)).body)![1]!;
  const createLink = async (who: SeededUser, body: object, marketplaceCode = 'MKT') =>
    ctx.app.inject({ method: 'POST', url: `/v1/${marketplaceCode}/portal-links`, headers: { ...bearer(await accessTokenFor(ctx, who)), host }, payload: body });
  const useLink = (token: string) => ctx.app.inject({ method: 'POST', url: '/portal/link', headers: { ...FORM, host, origin }, payload: `token=${token}` });

  test('pages carry a strict CSP without upgrade-insecure-requests; /docs too', async () => {
    const page = await get('/portal/login');
    assert.equal(page.statusCode, 200);
    const csp = String(page.headers['content-security-policy']);
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'self'/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.doesNotMatch(csp, /upgrade-insecure-requests|unsafe-inline|unsafe-eval/);
    assert.equal(page.headers['cache-control'], 'no-store');
    assert.equal(page.headers['x-frame-options'], 'DENY');
    const docs = await get('/docs');
    assert.equal(docs.statusCode, 200);
    assert.match(String(docs.headers['content-security-policy']), /script-src 'self'/);
    assert.doesNotMatch(String(docs.headers['content-security-policy']), /upgrade-insecure-requests/);
  });

  test('without a session pages redirect to sign-in; the cookie is stored only as a hash', async () => {
    assert.equal((await get('/portal/MKT/webhooks')).headers.location, '/portal/login');
    assert.equal((await get('/portal/MKT/webhooks', 'plaza_portal=forged')).headers.location, '/portal/login');
    const cookie = await signIn();
    assert.equal((await get('/portal/MKT/webhooks', cookie)).statusCode, 200);
    const raw = cookie.split('=')[1]!;
    const { rows } = await ctx.db.query<{ id_hash: Buffer }>(`SELECT id_hash FROM portal_sessions`);
    assert.ok(rows.some((row) => Buffer.from(row.id_hash).equals(createHash('sha256').update(raw).digest())));
    assert.ok(!rows.some((row) => Buffer.from(row.id_hash).toString().includes(raw)));
  });

  test('a wrong password gets the login page with 401 and no cookie', async () => {
    const response = await ctx.app.inject({ method: 'POST', url: '/portal/login', headers: { ...FORM, host, origin }, payload: 'username=sec-seller&password=nope' });
    assert.equal(response.statusCode, 401);
    assert.equal(response.headers['set-cookie'], undefined);
    assert.match(response.body, /The user name or the password is wrong/);
  });

  test('writes need the session\'s CSRF token and a same-origin request', async () => {
    const cookie = await signIn();
    const csrf = await csrfOf(cookie);
    const create = (headers: Record<string, string>, token: string) =>
      ctx.app.inject({
        method: 'POST',
        url: '/portal/MKT/webhooks/new',
        headers: { ...FORM, host, cookie, ...headers },
        payload: new URLSearchParams({ _csrf: token, code: `c${Math.random().toString(36).slice(2, 8)}`, name: 'n', topic: 'order/create', callback_url: 'https://r.example.com/h' }).toString(),
      });
    assert.equal((await create({ origin }, 'wrong')).statusCode, 403);
    assert.equal((await create({ origin: 'https://evil.example' }, csrf)).statusCode, 403);
    assert.equal((await create({ origin: 'null' }, csrf)).statusCode, 403);
    assert.equal((await create({ 'sec-fetch-site': 'cross-site' }, csrf)).statusCode, 403);
    assert.equal((await create({ origin, 'sec-fetch-site': 'same-origin' }, csrf)).statusCode, 201);
  });

  // Issue 35: the token's field was declared in each form, required in some (a 400 without it) and optional in others.
  test('a write without its CSRF token is the same 403 in every form: the webhook forms, the second factor\'s, the passkeys\' (JSON)', async () => {
    const cookie = await signIn();
    const post = (url: string, type: 'form' | 'json', payload: string) =>
      ctx.app.inject({ method: 'POST', url, headers: { host, cookie, origin, 'content-type': type === 'form' ? FORM['content-type'] : 'application/json' }, payload });
    const answers = [
      await post('/portal/MKT/webhooks/new', 'form', 'code=c1&name=n'),
      await post('/portal/account/totp/disable', 'form', 'code=123456'),
      await post('/portal/account/passkeys/options', 'json', '{}'),
      await post('/portal/account/passkeys/delete', 'json', '{"id":"x"}'),
    ];
    assert.deepEqual(answers.map((answer) => answer.statusCode), [403, 403, 403, 403]);
    for (const answer of answers) assert.match(answer.body, /missing or wrong CSRF token/);
  });

  test('test notifications from the portal count towards the API\'s limit of the tenant (TENANT_TESTS_PER_MINUTE)', async () => {
    const cookie = await signIn();
    const csrf = await csrfOf(cookie);
    const post = (url: string, fields: Record<string, string>) =>
      ctx.app.inject({ method: 'POST', url, headers: { ...FORM, host, cookie, origin }, payload: new URLSearchParams({ _csrf: csrf, ...fields }).toString() });
    // A header line named __proto__ is refused, as in the API (a plain object silently swallowed it).
    const refusedHeader = await post('/portal/MKT/webhooks/new', { code: 'tested', name: 'n', topic: 'order/create', callback_url: 'http://127.0.0.1:9/closed', headers: '__proto__: x\nX-A: b' });
    assert.equal(refusedHeader.statusCode, 400, refusedHeader.body);
    assert.match(refusedHeader.body, /a header cannot be named __proto__/);
    const created = await post('/portal/MKT/webhooks/new', { code: 'tested', name: 'n', topic: 'order/create', callback_url: 'http://127.0.0.1:9/closed' });
    assert.equal(created.statusCode, 201, created.body);
    const statuses: number[] = [];
    for (let i = 0; i <= ctx.config.TENANT_TESTS_PER_MINUTE; i++) statuses.push((await post('/portal/MKT/webhooks/tested/test', {})).statusCode);
    assert.deepEqual(statuses, [...Array(ctx.config.TENANT_TESTS_PER_MINUTE).fill(200), 429]);
    const refused = await post('/portal/MKT/webhooks/tested/test', {});
    assert.match(refused.body, /Too many test requests for this tenant/);
    assert.ok(Number(refused.headers['retry-after']) > 0);
    // The same tenant's budget as the API's.
    assert.equal((await ctx.app.inject({ method: 'POST', url: '/v1/MKT/webhooks/tested/test', headers: { ...bearer(await accessTokenFor(ctx, seller)), host } })).statusCode, 429);
  });

  test('retries and replays from the portal count towards the API\'s limits of the tenant; a held delivery offers no retry', async () => {
    const cookie = await signIn();
    const csrf = await csrfOf(cookie);
    const post = (url: string, fields: Record<string, string> = {}) =>
      ctx.app.inject({ method: 'POST', url, headers: { ...FORM, host, cookie, origin }, payload: new URLSearchParams({ _csrf: csrf, ...fields }).toString() });
    const api = async (url: string) => ctx.app.inject({ method: 'POST', url, headers: { ...bearer(await accessTokenFor(ctx, seller)), host }, payload: {} });
    const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: 'https://r.example.com/h', marketplaceCode: 'MKT', code: 'limited', tenantKind: 'seller', tenantId: '1' });
    const delivery = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
    const retry = `/portal/MKT/webhooks/limited/deliveries/${delivery.id}/retry`;

    const retries: number[] = [];
    for (let i = 0; i <= ctx.config.TENANT_RETRIES_PER_MINUTE; i++) retries.push((await post(retry)).statusCode);
    assert.deepEqual(retries, [...Array(ctx.config.TENANT_RETRIES_PER_MINUTE).fill(303), 429]);
    const refused = await post(retry);
    assert.match(refused.body, /Too many retry requests for this tenant/);
    assert.ok(Number(refused.headers['retry-after']) > 0);
    assert.equal((await api(`/v1/MKT/webhooks/limited/deliveries/${delivery.id}/retry`)).statusCode, 429);

    const replays: number[] = [];
    for (let i = 0; i <= ctx.config.TENANT_REPLAYS_PER_MINUTE; i++) replays.push((await post('/portal/MKT/webhooks/limited/replay', { status: 'failed', mode: i % 2 ? 'send' : 'count' })).statusCode);
    assert.equal(replays.at(-1), 429);
    assert.ok(replays.slice(0, -1).every((status) => status === 200 || status === 202), String(replays));
    assert.equal((await api('/v1/MKT/webhooks/limited/replay')).statusCode, 429);

    // A minute later (the budget refilled), held (its webhook paused): the page says why instead of a
    // button that could only fail, and a retry is refused with the API's reason.
    ctx.clock.advance(60_000);
    await ctx.db.query(`UPDATE deliveries SET status = 'held' WHERE id = $1`, [delivery.id]);
    const page = await get(`/portal/MKT/webhooks/limited/deliveries/${delivery.id}`, cookie);
    assert.doesNotMatch(page.body, /Retry now/);
    assert.match(page.body, /resuming the webhook sends it/);
    const held = await post(retry);
    assert.equal(held.statusCode, 409);
    assert.match(held.body, /held while its webhook is paused/);
  });

  test('an admin\'s list links only the webhooks an admin can open by code; a code two tenants share is shown, unlinked, with its owner', async () => {
    await seedUser(ctx.db, { username: 'sec-admin', password: 'admin-pass-1', role: 'admin' });
    for (const [tenantId, code] of [['1', 'shared'], ['2', 'shared'], ['2', 'alone']]) {
      await seedWebhook(ctx.db, ctx.keys, { callbackUrl: 'https://r.example.com/h', marketplaceCode: 'MKT', code, tenantKind: 'seller', tenantId });
    }
    const cookie = await signIn('sec-admin', 'admin-pass-1');
    const list = (await get('/portal/MKT/webhooks', cookie)).body;
    assert.match(list, /href="\/portal\/MKT\/webhooks\/alone"/);
    assert.doesNotMatch(list, /href="\/portal\/MKT\/webhooks\/shared"/);
    assert.match(list, /seller 1; other tenants use this code too/);
    assert.match(list, /seller 2; other tenants use this code too/);
    assert.equal((await get('/portal/MKT/webhooks/alone', cookie)).statusCode, 200);
    assert.equal((await get('/portal/MKT/webhooks/shared', cookie)).statusCode, 409);
  });

  test('revoke-all on the API ends the portal session too', async () => {
    const cookie = await signIn();
    const { rows } = await ctx.db.query<{ auth_session_id: string }>(`SELECT auth_session_id FROM portal_sessions WHERE auth_session_id IS NOT NULL LIMIT 1`);
    await ctx.db.query(`UPDATE sessions SET revoked_at = now() WHERE user_id = $1`, [seller.id]);
    assert.ok(rows[0]);
    assert.equal((await get('/portal/MKT/webhooks', cookie)).headers.location, '/portal/login');
  });

  test('portal links: marketplace or admin only, connected sellers only, one use, 15 minutes, scope limited', async () => {
    assert.equal((await createLink(seller, {})).statusCode, 403);
    assert.equal((await createLink(marketplace, {}, 'OTHER')).statusCode, 404);
    const notConnected = await createLink(marketplace, { seller_id: 3 });
    assert.equal(notConnected.statusCode, 400);
    assert.deepEqual(notConnected.json().errors.map((error: { field: string }) => error.field), ['body.seller_id']);
    assert.equal((await createLink(marketplace, { seller_id: 'x' })).statusCode, 400);
    // Ten digits as text, past the largest seller id: refused as input, not a database error.
    const tooLarge = await createLink(marketplace, { seller_id: '8320850370' });
    assert.equal(tooLarge.statusCode, 400, tooLarge.body);
    assert.deepEqual(tooLarge.json().errors.map((error: { field: string }) => error.field), ['body.seller_id']);

    const created = await createLink(marketplace, { seller_id: 2 });
    assert.equal(created.statusCode, 201, created.body);
    const link = created.json();
    assert.equal(link.seller_id, 2);
    assert.equal(new Date(link.expires_at).getTime() - ctx.clock.now().getTime(), 900_000);
    const token = String(link.url).split('/portal/link/')[1]!;
    assert.match(link.url, new RegExp(`^${origin}/portal/link/`));
    assert.equal((await ctx.db.query(`SELECT 1 FROM portal_links WHERE token_hash::text LIKE '%' || $1 || '%'`, [token])).rowCount, 0, 'only a hash is stored');

    // GET only shows a button: a link preview does not use the link up.
    assert.equal((await get(`/portal/link/${token}`)).statusCode, 200);
    const [first, second] = await Promise.all([useLink(token), useLink(token)]);
    assert.deepEqual([first.statusCode, second.statusCode].sort(), [303, 410], 'exactly one of two concurrent uses wins');
    const winner = first.statusCode === 303 ? first : second;
    assert.equal(winner.headers.location, '/portal/MKT/webhooks');
    const cookie = String(winner.headers['set-cookie']).split(';')[0]!;
    assert.equal((await get('/portal/OTHER/webhooks', cookie)).statusCode, 404, 'the link\'s marketplace only');
    assert.equal((await get('/portal/OTHER/events', cookie)).statusCode, 404);

    const expiring = String((await createLink(marketplace, {})).json().url).split('/portal/link/')[1]!;
    ctx.clock.advance(15 * 60_000 + 1000);
    assert.equal((await useLink(expiring)).statusCode, 410);
  });

  test('a marketplace link manages the marketplace\'s own webhooks, not a seller\'s', async () => {
    const sellerToken = bearer(await accessTokenFor(ctx, seller));
    assert.equal((await ctx.app.inject({ method: 'POST', url: '/v1/MKT/webhooks', headers: sellerToken, payload: { code: 'seller-one', name: 'Seller one', topic: 'order/create', callback_url: 'https://r.example.com/s' } })).statusCode, 201);
    const mktToken = bearer(await accessTokenFor(ctx, marketplace));
    assert.equal((await ctx.app.inject({ method: 'POST', url: '/v1/MKT/webhooks', headers: mktToken, payload: { code: 'mkt-own', name: 'Marketplace own', topic: 'order/create', callback_url: 'https://r.example.com/m' } })).statusCode, 201);
    const token = String((await createLink(marketplace, {})).json().url).split('/portal/link/')[1]!;
    const cookie = String((await useLink(token)).headers['set-cookie']).split(';')[0]!;
    const list = await get('/portal/MKT/webhooks', cookie);
    assert.match(list.body, /Marketplace own/);
    assert.doesNotMatch(list.body, /Seller one/);
    assert.equal((await get('/portal/MKT/webhooks/seller-one', cookie)).statusCode, 404);
  });
  test('a deactivation ends link sessions for good, and unused links: the marketplace\'s, the seller\'s, the link maker\'s', async () => {
    const admin = bearer(await accessTokenFor(ctx, await seedUser(ctx.db, { role: 'admin', sellerId: 1 })));
    const patch = (url: string, active: boolean) => ctx.app.inject({ method: 'PATCH', url, headers: { ...admin, host }, payload: { active } });
    const newLink = async () => String((await createLink(marketplace, { seller_id: 2 })).json().url).split('/portal/link/')[1]!;
    const live = async (cookie: string) => (await get('/portal/MKT/webhooks', cookie)).statusCode === 200;
    for (const target of ['/api/v2/admin/marketplaces/MKT', '/api/v2/admin/sellers/2', `/api/v2/admin/users/${marketplace.id}`]) {
      // A seller's link made by the marketplace user: the session acts for seller 2 inside MKT.
      const used = await useLink(await newLink());
      assert.equal(used.statusCode, 303, used.body);
      const cookie = String(used.headers['set-cookie']).split(';')[0]!;
      const unused = await newLink();
      assert.ok(await live(cookie), target);
      assert.equal((await patch(target, false)).statusCode, 200, target);
      assert.ok(!(await live(cookie)), `${target} off: the session ends`);
      assert.equal((await patch(target, true)).statusCode, 200, target);
      assert.ok(!(await live(cookie)), `${target} on again: the session stays ended`);
      assert.equal((await useLink(unused)).statusCode, 410, `${target}: the unused link is gone`);
    }
  });
});
