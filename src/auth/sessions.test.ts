import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { accessTokenFor, bearer, seedUser } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { authEventsOf, claimsOf, getProducts, loginOk, postRefresh, refreshTokensOf } from '../testing/auth.js';

describe('logout, revoke-all and sessions', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestApp();
  });
  after(() => ctx.close());

  const post = (url: string, token: string) => ctx.app.inject({ method: 'POST', url, headers: bearer(token) });
  const listSessions = (token: string) => ctx.app.inject({ method: 'GET', url: '/api/v2/auth/sessions', headers: bearer(token) });
  const deleteSession = (token: string, id: string) => ctx.app.inject({ method: 'DELETE', url: `/api/v2/auth/sessions/${id}`, headers: bearer(token) });

  test('logout: 204, the access token keeps working until it expires, the refresh token fails', async () => {
    const user = await seedUser(ctx.db);
    const other = await loginOk(ctx, user);
    const pair = await loginOk(ctx, user);
    const response = await post('/api/v2/auth/logout', pair.token);
    assert.equal(response.statusCode, 204);
    assert.equal(response.body, '');

    const rows = await refreshTokensOf(ctx, user.id);
    const mine = rows.filter((row) => row.session_id === claimsOf(pair.token).sid);
    assert.deepEqual(mine.map((row) => row.revoked_reason), ['logout']);
    // The other session's one token, unrevoked (every() over a filter that matched nothing would pass).
    assert.deepEqual(rows.filter((row) => row.session_id === claimsOf(other.token).sid).map((row) => row.revoked_at), [null]);

    // Stateless access token: still accepted after logout, until exp (+ leeway).
    assert.equal((await getProducts(ctx, pair.token)).statusCode, 200);
    ctx.clock.advanceSeconds(ctx.config.ACCESS_TOKEN_TTL_SECONDS - 1);
    assert.equal((await getProducts(ctx, pair.token)).statusCode, 200);
    ctx.clock.advanceSeconds(ctx.config.JWT_CLOCK_TOLERANCE_SECONDS + 2);
    assert.equal((await getProducts(ctx, pair.token)).statusCode, 401);

    const refresh = await postRefresh(ctx, pair.refresh_token);
    assert.equal(refresh.statusCode, 401);
    assert.equal(refresh.json().code, 'invalid_refresh_token');
    assert.ok((await authEventsOf(ctx, user.id)).some((event) => event.type === 'logout'));
  });

  test('logout twice is still 204', async () => {
    const user = await seedUser(ctx.db);
    const pair = await loginOk(ctx, user);
    assert.equal((await post('/api/v2/auth/logout', pair.token)).statusCode, 204);
    assert.equal((await post('/api/v2/auth/logout', pair.token)).statusCode, 204);
  });

  test('revoke-all: 204 and every session of the user ends', async () => {
    const user = await seedUser(ctx.db);
    const bystander = await seedUser(ctx.db);
    const pairs = [await loginOk(ctx, user), await loginOk(ctx, user), await loginOk(ctx, user)];
    const rotated = (await postRefresh(ctx, pairs[2]!.refresh_token)).json();
    const safe = await loginOk(ctx, bystander);

    const response = await post('/api/v2/auth/revoke-all', pairs[0]!.token);
    assert.equal(response.statusCode, 204);
    for (const token of [pairs[0]!.refresh_token, pairs[1]!.refresh_token, rotated.refresh_token]) {
      assert.equal((await postRefresh(ctx, token)).statusCode, 401);
    }
    assert.deepEqual(await (await listSessions(pairs[0]!.token)).json(), []);
    const { rows } = await ctx.db.query<{ open: number }>(`SELECT count(*)::int AS open FROM sessions WHERE user_id = $1 AND revoked_at IS NULL`, [user.id]);
    assert.equal(rows[0]!.open, 0);
    assert.ok((await refreshTokensOf(ctx, user.id)).some((row) => row.revoked_reason === 'revoke_all'));
    assert.equal((await postRefresh(ctx, safe.refresh_token)).statusCode, 200);
    assert.ok((await authEventsOf(ctx, user.id)).some((event) => event.type === 'revoke_all'));
  });

  test('logout and revoke-all require a bearer token', async () => {
    for (const url of ['/api/v2/auth/logout', '/api/v2/auth/revoke-all']) {
      const response = await ctx.app.inject({ method: 'POST', url });
      assert.equal(response.statusCode, 401);
      assert.equal(response.json().code, 'unauthorized');
    }
  });

  test('sessions: lists the active ones with the current one marked', async () => {
    const user = await seedUser(ctx.db);
    const laptop = await loginOk(ctx, user, { 'user-agent': 'laptop' });
    ctx.clock.advanceSeconds(5);
    const phone = await loginOk(ctx, user, { 'user-agent': 'phone' });
    const response = await listSessions(laptop.token);
    assert.equal(response.statusCode, 200);
    const sessions = response.json() as { id: string; user_agent: string; current: boolean; ip: string; created_at: string; last_used_at: string }[];
    assert.deepEqual(sessions.map((s) => [s.user_agent, s.current]), [['phone', false], ['laptop', true]]);
    assert.equal(sessions[1]!.id, claimsOf(laptop.token).sid);
    assert.equal(sessions[0]!.ip, '127.0.0.1');
    assert.equal(sessions[0]!.created_at, ctx.clock.now().toISOString());
    assert.deepEqual(Object.keys(sessions[0]!).sort(), ['created_at', 'current', 'id', 'ip', 'last_used_at', 'user_agent']);

    // Deleting the phone's session ends it; the laptop's stays.
    assert.equal((await deleteSession(laptop.token, claimsOf(phone.token).sid as string)).statusCode, 204);
    assert.deepEqual((await listSessions(laptop.token)).json().map((s: { user_agent: string }) => s.user_agent), ['laptop']);
    // The phone's token, presented again, is merely invalid: its session has ended, so it is no
    // breach, and the laptop's session goes on (issue 28).
    assert.equal((await postRefresh(ctx, phone.refresh_token)).statusCode, 401);
    assert.deepEqual((await listSessions(laptop.token)).json().map((s: { user_agent: string }) => s.user_agent), ['laptop']);
  });

  test('sessions: a deleted session disappears and its token is revoked with reason session_revoked', async () => {
    const user = await seedUser(ctx.db);
    const keep = await loginOk(ctx, user, { 'user-agent': 'keep' });
    const drop = await loginOk(ctx, user, { 'user-agent': 'drop' });
    const dropId = claimsOf(drop.token).sid as string;
    assert.equal((await deleteSession(keep.token, dropId)).statusCode, 204);
    // Deleting it again is still 204: it is the user's session, already ended.
    assert.equal((await deleteSession(keep.token, dropId)).statusCode, 204);
    const sessions = (await listSessions(keep.token)).json() as { user_agent: string }[];
    assert.deepEqual(sessions.map((s) => s.user_agent), ['keep']);
    const rows = await refreshTokensOf(ctx, user.id);
    assert.deepEqual(rows.filter((row) => row.session_id === dropId).map((row) => row.revoked_reason), ['session_revoked']);
    assert.ok((await authEventsOf(ctx, user.id)).some((event) => event.type === 'session_revoked'));
    assert.equal((await postRefresh(ctx, keep.refresh_token)).statusCode, 200);
  });

  test("sessions: another user's session, an unknown id are 404; a non-uuid is 400", async () => {
    const user = await seedUser(ctx.db);
    const intruder = await seedUser(ctx.db);
    const pair = await loginOk(ctx, user);
    const intruderPair = await loginOk(ctx, intruder);
    const theirs = await deleteSession(intruderPair.token, claimsOf(pair.token).sid as string);
    assert.equal(theirs.statusCode, 404);
    assert.equal(theirs.json().code, 'not_found');
    assert.equal((await postRefresh(ctx, pair.refresh_token)).statusCode, 200);
    assert.equal((await deleteSession(pair.token, '6f1d7a3c-1111-4222-8333-444455556666')).statusCode, 404);
    assert.equal((await deleteSession(pair.token, 'not-a-uuid')).statusCode, 400);
    // The listing never shows another user's sessions.
    const listed = (await listSessions(intruderPair.token)).json() as { id: string }[];
    assert.deepEqual(listed.map((s) => s.id), [claimsOf(intruderPair.token).sid]);
  });

  test('sessions: expired sessions are not listed; the routes need a bearer token', async () => {
    const user = await seedUser(ctx.db);
    await loginOk(ctx, user);
    ctx.clock.advanceSeconds(ctx.config.REFRESH_TOKEN_TTL_SECONDS + 1);
    const fresh = await accessTokenFor(ctx, user);
    assert.deepEqual((await listSessions(fresh)).json(), []);
    assert.equal((await ctx.app.inject({ method: 'GET', url: '/api/v2/auth/sessions' })).statusCode, 401);
    assert.equal((await ctx.app.inject({ method: 'DELETE', url: '/api/v2/auth/sessions/6f1d7a3c-1111-4222-8333-444455556666' })).statusCode, 401);
  });
});
