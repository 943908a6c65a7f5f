import { randomUUID } from 'node:crypto';
import { errors, jwtVerify, SignJWT, type JWTHeaderParameters, type JWTPayload } from 'jose';
import type { Role } from '../accounts/accounts.repository.js';
import type { UserPrincipal } from '../accounts/principal.js';
import type { Config } from '../config.js';
import { idFromText, MAX_INT32 } from '../http/path-params.js';
import { signingKeyOf, type Keys } from '../keys.js';
import { JWT_ALGORITHMS } from '../keys/jwt-algorithms.js';

export const ACCESS_TOKEN_TYPE = 'at+jwt';

interface AccessClaims extends JWTPayload {
  sid: string;
  seller_id: number;
  role: Role;
  mkt?: string;
  cnf?: { jkt: string };
}

export type TokenSubject = Omit<UserPrincipal, 'tokenId' | 'apiKeyId'>;

/**
 * Signs a stateless access token (RFC 9068 shape: typ at+jwt, kid, iss, aud, sub, exp, jti), with
 * the key that the keys' timeline names for `now` (jwt-key-timeline.ts) and that key's algorithm.
 */
export async function issueAccessToken(keys: Keys, config: Config, subject: TokenSubject, now: Date): Promise<string> {
  const signing = await signingKeyOf(keys, now);
  const iat = Math.floor(now.getTime() / 1000);
  const claims: AccessClaims = { sid: subject.sessionId, seller_id: subject.sellerId, role: subject.role };
  if (subject.marketplaceCode) claims.mkt = subject.marketplaceCode;
  // RFC 9449 §6.1: a token of a DPoP-bound session names the key (authenticate.ts asks for its proof).
  if (subject.dpopJkt) claims.cnf = { jkt: subject.dpopJkt };
  return new SignJWT(claims)
    .setProtectedHeader({ alg: signing.alg, typ: ACCESS_TOKEN_TYPE, kid: signing.kid })
    .setIssuer(config.JWT_ISSUER)
    .setAudience(config.JWT_AUDIENCE)
    .setSubject(String(subject.userId))
    .setIssuedAt(iat)
    .setExpirationTime(iat + config.ACCESS_TOKEN_TTL_SECONDS)
    .setJti(randomUUID())
    .sign(signing.privateKey);
}

export class InvalidAccessTokenError extends Error {}

// Session ids are UUIDs (the sessions table's key); anything else is not a token of ours.
const SESSION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Verifies an access token: the key is chosen by kid among the configured verification keys only,
 * and the token's alg must be that key's own (no `none`, no HMAC confusion, no key taken for
 * another algorithm than the one it was made for, even one Plaza uses); typ/iss/aud/exp are checked, and so
 * are iat and the lifetime: a token issued in the future (beyond the clock tolerance) or living
 * longer than ACCESS_TOKEN_TTL_SECONDS was not issued by this service as configured, even when its
 * signature is right (a leaked signing key, a signer elsewhere misconfigured), and is refused.
 */
export async function verifyAccessToken(keys: Keys, config: Config, token: string, now: Date): Promise<UserPrincipal> {
  return (await verifyWithWindow(keys, config, token, now)).principal;
}

/** A verified token and the times between which it stays valid (leeway included). */
interface Verified {
  principal: UserPrincipal;
  validFrom: number;
  validUntil: number;
}

/** A SHA-256 JWK thumbprint, base64url (RFC 7638). */
const JKT = /^[A-Za-z0-9_-]{43}$/;

/** A seller id as the token carries it: 0 (no seller, an admin) or a seller's id. */
const isInt32Id = (value: unknown): value is number => Number.isInteger(value) && (value as number) >= 0 && (value as number) <= MAX_INT32;

async function verifyWithWindow(keys: Keys, config: Config, token: string, now: Date): Promise<Verified> {
  try {
    const { payload } = await jwtVerify<AccessClaims>(
      token,
      (header: JWTHeaderParameters) => {
        const key = header.kid === undefined ? undefined : keys.verification.get(header.kid);
        if (!key) throw new InvalidAccessTokenError('unknown kid');
        // The key's algorithm, not the header's choice among those Plaza knows.
        if (header.alg !== key.alg) throw new InvalidAccessTokenError(`alg ${String(header.alg)} is not the algorithm of key ${header.kid}`);
        return key.key;
      },
      {
        // Checked before the key is chosen: nothing outside these reaches the line above.
        algorithms: [...JWT_ALGORITHMS],
        typ: ACCESS_TOKEN_TYPE,
        issuer: config.JWT_ISSUER,
        audience: config.JWT_AUDIENCE,
        clockTolerance: config.JWT_CLOCK_TOLERANCE_SECONDS,
        // Also refuses an iat in the future, beyond the tolerance.
        maxTokenAge: config.ACCESS_TOKEN_TTL_SECONDS,
        currentDate: now,
        requiredClaims: ['sub', 'sid', 'seller_id', 'role', 'iat', 'exp', 'jti'],
      },
    );
    // Ids as the database stores them (integer columns): anything else, even well signed, is no
    // token Plaza issued, and would fail in the queries that use it.
    const userId = typeof payload.sub === 'string' ? idFromText(payload.sub) : undefined;
    if (userId === undefined || !isInt32Id(payload.seller_id) || typeof payload.sid !== 'string' || !SESSION_ID.test(payload.sid) || !['seller', 'marketplace', 'admin'].includes(payload.role)) {
      throw new InvalidAccessTokenError('malformed claims');
    }
    const cnf = payload.cnf;
    if (cnf !== undefined && (typeof cnf !== 'object' || cnf === null || typeof cnf.jkt !== 'string' || !JKT.test(cnf.jkt))) throw new InvalidAccessTokenError('malformed cnf');
    if (payload.exp! - payload.iat! > config.ACCESS_TOKEN_TTL_SECONDS) throw new InvalidAccessTokenError('lifetime longer than ACCESS_TOKEN_TTL_SECONDS');
    const leewayMs = config.JWT_CLOCK_TOLERANCE_SECONDS * 1000;
    return {
      principal: {
        userId,
        sessionId: payload.sid,
        sellerId: payload.seller_id,
        role: payload.role,
        marketplaceCode: typeof payload.mkt === 'string' ? payload.mkt : null,
        tokenId: String(payload.jti),
        ...(cnf ? { dpopJkt: cnf.jkt } : {}),
      },
      validFrom: Math.max(payload.iat!, payload.nbf ?? -Infinity) * 1000 - leewayMs,
      validUntil: payload.exp! * 1000 + leewayMs,
    };
  } catch (error) {
    if (error instanceof InvalidAccessTokenError) throw error;
    if (error instanceof errors.JOSEError || error instanceof TypeError || error instanceof SyntaxError) {
      throw new InvalidAccessTokenError((error as Error).message);
    }
    throw error;
  }
}

/**
 * Verified access tokens by their whole text, signature included, so that a client repeating
 * requests with one token pays for the signature check (~0.1 ms) once. A hit is still checked
 * against the token's own validity window with the same leeway, so a cached token stops working
 * exactly when a freshly verified one would. Bounded: the oldest entries leave first.
 */
export class AccessTokenVerifier {
  private readonly verified = new Map<string, Verified>();

  constructor(
    readonly keys: Keys,
    readonly config: Config,
    private readonly capacity = 10_000,
  ) {}

  async verify(token: string, now: Date): Promise<UserPrincipal> {
    const cached = this.verified.get(token);
    const time = now.getTime();
    if (cached && time >= cached.validFrom && time < cached.validUntil) return cached.principal;
    if (cached) this.verified.delete(token);
    const fresh = await verifyWithWindow(this.keys, this.config, token, now);
    if (this.verified.size >= this.capacity) this.verified.delete(this.verified.keys().next().value!);
    this.verified.set(token, fresh);
    return fresh.principal;
  }
}
