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
  /** Null: never expires. */
  expires_at: Date | null;
  /** The key that made this key (from created_by `api_key:<id>`), or null. */
  created_by_api_key: number | null;
  /** The user who made it (from created_by `user:<id>`), or null. */
  created_by_user: number | null;
  /** That key's name or that user's name now; null for the CLI or a deleted user. */
  creator_name: string | null;
}

/**
 * Every column a key's resource shows. The creator's name is looked up by primary key (one probe
 * per row, lists are paged), in RETURNING too, so that every statement answers the same shape.
 */
const COLUMNS = `api_keys.id, api_keys.name, key_prefix, role, marketplace_code, seller_id, created_at, created_by, last_used_at,
  revoked_at, expires_at, created_by_api_key, created_by_user,
  COALESCE((SELECT maker.name FROM api_keys maker WHERE maker.id = api_keys.created_by_api_key),
           (SELECT u.username FROM users u WHERE u.id = api_keys.created_by_user)) AS creator_name`;

export interface NewApiKey {
  name: string;
  hash: Buffer;
  prefix: string;
  role: Role;
  marketplaceCode: string | null;
  sellerId: number | null;
  createdBy: string;
  now: Date;
  expiresAt: Date | null;
}

export async function insertApiKey(db: Queryable, key: NewApiKey): Promise<ApiKeyRow> {
  const { rows } = await db.query<ApiKeyRow>(
    `INSERT INTO api_keys (name, key_hash, key_prefix, role, marketplace_code, seller_id, created_by, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING ${COLUMNS}`,
    [key.name, key.hash, key.prefix, key.role, key.marketplaceCode, key.sellerId, key.createdBy, key.now, key.expiresAt],
  );
  return rows[0]!;
}

export interface PresentedApiKey {
  id: number;
  role: Role;
  marketplace_code: string | null;
  seller_id: number | null;
  last_used_at: Date | null;
  expires_at: Date | null;
  tenant_active: boolean;
}

/**
 * The key with this hash if it is not revoked, and whether its seller or marketplace is active:
 * one probe of the unique index (and one of the tenant's primary key, in the same statement), no
 * cache, so a revocation or a tenant's deactivation counts at once everywhere. The caller compares
 * the expiry with its clock.
 */
export async function findActiveApiKeyByHash(db: Queryable, hash: Buffer): Promise<PresentedApiKey | undefined> {
  const { rows } = await db.query<PresentedApiKey>(
    `SELECT id, role, marketplace_code, seller_id, last_used_at, expires_at, ${tenantActiveSql('role', 'seller_id', 'marketplace_code')} AS tenant_active
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
      WHERE api_keys.id > $1 AND ($2::text IS NULL OR marketplace_code = $2)
      ORDER BY api_keys.id LIMIT $3`,
    [options.afterId, options.marketplaceCode ?? null, options.limit],
  );
  return rows;
}

export async function findApiKey(db: Queryable, id: number, marketplaceCode?: string): Promise<ApiKeyRow | undefined> {
  const { rows } = await db.query<ApiKeyRow>(
    `SELECT ${COLUMNS} FROM api_keys WHERE api_keys.id = $1 AND ($2::text IS NULL OR marketplace_code = $2)`,
    [id, marketplaceCode ?? null],
  );
  return rows[0];
}

/** Renames the key; undefined when there is no such key in scope. */
export async function renameApiKey(db: Queryable, id: number, name: string, marketplaceCode?: string): Promise<ApiKeyRow | undefined> {
  const { rows } = await db.query<ApiKeyRow>(
    `UPDATE api_keys SET name = $2 WHERE api_keys.id = $1 AND ($3::text IS NULL OR marketplace_code = $3) RETURNING ${COLUMNS}`,
    [id, name, marketplaceCode ?? null],
  );
  return rows[0];
}

/**
 * Serialises the changes to the tree of keys made by keys: a key made by a key (createApiKey) and
 * a revocation (revokeApiKeyTree) each take it first in their transaction. Without it, a key made
 * by a descendant while its ancestor is being revoked could commit after the revocation's snapshot
 * and survive it. Both are rare administrative acts; logins and key use never take it.
 */
export async function lockApiKeyTree(tx: Queryable): Promise<void> {
  await tx.query(`SELECT pg_advisory_xact_lock(hashtext('plaza:api-key-tree'))`);
}

/** The maker key's state, read after lockApiKeyTree: whether it may still make a key, and until when. */
export async function findMakerKey(tx: Queryable, id: number): Promise<{ revoked_at: Date | null; expires_at: Date | null } | undefined> {
  const { rows } = await tx.query<{ revoked_at: Date | null; expires_at: Date | null }>(`SELECT revoked_at, expires_at FROM api_keys WHERE id = $1`, [id]);
  return rows[0];
}

/**
 * Revokes the key and, transitively, every key made by it or by a key it made: one statement, a
 * recursive walk down created_by_api_key (indexed), so that the whole tree goes at once or not at
 * all. Call it after lockApiKeyTree, in the same transaction: the statement's snapshot then holds
 * every key made before. `marketplaceCode` scopes the key named; the keys below it are in the same
 * scope by construction (a marketplace's key makes only keys of its marketplace). Returns the keys
 * revoked now (a key revoked before is left as it was, and not returned).
 */
export async function revokeApiKeyTree(tx: Queryable, id: number, now: Date, marketplaceCode?: string): Promise<ApiKeyRow[]> {
  const { rows } = await tx.query<ApiKeyRow>(
    `WITH RECURSIVE tree (id) AS (
       SELECT id FROM api_keys WHERE id = $1 AND ($3::text IS NULL OR marketplace_code = $3)
       UNION
       SELECT child.id FROM api_keys child JOIN tree ON child.created_by_api_key = tree.id
     )
     UPDATE api_keys SET revoked_at = $2 FROM tree
      WHERE api_keys.id = tree.id AND api_keys.revoked_at IS NULL
     RETURNING ${COLUMNS}`,
    [id, now, marketplaceCode ?? null],
  );
  return rows;
}
