import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { findUserByUsername } from '../accounts/accounts.repository.js';
import { loginOk, postRefresh } from '../testing/auth.js';
import { verifyPassword } from '../auth/passwords.js';
import { loadConfig, type Config } from '../config.js';
import { packageVersion } from '../paths.js';
import { OTHER_STRONG_PASSWORD, STRONG_PASSWORD } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { closed } from '../testing/child-process.js';
import { createTestDatabase } from '../testing/test-database.js';
import { runInProcess } from '../testing/cli.js';
import { MAIN_JS, runPlaza } from '../testing/plaza-process.js';
import { COMMANDS } from './commands.js';

describe('plaza CLI (in-process)', () => {
  let ctx: TestContext;
  let config: Config;
  before(async () => {
    ctx = await createTestApp();
    config = loadConfig({ LOG_LEVEL: 'silent', SECRETS_KEY: randomBytes(32).toString('base64') });
  });
  after(() => ctx.close());
  const plaza = (args: string[], stdin = '') => runInProcess(args, { db: ctx.db, config, stdin, now: ctx.clock.now() });

  test('help, --help on every command and --version exit 0 without configuration or database', async () => {
    for (const args of [[], ['help'], ['--help'], ['-h']]) {
      const run = await runInProcess(args);
      assert.equal(run.code, 0);
      for (const command of COMMANDS) assert.ok(run.stdout.includes(command.name), command.name);
    }
    for (const command of COMMANDS) {
      const words = command.name.split(' ');
      for (const args of [[...words, '--help'], [...words, '-h'], ['help', ...words], [...words, '--name', 'x', '--help']]) {
        const run = await runInProcess(args);
        assert.equal(run.code, 0, `plaza ${args.join(' ')}: ${run.stderr}`);
        assert.ok(run.stdout.startsWith(`Usage: plaza ${command.name}`), args.join(' '));
        assert.equal(run.openedDatabase, false);
      }
    }
    // A group of commands: the usage of each of them.
    const groups = new Set(COMMANDS.filter((command) => command.name.includes(' ')).map((command) => command.name.split(' ')[0]!));
    for (const group of groups) {
      for (const args of [[group, '--help'], [group, '-h'], ['help', group]]) {
        const run = await runInProcess(args);
        assert.equal(run.code, 0, `plaza ${args.join(' ')}: ${run.stderr}`);
        for (const command of COMMANDS.filter((c) => c.name.startsWith(`${group} `))) assert.ok(run.stdout.includes(`plaza ${command.name}`), `${args.join(' ')}: ${command.name}`);
        assert.equal(run.openedDatabase, false);
      }
    }
    assert.equal((await runInProcess(['--version'])).stdout.trim(), packageVersion);
    assert.equal((await runInProcess(['version', '--help'])).code, 0);
    const helpOfHelp = await runInProcess(['help', 'help']);
    assert.equal(helpOfHelp.code, 0);
    assert.match(helpOfHelp.stdout, /help <command> +Show the usage of a command/);
  });

  test('mistakes exit 2 with a clear message, before any database is opened', async () => {
    const cases: [string[], RegExp][] = [
      [['frobnicate'], /Unknown command "frobnicate"/],
      [['users', 'frob'], /Unknown command "users frob"[\s\S]*plaza users add/],
      [['users'], /"users" needs one of its commands:[\s\S]*plaza users add/],
      [['--version', 'extra'], /--version takes no argument/],
      [['users', 'add', 'gina', '--seller', '42', '--seller', '43'], /--seller is given twice/],
      [['users', 'add', 'hana', '--seller', '-1'], /^plaza: Option '--seller' argument is ambiguous\. A value that starts with a dash is written --seller=<value>\.\n/],
      [['users', 'frob', '--help'], /Unknown command "users frob"/],
      [['migrate', '--hlep'], /Unknown option '--hlep'\./],
      [['migrate', 'now'], /Unexpected argument "now"/],
      [['users', 'add', 'erin', '--seller', '42', '--password', 'x'], /Unknown option '--password'\./],
      [['users', 'add', 'carol', '--seller', '42', '--role', 'marketplace'], /--marketplace <code> is required/],
      [['users', 'add', 'dave', '--seller', '42', '--role', 'root'], /--role must be one of/],
      [['users', 'add', 'frank'], /--seller is required \(except with --role admin\)/],
      [['users', 'set-active', 'alice', 'maybe'], /true\|false/],
      [['marketplaces', 'add', 'bad code!', '--name', 'x'], /<code> must be 1 to 100 ASCII letters, digits, "_" or "-"\./],
      [['sellers', 'add', 'abc', '--name', 'x'], /positive integer/],
      [['connections', 'add', '--seller', '42'], /--marketplace is required/],
      [['serve', '--role', 'everything'], /--role must be all, api or worker/],
      [['api-keys', 'add', '--name', 'x'], /--role is required/],
      [['api-keys', 'add', '--name', 'x', '--role', 'seller'], /--seller <id> is required with --role seller/],
      [['api-keys', 'add', '--name', 'x', '--role', 'admin', '--marketplace', 'MKT'], /--marketplace <code> is required with --role marketplace, and only with it/],
      [['api-keys', 'revoke', 'x1'], /positive integer/],
      [['sellers', 'deactivate', 'abc'], /<id> must be a positive integer/],
      [['sellers', 'activate'], /<id> is required/],
      [['marketplaces', 'deactivate', 'bad code!'], /<code> must be 1 to 100 ASCII letters/],
      [['marketplaces', 'activate', 'meli', 'extra'], /Unexpected argument "extra"/],
      // The names' rule of the admin API: no control characters, at most 200 characters.
      [['marketplaces', 'add', 'meli', '--name', 'Mercado\tLibre'], /--name must not contain control characters/],
      [['sellers', 'add', '42', '--name', 'Acme\u0000'], /--name must not contain control characters/],
      [['api-keys', 'add', '--name', 'ci\nkey', '--role', 'admin'], /--name must not contain control characters/],
      [['sellers', 'add', '42', '--name', 'x'.repeat(201)], /--name must be at most 200 characters/],
      [['sellers', 'add', '42', '--name', '\u200b'], /--name must contain a visible character/],
      // User names: the admin API's rule for new names (a name login could never take, or one that
      // looks like another, is not created).
      [['users', 'add', 'z\ted', '--seller', '1'], /<username> may hold only letters, digits.*\(not U\+0009\)/],
      [['users', 'add', 'nl\nuser', '--seller', '1'], /<username> may hold only letters/],
      [['users', 'add', 'u'.repeat(201), '--seller', '1'], /<username> must be at most 200 characters/],
      [['users', 'add', '\u0430lice', '--seller', '1'], /<username> must not mix scripts/],
    ];
    for (const [args, message] of cases) {
      const run = await runInProcess(args, { stdin: STRONG_PASSWORD });
      assert.equal(run.code, 2, `plaza ${args.join(' ')}: ${run.stderr}`);
      assert.match(run.stderr, message, `plaza ${args.join(' ')}`);
      assert.equal(run.openedDatabase, false, `plaza ${args.join(' ')} opened the database`);
    }
  });

  test('creates, lists and deletes marketplaces, sellers, connections and users', async () => {
    assert.equal((await plaza(['marketplaces', 'add', 'meli', '--name', 'Mercado Libre'])).code, 0);
    assert.equal((await plaza(['sellers', 'add', '42', '--name', 'Acme'])).code, 0);
    const connection = await plaza(['connections', 'add', '--seller', '42', '--marketplace', 'meli']);
    assert.match(connection.stdout.trim(), /^\d+$/, 'prints the new connection id');
    const user = await plaza(['users', 'add', 'alice', '--seller', '42'], `${STRONG_PASSWORD}\n`);
    assert.equal(user.code, 0, user.stderr);
    const root = await plaza(['users', 'add', 'root', '--role', 'admin'], STRONG_PASSWORD);
    assert.equal(root.code, 0, root.stderr);
    const alice = await findUserByUsername(ctx.db, 'ALICE');
    assert.ok(alice && (await verifyPassword(alice.password_hash, STRONG_PASSWORD)), 'the password came from stdin, without its newline');
    assert.equal((await findUserByUsername(ctx.db, 'root'))?.seller_id, null);

    assert.match((await plaza(['marketplaces', 'list'])).stdout, /^CODE +NAME +ACTIVE +CREATED\nmeli +Mercado Libre +true/m);
    assert.match((await plaza(['sellers', 'list'])).stdout, /^42 +Acme +true/m);
    assert.match((await plaza(['connections', 'list', '--marketplace', 'meli'])).stdout, new RegExp(`^${connection.stdout.trim()} +42 +meli`, 'm'));
    const users = (await plaza(['users', 'list'])).stdout;
    assert.match(users, /alice +seller +42/);
    assert.match(users, /root +admin +- /);
    assert.doesNotMatch(users, /argon2/);

    const cases: [string[], string, RegExp][] = [
      [['users', 'add', 'bob', '--seller', '42'], 'short', /at least 8 characters/],
      // Login refuses a NUL in any string before it looks at the password: such a user could never log in.
      [['users', 'add', 'bob', '--seller', '42'], 'Secr3tPassw\u0000rd', /holds a NUL character/],
      [['users', 'reset-password', 'alice'], 'Secr3tPassw\u0000rd', /holds a NUL character/],
      [['users', 'add', 'bob', '--seller', '999'], STRONG_PASSWORD, /There is no seller 999\./],
      [['users', 'add', 'alice', '--seller', '42'], STRONG_PASSWORD, /User alice already exists/],
      [['connections', 'add', '--seller', '42', '--marketplace', 'nowhere'], '', /There is no marketplace nowhere\./],
      [['users', 'set-active', 'nobody', 'true'], '', /No user is named/],
      [['marketplaces', 'delete', 'meli'], '', /still in use \(marketplace_connections\)/],
    ];
    for (const [args, stdin, message] of cases) {
      const run = await plaza(args, stdin);
      assert.equal(run.code, 2, `plaza ${args.join(' ')}: ${run.stderr}`);
      assert.match(run.stderr, message, `plaza ${args.join(' ')}`);
      assert.doesNotMatch(run.stderr, /Key \(|table "/, 'no database internals');
    }
    assert.equal((await plaza(['connections', 'delete', connection.stdout.trim()])).code, 0);
    assert.equal((await plaza(['users', 'delete', 'root'])).code, 0);
    assert.equal(await findUserByUsername(ctx.db, 'root'), undefined);
  });

  test('deactivate revokes every session; reset-password takes stdin and ends sessions', async () => {
    const user = { username: 'carla', password: STRONG_PASSWORD };
    assert.equal((await plaza(['users', 'add', user.username, '--seller', '42'], user.password)).code, 0);
    const session = await loginOk(ctx, user);
    assert.equal((await plaza(['users', 'deactivate', 'carla'])).code, 0);
    assert.equal((await plaza(['users', 'activate', 'carla'])).code, 0);
    assert.equal((await postRefresh(ctx, session.refresh_token)).statusCode, 401, 're-activation does not revive the session');
    const again = await loginOk(ctx, user);
    const reset = await plaza(['users', 'reset-password', 'carla'], `${OTHER_STRONG_PASSWORD}\n`);
    assert.equal(reset.code, 0, reset.stderr);
    assert.equal((await postRefresh(ctx, again.refresh_token)).statusCode, 401);
    await loginOk(ctx, { username: 'carla', password: OTHER_STRONG_PASSWORD });
    const { rows } = await ctx.db.query<{ action: string }>(`SELECT action FROM admin_audit WHERE actor = 'cli' AND target_kind = 'user' ORDER BY id`);
    assert.ok(['deactivate', 'activate', 'reset_password'].every((action) => rows.some((row) => row.action === action)));
  });

  test('sellers and marketplaces deactivate: sessions end, login refused; activate: login works, old sessions stay revoked', async () => {
    assert.equal((await plaza(['marketplaces', 'add', 'cli-mkt', '--name', 'CLI market'])).code, 0);
    assert.equal((await plaza(['sellers', 'add', '77', '--name', 'Seventy-seven'])).code, 0);
    const dora = { username: 'dora', password: STRONG_PASSWORD };
    const mona = { username: 'mona', password: STRONG_PASSWORD };
    assert.equal((await plaza(['users', 'add', dora.username, '--seller', '77'], dora.password)).code, 0);
    assert.equal((await plaza(['users', 'add', mona.username, '--seller', '77', '--role', 'marketplace', '--marketplace', 'cli-mkt'], mona.password)).code, 0);
    const login = (user: typeof dora) => ctx.app.inject({ method: 'POST', url: '/api/v2/auth/login', payload: user });

    const doraSession = await loginOk(ctx, dora);
    const off = await plaza(['sellers', 'deactivate', '77']);
    assert.equal(off.code, 0, off.stderr);
    assert.match(off.stdout, /Seller 77 is now inactive/);
    assert.match((await plaza(['sellers', 'list'])).stdout, /^77 +Seventy-seven +false/m);
    assert.equal((await postRefresh(ctx, doraSession.refresh_token)).statusCode, 403);
    assert.equal((await login(dora)).statusCode, 403);
    // A marketplace user is bound by its marketplace, not by the seller it also names.
    const monaSession = await loginOk(ctx, mona);
    assert.equal((await plaza(['sellers', 'activate', '77'])).code, 0);
    assert.equal((await postRefresh(ctx, doraSession.refresh_token)).statusCode, 401, 're-activation does not revive the session');
    await loginOk(ctx, dora);

    assert.equal((await plaza(['marketplaces', 'deactivate', 'cli-mkt'])).code, 0);
    assert.match((await plaza(['marketplaces', 'list'])).stdout, /^cli-mkt +CLI market +false/m);
    assert.equal((await postRefresh(ctx, monaSession.refresh_token)).statusCode, 403);
    assert.equal((await login(mona)).statusCode, 403);
    assert.equal((await plaza(['marketplaces', 'activate', 'cli-mkt'])).code, 0);
    await loginOk(ctx, mona);

    for (const [args, message] of [[['sellers', 'deactivate', '999'], /There is no seller 999\./], [['marketplaces', 'activate', 'nowhere'], /There is no marketplace nowhere\./]] as const) {
      const run = await plaza([...args]);
      assert.equal(run.code, 2);
      assert.match(run.stderr, message);
    }
    const { rows } = await ctx.db.query<{ action: string; target_kind: string }>(`SELECT action, target_kind FROM admin_audit WHERE actor = 'cli' AND target_id IN ('77', 'cli-mkt') AND action IN ('deactivate', 'activate') ORDER BY id`);
    assert.deepEqual(rows.map((r) => `${r.action} ${r.target_kind}`), ['deactivate seller', 'activate seller', 'deactivate marketplace', 'activate marketplace']);
  });

  test('api-keys add prints the key once; list never shows it; revoke stops it at once', async () => {
    const added = await plaza(['api-keys', 'add', '--name', 'meli producer', '--role', 'marketplace', '--marketplace', 'meli']);
    assert.equal(added.code, 0, added.stderr);
    const key = added.stdout.trim();
    assert.match(key, /^plz_[A-Za-z0-9_-]{43}$/);
    assert.match(added.stderr, /shown only now/);
    const list = await plaza(['api-keys', 'list']);
    assert.match(list.stdout, /meli producer +plz_\S{6} +marketplace +meli/);
    assert.ok(!list.stdout.includes(key.slice(10)));
    const call = () => ctx.app.inject({ url: '/v1/meli/webhooks', headers: { authorization: `Bearer ${key}` } });
    assert.equal((await call()).statusCode, 200);
    const id = /^(\d+) +meli producer/m.exec(list.stdout)![1]!;
    assert.equal((await plaza(['api-keys', 'revoke', id])).code, 0);
    assert.equal((await call()).statusCode, 401);
    assert.equal((await plaza(['api-keys', 'revoke', '99999'])).code, 2);
    const admin = await plaza(['api-keys', 'add', '--name', 'ops', '--role', 'admin']);
    assert.equal(admin.code, 0, admin.stderr);
  });

  test('keys rotate-jwt and rotate-secrets-key', async () => {
    const status = await plaza(['keys', 'status']);
    assert.equal(status.code, 0, status.stderr);
    const rotated = await plaza(['keys', 'rotate-jwt']);
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.match(rotated.stdout, /New JWT signing key \S+ \(ES256\): published now, signs from \S+ \(in 390 s: 60 s for every process to publish it \+ JWKS_MAX_AGE_SECONDS 300 \+ JWT_VERIFIER_COOLDOWN_SECONDS 30\)\./);
    // Another algorithm than JWT_ALGORITHM's, for this rotation: the key table records each key's.
    const rsa = await plaza(['keys', 'rotate-jwt', '--algorithm', 'RS256']);
    assert.equal(rsa.code, 0, rsa.stderr);
    const rsaKid = /New JWT signing key (\S+) \(RS256\)/.exec(rsa.stdout)?.[1];
    assert.ok(rsaKid, rsa.stdout);
    assert.match((await plaza(['keys', 'status'])).stdout, new RegExp(`${rsaKid} +RS256 `));
    for (const wrong of ['HS256', 'es256', 'none']) {
      const refused = await plaza(['keys', 'rotate-jwt', '--algorithm', wrong]);
      assert.equal(refused.code, 2, wrong);
      assert.match(refused.stderr, /--algorithm must be one of ES256, EdDSA, RS256\./);
    }
    const secrets = await plaza(['keys', 'rotate-secrets-key']);
    assert.equal(secrets.code, 0, secrets.stderr);
    const next = /New SECRETS_KEY=(\S+)/.exec(secrets.stdout)?.[1];
    assert.ok(next);
    // The configuration still holds the old key: it no longer opens the database's secrets.
    const stale = await plaza(['keys', 'rotate-jwt']);
    assert.equal(stale.code, 2);
    assert.match(stale.stderr, /SECRETS_KEY differs/);
    config = loadConfig({ LOG_LEVEL: 'silent', SECRETS_KEY: next });
    assert.equal((await plaza(['keys', 'rotate-jwt'])).code, 0);
  });
});

describe('plaza as a process', () => {
  const dataDir = join(mkdtempSync(join(tmpdir(), 'plaza-cli-')), 'data');
  after(() => rmSync(join(dataDir, '..'), { recursive: true, force: true }));

  test('output into a pipe whose reader is gone (`plaza help | head -1`) ends the command normally, not with an EPIPE stack', async () => {
    const child = spawn(process.execPath, [MAIN_JS, 'help'], { env: { PATH: process.env.PATH ?? '', DATA_DIR: dataDir } });
    // The reader goes before the first write.
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
    const { code } = await closed(child);
    assert.equal(code, 0, stderr);
    assert.equal(stderr, '');
  });

  test('help, --help and mistakes touch no database: the data directory is never created', async () => {
    const env = { DATA_DIR: dataDir };
    // Every command's help is checked in-process above; these few prove the real entry point.
    for (const args of [['--version'], ['serve', '--help'], ['migrate', '--help']]) {
      const run = await runPlaza(env, args);
      assert.equal(run.code, 0, `${args.join(' ')}: ${run.stderr}`);
      assert.doesNotMatch(run.stderr, /\n\s+at /);
    }
    for (const args of [['migrate', '--hlep'], ['users', 'add', 'x', '--role', 'root']]) {
      const run = await runPlaza(env, args);
      assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
      assert.doesNotMatch(run.stderr, /\n\s+at /, 'no stack trace for a usage error');
    }
    assert.equal(existsSync(dataDir), false);
  });

  test('a server whose SECRETS_KEY differs from the database\'s refuses to start, saying which key', async () => {
    const testDb = process.env.DATABASE_URL ? await createTestDatabase() : undefined;
    const database: Record<string, string> = testDb ? { DATABASE_URL: testDb.url! } : { DATA_DIR: join(dataDir, '..', 'embedded') };
    try {
      const keyA = randomBytes(32).toString('base64');
      const first = await runPlaza({ ...database, SECRETS_KEY: keyA }, ['keys', 'rotate-jwt']);
      assert.equal(first.code, 0, first.stderr);
      const other = await runPlaza({ ...database, SECRETS_KEY: randomBytes(32).toString('base64'), PORT: '0', HOST: '127.0.0.1' }, ['serve'], '', 60_000);
      assert.equal(other.code, 2, other.stderr);
      assert.match(other.stderr, /SECRETS_KEY differs: this process's key \(from SECRETS_KEY, fingerprint [0-9a-f]+\) is not the one this database's secrets are encrypted under/);
      assert.doesNotMatch(other.stderr, /\n\s+at /);
    } finally {
      await testDb?.close();
    }
  });

  test('a wrong configuration value names the variable', async () => {
    const run = await runPlaza({ DATA_DIR: dataDir, PORT: 'eighty' }, ['migrate']);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /PORT="eighty"/);
  });
});
