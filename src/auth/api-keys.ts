import { createHash, randomBytes } from 'node:crypto';

/**
 * API keys are `plz_` plus base64url of 32 random bytes (256 bits): recognisable in logs and by
 * secret scanners, unguessable. Only the SHA-256 of the whole key is stored: with 256 bits of
 * entropy a slow password hash adds nothing, and a lookup by hash stays one index probe.
 */
export const API_KEY_PREFIX = 'plz_';
const WELL_FORMED = /^plz_[A-Za-z0-9_-]{43}$/;
/** Characters of the key kept in clear (list output), enough to tell keys apart, useless to guess. */
const SHOWN_PREFIX_LENGTH = API_KEY_PREFIX.length + 6;

export function newApiKey(): string {
  return `${API_KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
}

export function hashApiKey(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}

export function shownPrefixOf(key: string): string {
  return key.slice(0, SHOWN_PREFIX_LENGTH);
}

/** A bearer credential shaped like an API key; anything else is not looked up at all. */
export function isWellFormedApiKey(value: string): boolean {
  return WELL_FORMED.test(value);
}
