import type { FastifyBaseLogger } from 'fastify';
import { Counter, Gauge } from 'prom-client';
import type { Clock } from '../../clock.js';
import type { Queryable } from '../../db/database.js';
import type { Metrics } from '../../metrics.js';

interface QueueDepth {
  due: number;
  oldest_due: Date | null;
  delivering: number;
  failed: number;
}

/** The delivery queue as the database sees it, over all workers. */
export async function measureQueue(db: Queryable, now: Date): Promise<QueueDepth> {
  // Served by the queue partition's deliveries_due (pending rows) and deliveries_lease_expiry
  // (delivering rows) and, for the failed count, the rest's deliveries_failed_webhook_created
  // (migrations/001_baseline.sql): no pass over the whole table (bench/results/history.md, migration 009).
  const { rows } = await db.query<QueueDepth>(
    `WITH due AS (
       SELECT d.next_attempt_at FROM deliveries d JOIN webhooks w ON w.id = d.webhook_id AND w.active
        WHERE (d.status = 'pending' AND d.next_attempt_at <= $1) OR (d.status = 'delivering' AND d.lease_expires_at <= $1)
     )
     SELECT (SELECT count(*)::int FROM due) AS due,
            (SELECT min(next_attempt_at) FROM due) AS oldest_due,
            (SELECT count(*)::int FROM deliveries WHERE status = 'delivering' AND lease_expires_at > $1) AS delivering,
            (SELECT count(*)::int FROM deliveries WHERE status = 'failed') AS failed`,
    [now],
  );
  return rows[0]!;
}

export interface QueueGauges {
  /** Measures once now; never throws (a failure is counted and logged, the last values stay). */
  refresh(): Promise<void>;
  stop(): void;
}

/**
 * Queue depth gauges, measured every `intervalSeconds` rather than on each scrape: a scrape costs
 * no query, however often and by whom it comes, and still answers while the database is down (with
 * the last values, and plaza_queue_measured_timestamp_seconds telling how old they are).
 */
export function startQueueGauges(options: { db: Queryable; clock: Clock; metrics: Metrics; intervalSeconds: number; logger?: FastifyBaseLogger }): QueueGauges {
  const { db, clock, metrics, logger } = options;
  const registers = [metrics.registry];
  const due = new Gauge({ name: 'plaza_deliveries_due', help: 'Deliveries due now and not yet taken by a worker (queue depth).', registers });
  const oldest = new Gauge({ name: 'plaza_deliveries_oldest_due_age_seconds', help: 'How long the oldest due delivery has been waiting (0 when none).', registers });
  const delivering = new Gauge({ name: 'plaza_deliveries_in_flight', help: 'Deliveries held by a worker with a live lease.', registers });
  const failed = new Gauge({ name: 'plaza_deliveries_failed', help: 'Deliveries that failed for good and are still retained (replayable).', registers });
  const measuredAt = new Gauge({ name: 'plaza_queue_measured_timestamp_seconds', help: 'When the queue gauges were last measured (Unix time); 0 before the first measure.', registers });
  const failures = new Counter({ name: 'plaza_queue_measure_failures_total', help: 'Queue measures that failed (database unreachable); the gauges keep their last values.', registers });
  failures.inc(0);

  // Measures may overlap (the one started with the process can be slow): one that ends after a
  // later one has ended has nothing newer to say, and its older values are not set over the later ones.
  let started = 0;
  let applied = 0;
  const refresh = async () => {
    const now = clock.now();
    const measure = ++started;
    try {
      const depth = await measureQueue(db, now);
      if (measure < applied) return;
      applied = measure;
      due.set(depth.due);
      oldest.set(depth.oldest_due ? Math.max(0, (now.getTime() - new Date(depth.oldest_due).getTime()) / 1000) : 0);
      delivering.set(depth.delivering);
      failed.set(depth.failed);
      measuredAt.set(now.getTime() / 1000);
    } catch (error) {
      failures.inc();
      logger?.warn({ err: error }, 'cannot measure the delivery queue; the gauges keep their last values');
    }
  };
  void refresh();
  const timer = setInterval(() => void refresh(), options.intervalSeconds * 1000);
  timer.unref();
  return { refresh, stop: () => clearInterval(timer) };
}
