import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { resetPassword, setUserActiveById } from '../admin/users.service.js';
import { CLI_ACTOR } from '../accounts/admin-audit.repository.js';
import { OTHER_STRONG_PASSWORD, seedUser, type SeededUser } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { claimsOf, loginOk, postRefresh, refreshTokensOf } from '../testing/auth.js';
import type { TokenPair } from './token-pair.js';

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
    const tokens = await refreshTokensOf(ctx, user.id);
    assert.equal(tokens.length, 2);
    assert.ok(tokens.every((row) => row.revoked_reason !== 'security_breach_token_reuse'));
    // The shared successor rotates normally.
    assert.equal((await postRefresh(ctx, first.refresh_token)).statusCode, 200);
  });

  test('a grace replay with a DPoP proof binds nothing: whoever replays a Bearer token cannot bind the owner\'s session to its key', async () => {
    const user = await seedUser(ctx.db);
    const pair = await loginOk(ctx, user);
    const first = (await postRefresh(ctx, pair.refresh_token)).json() as TokenPair;
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    const dpop = await new SignJWT({ htm: 'POST', htu: 'http://localhost:80/api/v2/auth/refresh', jti: randomUUID() })
      .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: await exportJWK(publicKey) })
      .setIssuedAt(Math.floor(ctx.clock.now().getTime() / 1000))
      .sign(privateKey);
    const replayed = await postRefresh(ctx, pair.refresh_token, { dpop });
    assert.equal(replayed.statusCode, 200, replayed.body);
    assert.equal(replayed.json().token_type, 'Bearer', 'the successor already issued is a Bearer token');
    assert.equal(claimsOf(replayed.json().token).cnf, undefined);
    // The owner's client goes on without a proof.
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
    // The three tokens, each revoked (counted: every() is also true of no rows).
    assert.deepEqual((await refreshTokensOf(ctx, user.id)).map((row) => row.revoked_at !== null), [true, true, true]);
  });

  test('a token revoked by logout gets no grace', async () => {
    const user = await seedUser(ctx.db);
    const pair = await loginOk(ctx, user);
    await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/logout', headers: { authorization: `Bearer ${pair.token}` } });
    assert.equal((await postRefresh(ctx, pair.refresh_token)).statusCode, 401);
  });
});

/**
 * Issue 28, item 3: one stale token must not end every later session of its user. The first reuse
 * of a token of an open session is the spec's breach; a token of a session that has ended is just
 * invalid, however often it comes back.
 */
describe('replays of tokens of ended sessions', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestApp();
  });
  after(() => ctx.close());

  const bearer = (pair: TokenPair) => ({ authorization: `Bearer ${pair.token}` });
  const countEvents = async (userId: number, type: string) =>
    (await ctx.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM auth_events WHERE user_id = $1 AND type = $2`, [userId, type])).rows[0]!.n;
  const breachRevocations = async (userId: number) => (await refreshTokensOf(ctx, userId)).filter((row) => row.revoked_reason === 'security_breach_token_reuse').length;

  /** Replays every stale token `times` times (all 401), then checks that `fresh` still refreshes. */
  async function replaysLeaveFreshSessionAlone(user: SeededUser, stale: string[], times = 5): Promise<void> {
    const fresh = await loginOk(ctx, user);
    const before = await breachRevocations(user.id);
    for (let i = 0; i < times; i += 1) {
      for (const token of stale) assert.equal((await postRefresh(ctx, token)).statusCode, 401);
    }
    assert.equal(await breachRevocations(user.id), before, 'no token was revoked for reuse by the replays');
    assert.equal((await postRefresh(ctx, fresh.refresh_token)).statusCode, 200, 'the login after the ending survives the replays');
  }

  test('the first reuse of a rotated token of an open session still revokes every token of the user', async () => {
    const user = await seedUser(ctx.db);
    const stolen = await loginOk(ctx, user);
    const other = await loginOk(ctx, user);
    await postRefresh(ctx, stolen.refresh_token);
    assert.equal((await postRefresh(ctx, stolen.refresh_token)).statusCode, 401);
    const rows = await refreshTokensOf(ctx, user.id);
    assert.deepEqual(rows.map((row) => row.revoked_at !== null), [true, true, true], 'every token of the user is revoked');
    assert.equal(rows.find((row) => row.session_id !== rows[0]!.session_id)!.revoked_reason, 'security_breach_token_reuse');
    assert.equal((await postRefresh(ctx, other.refresh_token)).statusCode, 401);
    assert.equal(await countEvents(user.id, 'refresh_reuse_detected'), 1);
  });

  test('after a breach, a new login survives 5 replays of the stolen token', async () => {
    const user = await seedUser(ctx.db);
    const stolen = await loginOk(ctx, user);
    const next = (await postRefresh(ctx, stolen.refresh_token)).json() as TokenPair;
    assert.equal((await postRefresh(ctx, stolen.refresh_token)).statusCode, 401);
    assert.equal(await countEvents(user.id, 'refresh_reuse_detected'), 1);
    await replaysLeaveFreshSessionAlone(user, [stolen.refresh_token, next.refresh_token]);
    assert.equal(await countEvents(user.id, 'refresh_reuse_detected'), 1, 'the breach was recorded once');
  });

  test('a session ended by logout: its tokens are invalid, nothing else is revoked', async () => {
    const user = await seedUser(ctx.db);
    const first = await loginOk(ctx, user);
    const second = (await postRefresh(ctx, first.refresh_token)).json() as TokenPair;
    const other = await loginOk(ctx, user);
    assert.equal((await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/logout', headers: bearer(second) })).statusCode, 204);
    await replaysLeaveFreshSessionAlone(user, [first.refresh_token, second.refresh_token]);
    assert.equal((await postRefresh(ctx, other.refresh_token)).statusCode, 200, 'the session open before the logout lives on too');
  });

  test('sessions ended by revoke-all', async () => {
    const user = await seedUser(ctx.db);
    const first = await loginOk(ctx, user);
    const second = (await postRefresh(ctx, first.refresh_token)).json() as TokenPair;
    assert.equal((await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/revoke-all', headers: bearer(second) })).statusCode, 204);
    await replaysLeaveFreshSessionAlone(user, [first.refresh_token, second.refresh_token]);
  });

  test('sessions ended by a password change, and by a reset', async () => {
    const user = await seedUser(ctx.db);
    const old = await loginOk(ctx, user);
    const oldNext = (await postRefresh(ctx, old.refresh_token)).json() as TokenPair;
    const changer = await loginOk(ctx, user);
    const newPassword = OTHER_STRONG_PASSWORD;
    const change = await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/password', headers: bearer(changer), payload: { current_password: user.password, new_password: newPassword } });
    assert.equal(change.statusCode, 204);
    const changed = { ...user, password: newPassword };
    await replaysLeaveFreshSessionAlone(changed, [old.refresh_token, oldNext.refresh_token]);

    const beforeReset = await loginOk(ctx, changed);
    const beforeResetNext = (await postRefresh(ctx, beforeReset.refresh_token)).json() as TokenPair;
    assert.ok(await resetPassword(ctx.db, user.id, user.password, CLI_ACTOR, ctx.clock.now(), { minScore: 3, field: 'password' }));
    await replaysLeaveFreshSessionAlone(user, [beforeReset.refresh_token, beforeResetNext.refresh_token, old.refresh_token]);
  });

  test('sessions ended by a deactivation, once the user is active again', async () => {
    const user = await seedUser(ctx.db);
    const first = await loginOk(ctx, user);
    const second = (await postRefresh(ctx, first.refresh_token)).json() as TokenPair;
    await setUserActiveById(ctx.db, user.id, false, CLI_ACTOR, ctx.clock.now());
    await setUserActiveById(ctx.db, user.id, true, CLI_ACTOR, ctx.clock.now());
    await replaysLeaveFreshSessionAlone(user, [first.refresh_token, second.refresh_token]);
  });

  test('a replay loop writes at most one audit row per session and hour', async () => {
    const user = await seedUser(ctx.db);
    const first = await loginOk(ctx, user);
    const second = (await postRefresh(ctx, first.refresh_token)).json() as TokenPair;
    await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/logout', headers: bearer(second) });
    const loop = async (n: number) => {
      for (let i = 0; i < n; i += 1) {
        assert.equal((await postRefresh(ctx, i % 2 === 0 ? first.refresh_token : second.refresh_token)).statusCode, 401);
      }
    };
    await loop(40);
    assert.equal(await countEvents(user.id, 'refresh_replay_refused'), 1);
    ctx.clock.advanceSeconds(3599);
    await loop(10);
    assert.equal(await countEvents(user.id, 'refresh_replay_refused'), 1, 'still within the hour');
    ctx.clock.advanceSeconds(1);
    await loop(10);
    assert.equal(await countEvents(user.id, 'refresh_replay_refused'), 2, 'one more in the next hour');

    // After a breach, its own row is the hour's row of the session.
    const victim = await seedUser(ctx.db);
    const stolen = await loginOk(ctx, victim);
    await postRefresh(ctx, stolen.refresh_token);
    for (let i = 0; i < 20; i += 1) assert.equal((await postRefresh(ctx, stolen.refresh_token)).statusCode, 401);
    assert.equal(await countEvents(victim.id, 'refresh_reuse_detected'), 1);
    assert.equal(await countEvents(victim.id, 'refresh_replay_refused'), 0);
  });

  test('parallel replays of one rotated token revoke once', async () => {
    const user = await seedUser(ctx.db);
    const stolen = await loginOk(ctx, user);
    await postRefresh(ctx, stolen.refresh_token);
    const responses = await Promise.all(Array.from({ length: 20 }, () => postRefresh(ctx, stolen.refresh_token)));
    assert.ok(responses.every((response) => response.statusCode === 401));
    assert.equal(await countEvents(user.id, 'refresh_reuse_detected'), 1, 'one breach');
    assert.equal(await countEvents(user.id, 'refresh_replay_refused'), 0, 'the breach is the hour\'s only row');
    const fresh = await loginOk(ctx, user);
    await Promise.all(Array.from({ length: 10 }, () => postRefresh(ctx, stolen.refresh_token)));
    assert.equal((await postRefresh(ctx, fresh.refresh_token)).statusCode, 200);
  });
});
