import { createHash, hkdfSync, randomBytes } from 'node:crypto';
import { linkSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, type Config } from '../config.js';
import type { Queryable } from '../db/database.js';
import { assertPrivate, ensurePrivateDirectory } from '../db/embedded/permissions.js';
import { decryptSecret, encryptSecret } from '../webhooks/secret-box.js';

/**
 * SECRETS_KEY is the installation's one master key: webhook secrets and the JWT signing keys in
 * the database are encrypted under keys derived from it. It comes from the environment, or else
 * from DATA_DIR/keys.json (generated on first start), which suits one machine with the embedded
 * database. Several machines on one PostgreSQL must share SECRETS_KEY through their environment.
 */
export interface SecretsKey {
  key: Buffer;
  /** Where it came from, for messages: `SECRETS_KEY` or the path of the key file. */
  source: string;
}

/** Earlier versions also kept the JWT private key here; it is imported into the database once. */
export interface KeyFile {
  secretsKey: string;
  jwtPrivateKeyPem?: string;
}

export const keyFilePath = (dataDir: string) => join(dataDir, 'keys.json');

export function resolveSecretsKey(config: Config): SecretsKey {
  if (config.SECRETS_KEY) return { key: decodeSecretsKey(config.SECRETS_KEY, 'SECRETS_KEY'), source: 'SECRETS_KEY' };
  const path = keyFilePath(config.DATA_DIR);
  return { key: decodeSecretsKey(readOrCreateKeyFile(config.DATA_DIR).secretsKey, path), source: path };
}

export function decodeSecretsKey(base64: string, source: string): Buffer {
  const key = Buffer.from(base64, 'base64');
  if (key.length !== 32) throw new ConfigError(`${source}: SECRETS_KEY must be the base64 encoding of exactly 32 bytes.`);
  return key;
}

export function newSecretsKey(): Buffer {
  return randomBytes(32);
}

/** A key for one purpose, derived from the master key (HKDF-SHA256): one purpose's key reveals nothing of another's. */
export function deriveKey(master: Buffer, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), purpose, 32));
}

/** A one-way name of a key, safe to print: people compare it across machines. */
export function fingerprintOf(master: Buffer): string {
  return createHash('sha256').update(deriveKey(master, 'plaza key fingerprint')).digest('hex').slice(0, 16);
}

export function readKeyFile(dataDir: string): KeyFile | undefined {
  try {
    return JSON.parse(readFileSync(keyFilePath(dataDir), 'utf8')) as KeyFile;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new ConfigError(`Cannot read ${keyFilePath(dataDir)}: ${(error as Error).message}`);
  }
}

function readOrCreateKeyFile(dataDir: string): KeyFile {
  const path = keyFilePath(dataDir);
  const existing = readKeyFile(dataDir);
  if (existing) {
    // A key file others can read is a leaked key: refuse it, naming the chmod that fixes it.
    assertPrivate(path, 'file');
    return existing;
  }
  ensurePrivateDirectory(dataDir);
  const draft = `${path}.${process.pid}.tmp`;
  writeFileSync(draft, JSON.stringify({ secretsKey: newSecretsKey().toString('base64') } satisfies KeyFile), { mode: 0o600 });
  try {
    // link() fails when the file exists: two processes starting at once agree on one key.
    linkSync(draft, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    rmSync(draft, { force: true });
  }
  return readKeyFile(dataDir)!;
}

/** Writes a replacement key file beside the current one; commit() renames it over (atomic), discard() removes it. */
export function stageKeyFile(dataDir: string, file: KeyFile): { commit(): void; discard(): void } {
  const path = keyFilePath(dataDir);
  const staged = `${path}.new`;
  writeFileSync(staged, JSON.stringify(file), { mode: 0o600 });
  return { commit: () => renameSync(staged, path), discard: () => rmSync(staged, { force: true }) };
}

export class SecretsKeyMismatchError extends ConfigError {}

const CHECK_PLAINTEXT = 'plaza secrets key check';
const checkKey = (master: Buffer) => deriveKey(master, 'plaza key check');

export function sealCheck(master: Buffer): string {
  return encryptSecret(checkKey(master), CHECK_PLAINTEXT);
}

/**
 * Makes sure this process's SECRETS_KEY is the one the database's secrets are encrypted under.
 * The first process records a check value; every later one must be able to open it, or it
 * refuses to start, naming both fingerprints, instead of failing every delivery later.
 * A database from before the check existed is checked against one stored webhook secret.
 */
export async function verifySecretsKey(db: Queryable, secrets: SecretsKey, webhookSecretsKey: Buffer, now: Date): Promise<void> {
  const fingerprint = fingerprintOf(secrets.key);
  const { rows } = await db.query<{ fingerprint: string; sealed: string }>(`SELECT fingerprint, sealed FROM secrets_key_check`);
  let stored = rows[0];
  if (!stored) {
    const sample = await db.query<{ secret_encrypted: string }>(`SELECT secret_encrypted FROM webhooks ORDER BY id LIMIT 1`);
    if (sample.rows[0] && !opens(() => decryptSecret(webhookSecretsKey, sample.rows[0]!.secret_encrypted))) {
      throw mismatch(secrets, fingerprint, 'unknown (the stored webhook secrets do not open with it)');
    }
    // ON CONFLICT: of two first processes, one records its key and the other is checked against it.
    await db.query(`INSERT INTO secrets_key_check (fingerprint, sealed, updated_at) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING`, [fingerprint, sealCheck(secrets.key), now]);
    stored = (await db.query<{ fingerprint: string; sealed: string }>(`SELECT fingerprint, sealed FROM secrets_key_check`)).rows[0]!;
  }
  if (!opens(() => decryptSecret(checkKey(secrets.key), stored.sealed) === CHECK_PLAINTEXT)) throw mismatch(secrets, fingerprint, stored.fingerprint);
}

function opens(attempt: () => unknown): boolean {
  try {
    return attempt() !== false;
  } catch {
    return false;
  }
}

function mismatch(secrets: SecretsKey, mine: string, theirs: string): SecretsKeyMismatchError {
  return new SecretsKeyMismatchError(
    `SECRETS_KEY differs: this process's key (from ${secrets.source}, fingerprint ${mine}) is not the one this database's secrets are encrypted under (fingerprint ${theirs}). ` +
      'Start every process of the installation with the same SECRETS_KEY (copy it from the process that works), or rotate it with `plaza keys rotate-secrets-key`.',
  );
}
