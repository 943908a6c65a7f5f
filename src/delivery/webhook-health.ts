import type { Queryable } from '../db/database.js';

/**
 * The state a webhook keeps about its receiver: when it last succeeded and since when it has been
 * failing without a success. A webhook failing for DELIVERY_DISABLE_AFTER_DAYS is disabled, so that
 * a receiver gone for good stops costing retries; PATCH {active: true} turns it back on.
 */
// These run once per attempt, on the few rows of the busiest webhooks: they write only when the
// state changes (or last_success_at is a minute old), not on every notification.
export async function noteWebhookSuccess(db: Queryable, webhookId: number, now: Date): Promise<void> {
  await db.query(
    `UPDATE webhooks SET last_success_at = $2, failing_since = NULL
      WHERE id = $1 AND (failing_since IS NOT NULL OR last_success_at IS NULL OR last_success_at < $2::timestamptz - interval '1 minute')`,
    [webhookId, now],
  );
}

/** Returns true when this failure disabled the webhook. */
export async function noteWebhookFailure(db: Queryable, webhookId: number, now: Date, disableAfterDays: number): Promise<boolean> {
  const { rows } = await db.query<{ disabled: boolean }>(
    `UPDATE webhooks
        SET failing_since = coalesce(failing_since, $2),
            active = active AND coalesce(failing_since, $2) > $2::timestamptz - make_interval(days => $3),
            disabled_reason = CASE WHEN active AND coalesce(failing_since, $2) <= $2::timestamptz - make_interval(days => $3)
                                   THEN $4 ELSE disabled_reason END,
            disabled_at = CASE WHEN active AND coalesce(failing_since, $2) <= $2::timestamptz - make_interval(days => $3)
                               THEN $2 ELSE disabled_at END
      WHERE id = $1 AND (failing_since IS NULL OR (active AND failing_since <= $2::timestamptz - make_interval(days => $3)))
      RETURNING (NOT active AND disabled_reason = $4 AND disabled_at = $2) AS disabled`,
    [webhookId, now, disableAfterDays, failingReason(disableAfterDays)],
  );
  return rows[0]?.disabled === true;
}

/** The receiver answered 410 Gone: it asked for no more notifications. */
export async function disableGoneWebhook(db: Queryable, webhookId: number, now: Date): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE webhooks SET active = false, disabled_reason = $3, disabled_at = $2, failing_since = coalesce(failing_since, $2)
      WHERE id = $1 AND active`,
    [webhookId, now, 'The receiver answered 410 Gone.'],
  );
  return rowCount > 0;
}

/** Disables every webhook failing for longer than the limit (deliveries may be waiting hours between retries). */
export async function disableFailingWebhooks(db: Queryable, now: Date, disableAfterDays: number): Promise<{ id: number; marketplace_code: string; code: string }[]> {
  const { rows } = await db.query<{ id: number; marketplace_code: string; code: string }>(
    `UPDATE webhooks SET active = false, disabled_reason = $3, disabled_at = $1
      WHERE active AND failing_since <= $1::timestamptz - make_interval(days => $2)
      RETURNING id, marketplace_code, code`,
    [now, disableAfterDays, failingReason(disableAfterDays)],
  );
  return rows;
}

function failingReason(days: number): string {
  return `Deliveries failed for ${days} days without a success.`;
}
