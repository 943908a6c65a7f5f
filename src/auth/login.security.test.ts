import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { seedUser, type SeededUser } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { postLogin } from '../testing/auth.js';

describe('login does not reveal which user names exist', () => {
  let ctx: TestContext;
  let active: SeededUser;
  let inactive: SeededUser;
  before(async () => {
    // Generous limits: this file is about the bodies, not the limiter.
    ctx = await createTestApp({ LOGIN_FREE_FAILURES_PER_USER_IP: '100', LOGIN_FAILURES_PER_USER_PER_HOUR: '100', LOGIN_FAILURES_PER_IP_PER_HOUR: '100' });
    active = await seedUser(ctx.db);
    inactive = await seedUser(ctx.db, { active: false });
  });
  after(() => ctx.close());

  const attempt = async (username: string, password: string) => {
    const response = await postLogin(ctx, { username, password });
    const { request_id: requestId, ...body } = response.json();
    assert.equal(typeof requestId, 'string');
    const { date: _date, 'x-request-id': _id, ...headers } = response.headers;
    return { status: response.statusCode, body, headers };
  };

  test('unknown user, wrong password and inactive user with a wrong password: identical 401 answers', async () => {
    const unknown = await attempt('no-such-user-anywhere', 'guess-1');
    const wrong = await attempt(active.username, 'guess-1');
    const inactiveWrong = await attempt(inactive.username, 'guess-1');
    assert.equal(unknown.status, 401);
    assert.equal(unknown.body.code, 'invalid_credentials');
    assert.deepEqual(wrong, unknown);
    assert.deepEqual(inactiveWrong, unknown);
  });

  test('403 user_inactive only after the right password', async () => {
    const right = await attempt(inactive.username, inactive.password);
    assert.equal(right.status, 403);
    assert.equal(right.body.code, 'user_inactive');
  });

  test('SQL-ish and odd user names are just unknown users', async () => {
    for (const username of ["' OR '1'='1", 'admin\'--', '%', '_', 'ü'.repeat(200)]) {
      const result = await attempt(username, 'x');
      assert.equal(result.status, 401, JSON.stringify(username));
      assert.equal(result.body.code, 'invalid_credentials');
    }
  });

  test('control characters in a user name are 400, not a database error', async () => {
    for (const username of ['\u0000', 'a\u0000b', 'line\nbreak', '\u007f']) {
      const response = await postLogin(ctx, { username, password: 'x' });
      assert.equal(response.statusCode, 400, JSON.stringify(username));
      assert.equal(response.json().errors[0].field, 'body.username');
    }
  });

  test('a login body never echoes the password in an error', async () => {
    const response = await postLogin(ctx, { username: active.username, password: 'p'.repeat(1025) });
    assert.equal(response.statusCode, 400);
    assert.ok(!response.body.includes('pppppppp'));
  });
});
