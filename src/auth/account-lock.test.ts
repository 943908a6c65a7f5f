import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Queryable } from '../db/database.js';
import { accessTokenFor, bearer, seedConnection, seedUser, type SeededUser } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { eventually } from '../testing/wait.js';
import { loginOk, postLogin, postRefresh, refreshTokensOf } from '../testing/auth.js';
import { hashPassword } from './passwords.js';
import { revokeAllOfUser } from './sessions.repository.js';

/**
 * A login verifies the password before its transaction (the hash is slow), and a refresh reads the
 * user before it rotates: a password reset or a deactivation that runs in between must either be
 * seen by them or revoke what they issue. Each test holds the writer's transaction open at the
 * point where it has updated the row and revoked the sessions, starts the login or refresh, lets it
 * run into the writer's lock, then commits the writer: no session may survive.
 */
describe('a login or refresh racing a reset or deactivation leaves no live session', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestApp();
  });
  after(() => ctx.close());

  const liveTokens = async (userId: number) => (await refreshTokensOf(ctx, userId)).filter((token) => token.revoked_at === null);

  /** Waits (up to 5 s) until `waiters` statements of this database wait for a lock, or `settled` resolves first. */
  async function untilWaiting(waiters: number, settled: Promise<unknown>): Promise<void> {
    let done = false;
    void settled.finally(() => (done = true));
    await eventually(async () => {
      if (done) return true;
      const { rows } = await ctx.db.query<{ n: number }>(
        `SELECT count(DISTINCT l.pid)::int AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE NOT l.granted AND a.datname = current_database()`,
      );
      return rows[0]!.n >= waiters;
    }, { timeoutMs: 5000 });
  }

  /** Runs `writer` in a transaction that stays open until `release` is called. */
  async function holdOpen(writer: (tx: Queryable) => Promise<void>): Promise<{ release: () => void; done: Promise<void> }> {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let wrote!: () => void;
    const written = new Promise<void>((resolve) => (wrote = resolve));
    const done = ctx.db.transaction(async (tx) => {
      await writer(tx);
      wrote();
      await gate;
    });
    await Promise.race([written, done]);
    return { release, done };
  }

  /** Holds `writer`'s transaction open until `during` has run into its locks, then commits it; returns during's result. */
  async function race<T>(writer: (tx: Queryable) => Promise<void>, during: () => Promise<T>): Promise<T> {
    const held = await holdOpen(writer);
    const result = during();
    await untilWaiting(1, result);
    held.release();
    await held.done;
    return result;
  }

  const resetPasswordOf = (user: SeededUser) => async (tx: Queryable) => {
    await tx.query(`UPDATE users SET password_hash = $2 WHERE id = $1`, [user.id, await hashPassword('a new password entirely')]);
    await revokeAllOfUser(tx, user.id, 'password_changed', ctx.clock.now());
  };
  const deactivate = (user: SeededUser) => async (tx: Queryable) => {
    await tx.query(`UPDATE users SET active = false WHERE id = $1`, [user.id]);
    await revokeAllOfUser(tx, user.id, 'user_deactivated', ctx.clock.now());
  };

  test('a login whose password a reset changes meanwhile: 401, no session', async () => {
    const user = await seedUser(ctx.db);
    const response = await race(resetPasswordOf(user), () => postLogin(ctx, { username: user.username, password: user.password }));
    assert.equal(response.statusCode, 401, response.body);
    assert.equal(response.json().code, 'invalid_credentials');
    assert.deepEqual(await liveTokens(user.id), []);
  });

  test('a login while the user is deactivated: 403, no session, none after activation either', async () => {
    const user = await seedUser(ctx.db);
    const response = await race(deactivate(user), () => postLogin(ctx, { username: user.username, password: user.password }));
    assert.equal(response.statusCode, 403, response.body);
    assert.equal(response.json().code, 'user_inactive');
    await ctx.db.query(`UPDATE users SET active = true WHERE id = $1`, [user.id]);
    assert.deepEqual(await liveTokens(user.id), []);
  });

  test("a login while the user's seller is deactivated: 403, no session", async () => {
    await seedConnection(ctx.db, 7301, 'lockmkt');
    const user = await seedUser(ctx.db, { sellerId: 7301 });
    const response = await race(
      async (tx) => {
        await tx.query(`UPDATE sellers SET active = false WHERE id = 7301`);
      },
      () => postLogin(ctx, { username: user.username, password: user.password }),
    );
    assert.equal(response.statusCode, 403, response.body);
    assert.equal(response.json().code, 'user_inactive');
    assert.deepEqual(await liveTokens(user.id), []);
  });

  test('a refresh under way when a reset comes: the reset revokes its successor', async () => {
    const user = await seedUser(ctx.db);
    const pair = await loginOk(ctx, user);
    const [token] = await refreshTokensOf(ctx, user.id);
    // The refresh is held on its token's row; the reset starts and waits too; then the token is let go.
    const held = await holdOpen(async (tx) => {
      await tx.query(`SELECT 1 FROM refresh_tokens WHERE id = $1 FOR UPDATE`, [token!.id]);
    });
    const refreshing = postRefresh(ctx, pair.refresh_token);
    await untilWaiting(1, refreshing);
    const reset = ctx.db.transaction(resetPasswordOf(user));
    await untilWaiting(2, Promise.race([refreshing, reset]));
    held.release();
    await held.done;
    const response = await refreshing;
    await reset;
    assert.equal(response.statusCode, 200, response.body);
    assert.deepEqual(await liveTokens(user.id), []);
    assert.equal((await postRefresh(ctx, response.json().refresh_token)).statusCode, 401);
  });

  test('a refresh under way when a logout, a revoke-all or the end of its session comes: the successor is revoked with the rest', async () => {
    for (const end of ['logout', 'revoke-all', 'end the session']) {
      const user = await seedUser(ctx.db);
      const pair = await loginOk(ctx, user);
      const other = await loginOk(ctx, user);
      const sessionId = (await refreshTokensOf(ctx, user.id))[0]!.session_id;
      // The refresh is held on its session's row, its successor written but not committed.
      const held = await holdOpen(async (tx) => {
        await tx.query(`SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE`, [sessionId]);
      });
      const refreshing = postRefresh(ctx, pair.refresh_token);
      await untilWaiting(1, refreshing);
      const ending =
        end === 'end the session'
          ? ctx.app.inject({ method: 'DELETE', url: `/api/v2/auth/sessions/${sessionId}`, headers: bearer(other.token) })
          : ctx.app.inject({ method: 'POST', url: `/api/v2/auth/${end}`, headers: bearer(pair.token) });
      await untilWaiting(2, Promise.race([refreshing, ending]));
      held.release();
      await held.done;
      const [refreshed, ended] = await Promise.all([refreshing, ending]);
      assert.equal(refreshed.statusCode, 200, `${end}: ${refreshed.body}`);
      assert.equal(ended.statusCode, 204, `${end}: ${ended.body}`);
      assert.equal((await postRefresh(ctx, refreshed.json().refresh_token)).statusCode, 401, `${end}: the successor still refreshes`);
    }
  });
});

describe('logins, refreshes, resets and deactivations all at once', () => {
  let ctx: TestContext;
  before(async () => {
    // Generous limits: the refusals here come from the resets and deactivations, not the limiter.
    ctx = await createTestApp({ LOGIN_FREE_FAILURES_PER_USER_IP: '1000', LOGIN_FAILURES_PER_USER_PER_HOUR: '1000', LOGIN_FAILURES_PER_IP_PER_HOUR: '1000' });
  });
  after(() => ctx.close());

  test('no 5xx (no deadlock), and once settled no live refresh token of an inactive user, seller or marketplace', async () => {
    await seedConnection(ctx.db, 7302, 'LOCKALL');
    const admin = bearer(await accessTokenFor(ctx, await seedUser(ctx.db, { role: 'admin', sellerId: 1 })));
    const sellers = await Promise.all([1, 2, 3, 4].map(() => seedUser(ctx.db, { sellerId: 7302 })));
    const users: SeededUser[] = [...sellers, await seedUser(ctx.db, { sellerId: 7302, role: 'marketplace', marketplaceCode: 'LOCKALL' })];
    const statuses: number[] = [];
    const noted = <R extends { statusCode: number }>(response: R) => (statuses.push(response.statusCode), response);
    const login = (user: SeededUser) => postLogin(ctx, { username: user.username, password: user.password }).then(noted);
    const admin$ = (method: 'POST' | 'PATCH', url: string, payload: object) => ctx.app.inject({ method, url, headers: admin, payload }).then(noted);

    for (let round = 0; round < 5; round++) {
      const sessions = await Promise.all(users.map(login));
      const reset = sellers[round % 4]!;
      await Promise.all([
        ...users.flatMap((user) => [login(user), login(user), login(user)]),
        ...sessions.filter((response) => response.statusCode === 200).map((response) => postRefresh(ctx, response.json().refresh_token).then(noted)),
        admin$('POST', `/api/v2/admin/users/${reset.id}/password`, { password: reset.password }),
        admin$('PATCH', `/api/v2/admin/users/${sellers[(round + 1) % 4]!.id}`, { active: round % 2 === 0 }),
        admin$('PATCH', '/api/v2/admin/sellers/7302', { active: round % 2 === 1 }),
        admin$('PATCH', '/api/v2/admin/marketplaces/LOCKALL', { active: round % 2 === 1 }),
      ]);
      const { rows } = await ctx.db.query<{ id: number; usable: boolean; live: number }>(
        `SELECT u.id, u.active AND CASE u.role WHEN 'marketplace' THEN m.active ELSE s.active END AS usable,
                (SELECT count(*)::int FROM refresh_tokens rt WHERE rt.user_id = u.id AND rt.revoked_at IS NULL) AS live
           FROM users u JOIN sellers s ON s.id = u.seller_id LEFT JOIN marketplaces m ON m.code = u.marketplace_code
          WHERE u.seller_id = 7302`,
      );
      for (const row of rows) if (!row.usable) assert.equal(row.live, 0, `round ${round}: ${JSON.stringify(row)}`);
    }
    assert.ok(statuses.every((status) => status < 500), JSON.stringify(statuses.filter((status) => status >= 500)));
    // The mix did happen: sessions issued, and refusals from the resets and deactivations.
    assert.ok(statuses.includes(200) && statuses.includes(403), JSON.stringify(statuses));
  });
});
