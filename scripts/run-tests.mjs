#!/usr/bin/env node
// Runs the compiled tests (dist/**/*.test.js) with node's test runner, after preparing one
// migrated database template for the whole run. `npm test -- auth webhooks` runs only the test
// files whose path contains one of the words. The tests use DATABASE_URL's PostgreSQL server;
// without it, one embedded PostgreSQL server started here in a temporary directory for the run.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;

// package.json's engines (22.15+ or 24+; a test preloads module.registerHooks): on another Node the
// run stops here with the reason, not minutes later at the one test that needs it.
const [major, minor] = process.versions.node.split('.').map(Number);
if (major === 22 ? minor < 15 : major < 24) {
  console.error(`Node ${process.versions.node} is not supported: the tests need Node 22.15+ or 24+ (package.json, engines).`);
  process.exit(1);
}
const filters = process.argv.slice(2);
const suite = process.env.PLAZA_TEST_SUITE ?? 'unit';

function findTests(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return findTests(path);
    return name.endsWith('.test.js') ? [path] : [];
  });
}

function isAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

const isReliability = (file) => file.includes('/reliability/');
// A compiled test whose source is gone (moved or deleted since the last build: the build never empties
// dist/) is not run: it would test code that no longer exists.
const hasSource = (file) => existsSync(join(root, relative(join(root, 'dist'), file)).replace(/\.js$/, '.ts'));
const files = findTests(join(root, 'dist'))
  .filter(hasSource)
  .filter((file) => (suite === 'reliability' ? isReliability(file) : !isReliability(file)))
  .filter((file) => filters.length === 0 || filters.some((word) => relative(root, file).includes(word)))
  .sort();
if (files.length === 0) {
  console.error(`No test files match ${filters.join(' ') || '(all)'}.`);
  process.exit(1);
}

const { migrate } = await import('../dist/src/db/migrate.js');
const env = { ...process.env };
const cleanups = [];
let child;
let cleaning;
// Also on Ctrl-C or a CI timeout: stop the embedded server and remove its directory.
const cleanUp = () => (cleaning ??= (async () => {
  for (const cleanup of cleanups.reverse()) await Promise.resolve().then(cleanup).catch((error) => console.error('cleanup:', error));
})());
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    child?.kill(signal);
    void cleanUp().then(() => process.exit(130));
  });
}

if (!process.env.DATABASE_URL) {
  const { EmbeddedServer, connectionString } = await import('../dist/src/db/embedded/server.js');
  const dir = mkdtempSync(join(tmpdir(), 'plaza-test-pg-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const quiet = { info: (_details, message) => console.error(`npm test: ${message}`), warn: () => {}, error: (_details, message) => console.error(`npm test: ${message}`) };
  const server = await EmbeddedServer.start(dir, quiet, { throwaway: true });
  cleanups.push(() => server.stop());
  // The superuser: the runner and the tests create databases (Plaza itself connects as its own role).
  env.DATABASE_URL = connectionString(server.adminConnection);
}

{
  const url = env.DATABASE_URL;
  const { withAdminClient, withDatabase } = await import('../dist/src/testing/test-database.js');
  const { openPostgres } = await import('../dist/src/db/postgres.js');
  const template = `plaza_test_template_${process.pid}`;
  await withAdminClient(url, async (admin) => {
    // Copies left by runs that were killed before their cleanup; their names carry the pid of their
    // creator, so the databases of runs still going on (another terminal, CI) are left alone.
    const stale = await admin.query(`SELECT datname FROM pg_database WHERE datname ~ '^plaza_test_(template_)?[0-9]+'`);
    for (const { datname } of stale.rows) {
      const pid = Number(/^plaza_test_(?:template_)?(\d+)/.exec(datname)[1]);
      if (!isAlive(pid)) await admin.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`).catch(() => {});
    }
    await admin.query(`CREATE DATABASE ${template}`);
  });
  const db = openPostgres({ connectionString: withDatabase(url, template), poolSize: 1, connectTimeoutMs: 5000, statementTimeoutMs: 60_000 });
  await migrate(db);
  await db.close();
  env.PLAZA_TEST_TEMPLATE_DB = template;
  cleanups.push(() => withAdminClient(url, (admin) => admin.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`)));
}

const concurrency = process.env.PLAZA_TEST_CONCURRENCY ?? '2';
// A test that waits for something that never comes (a NOTIFY lost, say) fails after this instead of
// hanging the run until CI gives up on it; the reliability suite's tests set their own, longer ones.
const timeout = suite === 'reliability' ? [] : ['--test-timeout=300000'];
child = spawn(process.execPath, ['--enable-source-maps', '--test', `--test-concurrency=${concurrency}`, ...timeout, ...files], { env, stdio: 'inherit' });
const code = await new Promise((resolve) => child.on('exit', (exitCode, signal) => resolve(exitCode ?? (signal ? 1 : 0))));
await cleanUp();
process.exit(code);
