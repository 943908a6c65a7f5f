import type { Database, Queryable } from '../../db/database.js';

/** One notification of a webhook's feed, as read: the body is the stored text, byte for byte. */
export interface FeedRow {
  id: number;
  message_id: string;
  created_at: Date;
  entity_id: string;
  sequence: number | null;
  topic_path: string;
  /** events.body as text: exactly what is (or would be) sent. */
  body: string;
}

/**
 * The highest delivery id of the webhook below which its feed is settled: no transaction still
 * writing can add a delivery of this webhook with a smaller id. Delivery ids are drawn when a
 * delivery is inserted, and transactions commit in any order, so a page read without this could
 * show id 11 before the delivery 10 of a slower intake commits, and the consumer's cursor would
 * pass over 10 for good. The intake's fan-out locks each webhook FOR KEY SHARE before it draws that
 * webhook's delivery ids and keeps the lock until it commits (events.repository.ts); FOR UPDATE
 * here waits for those intakes to commit and keeps new ones out for the moment it reads the
 * webhook's highest id (one probe of deliveries_webhook_id). Every delivery of the webhook up to it
 * is then committed, and any later one draws a larger id. The lock is held for that one read, a
 * millisecond, and changes no row.
 */
export async function settledHorizon(db: Database, webhookId: number): Promise<number> {
  return db.transaction(async (tx) => {
    await tx.query(`SELECT 1 FROM webhooks WHERE id = $1 FOR UPDATE`, [webhookId]);
    const { rows } = await tx.query<{ horizon: number | null }>(`SELECT max(id) AS horizon FROM deliveries WHERE webhook_id = $1`, [webhookId]);
    return rows[0]?.horizon ?? 0;
  });
}

/**
 * The webhook's notifications after delivery id `afterId` up to `horizon`, in id order (creation
 * order), whatever their status; `limit + 1` rows so that the caller knows whether more exist. A
 * range scan of deliveries_webhook_id, and the event of each row by primary key.
 */
export async function readFeed(db: Queryable, webhookId: number, afterId: number, horizon: number, limit: number): Promise<FeedRow[]> {
  const { rows } = await db.query<FeedRow>(
    `SELECT d.id, d.message_id, d.created_at, e.entity_id, d.sequence, e.body->>'topic_path' AS topic_path, e.body::text AS body
       FROM deliveries d JOIN events e ON e.id = d.event_id
      WHERE d.webhook_id = $1 AND d.id > $2 AND d.id <= $3
      ORDER BY d.id
      LIMIT $4`,
    [webhookId, afterId, horizon, limit + 1],
  );
  return rows;
}

/**
 * One notification of the webhook's feed by its delivery id (readFeed on the range of that one id):
 * the delivery page and the API's delivery resource show the body as sent from the feed's own read,
 * not from a second rebuild. undefined when the webhook has no such delivery.
 */
export async function readNotification(db: Queryable, webhookId: number, deliveryId: number): Promise<FeedRow | undefined> {
  const rows = await readFeed(db, webhookId, deliveryId - 1, deliveryId, 1);
  return rows[0];
}

/**
 * For the long poll: per webhook, its highest delivery id (absent: none), for all the webhooks that
 * requests wait on, in one statement (one probe of deliveries_webhook_id each).
 */
export async function newestDeliveryIds(db: Queryable, webhookIds: readonly number[]): Promise<Map<number, number>> {
  const { rows } = await db.query<{ webhook_id: number; newest: number | null }>(
    `SELECT w.id AS webhook_id, (SELECT max(d.id) FROM deliveries d WHERE d.webhook_id = w.id) AS newest
       FROM unnest($1::bigint[]) AS w(id)`,
    [webhookIds],
  );
  return new Map(rows.filter((row) => row.newest !== null).map((row) => [Number(row.webhook_id), Number(row.newest)]));
}
