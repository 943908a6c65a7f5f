import type { Queryable } from '../db/database.js';
import { decryptSecret, encryptSecret } from './secret-box.js';

/**
 * A webhook's own headers (name → value) are often its receiver's credentials, so they are kept
 * like its signing secret: encrypted at rest (AES-256-GCM under the same key derived from
 * SECRETS_KEY), as one box of the whole object in `headers_encrypted`, in the database and in
 * backups alike. The plain `headers` column stays for the previous release's code (migration 018)
 * and holds '{}' once a row is sealed; a non-empty one was written in plain text (before this
 * version, or by a previous-release process during a rolling upgrade) and is the newer value.
 */
export interface StoredHeaders {
  headers: Record<string, string> | null;
  headers_encrypted: string | null;
}

/** The stored form of a webhook's headers: nothing for none, else the box. */
export function sealHeaders(key: Buffer, headers: Record<string, string>): string | null {
  return Object.keys(headers).length === 0 ? null : encryptSecret(key, JSON.stringify(headers));
}

/** Most header boxes a worker keeps opened (one per webhook it sends to); emptied when full. */
const CACHE_SIZE = 10_000;

/**
 * The headers in clear. `cache` (a delivery worker's) keeps them by their stored form, as it keeps
 * the signing keys: a decryption per notification would cost the worker time for nothing new.
 */
export function openHeaders(key: Buffer, row: StoredHeaders, cache?: Map<string, Record<string, string>>): Record<string, string> {
  if (row.headers && Object.keys(row.headers).length > 0) return row.headers;
  const stored = row.headers_encrypted;
  if (!stored) return {};
  let headers = cache?.get(stored);
  if (headers === undefined) {
    headers = JSON.parse(decryptSecret(key, stored)) as Record<string, string>;
    if (cache && cache.size >= CACHE_SIZE) cache.clear();
    cache?.set(stored, headers);
  }
  return headers;
}

/** The row with its headers in clear, as the API, the portal and test notifications show and send them. */
export function withOpenHeaders<Row extends StoredHeaders>(key: Buffer, row: Row): Row & { headers: Record<string, string> } {
  return { ...row, headers: openHeaders(key, row), headers_encrypted: null };
}

/**
 * Seals the headers still stored in plain text: every row of a database from before migration 018
 * at the first start, and what a previous-release process wrote during a rolling upgrade at the next
 * one. Every process runs it at start (loadKeys); rows are locked and rechecked, so two processes
 * starting at once seal each row once. Returns how many rows it sealed.
 */
export async function sealPlainHeaders(db: Queryable, key: Buffer): Promise<number> {
  let sealed = 0;
  for (;;) {
    // Batches of 500, each its own statement pair: a large table is not locked in one go.
    const { rows } = await db.query<{ id: number; headers: Record<string, string> }>(
      `SELECT id, headers FROM webhooks WHERE headers <> '{}'::jsonb ORDER BY id LIMIT 500`,
    );
    if (rows.length === 0) return sealed;
    const before = sealed;
    for (const row of rows) {
      // Only if still the same plain value: a concurrent edit (or sealer) wins.
      const { rowCount } = await db.query(
        `UPDATE webhooks SET headers = '{}'::jsonb, headers_encrypted = $2 WHERE id = $1 AND headers = $3::jsonb`,
        [row.id, sealHeaders(key, row.headers), JSON.stringify(row.headers)],
      );
      sealed += rowCount;
    }
    // Every row of the batch changed under us: what is left is sealed at the next start.
    if (sealed === before) return sealed;
  }
}
