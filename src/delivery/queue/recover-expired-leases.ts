import type { Queryable } from '../../db/database.js';
import { dbNow } from '../../db/database-clock.js';

/**
 * One statement: a lease past its expiry means its worker died or stalled, so the row is due again
 * for anyone (deliveries_lease_expiry). Any worker may run it at any time; two at once each change
 * a row once (the second finds it pending and leaves it).
 */
export async function recoverExpiredLeases(db: Queryable, clockOffsetMs: number): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE deliveries_queue d SET status = 'pending', leased_by = NULL, lease_expires_at = NULL
      WHERE d.status = 'delivering' AND d.lease_expires_at <= ${dbNow(1)}`,
    [clockOffsetMs],
  );
  return rowCount;
}
