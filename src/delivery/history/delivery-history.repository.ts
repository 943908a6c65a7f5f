import type { Queryable } from '../../db/database.js';
import type { TimeIdPosition } from '../../http/cursor.js';
import { dbNow } from '../../db/database-clock.js';
import type { DeliveryStatus } from '../../webhooks/deliveries.repository.js';
import { deliveryConditions, type DeliveryMatch } from './delivery-filter.js';

export interface DeliverySummary {
  id: number;
  event_id: string;
  /** The event's intake topic (order/create, …) and the entity it is about (publication id or order reference). */
  topic: string;
  entity_id: string;
  topic_path: string;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: Date | null;
  last_status_code: number | null;
  last_error: string | null;
  created_at: Date;
  completed_at: Date | null;
  /** The earlier delivery of the same webhook and entity that this pending one waits for; null when it waits for none. */
  blocked_by: number | null;
  /** Its plaza-entity-sequence header; null when the previous release wrote it during an upgrade. */
  sequence: number | null;
  /** The delivery that superseded this one (latest-state mode); null unless superseded. */
  superseded_by: number | null;
}

export interface DeliveryAttempt {
  attempt: number;
  started_at: Date;
  duration_ms: number;
  status_code: number | null;
  error: string | null;
  response_body: string | null;
  request_headers: Record<string, string> | null;
}

// next_attempt_at means nothing once a delivery is finished: shown as null then.
// blocked_by follows the claim's per-entity rule (queue/take-rows.ts): a delivery is not taken while an
// earlier one (smaller id) of its webhook and entity is unfinished, and the earliest of those goes
// first. Only a pending delivery waits (a delivering one is being sent, a finished or held one is
// not in the queue). The subquery is one probe of deliveries_unfinished_entity (entity_key,
// webhook_id, id) on the queue partition, run only for pending rows, and after the LIMIT (it is
// costly enough for the planner to evaluate it on the rows it returns: see docs/delivery.md).
const SUMMARY_COLUMNS = `
  d.id, e.event_id, e.topic, e.entity_id, e.body->>'topic_path' AS topic_path, d.status, d.attempts,
  CASE WHEN d.status IN ('pending', 'delivering') THEN d.next_attempt_at END AS next_attempt_at,
  d.last_status_code, d.last_error, d.created_at, d.completed_at, d.sequence, d.superseded_by,
  CASE WHEN d.status = 'pending' THEN
    (SELECT min(x.id) FROM deliveries_queue x WHERE x.entity_key = d.entity_key AND x.webhook_id = d.webhook_id AND x.id < d.id)
  END AS blocked_by`;

export interface DeliveryFilter extends DeliveryMatch {
  after?: TimeIdPosition;
  limit: number;
}

/** A webhook's deliveries, newest first; `limit + 1` rows are read so the caller knows if more exist. */
// Microseconds, not a JS Date: a cursor must not lose the database's precision, or a page
// boundary between two deliveries of the same millisecond would skip or repeat rows.
export async function listDeliveries(db: Queryable, filter: DeliveryFilter): Promise<(DeliverySummary & { created_micros: number })[]> {
  const params: unknown[] = [];
  const conditions = deliveryConditions(filter, params);
  if (filter.after) {
    conditions.push(`(d.created_at, d.id) < (timestamptz 'epoch' + $${params.push(filter.after.createdMicros)}::bigint * interval '1 microsecond', $${params.push(filter.after.id)}::bigint)`);
  }
  const { rows } = await db.query<DeliverySummary & { created_micros: number }>(
    `SELECT ${SUMMARY_COLUMNS},
            ((extract(epoch FROM d.created_at) * 1000000)::numeric)::bigint AS created_micros
       FROM deliveries d JOIN events e ON e.id = d.event_id
      WHERE ${conditions.join(' AND ')}
      ORDER BY d.created_at DESC, d.id DESC
      LIMIT $${params.push(filter.limit + 1)}`,
    params,
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
    `SELECT attempt, started_at, duration_ms, status_code, error, response_body, request_headers
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

export type RetryOutcome = 'queued' | 'not_found' | 'delivering' | 'held' | 'superseded';

/**
 * Sends a delivery again now, unless a worker is sending it at this moment, or a pause holds it (the
 * resume sends it, in order; made pending here it would leave the held count while still waiting),
 * or a newer notification of its entity superseded it (latest-state mode: sending it now would
 * deliver a stale state after the newer one); one statement.
 */
export async function requeueDelivery(db: Queryable, webhookId: number, deliveryId: number, clockOffsetMs: number): Promise<RetryOutcome> {
  const { rows } = await db.query<{ status: DeliveryStatus; requeued: boolean }>(
    `WITH target AS (
       SELECT id, status FROM deliveries WHERE id = $2 AND webhook_id = $1 FOR UPDATE
     ), requeued AS (
       UPDATE deliveries d SET ${requeue(3)}
         FROM target t WHERE d.id = t.id AND t.status NOT IN ('delivering', 'held', 'superseded')
       RETURNING d.id
     )
     SELECT t.status, EXISTS (SELECT 1 FROM requeued) AS requeued FROM target t`,
    [webhookId, deliveryId, clockOffsetMs],
  );
  const row = rows[0];
  if (!row) return 'not_found';
  if (row.requeued) return 'queued';
  return row.status === 'held' || row.status === 'superseded' ? row.status : 'delivering';
}

export interface EventView {
  event_id: string;
  seller_id: number;
  topic: string;
  entity_id: string;
  created_at: Date;
  deliveries: (DeliverySummary & { webhook_code: string })[];
}

/**
 * One event and its deliveries to the webhooks the tenant may see (every tenant's for admins).
 * undefined when the event does not exist or reached none of them: another tenant's event is not
 * disclosed. An event_id is unique per seller only, so for a marketplace's webhooks (every seller)
 * it can name several events: `sellerId` picks one; without it, such an answer is `{ sellers }`,
 * the sellers to choose from (the caller's webhooks received all their events), never a mix.
 */
export async function findEventDeliveries(
  db: Queryable,
  marketplaceCode: string,
  eventId: string,
  tenant: { kind: string; id: string } | undefined,
  sellerId: number | undefined,
): Promise<EventView | { sellers: number[] } | undefined> {
  const { rows } = await db.query<DeliverySummary & { webhook_code: string; seller_id: number; event_created_at: Date }>(
    `SELECT ${SUMMARY_COLUMNS}, w.code AS webhook_code, e.seller_id, e.created_at AS event_created_at
       FROM events e
       JOIN deliveries d ON d.event_id = e.id
       JOIN webhooks w ON w.id = d.webhook_id
      WHERE e.marketplace_code = $1 AND e.event_id = $2 AND ($5::int IS NULL OR e.seller_id = $5)
        AND ($3::text IS NULL OR (w.tenant_kind = $3 AND w.tenant_id = $4))
      ORDER BY w.code, d.id`,
    [marketplaceCode, eventId, tenant?.kind ?? null, tenant?.id ?? null, sellerId ?? null],
  );
  const first = rows[0];
  if (!first) return undefined;
  const sellers = [...new Set(rows.map((row) => row.seller_id))];
  if (sellers.length > 1) return { sellers: sellers.sort((a, b) => a - b) };
  return { event_id: first.event_id, seller_id: first.seller_id, topic: first.topic, entity_id: first.entity_id, created_at: first.event_created_at, deliveries: rows };
}
