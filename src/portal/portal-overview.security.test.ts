import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { accessTokenFor, bearer, seedConnection, seedUser, type SeededUser } from '../testing/fixtures.js';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const host = 'plaza.test';
const origin = `http://${host}`;

/**
 * The overview (/portal/overview) of a seller on many marketplaces: each marketplace's section
 * lists what the API lists for the same credential, no more; a portal link's session sees its own
 * marketplace and scope only, whoever made the link.
 */
describe('portal overview: one page over the marketplaces, never more than the API grants', () => {
  let ctx: TestContext;
  let seller: SeededUser;
  let otherSeller: SeededUser;
  let marketplace: SeededUser;
  let admin: SeededUser;

  const api = async (who: SeededUser, method: 'GET' | 'POST', url: string, payload?: object) =>
    ctx.app.inject({ method, url, headers: { ...bearer(await accessTokenFor(ctx, who)), host }, ...(payload ? { payload } : {}) });
  const hook = async (who: SeededUser, mkt: string, code: string, sellerId?: string) => {
    const response = await api(who, 'POST', `/v1/${mkt}/webhooks`, { code, name: `Hook ${code}`, topic: 'order/create', callback_url: `https://erp.example/${code}`, ...(sellerId ? { seller_id: sellerId } : {}) });
    assert.equal(response.statusCode, 201, response.body);
  };
  const signIn = async (username: string, password: string) => {
    const response = await ctx.app.inject({ method: 'POST', url: '/portal/login', headers: { ...FORM, host, origin }, payload: new URLSearchParams({ username, password }).toString() });
    assert.equal(response.statusCode, 303, response.body);
    return String(response.headers['set-cookie']).split(';')[0]!;
  };
  const openLink = async (who: SeededUser, mkt: string, body: object) => {
    const link = await api(who, 'POST', `/v1/${mkt}/portal-links`, body);
    assert.equal(link.statusCode, 201, link.body);
    const token = (link.json() as { url: string }).url.split('/').at(-1)!;
    const opened = await ctx.app.inject({ method: 'POST', url: '/portal/link', headers: { ...FORM, host, origin }, payload: `token=${token}` });
    assert.equal(opened.statusCode, 303, opened.body);
    return String(opened.headers['set-cookie']).split(';')[0]!;
  };
  const overview = async (cookie: string) => {
    const response = await ctx.app.inject({ method: 'GET', url: '/portal/overview', headers: { host, cookie } });
    assert.equal(response.statusCode, 200, response.body);
    return response.body;
  };
  /** The sections of the page: marketplace → the webhook codes listed there (read-only ones apart). */
  const sectionsOf = (body: string) => {
    const sections = new Map<string, string[]>();
    for (const part of body.split('<section').slice(1)) {
      const mkt = /<h2 id="mkt-[^"]*">([^<]+)<\/h2>/.exec(part)![1]!;
      const [managed = '', readOnly = ''] = part.split('(read-only)');
      sections.set(mkt, [...managed.matchAll(/<br><code>([^<]+)<\/code>/g)].map((m) => m[1]!).sort());
      if (readOnly) sections.set(`${mkt} read-only`, [...readOnly.matchAll(/<br><code>([^<]+)<\/code>/g)].map((m) => m[1]!).sort());
    }
    return sections;
  };
  const apiCodes = async (who: SeededUser, mkt: string) => ((await api(who, 'GET', `/v1/${mkt}/webhooks`)).json() as { code: string }[]).map((w) => w.code).sort();

  before(async () => {
    ctx = await createTestApp({ ACCESS_TOKEN_TTL_SECONDS: '86400' });
    await seedConnection(ctx.db, 1, 'MKT');
    await seedConnection(ctx.db, 1, 'OTHER');
    await seedConnection(ctx.db, 2, 'MKT');
    await seedConnection(ctx.db, 1, 'THIRD');
    seller = await seedUser(ctx.db, { username: 'ov-seller', password: 'seller-pass-1', sellerId: 1 });
    otherSeller = await seedUser(ctx.db, { username: 'ov-seller-2', password: 'seller-pass-2', sellerId: 2 });
    marketplace = await seedUser(ctx.db, { username: 'ov-mkt', password: 'market-pass-1', role: 'marketplace', marketplaceCode: 'MKT', sellerId: 1 });
    admin = await seedUser(ctx.db, { username: 'ov-admin', password: 'admin-pass-11', role: 'admin', sellerId: 1 });
    await hook(seller, 'MKT', 'own-mkt');
    await hook(seller, 'OTHER', 'own-other');
    await hook(otherSeller, 'MKT', 'seller2-mkt');
    // The marketplace's webhooks: one for seller 1 alone, one for every seller. A seller's
    // credential does not list them through the API, so the seller's overview does not either.
    await hook(marketplace, 'MKT', 'mkt-for-1', '1');
    await hook(marketplace, 'MKT', 'mkt-for-all');
  });
  after(() => ctx.close());

  test('a seller sees every marketplace it is connected to, each with exactly what the API lists for it', async () => {
    const sections = sectionsOf(await overview(await signIn('ov-seller', 'seller-pass-1')));
    assert.deepEqual([...sections.keys()].sort(), ['MKT', 'OTHER', 'THIRD']);
    assert.deepEqual(sections.get('MKT'), ['own-mkt']);
    assert.deepEqual(sections.get('OTHER'), ['own-other']);
    assert.deepEqual(sections.get('THIRD'), []);
    for (const mkt of ['MKT', 'OTHER', 'THIRD']) assert.deepEqual(sections.get(mkt), await apiCodes(seller, mkt), mkt);
  });

  test('each row links into its marketplace\'s pages, which open', async () => {
    const cookie = await signIn('ov-seller', 'seller-pass-1');
    const body = await overview(cookie);
    for (const path of ['/portal/MKT/webhooks/own-mkt', '/portal/OTHER/webhooks/own-other', '/portal/OTHER/webhooks/own-other/deliveries', '/portal/MKT/webhooks']) {
      assert.match(body, new RegExp(`href="${path}"`));
      assert.equal((await ctx.app.inject({ method: 'GET', url: path, headers: { host, cookie } })).statusCode, 200, path);
    }
  });

  test('a marketplace user sees its own marketplace only, as the API lists it', async () => {
    const sections = sectionsOf(await overview(await signIn('ov-mkt', 'market-pass-1')));
    assert.deepEqual([...sections.keys()], ['MKT']);
    assert.deepEqual(sections.get('MKT'), await apiCodes(marketplace, 'MKT'));
  });

  test('a marketplace\'s link for seller 1 sees that marketplace and that scope only, never the seller\'s other marketplaces', async () => {
    const body = await overview(await openLink(marketplace, 'MKT', { seller_id: 1 }));
    const sections = sectionsOf(body);
    assert.deepEqual([...sections.keys()].sort(), ['MKT', 'MKT read-only']);
    assert.deepEqual(sections.get('MKT'), ['mkt-for-1']);
    assert.deepEqual(sections.get('MKT read-only'), ['own-mkt']);
    assert.doesNotMatch(body, /OTHER|THIRD|own-other|seller2-mkt|mkt-for-all/);
  });

  test('an admin\'s link (the admin sees every marketplace) is confined to the link\'s marketplace and seller too', async () => {
    assert.deepEqual([...sectionsOf(await overview(await signIn('ov-admin', 'admin-pass-11'))).keys()].sort(), ['MKT', 'OTHER', 'THIRD']);
    const body = await overview(await openLink(admin, 'MKT', { seller_id: 1 }));
    const sections = sectionsOf(body);
    assert.deepEqual([...sections.keys()], ['MKT']);
    assert.deepEqual(sections.get('MKT'), ['mkt-for-1', 'own-mkt']);
    assert.doesNotMatch(body, /OTHER|THIRD|own-other|seller2-mkt|mkt-for-all/);
  });

  test('without a session the overview sends to sign-in', async () => {
    const response = await ctx.app.inject({ method: 'GET', url: '/portal/overview', headers: { host } });
    assert.equal(response.statusCode, 303);
    assert.equal(response.headers.location, '/portal/login');
  });
});
