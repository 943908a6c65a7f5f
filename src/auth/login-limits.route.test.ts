import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { seedUser, type SeededUser } from '../testing/fixtures.js';
import { loginFrom as login } from '../testing/auth.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';

const statuses = (responses: { statusCode: number }[]) =>
  responses.reduce<Record<number, number>>((counts, r) => ({ ...counts, [r.statusCode]: (counts[r.statusCode] ?? 0) + 1 }), {});

// These tests send 40 logins at once to test the limits; the bound on password checks in progress
// (ARGON2_MAX_IN_PROGRESS, default 32: password-work.security.test.ts) would refuse some with 503.
const ROOM_FOR_40 = { ARGON2_MAX_IN_PROGRESS: '64' };

describe('login limits on POST /api/v2/auth/login', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestApp(ROOM_FOR_40);
  });
  after(() => ctx.close());

  test('429 is a problem with an integer Retry-After and the same figure in the body, even for the right password', async () => {
    const user = await seedUser(ctx.db);
    const ip = '198.51.100.1';
    for (let i = 0; i < 3; i++) assert.equal((await login(ctx, user.username, 'wrong', ip)).statusCode, 401);

    const limited = await login(ctx, user.username, user.password, ip);
    assert.equal(limited.statusCode, 429);
    assert.match(String(limited.headers['content-type']), /^application\/problem\+json/);
    assert.equal(limited.headers['retry-after'], '1');
    const body = limited.json();
    assert.equal(body.status, 429);
    assert.equal(body.code, 'rate_limited');
    assert.equal(body.retry_after, 1);
    assert.equal(body.token, undefined);

    ctx.clock.advance(400);
    assert.equal((await login(ctx, user.username, 'wrong', ip)).headers['retry-after'], '1'); // 0.6 s, rounded up
    ctx.clock.advance(600);
    assert.equal((await login(ctx, user.username, 'wrong', ip)).statusCode, 401);
    const next = await login(ctx, user.username, user.password, ip);
    assert.equal(next.statusCode, 429);
    assert.equal(next.headers['retry-after'], '2');
    assert.equal(next.json().retry_after, 2);

    ctx.clock.advanceSeconds(2);
    assert.equal((await login(ctx, user.username, user.password, ip)).statusCode, 200);
    // The success reset the (user, IP) counter: three free failures again.
    for (let i = 0; i < 3; i++) assert.equal((await login(ctx, user.username, 'wrong', ip)).statusCode, 401);
    assert.equal((await login(ctx, user.username, 'wrong', ip)).statusCode, 429);
  });

  test('user names are limited case-insensitively', async () => {
    const user = await seedUser(ctx.db, { username: `Mixed${process.pid}` });
    const ip = '198.51.100.2';
    for (const name of [user.username, user.username.toUpperCase(), user.username.toLowerCase()]) {
      assert.equal((await login(ctx, name, 'wrong', ip)).statusCode, 401);
    }
    assert.equal((await login(ctx, user.username.toUpperCase(), user.password, ip)).statusCode, 429);
  });

  test('the real user from another IP still logs in after 1 000 wrong passwords from one IP within 5 s', async () => {
    const user = await seedUser(ctx.db);
    const responses = [];
    for (let i = 0; i < 1000; i++) {
      responses.push(await login(ctx, user.username, `guess-${i}`, '198.51.100.66'));
      ctx.clock.advance(5);
    }
    // Failures at t=0 (3), t=1 s (the 4th, 2 s cooldown), t=3 s (the 5th, 4 s): 5 verifications in all.
    assert.deepEqual(statuses(responses), { 401: 5, 429: 995 });
    const real = await login(ctx, user.username, user.password, '203.0.113.5');
    assert.equal(real.statusCode, 200);
    assert.equal(typeof real.json().token, 'string');
  });

  test('200 user names sprayed from one IP: 50 are tried, then the IP cools down; other IPs are unaffected', async () => {
    const victim: SeededUser = await seedUser(ctx.db);
    const ip = '198.51.100.77';
    const responses = [];
    for (let i = 0; i < 200; i++) responses.push(await login(ctx, `sprayed-${process.pid}-${i}`, 'Winter2026!', ip));
    assert.deepEqual(statuses(responses), { 401: 50, 429: 150 });
    assert.equal((await login(ctx, victim.username, victim.password, ip)).statusCode, 429);
    assert.equal((await login(ctx, victim.username, victim.password, '198.51.100.78')).statusCode, 200);
  });

  // 40, not 100: every first attempt is verified now (argon2), and the shared test machine is small.
  test('40 parallel wrong passwords for one user from many IPs: each IP gets its attempt, and then one free failure only', async () => {
    const user = await seedUser(ctx.db);
    const ips = Array.from({ length: 40 }, (_, n) => `10.40.${n}.1`);
    assert.deepEqual(statuses(await Promise.all(ips.map((ip) => login(ctx, user.username, 'wrong', ip)))), { 401: 40 });
    assert.deepEqual(statuses(await Promise.all(ips.map((ip) => login(ctx, user.username, 'wrong', ip)))), { 401: 10, 429: 30 });
  });
});

describe('login limits behind proxies: X-Forwarded-For', () => {
  test('TRUST_PROXY=0: a spoofed X-Forwarded-For does not reset the limit (the socket address counts)', async () => {
    const ctx = await createTestApp({ TRUST_PROXY: '0' });
    try {
      const user = await seedUser(ctx.db);
      const spoofed = (i: number) => ({ 'x-forwarded-for': `192.0.2.${i}` });
      for (let i = 0; i < 3; i++) assert.equal((await login(ctx, user.username, 'wrong', '198.51.100.90', spoofed(i))).statusCode, 401);
      for (let i = 3; i < 10; i++) assert.equal((await login(ctx, user.username, user.password, '198.51.100.90', spoofed(i))).statusCode, 429);
    } finally {
      await ctx.close();
    }
  });

  test('TRUST_PROXY=1: the address the proxy saw counts, whatever the client put before it', async () => {
    const ctx = await createTestApp({ TRUST_PROXY: '1' });
    try {
      const user = await seedUser(ctx.db);
      const proxy = '10.0.0.1';
      const via = (forwarded: string) => ({ 'x-forwarded-for': forwarded });
      for (let i = 0; i < 3; i++) {
        assert.equal((await login(ctx, user.username, 'wrong', proxy, via(`192.0.2.${i}, 203.0.113.9`))).statusCode, 401);
      }
      assert.equal((await login(ctx, user.username, user.password, proxy, via('192.0.2.50, 203.0.113.9'))).statusCode, 429);
      assert.equal((await login(ctx, user.username, user.password, proxy, via('203.0.113.9'))).statusCode, 429);
      // Another client behind the same proxy is a different IP.
      assert.equal((await login(ctx, user.username, user.password, proxy, via('203.0.113.10'))).statusCode, 200);
    } finally {
      await ctx.close();
    }
  });
});

describe('TRUST_PROXY as a list of proxies (issue 13 item 10)', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestApp({ TRUST_PROXY: '10.0.0.0/8, 192.0.2.7' });
  });
  after(() => ctx.close());
  const via = (forwarded: string) => ({ 'x-forwarded-for': forwarded });

  test('through a listed proxy, the address it saw counts (several listed proxies in a chain too)', async () => {
    const user = await seedUser(ctx.db);
    for (let i = 0; i < 3; i++) assert.equal((await login(ctx, user.username, 'wrong', '10.0.0.1', via(`192.0.2.${i}, 203.0.113.20`))).statusCode, 401);
    assert.equal((await login(ctx, user.username, user.password, '192.0.2.7', via('203.0.113.20, 10.0.0.2'))).statusCode, 429);
    assert.equal((await login(ctx, user.username, user.password, '10.0.0.1', via('203.0.113.21'))).statusCode, 200);
  });

  test('a client that reaches Plaza directly cannot choose its address', async () => {
    const user = await seedUser(ctx.db);
    for (let i = 0; i < 3; i++) assert.equal((await login(ctx, user.username, 'wrong', '198.51.100.91', via(`203.0.113.${30 + i}`))).statusCode, 401);
    for (let i = 3; i < 10; i++) assert.equal((await login(ctx, user.username, user.password, '198.51.100.91', via(`203.0.113.${30 + i}`))).statusCode, 429);
  });

  test('the weaker hop count: TRUST_PROXY=1 lets a direct client choose the address that is counted', async () => {
    const hops = await createTestApp({ TRUST_PROXY: '1' });
    try {
      const user = await seedUser(hops.db);
      // Each request claims another address, so its (user, IP) counter never fills: documented, not wanted.
      for (let i = 0; i < 10; i++) assert.equal((await login(hops, user.username, 'wrong', '198.51.100.92', via(`203.0.113.${50 + i}`))).statusCode, 401);
    } finally {
      await hops.close();
    }
  });
});

describe('login limits on POST /api/v2/auth/login with Redis', { skip: process.env.REDIS_URL ? false : 'REDIS_URL is not set (CI sets redis://127.0.0.1:6379)' }, () => {
  let ctx: TestContext;
  // Fresh addresses for every run: the counters of earlier runs may still live in the shared Redis.
  const net = `2001:db8:${randomBytes(2).toString('hex')}`;
  before(async () => {
    ctx = await createTestApp({ REDIS_URL: process.env.REDIS_URL!, ...ROOM_FOR_40 });
  });
  after(() => ctx.close());

  test('the counters live in Redis: 3 free failures, 429 with Retry-After, a success resets', async () => {
    const user = await seedUser(ctx.db);
    const ip = `${net}:1::1`;
    for (let i = 0; i < 3; i++) assert.equal((await login(ctx, user.username, 'wrong', ip)).statusCode, 401);
    const limited = await login(ctx, user.username, user.password, `${net}:1::2`); // same /64
    assert.equal(limited.statusCode, 429);
    assert.equal(limited.headers['retry-after'], '1');
    ctx.clock.advanceSeconds(1);
    assert.equal((await login(ctx, user.username, user.password, ip)).statusCode, 200);
    assert.equal((await login(ctx, user.username, 'wrong', ip)).statusCode, 401);
    const rows = await ctx.db.query(`SELECT 1 FROM login_throttle`);
    assert.equal(rows.rowCount, 0);
  });

  test('40 parallel wrong passwords for one user from many IPs: each IP gets its attempt, and then one free failure only', async () => {
    const user = await seedUser(ctx.db);
    const ips = Array.from({ length: 40 }, (_, n) => `${net}:${(n + 16).toString(16)}::1`);
    assert.deepEqual(statuses(await Promise.all(ips.map((ip) => login(ctx, user.username, 'wrong', ip)))), { 401: 40 });
    assert.deepEqual(statuses(await Promise.all(ips.map((ip) => login(ctx, user.username, 'wrong', ip)))), { 401: 10, 429: 30 });
  });
});
