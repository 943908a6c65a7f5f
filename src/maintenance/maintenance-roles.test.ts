import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { killAllPlaza, sharedKeyEnv, startPlaza, type PlazaProcess, type Role } from '../testing/plaza-process.js';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.js';
import { waitFor } from '../testing/wait.js';

/** The jobs src/maintenance-jobs.ts registers. */
const JOBS = ['auth-records', 'delivery-retention', 'entity-snapshots', 'failing-webhooks', 'portal-links', 'webhook-history'];

/**
 * Real `plaza serve` processes of each role on one database, with the real clock: maintenance runs
 * in every role, and the processes together run each job once per interval.
 */
describe('maintenance in every role', { timeout: 120_000 }, () => {
  const keys = sharedKeyEnv();
  const databases: TestDatabase[] = [];
  after(async () => {
    await killAllPlaza();
    await Promise.all(databases.map((db) => db.close()));
  });

  const database = async () => {
    const db = await createTestDatabase();
    databases.push(db);
    return db;
  };
  const serve = (db: TestDatabase, role: Role, env: Record<string, string> = {}) => startPlaza({ DATABASE_URL: db.url, ...keys, ...env }, { role });
  const stop = async (plaza: PlazaProcess) => assert.deepEqual(await plaza.kill('SIGTERM'), { code: 0, signal: null });
  /** Polls (at most 60 s) until `done()` resolves to true. */
  const until = (done: () => Promise<boolean>) => waitFor(done, { timeoutMs: 60_000 });

  test('an API-only installation prunes auth events past the retention', async () => {
    const db = await database();
    await db.query(
      `INSERT INTO auth_events (type, username, created_at) VALUES ('login_succeeded', 'old', now() - interval '91 days'), ('login_succeeded', 'recent', now() - interval '89 days')`,
    );
    const api = await serve(db, 'api', { AUTH_AUDIT_RETENTION_DAYS: '90' });
    await until(async () => (await db.query(`SELECT 1 FROM auth_events WHERE username = 'old'`)).rowCount === 0);
    await stop(api);
    const { rows } = await db.query<{ username: string }>(`SELECT username FROM auth_events`);
    assert.deepEqual(rows, [{ username: 'recent' }]);
    const run = await db.query<{ runs: number; last_error: string | null }>(`SELECT runs, last_error FROM maintenance_runs WHERE job = 'auth-records'`);
    assert.deepEqual(run.rows, [{ runs: 1, last_error: null }]);
  });

  test('processes of the three roles run each job once per interval between them', async () => {
    const db = await database();
    const intervalMs = 1000;
    const runs = async () => {
      const { rows } = await db.query<{ job: string; runs: number; last_run_at: Date; last_error: string | null }>(`SELECT job, runs, last_run_at, last_error FROM maintenance_runs ORDER BY job`);
      return new Map(rows.map((row) => [row.job, row]));
    };
    const env = { MAINTENANCE_INTERVAL_SECONDS: String(intervalMs / 1000) };
    // The API first, the others once it has run every job: they start at some moment of its
    // interval, not in step with it, as processes of an installation do.
    const processes = [await serve(db, 'api', env)];
    await until(async () => (await runs()).size === JOBS.length);
    const first = await runs();
    processes.push(...(await Promise.all([serve(db, 'worker', env), serve(db, 'all', env)])));
    await until(async () => [...(await runs()).values()].every((row) => row.runs >= first.get(row.job)!.runs + 4));
    await Promise.all(processes.map(stop));

    // Whichever process ran it, each run started at least an interval after the run before it:
    // k runs after the first snapshot started at least k intervals after the run it recorded.
    // Three processes that each ran every job would have made about three runs per interval.
    const last = await runs();
    assert.deepEqual([...last.keys()], JOBS);
    for (const [job, row] of last) {
      const before = first.get(job)!;
      const spanMs = row.last_run_at.getTime() - before.last_run_at.getTime();
      assert.ok(spanMs >= (row.runs - before.runs) * intervalMs, `${job}: ${row.runs - before.runs} runs in ${spanMs} ms`);
      assert.equal(row.last_error, null, job);
    }
  });
});
