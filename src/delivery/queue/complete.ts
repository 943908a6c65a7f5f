import type { Database, Queryable } from '../../db/database.js';
import { dbNow } from '../../db/database-clock.js';
import { disableGoneWebhook, noteWebhookFailure } from './webhook-health.js';

export type AttemptOutcome =
  | { kind: 'succeeded' }
  /** Due again `delayMs` after the database's now. */
  | { kind: 'retry'; delayMs: number }
  | { kind: 'failed' }
  /** The receiver answered 410 Gone: the delivery fails and the webhook is disabled. */
  | { kind: 'gone' };

export interface AttemptRecord {
  deliveryId: number;
  webhookId: number;
  startedAt: Date;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  responseBody: string | null;
  /** The request headers as sent, secret-looking values masked (see sent-headers.ts). */
  requestHeaders?: Record<string, string> | null;
  outcome: AttemptOutcome;
  /** The send's span (W3C traceparent), with traces exported: the completion's span links to it. */
  traceparent?: string;
}

export interface CompletionResult {
  /** Deliveries whose attempt was recorded: those this worker still held. */
  recorded: Set<number>;
  /** Webhooks this batch disabled (410 Gone, or failing for DELIVERY_DISABLE_AFTER_DAYS). */
  disabledWebhooks: Set<number>;
}

export interface CompletionOptions {
  workerId: string;
  /** Milliseconds between the injected clock and the database's (database-clock.ts), read at each write. */
  clockOffsetMs: number;
  disableAfterDays: number;
}

/**
 * The completion transaction's settings, its first statement, sent with BEGIN in one round trip
 * (db/postgres.ts). An attempt record that a crash of the database undoes leaves its delivery leased:
 * it is sent again once the lease expires (at-least-once, docs/delivery.md); nothing is lost. The two
 * prepared statements run with one generic plan per connection, made once (the webhooks' lock was
 * planned at each batch, 0.15 ms), and sequential scans are off so that a plan made while the
 * webhooks and the queue were short stays a probe once they are long (complete-plans.test.ts).
 */
export const COMPLETION_SETTINGS = `SET LOCAL synchronous_commit = off; SET LOCAL enable_seqscan = off; SET LOCAL plan_cache_mode = force_generic_plan`;

const STATUS_AFTER: Record<AttemptOutcome['kind'], string> = { succeeded: 'succeeded', retry: 'pending', failed: 'failed', gone: 'failed' };

/**
 * Records many finished attempts in one transaction, taking locks in the one order every writer of
 * webhooks and deliveries follows (webhook rows first, by id; then deliveries): see
 * lockWebhooksFirst. Failures are noted after the record, in the same transaction.
 */
export async function completeAttempts(db: Database, records: readonly AttemptRecord[], options: CompletionOptions): Promise<CompletionResult> {
  if (records.length === 0) return { recorded: new Set(), disabledWebhooks: new Set() };
  return db.transaction(async (tx) => {
    await tx.exec(COMPLETION_SETTINGS);
    await lockWebhooksFirst(tx, records.map((record) => record.webhookId));
    const recorded = await recordAttempts(tx, records, options);
    const allSucceeded = records.every((record) => record.outcome.kind === 'succeeded');
    const disabledWebhooks = allSucceeded ? new Set<number>() : await noteFailures(tx, records.filter((record) => recorded.has(record.deliveryId)), options);
    return { recorded, disabledWebhooks };
  });
}

/**
 * Webhook rows first, in id order: DELETE of a webhook locks its row and then its deliveries
 * (cascade), so a completion that locked deliveries first and then the webhook (the foreign-key
 * check of a row moving partitions, the health update) could deadlock with it. FOR NO KEY UPDATE is
 * what the health update needs anyway; the intake's foreign-key checks (FOR KEY SHARE) do not wait
 * on it. A webhook deleted meanwhile is simply not found, and its deliveries are gone:
 * recordAttempts then changes nothing for them.
 */
async function lockWebhooksFirst(tx: Queryable, webhookIds: readonly number[]): Promise<void> {
  await tx.query(`SELECT id FROM webhooks WHERE id = ANY($1::bigint[]) ORDER BY id FOR NO KEY UPDATE`, [[...new Set(webhookIds)]], { prepare: true });
}

/**
 * One statement for the whole batch: moves each delivery on and inserts its attempt, for the rows
 * this worker still holds (leased_by and status checked in the UPDATE itself): a worker whose lease
 * expired, or whose delivery was deleted with its webhook, changes nothing. And the success half of
 * the webhooks' health (webhook-health.ts): per webhook, its latest recorded outcome decides, and a
 * success clears the failing state; written only when that changes something or last_success_at is
 * a minute old, not on every notification. Failures are noted after (noteFailures).
 */
async function recordAttempts(tx: Queryable, records: readonly AttemptRecord[], options: CompletionOptions): Promise<Set<number>> {
  const { rows } = await tx.query<{ id: number }>(
    `WITH input AS (
       SELECT * FROM unnest($3::bigint[], $4::text[], $5::int[], $6::text[], $7::double precision[], $8::timestamptz[], $9::int[], $10::text[], $11::jsonb[])
                WITH ORDINALITY AS i(id, status, status_code, error, delay_ms, started_at, duration_ms, response_body, request_headers, n)
     ),
     moved AS (
       UPDATE deliveries d
          SET status = i.status,
              attempts = d.attempts + 1,
              last_status_code = i.status_code,
              last_error = i.error,
              next_attempt_at = CASE WHEN i.delay_ms IS NULL THEN d.next_attempt_at ELSE ${dbNow(2)} + i.delay_ms * interval '1 millisecond' END,
              completed_at = CASE WHEN i.status = 'pending' THEN NULL ELSE ${dbNow(2)} END,
              leased_by = NULL,
              lease_expires_at = NULL,
              updated_at = ${dbNow(2)}
         FROM input i
        -- = ANY($3) as well as the join: the rows are then found by primary key whatever the
        -- planner's statistics say about the size of the batch or of the table. Delivering, written
        -- so that no plan can read the rows through deliveries_lease_expiry (status = 'delivering'),
        -- the index of every worker's leases: a generic plan made on a short queue scanned it whole.
        WHERE d.id = ANY($3::bigint[]) AND d.id = i.id AND d.leased_by = $1
          AND d.status IN ('pending', 'delivering') AND d.status <> 'pending'
        RETURNING d.id, d.attempts, d.webhook_id
     ),
     succeeded AS (
       UPDATE webhooks w SET last_success_at = ${dbNow(2)}, failing_since = NULL
         FROM (SELECT DISTINCT ON (m.webhook_id) m.webhook_id, i.status
                 FROM moved m JOIN input i ON i.id = m.id
                ORDER BY m.webhook_id, i.n DESC) latest
        WHERE w.id = latest.webhook_id AND latest.status = 'succeeded'
          AND (w.failing_since IS NOT NULL OR w.last_success_at IS NULL OR w.last_success_at < ${dbNow(2)} - interval '1 minute')
     )
     INSERT INTO delivery_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error, response_body, request_headers)
     SELECT m.id, m.attempts, i.started_at, i.duration_ms, i.status_code, i.error, i.response_body, i.request_headers
       FROM moved m JOIN input i ON i.id = m.id
     RETURNING delivery_id AS id`,
    [
      options.workerId,
      options.clockOffsetMs,
      records.map((r) => r.deliveryId),
      records.map((r) => STATUS_AFTER[r.outcome.kind]),
      records.map((r) => r.statusCode),
      records.map((r) => r.error),
      records.map((r) => (r.outcome.kind === 'retry' ? r.outcome.delayMs : null)),
      records.map((r) => r.startedAt),
      records.map((r) => r.durationMs),
      // PostgreSQL text cannot hold NUL; a receiver's answer is for reading, not byte-exact.
      records.map((r) => r.responseBody?.replaceAll('\u0000', '\uFFFD') ?? null),
      records.map((r) => (r.requestHeaders ? JSON.stringify(r.requestHeaders) : null)),
    ],
    { prepare: true },
  );
  return new Set(rows.map((row) => row.id));
}

/**
 * Per webhook of the batch, its latest recorded outcome decides: 410 Gone disables it, any other
 * failure starts or continues the failing period (a success was noted by recordAttempts).
 */
async function noteFailures(tx: Queryable, recorded: readonly AttemptRecord[], options: CompletionOptions): Promise<Set<number>> {
  const latest = new Map<number, AttemptOutcome['kind']>();
  for (const record of recorded) latest.set(record.webhookId, record.outcome.kind);
  const ids = (kind: (outcome: AttemptOutcome['kind']) => boolean) => [...latest].filter(([, outcome]) => kind(outcome)).map(([id]) => id).sort((a, b) => a - b);
  const gone = await disableGoneWebhook(tx, ids((outcome) => outcome === 'gone'), options.clockOffsetMs);
  const failing = await noteWebhookFailure(tx, ids((outcome) => outcome === 'retry' || outcome === 'failed'), options.clockOffsetMs, options.disableAfterDays);
  return new Set([...gone, ...failing]);
}
