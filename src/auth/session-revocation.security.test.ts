import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { ManualClock } from '../clock.js';
import type { Queryable } from '../db/database.js';
import { accessTokenFor, bearer, seedUser } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { assertSessionEnded, claimsOf, getProducts, loginOk } from '../testing/auth.js';
import { SESSION_ENDED } from './authenticate.js';
import { SessionLiveness } from './session-liveness.js';

const PERIOD = 5;

describe('ACCESS_TOKEN_REVOCATION=session against hostile use', () => {
  let ctx: TestContext;
  let adminToken: string;
  before(async () => {
    ctx = await createTestApp({ ACCESS_TOKEN_REVOCATION: 'session', SESSION_CHECK_CACHE_SECONDS: String(PERIOD) });
    adminToken = (await loginOk(ctx, await seedUser(ctx.db, { role: 'admin' }))).token;
  });
  after(() => ctx.close());

  test('a well-signed token naming a session that does not exist is refused', async () => {
    const user = await seedUser(ctx.db);
    assertSessionEnded(await getProducts(ctx, await accessTokenFor(ctx, user, randomUUID())));
  });

  test('a token pairing another user\'s live session with its own user is refused, and does not disturb that session', async () => {
    const victim = await seedUser(ctx.db);
    const attacker = await seedUser(ctx.db);
    const live = await loginOk(ctx, victim);
    const forged = await accessTokenFor(ctx, attacker, claimsOf(live.token).sid as string);
    assertSessionEnded(await getProducts(ctx, forged));
    assert.equal((await getProducts(ctx, live.token)).statusCode, 200);
    // And once the victim's answer is cached, the attacker's token is still not served from it.
    assertSessionEnded(await getProducts(ctx, forged));
  });

  test('a stolen token replayed in a burst after logout: every request refused', async () => {
    const pair = await loginOk(ctx, await seedUser(ctx.db));
    assert.equal((await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/logout', headers: bearer(pair.token) })).statusCode, 204);
    ctx.clock.advanceSeconds(PERIOD);
    const burst = await Promise.all(Array.from({ length: 30 }, () => getProducts(ctx, pair.token)));
    for (const response of burst) assertSessionEnded(response);
  });

  test('a DPoP-bound token of an ended session is refused with the DPoP challenge, as its client sent it', async () => {
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    const jwk = await exportJWK(publicKey);
    const proof = (htm: string, htu: string, accessToken?: string) =>
      new SignJWT({ htm, htu, jti: randomUUID(), ...(accessToken && { ath: createHash('sha256').update(accessToken).digest('base64url') }) })
        .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk })
        .setIssuedAt(Math.floor(ctx.clock.now().getTime() / 1000))
        .sign(privateKey);
    const pair = await loginOk(ctx, await seedUser(ctx.db), { dpop: await proof('POST', 'http://localhost:80/api/v2/auth/login') });
    assert.equal(pair.token_type, 'DPoP');
    const dpopHeaders = async (htm: string, path: string) => ({ authorization: `DPoP ${pair.token}`, dpop: await proof(htm, `http://localhost:80${path}`, pair.token) });
    assert.equal((await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/logout', headers: await dpopHeaders('POST', '/api/v2/auth/logout') })).statusCode, 204);
    ctx.clock.advanceSeconds(PERIOD);
    const response = await ctx.app.inject({ method: 'GET', url: '/api/v2/products', headers: await dpopHeaders('GET', '/api/v2/products') });
    assert.equal(response.statusCode, 401);
    assert.equal(response.json().detail, SESSION_ENDED);
    assert.match(String(response.headers['www-authenticate']), /^DPoP error="invalid_token", algs="/);
  });

  test('the user\'s deletion ends the token (its sessions go with it)', async () => {
    const user = await seedUser(ctx.db);
    const pair = await loginOk(ctx, user);
    assert.equal((await getProducts(ctx, pair.token)).statusCode, 200);
    assert.equal((await ctx.app.inject({ method: 'DELETE', url: `/api/v2/admin/users/${user.id}`, headers: bearer(adminToken) })).statusCode, 204);
    ctx.clock.advanceSeconds(PERIOD);
    assertSessionEnded(await getProducts(ctx, pair.token));
  });

  test('API keys are unaffected: they have no session, and a revoked key is refused at once as before', async () => {
    const created = await ctx.app.inject({ method: 'POST', url: '/api/v2/admin/api-keys', headers: bearer(adminToken), payload: { name: 'machine', role: 'seller', seller_id: 1 } });
    assert.equal(created.statusCode, 201, created.body);
    const { id, key } = created.json() as { id: number; key: string };
    assert.equal((await getProducts(ctx, key)).statusCode, 200);
    assert.equal((await ctx.app.inject({ method: 'DELETE', url: `/api/v2/admin/api-keys/${id}`, headers: bearer(adminToken) })).statusCode, 204);
    const refused = await getProducts(ctx, key);
    assert.equal(refused.statusCode, 401);
    assert.match(refused.json().detail, /API key/);
  });
});

describe('the session cache fails closed', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestApp();
  });
  after(() => ctx.close());

  test('a failed lookup answers no one "alive" and is not cached: its waiters get the error, the next check asks again', async () => {
    const user = await seedUser(ctx.db);
    const sid = claimsOf((await loginOk(ctx, user)).token).sid as string;
    let failures = 1;
    let queries = 0;
    const flaky: Queryable = {
      query: (async (sql: string, params?: readonly unknown[]) => {
        queries++;
        if (failures-- > 0) throw new Error('connection lost');
        return ctx.db.query(sql, params);
      }) as Queryable['query'],
      exec: (sql) => ctx.db.exec(sql),
    };
    const liveness = new SessionLiveness(flaky, new ManualClock(), 5000);
    const outcomes = await Promise.allSettled(Array.from({ length: 10 }, () => liveness.isAlive(sid, user.id)));
    assert.ok(outcomes.every((outcome) => outcome.status === 'rejected'));
    assert.equal(queries, 1);
    assert.equal(liveness.size, 0);
    assert.equal(await liveness.isAlive(sid, user.id), true);
    assert.equal(queries, 2);
  });

  test('pushing a dead session out of a full cache does not revive it: it is looked up again', async () => {
    const user = await seedUser(ctx.db);
    const dead = await loginOk(ctx, user);
    const live = await loginOk(ctx, user);
    await ctx.db.query(`UPDATE sessions SET revoked_at = now() WHERE id = $1`, [claimsOf(dead.token).sid]);
    const liveness = new SessionLiveness(ctx.db, new ManualClock(), 60_000, 1);
    assert.equal(await liveness.isAlive(claimsOf(dead.token).sid as string, user.id), false);
    assert.equal(await liveness.isAlive(claimsOf(live.token).sid as string, user.id), true);
    assert.equal(liveness.size, 1);
    assert.equal(await liveness.isAlive(claimsOf(dead.token).sid as string, user.id), false);
  });

  test('a clock set back does not stretch a cached answer', async () => {
    const user = await seedUser(ctx.db);
    const pair = await loginOk(ctx, user);
    const sid = claimsOf(pair.token).sid as string;
    const clock = new ManualClock();
    const liveness = new SessionLiveness(ctx.db, clock, 5000);
    assert.equal(await liveness.isAlive(sid, user.id), true);
    await ctx.db.query(`UPDATE sessions SET revoked_at = now() WHERE id = $1`, [sid]);
    clock.advance(-1);
    assert.equal(await liveness.isAlive(sid, user.id), false);
  });
});
