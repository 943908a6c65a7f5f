import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../config.js';
import { DatabaseUnavailableError } from '../db/database.js';
import { toAppError } from '../http/problem.js';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.js';
import { limitRulesOf, LOGIN_LIMIT_WINDOW_SECONDS } from './login-limit-rules.js';
import type { LimitDecision } from './login-limit-types.js';
import { pruneLoginThrottle } from './login-limits.postgres.js';
import { createLoginLimiter, type LoginLimiter } from './login-limits.js';

const counterKey = randomBytes(32);

// The same rules against every store: the database table always, Redis when REDIS_URL is set.
const stores = [
  { name: 'database', redisUrl: undefined as string | undefined, skip: false as string | false },
  {
    name: 'redis',
    redisUrl: process.env.REDIS_URL,
    skip: process.env.REDIS_URL ? (false as const) : 'REDIS_URL is not set (CI sets redis://127.0.0.1:6379)',
  },
];

const T0 = Date.parse('2026-03-01T10:00:00Z');
const at = (seconds: number) => new Date(T0 + seconds * 1000);
let unique = 0;
// The limiter counts accounts as the user lookup names them (login-account.ts).
const name = (label: string) => `user:${label}-${process.pid}-${++unique}`;
const allowed: LimitDecision = { allowed: true };
const refused = (retryAfterSeconds: number): LimitDecision => ({ allowed: false, retryAfterSeconds });

for (const store of stores) {
  describe(`login limits on the ${store.name} store`, { skip: store.skip }, () => {
    let db: TestDatabase;
    let limiter: LoginLimiter;
    before(async () => {
      db = await createTestDatabase();
      const config = loadConfig({ LOG_LEVEL: 'silent', REDIS_KEY_PREFIX: `plaza-test:${randomBytes(6).toString('hex')}:`, ...(store.redisUrl ? { REDIS_URL: store.redisUrl } : {}) });
      limiter = createLoginLimiter({ config, db, counterKey });
    });
    after(async () => {
      await limiter.close();
      await db.close();
    });

    test('one user from one IP: 3 free failures, then cooldowns of 1, 2, 4 … 512 s, capped at 900 s', async () => {
      const user = name('seq');
      const ip = '198.51.100.7';
      for (let i = 0; i < 3; i++) assert.deepEqual(await limiter.attempt(user, ip, at(0)), allowed);
      assert.deepEqual(await limiter.attempt(user, ip, at(0)), refused(1));

      const waits: number[] = [];
      let now = 1;
      for (let failure = 4; failure <= 15; failure++) {
        assert.deepEqual(await limiter.attempt(user, ip, at(now)), allowed, `failure ${failure} at ${now} s`);
        const decision = await limiter.attempt(user, ip, at(now));
        assert.equal(decision.allowed, false);
        const wait = (decision as { retryAfterSeconds: number }).retryAfterSeconds;
        waits.push(wait);
        now += wait;
      }
      assert.deepEqual(waits, [2, 4, 8, 16, 32, 64, 128, 256, 512, 900, 900, 900]);
    });

    test('Retry-After counts whole seconds, rounded up, and the cooldown ends exactly on time', async () => {
      const user = name('round');
      const ip = '198.51.100.8';
      for (let i = 0; i < 4; i++) await limiter.attempt(user, ip, at(0));
      await limiter.attempt(user, ip, at(1)); // the 4th failure: 2 s from t=1
      assert.deepEqual(await limiter.attempt(user, ip, at(1.5)), refused(2));
      assert.deepEqual(await limiter.attempt(user, ip, at(2.999)), refused(1));
      assert.deepEqual(await limiter.attempt(user, ip, at(3)), allowed);
    });

    test('a success resets the (user, IP) counter', async () => {
      const user = name('reset');
      const ip = '198.51.100.9';
      for (let i = 0; i < 3; i++) await limiter.attempt(user, ip, at(0));
      assert.deepEqual(await limiter.attempt(user, ip, at(0)), refused(1));
      assert.deepEqual(await limiter.attempt(user, ip, at(1)), allowed);
      await limiter.succeeded(user, ip, at(1));
      for (let i = 0; i < 3; i++) assert.deepEqual(await limiter.attempt(user, ip, at(1)), allowed);
      assert.deepEqual(await limiter.attempt(user, ip, at(1)), refused(1));
    });

    test('while cooling down, even the attempt that would succeed is refused and reserves nothing', async () => {
      const user = name('cool');
      const ip = '198.51.100.10';
      for (let i = 0; i < 3; i++) await limiter.attempt(user, ip, at(0));
      for (let i = 0; i < 20; i++) assert.deepEqual(await limiter.attempt(user, ip, at(0.5)), refused(1));
      // The refusals were not counted: the next failure is the 4th (2 s), not the 24th.
      assert.deepEqual(await limiter.attempt(user, ip, at(1)), allowed);
      assert.deepEqual(await limiter.attempt(user, ip, at(1)), refused(2));
    });

    test('failures from many IPs never refuse a fresh IP; past 10 an hour, each IP gets one free failure', async () => {
      const user = name('spray');
      const ip = (n: number) => `203.0.113.${n}`;
      // Before the account's hourly count is reached, an IP has its 3 free failures.
      for (let n = 1; n <= 10; n++) assert.deepEqual(await limiter.attempt(user, ip(n), at(0)), allowed);
      assert.deepEqual(await limiter.attempt(user, ip(1), at(0)), allowed);
      // 11 failures: under attack. A fresh IP still gets its first attempt, then cools down at once.
      for (let n = 11; n <= 40; n++) {
        assert.deepEqual(await limiter.attempt(user, ip(n), at(0)), allowed, `first attempt from ${ip(n)}`);
        assert.deepEqual(await limiter.attempt(user, ip(n), at(0)), refused(1), `second attempt from ${ip(n)}`);
      }
      // The cooldowns after it are the usual ones: 1 s until the IP's 3rd failure, then doubling.
      assert.deepEqual(await limiter.attempt(user, ip(11), at(1)), allowed);
      assert.deepEqual(await limiter.attempt(user, ip(11), at(1)), refused(1));
      assert.deepEqual(await limiter.attempt(user, ip(11), at(2)), allowed);
      assert.deepEqual(await limiter.attempt(user, ip(11), at(2)), refused(1));
      assert.deepEqual(await limiter.attempt(user, ip(11), at(3)), allowed);
      assert.deepEqual(await limiter.attempt(user, ip(11), at(3)), refused(2));
      // An hour after the first failure the account's window is over: 3 free failures per IP again.
      const later = LOGIN_LIMIT_WINDOW_SECONDS;
      for (let i = 0; i < 3; i++) assert.deepEqual(await limiter.attempt(user, ip(99), at(later)), allowed);
      assert.deepEqual(await limiter.attempt(user, ip(99), at(later)), refused(1));
    });

    test('one IP over many users: 50 failures per hour, then cooldowns; other IPs are not affected', async () => {
      const ip = '192.0.2.77';
      const users = Array.from({ length: 52 }, () => name('stuff'));
      for (let n = 0; n < 50; n++) assert.deepEqual(await limiter.attempt(users[n]!, ip, at(0)), allowed);
      assert.deepEqual(await limiter.attempt(users[50]!, ip, at(0)), refused(1));
      assert.deepEqual(await limiter.attempt(users[50]!, '192.0.2.78', at(0)), allowed);
      assert.deepEqual(await limiter.attempt(users[51]!, ip, at(1)), allowed);
      assert.deepEqual(await limiter.attempt(users[51]!, ip, at(1)), refused(2));
    });

    test('a success takes back its own reservation on the user counter, and nothing more', async () => {
      const user = name('undo');
      for (let n = 1; n <= 9; n++) await limiter.attempt(user, `203.0.114.${n}`, at(0));
      // The real user's attempt is the 10th reservation (which would put the account under attack) but succeeds.
      assert.deepEqual(await limiter.attempt(user, '203.0.114.100', at(0)), allowed);
      await limiter.succeeded(user, '203.0.114.100', at(0));
      // 9 failures: a fresh IP still has its free failures (its first one is the account's 10th) …
      assert.deepEqual(await limiter.attempt(user, '203.0.114.50', at(0)), allowed);
      assert.deepEqual(await limiter.attempt(user, '203.0.114.50', at(0)), allowed);
      // … while 10 put the account under attack: one free failure per IP.
      assert.deepEqual(await limiter.attempt(user, '203.0.114.51', at(0)), allowed);
      assert.deepEqual(await limiter.attempt(user, '203.0.114.51', at(0)), refused(1));
    });

    test('a success leaves no cooldown: its own reservation on a busy IP cooled the IP, the success takes it back', async () => {
      const ip = '192.0.2.99';
      // 50 failures from one IP (a shared office NAT with an attacker in it): the IP cools down for 1 s.
      for (let n = 0; n < 50; n++) assert.deepEqual(await limiter.attempt(name('nat'), ip, at(0)), allowed);
      const user = name('office');
      assert.deepEqual(await limiter.attempt(user, ip, at(1)), allowed);
      // That reservation was the IP's 51st failure: without the success the IP would now wait 2 s.
      assert.deepEqual(await limiter.attempt(name('colleague'), ip, at(1)), refused(2));
      await limiter.succeeded(user, ip, at(1));
      // The success takes its own failure and the cooldown back: the next person is let in …
      assert.deepEqual(await limiter.attempt(name('colleague'), ip, at(1)), allowed);
      // … and the failures of others still count: that one was the 51st again, so the next attempt waits 2 s.
      assert.deepEqual(await limiter.attempt(name('colleague'), ip, at(1)), refused(2));
    });

    test('100 parallel attempts for one user from one IP reserve exactly 3', async () => {
      const user = name('parallel-pair');
      const decisions = await Promise.all(Array.from({ length: 100 }, () => limiter.attempt(user, '198.51.100.20', at(0))));
      assert.equal(decisions.filter((d) => d.allowed).length, 3);
      assert.ok(decisions.every((d) => d.allowed || d.retryAfterSeconds === 1));
    });

    test('100 parallel attempts for one user from 100 IPs: none refused, and exactly 10 IPs keep their free failures', async () => {
      const user = name('parallel-user');
      const ips = Array.from({ length: 100 }, (_, n) => `10.20.${n}.1`);
      const decisions = await Promise.all(ips.map((ip) => limiter.attempt(user, ip, at(0))));
      assert.equal(decisions.filter((d) => d.allowed).length, 100);
      // The account counter serialised them: the first 10 found it below its hourly count.
      const second = await Promise.all(ips.map((ip) => limiter.attempt(user, ip, at(0))));
      assert.equal(second.filter((d) => d.allowed).length, 10);
    });

    test('100 parallel attempts from one IP for 100 users reserve exactly 50', async () => {
      const decisions = await Promise.all(Array.from({ length: 100 }, () => limiter.attempt(name('parallel-ip'), '192.0.2.200', at(0))));
      assert.equal(decisions.filter((d) => d.allowed).length, 50);
    });

    test('parallel attempts and successes on shared counters all finish (no deadlock, no error)', async () => {
      const users = Array.from({ length: 4 }, () => name('mixed'));
      const ips = ['192.0.2.150', '192.0.2.151', '192.0.2.152'];
      const work = Array.from({ length: 120 }, async (_, n) => {
        const user = users[n % users.length]!;
        const ip = ips[n % ips.length]!;
        const decision = await limiter.attempt(user, ip, at(0));
        if (decision.allowed && n % 2 === 0) await limiter.succeeded(user, ip, at(0));
        return decision;
      });
      const results = await Promise.allSettled(work);
      assert.deepEqual(results.filter((r) => r.status === 'rejected'), []);
    });

    test('IPv6 addresses in one /64 share counters; another /64 does not', async () => {
      const user = name('v6');
      await limiter.attempt(user, '2001:db8:aa:1::1', at(0));
      await limiter.attempt(user, '2001:db8:aa:1:ffff:ffff:ffff:ffff', at(0));
      await limiter.attempt(user, '2001:0db8:00aa:0001:1234::9', at(0));
      assert.deepEqual(await limiter.attempt(user, '2001:db8:aa:1::2', at(0)), refused(1));
      assert.deepEqual(await limiter.attempt(user, '2001:db8:aa:2::1', at(0)), allowed);
    });

    test('an IPv4-mapped IPv6 address counts as the IPv4 address', async () => {
      const user = name('mapped');
      await limiter.attempt(user, '::ffff:198.51.100.30', at(0));
      await limiter.attempt(user, '198.51.100.30', at(0));
      await limiter.attempt(user, '::FFFF:c633:641e', at(0));
      assert.deepEqual(await limiter.attempt(user, '198.51.100.30', at(0)), refused(1));
      assert.deepEqual(await limiter.attempt(user, '198.51.100.31', at(0)), allowed);
    });

    test('an account named like an IP does not share the IP counter', async () => {
      const ip = '198.51.100.40';
      for (let n = 1; n <= 60; n++) assert.deepEqual(await limiter.attempt(ip, `10.30.0.${n}`, at(0)), allowed);
      assert.deepEqual(await limiter.attempt(name('other'), ip, at(0)), allowed);
    });
  });
}

describe('login limits on the database store: pruning', () => {
  let db: TestDatabase;
  let limiter: LoginLimiter;
  const config = loadConfig({ LOG_LEVEL: 'silent' });
  const rules = limitRulesOf(config);
  const count = async () => Number((await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM login_throttle`)).rows[0]!.n);
  before(async () => {
    db = await createTestDatabase();
    limiter = createLoginLimiter({ config, db, counterKey });
  });
  after(async () => {
    await limiter.close();
    await db.close();
  });

  test('counters whose window and cooldown are over are deleted; live ones stay', async () => {
    await db.query(`DELETE FROM login_throttle`);
    for (let i = 0; i < 4; i++) await limiter.attempt('prune-me', '192.0.2.1', at(0));
    assert.equal(await count(), 3);
    assert.equal(await pruneLoginThrottle(db, at(LOGIN_LIMIT_WINDOW_SECONDS), rules), 0);
    assert.equal(await count(), 3);
    assert.equal(await pruneLoginThrottle(db, at(LOGIN_LIMIT_WINDOW_SECONDS + config.LOGIN_COOLDOWN_MAX_SECONDS + 1), rules), 3);
    assert.equal(await count(), 0);
  });

  test('attempts prune by themselves now and then', async () => {
    await db.query(`DELETE FROM login_throttle`);
    for (let n = 0; n < 20; n++) await limiter.attempt(`old-${n}`, '192.0.2.2', at(0));
    assert.equal(await count(), 41); // 20 (user, IP) + 20 user + 1 IP counters
    await limiter.attempt('new', '192.0.2.3', at(2 * LOGIN_LIMIT_WINDOW_SECONDS));
    assert.equal(await count(), 3);
  });
});

describe('login limits on Redis when Redis is down', { skip: process.env.REDIS_URL ? false : 'REDIS_URL is not set' }, () => {
  test('an attempt fails fast as "unavailable" (503), not a hang', async () => {
    const db = await createTestDatabase();
    const limiter = createLoginLimiter({ config: loadConfig({ LOG_LEVEL: 'silent', REDIS_URL: 'redis://127.0.0.1:1' }), db, counterKey });
    try {
      const error = await limiter.attempt('nobody', '192.0.2.9', at(0)).then(() => undefined, (caught: unknown) => caught);
      assert.ok(error instanceof DatabaseUnavailableError, String(error));
      // The 503 names Redis: the database is fine.
      assert.match(toAppError(error, 1).detail, /^The login-limit store \(Redis\) is unreachable; retry later\.$/);
    } finally {
      await limiter.close();
      await db.close();
    }
  });
});
