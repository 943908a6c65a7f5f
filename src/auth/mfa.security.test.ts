import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { accessTokenFor, bearer, seedUser, type SeededUser } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { authEventsOf, getProducts, postLogin } from '../testing/auth.js';
import { codeOf, enrolTotp, recoveryCodesOf, verifyMfa } from '../testing/mfa.js';
import { insertPasskey } from './mfa/passkeys.repository.js';
import type { TokenPair } from './token-pair.js';

/** A login of a user with a second factor: the 401 and its mfa_token. */
async function mfaToken(ctx: TestContext, user: SeededUser, remoteAddress = '127.0.0.1'): Promise<string> {
  const response = await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/login', payload: { username: user.username, password: user.password }, remoteAddress });
  assert.equal(response.statusCode, 401, response.body);
  const body = response.json();
  assert.equal(body.code, 'mfa_required');
  assert.match(body.mfa_token, /^mfa_[A-Za-z0-9_-]{43}$/);
  assert.deepEqual(body.methods, ['totp', 'recovery_code']);
  return body.mfa_token as string;
}

const verifyFrom = (ctx: TestContext, remoteAddress: string, body: { mfa_token: string; code: string }) =>
  ctx.app.inject({ method: 'POST', url: '/api/v2/auth/mfa/verify', payload: body, remoteAddress });

describe('second factor: the flows', () => {
  let ctx: TestContext;
  before(async () => {
    // Generous limits: these tests are about the flows; the limits have their own suite below.
    ctx = await createTestApp({ LOGIN_FREE_FAILURES_PER_USER_IP: '100', LOGIN_FAILURES_PER_USER_PER_HOUR: '100', LOGIN_FAILURES_PER_IP_PER_HOUR: '1000' });
  });
  after(() => ctx.close());

  test('enrol, activate, login → 401 mfa_required → verify → the login result; audited', async () => {
    const user = await seedUser(ctx.db);
    const headers = bearer(await accessTokenFor(ctx, user));
    const started = await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/mfa/totp', headers });
    assert.equal(started.statusCode, 201);
    const { secret, otpauth_url: url } = started.json();
    assert.match(secret, /^[A-Z2-7]{32}$/);
    assert.ok(url.startsWith('otpauth://totp/Plaza:'));
    // Not active yet: a login still answers tokens.
    assert.equal((await postLogin(ctx, { username: user.username, password: user.password })).statusCode, 200);
    const wrong = await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/mfa/totp/activate', headers, payload: { code: '000000' === codeOf(ctx, secret) ? '111111' : '000000' } });
    assert.equal(wrong.statusCode, 400);
    const activated = await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/mfa/totp/activate', headers, payload: { code: codeOf(ctx, secret) } });
    assert.equal(activated.statusCode, 204);
    assert.equal((await ctx.app.inject({ method: 'GET', url: '/api/v2/auth/mfa', headers })).json().totp, 'active');
    ctx.clock.advanceSeconds(30);

    const token = await mfaToken(ctx, user);
    const verified = await verifyMfa(ctx, { mfa_token: token, code: codeOf(ctx, secret) });
    assert.equal(verified.statusCode, 200, verified.body);
    const pair = verified.json() as TokenPair;
    assert.equal(pair.user_id, user.id);
    assert.equal((await getProducts(ctx, pair.token)).statusCode, 200);
    const types = (await authEventsOf(ctx, user.id)).map((event) => event.type);
    for (const type of ['mfa_enrolled', 'mfa_challenged', 'mfa_used', 'login_succeeded']) assert.ok(types.includes(type), `${type} in ${types.join(',')}`);
    const last = (await authEventsOf(ctx, user.id)).at(-1)!;
    assert.deepEqual(last, { type: 'login_succeeded', detail: { second_factor: 'totp' } });
  });

  test('a TOTP code is used once: the same step again is refused, even with a new mfa_token', async () => {
    const user = await seedUser(ctx.db);
    const secret = await enrolTotp(ctx, user);
    const code = codeOf(ctx, secret);
    assert.equal((await verifyMfa(ctx, { mfa_token: await mfaToken(ctx, user), code })).statusCode, 200);
    const replay = await verifyMfa(ctx, { mfa_token: await mfaToken(ctx, user), code });
    assert.equal(replay.statusCode, 401);
    assert.equal(replay.json().code, 'invalid_mfa_code');
    // Nor the step before it (inside the window, but older than the one used).
    const older = await verifyMfa(ctx, { mfa_token: await mfaToken(ctx, user), code: codeOf(ctx, secret, -1) });
    assert.equal(older.json().code, 'invalid_mfa_code');
  });

  test('two logins racing with one code: exactly one gets in', async () => {
    const user = await seedUser(ctx.db);
    const secret = await enrolTotp(ctx, user);
    const [a, b] = [await mfaToken(ctx, user), await mfaToken(ctx, user)];
    const code = codeOf(ctx, secret);
    const answers = await Promise.all([verifyMfa(ctx, { mfa_token: a, code }), verifyMfa(ctx, { mfa_token: b, code })]);
    assert.deepEqual(answers.map((answer) => answer.statusCode).sort(), [200, 401]);
  });

  test('a recovery code works once, and the mfa_token once', async () => {
    const user = await seedUser(ctx.db);
    await enrolTotp(ctx, user);
    const codes = await recoveryCodesOf(ctx, user);
    assert.equal(codes.length, 10);
    assert.equal(new Set(codes).size, 10);
    const token = await mfaToken(ctx, user);
    const first = await verifyMfa(ctx, { mfa_token: token, code: codes[0]!.toLowerCase() });
    assert.equal(first.statusCode, 200, first.body);
    const tokenAgain = await verifyMfa(ctx, { mfa_token: token, code: codes[1]! });
    assert.equal(tokenAgain.statusCode, 401);
    assert.equal(tokenAgain.json().code, 'invalid_mfa_token');
    const codeAgain = await verifyMfa(ctx, { mfa_token: await mfaToken(ctx, user), code: codes[0]! });
    assert.equal(codeAgain.json().code, 'invalid_mfa_code');
    // New codes replace the old ones, used or not.
    const fresh = await recoveryCodesOf(ctx, user);
    assert.equal((await verifyMfa(ctx, { mfa_token: await mfaToken(ctx, user), code: codes[1]! })).json().code, 'invalid_mfa_code');
    assert.equal((await verifyMfa(ctx, { mfa_token: await mfaToken(ctx, user), code: fresh[0]! })).statusCode, 200);
    assert.equal((await ctx.app.inject({ method: 'GET', url: '/api/v2/auth/mfa', headers: bearer(await accessTokenFor(ctx, user)) })).json().recovery_codes_left, 9);
  });

  test('new recovery codes need the password', async () => {
    const user = await seedUser(ctx.db);
    await enrolTotp(ctx, user);
    const response = await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/mfa/recovery-codes', headers: bearer(await accessTokenFor(ctx, user)), payload: { password: 'not it' } });
    assert.equal(response.statusCode, 401);
    assert.equal(response.json().code, 'invalid_credentials');
  });

  test('an expired mfa_token is refused', async () => {
    const user = await seedUser(ctx.db);
    const secret = await enrolTotp(ctx, user);
    const token = await mfaToken(ctx, user);
    ctx.clock.advanceSeconds(ctx.config.MFA_TOKEN_TTL_SECONDS + 1);
    const response = await verifyMfa(ctx, { mfa_token: token, code: codeOf(ctx, secret) });
    assert.equal(response.statusCode, 401);
    assert.equal(response.json().code, 'invalid_mfa_token');
  });

  test('user A\'s mfa_token with user B\'s code is refused', async () => {
    const a = await seedUser(ctx.db);
    const b = await seedUser(ctx.db);
    await enrolTotp(ctx, a);
    const secretB = await enrolTotp(ctx, b);
    const response = await verifyMfa(ctx, { mfa_token: await mfaToken(ctx, a), code: codeOf(ctx, secretB) });
    assert.equal(response.statusCode, 401);
    assert.equal(response.json().code, 'invalid_mfa_code');
    const recoveryB = await recoveryCodesOf(ctx, b);
    assert.equal((await verifyMfa(ctx, { mfa_token: await mfaToken(ctx, a), code: recoveryB[0]! })).json().code, 'invalid_mfa_code');
  });

  test('an mfa_token dies after 5 wrong codes', async () => {
    const user = await seedUser(ctx.db);
    const secret = await enrolTotp(ctx, user);
    const token = await mfaToken(ctx, user);
    const wrong = codeOf(ctx, secret) === '123456' ? '654321' : '123456';
    for (let i = 0; i < 5; i++) assert.equal((await verifyMfa(ctx, { mfa_token: token, code: wrong })).json().code, 'invalid_mfa_code');
    assert.equal((await verifyMfa(ctx, { mfa_token: token, code: codeOf(ctx, secret) })).json().code, 'invalid_mfa_token');
  });

  test('a password change in between voids the mfa_token', async () => {
    const user = await seedUser(ctx.db);
    const secret = await enrolTotp(ctx, user);
    const token = await mfaToken(ctx, user);
    await ctx.db.query(`UPDATE users SET password_hash = password_hash || 'x' WHERE id = $1`, [user.id]);
    assert.equal((await verifyMfa(ctx, { mfa_token: token, code: codeOf(ctx, secret) })).json().code, 'invalid_mfa_token');
  });

  test('turning it off needs a current code; afterwards a login answers tokens again', async () => {
    const user = await seedUser(ctx.db);
    const secret = await enrolTotp(ctx, user);
    const headers = bearer(await accessTokenFor(ctx, user));
    const wrong = await ctx.app.inject({ method: 'DELETE', url: '/api/v2/auth/mfa/totp', headers, payload: { code: codeOf(ctx, secret, -3) } });
    assert.equal(wrong.statusCode, 401);
    assert.equal(wrong.json().code, 'invalid_mfa_code');
    const off = await ctx.app.inject({ method: 'DELETE', url: '/api/v2/auth/mfa/totp', headers, payload: { code: codeOf(ctx, secret) } });
    assert.equal(off.statusCode, 204, off.body);
    assert.equal((await postLogin(ctx, { username: user.username, password: user.password })).statusCode, 200);
    const types = (await authEventsOf(ctx, user.id)).map((event) => event.type);
    assert.ok(types.includes('mfa_removed'));
    assert.ok(types.includes('mfa_failed'));
  });

  test('an active authenticator cannot be replaced by a stolen access token', async () => {
    const user = await seedUser(ctx.db);
    await enrolTotp(ctx, user);
    const again = await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/mfa/totp', headers: bearer(await accessTokenFor(ctx, user)) });
    assert.equal(again.statusCode, 409);
  });

  test('the TOTP secret is stored encrypted, the recovery codes hashed', async () => {
    const user = await seedUser(ctx.db);
    const secret = await enrolTotp(ctx, user);
    const codes = await recoveryCodesOf(ctx, user);
    const { rows } = await ctx.db.query<{ secret_encrypted: string }>(`SELECT secret_encrypted FROM mfa_totp WHERE user_id = $1`, [user.id]);
    assert.ok(!rows[0]!.secret_encrypted.includes(secret));
    const dump = JSON.stringify((await ctx.db.query(`SELECT encode(code_hash, 'escape') AS h FROM mfa_recovery_codes WHERE user_id = $1`, [user.id])).rows);
    for (const code of codes) assert.ok(!dump.includes(code.replaceAll('-', '')));
  });
});

describe('second factor: codes count towards the login limits', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestApp({ LOGIN_FREE_FAILURES_PER_USER_IP: '3', LOGIN_FAILURES_PER_USER_PER_HOUR: '100', LOGIN_FAILURES_PER_IP_PER_HOUR: '8' });
  });
  after(() => ctx.close());

  test('per user and address: wrong codes lead to 429, then even the right code waits; a right password does not reset the count', async () => {
    const user = await seedUser(ctx.db);
    const secret = await enrolTotp(ctx, user);
    const ip = '198.51.100.1';
    const wrong = () => (codeOf(ctx, secret) === '123456' ? '654321' : '123456');
    // The password is right but the code is pending: that attempt counts until a code is right.
    const token = await mfaToken(ctx, user, ip);
    assert.equal((await verifyFrom(ctx, ip, { mfa_token: token, code: wrong() })).statusCode, 401);
    // A new right password does not wipe the failed code: it is the third attempt without a right
    // code (LOGIN_FREE_FAILURES_PER_USER_IP=3), and the next one waits, even with the right code.
    const token2 = await mfaToken(ctx, user, ip);
    const refused = await verifyFrom(ctx, ip, { mfa_token: token2, code: codeOf(ctx, secret) });
    assert.equal(refused.statusCode, 429, refused.body);
    assert.equal(refused.json().code, 'rate_limited');
    assert.ok(Number(refused.headers['retry-after']) >= 1);
    // The login itself is refused in the same way meanwhile.
    assert.equal((await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/login', payload: { username: user.username, password: user.password }, remoteAddress: ip })).statusCode, 429);
    // After the cooldown the right code gets in, and the counters start over.
    ctx.clock.advanceSeconds(Number(refused.headers['retry-after']));
    const ok = await verifyFrom(ctx, ip, { mfa_token: token2, code: codeOf(ctx, secret) });
    assert.equal(ok.statusCode, 200, ok.body);
  });

  test('per address: wrong codes against many users from one address lead to 429', async () => {
    const ip = '198.51.100.2';
    let status = 0;
    for (let i = 0; i < 6 && status !== 429; i++) {
      const user = await seedUser(ctx.db);
      const secret = await enrolTotp(ctx, user);
      const token = await mfaToken(ctx, user, ip).catch(() => undefined);
      if (!token) {
        status = 429;
        break;
      }
      status = (await verifyFrom(ctx, ip, { mfa_token: token, code: codeOf(ctx, secret) === '123456' ? '654321' : '123456' })).statusCode;
    }
    assert.equal(status, 429);
    // Another address is not affected.
    const user = await seedUser(ctx.db);
    const secret = await enrolTotp(ctx, user);
    assert.equal((await verifyFrom(ctx, '198.51.100.3', { mfa_token: await mfaToken(ctx, user, '198.51.100.3'), code: codeOf(ctx, secret) })).statusCode, 200);
  });

  test('turning the factor off counts wrong codes too', async () => {
    const user = await seedUser(ctx.db);
    const secret = await enrolTotp(ctx, user);
    const headers = bearer(await accessTokenFor(ctx, user));
    const ip = '198.51.100.4';
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      statuses.push((await ctx.app.inject({ method: 'DELETE', url: '/api/v2/auth/mfa/totp', headers, payload: { code: codeOf(ctx, secret, -5) }, remoteAddress: ip })).statusCode);
    }
    assert.ok(statuses.includes(429), statuses.join(','));
  });
});

describe('second factor required for a role (MFA_REQUIRED_ROLES)', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestApp({ MFA_REQUIRED_ROLES: 'admin', LOGIN_FREE_FAILURES_PER_USER_IP: '100', LOGIN_FAILURES_PER_IP_PER_HOUR: '1000' });
  });
  after(() => ctx.close());

  test('an admin without one gets 401 mfa_enrollment_required and a token that only enrols', async () => {
    const admin = await seedUser(ctx.db, { role: 'admin' });
    const login = await postLogin(ctx, { username: admin.username, password: admin.password });
    assert.equal(login.statusCode, 401);
    assert.equal(login.json().code, 'mfa_enrollment_required');
    const token = login.json().mfa_token as string;
    // It is no login token, and no access token.
    assert.equal((await verifyMfa(ctx, { mfa_token: token, code: '123456' })).json().code, 'invalid_mfa_token');
    assert.equal((await ctx.app.inject({ method: 'GET', url: '/api/v2/products', headers: bearer(token) })).statusCode, 401);
    assert.equal((await ctx.db.query(`SELECT 1 FROM sessions WHERE user_id = $1`, [admin.id])).rowCount, 0, 'no session opened');
    // It enrols.
    const started = await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/mfa/totp', payload: { mfa_token: token } });
    assert.equal(started.statusCode, 201, started.body);
    const { secret } = started.json();
    const activated = await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/mfa/totp/activate', payload: { mfa_token: token, code: codeOf(ctx, secret) } });
    assert.equal(activated.statusCode, 204, activated.body);
    // Used up by the activation.
    assert.equal((await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/mfa/totp', payload: { mfa_token: token } })).statusCode, 401);
    ctx.clock.advanceSeconds(30);
    const verified = await verifyMfa(ctx, { mfa_token: await mfaToken(ctx, admin), code: codeOf(ctx, secret) });
    assert.equal(verified.statusCode, 200);
  });

  test('other roles are not asked; without a token or mfa_token enrolment is 401', async () => {
    const seller = await seedUser(ctx.db);
    assert.equal((await postLogin(ctx, { username: seller.username, password: seller.password })).statusCode, 200);
    assert.equal((await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/mfa/totp' })).statusCode, 401);
    assert.equal((await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/mfa/totp', payload: { mfa_token: 'mfa_forged' } })).json().code, 'invalid_mfa_token');
  });

  test('a user whose second factor is a passkey: the password alone opens no session and enrols nothing, whatever the role', async () => {
    for (const role of ['admin', 'seller'] as const) {
      const user = await seedUser(ctx.db, { role });
      await insertPasskey(ctx.db, { id: `pk-${user.id}`, userId: user.id, publicKey: new Uint8Array([1, 2, 3]), counter: 0, transports: [], name: 'laptop', now: ctx.clock.now() });
      const login = await postLogin(ctx, { username: user.username, password: user.password });
      assert.equal(login.statusCode, 401, login.body);
      assert.equal(login.json().code, 'mfa_required', `${role}: not an enrolment token, which the password alone would turn into a second factor`);
      assert.deepEqual(login.json().methods, ['passkey']);
      const token = login.json().mfa_token as string;
      // Neither an enrolment nor a code finishes it through the API.
      assert.equal((await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/mfa/totp', payload: { mfa_token: token } })).json().code, 'invalid_mfa_token');
      assert.equal((await verifyMfa(ctx, { mfa_token: token, code: '123456' })).statusCode, 401);
      assert.equal((await ctx.db.query(`SELECT 1 FROM sessions WHERE user_id = $1`, [user.id])).rowCount, 0, 'no session opened');
    }
  });

  test('a wrong password never reveals the enrolment state', async () => {
    const admin = await seedUser(ctx.db, { role: 'admin' });
    const response = await postLogin(ctx, { username: admin.username, password: 'wrong' });
    assert.equal(response.json().code, 'invalid_credentials');
  });
});
