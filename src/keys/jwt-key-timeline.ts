import type { CryptoKey, JWK } from 'jose';
import type { Config } from '../config.js';
import type { JwtAlgorithm } from './jwt-algorithms.js';

/*
 * The timeline of the JWT signing keys, on the database's clock. A key is
 * - published (in the JWKS of every process) from `publishedAt` + at most PUBLICATION_SECONDS,
 * - signing from `signsFrom` = publishedAt + signingLeadSeconds, not before,
 * - signing until `retiredAt` (exclusive), the time its successor starts signing, never after,
 * - in the JWKS and accepted until retiredAt + ACCESS_TOKEN_TTL_SECONDS + JWT_CLOCK_TOLERANCE_SECONDS,
 *   when every token it signed has expired.
 * Every process decides at each signature, by this timeline, which key signs: not by when it
 * happened to load the keys. So all processes switch at the same instant whatever their reload.
 */

/**
 * No process signs or publishes from a view of the key table older than this (keys.ts reloads
 * before, when its timer has not): a key written at t is in every JWKS by t + PUBLICATION_SECONDS,
 * and a switch scheduled at least that far ahead is seen by every process before it happens.
 * It is the most JWT_KEYS_RELOAD_SECONDS may be (config.ts).
 */
export const MAX_VIEW_AGE_SECONDS = 30;

/** MAX_VIEW_AGE_SECONDS, with as much again for the rotation's commit and the clocks' estimates. */
export const PUBLICATION_SECONDS = 2 * MAX_VIEW_AGE_SECONDS;

/**
 * How long a new key is published before it signs: until every process publishes it, then the
 * JWKS's max-age (a verifier behind an HTTP cache keeps its copy that long), then the cooldown of a
 * verifier that refetches on an unknown kid but not more often than that (jose's createRemoteJWKSet:
 * 30 s). A token of the new key then finds it in any copy of the JWKS a verifier may hold.
 */
export function signingLeadSeconds(config: Pick<Config, 'JWKS_MAX_AGE_SECONDS' | 'JWT_VERIFIER_COOLDOWN_SECONDS'>): number {
  return PUBLICATION_SECONDS + config.JWKS_MAX_AGE_SECONDS + config.JWT_VERIFIER_COOLDOWN_SECONDS;
}

/** How long a retired key stays published and accepted: until every token it signed has expired. */
export function publishedAfterRetirementMs(config: Pick<Config, 'ACCESS_TOKEN_TTL_SECONDS' | 'JWT_CLOCK_TOLERANCE_SECONDS'>): number {
  return (config.ACCESS_TOKEN_TTL_SECONDS + config.JWT_CLOCK_TOLERANCE_SECONDS) * 1000;
}

export interface TimelineKey {
  kid: string;
  /** Milliseconds on the database's clock. */
  publishedAt: number;
  signsFrom: number;
  retiredAt: number | null;
  /** The key's own algorithm: it signs and verifies with this one only. */
  alg: JwtAlgorithm;
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  jwk: JWK;
}

/**
 * The key that signs at `time` (the database's clock): the newest one whose signsFrom has come and
 * that is not retired. `keys` are ordered by signsFrom. Only the first key of an installation, when
 * the estimate of the database's clock is a hair behind its creation, signs before its signsFrom:
 * nothing signed before it.
 */
export function signingKeyAt(keys: TimelineKey[], time: number): TimelineKey {
  const live = keys.filter((key) => key.retiredAt === null || key.retiredAt > time);
  const current = live.filter((key) => key.signsFrom <= time).at(-1);
  if (current) return current;
  if (keys.length > 0 && keys.every((key) => key.retiredAt === null)) return keys[0]!;
  throw new Error(`no JWT signing key may sign at ${new Date(time).toISOString()}`);
}
