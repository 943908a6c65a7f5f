import { createHash, createHmac, randomBytes } from 'node:crypto';

/**
 * Refresh tokens are opaque: base64url of 32 random bytes (256 bits). Only their SHA-256 hash is
 * stored, so a copy of the database does not hand out sessions.
 */
const WELL_FORMED = /^[A-Za-z0-9_-]{43}$/;

export function newRefreshToken(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * The successor of a token is derived, not random: HMAC-SHA256 under a server key. It is as
 * unguessable as a random token without the key, and it lets the grace option hand the same
 * successor to a client that presents its previous token twice, without storing any plaintext.
 */
export function successorOf(successorKey: Buffer, token: string): string {
  return createHmac('sha256', successorKey).update(token).digest('base64url');
}

export function hashRefreshToken(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

export function isWellFormedRefreshToken(token: string): boolean {
  return WELL_FORMED.test(token);
}
