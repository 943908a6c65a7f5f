import { createHash, randomBytes } from 'node:crypto';
import { marketplaceActiveSql, sellerActiveSql, tenantActiveSql } from '../accounts/tenant-state.js';
import { NO_SELLER } from '../auth/token-pair.js';
import { lockAccount } from '../auth/account-lock.js';
import type { Queryable } from '../db/database.js';

/** A portal link's scope: webhooks about one seller in the marketplace, or (no seller) none of the sellers' own (portal-access.ts). */
export interface PortalLinkScope {
  marketplaceCode: string;
  sellerId: number | null;
}

export const hashToken = (token: string): Buffer => createHash('sha256').update(token).digest();

/** Who makes a link: a user, or an API key (migration 005); its session acts as that maker. */
export type LinkCreator = { userId: number; apiKeyId?: undefined } | { apiKeyId: number; userId?: undefined };

/** Stores a new one-time link; the token itself is only returned, never stored. */
export async function insertPortalLink(db: Queryable, scope: PortalLinkScope, createdBy: LinkCreator, now: Date, ttlSeconds: number): Promise<{ id: number; token: string; expiresAt: Date }> {
  const token = randomBytes(32).toString('base64url');
  const expiresAt = new Date(now.getTime() + ttlSeconds * 1000);
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO portal_links (token_hash, marketplace_code, seller_id, created_by, created_by_api_key, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
    [hashToken(token), scope.marketplaceCode, scope.sellerId, createdBy.userId ?? null, createdBy.apiKeyId ?? null, now, expiresAt],
  );
  return { id: Number(rows[0]!.id), token, expiresAt };
}

/**
 * Uses a link up, inside the caller's transaction (which then opens the link's session): of two
 * concurrent uses exactly one gets the scope. An unknown, expired or used link gives undefined, and
 * the three are not told apart; so does a link whose maker, or whose marketplace or seller, is
 * deactivated (or is being deactivated: their rows are locked first, as for a login, account-lock.ts,
 * so that a deactivation either is seen here or deletes the session opened).
 */
export async function consumePortalLink(tx: Queryable, token: string, now: Date): Promise<(PortalLinkScope & { id: number; createdBy: LinkCreator; maker: LinkMaker }) | undefined> {
  const hash = hashToken(token);
  const found = await tx.query<{ created_by: number | null; created_by_api_key: number | null; marketplace_code: string; seller_id: number | null }>(
    `SELECT created_by, created_by_api_key, marketplace_code, seller_id FROM portal_links WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2`,
    [hash, now],
  );
  const link = found.rows[0];
  if (!link) return undefined;
  let maker: LinkMaker | undefined;
  if (link.created_by !== null) {
    const account = await lockAccount(tx, link.created_by);
    if (!account?.active || !account.tenant_active) return undefined;
  } else {
    // A key's link: the key as it is now (not revoked, not expired, its tenant active), read under a
    // share lock so that a revocation either is seen here or comes after the session it then ends.
    maker = await lockMakerKey(tx, link.created_by_api_key!, now);
    if (!maker) return undefined;
  }
  const scope = await tx.query<{ active: boolean }>(
    `SELECT ${marketplaceActiveSql('$1::text', 'FOR SHARE')} AND ${sellerActiveSql('$2::int', 'FOR SHARE')} AS active`,
    [link.marketplace_code, link.seller_id],
  );
  if (!scope.rows[0]!.active) return undefined;
  // The maker's role, marketplace and seller, read under the lock taken above: the session acts as them.
  const { rows } = await tx.query<{ id: string; marketplace_code: string; seller_id: number | null; maker_role: LinkMaker['role'] | null; maker_seller_id: number | null; maker_marketplace_code: string | null }>(
    `UPDATE portal_links l SET used_at = $2
       FROM (SELECT 1) one LEFT JOIN users u ON u.id = $3::int
      WHERE l.token_hash = $1 AND l.used_at IS NULL AND l.expires_at > $2
      RETURNING l.id, l.marketplace_code, l.seller_id, u.role AS maker_role, u.seller_id AS maker_seller_id, u.marketplace_code AS maker_marketplace_code`,
    [hash, now, link.created_by],
  );
  const row = rows[0];
  if (!row) return undefined;
  const createdBy: LinkCreator = link.created_by !== null ? { userId: link.created_by } : { apiKeyId: link.created_by_api_key! };
  maker ??= row.maker_role === null ? undefined : { role: row.maker_role, sellerId: row.maker_seller_id!, marketplaceCode: row.maker_marketplace_code };
  return maker && { id: Number(row.id), marketplaceCode: row.marketplace_code, sellerId: row.seller_id, createdBy, maker };
}

/** An API key that may still act (not revoked, not expired, its tenant active), its row locked FOR SHARE; its scope as a link's maker. */
async function lockMakerKey(tx: Queryable, id: number, now: Date): Promise<LinkMaker | undefined> {
  const { rows } = await tx.query<{ role: LinkMaker['role']; seller_id: number | null; marketplace_code: string | null; usable: boolean }>(
    `SELECT role, seller_id, marketplace_code,
            revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $2) AND ${tenantActiveSql('role', 'seller_id', 'marketplace_code', 'FOR SHARE')} AS usable
       FROM api_keys WHERE id = $1 FOR SHARE`,
    [id, now],
  );
  const key = rows[0];
  return key?.usable ? { role: key.role, sellerId: key.seller_id ?? NO_SELLER, marketplaceCode: key.marketplace_code } : undefined;
}

/** The user who made a link, as its principal has it: the link's session acts as this. */
export interface LinkMaker {
  role: 'seller' | 'marketplace' | 'admin';
  sellerId: number;
  marketplaceCode: string | null;
}

/** Links and portal sessions past their expiry are of no use: maintenance removes them. */
export async function pruneExpiredPortalRecords(db: Queryable, now: Date): Promise<number> {
  const links = await db.query(`DELETE FROM portal_links WHERE expires_at < $1`, [now]);
  const sessions = await db.query(`DELETE FROM portal_sessions WHERE expires_at < $1`, [now]);
  return links.rowCount + sessions.rowCount;
}
