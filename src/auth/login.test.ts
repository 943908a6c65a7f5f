import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { hash } from '@node-rs/argon2';
import { seedUser, type SeededUser } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { authEventsOf, claimsOf, getProducts, loginOk, postLogin, refreshTokensOf } from '../testing/auth.js';
import { needsRehash } from './passwords.js';

describe('POST /api/v2/auth/login', () => {
  let ctx: TestContext;
  let user: SeededUser;
  before(async () => {
    ctx = await createTestApp();
    user = await seedUser(ctx.db, { sellerId: 7 });
  });
  after(() => ctx.close());

  test('valid credentials return exactly the login result of the spec', async () => {
    const response = await postLogin(ctx, { username: user.username, password: user.password }, { 'user-agent': 'login-test/1' });
    assert.equal(response.statusCode, 200);
    assert.equal(response.headers['cache-control'], 'no-store');
    const body = response.json();
    assert.deepEqual(Object.keys(body).sort(), ['expires_in', 'refresh_token', 'seller_id', 'token', 'token_type', 'user_id', 'user_name']);
    assert.equal(body.user_id, user.id);
    assert.equal(body.user_name, user.username);
    assert.equal(body.seller_id, 7);
    assert.equal(body.expires_in, 900);
    assert.equal(body.token_type, 'Bearer');
    assert.match(body.refresh_token, /^[A-Za-z0-9_-]{43}$/);

    const claims = claimsOf(body.token);
    assert.equal(claims.sub, String(user.id));
    assert.equal(claims.seller_id, 7);
    assert.equal(claims.iss, ctx.config.JWT_ISSUER);
    assert.equal(claims.aud, ctx.config.JWT_AUDIENCE);
    assert.equal((claims.exp as number) - (claims.iat as number), 900);
    assert.equal(typeof claims.jti, 'string');
    // The token opens the session it names, bound to one refresh token.
    const tokens = await refreshTokensOf(ctx, user.id);
    assert.ok(tokens.some((row) => row.session_id === claims.sid && row.revoked_at === null));
    assert.equal((await getProducts(ctx, body.token)).statusCode, 200);
  });

  test('a marketplace user gets its role and marketplace in the token, kept across refresh', async () => {
    const mkt = await seedUser(ctx.db, { sellerId: 8, role: 'marketplace', marketplaceCode: 'mla' });
    const pair = await loginOk(ctx, mkt);
    assert.equal(claimsOf(pair.token).role, 'marketplace');
    assert.equal(claimsOf(pair.token).mkt, 'mla');
    const next = await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/refresh', payload: { refresh_token: pair.refresh_token } });
    assert.equal(next.statusCode, 200);
    assert.equal(claimsOf(next.json().token).mkt, 'mla');
    assert.equal(claimsOf(next.json().token).seller_id, 8);
    assert.equal(claimsOf((await loginOk(ctx, user)).token).mkt, undefined);
  });

  test('the user name is matched case-insensitively', async () => {
    await loginOk(ctx, { username: user.username.toUpperCase(), password: user.password });
  });

  test('a wrong password is 401 invalid_credentials', async () => {
    const response = await postLogin(ctx, { username: user.username, password: 'wrong password' });
    assert.equal(response.statusCode, 401);
    assert.equal(response.json().code, 'invalid_credentials');
    // As the OpenAPI document says: no Bearer challenge where the credentials come in the body.
    assert.equal(response.headers['www-authenticate'], undefined);
  });

  test('an unknown user is 401 invalid_credentials', async () => {
    const response = await postLogin(ctx, { username: 'nobody-here', password: 'whatever' });
    assert.equal(response.statusCode, 401);
    assert.equal(response.json().code, 'invalid_credentials');
  });

  test('an inactive user with the right password is 403 user_inactive, with a wrong one 401', async () => {
    const inactive = await seedUser(ctx.db, { active: false });
    const right = await postLogin(ctx, { username: inactive.username, password: inactive.password });
    assert.equal(right.statusCode, 403);
    assert.equal(right.json().code, 'user_inactive');
    const wrong = await postLogin(ctx, { username: inactive.username, password: 'not it' });
    assert.equal(wrong.statusCode, 401);
    assert.equal(wrong.json().code, 'invalid_credentials');
    assert.equal((await refreshTokensOf(ctx, inactive.id)).length, 0);
  });

  test('missing or invalid fields are 400 validation_failed listing each field', async () => {
    const cases: [unknown, string[]][] = [
      [{}, ['body.password', 'body.username']],
      [{ username: user.username }, ['body.password']],
      [{ username: '', password: 'x' }, ['body.username']],
      [{ username: 'a', password: 123 }, ['body.password']],
      [{ username: 'u'.repeat(201), password: 'x' }, ['body.username']],
      [{ username: 'u', password: 'p'.repeat(1025) }, ['body.password']],
    ];
    for (const [body, fields] of cases) {
      const response = await postLogin(ctx, body);
      assert.equal(response.statusCode, 400, JSON.stringify(body));
      const problem = response.json();
      assert.equal(problem.code, 'validation_failed');
      assert.deepEqual([...new Set((problem.errors as { field: string }[]).map((e) => e.field))].sort(), fields);
    }
  });

  test('a hash made with other parameters is replaced on a successful login', async () => {
    const old = await seedUser(ctx.db);
    const weak = await hash(old.password, { memoryCost: 4096, timeCost: 1, parallelism: 1 });
    await ctx.db.query(`UPDATE users SET password_hash = $2 WHERE id = $1`, [old.id, weak]);
    assert.ok(needsRehash(weak));
    await loginOk(ctx, old);
    const { rows } = await ctx.db.query<{ password_hash: string }>(`SELECT password_hash FROM users WHERE id = $1`, [old.id]);
    assert.ok(!needsRehash(rows[0]!.password_hash));
    assert.notEqual(rows[0]!.password_hash, weak);
    await loginOk(ctx, old);
  });

  test('every outcome is audited with IP and user agent, never with the password', async () => {
    const audited = await seedUser(ctx.db);
    await postLogin(ctx, { username: audited.username, password: 'wrong-secret-123' }, { 'user-agent': 'audit-agent' });
    await loginOk(ctx, audited, { 'user-agent': 'audit-agent' });
    const events = await authEventsOf(ctx, audited.id);
    assert.deepEqual(events.map((e) => e.type), ['login_failed', 'login_succeeded']);
    assert.equal(events[0]!.detail?.reason, 'wrong_password');
    const { rows } = await ctx.db.query<Record<string, unknown>>(`SELECT * FROM auth_events WHERE user_id = $1`, [audited.id]);
    for (const row of rows) {
      assert.equal(row.ip, '127.0.0.1');
      assert.equal(row.user_agent, 'audit-agent');
      assert.ok(row.created_at instanceof Date);
      assert.ok(!JSON.stringify(row).includes('wrong-secret-123'));
      assert.ok(!JSON.stringify(row).includes(audited.password));
    }
    // A name that matches no account is not kept: it may be a password typed in the wrong field.
    const unknown = await ctx.db.query<{ username: string | null }>(`SELECT username FROM auth_events WHERE type = 'login_failed' AND detail->>'reason' = 'unknown_user'`);
    assert.ok(unknown.rows.length >= 1);
    assert.ok(unknown.rows.every((row) => row.username === null));
    assert.equal((await ctx.db.query(`SELECT 1 FROM auth_events WHERE username LIKE '%nobody-here%' OR detail::text LIKE '%nobody-here%'`)).rowCount, 0);
  });

  test('repeated failures are 429 rate_limited with Retry-After, even with the right password, until the cooldown ends', async () => {
    const target = await seedUser(ctx.db);
    // TRUST_PROXY is 0: X-Forwarded-For is ignored, so changing it cannot reset the limit.
    const spoofed = (n: number) => ({ 'x-forwarded-for': `203.0.113.${n}` });
    let limited: Awaited<ReturnType<typeof postLogin>> | undefined;
    for (let i = 0; i < 10 && !limited; i++) {
      const response = await postLogin(ctx, { username: target.username, password: `wrong-${i}` }, spoofed(i));
      if (response.statusCode === 429) limited = response;
      else assert.equal(response.statusCode, 401);
    }
    assert.ok(limited, 'no 429 after 10 failures');
    const body = limited.json();
    assert.equal(body.code, 'rate_limited');
    assert.ok(Number.isInteger(body.retry_after) && body.retry_after >= 1);
    assert.equal(limited.headers['retry-after'], String(body.retry_after));

    const right = await postLogin(ctx, { username: target.username, password: target.password }, spoofed(99));
    assert.equal(right.statusCode, 429);
    assert.ok((await authEventsOf(ctx, target.id)).length >= 1);
    const { rows } = await ctx.db.query(`SELECT 1 FROM auth_events WHERE type = 'login_limited' AND user_id = $1`, [target.id]);
    assert.ok(rows.length >= 1);

    ctx.clock.advanceSeconds(Number(right.headers['retry-after']));
    await loginOk(ctx, target);
  });
});
