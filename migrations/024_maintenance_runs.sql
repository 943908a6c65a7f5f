-- Issue 29: the maintenance scheduler (src/maintenance/, docs/operations.md "Maintenance"). One row
-- per job: when its last run started, by the database's clock, so that the processes of an
-- installation (every role runs the scheduler) run each job once per interval between them. A
-- process writes a job's row only while it holds the job's advisory lock. The previous release
-- neither reads nor writes this table (its workers prune on their own, unlocked, as before).
CREATE TABLE maintenance_runs (
  job text PRIMARY KEY,
  last_run_at timestamptz NOT NULL,
  -- Runs started, failed ones included.
  runs bigint NOT NULL DEFAULT 1,
  -- The last run's error message; null when it succeeded.
  last_error text
);
