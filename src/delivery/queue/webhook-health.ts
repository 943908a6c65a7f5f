import type { Queryable } from '../../db/database.js';
import type { DisabledReason } from '../../webhooks/disabled-reasons.js';
import { dbNow } from '../../db/database-clock.js';

const GONE: DisabledReason = 'receiver_gone';
const FAILING: DisabledReason = 'failing_too_long';

/*
 * The state a webhook keeps about its receiver: when it last succeeded and since when it has been
 * failing without a success. A webhook failing for DELIVERY_DISABLE_AFTER_DAYS is disabled, so that
 * a receiver gone for good stops costing retries; PATCH {active: true} turns it back on.
 *
 * The functions below run once per batch of completions, on the webhooks of that batch (the
 * success half is in the completion's own statement, complete.ts): they write only when the state
 * changes, not on every notification. Times come from the database clock (database-clock.ts); the
 * caller already holds the webhooks' rows (lockWebhooksFirst).
 */

/** Returns the ids of the webhooks this failure disabled. */
export async function noteWebhookFailure(db: Queryable, webhookIds: readonly number[], clockOffsetMs: number, disableAfterDays: number): Promise<number[]> {
  if (webhookIds.length === 0) return [];
  const { rows } = await db.query<{ id: number; disabled: boolean }>(
    `WITH t AS (SELECT ${dbNow(2)} AS now)
     UPDATE webhooks
        SET failing_since = coalesce(failing_since, t.now),
            active = active AND coalesce(failing_since, t.now) > t.now - make_interval(days => $3),
            disabled_reason = CASE WHEN active AND coalesce(failing_since, t.now) <= t.now - make_interval(days => $3)
                                   THEN $4 ELSE disabled_reason END,
            disabled_at = CASE WHEN active AND coalesce(failing_since, t.now) <= t.now - make_interval(days => $3)
                               THEN t.now ELSE disabled_at END,
            -- A disable is a change a client polls for: updated_at moves with it (not on the failing_since bookkeeping).
            updated_at = CASE WHEN active AND coalesce(failing_since, t.now) <= t.now - make_interval(days => $3)
                              THEN t.now ELSE updated_at END
       FROM t
      WHERE id = ANY($1::bigint[]) AND (failing_since IS NULL OR (active AND failing_since <= t.now - make_interval(days => $3)))
      RETURNING id, (NOT active AND disabled_reason = $4 AND disabled_at = t.now) AS disabled`,
    [webhookIds, clockOffsetMs, disableAfterDays, FAILING],
  );
  return rows.filter((row) => row.disabled).map((row) => row.id);
}

/**
 * The receiver answered 410 Gone: it asked for no more notifications. Returns the ids of the
 * webhooks it disabled (those still active).
 */
export async function disableGoneWebhook(db: Queryable, webhookIds: readonly number[], clockOffsetMs: number): Promise<number[]> {
  if (webhookIds.length === 0) return [];
  const { rows } = await db.query<{ id: number }>(
    `UPDATE webhooks SET active = false, disabled_reason = $3, disabled_at = ${dbNow(2)}, updated_at = ${dbNow(2)}, failing_since = coalesce(failing_since, ${dbNow(2)})
      WHERE id = ANY($1::bigint[]) AND active
      RETURNING id`,
    [webhookIds, clockOffsetMs, GONE],
  );
  return rows.map((row) => row.id);
}

/** Disables every webhook failing for longer than the limit (deliveries may be waiting hours between retries). */
export async function disableFailingWebhooks(db: Queryable, now: Date, disableAfterDays: number): Promise<{ id: number; marketplace_code: string; code: string }[]> {
  const { rows } = await db.query<{ id: number; marketplace_code: string; code: string }>(
    `UPDATE webhooks SET active = false, disabled_reason = $3, disabled_at = $1, updated_at = $1
      WHERE active AND failing_since <= $1::timestamptz - make_interval(days => $2)
      RETURNING id, marketplace_code, code`,
    [now, disableAfterDays, FAILING],
  );
  return rows;
}
