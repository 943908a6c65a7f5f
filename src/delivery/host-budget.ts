import type { Config } from '../config.js';
import type { Queryable } from '../db/database.js';
import { dbNow } from './database-clock.js';
import { TokenBuckets } from '../http/token-buckets.js';

/**
 * The send budget per destination host: notification bytes per second, per worker process. Without
 * it one large event fanned out to many webhooks of one receiver (or many retries) makes Plaza an
 * amplifier against that host. A host over its budget waits; other hosts' deliveries go on.
 */
export interface HostBudget {
  /** 0 when the bytes may go now, else the seconds to wait. */
  take(callbackUrl: string, bytes: number, nowMs: number): number;
}

export function createHostBudget(config: Config): HostBudget | undefined {
  if (config.DELIVERY_HOST_BYTES_PER_SECOND === 0 || config.DELIVERY_HOST_BURST_BYTES === 0) return undefined;
  const buckets = new TokenBuckets(config.DELIVERY_HOST_BURST_BYTES, config.DELIVERY_HOST_BYTES_PER_SECOND);
  return {
    take(callbackUrl, bytes, nowMs) {
      let host: string;
      try {
        // The hostname, not host:port: ports of one machine share its bandwidth.
        host = new URL(callbackUrl).hostname.toLowerCase();
      } catch {
        return 0; // the sender reports the bad URL as the attempt's error
      }
      return buckets.take(host, bytes, nowMs);
    },
  };
}

/**
 * Gives a claimed delivery back, due after the wait, without counting an attempt: the receiver was
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
