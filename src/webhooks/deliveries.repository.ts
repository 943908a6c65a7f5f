import type { Queryable } from '../db/database.js';

/** The channel the delivery workers LISTEN on; a notification means "due work may exist". */
export const DELIVERY_CHANNEL = 'plaza_deliveries';

/**
 * pending: waiting for its (next) attempt; delivering: a worker holds its lease; succeeded; failed:
 * retries exhausted or 410 Gone; held: recorded while its webhook is paused; superseded: a webhook in latest-state mode got a newer
 * notification of the same entity before this one was sent (superseded_by names it), so this one
 * is never sent. A webhook's deletion deletes its deliveries: there is no "cancelled" state.
 */
export const DELIVERY_STATUSES = ['pending', 'delivering', 'succeeded', 'failed', 'held', 'superseded'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** Wakes the workers; inside a transaction the notification leaves only on commit. */
export async function notifyDeliveryWorkers(db: Queryable): Promise<void> {
  await db.query(`SELECT pg_notify($1, '')`, [DELIVERY_CHANNEL]);
}

/**
 * A resumed webhook's work goes out now: held deliveries become pending, and retries scheduled
 * for later are due now (a paused or disabled webhook may have them hours away). All get the same
 * next_attempt_at, so the claim takes them in id order: the order the events arrived in.
 */
export async function releaseHeldDeliveries(db: Queryable, webhookId: number, now: Date): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE deliveries SET status = 'pending', next_attempt_at = $2, updated_at = $2
      WHERE webhook_id = $1 AND (status = 'held' OR (status = 'pending' AND next_attempt_at > $2))`,
    [webhookId, now],
  );
  return rowCount;
}

/** Held deliveries per webhook (absent: none), one statement for a whole page of webhooks. */
export async function countHeldByWebhook(db: Queryable, webhookIds: readonly number[]): Promise<Map<number, number>> {
  const { rows } = await db.query<{ webhook_id: number; count: number }>(
    `SELECT webhook_id, count(*)::int AS count FROM deliveries WHERE webhook_id = ANY($1::bigint[]) AND status = 'held' GROUP BY webhook_id`,
    [webhookIds],
  );
  return new Map(rows.map((row) => [Number(row.webhook_id), row.count]));
}

export async function countHeldDeliveries(db: Queryable, webhookId: number): Promise<number> {
  return (await countHeldByWebhook(db, [webhookId])).get(Number(webhookId)) ?? 0;
}
