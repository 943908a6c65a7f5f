import type { Queryable } from '../db/database.js';
import { deleteInBatches, PRUNE_BATCH as BATCH } from '../db/delete-in-batches.js';

/**
 * Removes what is older than the retention: attempts, finished deliveries, then events that no
 * delivery refers to any more; held deliveries older than the retention too. In batches, so that a large backlog never holds long locks; an
 * unfinished delivery and its event are kept whatever their age.
 * `feedDays` (NOTIFICATION_RETENTION_DAYS): a delivery is also kept until it is that old (from its
 * creation), so that the webhook's feed lists it that long; the two retentions combine as the
 * longer of the two (docs/delivery.md, "What is kept").
 */
export async function pruneExpired(db: Queryable, now: Date, retentionDays: number, feedDays = 0): Promise<{ attempts: number; deliveries: number; events: number }> {
  const cutoff = new Date(now.getTime() - retentionDays * 86_400_000);
  const feedCutoff = new Date(Math.min(cutoff.getTime(), now.getTime() - feedDays * 86_400_000));
  const attempts = await deleteInBatches(db, `DELETE FROM delivery_attempts WHERE id IN (SELECT id FROM delivery_attempts WHERE started_at < $1 LIMIT ${BATCH})`, cutoff);
  const deliveries = await deleteInBatches(
    db,
    `DELETE FROM deliveries WHERE id IN (
       SELECT id FROM deliveries WHERE status IN ('succeeded', 'failed', 'superseded') AND coalesce(completed_at, updated_at) < $1 AND created_at < $2 LIMIT ${BATCH})`,
    cutoff,
    feedCutoff,
  );
  // A paused webhook's held deliveries are kept no longer than finished ones: a pause is not a queue forever.
  const held = await deleteInBatches(
    db,
    `DELETE FROM deliveries WHERE id IN (SELECT id FROM deliveries WHERE status = 'held' AND created_at < $1 LIMIT ${BATCH})`,
    feedCutoff,
  );
  const events = await deleteInBatches(
    db,
    `DELETE FROM events WHERE id IN (
       SELECT e.id FROM events e WHERE e.created_at < $1 AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id) LIMIT ${BATCH})`,
    cutoff,
  );
  return { attempts, deliveries: deliveries + held, events };
}
