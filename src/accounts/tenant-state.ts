import type { Principal } from './principal.js';
import type { Queryable } from '../db/database.js';

/**
 * Whether the tenant a credential acts for is active, as one SQL expression over the credential's
 * role, seller and marketplace columns (users, API keys, portal sessions): a seller credential is
 * bound by its seller, a marketplace credential by its marketplace (not by the seller a marketplace
 * user is also bound to), an admin by nothing, so that no deactivation can lock the admins out.
 * A row that is missing counts as active: the foreign keys keep it from missing while it is referred to.
 */
export function tenantActiveSql(role: string, sellerId: string, marketplaceCode: string, lock?: RowLock): string {
  return `(CASE ${role}
             WHEN 'admin' THEN true
             WHEN 'marketplace' THEN ${marketplaceActiveSql(marketplaceCode, lock)}
             ELSE ${sellerActiveSql(sellerId, lock)}
           END)`;
}

/**
 * `FOR SHARE`: the row read is also locked until the transaction ends, so that a deactivation
 * (which updates it) either is seen or waits for the caller's commit (src/auth/account-lock.ts).
 */
export type RowLock = 'FOR SHARE';

/** Whether the marketplace `code` (an SQL expression) is active; a missing one counts as active, as above. */
export function marketplaceActiveSql(code: string, lock?: RowLock): string {
  return `coalesce((SELECT tm.active FROM marketplaces tm WHERE tm.code = ${code}${lock ? ` ${lock}` : ''}), true)`;
}

/** Whether the seller `id` (an SQL expression) is active; a missing one counts as active, as above. */
export function sellerActiveSql(id: string, lock?: RowLock): string {
  return `coalesce((SELECT ts.active FROM sellers ts WHERE ts.id = ${id}${lock ? ` ${lock}` : ''}), true)`;
}

/** What a refusal says: the tenant of the role that is deactivated. */
export function inactiveTenantOf(role: Principal['role']): string {
  return role === 'marketplace' ? 'marketplace' : 'seller';
}

/**
 * The per-request check of an access token: one primary-key probe, no cache, so that a
 * deactivation counts from the next request on in every process (API keys get the same check in
 * their own lookup, src/auth/api-keys.repository.ts). Admin tokens need no query.
 */
export async function isPrincipalTenantActive(db: Queryable, principal: Principal): Promise<boolean> {
  if (principal.role === 'admin') return true;
  const { rows } = await db.query<{ active: boolean }>(
    `SELECT ${tenantActiveSql('$1::text', '$2::int', '$3::text')} AS active`,
    [principal.role, principal.sellerId, principal.marketplaceCode],
  );
  return rows[0]!.active;
}
