import type { Queryable } from '../../db/database.js';
import type { Quota } from './fair-share.js';
import { STREAM } from './read-due-streams.js';

/** A delivery this worker holds a lease on, with what it needs to send it. */
export interface ClaimedDelivery {
  id: number;
  message_id: string;
  webhook_id: number;
  /** The webhook's owner, `kind:id` (the unit of the fairness rule). */
  tenant: string;
  attempts: number;
  callback_url: string;
  /** Read with openHeaders (header-box.ts). */
  headers: Record<string, string>;
  headers_encrypted: string | null;
  secret_encrypted: string;
  previous_secret_encrypted: string | null;
  previous_secret_expires_at: Date | null;
  /** The event's notification body as stored, sent byte for byte. */
  body: string;
  /** Its position among the webhook's notifications of its entity (the plaza-entity-sequence header); null when the previous release wrote it during an upgrade. */
  sequence: number | null;
  /** The W3C traceparent of the intake that created the delivery (events.trace_context); null without traces. */
  trace_context?: string | null;
  /** The webhook sends a `traceparent` header (webhooks.send_traceparent). */
  send_traceparent?: boolean;
}

/**
 * One statement: per (webhook, stream) quota, that many of the stream's due rows in due order
 * (deliveries_pending_stream_due), each the first unfinished delivery of its entity (per-entity
 * order), leased to this worker; with each row's webhook and event body. Due by `now`, the claim's
 * time, as the read counted them: a row due since could take the place of a counted one that must
 * wait behind its entity, and the claim would then report nothing left while that one was.
 * Prepared, with one generic plan per connection (claim.ts), kept while the queue grows: so every
 * condition is one that only the intended index can serve (claim-plans.test.ts). The entity check
 * looks for an earlier unfinished row of the same webhook and entity with row comparisons on
 * (entity_key, webhook_id, id), which only deliveries_unfinished_entity can take as its bounds, and
 * with no equality to hash or merge on: one probe a row, whatever the plan. Written as a min() over
 * the two columns, its generic plan made on a short queue walked the webhook's rows by id
 * (deliveries_queue_webhook_id_id_idx) instead. The UPDATE finds its rows by id alone: they were
 * locked pending by this statement, and a status check there made the generic plan scan the partial
 * index of pending rows. SKIP LOCKED below the LIMIT: a row locked by anything else is replaced by
 * the next one rather than dropped.
 */
export async function takeRows(
  db: Queryable,
  options: { now: string; workerId: string; leaseSeconds: number; quotas: readonly Quota[] },
): Promise<ClaimedDelivery[]> {
  const { quotas } = options;
  const { rows } = await db.query<ClaimedDelivery>(
    `WITH quota AS (
       SELECT * FROM unnest($2::bigint[], $3::text[], $4::int[]) AS q(webhook_id, key, n)
     ),
     locked AS (
       SELECT c.id
         FROM quota q
        CROSS JOIN LATERAL (
          SELECT d.id FROM deliveries_queue d
           WHERE d.webhook_id = q.webhook_id AND ${STREAM} = q.key AND d.status = 'pending' AND d.next_attempt_at <= $1::timestamptz
             AND NOT EXISTS (SELECT 1 FROM deliveries_queue x
                              WHERE (x.entity_key, x.webhook_id) >= (d.entity_key, d.webhook_id)
                                AND (x.entity_key, x.webhook_id, x.id) < (d.entity_key, d.webhook_id, d.id))
           ORDER BY d.next_attempt_at, d.id
           LIMIT q.n
           FOR UPDATE OF d SKIP LOCKED
        ) c
     ),
     taken AS (
       UPDATE deliveries_queue d
          SET status = 'delivering', leased_by = $5,
              lease_expires_at = $1::timestamptz + make_interval(secs => $6), updated_at = $1::timestamptz
        -- = ANY(ARRAY(…)) rather than a join to the CTE: the few rows by primary key, not a hash of the queue.
        WHERE d.id = ANY(ARRAY(SELECT id FROM locked))
        RETURNING d.id, d.message_id, d.webhook_id, d.attempts, d.event_id, d.sequence
     )
     -- The webhook and the event of each row by primary key, one probe each: as a join, the planner
     -- merged the rows with an ordered scan of all webhooks (16 ms at 10 000 webhooks).
     SELECT t.id, t.message_id, t.webhook_id, t.sequence, h.tenant_kind || ':' || h.tenant_id AS tenant, t.attempts, h.callback_url,
            h.headers, h.headers_encrypted, h.secret_encrypted, h.previous_secret_encrypted, h.previous_secret_expires_at, h.send_traceparent,
            e.body, e.trace_context
       FROM taken t
      CROSS JOIN LATERAL (SELECT w.tenant_kind, w.tenant_id, w.callback_url, w.headers, w.headers_encrypted, w.secret_encrypted,
                                 w.previous_secret_encrypted, w.previous_secret_expires_at, w.send_traceparent
                            FROM webhooks w WHERE w.id = t.webhook_id OFFSET 0) h
      -- The event's body and trace context in one probe by primary key.
      LEFT JOIN LATERAL (SELECT ev.body::text AS body, ev.trace_context FROM events ev WHERE ev.id = t.event_id OFFSET 0) e ON true
      ORDER BY t.id`,
    [options.now, quotas.map((q) => q.webhookId), quotas.map((q) => q.key), quotas.map((q) => q.n), options.workerId, options.leaseSeconds],
    { prepare: true },
  );
  return rows;
}
