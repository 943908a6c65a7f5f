import { tenantActiveSql } from '../accounts/tenant-state.js';
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
 * Tokens and sessions come after both, as with those writers.
 * Undefined when the user no longer exists.
 */
export async function lockAccount(tx: Queryable, userId: number): Promise<LockedAccount | undefined> {
  const { rows } = await tx.query<LockedAccount>(lockedAccountSql('$1'), [userId]);
  return rows[0];
}

/**
 * lockAccount's statement for the user id `userId` (an SQL expression), also a part of a larger
 * statement (sessions.repository.ts: a login's session, written only if the state read allows; a
 * refresh's owner, after its sessions lock). The row locks return the rows as last committed,
 * whenever the statement's snapshot was taken, so the other parts of that statement act on the
 * state the locks hold, as later statements of a transaction would.
 */
export function lockedAccountSql(userId: string): string {
  // The tenant's row is locked as the user's row is read (the subquery runs for it), then the
  // user's: either order is free of deadlocks, as no writer holds one of them while waiting for the other.
  return `SELECT u.password_hash, u.active, ${tenantActiveSql('u.role', 'u.seller_id', 'u.marketplace_code', 'FOR SHARE')} AS tenant_active
       FROM users u WHERE u.id = ${userId} FOR SHARE`;
}
