import type { Role } from './accounts.repository.js';

/** The user and session an access token speaks for. The seller in context comes only from here. */
export interface UserPrincipal {
  userId: number;
  sessionId: string;
  sellerId: number;
  role: Role;
  marketplaceCode: string | null;
  tokenId: string;
  apiKeyId?: undefined;
  /** The thumbprint of the DPoP key the token is bound to (`cnf.jkt`), absent for a Bearer token. */
  dpopJkt?: string;
}

/**
 * An API key (src/auth/api-keys.ts): scoped like the user role of the same name, without a user
 * or a session. sellerId is 0 for admin and marketplace keys, which no seller has (ids are > 0).
 */
export interface ApiKeyPrincipal {
  apiKeyId: number;
  userId: null;
  sessionId: null;
  sellerId: number;
  role: Role;
  marketplaceCode: string | null;
  tokenId: string;
}

/** Who a request speaks for: a user through an access token, or an API key. */
export type Principal = UserPrincipal | ApiKeyPrincipal;
