import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { seedUser, type SeededUser } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { authEventsOf, claimsOf, getProducts, loginOk, postRefresh, refreshTokensOf } from '../testing/auth.js';

describe('POST /api/v2/auth/refresh', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestApp();
  });
  after(() => ctx.close());

  const newUser = (): Promise<SeededUser> => seedUser(ctx.db, { sellerId: 3 });

  test('active and unexpired: rotated, a new pair in the same session', async () => {
    const user = await newUser();
    const first = await loginOk(ctx, user);
    ctx.clock.advanceSeconds(60);
    const response = await postRefresh(ctx, first.refresh_token);
    assert.equal(response.statusCode, 200);
    assert.equal(response.headers['cache-control'], 'no-store');
    const second = response.json();
    assert.deepEqual(Object.keys(second).sort(), ['expires_in', 'refresh_token', 'seller_id', 'token', 'token_type', 'user_id', 'user_name']);
    assert.equal(second.user_id, user.id);
    assert.equal(second.user_name, user.username);
    assert.equal(second.seller_id, 3);
    assert.equal(second.expires_in, 900);
    assert.notEqual(second.refresh_token, first.refresh_token);
    assert.match(second.refresh_token, /^[A-Za-z0-9_-]{43}$/);
    assert.notEqual(second.token, first.token);
    assert.equal(claimsOf(second.token).sid, claimsOf(first.token).sid);
    assert.equal((await getProducts(ctx, second.token)).statusCode, 200);

    const rows = await refreshTokensOf(ctx, user.id);
    assert.equal(rows.length, 2);
    assert.equal(rows[0]!.revoked_reason, 'rotated');
    assert.equal(rows[1]!.revoked_at, null);
    assert.equal(rows[1]!.parent_id, rows[0]!.id);
    const session = await ctx.db.query<{ last_used_at: Date }>(`SELECT last_used_at FROM sessions WHERE id = $1`, [claimsOf(first.token).sid]);
    assert.equal(session.rows[0]!.last_used_at.getTime(), ctx.clock.now().getTime());
    // The successor rotates in turn.
    assert.equal((await postRefresh(ctx, second.refresh_token)).statusCode, 200);
    assert.deepEqual((await authEventsOf(ctx, user.id)).map((e) => e.type), ['login_succeeded', 'refresh_rotated', 'refresh_rotated']);
  });

  test('refresh tokens are stored only as SHA-256 hashes', async () => {
    const user = await newUser();
    const pair = await loginOk(ctx, user);
    const { rows } = await ctx.db.query<Record<string, unknown>>(`SELECT * FROM refresh_tokens WHERE user_id = $1`, [user.id]);
    assert.equal(rows.length, 1);
    assert.deepEqual(Buffer.from(rows[0]!.token_hash as Uint8Array), createHash('sha256').update(pair.refresh_token).digest());
    const everything = JSON.stringify(await ctx.db.query(`SELECT r.*, s.*, e.* FROM refresh_tokens r JOIN sessions s ON s.id = r.session_id LEFT JOIN auth_events e ON e.user_id = r.user_id WHERE r.user_id = $1`, [user.id]));
    assert.ok(!everything.includes(pair.refresh_token));
    assert.ok(!everything.includes(pair.token));
  });

  test('a revoked token presented again revokes every token of the user; the newest fails afterwards', async () => {
    const user = await newUser();
    const laptop = await loginOk(ctx, user);
    const phone = await loginOk(ctx, user);
    const rotated = (await postRefresh(ctx, laptop.refresh_token)).json();

    const reuse = await postRefresh(ctx, laptop.refresh_token);
    assert.equal(reuse.statusCode, 401);
    assert.equal(reuse.json().code, 'invalid_refresh_token');

    const rows = await refreshTokensOf(ctx, user.id);
    // Counted, not `every`: over no rows at all, every() is true.
    assert.deepEqual(rows.map((row) => [row.revoked_at !== null, row.revoked_reason]), [
      [true, 'rotated'],
      [true, 'security_breach_token_reuse'],
      [true, 'security_breach_token_reuse'],
    ]);
    assert.equal((await postRefresh(ctx, rotated.refresh_token)).statusCode, 401);
    assert.equal((await postRefresh(ctx, phone.refresh_token)).statusCode, 401);
    const events = await authEventsOf(ctx, user.id);
    assert.ok(events.some((e) => e.type === 'refresh_reuse_detected' && e.detail?.previous_reason === 'rotated'));
    // A new login is required, and works.
    assert.equal((await postRefresh(ctx, (await loginOk(ctx, user)).refresh_token)).statusCode, 200);
  });

  test('an expired refresh token is 401 and revokes nothing', async () => {
    const user = await newUser();
    const other = await loginOk(ctx, user);
    const pair = await loginOk(ctx, user);
    ctx.clock.advanceSeconds(ctx.config.REFRESH_TOKEN_TTL_SECONDS);
    const response = await postRefresh(ctx, pair.refresh_token);
    assert.equal(response.statusCode, 401);
    assert.equal(response.json().code, 'invalid_refresh_token');
    // Both logins' tokens, still unrevoked (a list, not every(): that is true of no rows too).
    assert.deepEqual((await refreshTokensOf(ctx, user.id)).map((row) => row.revoked_at), [null, null]);
    assert.equal((await postRefresh(ctx, pair.refresh_token)).statusCode, 401);
    assert.deepEqual((await refreshTokensOf(ctx, user.id)).map((row) => row.revoked_at), [null, null]);
    assert.equal((await postRefresh(ctx, other.refresh_token)).statusCode, 401);
  });

  test('one second before expiry the token still rotates', async () => {
    const user = await newUser();
    const pair = await loginOk(ctx, user);
    ctx.clock.advanceSeconds(ctx.config.REFRESH_TOKEN_TTL_SECONDS - 1);
    assert.equal((await postRefresh(ctx, pair.refresh_token)).statusCode, 200);
  });

  test('unknown and malformed tokens are 401 and revoke nothing', async () => {
    const user = await newUser();
    await loginOk(ctx, user);
    for (const token of ['A'.repeat(43), 'short', 'not base64url!!'.padEnd(43, '!'), 'x'.repeat(1024)]) {
      const response = await postRefresh(ctx, token);
      assert.equal(response.statusCode, 401, token);
      assert.equal(response.json().code, 'invalid_refresh_token');
    }
    assert.deepEqual((await refreshTokensOf(ctx, user.id)).map((row) => row.revoked_at), [null]);
  });

  test('a missing or non-string refresh_token is 400', async () => {
    for (const payload of [{}, { refresh_token: 5 }, { refresh_token: '' }]) {
      const response = await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/refresh', payload });
      assert.equal(response.statusCode, 400);
      assert.equal(response.json().errors[0].field, 'body.refresh_token');
    }
  });

  test('a user who became inactive gets 403 user_inactive', async () => {
    const user = await newUser();
    const pair = await loginOk(ctx, user);
    await ctx.db.query(`UPDATE users SET active = false WHERE id = $1`, [user.id]);
    const response = await postRefresh(ctx, pair.refresh_token);
    assert.equal(response.statusCode, 403);
    assert.equal(response.json().code, 'user_inactive');
    // Not rotated: reactivated, the same token still works.
    await ctx.db.query(`UPDATE users SET active = true WHERE id = $1`, [user.id]);
    assert.equal((await postRefresh(ctx, pair.refresh_token)).statusCode, 200);
  });

  test('successors are derived (HMAC of the presented token) and expire a full lifetime after their issue', async () => {
    const user = await newUser();
    const pair = await loginOk(ctx, user);
    ctx.clock.advanceSeconds(ctx.config.REFRESH_TOKEN_TTL_SECONDS - 10);
    const next = (await postRefresh(ctx, pair.refresh_token)).json();
    assert.equal(next.refresh_token, createHmac('sha256', ctx.keys.refreshSuccessorKey).update(pair.refresh_token).digest('base64url'));
    ctx.clock.advanceSeconds(60);
    assert.equal((await postRefresh(ctx, next.refresh_token)).statusCode, 200);
  });
});
