import type { Queryable } from '../db/database.js';
import { isUniqueViolation } from '../db/database.js';
import { AppError } from '../http/errors.js';
import { ALL_SELLERS } from './webhook-validators.js';
import type { DeliveryMode, Tenant, WebhookRow } from './webhook-access.js';
import type { DisabledReason } from './disabled-reasons.js';

export const WEBHOOK_CODE_CONSTRAINT = 'webhooks_tenant_code_key';

export interface NewWebhook {
  tenant: Tenant;
  marketplaceCode: string;
  code: string;
  name: string;
  topic: string;
  callbackUrl: string;
  sellerId: string;
  /** The sealed headers (header-box.ts), null for none. */
  headersEncrypted: string | null;
  secretEncrypted: string;
  deliveryMode: DeliveryMode;
  filter: Record<string, unknown> | null;
  sendTraceparent: boolean;
  now: Date;
}

/**
 * Inserts a webhook unless its code is taken or the tenant is at its limit in that marketplace.
 * Run inside a transaction: the advisory lock serialises concurrent creates of one tenant and
 * marketplace so that the count and the insert cannot interleave (the limit holds under races).
 */
export async function insertWebhook(tx: Queryable, webhook: NewWebhook, limit: number): Promise<WebhookRow> {
  const { tenant, marketplaceCode, code } = webhook;
  await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`plaza:webhooks:${tenant.kind}:${tenant.id}:${marketplaceCode}`]);
  const { rows: [usage] } = await tx.query<{ count: number; taken: boolean }>(
    `SELECT count(*)::int AS count, coalesce(bool_or(code = $4), false) AS taken
       FROM webhooks WHERE tenant_kind = $1 AND tenant_id = $2 AND marketplace_code = $3`,
    [tenant.kind, tenant.id, marketplaceCode, code],
  );
  if (usage!.taken) throw codeTaken(code);
  if (usage!.count >= limit) {
    throw new AppError('webhook_limit_reached', `At most ${limit} webhooks per tenant and marketplace; delete one first.`, { extensions: { limit } });
  }
  // The connection a seller's webhook, or a marketplace's webhook for one seller, depends on: held
  // until the commit, so that an administrator deleting it meanwhile sees this webhook and refuses
  // (tenants.service.ts); if it went first, the webhook is refused.
  const connectedSeller = tenant.kind === 'seller' ? tenant.id : tenant.kind === 'marketplace' && webhook.sellerId !== ALL_SELLERS ? webhook.sellerId : undefined;
  if (connectedSeller !== undefined) {
    const connection = await tx.query(`SELECT 1 FROM marketplace_connections WHERE seller_id = $1::int AND marketplace_code = $2 FOR KEY SHARE`, [connectedSeller, marketplaceCode]);
    if (connection.rowCount === 0) throw new AppError('conflict', `Seller ${connectedSeller} is no longer connected to marketplace ${marketplaceCode}.`);
  }
  try {
    const { rows } = await tx.query<WebhookRow>(
      `INSERT INTO webhooks (tenant_kind, tenant_id, marketplace_code, code, name, topic, callback_url, seller_id, headers, headers_encrypted, secret_encrypted, created_at, updated_at, delivery_mode, filter, send_traceparent)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, '{}'::jsonb, $9, $10, $11, $11, $12, $13::jsonb, $14)
       ON CONFLICT ON CONSTRAINT ${WEBHOOK_CODE_CONSTRAINT} DO NOTHING
       RETURNING *`,
      [
        tenant.kind, tenant.id, marketplaceCode, code, webhook.name, webhook.topic, webhook.callbackUrl, webhook.sellerId, webhook.headersEncrypted, webhook.secretEncrypted, webhook.now,
        webhook.deliveryMode, webhook.filter === null ? null : JSON.stringify(webhook.filter), webhook.sendTraceparent,
      ],
    );
    if (!rows[0]) throw codeTaken(code);
    return rows[0];
  } catch (error) {
    if (isUniqueViolation(error, WEBHOOK_CODE_CONSTRAINT)) throw codeTaken(code);
    throw error;
  }
}

function codeTaken(code: string): AppError {
  return new AppError('webhook_code_taken', `A webhook with code "${code}" already exists in this marketplace.`);
}

export interface ListPage {
  /** Only this tenant's webhooks; undefined lists every tenant's (admins). */
  tenant?: Tenant;
  marketplaceCode: string;
  limit: number;
  /** Resume after this (code, id), exclusive. */
  after?: { code: string; id: number };
  /**
   * A portal link's scope (src/portal/portal-access.ts, inLinkScope, which the portal also applies
   * to each row): about one seller (its own webhooks, and others' for it alone), or (null) none of
   * the sellers' own.
   */
  linkScope?: { sellerId: string | null };
}

/**
 * Ordered by code (byte order: the column is COLLATE "C"), then id, since codes repeat across
 * tenants in an admin's list; one extra row tells whether there is a next page.
 */
/**
 * The conditions of a page and their parameters: $1 the marketplace, $2 the limit + 1 (one more
 * row tells whether there is a next page), then the tenant's, the link scope's and the cursor's.
 * Shared by listWebhooks and the list route's read (webhook-list.ts), which appends its own.
 */
export function listConditions(page: ListPage): { where: string[]; params: unknown[] } {
  const params: unknown[] = [page.marketplaceCode, page.limit + 1];
  const where = ['marketplace_code = $1'];
  if (page.tenant) {
    params.push(page.tenant.kind, page.tenant.id);
    where.push(`tenant_kind = $${params.length - 1}`, `tenant_id = $${params.length}`);
  }
  if (page.linkScope) {
    if (page.linkScope.sellerId === null) {
      where.push(`tenant_kind <> 'seller'`);
    } else {
      params.push(page.linkScope.sellerId);
      where.push(`(CASE WHEN tenant_kind = 'seller' THEN tenant_id ELSE seller_id END) = $${params.length}`);
    }
  }
  if (page.after) {
    params.push(page.after.code, page.after.id);
    where.push(`(code, id) > ($${params.length - 1}, $${params.length})`);
  }
  return { where, params };
}

export async function listWebhooks(db: Queryable, page: ListPage): Promise<{ rows: WebhookRow[]; hasMore: boolean }> {
  const { where, params } = listConditions(page);
  const { rows } = await db.query<WebhookRow>(
    `SELECT * FROM webhooks WHERE ${where.join(' AND ')} ORDER BY code, id LIMIT $2`,
    params,
  );
  return { rows: rows.slice(0, page.limit), hasMore: rows.length > page.limit };
}

export interface WebhookChanges {
  name?: string;
  callbackUrl?: string;
  sellerId?: string;
  /** The sealed headers (header-box.ts), null for none; undefined keeps them. */
  headersEncrypted?: string | null;
  active?: boolean;
  deliveryMode?: DeliveryMode;
  /** A checked filter, null to remove it; undefined keeps it. */
  filter?: Record<string, unknown> | null;
  sendTraceparent?: boolean;
}

export const DISABLED_BY_USER: DisabledReason = 'disabled_by_user';

/**
 * One statement: fields left out keep their value. Re-enabling clears the delivery's disable
 * bookkeeping so that the failure window starts afresh; disabling records who did it.
 */
export async function updateWebhook(db: Queryable, id: number, changes: WebhookChanges, now: Date): Promise<WebhookRow | undefined> {
  const { rows } = await db.query<WebhookRow>(
    `UPDATE webhooks SET
        name = coalesce($2, name),
        callback_url = coalesce($3, callback_url),
        seller_id = coalesce($4, seller_id),
        headers = CASE WHEN $9 THEN '{}'::jsonb ELSE headers END,
        headers_encrypted = CASE WHEN $9 THEN $5 ELSE headers_encrypted END,
        active = coalesce($6, active),
        delivery_mode = coalesce($10, delivery_mode),
        disabled_reason = CASE WHEN $6 IS TRUE THEN NULL WHEN $6 IS FALSE AND active THEN $8 ELSE disabled_reason END,
        disabled_at = CASE WHEN $6 IS TRUE THEN NULL WHEN $6 IS FALSE AND active THEN $7 ELSE disabled_at END,
        failing_since = CASE WHEN $6 IS TRUE THEN NULL ELSE failing_since END,
        filter = CASE WHEN $11 THEN $12::jsonb ELSE filter END,
        send_traceparent = coalesce($13, send_traceparent),
        updated_at = $7
      WHERE id = $1
      RETURNING *`,
    [
      id,
      changes.name ?? null,
      changes.callbackUrl ?? null,
      changes.sellerId ?? null,
      changes.headersEncrypted ?? null,
      changes.active ?? null,
      now,
      DISABLED_BY_USER,
      changes.headersEncrypted !== undefined,
      changes.deliveryMode ?? null,
      changes.filter !== undefined,
      changes.filter === undefined || changes.filter === null ? null : JSON.stringify(changes.filter),
      changes.sendTraceparent ?? null,
    ],
  );
  return rows[0];
}

export async function deleteWebhook(db: Queryable, id: number): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM webhooks WHERE id = $1`, [id]);
  return rowCount > 0;
}

/**
 * The current secret becomes the previous one (signing alongside until `previousExpiresAt`), in
 * one statement so that two rotations cannot lose a secret between them. A rotation during the
 * overlap ends the older secret's overlap at once: only one previous secret is kept.
 */
export async function rotateWebhookSecret(db: Queryable, id: number, secretEncrypted: string, previousExpiresAt: Date, now: Date): Promise<WebhookRow | undefined> {
  const { rows } = await db.query<WebhookRow>(
    `UPDATE webhooks SET previous_secret_encrypted = secret_encrypted, previous_secret_expires_at = $3,
            secret_encrypted = $2, updated_at = $4
      WHERE id = $1 RETURNING *`,
    [id, secretEncrypted, previousExpiresAt, now],
  );
  return rows[0];
}

/** Whether the seller has a connection to the marketplace. */
export async function isSellerConnected(db: Queryable, sellerId: string, marketplaceCode: string): Promise<boolean> {
  const { rows } = await db.query(
    `SELECT 1 FROM marketplace_connections WHERE seller_id = $1::int AND marketplace_code = $2 LIMIT 1`,
    [sellerId, marketplaceCode],
  );
  return rows.length > 0;
}
