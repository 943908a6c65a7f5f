import assert from 'node:assert/strict';
import dns from 'node:dns';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { findUserByUsername } from '../accounts/accounts.repository.js';
import { runInProcess } from '../testing/cli.js';
import { bearer, OTHER_STRONG_PASSWORD, seedUser, STRONG_PASSWORD } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { loginOk, postLogin, postRefresh } from '../testing/auth.js';
import { ESTIMATED_PREFIX_LENGTH, judgePassword } from './password-estimator.js';
import { checkNewPassword, type NewPasswordCheck } from './password-strength.js';

/** Passwords of every attacker's first list, in the forms people think are clever. */
const COMMON = ['password123', 'P@ssw0rd', 'iloveyou', 'qwerty123456', 'drowssap', 'PASSWORD1'];
const rule: NewPasswordCheck = { field: 'body.password', userInputs: [], minScore: 3 };

async function refusal(password: string, check = rule): Promise<string> {
  try {
    await checkNewPassword(password, check);
  } catch (error) {
    const errors = (error as { options?: { errors?: { field: string; message: string }[] } }).options?.errors;
    assert.equal(errors?.[0]?.field, check.field);
    return errors[0]!.message;
  }
  assert.fail(`${JSON.stringify(password)} was accepted`);
}

describe('passwords known to attackers are refused wherever a password is set', () => {
  let ctx: TestContext;
  let admin: { authorization: string };
  before(async () => {
    ctx = await createTestApp();
    const root = await seedUser(ctx.db, { role: 'admin' });
    admin = bearer((await loginOk(ctx, root)).token);
  });
  after(() => ctx.close());

  // The code the estimator's worker thread runs, here in this thread, where the network can be
  // watched; first in this file (a process of its own), so that the dictionaries are loaded here.
  test('the estimator is local: loading it and judging passwords opens no connection and resolves no name', async () => {
    const attempts: string[] = [];
    const originals = { connect: net.Socket.prototype.connect, lookup: dns.lookup, promisesLookup: dns.promises.lookup, fetch: globalThis.fetch };
    const refuse = (what: string) => {
      attempts.push(what);
      throw new Error(`network used: ${what}`);
    };
    net.Socket.prototype.connect = function connect() { return refuse('socket connect'); } as typeof net.Socket.prototype.connect;
    dns.lookup = (() => refuse('dns.lookup')) as unknown as typeof dns.lookup;
    dns.promises.lookup = (() => refuse('dns.promises.lookup')) as unknown as typeof dns.promises.lookup;
    globalThis.fetch = (() => refuse('fetch')) as typeof fetch;
    try {
      assert.equal((await judgePassword('password123', [])).common, true);
      assert.ok((await judgePassword(STRONG_PASSWORD, [])).score >= 3);
    } finally {
      Object.assign(net.Socket.prototype, { connect: originals.connect });
      dns.lookup = originals.lookup;
      dns.promises.lookup = originals.promisesLookup;
      globalThis.fetch = originals.fetch;
    }
    assert.deepEqual(attempts, []);
  });

  test('the rule: common passwords and their variants, weak ones, and the user\'s own name are refused with a reason; strong ones pass', async () => {
    for (const password of COMMON) {
      assert.match(await refusal(password), /^This password is too common: it is in the lists of passwords that attackers try first\./, password);
    }
    // Not in the list as a whole, but guessed quickly: zxcvbn's advice comes with the refusal.
    assert.match(await refusal('aaaaaaaaaaaa'), /^This password is too easy to guess \(Repeated characters like "aaa" are easy to guess\)\. /);
    assert.match(await refusal('abcdefgh1234'), /^This password is too easy to guess/);
    // The user's own name is a word an attacker tries first for that account.
    const named = { ...rule, field: 'body.new_password', userInputs: ['margaret.hale'] };
    assert.match(await refusal('margaret.hale2024', named), /too easy to guess \(There should not be any personal or page related data\)/);
    await checkNewPassword('margaret.hale2024', rule); // strong enough for anyone else
    for (const strong of [STRONG_PASSWORD, OTHER_STRONG_PASSWORD, 'Tr0ub4dor&3-xk9!', 'x7#Lq9$wV2mP']) await checkNewPassword(strong, rule);
    // A lower setting lets weaker passwords through, never one of the list.
    await checkNewPassword('aaaaaaaaaaaa', { ...rule, minScore: 0 });
    assert.match(await refusal('password123', { ...rule, minScore: 0 }), /too common/);
    // The bounds are part of the rule, counted in characters as the schemas count them.
    assert.match(await refusal('short'), /at least 8 characters/);
    assert.match(await refusal('x'.repeat(1025)), /at most 1024 characters/);
    await checkNewPassword(`${STRONG_PASSWORD}${'😀'.repeat(1024 - [...STRONG_PASSWORD].length)}`, rule);
  });

  test('the estimator\'s cost is bounded: only the first characters are judged, so a long password costs what a short one does', async () => {
    // zxcvbn's repeat and l33t matchers grow fast with the length; 1 024 characters of this took seconds.
    const started = performance.now();
    await checkNewPassword(`${STRONG_PASSWORD} ${'aB3$'.repeat(240)}`, rule);
    assert.match(await refusal(`${'1!aA'.repeat(ESTIMATED_PREFIX_LENGTH / 4)}${STRONG_PASSWORD}`), /too easy to guess/, 'judged on its first characters only');
    // Not a timing assertion: a gross bound that only an unbounded estimator could break.
    assert.ok(performance.now() - started < 20_000);
  });

  test('the estimator\'s queue is bounded: past it a password set is 503 with Retry-After at once, never a longer wait', async () => {
    const outcomes = await Promise.allSettled(Array.from({ length: 40 }, (_, i) => checkNewPassword(`${STRONG_PASSWORD} ${i}`, { field: 'body.password', minScore: 3, userInputs: [] })));
    const busy = outcomes.filter((outcome) => outcome.status === 'rejected' && (outcome.reason as { code?: string }).code === 'service_unavailable');
    assert.ok(busy.length >= 40 - 32 && busy.length < 40, `${busy.length} of 40 refused as busy`);
    assert.equal((busy[0] as PromiseRejectedResult).reason.options.headers['retry-after'], '1');
    assert.equal(outcomes.filter((outcome) => outcome.status === 'fulfilled').length + busy.length, 40, 'no other outcome');
    // Once the queue drained, a password is judged again.
    await checkNewPassword(STRONG_PASSWORD, { field: 'body.password', minScore: 3, userInputs: [] });
  });

  test('admin API: creating a user with a common password is 400 validation_failed naming body.password; nothing is created', async () => {
    const response = await ctx.app.inject({ method: 'POST', url: '/api/v2/admin/users', headers: admin, payload: { username: 'weak-one', password: 'password123', seller_id: 1 } });
    assert.equal(response.statusCode, 400, response.body);
    const body = response.json();
    assert.equal(body.code, 'validation_failed');
    assert.equal(body.errors[0].field, 'body.password');
    assert.match(body.errors[0].message, /too common/);
    assert.equal(await findUserByUsername(ctx.db, 'weak-one'), undefined);
    // Its own name as the password (long enough, not in the list): too easy to guess.
    const own = await ctx.app.inject({ method: 'POST', url: '/api/v2/admin/users', headers: admin, payload: { username: 'rosalind-franklin', password: 'rosalind-franklin', seller_id: 1 } });
    assert.equal(own.statusCode, 400, own.body);
    assert.match(own.json().errors[0].message, /too easy to guess/);
    const strong = await ctx.app.inject({ method: 'POST', url: '/api/v2/admin/users', headers: admin, payload: { username: 'strong-one', password: STRONG_PASSWORD, seller_id: 1 } });
    assert.equal(strong.statusCode, 201, strong.body);
  });

  test('admin API: a reset to a common password is refused and the old password keeps working', async () => {
    const user = await seedUser(ctx.db, { sellerId: 1 });
    const session = await loginOk(ctx, user);
    const response = await ctx.app.inject({ method: 'POST', url: `/api/v2/admin/users/${user.id}/password`, headers: admin, payload: { password: 'iloveyou' } });
    assert.equal(response.statusCode, 400, response.body);
    assert.equal(response.json().errors[0].field, 'body.password');
    await loginOk(ctx, user);
    assert.equal((await postRefresh(ctx, session.refresh_token)).statusCode, 200, 'no session ended');
    assert.equal((await ctx.app.inject({ method: 'POST', url: `/api/v2/admin/users/${user.id}/password`, headers: admin, payload: { password: OTHER_STRONG_PASSWORD } })).statusCode, 204);
  });

  test('own change: a common new password is 400 naming body.new_password; the password and the other sessions stay', async () => {
    const user = await seedUser(ctx.db, { sellerId: 1 });
    const session = await loginOk(ctx, user);
    const other = await loginOk(ctx, user);
    const response = await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/password', headers: bearer(session.token), payload: { current_password: user.password, new_password: 'P@ssw0rd1' } });
    assert.equal(response.statusCode, 400, response.body);
    assert.equal(response.json().code, 'validation_failed');
    assert.equal(response.json().errors[0].field, 'body.new_password');
    assert.match(response.json().errors[0].message, /too common/);
    await loginOk(ctx, user);
    assert.equal((await postRefresh(ctx, other.refresh_token)).statusCode, 200, 'the other session did not end');
  });

  test('CLI: users add and users reset-password refuse a common password with exit code 2 and the reason', async () => {
    const plaza = (args: string[], stdin: string) => runInProcess(args, { db: ctx.db, config: ctx.config, stdin, now: ctx.clock.now() });
    const added = await plaza(['users', 'add', 'cli-weak', '--seller', '1'], 'password123\n');
    assert.equal(added.code, 2, added.stderr);
    assert.match(added.stderr, /^plaza: password: This password is too common/);
    assert.equal(await findUserByUsername(ctx.db, 'cli-weak'), undefined);
    assert.equal((await plaza(['users', 'add', 'cli-strong', '--seller', '1'], `${STRONG_PASSWORD}\n`)).code, 0);
    const reset = await plaza(['users', 'reset-password', 'cli-strong'], 'qwerty123456\n');
    assert.equal(reset.code, 2, reset.stderr);
    assert.match(reset.stderr, /too common/);
    await loginOk(ctx, { username: 'cli-strong', password: STRONG_PASSWORD });
  });

  test('login never judges a password: a user whose password predates the rule still logs in', async () => {
    const legacy = await seedUser(ctx.db, { sellerId: 1, password: 'password123' });
    assert.equal((await postLogin(ctx, { username: legacy.username, password: 'password123' })).statusCode, 200);
  });
});
