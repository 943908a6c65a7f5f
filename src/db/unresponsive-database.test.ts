import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createTestDatabase } from '../testing/test-database.js';
import { isUnavailable } from './database.js';
import { openPostgres } from './postgres.js';

// A bound on the test: without the driver's timeout the query would wait for ever.
test('a database that stops answering: a query gives up after statement_timeout plus the connect timeout, as unavailable (503), and the pool goes on with a new connection', { timeout: 30_000 }, async () => {
  const copy = await createTestDatabase();
  const db = openPostgres({ connectionString: copy.url, poolSize: 1, connectTimeoutMs: 500, statementTimeoutMs: 500 });
  const { rows } = await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  const backend = rows[0]!.pid;
  // The server process of the pool's one connection stops: it neither answers nor ends the statement.
  process.kill(backend, 'SIGSTOP');
  // Resumed whatever happens to the test, so that its database can still be dropped.
  const resume = setTimeout(() => process.kill(backend, 'SIGCONT'), 10_000);
  try {
    const started = Date.now();
    await assert.rejects(db.query('SELECT 1'), (error) => isUnavailable(error));
    // It waited for both timeouts (a slow machine only waits longer). No upper bound on the clock:
    // a query that waited for ever would be answered once the backend resumes, and not reject.
    const waited = Date.now() - started;
    assert.ok(waited >= 900, `gave up after ${waited} ms`);
  } finally {
    clearTimeout(resume);
    process.kill(backend, 'SIGCONT');
  }
  const after = await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  assert.notEqual(after.rows[0]!.pid, backend, 'the stuck connection was dropped');
  await db.close();
  await copy.close();
});
