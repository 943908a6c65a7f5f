import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { seedUser } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { pruneAuthRecords } from './auth-maintenance.js';
import { loginOk, postRefresh, refreshTokensOf } from '../testing/auth.js';

describe('pruneAuthRecords', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestApp();
  });
  after(() => ctx.close());

  test('keeps expired tokens one more lifetime (a replay is still reuse), then removes them with their sessions and old events', async () => {
    const ttl = ctx.config.REFRESH_TOKEN_TTL_SECONDS;
    const retention = { refreshTokenTtlSeconds: ttl, auditRetentionDays: 30 };
    const user = await seedUser(ctx.db);
    const old = await loginOk(ctx, user);
    const rotated = (await postRefresh(ctx, old.refresh_token)).json();
    ctx.clock.advanceSeconds(ttl + 60);
    const fresh = await loginOk(ctx, user);

    assert.deepEqual(await pruneAuthRecords(ctx.db, ctx.clock.now(), retention), { refreshTokens: 0, sessions: 0, events: 0, dpopProofs: 0 });
    assert.equal((await refreshTokensOf(ctx, user.id)).length, 3);

    // The old tokens are now expired for more than a lifetime; the fresh one is still valid.
    ctx.clock.advanceSeconds(ttl - 30);
    const pruned = await pruneAuthRecords(ctx.db, ctx.clock.now(), retention);
    assert.equal(pruned.refreshTokens, 2);
    assert.equal(pruned.sessions, 1);
    assert.equal(pruned.events, 0);
    assert.equal((await refreshTokensOf(ctx, user.id)).length, 1);
    // The fresh session is untouched, and the pruned tokens are simply unknown now.
    assert.equal((await postRefresh(ctx, rotated.refresh_token)).statusCode, 401);
    assert.equal((await postRefresh(ctx, fresh.refresh_token)).statusCode, 200);

    ctx.clock.advanceSeconds(31 * 86_400);
    assert.equal((await pruneAuthRecords(ctx.db, ctx.clock.now(), retention)).events, 4);
    const { rows } = await ctx.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM auth_events WHERE user_id = $1`, [user.id]);
    assert.equal(rows[0]!.n, 0);
  });
});
