import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { findUserByUsername } from '../accounts/accounts.repository.js';
import { verifyPassword } from '../auth/passwords.js';
import type { Database } from '../db/database.js';
import { projectRoot } from '../paths.js';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.js';

const CLI = join(projectRoot, 'dist/src/main.js');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `plaza …` as a user would, against DATABASE_URL (the embedded server's own path is in test/reliability/embedded.test.ts). */
function plaza(env: Record<string, string>, args: string[], stdin = ''): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'silent', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

describe('plaza CLI', () => {
  let testDb: TestDatabase;
  let env: Record<string, string>;

  before(async () => {
    testDb = await createTestDatabase();
    env = { DATABASE_URL: testDb.url };
  });
  after(() => testDb.close());

  /** Reads the database the CLI wrote. */
  const inspect = <T>(work: (db: Database) => Promise<T>): Promise<T> => work(testDb);

  test('migrate reports what it did', async () => {
    const first = await plaza(env, ['migrate']);
    assert.equal(first.code, 0, first.stderr);
    const second = await plaza(env, ['migrate']);
    assert.equal(second.code, 0, second.stderr);
    assert.match(second.stdout, /up to date/);
  });

  test('creates marketplaces, sellers, connections and users', async () => {
    assert.equal((await plaza(env, ['marketplaces', 'add', 'meli', '--name', 'Mercado Libre'])).code, 0);
    assert.equal((await plaza(env, ['sellers', 'add', '42', '--name', 'Acme'])).code, 0);
    const connection = await plaza(env, ['connections', 'add', '--seller', '42', '--marketplace', 'meli']);
    assert.equal(connection.code, 0, connection.stderr);
    assert.match(connection.stdout.trim(), /^\d+$/, 'prints the new connection id');

    const user = await plaza(env, ['users', 'add', 'alice', '--seller', '42'], 's3cret-passw0rd\n');
    assert.equal(user.code, 0, user.stderr);
    const operator = await plaza(env, ['users', 'add', 'meli-ops', '--seller', '42', '--role', 'marketplace', '--marketplace', 'meli', '--inactive'], 'another-passw0rd');
    assert.equal(operator.code, 0, operator.stderr);

    await inspect(async (db) => {
      const alice = await findUserByUsername(db, 'ALICE');
      assert.ok(alice);
      assert.equal(alice.seller_id, 42);
      assert.equal(alice.role, 'seller');
      assert.equal(alice.active, true);
      assert.ok(await verifyPassword(alice.password_hash, 's3cret-passw0rd'), 'the password came from stdin, without its newline');
      assert.doesNotMatch(alice.password_hash, /s3cret/);
      const ops = await findUserByUsername(db, 'meli-ops');
      assert.equal(ops?.role, 'marketplace');
      assert.equal(ops?.marketplace_code, 'meli');
      assert.equal(ops?.active, false);
      const { rows } = await db.query(`SELECT count(*)::int AS n FROM marketplace_connections WHERE seller_id = 42`);
      assert.deepEqual(rows, [{ n: 1 }]);
    });
  });

  test('users set-active switches a user on and off', async () => {
    assert.equal((await plaza(env, ['users', 'set-active', 'alice', 'false'])).code, 0);
    await inspect(async (db) => assert.equal((await findUserByUsername(db, 'alice'))?.active, false));
    assert.equal((await plaza(env, ['users', 'set-active', 'alice', 'true'])).code, 0);
    await inspect(async (db) => assert.equal((await findUserByUsername(db, 'alice'))?.active, true));
  });

  test('mistakes get a clear message and exit code 2', async () => {
    const cases: [string[], string, RegExp][] = [
      [['users', 'add', 'bob', '--seller', '42'], 'short', /at least 8 characters/],
      [['users', 'add', 'bob', '--seller', '999'], 'long-enough-password', /There is no seller 999\. Add it first: plaza sellers add/],
      [['users', 'add', 'alice', '--seller', '42'], 'long-enough-password', /"alice" already exists/],
      [['connections', 'add', '--seller', '42', '--marketplace', 'nowhere'], '', /There is no marketplace nowhere\./],
      [['users', 'add', 'erin', '--seller', '42', '--password', 'x'], '', /Unknown option '--password'\.$/m],
      [['users', 'add', 'carol', '--seller', '42', '--role', 'marketplace'], 'long-enough-password', /--marketplace <code> is required/],
      [['users', 'add', 'dave', '--seller', '42', '--role', 'root'], 'long-enough-password', /--role must be one of/],
      [['users', 'set-active', 'nobody', 'true'], '', /No user is named/],
      [['users', 'set-active', 'alice', 'maybe'], '', /true\|false/],
      [['marketplaces', 'add', 'bad code!', '--name', 'x'], '', /only letters, digits/],
      [['sellers', 'add', 'abc', '--name', 'x'], '', /positive integer/],
      [['connections', 'add', '--seller', '42'], '', /--marketplace is required/],
      [['serve', '--role', 'everything'], '', /--role must be all, api or worker/],
      [['frobnicate'], '', /Unknown command/],
    ];
    for (const [args, stdin, message] of cases) {
      const run = await plaza(env, args, stdin);
      assert.equal(run.code, 2, `plaza ${args.join(' ')}: ${run.stderr}`);
      assert.match(run.stderr, message, `plaza ${args.join(' ')}`);
      assert.doesNotMatch(run.stderr, /\n\s+at /, 'no stack trace for a usage error');
      assert.doesNotMatch(run.stderr, /Key \(|table "/, 'no database internals');
    }
  });

  test('a wrong configuration value names the variable', async () => {
    const run = await plaza({ ...env, PORT: 'eighty' }, ['migrate']);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /PORT="eighty"/);
  });
});
