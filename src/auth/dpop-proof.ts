import { createHash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { calculateJwkThumbprint, EmbeddedJWK, errors, jwtVerify, type JWK, type JWTHeaderParameters } from 'jose';
import { AppError } from '../http/errors.js';

/**
 * DPoP proofs (RFC 9449): a JWT that the client signs with its own key for each request, the
 * public key in its header. Asymmetric algorithms only: `none` and HMAC (which would make the
 * embedded key a shared secret anyone can read) are refused, and so is an RSA key under 2048 bits
 * (jose). Ed25519 under its two names (EdDSA, and the newer Ed25519).
 */
export const DPOP_ALGORITHMS = ['ES256', 'ES384', 'EdDSA', 'Ed25519', 'RS256', 'PS256'];

/** What a valid proof tells: the key's thumbprint, and what the replay store keeps of it. */
export interface VerifiedProof {
  /** RFC 7638 SHA-256 thumbprint of the proof's key (base64url): `cnf.jkt` and sessions.dpop_jkt. */
  jkt: string;
  /** SHA-256 of the thumbprint and the jti: the proof's row in dpop_proofs. */
  replayKey: Buffer;
  /** Until when the proof's iat is accepted; its row is kept that long. */
  replayUntil: Date;
}

export interface ProofExpectation {
  /** The request's method (htm). */
  method: string;
  /** The request's URL as Plaza is reached at (htu), query and fragment ignored. */
  url: string;
  /** The access token presented with the proof (its hash is ath), for requests to resources. */
  accessToken?: string;
  now: Date;
  /** DPOP_PROOF_WINDOW_SECONDS: how far iat may be from now, either way. */
  windowSeconds: number;
}

/** A proof is a few hundred bytes (an RSA-4096 key about 2 KB); anything larger is not one. */
const MAX_PROOF_LENGTH = 4096;
/** 4096 bits in base64url (512 bytes). */
const MAX_RSA_MODULUS_CHARS = 683;
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
const MAX_JTI_LENGTH = 256;

export const DPOP_CHALLENGE = `DPoP algs="${DPOP_ALGORITHMS.join(' ')}"`;

/** 401 invalid_dpop_proof with the challenge of RFC 9449 §7.1. */
export function invalidDpopProof(detail: string): AppError {
  return new AppError('invalid_dpop_proof', detail, { headers: { 'www-authenticate': `DPoP error="invalid_dpop_proof", ${DPOP_CHALLENGE.slice('DPoP '.length)}` } });
}

class ProofError extends Error {}

/**
 * Verifies the DPoP header of a request (RFC 9449 §4.3): one compact JWS of typ dpop+jwt, signed
 * by the public key in its own header with an allowed algorithm, with jti, htm and htu matching
 * the request, iat within the window, and ath the hash of the access token when one is presented.
 * Stateless: whether the jti was seen before is the replay store's part (dpop-replay.ts), asked only
 * once the credential the proof comes with is known to be good. Throws invalid_dpop_proof.
 */
export async function verifyDpopProof(header: string | string[] | undefined, expect: ProofExpectation): Promise<VerifiedProof> {
  try {
    return await verify(header, expect);
  } catch (error) {
    if (error instanceof ProofError) throw invalidDpopProof(`The DPoP proof is not valid: ${error.message}.`);
    if (error instanceof errors.JOSEError || error instanceof TypeError || error instanceof SyntaxError) {
      throw invalidDpopProof('The DPoP proof is not valid: it is not a well-formed dpop+jwt signed by the key in its header with an allowed algorithm.');
    }
    throw error;
  }
}

async function verify(header: string | string[] | undefined, expect: ProofExpectation): Promise<VerifiedProof> {
  // Node joins repeated headers with ", "; a JWS has no comma. RFC 9449 allows exactly one proof.
  if (typeof header !== 'string' || header.length > MAX_PROOF_LENGTH || !COMPACT_JWS.test(header)) throw new ProofError('send exactly one DPoP header, a compact JWT');
  let jwk: JWK | undefined;
  const { payload } = await jwtVerify(
    header,
    async (protectedHeader: JWTHeaderParameters, token) => {
      jwk = protectedHeader.jwk;
      // EdDSA also names Ed448, which is not offered.
      if (protectedHeader.alg === 'EdDSA' && jwk?.crv !== 'Ed25519') throw new ProofError('an EdDSA key must be Ed25519');
      // An RSA verification costs with the modulus and the exponent, and a proof is checked before
      // any credential (a login's password): at most 4096 bits, exponent 65537.
      if (jwk?.kty === 'RSA' && (typeof jwk.n !== 'string' || jwk.n.length > MAX_RSA_MODULUS_CHARS || jwk.e !== 'AQAB')) {
        throw new ProofError('an RSA key must have at most 4096 bits and the exponent 65537');
      }
      return EmbeddedJWK(protectedHeader, token);
    },
    { typ: 'dpop+jwt', algorithms: DPOP_ALGORITHMS, currentDate: expect.now, requiredClaims: ['jti', 'htm', 'htu', 'iat'] },
  );
  const { jti, htm, htu, iat, ath } = payload as { jti: unknown; htm: unknown; htu: unknown; iat: unknown; ath?: unknown };
  if (typeof jti !== 'string' || jti.length === 0 || jti.length > MAX_JTI_LENGTH) throw new ProofError('jti must be a string of 1 to 256 characters');
  if (htm !== expect.method) throw new ProofError(`htm must be ${expect.method}`);
  if (typeof htu !== 'string' || comparableUrl(htu) !== comparableUrl(expect.url)) throw new ProofError(`htu must be ${comparableUrl(expect.url) ?? 'the request URL'}`);
  // In whole seconds, as iat is written: a proof made in the same second as now is 0 s old.
  const nowSeconds = Math.floor(expect.now.getTime() / 1000);
  if (typeof iat !== 'number' || !Number.isFinite(iat) || Math.abs(nowSeconds - iat) > expect.windowSeconds) {
    throw new ProofError(`iat must be within ${expect.windowSeconds} s of the server's time (${nowSeconds})`);
  }
  if (expect.accessToken !== undefined && ath !== accessTokenHash(expect.accessToken)) throw new ProofError('ath must be the base64url SHA-256 of the access token');
  const jkt = await calculateJwkThumbprint(jwk!, 'sha256');
  return {
    jkt,
    replayKey: createHash('sha256').update(jkt).update('\0').update(jti).digest(),
    replayUntil: new Date((iat + expect.windowSeconds) * 1000),
  };
}

/** The ath claim for an access token (RFC 9449 §4.2). */
export function accessTokenHash(accessToken: string): string {
  return createHash('sha256').update(accessToken, 'ascii').digest('base64url');
}

/**
 * A URL as htu is compared (RFC 9449 §4.3): scheme, host and path after the WHATWG URL parser's
 * normalisation (case of scheme and host, default port, dot segments, percent-encoding), without
 * query and fragment. undefined for what is no http(s) URL.
 */
function comparableUrl(text: string): string | undefined {
  if (!URL.canParse(text)) return undefined;
  const url = new URL(text);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return undefined;
  return `${url.protocol}//${url.host}${url.pathname}`;
}

/**
 * The URL a client sent a request to, as htu: the scheme and host the request came with
 * (X-Forwarded-Proto and X-Forwarded-Host count only when the connection comes from a proxy that
 * TRUST_PROXY trusts, as Fastify's request.protocol and request.host read them), and the path.
 */
export function requestUrl(request: FastifyRequest): string {
  const path = request.url.split('?', 1)[0]!.split('#', 1)[0]!;
  return `${request.protocol}://${request.host}${path}`;
}

/** The proof of a login or refresh, if the client sent one (undefined: an unbound, Bearer client). */
export async function tokenRequestProof(request: FastifyRequest, now: Date, windowSeconds: number): Promise<VerifiedProof | undefined> {
  const header = request.headers.dpop;
  if (header === undefined) return undefined;
  return verifyDpopProof(header, { method: request.method, url: requestUrl(request), now, windowSeconds });
}
