import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import type { Database } from '../db/database.js';
import { clockOffsetMs } from '../db/database-clock.js';
import { runIfDue } from './job-runs.js';

/**
 * A periodic job a feature registers (the wiring is in src/maintenance-jobs.ts). The scheduler knows
 * nothing of what it does.
 */
export interface MaintenanceJob {
  /** Stable and unique: it names the job's lock, its row in maintenance_runs and its log lines. */
  readonly name: string;
  /** How often the job runs, over all processes together; 0: never by this process. */
  readonly intervalSeconds: number;
  /** One run; returns what it removed or changed (a count, or counts by kind) for the log line. */
  run(db: Database, now: Date): Promise<number | Record<string, number>>;
}

export interface MaintenanceDeps {
  db: Database;
  clock: Clock;
  logger: FastifyBaseLogger;
}

export interface MaintenanceScheduler {
  /** A pass now, after the one in progress: runs each job that is due and that no other process is running. */
  runDue(): Promise<void>;
  /** Cancels the next pass and waits for the one in progress: the pool is not used once this resolves. */
  stop(): Promise<void>;
}

/** Added to a wait, so that a pass does not come a hair before the job is due by the database's clock. */
const MARGIN_MS = 10;

/**
 * Every process runs the scheduler, whatever its role. A pass goes through the jobs one after the
 * other; each job runs when it is due and no other process is running it (job-runs.ts). The next
 * pass comes when the first job is due again.
 */
export function startMaintenance(deps: MaintenanceDeps, jobs: readonly MaintenanceJob[]): MaintenanceScheduler {
  const scheduler = new Scheduler(deps, jobs.filter((job) => job.intervalSeconds > 0));
  scheduler.start();
  return scheduler;
}

class Scheduler implements MaintenanceScheduler {
  private pass: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private stopping = false;

  constructor(
    private readonly deps: MaintenanceDeps,
    private readonly jobs: readonly MaintenanceJob[],
  ) {}

  start(): void {
    const { logger } = this.deps;
    if (this.jobs.length === 0) {
      logger.info('maintenance is off in this process (MAINTENANCE_INTERVAL_SECONDS=0)');
      return;
    }
    logger.info({ jobs: this.jobs.map((job) => ({ name: job.name, intervalSeconds: job.intervalSeconds })) }, 'maintenance scheduled');
    void this.runDue();
  }

  runDue(): Promise<void> {
    this.pass = this.pass.then(() => this.runPass());
    return this.pass;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.timer);
    await this.pass;
  }

  private async runPass(): Promise<void> {
    if (this.stopping || this.jobs.length === 0) return;
    clearTimeout(this.timer);
    let wait = Infinity;
    for (const job of this.jobs) {
      if (this.stopping) return;
      wait = Math.min(wait, await this.runJob(job));
    }
    if (this.stopping) return;
    this.timer = setTimeout(() => void this.runDue(), wait + MARGIN_MS);
    // The process lives on its listeners and its worker, not on its maintenance.
    this.timer.unref();
  }

  /** Returns how long until the job should be looked at again. */
  private async runJob(job: MaintenanceJob): Promise<number> {
    const { db, clock, logger } = this.deps;
    try {
      return await runIfDue(db, job.name, job.intervalSeconds, clockOffsetMs(clock), async () => {
        const started = performance.now();
        try {
          const result = await job.run(db, clock.now());
          logger.info({ job: job.name, result, ms: Math.round(performance.now() - started) }, 'maintenance job done');
          return null;
        } catch (error) {
          logger.warn({ err: error, job: job.name }, 'maintenance job failed; it runs again after its interval');
          return error instanceof Error ? error.message : String(error);
        }
      });
    } catch (error) {
      // The lock or the record could not be had (the database is unreachable, say): the next pass tries again.
      logger.warn({ err: error, job: job.name }, 'maintenance: could not check or record the job');
      return job.intervalSeconds * 1000;
    }
  }
}
