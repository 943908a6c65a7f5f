import type { Queryable } from '../db/database.js';
import { dbNow } from './database-clock.js';

/** The channel the delivery workers LISTEN on; a notification means "due work may exist". */
export const DELIVERY_CHANNEL = 'plaza_deliveries';

/**
 * pending: waiting for its (next) attempt; delivering: a worker holds its lease; succeeded; failed:
 * retries exhausted or 410 Gone. A webhook's deletion deletes its deliveries: there is no
 * "cancelled" state.
 */
export const DELIVERY_STATUSES = ['pending', 'delivering', 'succeeded', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** Wakes the workers; inside a transaction the notification leaves only on commit. */
export async function notifyDeliveryWorkers(db: Queryable): Promise<void> {
  await db.query(`SELECT pg_notify($1, '')`, [DELIVERY_CHANNEL]);
}

export interface DeliverySummary {
  id: number;
  event_id: string;
  topic_path: string;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: Date | null;
  last_status_code: number | null;
  last_error: string | null;
  created_at: Date;
  completed_at: Date | null;
}

export interface DeliveryAttempt {
  attempt: number;
  started_at: Date;
  duration_ms: number;
  status_code: number | null;
  error: string | null;
  response_body: string | null;
}

// next_attempt_at means nothing once a delivery is finished: shown as null then.
const SUMMARY_COLUMNS = `
  d.id, e.event_id, e.body->>'topic_path' AS topic_path, d.status, d.attempts,
  CASE WHEN d.status IN ('pending', 'delivering') THEN d.next_attempt_at END AS next_attempt_at,
  d.last_status_code, d.last_error, d.created_at, d.completed_at`;

/** Position after which the next page starts: the last item's (created_at in µs since the epoch, id). */
export interface DeliveryCursor {
  createdMicros: number;
  id: number;
}

export interface DeliveryFilter {
  status?: DeliveryStatus;
  since?: Date;
  until?: Date;
  after?: DeliveryCursor;
  limit: number;
}

/** A webhook's deliveries, newest first; `limit + 1` rows are read so the caller knows if more exist. */
// Microseconds, not a JS Date: a cursor must not lose the database's precision, or a page
// boundary between two deliveries of the same millisecond would skip or repeat rows.
export async function listDeliveries(db: Queryable, webhookId: number, filter: DeliveryFilter): Promise<(DeliverySummary & { created_micros: number })[]> {
  const { rows } = await db.query<DeliverySummary & { created_micros: number }>(
    `SELECT ${SUMMARY_COLUMNS},
            ((extract(epoch FROM d.created_at) * 1000000)::numeric)::bigint AS created_micros
       FROM deliveries d JOIN events e ON e.id = d.event_id
      WHERE d.webhook_id = $1
        AND ($2::text IS NULL OR d.status = $2)
        AND ($3::timestamptz IS NULL OR d.created_at >= $3)
        AND ($4::timestamptz IS NULL OR d.created_at < $4)
        AND ($5::bigint IS NULL OR (d.created_at, d.id) < (timestamptz 'epoch' + $5::bigint * interval '1 microsecond', $6::bigint))
      ORDER BY d.created_at DESC, d.id DESC
      LIMIT $7`,
    [webhookId, filter.status ?? null, filter.since ?? null, filter.until ?? null, filter.after?.createdMicros ?? null, filter.after?.id ?? null, filter.limit + 1],
  );
  return rows;
}

export async function findDelivery(db: Queryable, webhookId: number, deliveryId: number): Promise<DeliverySummary | undefined> {
  const { rows } = await db.query<DeliverySummary>(
    `SELECT ${SUMMARY_COLUMNS} FROM deliveries d JOIN events e ON e.id = d.event_id WHERE d.webhook_id = $1 AND d.id = $2`,
    [webhookId, deliveryId],
  );
  return rows[0];
}

export async function listAttempts(db: Queryable, deliveryId: number): Promise<DeliveryAttempt[]> {
  const { rows } = await db.query<DeliveryAttempt>(
    `SELECT attempt, started_at, duration_ms, status_code, error, response_body
       FROM delivery_attempts WHERE delivery_id = $1 ORDER BY attempt, id`,
    [deliveryId],
  );
  return rows;
}

// Requeueing keeps `attempts` (attempt numbers keep counting in the history) and clears the
// lease and completion: the worker treats the delivery as due now (the database's now, which due
// times are compared with; clockOffsetMs as in database-clock.ts).
const requeue = (offsetParameter: number) =>
  `status = 'pending', next_attempt_at = ${dbNow(offsetParameter)}, updated_at = ${dbNow(offsetParameter)}, completed_at = NULL, leased_by = NULL, lease_expires_at = NULL`;

export type RetryOutcome = 'queued' | 'not_found' | 'delivering';

/** Sends a delivery again now, unless a worker is sending it at this moment; one statement. */
export async function requeueDelivery(db: Queryable, webhookId: number, deliveryId: number, clockOffsetMs: number): Promise<RetryOutcome> {
  const { rows } = await db.query<{ status: DeliveryStatus; requeued: boolean }>(
    `WITH target AS (
       SELECT id, status FROM deliveries WHERE id = $2 AND webhook_id = $1 FOR UPDATE
     ), requeued AS (
       UPDATE deliveries d SET ${requeue(3)}
         FROM target t WHERE d.id = t.id AND t.status <> 'delivering'
       RETURNING d.id
     )
     SELECT t.status, EXISTS (SELECT 1 FROM requeued) AS requeued FROM target t`,
    [webhookId, deliveryId, clockOffsetMs],
  );
  const row = rows[0];
  if (!row) return 'not_found';
  return row.requeued ? 'queued' : 'delivering';
}

/** Requeues the webhook's failed deliveries created since `since`; returns how many. */
export async function requeueFailedSince(db: Queryable, webhookId: number, since: Date, clockOffsetMs: number): Promise<number> {
  const { rows } = await db.query<{ count: number }>(
    `WITH requeued AS (
       UPDATE deliveries SET ${requeue(3)}
        WHERE webhook_id = $1 AND status = 'failed' AND created_at >= $2
       RETURNING 1
     )
     SELECT count(*)::int AS count FROM requeued`,
    [webhookId, since, clockOffsetMs],
  );
  return rows[0]!.count;
}
