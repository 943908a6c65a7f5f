import { createPrivateKey, createPublicKey, generateKeyPairSync, type JsonWebKey, type KeyObject } from 'node:crypto';
import type { JWK } from 'jose';
import type { JwtAlgorithm } from '../settings/jwt-algorithms.js';

export { DEFAULT_JWT_ALGORITHM, isJwtAlgorithm, JWT_ALGORITHMS, type JwtAlgorithm } from '../settings/jwt-algorithms.js';

/** The RSA keys Plaza generates, and the least it accepts (RFC 7518 §3.3; jsonwebtoken refuses less). */
export const RSA_MODULUS_BITS = 2048;

export const SUPPORTED_KEYS = `EC P-256 (ES256), Ed25519 (EdDSA) or RSA of at least ${RSA_MODULUS_BITS} bits (RS256)`;

/** A new private key for `algorithm`, as PKCS#8 PEM (the form stored, encrypted, in the database). */
export function newPrivateKeyPem(algorithm: JwtAlgorithm): string {
  const pair =
    algorithm === 'ES256'
      ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
      : algorithm === 'EdDSA'
        ? generateKeyPairSync('ed25519')
        : generateKeyPairSync('rsa', { modulusLength: RSA_MODULUS_BITS });
  return pair.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
}

/** The algorithm a key is for, by its type; any other key (P-384, RSA-PSS, a short RSA key, X25519…) is refused. */
export function algorithmOfKey(key: KeyObject): JwtAlgorithm {
  const type = key.asymmetricKeyType;
  if (type === 'ed25519') return 'EdDSA';
  if (type === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') return 'ES256';
  if (type === 'rsa') {
    const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
    if (bits >= RSA_MODULUS_BITS) return 'RS256';
    throw new Error(`an RSA key of ${bits} bits is too short: at least ${RSA_MODULUS_BITS}`);
  }
  const curve = key.asymmetricKeyDetails?.namedCurve;
  throw new Error(`a key of type ${type ?? key.type}${curve ? ` (${curve})` : ''} cannot sign access tokens: ${SUPPORTED_KEYS}`);
}

/** A private key (PKCS#8 PEM), its algorithm and its public JWK (kty and its members only). */
export function describePrivateKey(pem: string): { algorithm: JwtAlgorithm; publicJwk: JWK } {
  const privateKey = createPrivateKey(pem);
  const algorithm = algorithmOfKey(privateKey);
  return { algorithm, publicJwk: createPublicKey(privateKey).export({ format: 'jwk' }) as JWK };
}

/**
 * A public JWK's algorithm: its key type's. When the JWK names an `alg` it must be that one: a key
 * is never taken for another algorithm than its own.
 */
export function algorithmOfJwk(jwk: JWK): JwtAlgorithm {
  const { d: _private, ...publicMembers } = jwk;
  const algorithm = algorithmOfKey(createPublicKey({ key: publicMembers as JsonWebKey, format: 'jwk' }));
  if (jwk.alg !== undefined && jwk.alg !== algorithm) throw new Error(`the key ${jwk.kid ?? ''} says alg ${jwk.alg}, but it is a key for ${algorithm}`);
  return algorithm;
}

/** The public members of a JWK of each supported type: what is stored and published, nothing else. */
export function publicMembersOf(jwk: JWK): JWK {
  switch (jwk.kty) {
    case 'EC':
      return { kty: 'EC', crv: jwk.crv, x: jwk.x, y: jwk.y };
    case 'OKP':
      return { kty: 'OKP', crv: jwk.crv, x: jwk.x };
    case 'RSA':
      return { kty: 'RSA', n: jwk.n, e: jwk.e };
    default:
      throw new Error(`a JWK of kty ${String(jwk.kty)} cannot verify access tokens: ${SUPPORTED_KEYS}`);
  }
}
