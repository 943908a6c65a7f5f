import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { accessTokenFor, bearer, seedConnection, seedUser, type SeededUser } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

describe('portal second factor and passkeys: refusals', () => {
  let ctx: TestContext;
  let marketplace: SeededUser;
  const host = 'plaza.test';
  const origin = `http://${host}`;

  before(async () => {
    ctx = await createTestApp();
    await seedConnection(ctx.db, 1, 'MKT');
    marketplace = await seedUser(ctx.db, { username: 'pk-mkt', role: 'marketplace', marketplaceCode: 'MKT', sellerId: 1 });
  });
  after(() => ctx.close());

  const json = (url: string, payload: object, extra: Record<string, string> = {}) => ctx.app.inject({ method: 'POST', url, headers: { host, origin, ...extra }, payload });
  const clientData = (challenge: string) => Buffer.from(JSON.stringify({ type: 'webauthn.get', challenge, origin })).toString('base64url');

  test('a forged passkey answer signs nobody in, and uses its challenge up', async () => {
    const options = await json('/portal/login/passkey/options', {});
    assert.equal(options.statusCode, 200, options.body);
    const { challenge, rpId } = options.json();
    assert.equal(rpId, host);
    const forged = { id: 'bm8tc3VjaC1rZXk', rawId: 'bm8tc3VjaC1rZXk', type: 'public-key', response: { clientDataJSON: clientData(challenge), authenticatorData: 'AA', signature: 'AA' }, clientExtensionResults: {} };
    const answer = await json('/portal/login/passkey', { response: forged });
    assert.equal(answer.statusCode, 401);
    assert.equal(answer.headers['set-cookie'], undefined);
    assert.equal((await ctx.db.query(`SELECT 1 FROM webauthn_challenges WHERE challenge = $1`, [challenge])).rowCount, 0, 'single use, even when refused');
    assert.equal((await ctx.db.query(`SELECT 1 FROM portal_sessions`)).rowCount, 0);
  });

  test('the sign-in steps, which need no account, are limited per address (PASSKEY_SIGN_INS_PER_MINUTE_PER_IP): past it 429, nothing written; another address goes on', async () => {
    const limited = await createTestApp({ PASSKEY_SIGN_INS_PER_MINUTE_PER_IP: '3' });
    try {
      const from = (remoteAddress: string) => limited.app.inject({ method: 'POST', url: '/portal/login/passkey/options', headers: { host, origin }, payload: {}, remoteAddress });
      for (let i = 0; i < 3; i++) assert.equal((await from('10.1.0.1')).statusCode, 200);
      const rows = async () => Number((await limited.db.query<{ n: string }>(`SELECT count(*) AS n FROM webauthn_challenges`)).rows[0]!.n);
      const before = await rows();
      const refused = await from('10.1.0.1');
      assert.equal(refused.statusCode, 429, refused.body);
      assert.ok(Number(refused.headers['retry-after']) >= 1);
      assert.equal(await rows(), before, 'a refused step writes no challenge');
      assert.equal((await from('10.1.0.2')).statusCode, 200);
    } finally {
      await limited.close();
    }
  });

  test('passkey endpoints refuse cross-site requests', async () => {
    const response = await json('/portal/login/passkey/options', {}, { origin: 'https://evil.example' });
    assert.equal(response.statusCode, 403);
  });

  test('a portal link session has no account page and cannot register a passkey for its maker', async () => {
    const link = await ctx.app.inject({ method: 'POST', url: '/v1/MKT/portal-links', headers: { ...bearer(await accessTokenFor(ctx, marketplace)), host }, payload: { seller_id: 1 } });
    assert.equal(link.statusCode, 201, link.body);
    const token = new URL(link.json().url).pathname.split('/').pop()!;
    const opened = await ctx.app.inject({ method: 'POST', url: '/portal/link', headers: { ...FORM, host, origin }, payload: `token=${token}` });
    const cookie = String(opened.headers['set-cookie']).split(';')[0]!;
    const page = await ctx.app.inject({ method: 'GET', url: '/portal/account', headers: { host, cookie } });
    assert.equal(page.statusCode, 403);
    const csrf = /name="_csrf" value="([^"]+)"/.exec((await ctx.app.inject({ method: 'GET', url: '/portal/MKT/webhooks', headers: { host, cookie } })).body)![1]!;
    const options = await json('/portal/account/passkeys/options', { _csrf: csrf }, { cookie });
    assert.equal(options.statusCode, 403);
    const totp = await ctx.app.inject({ method: 'POST', url: '/portal/account/totp', headers: { ...FORM, host, origin, cookie }, payload: `_csrf=${csrf}` });
    assert.equal(totp.statusCode, 403);
    assert.equal((await ctx.db.query(`SELECT 1 FROM mfa_totp WHERE user_id = $1`, [marketplace.id])).rowCount, 0);
  });
});
