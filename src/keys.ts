import { randomBytes } from 'node:crypto';
import { importJWK, importPKCS8, type CryptoKey, type JWK } from 'jose';
import { systemClock, type Clock } from './clock.js';
import { ConfigError, type Config } from './config.js';
import type { Database } from './db/database.js';
import { algorithmOfJwk, DEFAULT_JWT_ALGORITHM, newPrivateKeyPem, publicMembersOf, SUPPORTED_KEYS, type JwtAlgorithm } from './keys/jwt-algorithms.js';
import { ensureSigningKey, keySetOf as keySetOfView, publicJwkOf, type JwtKeySet, type VerificationKey } from './keys/jwt-key-ring.js';
import { LiveKeyRing } from './keys/live-key-ring.js';
import { sealPlainHeaders } from './keys/header-box.js';
import { deriveKey, readKeyFile, resolveSecretsKey, verifySecretsKey, type SecretsKey } from './keys/secrets-key.js';

/**
 * Key material of the service, imported once (a pre-imported key signs ~1.7× faster).
 * - signing: the key that signs access tokens, with its kid and algorithm; with keys from the
 *   database, the one that signed when they were last read: a token is signed by signingKeyOf (the
 *   timeline's key of that instant);
 * - verification: every public key accepted by kid, each with its own algorithm (the signing one,
 *   rotated-out and pending ones);
 * - jwks: those public keys as published at /.well-known/jwks.json;
 * - webhookSecretsKey: AES-256 key that encrypts webhook signing secrets at rest;
 * - refreshSuccessorKey: HMAC key that derives a grace-period successor from a refresh token;
 * - loginCounterKey: HMAC key of the login counters' account keys;
 * - secrets: the master key the three above derive from, and where it came from.
 * signing, verification and jwks are replaced in place when the key set is reloaded.
 */
export interface Keys extends JwtKeySet {
  webhookSecretsKey: Buffer;
  refreshSuccessorKey: Buffer;
  /** HMAC key of the login counters' account keys (login-limit-keys.ts). */
  loginCounterKey: Buffer;
  /** AES-256 key that encrypts users' TOTP secrets at rest (src/auth/mfa). */
  mfaSecretsKey: Buffer;
  secrets: SecretsKey;
  /** Where the JWT keys come from: the database (rotatable) or JWT_PRIVATE_KEY. */
  jwtSource: 'database' | 'environment' | 'memory';
  /** The database's keys and their timeline (jwtSource 'database'). */
  ring?: LiveKeyRing;
}

/** The key that signs a token at `now`: by the database's timeline, or the one key of the environment. */
export async function signingKeyOf(keys: Keys, now: Date): Promise<JwtKeySet['signing']> {
  return keys.ring ? keys.ring.signingKey(now) : keys.signing;
}

/** A key given in the environment that cannot be imported is that setting's fault: a ConfigError naming it. */
async function fromEnvironment<T>(setting: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ConfigError(`Cannot import ${setting}: ${(error as Error).message}. JWT_PRIVATE_KEY must be a PKCS#8 PEM private key, ${SUPPORTED_KEYS}; JWT_VERIFICATION_KEYS a JSON array of such public JWKs, each with kid.`);
  }
}

/**
 * The keys of a process. SECRETS_KEY comes from the environment or DATA_DIR/keys.json and must open
 * the database's secrets (else ConfigError naming the difference). JWT keys come from
 * JWT_PRIVATE_KEY when set (its algorithm is its key type's), else from the database (the first
 * one created on first start, for JWT_ALGORITHM). Without a database (tools, tests) and without
 * JWT_PRIVATE_KEY, a throwaway signing key for JWT_ALGORITHM is used.
 */
export async function loadKeys(config: Config, db?: Database, clock: Clock = systemClock): Promise<Keys> {
  const secrets = resolveSecretsKey(config);
  const derived = derivedKeys(secrets.key);
  if (db) {
    await verifySecretsKey(db, secrets, derived.webhookSecretsKey, clock.now());
    // Header values still in plain text (a database from before migration 018) are sealed now.
    await sealPlainHeaders(db, derived.webhookSecretsKey);
  }
  const extra = await fromEnvironment('JWT_VERIFICATION_KEYS', () => importVerificationKeys(parseVerificationKeys(config)));
  let set: JwtKeySet;
  let jwtSource: Keys['jwtSource'];
  let ring: LiveKeyRing | undefined;
  if (config.JWT_PRIVATE_KEY) {
    set = await fromEnvironment('JWT_PRIVATE_KEY', () => keySetOf(config.JWT_PRIVATE_KEY!, config.JWT_KEY_ID));
    jwtSource = 'environment';
  } else if (db) {
    // Errors here are the database's (or a key it holds that SECRETS_KEY, checked above, opens):
    // not a setting's, so not reported as one.
    await ensureSigningKey(db, secrets.key, clock, config.JWT_ALGORITHM, readKeyFile(config.DATA_DIR)?.jwtPrivateKeyPem);
    ring = await LiveKeyRing.open(db, secrets.key, config, clock);
    set = keySetOfView(ring.current, clock.now().getTime());
    jwtSource = 'database';
  } else {
    set = await keySetOf(newPrivateKeyPem(config.JWT_ALGORITHM));
    jwtSource = 'memory';
  }
  addVerificationKeys(set, extra);
  const keys: Keys = { ...set, ...derived, secrets, jwtSource, ...(ring ? { ring } : {}) };
  // Every read of the database's keys replaces them in place: every holder sees the new set.
  ring?.onLoad((view) => {
    const next = keySetOfView(view, clock.now().getTime());
    addVerificationKeys(next, extra);
    keys.signing = next.signing;
    keys.verification = next.verification;
    keys.jwks = next.jwks;
  });
  return keys;
}

/** Reads the database's JWT keys again into `keys`: startKeyReloader's work, and tests' with their clock. */
export async function reloadKeys(keys: Keys): Promise<void> {
  await keys.ring?.reload();
}

/** Keeps the keys current; returns the function that stops it. A failed reload keeps the last set and tries again. */
export function startKeyReloader(keys: Keys, config: Config, onError: (error: unknown) => void): () => void {
  if (!keys.ring) return () => {};
  const timer = setInterval(() => {
    reloadKeys(keys).catch(onError);
  }, config.JWT_KEYS_RELOAD_SECONDS * 1000);
  timer.unref();
  return () => clearInterval(timer);
}

/** Fresh keys in memory, for tests and tools; the signing key for `algorithm` (JWT_ALGORITHM's default unless given). */
export async function generateKeys(algorithm: JwtAlgorithm = DEFAULT_JWT_ALGORITHM): Promise<Keys> {
  const secrets = { key: randomBytes(32), source: 'memory' };
  return { ...(await keySetOf(newPrivateKeyPem(algorithm))), ...derivedKeys(secrets.key), secrets, jwtSource: 'memory' };
}

export function derivedKeys(master: Buffer): Pick<Keys, 'webhookSecretsKey' | 'refreshSuccessorKey' | 'loginCounterKey' | 'mfaSecretsKey'> {
  return {
    webhookSecretsKey: deriveKey(master, 'plaza webhook secrets'),
    refreshSuccessorKey: deriveKey(master, 'plaza refresh successor'),
    loginCounterKey: deriveKey(master, 'plaza login counters'),
    mfaSecretsKey: deriveKey(master, 'plaza mfa secrets'),
  };
}

/** The key set of one private key, signing with its own algorithm (its key type's). */
async function keySetOf(pem: string, kid?: string): Promise<JwtKeySet> {
  const { alg, ...published } = await publicJwkOf(pem);
  const signingKid = kid ?? published.kid;
  const jwk = { ...published.jwk, kid: signingKid };
  return {
    signing: { kid: signingKid, alg, privateKey: (await importPKCS8(pem, alg)) as CryptoKey },
    verification: new Map([[signingKid, { alg, key: (await importJWK(publicMembersOf(jwk), alg)) as CryptoKey }]]),
    jwks: [jwk],
  };
}

function parseVerificationKeys(config: Config): JWK[] {
  if (!config.JWT_VERIFICATION_KEYS) return [];
  try {
    const extra = JSON.parse(config.JWT_VERIFICATION_KEYS) as JWK[];
    if (!Array.isArray(extra) || extra.some((jwk) => typeof jwk.kid !== 'string')) throw new Error('not an array of JWKs with kid');
    return extra;
  } catch (error) {
    throw new ConfigError(`JWT_VERIFICATION_KEYS must be a JSON array of public JWKs, each with a kid: ${(error as Error).message}`);
  }
}

interface ExtraKey extends VerificationKey {
  jwk: JWK;
}

/** Each key of JWT_VERIFICATION_KEYS verifies with its own algorithm (its key type's; its alg, when given, must agree). */
async function importVerificationKeys(extra: JWK[]): Promise<ExtraKey[]> {
  const imported: ExtraKey[] = [];
  for (const jwk of extra) {
    const alg = algorithmOfJwk(jwk);
    const members = publicMembersOf(jwk);
    imported.push({ jwk: { ...members, kid: jwk.kid, alg, use: 'sig' }, alg, key: (await importJWK(members, alg)) as CryptoKey });
  }
  return imported;
}

function addVerificationKeys(set: JwtKeySet, extra: ExtraKey[]): void {
  for (const { jwk, alg, key } of extra) {
    set.verification.set(jwk.kid!, { alg, key });
    set.jwks.push(jwk);
  }
}
