import type { FastifyBaseLogger } from 'fastify';
import type { Database } from '../../db/database.js';

/**
 * Every claim and every completion leaves dead entries in the queue partition's indexes
 * (migration 011), and the claim walks over them until a VACUUM removes them: left to autovacuum
 * (a minute apart at best) a claim went from 3 to 10 ms within a 45 s run. So the worker vacuums the
 * queue itself once it has finished `everyDeliveries` deliveries since the last time, at most once
 * per `minIntervalMs`. The queue holds only what waits or is being sent, so this costs what the
 * backlog costs, not the history; and since one tenant's backlog (a receiver down for hours) makes
 * every VACUUM longer, the next one waits at least ten times as long as the last took: the
 * vacuuming never takes more than a tenth of one database backend. SKIP_LOCKED: when another
 * worker's VACUUM runs, this one is not needed.
 */
export class QueueVacuum {
  private finished = 0;
  private running: Promise<void> | undefined;
  /** When the next VACUUM may start (Date.now()). */
  private nextAt = 0;

  constructor(
    private readonly db: Database,
    private readonly logger: FastifyBaseLogger,
    private readonly everyDeliveries = 2000,
    private readonly minIntervalMs = 1000,
  ) {}

  /** Counts one finished delivery; starts a VACUUM in the background when one is due. */
  noteFinished(): void {
    this.finished += 1;
    if (this.finished < this.everyDeliveries || this.running || Date.now() < this.nextAt) return;
    this.finished = 0;
    const startedAt = Date.now();
    this.running = this.db
      .query('VACUUM (SKIP_LOCKED) deliveries_queue')
      .then(
        () => undefined,
        (error: unknown) => this.logger.warn({ err: error }, 'vacuuming the delivery queue failed'),
      )
      .finally(() => {
        this.running = undefined;
        const now = Date.now();
        this.nextAt = now + Math.max(this.minIntervalMs, 10 * (now - startedAt));
      });
  }

  /** Resolves once the VACUUM in progress, if any, is over. */
  async idle(): Promise<void> {
    await this.running;
  }
}
