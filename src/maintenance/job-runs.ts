import type { Database } from '../db/database.js';
import { dbNow } from '../db/database-clock.js';

/**
 * Runs `work` when the job is due (its last run, by any process, started at least `intervalSeconds`
 * ago by the database clock) and no other process is running it; otherwise returns at once. Returns
 * how long until the job should be looked at again (milliseconds).
 *
 * The lock is an advisory one taken with pg_try_advisory_xact_lock, held by a transaction that
 * stays open while `work` runs on other connections of the pool (a prune is many short statements,
 * each committed on its own). Not a row lock: locking a row gives the transaction an id, which would
 * hold back VACUUM in every table (the delivery queue's too) for as long as the job runs; an advisory
 * lock does not. When the process dies, its connection and the lock go with it, and the run was not
 * recorded: another process runs the job at its next pass. `work` returns its error message (null
 * when it succeeded): a failed run is recorded too, so that it is tried again after the interval
 * rather than at every pass.
 */
export async function runIfDue(db: Database, job: string, intervalSeconds: number, clockOffsetMs: number, work: () => Promise<string | null>): Promise<number> {
  const intervalMs = intervalSeconds * 1000;
  return db.transaction(async (tx) => {
    const { rows: [lock] } = await tx.query<{ locked: boolean }>(
      `SELECT pg_try_advisory_xact_lock(hashtextextended('plaza:maintenance:' || $1, 0)) AS locked`,
      [job],
    );
    // Another process is running it: it records the run when done.
    if (!lock!.locked) return intervalMs;
    // A statement of its own: its snapshot, taken once the lock is held, sees a run that another
    // process recorded just before it let the lock go. The locking statement's, taken before the
    // lock, might not, and the job would run twice.
    const { rows: [due] } = await tx.query<{ now: Date; wait_ms: number | null }>(
      `SELECT ${dbNow(2)} AS now,
              (SELECT extract(epoch FROM last_run_at + make_interval(secs => $3) - ${dbNow(2)})::float8 * 1000
                 FROM maintenance_runs WHERE job = $1) AS wait_ms`,
      [job, clockOffsetMs, intervalSeconds],
    );
    if (due!.wait_ms !== null && due!.wait_ms > 0) return due!.wait_ms;
    const error = await work();
    await tx.query(
      `INSERT INTO maintenance_runs AS r (job, last_run_at, last_error) VALUES ($1, $2, $3)
       ON CONFLICT (job) DO UPDATE SET last_run_at = excluded.last_run_at, runs = r.runs + 1, last_error = excluded.last_error`,
      [job, due!.now, error],
    );
    return intervalMs;
  });
}
