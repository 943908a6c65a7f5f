import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { projectRoot } from '../paths.js';
import { exited, untilOutput } from '../testing/child-process.js';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.js';

/** The jobs src/maintenance-jobs.ts registers. */
const JOBS = ['auth-records', 'delivery-retention', 'entity-snapshots', 'failing-webhooks', 'portal-links', 'webhook-history'];

/**
 * Real `plaza serve` processes of each role on one database, with the real clock: maintenance runs
 * in every role, and the processes together run each job once per interval.
 */
describe('maintenance in every role', { timeout: 120_000 }, () => {
  let dataDir: string;
  const secretsKey = randomBytes(32).toString('base64');
  const children: ChildProcess[] = [];
  const databases: TestDatabase[] = [];

  before(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'plaza-maintenance-'));
  });
  after(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await Promise.all(databases.map((db) => db.close()));
    rmSync(dataDir, { recursive: true, force: true });
  });

  const database = async () => {
    const db = await createTestDatabase();
    databases.push(db);
    return db;
  };
  const serve = (db: TestDatabase, role: string, env: Record<string, string> = {}) => {
    const child = spawn(process.execPath, [join(projectRoot, 'dist/src/main.js'), 'serve', '--role', role], {
      env: { ...process.env, DATABASE_URL: db.url, DATA_DIR: dataDir, SECRETS_KEY: secretsKey, PORT: '0', METRICS_PORT: '0', LOG_LEVEL: 'info', LOG_FORMAT: 'json', ...env },
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk));
    children.push(child);
    return Object.assign(child, { started: () => untilOutput(child, child.stdout, () => out.includes('"plaza started"')) });
  };
  const stop = async (child: ChildProcess) => {
    child.kill('SIGTERM');
    assert.deepEqual(await exited(child), { code: 0, signal: null });
  };
  /** Polls (at most 60 s) until `done()` resolves to true. */
  const until = async (done: () => Promise<boolean>) => {
    for (let i = 0; i < 600; i++) {
      if (await done()) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.fail('waited 60 s');
  };

  test('an API-only installation prunes auth events past the retention', async () => {
    const db = await database();
    await db.query(
      `INSERT INTO auth_events (type, username, created_at) VALUES ('login_succeeded', 'old', now() - interval '91 days'), ('login_succeeded', 'recent', now() - interval '89 days')`,
    );
    const api = serve(db, 'api', { AUTH_AUDIT_RETENTION_DAYS: '90' });
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
    const processes = [serve(db, 'api', env)];
    await until(async () => (await runs()).size === JOBS.length);
    const first = await runs();
    const later = [serve(db, 'worker', env), serve(db, 'all', env)];
    processes.push(...later);
    for (const child of later) assert.ok(await child.started(), 'started');
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
