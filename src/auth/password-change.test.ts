import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { OTHER_STRONG_PASSWORD, seedUser } from '../testing/fixtures.js';
import { loginOk, postLogin, postRefresh } from '../testing/auth.js';

describe('POST /api/v2/auth/password', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestApp();
  });
  after(() => ctx.close());

  const change = (token: string, body: Record<string, unknown>) =>
    ctx.app.inject({ method: 'POST', url: '/api/v2/auth/password', headers: { authorization: `Bearer ${token}` }, payload: body });

  test('needs the current password; changes it and ends the other sessions, keeping this one', async () => {
    const user = await seedUser(ctx.db, { sellerId: 1 });
    const here = await loginOk(ctx, user);
    const elsewhere = await loginOk(ctx, user);
    const wrong = await change(here.token, { current_password: 'not it at all', new_password: OTHER_STRONG_PASSWORD });
    assert.equal(wrong.statusCode, 401);
    assert.equal(wrong.json().code, 'invalid_credentials');
    assert.equal((await change(here.token, { current_password: user.password, new_password: 'short' })).statusCode, 400);
    assert.equal((await change(here.token, { current_password: user.password, new_password: OTHER_STRONG_PASSWORD })).statusCode, 204);

    // This one first: presenting the revoked token of the other session counts as reuse (spec rule) and ends them all.
    assert.equal((await postRefresh(ctx, here.refresh_token)).statusCode, 200, 'this session goes on');
    const { rows: other } = await ctx.db.query<{ revoked_reason: string }>(
      `SELECT rt.revoked_reason FROM refresh_tokens rt JOIN sessions s ON s.id = rt.session_id WHERE s.user_id = $1 AND rt.session_id <> $2`,
      [user.id, (await ctx.db.query<{ session_id: string }>(`SELECT session_id FROM refresh_tokens WHERE parent_id IS NOT NULL AND user_id = $1`, [user.id])).rows[0]!.session_id],
    );
    assert.deepEqual(other.map((row) => row.revoked_reason), ['password_changed'], 'the other session ended');
    assert.equal((await postRefresh(ctx, elsewhere.refresh_token)).statusCode, 401);
    assert.equal((await postLogin(ctx, { username: user.username, password: user.password })).statusCode, 401);
    await loginOk(ctx, { username: user.username, password: OTHER_STRONG_PASSWORD });
    const { rows } = await ctx.db.query(`SELECT 1 FROM auth_events WHERE user_id = $1 AND type = 'password_changed'`, [user.id]);
    assert.equal(rows.length, 1);
  });

  test('wrong current passwords count towards the login limits', async () => {
    const user = await seedUser(ctx.db, { sellerId: 1 });
    const session = await loginOk(ctx, user);
    const statuses: number[] = [];
    for (let i = 0; i < ctx.config.LOGIN_FREE_FAILURES_PER_USER_IP + 2; i++) {
      statuses.push((await change(session.token, { current_password: `wrong ${i} password`, new_password: OTHER_STRONG_PASSWORD })).statusCode);
    }
    assert.ok(statuses.includes(429), statuses.join(','));
  });
});
