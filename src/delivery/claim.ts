import type { Queryable } from '../db/database.js';

/** A delivery this worker holds a lease on, with what it needs to send it. */
export interface ClaimedDelivery {
  id: number;
  message_id: string;
  webhook_id: number;
  attempts: number;
  callback_url: string;
  headers: Record<string, string>;
  secret_encrypted: string;
  previous_secret_encrypted: string | null;
  previous_secret_expires_at: Date | null;
  /** The event's notification body as stored, sent byte for byte. */
  body: string;
}

export interface ClaimOptions {
  workerId: string;
  now: Date;
  leaseSeconds: number;
  /** How many deliveries this worker may take now (its free slots). */
  limit: number;
  /** At most this many deliveries of one webhook in flight, over all workers. */
  perWebhookLimit: number;
}

/**
 * Claims due deliveries in ONE statement, so that two workers never hold the same row:
 * - due: pending with next_attempt_at reached, or delivering with an expired lease (its worker died;
 *   a claimed row's next_attempt_at is always in the past);
 * - per-entity order: not while an earlier delivery of the same webhook and entity is unfinished;
 * - isolation: per webhook, what is already in flight (live leases) plus what is taken now stays within
 *   perWebhookLimit, so one slow receiver cannot fill the worker's pool; each webhook's due rows are
 *   walked in due order through an index and only as far as its free room (cost per claim grows with
 *   the number of webhooks with due work, not with the backlog);
 * - inactive (disabled) webhooks are not sent to; their deliveries wait for a re-enable;
 * - FOR UPDATE SKIP LOCKED: rows another worker is claiming right now are skipped, not waited for, and
 *   the due condition is checked again on the locked row.
 */
export async function claimDueDeliveries(db: Queryable, options: ClaimOptions): Promise<ClaimedDelivery[]> {
  if (options.limit <= 0) return [];
  const { rows } = await db.query<ClaimedDelivery>(
    `WITH room AS (
       SELECT w.id AS webhook_id,
              $5 - (SELECT count(*) FROM deliveries f
                     WHERE f.webhook_id = w.id AND f.status = 'delivering' AND f.lease_expires_at > $1) AS free
         FROM webhooks w
        WHERE w.active
          AND EXISTS (SELECT 1 FROM deliveries x
                       WHERE x.webhook_id = w.id AND x.status IN ('pending', 'delivering') AND x.next_attempt_at <= $1)
     ),
     picked AS (
       SELECT c.id
         FROM room r
        CROSS JOIN LATERAL (
          SELECT d.id, d.next_attempt_at
            FROM deliveries d
           WHERE d.webhook_id = r.webhook_id
             AND d.status IN ('pending', 'delivering')
             AND d.next_attempt_at <= $1
             AND (d.status = 'pending' OR d.lease_expires_at <= $1)
             AND NOT EXISTS (
                   SELECT 1 FROM deliveries earlier
                    WHERE earlier.webhook_id = d.webhook_id
                      AND earlier.entity_key = d.entity_key
                      AND earlier.id < d.id
                      AND earlier.status IN ('pending', 'delivering'))
           ORDER BY d.next_attempt_at, d.id
           LIMIT greatest(r.free, 0)
        ) c
        ORDER BY c.next_attempt_at, c.id
        LIMIT $4
     ),
     locked AS (
       SELECT d.id
         FROM deliveries d
        WHERE d.id IN (SELECT id FROM picked)
          AND d.next_attempt_at <= $1
          AND (d.status = 'pending' OR (d.status = 'delivering' AND d.lease_expires_at <= $1))
        FOR UPDATE SKIP LOCKED
     )
     UPDATE deliveries d
        SET status = 'delivering',
            leased_by = $2,
            lease_expires_at = $1::timestamptz + make_interval(secs => $3),
            updated_at = $1
       FROM locked, webhooks w, events e
      WHERE d.id = locked.id AND w.id = d.webhook_id AND e.id = d.event_id
     RETURNING d.id, d.message_id, d.webhook_id, d.attempts, w.callback_url, w.headers,
               w.secret_encrypted, w.previous_secret_encrypted, w.previous_secret_expires_at, e.body::text AS body`,
    [options.now, options.workerId, options.leaseSeconds, options.limit, options.perWebhookLimit],
  );
  return rows.sort((a, b) => a.id - b.id);
}

export type AttemptOutcome =
  | { kind: 'succeeded' }
  | { kind: 'retry'; nextAttemptAt: Date }
  | { kind: 'failed' }
  /** The receiver answered 410 Gone: the delivery fails and the webhook is disabled. */
  | { kind: 'gone' };

export interface AttemptRecord {
  deliveryId: number;
  workerId: string;
  startedAt: Date;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  responseBody: string | null;
  /** The request headers as sent, secret-looking values masked (see sent-headers.ts). */
  requestHeaders?: Record<string, string> | null;
  outcome: AttemptOutcome;
  now: Date;
}

/**
 * Records one attempt and moves the delivery on, in one statement that does nothing unless this
 * worker still holds the lease: a worker whose lease expired (another took the delivery) or whose
 * delivery was deleted with its webhook changes nothing. Returns whether it was recorded.
 */
export async function completeAttempt(db: Queryable, record: AttemptRecord): Promise<boolean> {
  const { outcome } = record;
  const status = outcome.kind === 'retry' ? 'pending' : outcome.kind === 'succeeded' ? 'succeeded' : 'failed';
  const nextAttemptAt = outcome.kind === 'retry' ? outcome.nextAttemptAt : null;
  const { rows } = await db.query<{ id: number }>(
    `WITH moved AS (
       UPDATE deliveries
          SET status = $3,
              attempts = attempts + 1,
              last_status_code = $4,
              last_error = $5,
              next_attempt_at = coalesce($6, next_attempt_at),
              completed_at = CASE WHEN $3 = 'pending' THEN NULL ELSE $7::timestamptz END,
              leased_by = NULL,
              lease_expires_at = NULL,
              updated_at = $7
        WHERE id = $1 AND leased_by = $2 AND status = 'delivering'
        RETURNING id, attempts
     )
     INSERT INTO delivery_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error, response_body, request_headers)
     SELECT id, attempts, $8, $9, $4, $5, $10, $11::jsonb FROM moved
     RETURNING delivery_id AS id`,
    [
      record.deliveryId, record.workerId, status, record.statusCode, record.error, nextAttemptAt, record.now,
      record.startedAt, record.durationMs, record.responseBody,
      record.requestHeaders ? JSON.stringify(record.requestHeaders) : null,
    ],
  );
  return rows.length > 0;
}

/** Gives this worker's remaining claims back (shutdown): due again at once for any worker. */
export async function releaseClaims(db: Queryable, workerId: string, now: Date): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE deliveries SET status = 'pending', leased_by = NULL, lease_expires_at = NULL, updated_at = $2
      WHERE leased_by = $1 AND status = 'delivering'`,
    [workerId, now],
  );
  return rowCount;
}
