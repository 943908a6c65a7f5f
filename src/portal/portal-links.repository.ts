import { createHash, randomBytes } from 'node:crypto';
import { marketplaceActiveSql, sellerActiveSql } from '../accounts/tenant-state.js';
import { lockAccount } from '../auth/account-lock.js';
import type { Queryable } from '../db/database.js';

/** A portal link's scope: webhooks about one seller in the marketplace, or (no seller) none of the sellers' own (portal-access.ts). */
export interface PortalLinkScope {
  marketplaceCode: string;
  sellerId: number | null;
}

export const hashToken = (token: string): Buffer => createHash('sha256').update(token).digest();

/** Stores a new one-time link; the token itself is only returned, never stored. */
export async function insertPortalLink(db: Queryable, scope: PortalLinkScope, createdBy: number, now: Date, ttlSeconds: number): Promise<{ id: number; token: string; expiresAt: Date }> {
  const token = randomBytes(32).toString('base64url');
  const expiresAt = new Date(now.getTime() + ttlSeconds * 1000);
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO portal_links (token_hash, marketplace_code, seller_id, created_by, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
    [hashToken(token), scope.marketplaceCode, scope.sellerId, createdBy, now, expiresAt],
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
export async function consumePortalLink(tx: Queryable, token: string, now: Date): Promise<(PortalLinkScope & { id: number; createdBy: number; maker: LinkMaker }) | undefined> {
  const hash = hashToken(token);
  const found = await tx.query<{ created_by: number; marketplace_code: string; seller_id: number | null }>(
    `SELECT created_by, marketplace_code, seller_id FROM portal_links WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2`,
    [hash, now],
  );
  const link = found.rows[0];
  if (!link) return undefined;
  const maker = await lockAccount(tx, link.created_by);
  if (!maker?.active || !maker.tenant_active) return undefined;
  const scope = await tx.query<{ active: boolean }>(
    `SELECT ${marketplaceActiveSql('$1::text', 'FOR SHARE')} AND ${sellerActiveSql('$2::int', 'FOR SHARE')} AS active`,
    [link.marketplace_code, link.seller_id],
  );
  if (!scope.rows[0]!.active) return undefined;
  // The maker's role, marketplace and seller, read under the lock taken above: the session acts as them.
  const { rows } = await tx.query<{ id: string; marketplace_code: string; seller_id: number | null; created_by: number; maker_role: LinkMaker['role']; maker_seller_id: number; maker_marketplace_code: string | null }>(
    `UPDATE portal_links l SET used_at = $2
       FROM users u
      WHERE l.token_hash = $1 AND l.used_at IS NULL AND l.expires_at > $2 AND u.id = l.created_by
      RETURNING l.id, l.marketplace_code, l.seller_id, l.created_by, u.role AS maker_role, u.seller_id AS maker_seller_id, u.marketplace_code AS maker_marketplace_code`,
    [hash, now],
  );
  const row = rows[0];
  return row && {
    id: Number(row.id),
    marketplaceCode: row.marketplace_code,
    sellerId: row.seller_id,
    createdBy: row.created_by,
    maker: { role: row.maker_role, sellerId: row.maker_seller_id, marketplaceCode: row.maker_marketplace_code },
  };
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
