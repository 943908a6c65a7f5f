import type { Role } from '../accounts/accounts.repository.js';
import { inactiveTenantOf } from '../accounts/tenant-state.js';
import { recordAdminAction, type Actor } from '../accounts/admin-audit.repository.js';
import type { Database, Queryable } from '../db/database.js';
import { AppError, invalidField, notFound } from '../http/errors.js';
import type { ApiKeyPrincipal } from '../accounts/principal.js';
import { hashApiKey, newApiKey, shownPrefixOf } from './api-keys.js';
import { NO_SELLER } from './token-pair.js';
import { findActiveApiKeyByHash, findApiKey, findMakerKey, insertApiKey, lockApiKeyTree, renameApiKey, revokeApiKeyTree, touchApiKey, type ApiKeyRow } from './api-keys.repository.js';

export class InvalidApiKeyError extends AppError {
  constructor(detail = 'The API key is invalid or revoked.') {
    super('unauthorized', detail, { headers: { 'www-authenticate': 'Bearer error="invalid_token"' } });
  }
}

const EXPIRED = 'The API key has expired.';

export interface ApiKeyInput {
  name: string;
  role: Role;
  marketplaceCode?: string | undefined;
  sellerId?: number | undefined;
  /** Undefined: the longest lifetime allowed (none when nothing caps it). */
  expiresAt?: Date | undefined;
}

export interface ApiKeyLimits {
  /** API_KEY_MAX_LIFETIME_DAYS; 0 caps nothing. */
  maxLifetimeDays: number;
  /** The field a refused expiry is reported under: `body.expires_at`, or the CLI's option. */
  expiresField: string;
}

const DAY_MS = 86_400_000;

/**
 * The expiry of a new key: the one requested, which must lie ahead and within the cap (400
 * otherwise), or else the cap. A key made by a key also expires no later than its maker, so that a
 * key about to expire cannot hand its access on to one that lives longer.
 */
function expiryOf(input: ApiKeyInput, limits: ApiKeyLimits, now: Date, makerExpiresAt: Date | null): Date | null {
  const cap = limits.maxLifetimeDays > 0 ? new Date(now.getTime() + limits.maxLifetimeDays * DAY_MS) : null;
  const requested = input.expiresAt;
  if (requested === undefined) {
    const bounds = [cap, makerExpiresAt].filter((date): date is Date => date !== null);
    return bounds.length === 0 ? null : new Date(Math.min(...bounds.map((date) => date.getTime())));
  }
  if (requested.getTime() <= now.getTime()) throw invalidField(limits.expiresField, 'must be in the future');
  if (cap && requested > cap) throw invalidField(limits.expiresField, `may be at most ${limits.maxLifetimeDays} days ahead (API_KEY_MAX_LIFETIME_DAYS), that is ${cap.toISOString()}`);
  if (makerExpiresAt && requested > makerExpiresAt) throw invalidField(limits.expiresField, `may not be later than the expiry of the API key that makes it, ${makerExpiresAt.toISOString()}`);
  return requested;
}

/** `api_key:<id>` → id; an actor that is not a key → undefined. */
function makerKeyOf(actor: Actor): number | undefined {
  const match = /^api_key:(\d+)$/.exec(actor);
  return match ? Number(match[1]) : undefined;
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
export async function createApiKey(db: Database, input: ApiKeyInput, actor: Actor, now: Date, limits: ApiKeyLimits): Promise<{ row: ApiKeyRow; key: string }> {
  checkApiKeyScope(input);
  expiryOf(input, limits, now, null); // the request's own mistakes first, before any lock
  const key = newApiKey();
  const makerId = makerKeyOf(actor);
  return db.transaction(async (tx) => {
    let makerExpiresAt: Date | null = null;
    if (makerId !== undefined) {
      // The maker may have been revoked (or may have expired) since it authenticated this request.
      await lockApiKeyTree(tx);
      const maker = await findMakerKey(tx, makerId);
      if (!maker || maker.revoked_at) throw new InvalidApiKeyError();
      if (maker.expires_at && maker.expires_at <= now) throw new InvalidApiKeyError(EXPIRED);
      makerExpiresAt = maker.expires_at;
    }
    const expiresAt = expiryOf(input, limits, now, makerExpiresAt);
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
      expiresAt,
    });
    await recordAdminAction(tx, { actor, action: 'create', targetKind: 'api_key', targetId: row.id, at: now, detail: { role: row.role, marketplace_code: row.marketplace_code, seller_id: row.seller_id, expires_at: row.expires_at?.toISOString() ?? null } });
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

/**
 * Revokes a key and every key it made, transitively (revokeApiKeyTree); `marketplaceCode` limits it
 * to that marketplace's keys (others are 404). Each key revoked now is audited, those below the one
 * named with `cascade_from`; a key revoked before changes nothing and is not audited again.
 * Returns the key named and the ids of the keys revoked with it.
 */
export async function revokeApiKeyById(db: Database, id: number, actor: Actor, now: Date, marketplaceCode?: string): Promise<{ row: ApiKeyRow; cascaded: number[] }> {
  return db.transaction(async (tx) => {
    await lockApiKeyTree(tx);
    const revoked = await revokeApiKeyTree(tx, id, now, marketplaceCode);
    const row = revoked.find((key) => key.id === id) ?? (await findApiKey(tx, id, marketplaceCode));
    if (!row) throw notFound('There is no API key with this id.');
    for (const key of revoked) {
      await recordAdminAction(tx, { actor, action: 'revoke', targetKind: 'api_key', targetId: key.id, at: now, ...(key.id === id ? {} : { detail: { cascade_from: id } }) });
    }
    return { row, cascaded: revoked.filter((key) => key.id !== id).map((key) => key.id) };
  });
}

/**
 * The principal of a presented API key. Looked up on every request (no cache): a revoked or
 * expired key is refused at once by every process. The last-used time is written at most once per
 * resolution, and only for a key that was accepted.
 */
export async function authenticateApiKey(db: Queryable, key: string, now: Date, lastUsedResolutionSeconds: number): Promise<ApiKeyPrincipal> {
  const row = await findActiveApiKeyByHash(db, hashApiKey(key));
  if (!row) throw new InvalidApiKeyError();
  if (row.expires_at && row.expires_at.getTime() <= now.getTime()) throw new InvalidApiKeyError(EXPIRED);
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
