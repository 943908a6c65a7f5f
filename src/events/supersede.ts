import type { Queryable } from '../db/database.js';
import { dbNow } from '../db/database-clock.js';

/**
 * Latest-state mode (issue 30): for each delivery the event just created for a webhook whose
 * delivery_mode is 'latest', that webhook's earlier unsent deliveries of the same entity (pending,
 * including those waiting for a retry, and held by a pause) become 'superseded', naming the new one
 * in superseded_by: they are never sent, and the new one is sent in their place. A delivering one is
 * left alone (its send finishes; the new one waits for it, per-entity order); finished ones too.
 * Its own statement after the fan-out, not a part of it: a second intake of the entity waits in the
 * fan-out for the first to commit (the sequence counter), and only a statement begun after that
 * wait sees the first one's delivery. One probe of deliveries_event for the event's deliveries, one
 * of the webhook by primary key each, and the entity's unsent ones through deliveries_unfinished_entity
 * and deliveries_held. A row it moves goes from the queue partition to the one at rest.
 * Returns how many were superseded.
 */
export async function supersedeEarlier(db: Queryable, eventRowId: number, clockOffsetMs: number): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE deliveries d
        SET status = 'superseded', superseded_by = n.id, completed_at = ${dbNow(2)}, updated_at = ${dbNow(2)},
            leased_by = NULL, lease_expires_at = NULL
       FROM deliveries n JOIN webhooks w ON w.id = n.webhook_id
      WHERE n.event_id = $1 AND w.delivery_mode = 'latest'
        AND d.webhook_id = n.webhook_id AND d.entity_key = n.entity_key AND d.id < n.id
        AND d.status IN ('pending', 'held')`,
    [eventRowId, clockOffsetMs],
  );
  return rowCount;
}
