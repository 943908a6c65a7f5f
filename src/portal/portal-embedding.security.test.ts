import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { seedConnection, seedUser } from '../testing/fixtures.js';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const host = 'plaza.test';

/** Signs in through the form; answers the Set-Cookie header. */
async function signIn(ctx: TestContext, origin = `https://${host}`): Promise<string> {
  const response = await ctx.app.inject({
    method: 'POST', url: '/portal/login', headers: { ...FORM, host, origin, 'x-forwarded-proto': 'https' },
    payload: new URLSearchParams({ username: 'embed-seller', password: 'seller-pass-1' }).toString(),
  });
  assert.equal(response.statusCode, 303, response.body);
  return String(response.headers['set-cookie']);
}

describe('embedding: PORTAL_FRAME_ANCESTORS', () => {
  describe('unset (the default)', () => {
    let ctx: TestContext;
    before(async () => {
      ctx = await createTestApp({ TRUST_PROXY: '127.0.0.1' });
      await seedConnection(ctx.db, 1, 'MKT');
      await seedUser(ctx.db, { username: 'embed-seller', password: 'seller-pass-1', sellerId: 1 });
    });
    after(() => ctx.close());

    test('no framing: frame-ancestors \'none\', X-Frame-Options DENY, a Strict cookie', async () => {
      const page = await ctx.app.inject({ method: 'GET', url: '/portal/login', headers: { host } });
      assert.match(String(page.headers['content-security-policy']), /frame-ancestors 'none'/);
      assert.equal(page.headers['x-frame-options'], 'DENY');
      const cookie = await signIn(ctx);
      assert.match(cookie, /SameSite=Strict/);
      assert.doesNotMatch(cookie, /Partitioned/);
    });
  });

  describe('set to two origins', () => {
    let ctx: TestContext;
    before(async () => {
      ctx = await createTestApp({ TRUST_PROXY: '127.0.0.1', PORTAL_FRAME_ANCESTORS: 'https://admin.mkt.example, http://localhost:8080' });
      await seedConnection(ctx.db, 1, 'MKT');
      await seedUser(ctx.db, { username: 'embed-seller', password: 'seller-pass-1', sellerId: 1 });
    });
    after(() => ctx.close());

    test('the CSP lists exactly those origins and X-Frame-Options is not sent', async () => {
      for (const url of ['/portal/login', '/portal/link/abc']) {
        const page = await ctx.app.inject({ method: 'GET', url, headers: { host } });
        const csp = String(page.headers['content-security-policy']);
        assert.match(csp, /(^|; )frame-ancestors https:\/\/admin\.mkt\.example http:\/\/localhost:8080(;|$)/);
        assert.doesNotMatch(csp, /frame-ancestors 'none'/);
        assert.equal(page.headers['x-frame-options'], undefined);
        assert.match(csp, /default-src 'none'/);
      }
    });

    test('the session cookie is SameSite=None; Secure; Partitioned, and sign-out clears it alike', async () => {
      const setCookie = await signIn(ctx);
      assert.match(setCookie, /SameSite=None/);
      assert.match(setCookie, /; Secure/);
      assert.match(setCookie, /Partitioned/);
      assert.match(setCookie, /HttpOnly/);
      const cookie = setCookie.split(';')[0]!;
      const page = await ctx.app.inject({ method: 'GET', url: '/portal/MKT/webhooks', headers: { host, cookie } });
      const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)![1]!;
      const out = await ctx.app.inject({ method: 'POST', url: '/portal/logout', headers: { ...FORM, host, cookie, origin: `https://${host}`, 'x-forwarded-proto': 'https' }, payload: `_csrf=${csrf}` });
      assert.equal(out.statusCode, 303);
      assert.match(String(out.headers['set-cookie']), /plaza_portal=;.*SameSite=None/);
    });

    test('a cross-site write is still refused although the cookie now goes with it', async () => {
      const cookie = (await signIn(ctx)).split(';')[0]!;
      const page = await ctx.app.inject({ method: 'GET', url: '/portal/MKT/webhooks/new', headers: { host, cookie } });
      const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)![1]!;
      const payload = new URLSearchParams({ _csrf: csrf, code: 'x', name: 'x', topic: 'order/create', callback_url: 'https://example.com/h' }).toString();
      // The framing site itself (an allowed ancestor) posting to the portal: cross-site, refused.
      for (const headers of [{ origin: 'https://admin.mkt.example', 'sec-fetch-site': 'cross-site' }, { origin: 'https://admin.mkt.example' }, { 'sec-fetch-site': 'cross-site' }]) {
        const response = await ctx.app.inject({ method: 'POST', url: '/portal/MKT/webhooks/new', headers: { ...FORM, host, cookie, 'x-forwarded-proto': 'https', ...headers }, payload });
        assert.equal(response.statusCode, 403, JSON.stringify(headers));
        assert.match(response.body, /Cross-site requests are refused/);
      }
      // Same origin without the token: refused too.
      const noToken = await ctx.app.inject({
        method: 'POST', url: '/portal/MKT/webhooks/new', headers: { ...FORM, host, cookie, 'x-forwarded-proto': 'https', origin: `https://${host}`, 'sec-fetch-site': 'same-origin' },
        payload: payload.replace(/_csrf=[^&]+&/, ''),
      });
      assert.equal(noToken.statusCode, 403);
    });
  });
});
