import type { Queryable } from '../../db/database.js';
import { dbNow } from '../../db/database-clock.js';

/**
 * The lanes: every webhook belongs to one, `webhook_id % LANES`, and a claim holds the lanes of the
 * webhooks it takes from (a transaction-level advisory lock each, tried without waiting) until it
 * commits. So two claims never take from one webhook at once, and each reads that webhook's leases
 * after the previous claim committed them: its per-webhook cap and per-entity order are exact. There
 * is no lock every claim takes: claims of different workers whose webhooks lie in different lanes
 * run in parallel, and a claim skips a webhook whose lane another claim holds (a few milliseconds).
 * 256 lanes: consecutive webhook ids fall in different lanes; a claim holds at most as many as its
 * free slots (DELIVERY_CONCURRENCY, 100 by default), well within PostgreSQL's lock table.
 */
export const LANES = 256;

/** The first key of the lanes' advisory locks ('plaz'): no other code uses it. */
const LANE_LOCK_SPACE = 0x706c617a;

export interface LockedWebhooks {
  /**
   * The database's time when this statement ran, which the whole claim counts as now (as text, to
   * the microsecond): the read counts, and the take takes, the rows due by then; a row due later is
   * the next claim's (the worker looks for the next due time after this one).
   */
  now: string;
  /** Webhooks with due work whose lane this claim now holds, in scan order. */
  webhookIds: number[];
  /** Where the next claim's scan starts: after this webhook id. */
  nextCursor: number;
  /** A webhook with due work was skipped: another claim held its lane. */
  contended: boolean;
  /** Webhooks with due work may be left that the scan did not reach (it stopped at its budget or at the limit). */
  unvisited: boolean;
  /**
   * The scan stopped at its budget without a due webhook, and a due row lies beyond it: the next
   * claim, continuing after this scan, may find it. (Else a tenant's webhooks waiting for later
   * retries could hold another's notification until the poll.)
   */
  dueBeyond: boolean;
}

/**
 * One statement: visits up to `scan` webhooks with waiting rows, in id order after `cursor` and then
 * from the first one up to it (a skip scan of deliveries_pending_webhook_due: one index probe per
 * webhook, whatever the backlog), keeps those with a due row (one probe each), and locks the lanes
 * of up to `limit` of them, in that order, skipping those whose lane another claim holds. The lock
 * is tried in the outer query, which reads the materialized list in order and stops at the limit: a
 * volatile condition is never pushed below the ORDER BY, so lanes are tried in scan order and no
 * further than needed.
 */
export async function lockDueWebhooks(db: Queryable, options: { clockOffsetMs: number; cursor: number; scan: number; limit: number }): Promise<LockedWebhooks> {
  const { rows } = await db.query<{ now: string; visited: number; last: number | null; due: number; due_beyond: boolean; locked: number[] }>(
    `WITH RECURSIVE after_cursor(webhook_id, depth) AS (
       (SELECT d.webhook_id, 1 FROM deliveries_queue d
         WHERE d.status = 'pending' AND d.webhook_id > $2 ORDER BY d.webhook_id LIMIT 1)
       UNION ALL
       SELECT (SELECT d.webhook_id FROM deliveries_queue d
                WHERE d.status = 'pending' AND d.webhook_id > w.webhook_id ORDER BY d.webhook_id LIMIT 1),
              w.depth + 1
         FROM after_cursor w WHERE w.webhook_id IS NOT NULL AND w.depth < $3
     ),
     up_to_cursor(webhook_id, depth) AS (
       (SELECT d.webhook_id, (SELECT count(webhook_id)::int FROM after_cursor) + 1 FROM deliveries_queue d
         WHERE d.status = 'pending' AND d.webhook_id <= $2 ORDER BY d.webhook_id LIMIT 1)
       UNION ALL
       SELECT (SELECT d.webhook_id FROM deliveries_queue d
                WHERE d.status = 'pending' AND d.webhook_id > w.webhook_id AND d.webhook_id <= $2 ORDER BY d.webhook_id LIMIT 1),
              w.depth + 1
         FROM up_to_cursor w WHERE w.webhook_id IS NOT NULL AND w.depth < $3
     ),
     visited AS (
       SELECT webhook_id, depth FROM after_cursor WHERE webhook_id IS NOT NULL
       UNION ALL
       SELECT webhook_id, depth FROM up_to_cursor WHERE webhook_id IS NOT NULL AND depth <= $3
     ),
     -- Each webhook's earliest waiting row, one probe of deliveries_pending_webhook_due: a correlated
     -- scalar subquery stays one. As EXISTS it became a semi join, and on a queue without column
     -- statistics the planner fed it a scan of every due row (77 000 rows, 15 ms of a claim in
     -- scenario 4; bench/results/history.md, "The claim without statistics"; claim-plans.test.ts).
     due AS MATERIALIZED (
       SELECT v.webhook_id FROM visited v
        WHERE (SELECT d.next_attempt_at FROM deliveries_queue d
                WHERE d.webhook_id = v.webhook_id AND d.status = 'pending' ORDER BY d.next_attempt_at LIMIT 1) <= ${dbNow(1)}
        ORDER BY v.depth
     )
     SELECT ${dbNow(1)}::text AS now,
            (SELECT count(*)::int FROM visited) AS visited,
            (SELECT webhook_id FROM visited ORDER BY depth DESC LIMIT 1) AS last,
            (SELECT count(*)::int FROM due) AS due,
            -- Only when the scan found nothing due at its budget: is the earliest waiting row due? One
            -- probe of deliveries_due, as the ORDER BY asks (as EXISTS, on an empty table's statistics,
            -- the planner chose a filtered scan of another index).
            CASE WHEN (SELECT count(*) FROM visited) = $3 AND NOT EXISTS (SELECT 1 FROM due)
                 THEN coalesce((SELECT d.next_attempt_at <= ${dbNow(1)} FROM deliveries_queue d
                                 WHERE d.status = 'pending' ORDER BY d.next_attempt_at LIMIT 1), false)
                 ELSE false END AS due_beyond,
            coalesce((SELECT array_agg(webhook_id) FROM (
              SELECT webhook_id FROM due WHERE pg_try_advisory_xact_lock(${LANE_LOCK_SPACE}, (webhook_id % ${LANES})::int) LIMIT $4
            ) l), '{}') AS locked`,
    [options.clockOffsetMs, options.cursor, options.scan, options.limit],
    { prepare: true },
  );
  const { now, visited, last, due, due_beyond: dueBeyond, locked } = rows[0]!;
  const webhookIds = locked.map(Number);
  // Stopped at the limit: continue after the last webhook locked; at the scan's budget: after the
  // last visited; else every webhook was visited, and the next scan may start anywhere.
  const nextCursor = webhookIds.length === options.limit ? webhookIds.at(-1)! : visited === options.scan ? Number(last) : options.cursor;
  const contended = webhookIds.length < Math.min(due, options.limit);
  return { now, webhookIds, nextCursor, contended, unvisited: webhookIds.length === options.limit || visited === options.scan, dueBeyond };
}
