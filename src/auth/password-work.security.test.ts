import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createUser } from '../admin/users.service.js';
import { CLI_ACTOR } from '../accounts/admin-audit.repository.js';
import { AppError } from '../http/errors.js';
import { OTHER_STRONG_PASSWORD, seedUser, type SeededUser } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { loginOk } from '../testing/auth.js';
import { passwordWorkStats, reservePasswordWork, resetPasswordWorkPeak, type PasswordWork } from './passwords.js';

/**
 * Issue 28, item 8: logins from many addresses each start an argon2 verification. The
 * verifications in progress per process are bounded (ARGON2_MAX_IN_PROGRESS); past the bound a
 * request is refused at once with 503 and Retry-After, never queued.
 */
describe('the bound on password work in progress', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestApp({ ARGON2_MAX_IN_PROGRESS: '2' });
  });
  after(() => ctx.close());

  const login = (username: string, password: string, remoteAddress: string) =>
    ctx.app.inject({ method: 'POST', url: '/api/v2/auth/login', payload: { username, password }, remoteAddress });

  const assertBusy = (response: { statusCode: number; headers: Record<string, unknown>; json(): { code: string } }) => {
    assert.equal(response.statusCode, 503);
    assert.equal(response.json().code, 'service_unavailable');
    assert.equal(response.headers['retry-after'], '1');
  };

  test('with every slot taken, login, password change and user creation are 503 at once; a refusal counts no failure', async () => {
    const user = await seedUser(ctx.db);
    const pair = await loginOk(ctx, user);
    const held: PasswordWork[] = [reservePasswordWork(), reservePasswordWork()];
    try {
      assert.throws(() => reservePasswordWork(), (error: unknown) => error instanceof AppError && error.code === 'service_unavailable');
      // Wrong passwords from one address: were these counted, the correct one below would be 429.
      for (let i = 0; i < 10; i += 1) assertBusy(await login(user.username, 'wrong password', '10.9.0.1'));
      assertBusy(await login('nobody-at-all', 'whatever', '10.9.0.2'));
      assertBusy(await ctx.app.inject({
        method: 'POST', url: '/api/v2/auth/password', headers: { authorization: `Bearer ${pair.token}` },
        payload: { current_password: user.password, new_password: OTHER_STRONG_PASSWORD },
      }));
      await assert.rejects(
        createUser(ctx.db, { username: 'made-while-busy', password: OTHER_STRONG_PASSWORD, sellerId: 1, role: 'seller', marketplaceCode: null, active: true }, CLI_ACTOR, ctx.clock.now(), { minScore: 3, field: 'password' }),
        (error: unknown) => error instanceof AppError && error.code === 'service_unavailable',
      );
    } finally {
      for (const slot of held) slot.release();
    }
    assert.equal(passwordWorkStats().inProgress, 0);
    assert.equal((await login(user.username, user.password, '10.9.0.1')).statusCode, 200);
  });

  test('the portal\'s sign-in past the bound is 503 with Retry-After too', async () => {
    const user = await seedUser(ctx.db);
    const held: PasswordWork[] = [reservePasswordWork(), reservePasswordWork()];
    try {
      const response = await ctx.app.inject({
        method: 'POST',
        url: '/portal/login',
        headers: { 'content-type': 'application/x-www-form-urlencoded', host: 'plaza.test', origin: 'http://plaza.test' },
        payload: new URLSearchParams({ username: user.username, password: user.password }).toString(),
      });
      assert.equal(response.statusCode, 503);
      assert.equal(response.headers['retry-after'], '1');
    } finally {
      for (const slot of held) slot.release();
    }
  });

  test('a flood of parallel logins: some 503 with Retry-After, none hangs, never more in progress than the bound', async () => {
    const users: SeededUser[] = [];
    for (let i = 0; i < 4; i += 1) users.push(await seedUser(ctx.db));
    resetPasswordWorkPeak();
    let timer: NodeJS.Timeout | undefined;
    const hung = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('a login did not answer within 60 s')), 60_000);
    });
    try {
      const responses = await Promise.race([
        Promise.all(Array.from({ length: 40 }, (_, i) => {
          const user = users[i % users.length]!;
          // Half of them wrong, from many addresses: what an attacker sends.
          return login(user.username, i % 2 === 0 ? user.password : 'wrong password', `10.8.${i >> 8}.${i & 255}`);
        })),
        hung,
      ]);
      const statuses = responses.map((response) => response.statusCode);
      assert.ok(statuses.every((status) => status === 200 || status === 401 || status === 503), statuses.join(','));
      const busy = responses.filter((response) => response.statusCode === 503);
      assert.ok(busy.length > 0, `some logins were refused: ${statuses.join(',')}`);
      for (const response of busy) assertBusy(response);
      assert.ok(statuses.some((status) => status !== 503), 'and others were served');
    } finally {
      clearTimeout(timer);
    }
    const stats = passwordWorkStats();
    assert.ok(stats.peak <= 2, `at most 2 in progress, saw ${stats.peak}`);
    assert.equal(stats.inProgress, 0, 'every slot was released');
  });
});
