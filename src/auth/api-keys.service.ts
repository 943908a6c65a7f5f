import type { Role } from '../accounts/accounts.repository.js';
import { inactiveTenantOf } from '../accounts/tenant-state.js';
import { recordAdminAction, type Actor } from '../admin/admin-audit.repository.js';
import type { Database, Queryable } from '../db/database.js';
import { AppError, invalidField, notFound } from '../http/errors.js';
import type { ApiKeyPrincipal } from './access-tokens.js';
import { hashApiKey, newApiKey, shownPrefixOf } from './api-keys.js';
import { NO_SELLER } from './token-pair.js';
import { findActiveApiKeyByHash, insertApiKey, renameApiKey, revokeApiKey, touchApiKey, type ApiKeyRow } from './api-keys.repository.js';

export interface ApiKeyInput {
  name: string;
  role: Role;
  marketplaceCode?: string | undefined;
  sellerId?: number | undefined;
}

/**
 * Checks that the scope fits the role, the same rule as for users: a marketplace key names its
 * marketplace, a seller key its seller, an admin key neither. Fields are named as the HTTP body's,
 * like every validation error's.
 */
export function checkApiKeyScope(input: ApiKeyInput): void {
  if ((input.role === 'marketplace') !== (input.marketplaceCode !== undefined)) {
    throw invalidField('body.marketplace_code', 'is required for role marketplace, and only for it');
  }
  if ((input.role === 'seller') !== (input.sellerId !== undefined)) {
    throw invalidField('body.seller_id', 'is required for role seller, and only for it');
  }
}

/** Creates a key and returns it in clear, the only time it exists outside its holder's hands. */
export async function createApiKey(db: Database, input: ApiKeyInput, actor: Actor, now: Date): Promise<{ row: ApiKeyRow; key: string }> {
  checkApiKeyScope(input);
  const key = newApiKey();
  return db.transaction(async (tx) => {
    await assertScopeExists(tx, input);
    const row = await insertApiKey(tx, {
      name: input.name,
      hash: hashApiKey(key),
      prefix: shownPrefixOf(key),
      role: input.role,
      marketplaceCode: input.marketplaceCode ?? null,
      sellerId: input.sellerId ?? null,
      createdBy: actor,
      now,
    });
    await recordAdminAction(tx, { actor, action: 'create', targetKind: 'api_key', targetId: row.id, at: now, detail: { role: row.role, marketplace_code: row.marketplace_code, seller_id: row.seller_id } });
    return { row, key };
  });
}

/** A scope that does not exist is a 409, as for a user or a connection (db-conflicts.ts). */
async function assertScopeExists(db: Queryable, input: ApiKeyInput): Promise<void> {
  if (input.marketplaceCode !== undefined) {
    const { rowCount } = await db.query(`SELECT 1 FROM marketplaces WHERE code = $1`, [input.marketplaceCode]);
    if (rowCount === 0) throw new AppError('conflict', `There is no marketplace ${input.marketplaceCode}.`);
  }
  if (input.sellerId !== undefined) {
    const { rowCount } = await db.query(`SELECT 1 FROM sellers WHERE id = $1`, [input.sellerId]);
    if (rowCount === 0) throw new AppError('conflict', `There is no seller ${input.sellerId}.`);
  }
}

/** Renames a key (its name is a label: the key, role and scope stay); `marketplaceCode` as for a revoke. */
export async function renameApiKeyById(db: Database, id: number, name: string, actor: Actor, now: Date, marketplaceCode?: string): Promise<ApiKeyRow> {
  return db.transaction(async (tx) => {
    const row = await renameApiKey(tx, id, name, marketplaceCode);
    if (!row) throw notFound('There is no API key with this id.');
    await recordAdminAction(tx, { actor, action: 'update', targetKind: 'api_key', targetId: id, at: now, detail: { fields: ['name'] } });
    return row;
  });
}

/** Revokes a key; `marketplaceCode` limits it to that marketplace's keys (others are 404). */
export async function revokeApiKeyById(db: Database, id: number, actor: Actor, now: Date, marketplaceCode?: string): Promise<ApiKeyRow> {
  return db.transaction(async (tx) => {
    const row = await revokeApiKey(tx, id, now, marketplaceCode);
    if (!row) throw notFound('There is no API key with this id.');
    if (row.revoked_now) await recordAdminAction(tx, { actor, action: 'revoke', targetKind: 'api_key', targetId: id, at: now });
    return row;
  });
}

export class InvalidApiKeyError extends AppError {
  constructor(detail = 'The API key is invalid or revoked.') {
    super('unauthorized', detail, { headers: { 'www-authenticate': 'Bearer error="invalid_token"' } });
  }
}

/**
 * The principal of a presented API key. Looked up on every request (no cache): a revoked key is
 * refused at once by every process. The last-used time is written at most once per resolution.
 */
export async function authenticateApiKey(db: Queryable, key: string, now: Date, lastUsedResolutionSeconds: number): Promise<ApiKeyPrincipal> {
  const row = await findActiveApiKeyByHash(db, hashApiKey(key));
  if (!row) throw new InvalidApiKeyError();
  if (!row.tenant_active) throw new InvalidApiKeyError(`The ${inactiveTenantOf(row.role)} of this API key is deactivated.`);
  const resolutionMs = lastUsedResolutionSeconds * 1000;
  if (!row.last_used_at || now.getTime() - row.last_used_at.getTime() >= resolutionMs) {
    await touchApiKey(db, row.id, now, resolutionMs);
  }
  return {
    apiKeyId: row.id,
    userId: null,
    sessionId: null,
    sellerId: row.seller_id ?? NO_SELLER,
    role: row.role,
    marketplaceCode: row.marketplace_code,
    tokenId: `api_key:${row.id}`,
  };
}
