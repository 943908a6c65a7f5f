import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { buildApp, type App } from '../app.js';
import { ManualClock } from '../clock.js';
import type { Database } from '../db/database.js';
import { bearer, OTHER_STRONG_PASSWORD, seedUser, type SeededUser } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { assertSessionEnded, claimsOf, getProducts, loginOk } from '../testing/auth.js';
import { SESSION_ENDED } from './authenticate.js';
import { SessionLiveness } from './session-liveness.js';

const PERIOD = 5;

/** A database whose session lookups (the statement of session-liveness.ts) are counted. */
function countingSessionLookups(db: Database): { db: Database; count: () => number } {
  let count = 0;
  const proxy = new Proxy(db, {
    get(target, property) {
      if (property === 'query') {
        return (sql: string, ...rest: unknown[]) => {
          if (sql.includes('FROM sessions s JOIN users u')) count++;
          return (target.query as (...args: unknown[]) => unknown)(sql, ...rest);
        };
      }
      const value = Reflect.get(target, property) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { db: proxy, count: () => count };
}

describe('ACCESS_TOKEN_REVOCATION=session: an ended session ends its access tokens within SESSION_CHECK_CACHE_SECONDS', () => {
  let ctx: TestContext;
  let adminToken: string;
  before(async () => {
    ctx = await createTestApp({ ACCESS_TOKEN_REVOCATION: 'session', SESSION_CHECK_CACHE_SECONDS: String(PERIOD) });
    // A real session: under this setting a token of a session that does not exist is refused.
    adminToken = (await loginOk(ctx, await seedUser(ctx.db, { role: 'admin' }))).token;
  });
  after(() => ctx.close());

  const call = (method: 'POST' | 'PATCH', url: string, token: string, payload?: Record<string, unknown>) =>
    ctx.app.inject({ method, url, headers: bearer(token), ...(payload ? { payload } : {}) });

  /** The token works now (and is cached), still right after `end` (cached), and is refused once the period has passed. */
  async function endsWithinThePeriod(token: string, end: () => Promise<void>): Promise<void> {
    assert.equal((await getProducts(ctx, token)).statusCode, 200);
    await end();
    assert.equal((await getProducts(ctx, token)).statusCode, 200, 'the answer cached before the end holds for the period');
    ctx.clock.advanceSeconds(PERIOD - 0.001);
    assert.equal((await getProducts(ctx, token)).statusCode, 200, 'still within the period');
    ctx.clock.advanceSeconds(0.001);
    assertSessionEnded(await getProducts(ctx, token));
    // Long before the token's own expiry.
    assert.ok((claimsOf(token).exp as number) * 1000 > ctx.clock.now().getTime() + 60_000);
  }

  const expectStatus = (expected: number) => (response: { statusCode: number; body: string }) => assert.equal(response.statusCode, expected, response.body);

  test('logout', async () => {
    const pair = await loginOk(ctx, await seedUser(ctx.db));
    await endsWithinThePeriod(pair.token, () => call('POST', '/api/v2/auth/logout', pair.token).then(expectStatus(204)));
  });

  test('revoke-all ends every session of the user, another user\'s stays', async () => {
    const user = await seedUser(ctx.db);
    const bystander = await loginOk(ctx, await seedUser(ctx.db));
    const first = await loginOk(ctx, user);
    const second = await loginOk(ctx, user);
    assert.equal((await getProducts(ctx, second.token)).statusCode, 200);
    await endsWithinThePeriod(first.token, () => call('POST', '/api/v2/auth/revoke-all', first.token).then(expectStatus(204)));
    assert.equal((await getProducts(ctx, second.token)).statusCode, 401);
    assert.equal((await getProducts(ctx, bystander.token)).statusCode, 200);
  });

  test('a password change ends the other sessions; the one that made it goes on', async () => {
    const user = await seedUser(ctx.db);
    const other = await loginOk(ctx, user);
    const here = await loginOk(ctx, user);
    await endsWithinThePeriod(other.token, () =>
      call('POST', '/api/v2/auth/password', here.token, { current_password: user.password, new_password: OTHER_STRONG_PASSWORD }).then(expectStatus(204)),
    );
    assert.equal((await getProducts(ctx, here.token)).statusCode, 200);
  });

  test('a password reset by an admin', async () => {
    const user = await seedUser(ctx.db);
    const pair = await loginOk(ctx, user);
    await endsWithinThePeriod(pair.token, () => call('POST', `/api/v2/admin/users/${user.id}/password`, adminToken, { password: OTHER_STRONG_PASSWORD }).then(expectStatus(204)));
  });

  test('a user\'s deactivation, and activating the user again does not revive the token', async () => {
    const user = await seedUser(ctx.db);
    const pair = await loginOk(ctx, user);
    await endsWithinThePeriod(pair.token, () => call('PATCH', `/api/v2/admin/users/${user.id}`, adminToken, { active: false }).then(expectStatus(200)));
    await call('PATCH', `/api/v2/admin/users/${user.id}`, adminToken, { active: true }).then(expectStatus(200));
    ctx.clock.advanceSeconds(PERIOD);
    assert.equal((await getProducts(ctx, pair.token)).statusCode, 401);
  });

  test('a tenant\'s deactivation: refused from the next request on (its flag is read at every request), and stays refused once active again', async () => {
    const user = await seedUser(ctx.db, { sellerId: 7 });
    const pair = await loginOk(ctx, user);
    assert.equal((await getProducts(ctx, pair.token)).statusCode, 200);
    await call('PATCH', '/api/v2/admin/sellers/7', adminToken, { active: false }).then(expectStatus(200));
    const refused = await getProducts(ctx, pair.token);
    assert.equal(refused.statusCode, 401);
    assert.match(refused.json().detail, /seller of this access token is deactivated/);
    await call('PATCH', '/api/v2/admin/sellers/7', adminToken, { active: true }).then(expectStatus(200));
    ctx.clock.advanceSeconds(PERIOD);
    const ended = await getProducts(ctx, pair.token);
    assert.equal(ended.statusCode, 401, 'the deactivation revoked the session');
    assert.equal(ended.json().detail, SESSION_ENDED);
  });

  test('one lookup per session per period: a burst on a cold entry is one query, then none until the period has passed', async () => {
    const { db, count } = countingSessionLookups(ctx.db);
    const app: App = await buildApp({ config: ctx.config, db, keys: ctx.keys, clock: ctx.clock, logger: false });
    try {
      const pair = await loginOk({ ...ctx, app }, await seedUser(ctx.db));
      const burst = () => Promise.all(Array.from({ length: 25 }, () => app.inject({ method: 'GET', url: '/api/v2/products', headers: bearer(pair.token) })));
      for (const response of await burst()) assert.equal(response.statusCode, 200);
      assert.equal(count(), 1, 'single-flight');
      for (const response of await burst()) assert.equal(response.statusCode, 200);
      assert.equal(count(), 1, 'cached');
      ctx.clock.advanceSeconds(PERIOD);
      for (const response of await burst()) assert.equal(response.statusCode, 200);
      assert.equal(count(), 2, 'looked up again once the period has passed');
    } finally {
      await app.close();
    }
  });
});

describe('the session cache', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestApp();
  });
  after(() => ctx.close());

  test('is bounded: the session looked up longest ago leaves first, and is looked up again (same answer)', async () => {
    const users: SeededUser[] = [await seedUser(ctx.db), await seedUser(ctx.db), await seedUser(ctx.db)];
    const sessions = await Promise.all(users.map(async (user) => ({ user, sid: claimsOf((await loginOk(ctx, user)).token).sid as string })));
    const { db, count } = countingSessionLookups(ctx.db);
    const clock = new ManualClock();
    const liveness = new SessionLiveness(db, clock, 60_000, 2);
    for (const { user, sid } of sessions) assert.equal(await liveness.isAlive(sid, user.id), true);
    assert.equal(liveness.size, 2);
    assert.equal(count(), 3);
    // The first left; the two others are still cached.
    assert.equal(await liveness.isAlive(sessions[2]!.sid, users[2]!.id), true);
    assert.equal(await liveness.isAlive(sessions[1]!.sid, users[1]!.id), true);
    assert.equal(count(), 3);
    assert.equal(await liveness.isAlive(sessions[0]!.sid, users[0]!.id), true);
    assert.equal(count(), 4);
    assert.equal(liveness.size, 2);
  });

  test('single-flight: 100 concurrent checks of one session are one query', async () => {
    const user = await seedUser(ctx.db);
    const sid = claimsOf((await loginOk(ctx, user)).token).sid as string;
    const { db, count } = countingSessionLookups(ctx.db);
    const liveness = new SessionLiveness(db, new ManualClock(), 5000);
    const answers = await Promise.all(Array.from({ length: 100 }, () => liveness.isAlive(sid, user.id)));
    assert.ok(answers.every((alive) => alive));
    assert.equal(count(), 1);
  });
});

describe('ACCESS_TOKEN_REVOCATION=off (the default): the spec\'s stateless access tokens', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestApp();
  });
  after(() => ctx.close());

  test('the access token still works after logout, until it expires, and no session is looked up', async () => {
    assert.equal(ctx.config.ACCESS_TOKEN_REVOCATION, 'off');
    const { db, count } = countingSessionLookups(ctx.db);
    const app: App = await buildApp({ config: ctx.config, db, keys: ctx.keys, clock: ctx.clock, logger: false });
    try {
      const pair = await loginOk({ ...ctx, app }, await seedUser(ctx.db));
      const products = () => app.inject({ method: 'GET', url: '/api/v2/products', headers: bearer(pair.token) });
      assert.equal((await app.inject({ method: 'POST', url: '/api/v2/auth/logout', headers: bearer(pair.token) })).statusCode, 204);
      ctx.clock.advanceSeconds(PERIOD * 10);
      assert.equal((await products()).statusCode, 200);
      ctx.clock.advanceSeconds(ctx.config.ACCESS_TOKEN_TTL_SECONDS - PERIOD * 10 - 1);
      assert.equal((await products()).statusCode, 200);
      assert.equal(count(), 0);
    } finally {
      await app.close();
    }
  });
});
