import type { Queryable } from '../../db/database.js';
import { deleteInBatches, PRUNE_BATCH } from '../../db/delete-in-batches.js';

/** Which entity a snapshot is of: the event's marketplace, seller and entity (migrations/003_entity_snapshots_and_filters.sql). */
export interface SnapshotKey {
  marketplaceCode: string;
  sellerId: number;
  kind: 'publication' | 'order';
  entityId: string;
}

export interface Snapshot {
  snapshot: Record<string, unknown>;
  /** Orders: the state the order is in after this event; null for publications. */
  state: string | null;
}

const KEY = 'marketplace_code = $1 AND seller_id = $2 AND kind = $3 AND entity_id = $4';

/**
 * Writes the entity's new snapshot and returns the one it replaces (undefined for the first), inside
 * the intake's transaction, in one statement when the entity has a snapshot (the common case). The
 * subquery locks the row (FOR UPDATE) before the UPDATE reads it, so concurrent events of one entity
 * take turns and each returns the snapshot of the one accepted before it: a waiter's lock returns the
 * row its predecessor committed, and the UPDATE writes that same row version (intake order is the
 * order of this lock, held until the event and its deliveries are committed). RETURNING names the
 * subquery's columns: the values before this UPDATE.
 * The first snapshot of an entity is an insert: of two concurrent first events, the second waits on
 * the first's insert (ON CONFLICT waits for the other transaction), then updates its row.
 */
export async function replaceSnapshot(tx: Queryable, key: SnapshotKey, next: Snapshot, now: Date): Promise<Snapshot | undefined> {
  const params = [key.marketplaceCode, key.sellerId, key.kind, key.entityId, JSON.stringify(next.snapshot), next.state, now];
  for (;;) {
    const { rows } = await tx.query<Snapshot>(
      `UPDATE entity_snapshots SET snapshot = $5::json, state = $6, updated_at = $7
         FROM (SELECT snapshot, state FROM entity_snapshots WHERE ${KEY} FOR UPDATE) previous
        WHERE ${KEY}
       RETURNING previous.snapshot, previous.state`,
      params,
      // Prepared, as the insert below: probes of the primary key whatever the plan (intake-plans.test.ts).
      { prepare: true },
    );
    if (rows[0]) return rows[0];
    const inserted = await tx.query(
      `INSERT INTO entity_snapshots (marketplace_code, seller_id, kind, entity_id, snapshot, state, updated_at)
       VALUES ($1, $2, $3, $4, $5::json, $6, $7)
       ON CONFLICT DO NOTHING`,
      params,
      { prepare: true },
    );
    if (inserted.rowCount > 0) return undefined;
    // Another event of this entity inserted it first and has committed: update its row.
  }
}

/**
 * Snapshots follow the events' retention: one not replaced for DELIVERY_RETENTION_DAYS is removed, as
 * the events it came from are by then. The entity's next event is then a first one again (`changes`
 * and a derived `state_from` null). One row per entity, so their number is bounded by the entities
 * seen within the retention, and each row's size by the event body limit.
 */
export async function pruneSnapshots(db: Queryable, now: Date, retentionDays: number): Promise<number> {
  const cutoff = new Date(now.getTime() - retentionDays * 86_400_000);
  return deleteInBatches(
    db,
    `DELETE FROM entity_snapshots WHERE (marketplace_code, seller_id, kind, entity_id) IN (
       SELECT marketplace_code, seller_id, kind, entity_id FROM entity_snapshots WHERE updated_at < $1 LIMIT ${PRUNE_BATCH})`,
    cutoff,
  );
}
