import type { Queryable } from '../../db/database.js';

/** One time bucket of a webhook's attempts (or, with `bucket` null, the whole window). */
export interface HealthBucketRow {
  /** The bucket's start; null on the row of the whole window. */
  bucket: Date | null;
  /** Answered 2xx: the worker's success. */
  succeeded: number;
  /** Answered, not 2xx. */
  failed: number;
  /** No answer: timeout, connection refused or reset, a refused address. */
  no_answer: number;
  /** Response time (ms) of the answered attempts; null when none answered. */
  p50: number | null;
  p95: number | null;
}

export interface HealthWindow {
  webhookId: number;
  /** Start of the first bucket, inclusive (buckets are counted from it). */
  since: Date;
  /** End of the last bucket, exclusive. */
  until: Date;
  bucketMs: number;
  /**
   * How long before `since` a delivery may have been created and still be attempted in the window:
   * the bound on deliveries_webhook_created (attempts of older deliveries are not counted).
   */
  lookbackMs: number;
}

/**
 * The portal's picture of a webhook's health: its attempts that started in the window, per bucket
 * (date_bin from `since`) and outcome, with the median and 95th percentile of the answered ones'
 * duration, and the same over the whole window (the grouping set ()), in one statement.
 *
 * Attempts carry no webhook, so the statement is bounded twice: the webhook's deliveries created
 * since `since - lookbackMs` (deliveries_webhook_created: webhook_id, created_at) and the attempts
 * started in the window (delivery_attempts_started, or delivery_attempts_delivery per delivery).
 * The planner picks the side: for a webhook with a large share of the window it hashes the webhook's
 * deliveries and reads the window's attempts by start time (every webhook's, discarded by the
 * hash); for a small share it probes each delivery's attempts. Measured on 300 000 deliveries and
 * 360 000 attempts over 10 days (docs/portal.md): a webhook with 5% of them, 40-150 ms for 24 hours
 * and about 250 ms for 7 days on a shared 2-core machine; one with 300 deliveries, under 1 ms and
 * 35 ms. An index led by the webhook would need
 * a webhook_id on delivery_attempts (a migration): not worth it for a page a person opens.
 */
export async function attemptHealth(db: Queryable, window: HealthWindow): Promise<HealthBucketRow[]> {
  const { rows } = await db.query<HealthBucketRow>(
    `SELECT date_bin($4 * interval '1 millisecond', a.started_at, $2::timestamptz) AS bucket,
            count(*) FILTER (WHERE a.status_code BETWEEN 200 AND 299)::int AS succeeded,
            count(*) FILTER (WHERE a.status_code IS NOT NULL AND a.status_code NOT BETWEEN 200 AND 299)::int AS failed,
            count(*) FILTER (WHERE a.status_code IS NULL)::int AS no_answer,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY a.duration_ms) FILTER (WHERE a.status_code IS NOT NULL) AS p50,
            percentile_cont(0.95) WITHIN GROUP (ORDER BY a.duration_ms) FILTER (WHERE a.status_code IS NOT NULL) AS p95
       FROM deliveries d
       JOIN delivery_attempts a ON a.delivery_id = d.id
      WHERE d.webhook_id = $1
        AND d.created_at >= $2::timestamptz - $5 * interval '1 millisecond' AND d.created_at < $3
        AND a.started_at >= $2 AND a.started_at < $3
      GROUP BY GROUPING SETS ((date_bin($4 * interval '1 millisecond', a.started_at, $2::timestamptz)), ())
      ORDER BY 1 NULLS LAST`,
    [window.webhookId, window.since, window.until, window.bucketMs, window.lookbackMs],
  );
  return rows;
}
