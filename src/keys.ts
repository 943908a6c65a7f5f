import { randomBytes } from 'node:crypto';
import { importJWK, importPKCS8, type CryptoKey, type JWK } from 'jose';
import type { Clock } from './clock.js';
import { ConfigError, type Config } from './config.js';
import type { Database } from './db/database.js';
import { ALGORITHM, ensureSigningKey, loadJwtKeySet, newPrivateKeyPem, publicJwkOf, type JwtKeySet } from './keys/jwt-key-ring.js';
import { deriveKey, readKeyFile, resolveSecretsKey, verifySecretsKey, type SecretsKey } from './keys/secrets-key.js';

export { ALGORITHM };

/**
 * Key material of the service, imported once (a pre-imported key signs ~1.7× faster).
 * - signing: the Ed25519 key that signs access tokens, with its kid;
 * - verification: every public key accepted by kid (the signing one, rotated-out and pending ones);
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
}

/** A key given in the environment that cannot be imported is that setting's fault: a ConfigError naming it. */
async function fromEnvironment<T>(setting: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ConfigError(`Cannot import ${setting}: ${(error as Error).message}. JWT_PRIVATE_KEY must be an Ed25519 PKCS#8 PEM key; JWT_VERIFICATION_KEYS a JSON array of Ed25519 public JWKs, each with kid.`);
  }
}

/**
 * The keys of a process. SECRETS_KEY comes from the environment or DATA_DIR/keys.json and must open
 * the database's secrets (else ConfigError naming the difference). JWT keys come from
 * JWT_PRIVATE_KEY when set, else from the database (created on first start). Without a database
 * (tools, tests) and without JWT_PRIVATE_KEY, a throwaway signing key is used.
 */
export async function loadKeys(config: Config, db?: Database, now = new Date()): Promise<Keys> {
  const secrets = resolveSecretsKey(config);
  const derived = derivedKeys(secrets.key);
  if (db) await verifySecretsKey(db, secrets, derived.webhookSecretsKey, now);
  const extra = parseVerificationKeys(config);
  let set: JwtKeySet;
  let jwtSource: Keys['jwtSource'];
  if (config.JWT_PRIVATE_KEY) {
    set = await fromEnvironment('JWT_PRIVATE_KEY', () => keySetOf(config.JWT_PRIVATE_KEY!, config.JWT_KEY_ID));
    jwtSource = 'environment';
  } else if (db) {
    // Errors here are the database's (or a key it holds that SECRETS_KEY, checked above, opens):
    // not a setting's, so not reported as one.
    await ensureSigningKey(db, secrets.key, now, readKeyFile(config.DATA_DIR)?.jwtPrivateKeyPem);
    set = await loadJwtKeySet(db, secrets.key, config, now);
    jwtSource = 'database';
  } else {
    set = await keySetOf(newPrivateKeyPem());
    jwtSource = 'memory';
  }
  await fromEnvironment('JWT_VERIFICATION_KEYS', () => addVerificationKeys(set, extra));
  return { ...set, ...derived, secrets, jwtSource };
}

/**
 * Reloads the database's JWT keys into `keys` (in place: every holder sees the new set). Called
 * every JWT_KEYS_RELOAD_SECONDS by startKeyReloader, and directly by tests with their clock.
 */
export async function reloadKeys(keys: Keys, db: Database, config: Config, now: Date): Promise<void> {
  if (keys.jwtSource !== 'database') return;
  const set = await loadJwtKeySet(db, keys.secrets.key, config, now);
  await addVerificationKeys(set, parseVerificationKeys(config));
  keys.signing = set.signing;
  keys.verification = set.verification;
  keys.jwks = set.jwks;
}

/** Keeps the keys current; returns the function that stops it. A failed reload keeps the last set and tries again. */
export function startKeyReloader(keys: Keys, db: Database, config: Config, clock: Clock, onError: (error: unknown) => void): () => void {
  if (keys.jwtSource !== 'database') return () => {};
  const timer = setInterval(() => {
    reloadKeys(keys, db, config, clock.now()).catch(onError);
  }, config.JWT_KEYS_RELOAD_SECONDS * 1000);
  timer.unref();
  return () => clearInterval(timer);
}

/** Fresh keys in memory, for tests and tools. */
export async function generateKeys(): Promise<Keys> {
  const secrets = { key: randomBytes(32), source: 'memory' };
  return { ...(await keySetOf(newPrivateKeyPem())), ...derivedKeys(secrets.key), secrets, jwtSource: 'memory' };
}

export function derivedKeys(master: Buffer): Pick<Keys, 'webhookSecretsKey' | 'refreshSuccessorKey' | 'loginCounterKey' | 'mfaSecretsKey'> {
  return {
    webhookSecretsKey: deriveKey(master, 'plaza webhook secrets'),
    refreshSuccessorKey: deriveKey(master, 'plaza refresh successor'),
    loginCounterKey: deriveKey(master, 'plaza login counters'),
    mfaSecretsKey: deriveKey(master, 'plaza mfa secrets'),
  };
}

async function keySetOf(pem: string, kid?: string): Promise<JwtKeySet> {
  const published = await publicJwkOf(pem);
  const signingKid = kid ?? published.kid;
  const jwk = { ...published.jwk, kid: signingKid };
  return {
    signing: { kid: signingKid, privateKey: (await importPKCS8(pem, ALGORITHM)) as CryptoKey },
    verification: new Map([[signingKid, (await importJWK(jwk, ALGORITHM)) as CryptoKey]]),
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

async function addVerificationKeys(set: JwtKeySet, extra: JWK[]): Promise<void> {
  for (const jwk of extra) {
    const { d: _private, ...publicJwk } = jwk;
    set.verification.set(jwk.kid!, (await importJWK(publicJwk, ALGORITHM)) as CryptoKey);
    set.jwks.push({ ...publicJwk, alg: ALGORITHM, use: 'sig' });
  }
}
