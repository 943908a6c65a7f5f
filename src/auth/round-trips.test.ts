import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { seedConnection, seedUser, type SeededUser } from '../testing/fixtures.js';
import { recordRoundTrips } from '../testing/round-trips.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { loginOk, postLogin, postRefresh } from '../testing/auth.js';

/**
 * The round trips to PostgreSQL of the three paths every integration calls all day (issue 33,
 * bench/results/api-paths.md): a statement more on one of them fails here, on purpose. If one is
 * needed, change the count here and the table there, with the reason.
 */
for (const revocation of ['off', 'session'] as const) {
  describe(`round trips per request, ACCESS_TOKEN_REVOCATION=${revocation}`, () => {
    let ctx: TestContext;
    let user: SeededUser;
    const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
    before(async () => {
      ctx = await createTestApp(revocation === 'session' ? { ACCESS_TOKEN_REVOCATION: 'session' } : {});
      await seedConnection(ctx.db, 7, 'north');
      user = await seedUser(ctx.db, { sellerId: 7 });
      // The first login of a process also prunes expired limiter rows (once a minute): not per request.
      await loginOk(ctx, user);
      ctx.clock.advanceSeconds(1);
    });
    after(() => ctx.close());

    test('GET /v1/{mkt}/webhooks: one statement (tenant state, marketplace access and the page)', async () => {
      const { token } = await loginOk(ctx, user);
      for (let i = 0; i < 3; i++) {
        const created = await ctx.app.inject({
          method: 'POST',
          url: '/v1/north/webhooks',
          headers: bearer(token),
          payload: { code: `hook-${i}`, name: `Hook ${i}`, topic: 'order/create', callback_url: `http://127.0.0.1:9/${i}`, headers: { 'x-shop': 'north' } },
        });
        assert.equal(created.statusCode, 201, created.body);
      }
      // With the revocation check on, the session's liveness is cached: the first read of a period looks it up.
      await ctx.app.inject({ method: 'GET', url: '/v1/north/webhooks', headers: bearer(token) });
      let body = '';
      const statements = await recordRoundTrips(async () => {
        const response = await ctx.app.inject({ method: 'GET', url: '/v1/north/webhooks?limit=2', headers: bearer(token) });
        assert.equal(response.statusCode, 200, response.body);
        assert.match(String(response.headers.link), /cursor=/);
        body = response.body;
      });
      assert.deepEqual(JSON.parse(body).map((hook: { code: string }) => hook.code), ['hook-0', 'hook-1']);
      assert.equal(statements.length, 1, statements.join('\n'));
    });

    test('POST /api/v2/auth/login: 12 round trips around the password check', async () => {
      const statements = await recordRoundTrips(async () => {
        const response = await postLogin(ctx, { username: user.username, password: user.password });
        assert.equal(response.statusCode, 200, response.body);
      });
      // The user (1); the limiter's read and locked reservation (1 + 4); the second factors (1);
      // the limiter's locked release (4); the session: account lock, session + token + audit in one statement (1).
      assert.equal(statements.length, 12, statements.join('\n'));
    });

    test('POST /api/v2/auth/refresh: 5 round trips, one transaction', async () => {
      const pair = await loginOk(ctx, user);
      ctx.clock.advanceSeconds(1);
      const statements = await recordRoundTrips(async () => {
        const response = await postRefresh(ctx, pair.refresh_token);
        assert.equal(response.statusCode, 200, response.body);
      });
      // BEGIN, owner + sessions lock + account lock, token lock, rotation (revoke, successor, touch, audit), COMMIT.
      assert.deepEqual(
        statements.map((sql) => sql.split(' ').slice(0, 2).join(' ')),
        ['BEGIN', 'SELECT o.user_id,', 'SELECT rt.id,', 'WITH revoked', 'COMMIT'],
        statements.join('\n'),
      );
    });
  });
}
