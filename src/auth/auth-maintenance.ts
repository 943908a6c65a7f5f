import type { Queryable } from '../db/database.js';
import { deleteInBatches, PRUNE_BATCH as BATCH } from '../db/delete-in-batches.js';

export interface AuthRetention {
  /** REFRESH_TOKEN_TTL_SECONDS: an expired token is kept one more lifetime, so a replay still counts as reuse. */
  refreshTokenTtlSeconds: number;
  /** How long audit events are kept. */
  auditRetentionDays: number;
}

/**
 * Removes what no rule needs any more: refresh tokens expired for more than one lifetime, sessions
 * left without tokens, audit events older than the retention, and DPoP proofs past their window. In batches, so that a backlog
 * never holds long locks. A maintenance job (src/maintenance-jobs.ts), run by every role.
 */
export async function pruneAuthRecords(db: Queryable, now: Date, retention: AuthRetention): Promise<{ refreshTokens: number; sessions: number; events: number; dpopProofs: number }> {
  const tokenCutoff = new Date(now.getTime() - retention.refreshTokenTtlSeconds * 1000);
  const eventCutoff = new Date(now.getTime() - retention.auditRetentionDays * 86_400_000);
  const refreshTokens = await deleteInBatches(
    db,
    `DELETE FROM refresh_tokens WHERE id IN (SELECT id FROM refresh_tokens WHERE expires_at < $1 LIMIT ${BATCH})`,
    tokenCutoff,
  );
  const sessions = await deleteInBatches(
    db,
    `DELETE FROM sessions WHERE id IN (
       SELECT s.id FROM sessions s
        WHERE s.last_used_at < $1 AND NOT EXISTS (SELECT 1 FROM refresh_tokens rt WHERE rt.session_id = s.id)
        LIMIT ${BATCH})`,
    tokenCutoff,
  );
  const events = await deleteInBatches(db, `DELETE FROM auth_events WHERE id IN (SELECT id FROM auth_events WHERE created_at < $1 LIMIT ${BATCH})`, eventCutoff);
  // A proof whose iat left the window is refused by its age; its row has nothing left to stop.
  const dpopProofs = await deleteInBatches(db, `DELETE FROM dpop_proofs WHERE key IN (SELECT key FROM dpop_proofs WHERE expires_at < $1 LIMIT ${BATCH})`, now);
  return { refreshTokens, sessions, events, dpopProofs };
}
