import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { seedUser } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { loginOk, postRefresh, refreshTokensOf } from './auth-test-kit.js';

describe('refresh rotation under attack', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestApp();
  });
  after(() => ctx.close());

  test('50 parallel refreshes with one token: exactly one 200, never a second successor', async () => {
    const user = await seedUser(ctx.db);
    const pair = await loginOk(ctx, user);
    const responses = await Promise.all(Array.from({ length: 50 }, () => postRefresh(ctx, pair.refresh_token)));
    const statuses = responses.map((response) => response.statusCode);
    assert.equal(statuses.filter((status) => status === 200).length, 1, statuses.join(','));
    assert.equal(statuses.filter((status) => status === 401).length, 49);
    const rows = await refreshTokensOf(ctx, user.id);
    const original = rows.find((row) => row.parent_id === null)!;
    assert.equal(rows.filter((row) => row.parent_id === original.id).length, 1);
    assert.equal(original.revoked_reason, 'rotated');
    // The losers presented a revoked token: reuse, so the winner's successor is revoked as well.
    const winner = responses.find((response) => response.statusCode === 200)!.json();
    assert.equal((await postRefresh(ctx, winner.refresh_token)).statusCode, 401);
  });

  test('a token revoked by logout, presented again, is reuse: every token of the user is revoked', async () => {
    const user = await seedUser(ctx.db);
    const first = await loginOk(ctx, user);
    const second = await loginOk(ctx, user);
    const logout = await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/logout', headers: { authorization: `Bearer ${first.token}` } });
    assert.equal(logout.statusCode, 204);
    assert.equal((await postRefresh(ctx, first.refresh_token)).statusCode, 401);
    assert.equal((await postRefresh(ctx, second.refresh_token)).statusCode, 401);
    const reasons = (await refreshTokensOf(ctx, user.id)).map((row) => row.revoked_reason);
    assert.deepEqual(reasons, ['logout', 'security_breach_token_reuse']);
  });

  test('reuse detection leaves other users alone', async () => {
    const victim = await seedUser(ctx.db);
    const bystander = await seedUser(ctx.db);
    const stolen = await loginOk(ctx, victim);
    const safe = await loginOk(ctx, bystander);
    await postRefresh(ctx, stolen.refresh_token);
    assert.equal((await postRefresh(ctx, stolen.refresh_token)).statusCode, 401);
    assert.equal((await postRefresh(ctx, safe.refresh_token)).statusCode, 200);
  });
});

describe('REFRESH_REUSE_GRACE_SECONDS', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestApp({ REFRESH_REUSE_GRACE_SECONDS: '10' });
  });
  after(() => ctx.close());

  test('the immediate predecessor within the grace period returns the same successor', async () => {
    const user = await seedUser(ctx.db);
    const pair = await loginOk(ctx, user);
    const first = (await postRefresh(ctx, pair.refresh_token)).json();
    ctx.clock.advanceSeconds(10);
    const again = await postRefresh(ctx, pair.refresh_token);
    assert.equal(again.statusCode, 200);
    assert.equal(again.json().refresh_token, first.refresh_token);
    assert.equal((await refreshTokensOf(ctx, user.id)).length, 2);
    assert.ok((await refreshTokensOf(ctx, user.id)).every((row) => row.revoked_reason !== 'security_breach_token_reuse'));
    // The shared successor rotates normally.
    assert.equal((await postRefresh(ctx, first.refresh_token)).statusCode, 200);
  });

  test('parallel refreshes with one token all get the same successor', async () => {
    const user = await seedUser(ctx.db);
    const pair = await loginOk(ctx, user);
    const responses = await Promise.all(Array.from({ length: 20 }, () => postRefresh(ctx, pair.refresh_token)));
    assert.ok(responses.every((response) => response.statusCode === 200));
    assert.equal(new Set(responses.map((response) => response.json().refresh_token)).size, 1);
    assert.equal((await refreshTokensOf(ctx, user.id)).length, 2);
  });

  test('after the grace period the predecessor is reuse', async () => {
    const user = await seedUser(ctx.db);
    const pair = await loginOk(ctx, user);
    const next = (await postRefresh(ctx, pair.refresh_token)).json();
    ctx.clock.advanceSeconds(11);
    assert.equal((await postRefresh(ctx, pair.refresh_token)).statusCode, 401);
    assert.equal((await postRefresh(ctx, next.refresh_token)).statusCode, 401);
  });

  test('only the immediate predecessor qualifies: once the successor rotated, the old token is reuse', async () => {
    const user = await seedUser(ctx.db);
    const pair = await loginOk(ctx, user);
    const second = (await postRefresh(ctx, pair.refresh_token)).json();
    const third = (await postRefresh(ctx, second.refresh_token)).json();
    assert.equal((await postRefresh(ctx, pair.refresh_token)).statusCode, 401);
    assert.equal((await postRefresh(ctx, third.refresh_token)).statusCode, 401);
    assert.ok((await refreshTokensOf(ctx, user.id)).every((row) => row.revoked_at !== null));
  });

  test('a token revoked by logout gets no grace', async () => {
    const user = await seedUser(ctx.db);
    const pair = await loginOk(ctx, user);
    await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/logout', headers: { authorization: `Bearer ${pair.token}` } });
    assert.equal((await postRefresh(ctx, pair.refresh_token)).statusCode, 401);
  });
});
