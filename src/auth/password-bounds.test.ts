import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { runInProcess } from '../testing/cli.js';
import { loadConfig, type Config } from '../config.js';
import { accessTokenFor, bearer, seedUser, STRONG_PASSWORD } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from './password-bounds.js';

/** A password of `length` characters (code points), none of the common ones. */
const passwordOf = (length: number) => (length < STRONG_PASSWORD.length ? 'Kx9#mQ2vTz'.slice(0, length) : `${STRONG_PASSWORD}${'😀'.repeat(length - STRONG_PASSWORD.length)}`);

// Issue 35: the bounds were written in four places (the rule, the CLI, two schemas).
describe('the password bounds are one: the CLI, the admin API, the API login and the portal sign-in agree at each end', () => {
  let ctx: TestContext;
  let config: Config;
  let admin: Record<string, string>;
  let counter = 0;
  before(async () => {
    // No eight characters score 3 (10^8 guesses at most): the strength rule is left out of the bounds.
    ctx = await createTestApp({ PASSWORD_MIN_SCORE: '0' });
    config = loadConfig({ LOG_LEVEL: 'silent', SECRETS_KEY: randomBytes(32).toString('base64'), PASSWORD_MIN_SCORE: '0' });
    admin = bearer(await accessTokenFor(ctx, await seedUser(ctx.db, { role: 'admin' })));
  });
  after(() => ctx.close());

  /** Whether the CLI and the admin API each create a user with this password, and what each says when not. */
  async function setters(password: string) {
    const cli = await runInProcess(['users', 'add', `cli${++counter}`, '--role', 'admin'], { db: ctx.db, config, stdin: `${password}\n`, now: ctx.clock.now() });
    const api = await ctx.app.inject({ method: 'POST', url: '/api/v2/admin/users', headers: admin, payload: { username: `api${counter}`, password, role: 'admin' } });
    return { cli: cli.code === 0 ? 'created' : cli.stderr, api: api.statusCode === 201 ? 'created' : api.body };
  }

  test('a password being set: the shortest and the longest are created by both, one character less or more refused by both for its length', async () => {
    for (const length of [PASSWORD_MIN_LENGTH, PASSWORD_MAX_LENGTH]) {
      assert.deepEqual(await setters(passwordOf(length)), { cli: 'created', api: 'created' }, `${length} characters`);
    }
    const short = await setters(passwordOf(PASSWORD_MIN_LENGTH - 1));
    assert.match(short.cli, /must have at least 8 characters/);
    assert.match(short.api, /must NOT have fewer than 8 characters/);
    const long = await setters(passwordOf(PASSWORD_MAX_LENGTH + 1));
    assert.match(long.cli, /may have at most 1024 characters/);
    assert.match(long.api, /must NOT have more than 1024 characters/);
  });

  test('a password given to sign in: the longest is checked (a wrong password) by the API and the portal, one more is refused by both as invalid', async () => {
    const user = await seedUser(ctx.db);
    const apiLogin = (password: string) => ctx.app.inject({ method: 'POST', url: '/api/v2/auth/login', payload: { username: user.username, password } });
    const portalLogin = (password: string) =>
      ctx.app.inject({ method: 'POST', url: '/portal/login', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: new URLSearchParams({ username: user.username, password }).toString() });
    const longest = passwordOf(PASSWORD_MAX_LENGTH);
    assert.deepEqual([(await apiLogin(longest)).statusCode, (await portalLogin(longest)).statusCode], [401, 401]);
    const tooLong = passwordOf(PASSWORD_MAX_LENGTH + 1);
    assert.deepEqual([(await apiLogin(tooLong)).statusCode, (await portalLogin(tooLong)).statusCode], [400, 400]);
  });
});
