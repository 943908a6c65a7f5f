import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { loginOk } from '../testing/auth.js';
import { verifyPassword } from '../auth/passwords.js';
import { accessTokenFor, bearer, OTHER_STRONG_PASSWORD, seedUser, STRONG_PASSWORD } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';

// Issue 35: the UPDATE that stores a new password was written in the reset and again in the own change.
describe('a new password is stored one way (setPasswordHash), whether an administrator resets it or the user changes it', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestApp();
  });
  after(() => ctx.close());

  const stored = async (userId: number) =>
    (await ctx.db.query<{ password_hash: string; updated_at: Date }>(`SELECT password_hash, updated_at FROM users WHERE id = $1`, [userId])).rows[0]!;

  test('each stores a hash of the new password, at the time of the change', async () => {
    const admin = bearer(await accessTokenFor(ctx, await seedUser(ctx.db, { role: 'admin' })));
    const user = await seedUser(ctx.db);
    const reset = await ctx.app.inject({ method: 'POST', url: `/api/v2/admin/users/${user.id}/password`, headers: admin, payload: { password: OTHER_STRONG_PASSWORD } });
    assert.equal(reset.statusCode, 204, reset.body);
    const afterReset = await stored(user.id);
    assert.deepEqual([await verifyPassword(afterReset.password_hash, OTHER_STRONG_PASSWORD), afterReset.updated_at.getTime()], [true, ctx.clock.now().getTime()]);

    ctx.clock.advance(60_000);
    const { token } = await loginOk(ctx, { username: user.username, password: OTHER_STRONG_PASSWORD });
    const change = await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/password', headers: bearer(token), payload: { current_password: OTHER_STRONG_PASSWORD, new_password: STRONG_PASSWORD } });
    assert.equal(change.statusCode, 204, change.body);
    const afterChange = await stored(user.id);
    assert.deepEqual([await verifyPassword(afterChange.password_hash, STRONG_PASSWORD), afterChange.updated_at.getTime()], [true, ctx.clock.now().getTime()]);
  });
});
