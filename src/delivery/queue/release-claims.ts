import type { Queryable } from '../../db/database.js';
import { dbNow } from '../../db/database-clock.js';

/**
 * One statement: gives this worker's claims back, due again at once for any worker: all of them
 * (shutdown), or the deliveries `ids`.
 */
export async function releaseClaims(db: Queryable, workerId: string, clockOffsetMs: number, ids?: readonly number[]): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE deliveries_queue SET status = 'pending', leased_by = NULL, lease_expires_at = NULL, updated_at = ${dbNow(2)}
      WHERE leased_by = $1 AND status = 'delivering' AND ($3::bigint[] IS NULL OR id = ANY($3))`,
    [workerId, clockOffsetMs, ids ?? null],
  );
  return rowCount;
}
