import { recordAdminAction, type Actor } from '../accounts/admin-audit.repository.js';
import { withConstraints } from '../http/db-conflicts.js';
import { AppError } from '../http/errors.js';
import type { Database, Queryable } from '../db/database.js';
import {
  changeMarketplace, changeSeller, deleteRow, findConnection, findMarketplace, findSeller, insertConnection, insertMarketplace, insertSeller,
  type ConnectionRow, type MarketplaceRow, type SellerRow, type TenantChanges,
} from '../accounts/accounts.repository.js';
import { applyTenantActivation, type TenantKind } from './tenant-activation.js';
import { actorOfAdminAction } from '../webhooks/webhook-history.js';

/**
 * Audited changes to marketplaces, sellers and connections, shared by the admin API and the CLI.
 * Each runs in one transaction with its audit row; constraint violations become explained 409s.
 */
export function createMarketplace(db: Database, code: string, name: string, actor: Actor, now: Date): Promise<MarketplaceRow> {
  return withConstraints(`Marketplace ${code}`, () => db.transaction(async (tx) => {
    await insertMarketplace(tx, code, name);
    await recordAdminAction(tx, { actor, action: 'create', targetKind: 'marketplace', targetId: code, at: now });
    return (await findMarketplace(tx, code))!;
  }));
}

/**
 * Renames and/or (de)activates a marketplace in one transaction, audited: a rename as `update`, a
 * change of `active` as `deactivate` or `activate` with what it did (tenant-activation.ts).
 * Undefined when there is no such marketplace.
 */
export function updateMarketplace(db: Database, code: string, changes: TenantChanges, actor: Actor, now: Date): Promise<MarketplaceRow | undefined> {
  return db.transaction(async (tx) => {
    const row = await changeMarketplace(tx, code, changes);
    if (row) await auditChanges(tx, 'marketplace', code, changes, actor, now);
    return row;
  });
}

/** The same for a seller. */
export function updateSeller(db: Database, id: number, changes: TenantChanges, actor: Actor, now: Date): Promise<SellerRow | undefined> {
  return db.transaction(async (tx) => {
    const row = await changeSeller(tx, id, changes);
    if (row) await auditChanges(tx, 'seller', id, changes, actor, now);
    return row;
  });
}

async function auditChanges(tx: Queryable, kind: TenantKind, key: string | number, changes: TenantChanges, actor: Actor, now: Date): Promise<void> {
  if (changes.name !== undefined) await recordAdminAction(tx, { actor, action: 'update', targetKind: kind, targetId: key, at: now, detail: { fields: ['name'] } });
  if (changes.active !== undefined) {
    // Applied even when the flag already had that value: deactivating again revokes whatever a
    // login racing the first deactivation may have opened, and changes nothing else.
    const effects = await applyTenantActivation(tx, kind, String(key), changes.active, now, actorOfAdminAction(actor));
    await recordAdminAction(tx, { actor, action: changes.active ? 'activate' : 'deactivate', targetKind: kind, targetId: key, at: now, detail: { ...effects } });
  }
}

export function createSeller(db: Database, id: number, name: string, actor: Actor, now: Date): Promise<SellerRow> {
  return withConstraints(`Seller ${id}`, () => db.transaction(async (tx) => {
    await insertSeller(tx, id, name);
    await recordAdminAction(tx, { actor, action: 'create', targetKind: 'seller', targetId: id, at: now });
    return (await findSeller(tx, id))!;
  }));
}

export function createConnection(db: Database, sellerId: number, marketplaceCode: string, actor: Actor, now: Date): Promise<ConnectionRow> {
  return withConstraints('The connection', () => db.transaction(async (tx) => {
    const id = await insertConnection(tx, sellerId, marketplaceCode);
    await recordAdminAction(tx, { actor, action: 'create', targetKind: 'connection', targetId: id, at: now, detail: { seller_id: sellerId, marketplace_code: marketplaceCode } });
    return (await findConnection(tx, id))!;
  }));
}

const TABLES = { marketplace: 'marketplaces', seller: 'sellers', connection: 'marketplace_connections' } as const;

/**
 * Deletes a marketplace, seller or connection when nothing refers to it any more (users, webhooks,
 * events, API keys, connections): the foreign keys refuse otherwise, answered as a 409.
 * Returns false when there is no such row.
 */
export function deleteTenant(db: Database, kind: keyof typeof TABLES, key: string | number, actor: Actor, now: Date): Promise<boolean> {
  const what = kind === 'connection' ? `Connection ${key}` : `${kind[0]!.toUpperCase()}${kind.slice(1)} ${key}`;
  return withConstraints(what, () => db.transaction(async (tx) => {
    if (kind === 'connection') await refuseConnectionInUse(tx, Number(key), what);
    if (kind === 'seller') await refuseSellerInUse(tx, Number(key), what);
    if (!(await deleteRow(tx, TABLES[kind], key))) return false;
    await recordAdminAction(tx, { actor, action: 'delete', targetKind: kind, targetId: key, at: now });
    return true;
  }));
}

/**
 * A seller is in use while events are kept for it, or webhooks are restricted to it (a marketplace's
 * or an admin's, seller_id): neither column can be a foreign key (events.seller_id predates it,
 * webhooks.seller_id is text, '*' for all), hence this check after the seller's row is locked.
 * Deleted, a seller with the same id created later would take over its events and idempotency keys.
 * (An event accepted at the very moment of the deletion is not seen: the intake locks no seller row,
 * to stay cheap; it needs the seller's connection, which must have been deleted before.)
 */
async function refuseSellerInUse(tx: Queryable, id: number, what: string): Promise<void> {
  await tx.query(`SELECT 1 FROM sellers WHERE id = $1 FOR UPDATE`, [id]);
  const { rows } = await tx.query<{ events: boolean; webhooks: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM events WHERE seller_id = $1) AS events, EXISTS (SELECT 1 FROM webhooks WHERE seller_id = $1::text) AS webhooks`,
    [id],
  );
  const uses = Object.entries(rows[0]!).filter(([, used]) => used).map(([table]) => table);
  if (uses.length > 0) throw new AppError('conflict', `${what} is still in use (${uses.join(', ')}); remove those first.`);
}

/**
 * A connection is in use while webhooks depend on it: the seller's own webhooks in that marketplace
 * (the seller could no longer reach them) and the marketplace's webhooks for that seller. No
 * foreign key says so, hence this check, after the connection's row is locked: a webhook being
 * created for it holds that row (webhooks.repository.ts, insertWebhook), so it is either seen here
 * or refused there.
 */
async function refuseConnectionInUse(tx: Queryable, id: number, what: string): Promise<void> {
  const { rows } = await tx.query<{ seller_id: number; marketplace_code: string }>(
    `SELECT seller_id, marketplace_code FROM marketplace_connections WHERE id = $1 FOR UPDATE`,
    [id],
  );
  const connection = rows[0];
  if (!connection) return;
  const { rowCount } = await tx.query(
    `SELECT 1 FROM webhooks
      WHERE marketplace_code = $2
        AND ((tenant_kind = 'seller' AND tenant_id = $1::text) OR (tenant_kind = 'marketplace' AND tenant_id = $2 AND seller_id = $1::text))
      LIMIT 1`,
    [connection.seller_id, connection.marketplace_code],
  );
  if (rowCount > 0) throw new AppError('conflict', `${what} is still in use (webhooks of seller ${connection.seller_id} in ${connection.marketplace_code}); remove those first.`);
}
