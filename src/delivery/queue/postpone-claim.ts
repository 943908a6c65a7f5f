import type { Queryable } from '../../db/database.js';
import { dbNow } from '../../db/database-clock.js';

/**
 * One statement: gives a claimed delivery back, due after the wait, without counting an attempt: the receiver was
 * never contacted. Only while this worker still holds the lease.
 */
export async function postponeClaim(db: Queryable, deliveryId: number, workerId: string, waitSeconds: number, clockOffsetMs: number): Promise<boolean> {
  // Due times come from the database's clock, like every lease and retry (database-clock.ts).
  const { rowCount } = await db.query(
    `UPDATE deliveries SET status = 'pending', leased_by = NULL, lease_expires_at = NULL,
            next_attempt_at = ${dbNow(4)} + $3::double precision * interval '1 second', updated_at = ${dbNow(4)}
      WHERE id = $1 AND leased_by = $2 AND status = 'delivering'`,
    [deliveryId, workerId, waitSeconds, clockOffsetMs],
  );
  return rowCount > 0;
}
