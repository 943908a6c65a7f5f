import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Principal } from '../accounts/principal.js';
import type { Queryable } from '../db/database.js';
import { hashToken } from './portal-links.repository.js';
import { marketplaceActiveSql, sellerActiveSql, tenantActiveSql } from '../accounts/tenant-state.js';

/**
 * A signed-in portal session: who it acts as and, from a portal link, the scope it is confined to.
 * A link's session acts as the link's maker (its role, marketplace and seller), never as the seller
 * the link names: the API's rule for that principal decides, and the scope only narrows it
 * (src/portal/portal-access.ts).
 */
export interface PortalSession {
  principal: Principal;
  csrfToken: string;
  /** Set for portal-link sessions: the only marketplace the session may see. */
  scopeMarketplace: string | null;
  /** Set for a link made for a seller: only webhooks about that seller (portal-access.ts). */
  scopeSeller: number | null;
  /** The link that opened the session (portal_links.id), named in the webhook history; null after a password sign-in. */
  portalLinkId: number | null;
  displayName: string;
  /** Opened by a portal link (acting as its maker), not by the user's own sign-in: no account pages. */
  viaLink: boolean;
}

export interface NewPortalSession {
  /** The user the session acts as, or (a link made with an API key) null and `apiKeyId` set. */
  userId: number | null;
  apiKeyId?: number | undefined;
  authSessionId: string | null;
  role: Principal['role'];
  sellerId: number;
  marketplaceCode: string | null;
  scopeMarketplace: string | null;
  scopeSeller: number | null;
  portalLinkId: number | null;
  displayName: string;
  now: Date;
  ttlSeconds: number;
}

/**
 * Starts a session; returns the cookie value. Only its SHA-256 is stored, so a copy of the table
 * opens no session. The CSRF token is random per session and goes into every form.
 */
export async function createPortalSession(db: Queryable, session: NewPortalSession): Promise<string> {
  const id = randomBytes(32).toString('base64url');
  await db.query(
    `INSERT INTO portal_sessions (id_hash, csrf_token, user_id, auth_session_id, role, seller_id, marketplace_code, scope_marketplace, scope_seller, portal_link_id, display_name, created_at, expires_at, api_key_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $12, $13, $9, $10, $10::timestamptz + make_interval(secs => $11), $14)`,
    [
      hashToken(id), randomBytes(24).toString('base64url'), session.userId, session.authSessionId, session.role, session.sellerId,
      session.marketplaceCode, session.scopeMarketplace, session.displayName, session.now, session.ttlSeconds, session.scopeSeller, session.portalLinkId,
      session.apiKeyId ?? null,
    ],
  );
  return id;
}

/**
 * The live session of a cookie: not expired, its user still active (or, for a link made with an
 * API key, the key not revoked nor expired), and (after a password sign-in) its API session not
 * revoked, so logout and revoke-all end portal sessions too, and a key's revocation its links' sessions.
 */
export async function findPortalSession(db: Queryable, cookie: string, now: Date): Promise<PortalSession | undefined> {
  const { rows } = await db.query<{
    csrf_token: string; user_id: number | null; api_key_id: number | null; auth_session_id: string | null; role: Principal['role']; seller_id: number;
    marketplace_code: string | null; scope_marketplace: string | null; scope_seller: number | null; portal_link_id: string | null; display_name: string;
  }>(
    `SELECT p.csrf_token, p.user_id, p.api_key_id, p.auth_session_id, p.role, p.seller_id, p.marketplace_code, p.scope_marketplace, p.scope_seller, p.portal_link_id, p.display_name
       FROM portal_sessions p
       LEFT JOIN users u ON u.id = p.user_id
       LEFT JOIN api_keys k ON k.id = p.api_key_id
       LEFT JOIN sessions s ON s.id = p.auth_session_id
      WHERE p.id_hash = $1 AND p.expires_at > $2 AND (p.auth_session_id IS NULL OR s.revoked_at IS NULL)
        -- Its maker may still act: an active user, or a key neither revoked nor expired (checked at
        -- every request, as the key's own requests are: authenticateApiKey).
        AND CASE WHEN p.user_id IS NOT NULL THEN coalesce(u.active, false)
                 ELSE k.id IS NOT NULL AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > $2) END
        -- The tenant the session acts for is still active (a deactivated seller or marketplace ends it),
        -- and so is the marketplace a link's session is confined to (a seller's link made by it).
        AND ${tenantActiveSql('p.role', 'p.seller_id', 'p.marketplace_code')}
        AND (p.scope_marketplace IS NULL OR ${marketplaceActiveSql('p.scope_marketplace')})
        AND (p.scope_seller IS NULL OR ${sellerActiveSql('p.scope_seller')})
        -- A link session acting as a seller was opened by the previous release (migration 013): it
        -- granted a marketplace's link the seller's own rights, so it is no session any more.
        AND NOT (p.auth_session_id IS NULL AND p.role = 'seller')`,
    [hashToken(cookie), now],
  );
  const row = rows[0];
  if (!row) return undefined;
  const common = { sellerId: row.seller_id, role: row.role, marketplaceCode: row.marketplace_code, tokenId: 'portal' };
  return {
    // A key's link session acts as the key (an API key principal: no user, no session).
    principal: row.api_key_id !== null ? { ...common, apiKeyId: row.api_key_id, userId: null, sessionId: null } : {
      userId: row.user_id!,
      // Link sessions have no API session; a fresh id keeps Principal's shape without meaning one.
      sessionId: row.auth_session_id ?? randomUUID(),
      sellerId: row.seller_id,
      role: row.role,
      marketplaceCode: row.marketplace_code,
      tokenId: 'portal',
    },
    csrfToken: row.csrf_token,
    scopeMarketplace: row.scope_marketplace,
    scopeSeller: row.scope_seller,
    portalLinkId: row.portal_link_id === null ? null : Number(row.portal_link_id),
    displayName: row.display_name,
    viaLink: row.auth_session_id === null,
  };
}

export async function deletePortalSession(db: Queryable, cookie: string): Promise<string | null> {
  const { rows } = await db.query<{ auth_session_id: string | null }>(`DELETE FROM portal_sessions WHERE id_hash = $1 RETURNING auth_session_id`, [hashToken(cookie)]);
  return rows[0]?.auth_session_id ?? null;
}

export function sameToken(given: unknown, expected: string): boolean {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
