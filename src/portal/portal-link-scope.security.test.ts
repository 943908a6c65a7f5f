import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { accessTokenFor, bearer, seedConnection, seedUser, type SeededUser } from '../testing/fixtures.js';
import { seedDelivery, seedWebhook } from '../testing/deliveries.js';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const SELLER_CREDENTIAL = 'Bearer seller-erp-credential-3f9a';
const ATTACKER = 'https://attacker.example/steal';

/**
 * A portal session never grants more than the API grants the credential that made it: a
 * marketplace's link for seller 1 manages the marketplace's own webhooks for seller 1, and sees the
 * seller's own webhooks only as a read-only list with masked header values. Every form is posted
 * directly (valid CSRF token, same origin), not just looked for as a button.
 */
describe('portal link sessions act as the link\'s maker, confined to the link\'s scope', () => {
  let ctx: TestContext;
  let seller: SeededUser;
  let marketplace: SeededUser;
  let admin: SeededUser;
  let sellerDelivery: number;
  let marketplaceDelivery: number;
  const host = 'plaza.test';
  const origin = `http://${host}`;

  const api = async (who: SeededUser, method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) =>
    ctx.app.inject({ method, url, headers: { ...bearer(await accessTokenFor(ctx, who)), host }, ...(payload ? { payload } : {}) });
  const get = (url: string, cookie: string) => ctx.app.inject({ method: 'GET', url, headers: { host, cookie } });
  const cookieOf = (response: { headers: Record<string, unknown> }) => String(response.headers['set-cookie']).split(';')[0]!;
  const useLink = async (url: string) => {
    const used = await ctx.app.inject({ method: 'POST', url: '/portal/link', headers: { ...FORM, host, origin }, payload: `token=${url.split('/portal/link/')[1]}` });
    assert.equal(used.statusCode, 303, used.body);
    return cookieOf(used);
  };
  const linkSession = async (maker: SeededUser, body: object) => {
    const link = await api(maker, 'POST', '/v1/MKT/portal-links', body);
    assert.equal(link.statusCode, 201, link.body);
    return useLink(link.json().url);
  };
  const signIn = async (username: string, password: string) => {
    const response = await ctx.app.inject({ method: 'POST', url: '/portal/login', headers: { ...FORM, host, origin }, payload: new URLSearchParams({ username, password }).toString() });
    assert.equal(response.statusCode, 303, response.body);
    return cookieOf(response);
  };
  const csrfOf = async (cookie: string) => /name="_csrf" value="([^"]+)"/.exec((await get('/portal/MKT/webhooks/new', cookie)).body)![1]!;
  const poster = async (cookie: string) => {
    const csrf = await csrfOf(cookie);
    return (url: string, fields: Record<string, string> = {}) =>
      ctx.app.inject({ method: 'POST', url, headers: { ...FORM, host, cookie, origin }, payload: new URLSearchParams({ _csrf: csrf, ...fields }).toString() });
  };
  const webhookRow = async (code: string, tenantKind: string) =>
    (await ctx.db.query<{ callback_url: string; secret_encrypted: string; active: boolean; updated_at: Date; headers: object; headers_encrypted: string | null; seller_id: string }>(
      `SELECT callback_url, secret_encrypted, active, updated_at, headers, headers_encrypted, seller_id FROM webhooks WHERE marketplace_code = 'MKT' AND code = $1 AND tenant_kind = $2`,
      [code, tenantKind],
    )).rows[0]!;
  const deliveryRow = async (id: number) =>
    (await ctx.db.query(`SELECT * FROM deliveries WHERE id = $1`, [id])).rows[0];

  before(async () => {
    ctx = await createTestApp({ ACCESS_TOKEN_TTL_SECONDS: '86400' });
    await seedConnection(ctx.db, 1, 'MKT');
    await seedConnection(ctx.db, 2, 'MKT');
    seller = await seedUser(ctx.db, { username: 'scope-seller', password: 'seller-pass-1', sellerId: 1 });
    marketplace = await seedUser(ctx.db, { username: 'scope-mkt', password: 'mkt-pass-1', role: 'marketplace', marketplaceCode: 'MKT', sellerId: 2 });
    admin = await seedUser(ctx.db, { username: 'scope-admin', password: 'admin-pass-1', role: 'admin' });
    const create = async (who: SeededUser, body: Record<string, unknown>) => {
      const created = await api(who, 'POST', '/v1/MKT/webhooks', { topic: 'order/create', ...body });
      assert.equal(created.statusCode, 201, created.body);
    };
    // The seller's own webhook, with a credential of the seller's own systems in a header.
    await create(seller, { code: 'seller-own', name: 'Seller ERP', callback_url: 'https://erp.seller.example/hook', headers: { Authorization: SELLER_CREDENTIAL } });
    // The marketplace's webhooks: for seller 1 alone, for every seller, for seller 2.
    await create(marketplace, { code: 'mkt-for-s1', name: 'Marketplace for seller 1', callback_url: 'http://127.0.0.1:9/closed', seller_id: 1, headers: { 'X-Mkt': 'mkt-value-1' } });
    await create(marketplace, { code: 'mkt-all', name: 'Marketplace for all', callback_url: 'https://m.example/all', seller_id: '*' });
    await create(marketplace, { code: 'mkt-for-s2', name: 'Marketplace for seller 2', callback_url: 'https://m.example/s2', seller_id: 2 });
    const ids = await ctx.db.query<{ id: number; code: string }>(`SELECT id, code FROM webhooks WHERE code IN ('seller-own', 'mkt-for-s1')`);
    const idOf = (code: string) => Number(ids.rows.find((row) => row.code === code)!.id);
    sellerDelivery = (await seedDelivery(ctx.db, { id: idOf('seller-own'), code: 'seller-own', marketplaceCode: 'MKT', secret: '' }, { now: ctx.clock.now() })).id;
    marketplaceDelivery = (await seedDelivery(ctx.db, { id: idOf('mkt-for-s1'), code: 'mkt-for-s1', marketplaceCode: 'MKT', secret: '' }, { now: ctx.clock.now() })).id;
    // Failed: what a retry or a replay would send again.
    await ctx.db.query(`UPDATE deliveries SET status = 'failed', attempts = 1 WHERE id = ANY($1::bigint[])`, [[sellerDelivery, marketplaceDelivery]]);
  });
  after(() => ctx.close());

  test('the API: the marketplace gets 404 for the seller\'s own webhook (the rule the portal must hold)', async () => {
    assert.equal((await api(marketplace, 'GET', '/v1/MKT/webhooks/seller-own')).statusCode, 404);
    assert.equal((await api(marketplace, 'GET', '/v1/MKT/webhooks/mkt-for-s1')).statusCode, 200);
  });

  test('a marketplace\'s link for a seller lists the seller\'s own webhooks read-only, header values masked', async () => {
    const cookie = await linkSession(marketplace, { seller_id: 1 });
    const list = await get('/portal/MKT/webhooks', cookie);
    assert.equal(list.statusCode, 200);
    assert.match(list.body, /Seller ERP/);
    assert.match(list.body, /Authorization: ••••••/);
    assert.doesNotMatch(list.body, /seller-erp-credential/);
    assert.doesNotMatch(list.body, /erp\.seller\.example/);
    assert.doesNotMatch(list.body, /href="\/portal\/MKT\/webhooks\/seller-own/, 'no page to open');
    assert.match(list.body, /href="\/portal\/MKT\/webhooks\/mkt-for-s1"/);
    // The marketplace's webhooks not confined to seller 1 are outside the link's scope.
    assert.doesNotMatch(list.body, /Marketplace for all|Marketplace for seller 2/);
  });

  test('a marketplace\'s link for a seller opens none of the seller\'s own webhook\'s pages and changes nothing of it', async () => {
    const cookie = await linkSession(marketplace, { seller_id: 1 });
    const post = await poster(cookie);
    const before = await webhookRow('seller-own', 'seller');
    const deliveryBefore = await deliveryRow(sellerDelivery);
    const one = '/portal/MKT/webhooks/seller-own';
    for (const path of ['', '/edit', '/deliveries', `/deliveries/${sellerDelivery}`, '/replay']) {
      const page = await get(`${one}${path}`, cookie);
      assert.equal(page.statusCode, 404, `GET ${path}`);
      assert.doesNotMatch(page.body, /seller-erp-credential/);
    }
    const writes: [string, Record<string, string>][] = [
      ['/edit', { name: 'Seller ERP', callback_url: ATTACKER, headers: `Authorization: ${SELLER_CREDENTIAL}` }],
      ['/pause', {}],
      ['/resume', {}],
      ['/rotate-secret', {}],
      ['/test', {}],
      ['/delete', {}],
      [`/deliveries/${sellerDelivery}/retry`, {}],
      ['/replay', { mode: 'count', status: 'failed' }],
      ['/replay', { mode: 'send', status: 'failed' }],
    ];
    for (const [path, fields] of writes) {
      const response = await post(`${one}${path}`, fields);
      assert.equal(response.statusCode, 404, `POST ${path}: ${response.body.slice(0, 200)}`);
      assert.doesNotMatch(response.body, /seller-erp-credential|whsec_/, `POST ${path}`);
    }
    assert.deepEqual(await webhookRow('seller-own', 'seller'), before, 'callback, secret, state and headers untouched');
    assert.deepEqual(await deliveryRow(sellerDelivery), deliveryBefore, 'no retry or replay');
  });

  test('a marketplace\'s link for a seller opens none of the marketplace\'s webhooks outside the scope', async () => {
    const cookie = await linkSession(marketplace, { seller_id: 1 });
    const post = await poster(cookie);
    for (const code of ['mkt-all', 'mkt-for-s2']) {
      assert.equal((await get(`/portal/MKT/webhooks/${code}`, cookie)).statusCode, 404, code);
      assert.equal((await post(`/portal/MKT/webhooks/${code}/pause`)).statusCode, 404, code);
    }
    assert.equal((await webhookRow('mkt-all', 'marketplace')).active, true);
  });

  test('a marketplace\'s link for a seller manages the marketplace\'s own webhooks for that seller, and keeps them about it', async () => {
    const cookie = await linkSession(marketplace, { seller_id: 1 });
    const post = await poster(cookie);
    const one = '/portal/MKT/webhooks/mkt-for-s1';
    assert.equal((await get(one, cookie)).statusCode, 200);
    assert.match((await get(`${one}/edit`, cookie)).body, /X-Mkt: mkt-value-1/, 'the maker reads its own header values, as through the API');
    assert.equal((await get(`${one}/deliveries`, cookie)).statusCode, 200);
    assert.equal((await get(`${one}/deliveries/${marketplaceDelivery}`, cookie)).statusCode, 200);
    // A form cannot move the webhook out of the scope: the seller stays 1.
    const edited = await post(`${one}/edit`, { name: 'Renamed', callback_url: 'http://127.0.0.1:9/closed', seller_id: '*', headers: 'X-Mkt: mkt-value-2' });
    assert.equal(edited.statusCode, 303, edited.body);
    assert.equal((await webhookRow('mkt-for-s1', 'marketplace')).seller_id, '1');
    assert.equal((await post(`${one}/pause`)).statusCode, 303);
    assert.equal((await webhookRow('mkt-for-s1', 'marketplace')).active, false);
    assert.equal((await post(`${one}/resume`)).statusCode, 303);
    const rotated = await post(`${one}/rotate-secret`);
    assert.equal(rotated.statusCode, 200);
    assert.match(rotated.body, /whsec_/);
    assert.equal((await post(`${one}/test`)).statusCode, 200);
    assert.equal((await post(`${one}/replay`, { mode: 'count', status: 'failed' })).statusCode, 200);
    assert.equal((await post(`${one}/deliveries/${marketplaceDelivery}/retry`)).statusCode, 303);
    assert.match((await get('/portal/MKT/webhooks/new', cookie)).body, /<input type="hidden" name="seller_id" value="1">/);
    // A new webhook is the maker's (the marketplace's), for the scope's seller whatever the form says.
    const created = await post('/portal/MKT/webhooks/new', { code: 'made-in-link', name: 'n', topic: 'order/create', callback_url: 'https://m.example/new', seller_id: '*' });
    assert.equal(created.statusCode, 201, created.body);
    const made = await webhookRow('made-in-link', 'marketplace');
    assert.equal(made.seller_id, '1');
    assert.equal((await api(marketplace, 'GET', '/v1/MKT/webhooks/made-in-link')).statusCode, 200);
  });

  test('no seller makes links (a marketplace API key may: portal-links-api-key.security.test.ts)', async () => {
    assert.equal((await api(seller, 'POST', '/v1/MKT/portal-links', { seller_id: 1 })).statusCode, 403);
    assert.equal((await api(seller, 'POST', '/v1/MKT/portal-links', {})).statusCode, 403);
  });

  test('an admin\'s link for a seller gets what the admin gets through the API within that seller', async () => {
    assert.equal((await api(admin, 'GET', '/v1/MKT/webhooks/seller-own')).statusCode, 200);
    const cookie = await linkSession(admin, { seller_id: 1 });
    const list = (await get('/portal/MKT/webhooks', cookie)).body;
    assert.match(list, /href="\/portal\/MKT\/webhooks\/seller-own"/);
    assert.doesNotMatch(list, /read-only/);
    assert.doesNotMatch(list, /Marketplace for all|Marketplace for seller 2/);
    assert.equal((await get('/portal/MKT/webhooks/seller-own/deliveries', cookie)).statusCode, 200);
    assert.equal((await get('/portal/MKT/webhooks/mkt-all', cookie)).statusCode, 404, 'not confined to the seller');
    // A code that another seller uses too: listed unlinked, as the admin's API answers 409 for it,
    // even though the other seller's webhook is outside the link's scope.
    for (const tenantId of ['1', '2']) await seedWebhook(ctx.db, ctx.keys, { callbackUrl: 'https://r.example.com/h', marketplaceCode: 'MKT', code: 'dup', tenantKind: 'seller', tenantId });
    const again = (await get('/portal/MKT/webhooks', cookie)).body;
    assert.match(again, /seller 1; other tenants use this code too/);
    assert.doesNotMatch(again, /seller 2; other tenants/);
    assert.doesNotMatch(again, /href="\/portal\/MKT\/webhooks\/dup"/);
    assert.equal((await get('/portal/MKT/webhooks/dup', cookie)).statusCode, 409);
  });

  test('an admin\'s link for a seller opens none of another seller\'s own webhooks, though the admin may through the API', async () => {
    // The scope narrows what the maker may do: the admin reaches seller 2's webhook through the
    // API, but a link the admin made for seller 1 does not (docs/portal.md, the table of links).
    const { id } = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: 'https://erp.seller2.example/hook', marketplaceCode: 'MKT', code: 's2-own', tenantKind: 'seller', tenantId: '2', headers: { Authorization: 'Bearer seller2-credential' } });
    const delivery = (await seedDelivery(ctx.db, { id, code: 's2-own', marketplaceCode: 'MKT', secret: '' }, { now: ctx.clock.now() })).id;
    await ctx.db.query(`UPDATE deliveries SET status = 'failed', attempts = 1 WHERE id = $1`, [delivery]);
    assert.equal((await api(admin, 'GET', '/v1/MKT/webhooks/s2-own')).statusCode, 200);
    const cookie = await linkSession(admin, { seller_id: 1 });
    const post = await poster(cookie);
    const before = await webhookRow('s2-own', 'seller');
    const deliveryBefore = await deliveryRow(delivery);
    const list = (await get('/portal/MKT/webhooks', cookie)).body;
    assert.doesNotMatch(list, /s2-own|seller2-credential/);
    const one = '/portal/MKT/webhooks/s2-own';
    for (const path of ['', '/edit', '/deliveries', `/deliveries/${delivery}`, '/replay', '/history']) {
      const page = await get(`${one}${path}`, cookie);
      assert.equal(page.statusCode, 404, `GET ${path}`);
      assert.doesNotMatch(page.body, /seller2-credential/);
    }
    for (const [path, fields] of [
      ['/edit', { name: 'test', callback_url: ATTACKER }],
      ['/pause', {}],
      ['/rotate-secret', {}],
      ['/test', {}],
      [`/deliveries/${delivery}/retry`, {}],
      ['/replay', { mode: 'send', status: 'failed' }],
    ] as [string, Record<string, string>][]) {
      const response = await post(`${one}${path}`, fields);
      assert.equal(response.statusCode, 404, `POST ${path}: ${response.body.slice(0, 200)}`);
    }
    assert.deepEqual(await webhookRow('s2-own', 'seller'), before, 'callback, secret, state and headers untouched');
    assert.deepEqual(await deliveryRow(delivery), deliveryBefore, 'no retry or replay');
  });

  test('a link without a seller shows none of the sellers\' own webhooks, whoever made it', async () => {
    for (const maker of [marketplace, admin]) {
      const cookie = await linkSession(maker, {});
      const list = (await get('/portal/MKT/webhooks', cookie)).body;
      assert.doesNotMatch(list, /Seller ERP/, maker.username);
      assert.match(list, /Marketplace for all/, maker.username);
      assert.equal((await get('/portal/MKT/webhooks/seller-own', cookie)).statusCode, 404, maker.username);
      const post = await poster(cookie);
      for (const action of ['pause', 'rotate-secret', 'test']) assert.equal((await post(`/portal/MKT/webhooks/seller-own/${action}`)).statusCode, 404, `${maker.username} ${action}`);
    }
    assert.equal((await webhookRow('seller-own', 'seller')).active, true);
  });

  test('a link session of the previous release, acting as the seller, is no session (rolling upgrade, migration 013)', async () => {
    const cookie = await linkSession(marketplace, { seller_id: 1 });
    assert.equal((await get('/portal/MKT/webhooks', cookie)).statusCode, 200);
    // What the previous release wrote for the same link: the seller's role, no API session.
    await ctx.db.query(`UPDATE portal_sessions SET role = 'seller', seller_id = 1, marketplace_code = NULL, scope_seller = NULL WHERE auth_session_id IS NULL`);
    const refused = await get('/portal/MKT/webhooks/seller-own/edit', cookie);
    assert.equal(refused.statusCode, 303);
    assert.equal(refused.headers.location, '/portal/login');
  });

  test('a seller signed in with its own credentials keeps its full portal', async () => {
    const cookie = await signIn('scope-seller', 'seller-pass-1');
    const post = await poster(cookie);
    const one = '/portal/MKT/webhooks/seller-own';
    assert.match((await get(`${one}/edit`, cookie)).body, /seller-erp-credential/);
    assert.equal((await get(`${one}/deliveries/${sellerDelivery}`, cookie)).statusCode, 200);
    assert.equal((await post(`${one}/pause`)).statusCode, 303);
    assert.equal((await post(`${one}/resume`)).statusCode, 303);
    const rotated = await post(`${one}/rotate-secret`);
    assert.equal(rotated.statusCode, 200);
    assert.match(rotated.body, /whsec_/);
    const edited = await post(`${one}/edit`, { name: 'Seller ERP', callback_url: 'https://erp2.seller.example/hook', headers: `Authorization: ${SELLER_CREDENTIAL}` });
    assert.equal(edited.statusCode, 303, edited.body);
    assert.equal((await webhookRow('seller-own', 'seller')).callback_url, 'https://erp2.seller.example/hook');
    assert.equal((await post(`${one}/replay`, { mode: 'count', status: 'failed' })).statusCode, 200);
  });
});
