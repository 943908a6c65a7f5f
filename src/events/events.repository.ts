import type { Queryable } from '../db/database.js';
import { dbNow } from '../db/database-clock.js';
import { DELIVERY_CHANNEL } from '../webhooks/deliveries.repository.js';

export interface NewEvent {
  eventId: string;
  marketplaceCode: string;
  topic: string;
  sellerId: number;
  entityId: string;
  requestHash: string;
  createdBy: number | null;
  createdByApiKey: number | null;
  now: Date;
  /** The intake span's W3C traceparent when traces are exported (docs/operations.md, Traces); null otherwise. */
  traceContext?: string | null;
}

export interface StoredEvent {
  id: number;
  event_id: string;
  delivery_count: number;
  request_hash: string;
  /** It equalled its entity's last snapshot and created no deliveries (SKIP_UNCHANGED_EVENTS). */
  unchanged: boolean;
}

/**
 * Inserts the event unless its event_id is already taken by the same producer (the seller the event
 * is for, in this marketplace); returns the new row's id, or undefined when taken. Without its body:
 * setDeliveryCount writes that once the fan-out is known, and only when a delivery needs it. On PostgreSQL a concurrent insert of the same key makes this wait
 * for the other transaction, so exactly one request creates the event.
 */
export async function insertEvent(db: Queryable, event: NewEvent): Promise<number | undefined> {
  const { rows } = await db.query<{ id: number }>(
    `INSERT INTO events (event_id, marketplace_code, topic, seller_id, entity_id, body, delivery_count, request_hash, created_by, created_by_api_key, created_at, trace_context)
     VALUES ($1, $2, $3, $4, $5, NULL, 0, $6, $7, $8, $9, $10)
     ON CONFLICT (marketplace_code, seller_id, event_id) DO NOTHING
     RETURNING id`,
    [event.eventId, event.marketplaceCode, event.topic, event.sellerId, event.entityId, event.requestHash, event.createdBy, event.createdByApiKey, event.now, event.traceContext ?? null],
    // Prepared: a probe of the arbiter index whatever the plan (intake-plans.test.ts).
    { prepare: true },
  );
  return rows[0]?.id;
}

/** The producer's own use of an event_id: another seller's event with the same key is never seen. */
export async function findEvent(db: Queryable, marketplaceCode: string, sellerId: number, eventId: string): Promise<StoredEvent | undefined> {
  const { rows } = await db.query<StoredEvent>(
    `SELECT id, event_id, delivery_count, request_hash, unchanged FROM events WHERE marketplace_code = $1 AND seller_id = $2 AND event_id = $3`,
    [marketplaceCode, sellerId, eventId],
  );
  return rows[0];
}

export interface FanOut {
  eventRowId: number;
  marketplaceCode: string;
  sellerId: number;
  entityKey: string;
  topics: string[];
  now: Date;
  /** Due at once by the database's clock (see db/database-clock.ts). */
  clockOffsetMs: number;
  /** The webhooks with a filter that the notification matched; the others with a filter get nothing. */
  filterMatches?: number[];
  /** The notification as stored and sent (events.body). */
  body: string;
}

export interface Created {
  /** Deliveries created, the event's delivery_count. */
  count: number;
  /** One of them is for a webhook in latest-state mode: the intake then supersedes (supersede.ts). */
  latest: boolean;
}

/**
 * One delivery per matching webhook, in one statement however many webhooks match: pending for an
 * active webhook, held for a paused one (it goes out when the webhook is resumed).
 * A webhook matches when its filter, if it has one, matched the notification (filteredWebhooksSql), it is active or paused (by its owner, or by its tenant's deactivation), in the event's marketplace, subscribed to one of the
 * topics, filtered to `*` or this seller, and its owner may see the seller: a seller tenant only
 * itself, a marketplace tenant the sellers connected to it, the admins everyone.
 * message_id is random and stays with the delivery for good (the `webhook-id` header).
 * FOR KEY SHARE on the webhooks, before their deliveries are written (the one lock order: webhook,
 * then deliveries): a webhook deleted at this moment is skipped rather than failing the event with a
 * foreign-key error; a resume (which locks its webhook FOR UPDATE) waits for this transaction, and
 * this one, if it waits for a resume, sees the resumed row; so a held row can never be written after
 * the resume released the held ones (it would stay held for good).
 * The same statement writes the event's count and, when a delivery will send it, its body (an event
 * that matched no webhook keeps no body: its row stays until DELIVERY_RETENTION_DAYS only so that its
 * event_id answers a repeat, which reads the count and the request hash; nothing else could send it
 * later: a replay re-sends existing deliveries, and a webhook created afterwards gets no past
 * events), and wakes the delivery workers (at commit) when there is something to send: one round
 * trip where these were three.
 */
export async function createDeliveries(db: Queryable, fanOut: FanOut): Promise<Created> {
  const { rows } = await db.query<Created>(
    `WITH matched AS (
       SELECT w.id, w.active, w.delivery_mode
         FROM webhooks w
        WHERE ${matchingWebhooks({ marketplace: '$2', sellerText: '$3', topics: '$5', sellerInt: '$7' })}
          -- A webhook with a filter only when the notification matched it (filteredWebhooksSql). IN a
          -- subquery, which every plan looks up in a hash: w.id = ANY($9) searches the array for each
          -- webhook in a generic plan, 10 000 × 10 000 for an event matching 10 000 filters (scenario
          -- 6: 0.78–1.24 s against 0.72–0.85).
          AND (w.filter IS NULL OR w.id IN (SELECT unnest($9::bigint[])))
        ORDER BY w.id
          FOR KEY SHARE OF w
     ),
     ${NUMBERED}
     created AS (
       INSERT INTO deliveries (event_id, webhook_id, entity_key, message_id, status, attempts, next_attempt_at, created_at, updated_at, sequence)
       SELECT $1, w.id, $4, 'msg_' || replace(gen_random_uuid()::text, '-', ''),
              CASE WHEN w.active THEN 'pending' ELSE 'held' END, 0, ${dbNow(8)}, $6, $6, n.sequence
         -- Each counter's webhook by primary key (the row matched locked, read in this statement's
         -- snapshot), not a join of the two CTEs: a CTE has no statistics, and the planner joined
         -- them in a nested loop, 10 000 × 10 000 rows for an event to 10 000 webhooks (scenario 6:
         -- 0.4 s became 4–6.6 s).
         FROM numbered n JOIN webhooks w ON w.id = n.webhook_id
        ORDER BY w.id
       RETURNING 1
     ),
     counted AS (
       SELECT (SELECT count(*)::int FROM created) AS count,
              coalesce((SELECT bool_or(delivery_mode = 'latest') FROM matched), false) AS latest
     ),
     stored AS (
       UPDATE events SET delivery_count = c.count, body = CASE WHEN c.count > 0 THEN $10::json END
         FROM counted c
        WHERE events.id = $1
     )
     SELECT c.count, c.latest, CASE WHEN c.count > 0 THEN pg_notify($11, '') END AS woken FROM counted c`,
    [
      fanOut.eventRowId, fanOut.marketplaceCode, String(fanOut.sellerId), fanOut.entityKey, fanOut.topics, fanOut.now,
      fanOut.sellerId, fanOut.clockOffsetMs, fanOut.filterMatches ?? [], fanOut.body, DELIVERY_CHANNEL,
    ],
    // Prepared: whatever the plan, it reads the event's webhooks by TOPIC_FAMILY (a status change:
    // those of every status of its marketplace) and probes the rest (intake-plans.test.ts).
    { prepare: true },
  );
  return { count: rows[0]!.count, latest: rows[0]!.latest };
}

/**
 * Issue 30: each delivery's plaza-entity-sequence, the next number of its (webhook, entity) counter
 * (entity_sequences), upserted in the fan-out's statement, in webhook id order (the order of the
 * webhook locks above, so two intakes never wait for each other crosswise). A second intake of the
 * same entity waits on the counter row until the first commits, then numbers after it; its
 * delivery ids are drawn after that wait, so the numbers of an entity follow the delivery ids.
 * $4 is the entity key.
 */
const NUMBERED = `numbered AS (
       INSERT INTO entity_sequences AS s (webhook_id, entity_key, last_sequence)
       SELECT m.id, $4, 1 FROM matched m ORDER BY m.id
           ON CONFLICT (webhook_id, entity_key) DO UPDATE SET last_sequence = s.last_sequence + 1
       RETURNING s.webhook_id, s.last_sequence AS sequence
     ),`;

/**
 * A webhook topic's family: the event topic that reaches it, order/status_change for
 * order/status_change/entered_<status> and the topic itself for the others (matchingTopics). Written
 * exactly as in the index webhooks_fan_out (migrations/006_fan_out_index.sql): a prepared statement's
 * generic plan searches it by the marketplace and this equality. With the topics' `= ANY($n)` alone,
 * a generic plan made on a few webhooks searched by the marketplace only, and read every webhook of
 * the marketplace once they were many (intake-plans.test.ts). An event of one topic reads only its
 * webhooks; a status change, which reaches two, reads its marketplace's webhooks of every status and
 * keeps those of the two.
 */
const TOPIC_FAMILY = `split_part(w.topic, '/entered_', 1)`;

/**
 * The conditions of createDeliveries on a webhook `w`, given the placeholders of its parameters, so
 * that filteredWebhooksSql selects exactly the webhooks the fan-out considers.
 */
function matchingWebhooks(p: { marketplace: string; sellerText: string; topics: string; sellerInt: string }): string {
  return `w.marketplace_code = ${p.marketplace}
          -- 'disabled_by_user' is DISABLED_BY_USER (webhooks.repository.ts) and 'tenant_deactivated'
          -- TENANT_DEACTIVATED (admin/tenant-activation.ts), written out so that the planner can
          -- match the partial index webhooks_fan_out (migrations/006_fan_out_index.sql).
          AND (w.active OR w.disabled_reason IN ('disabled_by_user', 'tenant_deactivated'))
          -- The topics' family, the event's own topic (the first of matchingTopics), as an equality:
          -- with the marketplace, what every plan searches webhooks_fan_out by (TOPIC_FAMILY).
          AND ${TOPIC_FAMILY} = (${p.topics}::text[])[1]
          AND w.topic = ANY(${p.topics}::text[])
          AND (w.seller_id = '*' OR w.seller_id = ${p.sellerText}::text)
          AND (
                (w.tenant_kind = 'seller' AND w.tenant_id = ${p.sellerText}::text)
             OR (w.tenant_kind = 'marketplace' AND EXISTS (
                   SELECT 1 FROM marketplace_connections c WHERE c.marketplace_code = w.tenant_id AND c.seller_id = ${p.sellerInt}::integer))
             OR w.tenant_kind = 'admin'
          )`;
}

/**
 * The webhooks of this fan-out that have a filter, with their filters, as one SQL expression (a JSON
 * array, null for none) given the placeholders of createDeliveries's parameters: the intake reads it
 * with its checks (intake-checks.ts), evaluates each filter on the notification (webhooks/filter/)
 * and passes the ids of those that match to createDeliveries. Most webhooks have none.
 */
export function filteredWebhooksSql(p: { marketplace: string; sellerText: string; topics: string; sellerInt: string }): string {
  return `(SELECT json_agg(json_build_object('id', w.id, 'filter', w.filter)) FROM webhooks w
            WHERE ${matchingWebhooks(p)}
              AND w.filter IS NOT NULL)`;
}

/** An update that changed nothing: no deliveries, no body, and a repeat of its event_id says so again. */
export async function markUnchanged(db: Queryable, eventRowId: number): Promise<void> {
  await db.query(`UPDATE events SET unchanged = true WHERE id = $1`, [eventRowId]);
}
