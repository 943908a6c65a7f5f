import { generateKeyPairSync } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, importJWK, importPKCS8, type CryptoKey, type JWK } from 'jose';
import type { Config } from '../config.js';
import type { Database, Queryable } from '../db/database.js';
import { decryptSecret, encryptSecret } from '../webhooks/secret-box.js';
import { deriveKey } from './secrets-key.js';

/**
 * The JWT signing keys of an installation live in the database (jwt_signing_keys), private parts
 * encrypted under SECRETS_KEY, so that every process signs and verifies with the same set and a
 * rotation reaches them all. Each process reloads the set every JWT_KEYS_RELOAD_SECONDS.
 */
export const ALGORITHM = 'EdDSA';

export interface JwtKeySet {
  signing: { kid: string; privateKey: CryptoKey };
  verification: Map<string, CryptoKey>;
  /** The public keys to publish (JWKS): kid, alg, use, and the key. */
  jwks: JWK[];
}

interface SigningKeyRow {
  kid: string;
  public_jwk: JWK;
  private_key_encrypted: string;
  created_at: Date;
  activates_at: Date;
  retired_at: Date | null;
}

/** The key the JWT private keys are encrypted under, derived from SECRETS_KEY. */
export const jwtKeyEncryptionKey = (master: Buffer) => deriveKey(master, 'plaza jwt signing keys');

export function newPrivateKeyPem(): string {
  return generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
}

/** The published form of a public key. */
export async function publicJwkOf(pem: string): Promise<{ kid: string; jwk: JWK }> {
  const publicJwk = await exportJWK(await importPKCS8(pem, ALGORITHM, { extractable: true }));
  delete publicJwk.d;
  const kid = await calculateJwkThumbprint(publicJwk);
  return { kid, jwk: { ...publicJwk, kid, alg: ALGORITHM, use: 'sig' } };
}

/**
 * A retired key stays published while tokens it signed can still be valid: their lifetime and
 * leeway, plus two reload intervals: the new key may sign one interval after the retirement was
 * written (signsFrom), and a process that has not reloaded since still signs with the old one for
 * up to another.
 */
export function publishedForMs(config: Config): number {
  return (config.ACCESS_TOKEN_TTL_SECONDS + config.JWT_CLOCK_TOLERANCE_SECONDS + 2 * config.JWT_KEYS_RELOAD_SECONDS) * 1000;
}

/**
 * When a key may sign, in this process: at its activation time, and not before every process has
 * had one reload interval, by this process's own setting, to publish it. The activation time was
 * computed by the process that rotated, a CLI whose JWT_KEYS_RELOAD_SECONDS may be shorter than the
 * servers': tokens signed on its word were refused by servers that had not reloaded yet.
 */
function signsFrom(row: SigningKeyRow, config: Config): number {
  return Math.max(row.activates_at.getTime(), row.created_at.getTime() + config.JWT_KEYS_RELOAD_SECONDS * 1000);
}

// Rotations and the first key are serialised across processes.
const LOCK = `SELECT pg_advisory_xact_lock(hashtext('plaza:jwt-keys'))`;

async function insertKey(tx: Queryable, master: Buffer, pem: string, now: Date, activatesAt: Date): Promise<string> {
  const { kid, jwk } = await publicJwkOf(pem);
  await tx.query(
    `INSERT INTO jwt_signing_keys (kid, public_jwk, private_key_encrypted, created_at, activates_at) VALUES ($1, $2, $3, $4, $5)`,
    [kid, JSON.stringify(jwk), encryptSecret(jwtKeyEncryptionKey(master), pem), now, activatesAt],
  );
  return kid;
}

/** The first start creates the first key (or imports the one an earlier version kept in DATA_DIR/keys.json). */
export async function ensureSigningKey(db: Database, master: Buffer, now: Date, legacyPem?: string): Promise<void> {
  const { rowCount } = await db.query(`SELECT 1 FROM jwt_signing_keys LIMIT 1`);
  if (rowCount > 0) return;
  await db.transaction(async (tx) => {
    await tx.query(LOCK);
    if ((await tx.query(`SELECT 1 FROM jwt_signing_keys LIMIT 1`)).rowCount > 0) return;
    await insertKey(tx, master, legacyPem ?? newPrivateKeyPem(), now, now);
  });
}

/**
 * Adds a new signing key. Each process publishes it at its next reload, and signs with it one
 * reload interval after now (signsFrom: by the signing process's own setting), when every process
 * knows it; the current key stops signing then and stays published until its tokens have expired.
 */
export async function rotateJwtKey(db: Database, master: Buffer, config: Config, now: Date): Promise<{ kid: string; activatesAt: Date; retired: string[] }> {
  const activatesAt = new Date(now.getTime() + config.JWT_KEYS_RELOAD_SECONDS * 1000);
  return db.transaction(async (tx) => {
    await tx.query(LOCK);
    const { rows } = await tx.query<{ kid: string }>(`UPDATE jwt_signing_keys SET retired_at = $1 WHERE retired_at IS NULL RETURNING kid`, [activatesAt]);
    const kid = await insertKey(tx, master, newPrivateKeyPem(), now, activatesAt);
    return { kid, activatesAt, retired: rows.map((row) => row.kid) };
  });
}

// Imported keys by kid: a reload imports only keys it has not seen (a key never changes under its kid).
const imported = new Map<string, { privateKey: CryptoKey; publicKey: CryptoKey }>();

async function importRow(row: SigningKeyRow, master: Buffer) {
  let pair = imported.get(row.kid);
  if (!pair) {
    const pem = decryptSecret(jwtKeyEncryptionKey(master), row.private_key_encrypted);
    pair = {
      privateKey: (await importPKCS8(pem, ALGORITHM)) as CryptoKey,
      publicKey: (await importJWK({ ...row.public_jwk, d: undefined }, ALGORITHM)) as CryptoKey,
    };
    imported.set(row.kid, pair);
  }
  return pair;
}

/** The published keys and the one that signs now: the newest whose time to sign has come (signsFrom). */
export async function loadJwtKeySet(db: Queryable, master: Buffer, config: Config, now: Date): Promise<JwtKeySet> {
  const { rows } = await db.query<SigningKeyRow>(
    `SELECT kid, public_jwk, private_key_encrypted, created_at, activates_at, retired_at FROM jwt_signing_keys
      WHERE retired_at IS NULL OR retired_at > $1
      ORDER BY activates_at, kid`,
    [new Date(now.getTime() - publishedForMs(config))],
  );
  if (rows.length === 0) throw new Error('no JWT signing key in the database');
  // The first key of an installation signs at once: there is no other.
  const current = rows.filter((row) => signsFrom(row, config) <= now.getTime()).at(-1) ?? rows[0]!;
  const verification = new Map<string, CryptoKey>();
  for (const row of rows) verification.set(row.kid, (await importRow(row, master)).publicKey);
  return {
    signing: { kid: current.kid, privateKey: (await importRow(current, master)).privateKey },
    verification,
    jwks: rows.map((row) => ({ ...row.public_jwk, kid: row.kid, alg: ALGORITHM, use: 'sig' })),
  };
}
