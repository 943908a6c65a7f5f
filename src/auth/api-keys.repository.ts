import type { Role } from '../accounts/accounts.repository.js';
import { tenantActiveSql } from '../accounts/tenant-state.js';
import type { Queryable } from '../db/database.js';

export interface ApiKeyRow {
  id: number;
  name: string;
  key_prefix: string;
  role: Role;
  marketplace_code: string | null;
  seller_id: number | null;
  created_at: Date;
  created_by: string;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

const COLUMNS = `id, name, key_prefix, role, marketplace_code, seller_id, created_at, created_by, last_used_at, revoked_at`;

export interface NewApiKey {
  name: string;
  hash: Buffer;
  prefix: string;
  role: Role;
  marketplaceCode: string | null;
  sellerId: number | null;
  createdBy: string;
  now: Date;
}

export async function insertApiKey(db: Queryable, key: NewApiKey): Promise<ApiKeyRow> {
  const { rows } = await db.query<ApiKeyRow>(
    `INSERT INTO api_keys (name, key_hash, key_prefix, role, marketplace_code, seller_id, created_by, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${COLUMNS}`,
    [key.name, key.hash, key.prefix, key.role, key.marketplaceCode, key.sellerId, key.createdBy, key.now],
  );
  return rows[0]!;
}

/**
 * The key with this hash if it is not revoked, and whether its seller or marketplace is active:
 * one probe of the unique index (and one of the tenant's primary key, in the same statement), no
 * cache, so a revocation or a tenant's deactivation counts at once everywhere.
 */
export async function findActiveApiKeyByHash(db: Queryable, hash: Buffer): Promise<(ApiKeyRow & { tenant_active: boolean }) | undefined> {
  const { rows } = await db.query<ApiKeyRow & { tenant_active: boolean }>(
    `SELECT ${COLUMNS}, ${tenantActiveSql('role', 'seller_id', 'marketplace_code')} AS tenant_active
       FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL`,
    [hash],
  );
  return rows[0];
}

/** Records use at most once per `resolutionMs`: the condition keeps concurrent requests from all writing. */
export async function touchApiKey(db: Queryable, id: number, now: Date, resolutionMs: number): Promise<void> {
  await db.query(`UPDATE api_keys SET last_used_at = $2 WHERE id = $1 AND (last_used_at IS NULL OR last_used_at <= $3)`, [id, now, new Date(now.getTime() - resolutionMs)]);
}

/** Keys in id order after `afterId`; `marketplaceCode` narrows to one marketplace's keys. */
export async function listApiKeys(db: Queryable, options: { marketplaceCode?: string; afterId: number; limit: number }): Promise<ApiKeyRow[]> {
  const { rows } = await db.query<ApiKeyRow>(
    `SELECT ${COLUMNS} FROM api_keys
      WHERE id > $1 AND ($2::text IS NULL OR marketplace_code = $2)
      ORDER BY id LIMIT $3`,
    [options.afterId, options.marketplaceCode ?? null, options.limit],
  );
  return rows;
}

export async function findApiKey(db: Queryable, id: number, marketplaceCode?: string): Promise<ApiKeyRow | undefined> {
  const { rows } = await db.query<ApiKeyRow>(
    `SELECT ${COLUMNS} FROM api_keys WHERE id = $1 AND ($2::text IS NULL OR marketplace_code = $2)`,
    [id, marketplaceCode ?? null],
  );
  return rows[0];
}

/** Renames the key; undefined when there is no such key in scope. */
export async function renameApiKey(db: Queryable, id: number, name: string, marketplaceCode?: string): Promise<ApiKeyRow | undefined> {
  const { rows } = await db.query<ApiKeyRow>(
    `UPDATE api_keys SET name = $2 WHERE id = $1 AND ($3::text IS NULL OR marketplace_code = $3) RETURNING ${COLUMNS}`,
    [id, name, marketplaceCode ?? null],
  );
  return rows[0];
}

/**
 * Revokes the key (kept for the audit trail); returns it and whether this call revoked it (false
 * when it already was: a repeated revoke changes and audits nothing), or undefined when there is no
 * such key in scope. The row is locked first, so that of two concurrent revokes one is "now".
 */
export async function revokeApiKey(db: Queryable, id: number, now: Date, marketplaceCode?: string): Promise<(ApiKeyRow & { revoked_now: boolean }) | undefined> {
  const { rows } = await db.query<ApiKeyRow & { revoked_now: boolean }>(
    `WITH target AS (
       SELECT id AS target_id, revoked_at IS NULL AS revoked_now FROM api_keys
        WHERE id = $1 AND ($3::text IS NULL OR marketplace_code = $3) FOR UPDATE
     )
     UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $2)
       FROM target WHERE id = target_id
     RETURNING ${COLUMNS}, revoked_now`,
    [id, now, marketplaceCode ?? null],
  );
  return rows[0];
}
