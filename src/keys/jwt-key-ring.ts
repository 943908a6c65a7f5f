import { calculateJwkThumbprint, importJWK, importPKCS8, type CryptoKey, type JWK } from 'jose';
import { ManualClock, type Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Database, Queryable } from '../db/database.js';
import { decryptSecret, encryptSecret } from './secret-box.js';
import { algorithmOfJwk, describePrivateKey, newPrivateKeyPem, publicMembersOf, type JwtAlgorithm } from './jwt-algorithms.js';
import { publishedAfterRetirementMs, signingKeyAt, signingLeadSeconds, type TimelineKey } from './jwt-key-timeline.js';
import { deriveKey } from './secrets-key.js';

/**
 * The JWT signing keys of an installation live in the database (jwt_signing_keys), private parts
 * encrypted under SECRETS_KEY, so that every process signs and verifies with the same set, and
 * each key carries its timeline (jwt-key-timeline.ts): created_at is when it was published,
 * activates_at when it signs from, retired_at when it stops signing. Each key has its algorithm
 * (jwt-algorithms.ts), recorded as the `alg` of its stored public JWK (every key ever stored has
 * one): keys of several algorithms live side by side, and a rotation may change it.
 */

export interface SigningKey {
  kid: string;
  alg: JwtAlgorithm;
  privateKey: CryptoKey;
}

/** A key that verifies tokens, and the one algorithm it verifies them with. */
export interface VerificationKey {
  alg: JwtAlgorithm;
  key: CryptoKey;
}

export interface JwtKeySet {
  signing: SigningKey;
  verification: Map<string, VerificationKey>;
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

/** The published form of a private key's public key (its algorithm from its type), and its kid, the RFC 7638 thumbprint. */
export async function publicJwkOf(pem: string): Promise<{ kid: string; alg: JwtAlgorithm; jwk: JWK }> {
  const { algorithm, publicJwk } = describePrivateKey(pem);
  const members = publicMembersOf(publicJwk);
  const kid = await calculateJwkThumbprint(members);
  return { kid, alg: algorithm, jwk: { ...members, kid, alg: algorithm, use: 'sig' } };
}

/**
 * The database's clock minus `clock`, so that every process reads the timeline on one clock,
 * whatever its host's. In tests a ManualClock is the database's clock (as in database-clock.ts):
 * the timeline is written and read on it, and moving it moves the timeline's "now".
 */
export async function databaseClockSkewMs(db: Queryable, clock: Clock): Promise<number> {
  if (clock instanceof ManualClock) return 0;
  const before = clock.now().getTime();
  const { rows } = await db.query<{ now: Date }>(`SELECT statement_timestamp() AS now`);
  return rows[0]!.now.getTime() - (before + clock.now().getTime()) / 2;
}

/**
 * The lock of the keys the database holds, until the transaction ends: the first key, rotations
 * and re-encryptions under a new SECRETS_KEY (rotate-secrets-key.ts) take it, so that none of
 * them interleave, across processes.
 */
export async function lockJwtKeys(tx: Queryable): Promise<void> {
  await tx.query(`SELECT pg_advisory_xact_lock(hashtext('plaza:jwt-keys'))`);
}

async function insertKey(tx: Queryable, master: Buffer, pem: string, publishedAt: Date, signsFrom: Date): Promise<string> {
  // public_jwk carries the key's alg: the record of its algorithm, read back by readKeyView.
  const { kid, jwk } = await publicJwkOf(pem);
  await tx.query(
    `INSERT INTO jwt_signing_keys (kid, public_jwk, private_key_encrypted, created_at, activates_at) VALUES ($1, $2, $3, $4, $5)`,
    [kid, JSON.stringify(jwk), encryptSecret(jwtKeyEncryptionKey(master), pem), publishedAt, signsFrom],
  );
  return kid;
}

/**
 * The first start creates the first key, for `algorithm` (JWT_ALGORITHM), or imports the Ed25519
 * key an earlier version kept in DATA_DIR/keys.json (which keeps its algorithm, EdDSA).
 */
export async function ensureSigningKey(db: Database, master: Buffer, clock: Clock, algorithm: JwtAlgorithm, legacyPem?: string): Promise<void> {
  const { rowCount } = await db.query(`SELECT 1 FROM jwt_signing_keys LIMIT 1`);
  if (rowCount > 0) return;
  await db.transaction(async (tx) => {
    await lockJwtKeys(tx);
    if ((await tx.query(`SELECT 1 FROM jwt_signing_keys LIMIT 1`)).rowCount > 0) return;
    // It signs at once: no verifier can hold a copy of the JWKS without it, there was none before.
    const now = new Date(clock.now().getTime() + (await databaseClockSkewMs(tx, clock)));
    await insertKey(tx, master, legacyPem ?? newPrivateKeyPem(algorithm), now, now);
  });
}

export interface Rotation {
  kid: string;
  alg: JwtAlgorithm;
  publishedAt: Date;
  signsFrom: Date;
  /** The keys that stop signing at signsFrom, and when they leave the JWKS. */
  retired: { kid: string; publishedUntil: Date }[];
}

/**
 * Adds a new signing key for `algorithm` (JWT_ALGORITHM unless given: the old keys' algorithm may
 * differ), published now and signing from now + signingLeadSeconds; the keys that have no end yet
 * (the signing one, and one still waiting from an earlier rotation) stop signing at that same
 * instant. Scheduled, not immediate: every process knows the switch before it happens.
 */
export async function rotateJwtKey(db: Database, master: Buffer, config: Config, clock: Clock, algorithm: JwtAlgorithm = config.JWT_ALGORITHM): Promise<Rotation> {
  return db.transaction(async (tx) => {
    await lockJwtKeys(tx);
    const now = clock.now().getTime() + (await databaseClockSkewMs(tx, clock));
    const signsFrom = new Date(now + signingLeadSeconds(config) * 1000);
    const { rows } = await tx.query<{ kid: string }>(`UPDATE jwt_signing_keys SET retired_at = $1 WHERE retired_at IS NULL RETURNING kid`, [signsFrom]);
    const kid = await insertKey(tx, master, newPrivateKeyPem(algorithm), new Date(now), signsFrom);
    const publishedUntil = new Date(signsFrom.getTime() + publishedAfterRetirementMs(config));
    return { kid, alg: algorithm, publishedAt: new Date(now), signsFrom, retired: rows.map((row) => ({ kid: row.kid, publishedUntil })) };
  });
}

interface ImportedKey {
  alg: JwtAlgorithm;
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  jwk: JWK;
}

// Imported keys by kid: a reload imports only keys it has not seen (a key never changes under its kid).
const imported = new Map<string, ImportedKey>();

/**
 * A stored key, imported for its recorded algorithm: the stored JWK's alg, which must fit the key
 * (a row that says ES256 over an Ed25519 key is refused, not used for either), and the private key
 * must be the public one's.
 */
async function importRow(row: SigningKeyRow, master: Buffer): Promise<ImportedKey> {
  let key = imported.get(row.kid);
  if (!key) {
    const alg = algorithmOfJwk(row.public_jwk);
    const pem = decryptSecret(jwtKeyEncryptionKey(master), row.private_key_encrypted);
    const published = await publicJwkOf(pem);
    if (published.alg !== alg || published.jwk.kid !== row.kid) throw new Error(`the stored JWT key ${row.kid} does not match its public key`);
    key = {
      alg,
      privateKey: (await importPKCS8(pem, alg)) as CryptoKey,
      publicKey: (await importJWK(publicMembersOf(row.public_jwk), alg)) as CryptoKey,
      jwk: published.jwk,
    };
    imported.set(row.kid, key);
  }
  return key;
}

/** What a process knows of the key table: the keys still published, read at readAt (its clock). */
export interface KeyView {
  keys: TimelineKey[];
  readAt: number;
  /** The database's clock minus the process's, when it was read. */
  skewMs: number;
}

/** Reads the keys still published: not retired, or retired less than a token lifetime (and leeway) ago. */
export async function readKeyView(db: Queryable, master: Buffer, config: Config, clock: Clock): Promise<KeyView> {
  const skewMs = await databaseClockSkewMs(db, clock);
  const readAt = clock.now().getTime();
  const { rows } = await db.query<SigningKeyRow>(
    `SELECT kid, public_jwk, private_key_encrypted, created_at, activates_at, retired_at FROM jwt_signing_keys
      WHERE retired_at IS NULL OR retired_at > $1
      ORDER BY activates_at, kid`,
    [new Date(readAt + skewMs - publishedAfterRetirementMs(config))],
  );
  if (rows.length === 0) throw new Error('no JWT signing key in the database');
  const keys: TimelineKey[] = [];
  for (const row of rows) {
    const key = await importRow(row, master);
    keys.push({
      kid: row.kid,
      publishedAt: row.created_at.getTime(),
      signsFrom: row.activates_at.getTime(),
      retiredAt: row.retired_at?.getTime() ?? null,
      ...key,
    });
  }
  return { keys, readAt, skewMs };
}

/** The key set of a view, its signing key the one of `now` (the process's clock). */
export function keySetOf(view: KeyView, now: number): JwtKeySet {
  const signing = signingKeyAt(view.keys, now + view.skewMs);
  return {
    signing: { kid: signing.kid, alg: signing.alg, privateKey: signing.privateKey },
    verification: new Map(view.keys.map((key) => [key.kid, { alg: key.alg, key: key.publicKey }])),
    jwks: view.keys.map((key) => key.jwk),
  };
}
