import type { Queryable } from '../db/database.js';

/** A user's state as it is while the transaction that locked it lasts. */
export interface LockedAccount {
  password_hash: string;
  active: boolean;
  /** Whether the user's seller (seller users) or marketplace (marketplace users) is active; admins: true. */
  tenant_active: boolean;
}

/**
 * Locks a user's row and its seller's or marketplace's row (FOR SHARE) and reads them, for a
 * transaction that hands out session material (a login's session, a refresh's successor, a portal
 * link's session). What ends a user's sessions, a password change or reset, a deactivation of the
 * user or of its seller or marketplace, first updates one of those rows and only then revokes the
 * sessions. So either it committed first and the caller sees its effect here, or it waits for the
 * caller's commit and its revocation then sees what the caller made. Without this, a login whose
 * password was verified just before a reset kept a session that the reset never saw.
 * Lock order: the user, its tenant, then its tokens and sessions, as those writers do.
 * Undefined when the user no longer exists.
 */
export async function lockAccount(tx: Queryable, userId: number): Promise<LockedAccount | undefined> {
  const { rows } = await tx.query<LockedAccount>(
    `WITH u AS (
       SELECT id, password_hash, active, role, seller_id, marketplace_code FROM users WHERE id = $1 FOR SHARE
     ),
     -- After u (each reads it): the tenant is locked second. A row that is missing counts as
     -- active, as in tenant-state.ts (the foreign keys keep it from missing while it is referred to).
     seller AS (
       SELECT s.active FROM sellers s WHERE s.id = (SELECT seller_id FROM u) AND (SELECT role FROM u) = 'seller' FOR SHARE
     ),
     marketplace AS (
       SELECT m.active FROM marketplaces m WHERE m.code = (SELECT marketplace_code FROM u) AND (SELECT role FROM u) = 'marketplace' FOR SHARE
     )
     SELECT u.password_hash, u.active,
            coalesce((SELECT active FROM seller), (SELECT active FROM marketplace), true) AS tenant_active
       FROM u`,
    [userId],
  );
  return rows[0];
}
