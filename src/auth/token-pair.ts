import type { Role } from '../accounts/accounts.repository.js';
import type { FeatureDeps } from '../deps.js';
import { issueAccessToken } from './access-tokens.js';

/** The seller id of an admin bound to no seller: no seller has it (ids are > 0). */
export const NO_SELLER = 0;

/** The login result of the spec; refresh answers with the same fields. */
export interface TokenPair {
  token: string;
  refresh_token: string;
  user_id: number;
  user_name: string;
  seller_id: number;
  expires_in: number;
  /** `DPoP` when the session is bound to the client's key (RFC 9449), `Bearer` otherwise. */
  token_type: 'Bearer' | 'DPoP';
}

export interface TokenOwner {
  id: number;
  username: string;
  seller_id: number | null;
  role: Role;
  marketplace_code: string | null;
}

export async function tokenPair(
  { keys, config }: Pick<FeatureDeps, 'keys' | 'config'>,
  user: TokenOwner,
  sessionId: string,
  refreshToken: string,
  now: Date,
  /** The thumbprint of the key the session is bound to (DPoP), null for a Bearer session. */
  dpopJkt: string | null = null,
): Promise<TokenPair> {
  const token = await issueAccessToken(
    keys,
    config,
    { userId: user.id, sessionId, sellerId: user.seller_id ?? NO_SELLER, role: user.role, marketplaceCode: user.marketplace_code, ...(dpopJkt ? { dpopJkt } : {}) },
    now,
  );
  return {
    token,
    refresh_token: refreshToken,
    user_id: user.id,
    user_name: user.username,
    seller_id: user.seller_id ?? NO_SELLER,
    expires_in: config.ACCESS_TOKEN_TTL_SECONDS,
    token_type: dpopJkt ? 'DPoP' : 'Bearer',
  };
}

export function refreshExpiry(issuedAt: Date, ttlSeconds: number): Date {
  return new Date(issuedAt.getTime() + ttlSeconds * 1000);
}
