import type { Principal } from '../accounts/principal.js';
import type { Queryable } from '../db/database.js';
import { AppError, notFound } from '../http/errors.js';

export type TenantKind = 'seller' | 'marketplace' | 'admin';

export interface WebhookRow {
  id: number;
  tenant_kind: TenantKind;
  tenant_id: string;
  marketplace_code: string;
  code: string;
  name: string;
  topic: string;
  callback_url: string;
  seller_id: string;
  /** Plain headers of a row not sealed yet, else {}: read them with openHeaders (header-box.ts). */
  headers: Record<string, string>;
  headers_encrypted: string | null;
  secret_encrypted: string;
  previous_secret_encrypted: string | null;
  previous_secret_expires_at: Date | null;
  active: boolean;
  disabled_reason: string | null;
  disabled_at: Date | null;
  created_at: Date;
  updated_at: Date;
  last_success_at: Date | null;
  failing_since: Date | null;
  /** 'all', or 'latest': a new notification of an entity supersedes its unsent ones (DELIVERY_MODES). */
  delivery_mode: DeliveryMode;
  /** A MongoDB-style query over the notification body (filter/filter.ts); null: every notification. */
  filter: Record<string, unknown> | null;
  /** Its notifications carry a W3C traceparent header (docs/webhooks.md, Trace context); false by default. */
  send_traceparent: boolean;
}

/**
 * WebhookRow's columns, named: for a prepared statement, whose `*` would fail once a migration adds
 * a column while the process runs (QueryOptions.prepare). The type keeps the list complete.
 */
const WEBHOOK_COLUMN_LIST = [
  'id', 'tenant_kind', 'tenant_id', 'marketplace_code', 'code', 'name', 'topic', 'callback_url', 'seller_id', 'headers',
  'headers_encrypted', 'secret_encrypted', 'previous_secret_encrypted', 'previous_secret_expires_at', 'active',
  'disabled_reason', 'disabled_at', 'created_at', 'updated_at', 'last_success_at', 'failing_since', 'delivery_mode',
  'filter', 'send_traceparent',
] as const satisfies readonly (keyof WebhookRow)[];
/** Does not compile while WebhookRow has a field the list leaves out (the error names it). */
const listsEveryColumn: [Exclude<keyof WebhookRow, (typeof WEBHOOK_COLUMN_LIST)[number]>] extends [never] ? true : Exclude<keyof WebhookRow, (typeof WEBHOOK_COLUMN_LIST)[number]> = true;
export const WEBHOOK_COLUMNS = listsEveryColumn && WEBHOOK_COLUMN_LIST.join(', ');

/**
 * What a webhook is sent: every notification ('all', the default), or per entity only the newest of
 * those not sent yet ('latest'): a new notification supersedes the webhook's pending and held ones
 * of the same entity (events/supersede.ts).
 */
export const DELIVERY_MODES = ['all', 'latest'] as const;
export type DeliveryMode = (typeof DELIVERY_MODES)[number];

/** The owner a principal creates webhooks as, and the only webhooks a non-admin may see. */
export interface Tenant {
  kind: TenantKind;
  id: string;
}

export function tenantOf(principal: Principal): Tenant {
  switch (principal.role) {
    case 'admin':
      return { kind: 'admin', id: '*' };
    case 'marketplace':
      // The CHECK on users guarantees a code for this role; '' can match nothing if a token lacks it.
      return { kind: 'marketplace', id: principal.marketplaceCode ?? '' };
    default:
      return { kind: 'seller', id: String(principal.sellerId) };
  }
}

// The same words whether the marketplace is missing or not the caller's: existence is not disclosed.
const MARKETPLACE_NOT_FOUND = 'No such marketplace is available to you.';
const WEBHOOK_NOT_FOUND = 'The webhook does not exist.';

/**
 * The marketplace exists and the principal may use it (404 otherwise, so that a marketplace the
 * principal may not use is indistinguishable from one that does not exist).
 */
export async function assertMarketplaceAccess(db: Queryable, principal: Principal, marketplaceCode: string): Promise<void> {
  // Another marketplace's user: no query needed to say no.
  if (principal.role === 'marketplace' && principal.marketplaceCode !== marketplaceCode) throw notFound(MARKETPLACE_NOT_FOUND);
  const { rows } = await db.query<{ visible: boolean }>(
    `SELECT ${marketplaceVisibleSql('$1::text', '$2::text', '$3::int', '$4::text')} AS visible`,
    [marketplaceCode, principal.role, principal.sellerId, principal.marketplaceCode],
  );
  if (!rows[0]!.visible) throw marketplaceNotFound();
}

/** The 404 of assertMarketplaceAccess, for a read that evaluates marketplaceVisibleSql itself (webhook-list.ts). */
export const marketplaceNotFound = () => notFound(MARKETPLACE_NOT_FOUND);

/**
 * assertMarketplaceAccess's rule as one boolean SQL expression over SQL expressions for the
 * marketplace asked for and the principal's role, seller and marketplace: it exists, and an admin
 * may use any, a marketplace user only its own, a seller only one it is connected to. Never null.
 */
export function marketplaceVisibleSql(code: string, role: string, sellerId: string, principalMarketplace: string): string {
  return `(EXISTS (SELECT 1 FROM marketplaces vm WHERE vm.code = ${code})
           AND CASE ${role}
                 WHEN 'admin' THEN true
                 WHEN 'marketplace' THEN coalesce(${principalMarketplace} = ${code}, false)
                 ELSE EXISTS (SELECT 1 FROM marketplace_connections vc WHERE vc.marketplace_code = ${code} AND vc.seller_id = ${sellerId})
               END)`;
}

/**
 * Of one marketplace's webhooks, the ids an admin can address by code (loadWebhookForPrincipal's
 * rule): the admins' own where they have one; otherwise the code's only webhook; none of a code
 * several tenants share.
 */
export function addressableByAdmin(webhooks: readonly Pick<WebhookRow, 'id' | 'code' | 'tenant_kind'>[]): Set<number> {
  const byCode = new Map<string, Pick<WebhookRow, 'id' | 'code' | 'tenant_kind'>[]>();
  for (const webhook of webhooks) byCode.set(webhook.code, [...(byCode.get(webhook.code) ?? []), webhook]);
  const ids = new Set<number>();
  for (const group of byCode.values()) {
    const chosen = group.find((webhook) => webhook.tenant_kind === 'admin') ?? (group.length === 1 ? group[0] : undefined);
    if (chosen) ids.add(Number(chosen.id));
  }
  return ids;
}

/**
 * The webhook `code` in `marketplaceCode` that the principal may see; AppError not_found otherwise
 * (unknown marketplace, marketplace the principal may not use, another tenant's webhook).
 *
 * Admins see every tenant's webhooks. When several tenants use the same code in one marketplace,
 * the admins' own webhook wins; without one, a code used by exactly one tenant resolves to it, and
 * a code used by several is 409 `conflict` (the admin cannot tell which one is meant).
 */
export async function loadWebhookForPrincipal(db: Queryable, principal: Principal, marketplaceCode: string, code: string): Promise<WebhookRow> {
  await assertMarketplaceAccess(db, principal, marketplaceCode);
  if (principal.role === 'admin') {
    const { rows } = await db.query<WebhookRow>(
      `SELECT * FROM webhooks WHERE marketplace_code = $1 AND code = $2
        ORDER BY (tenant_kind = 'admin') DESC, id LIMIT 2`,
      [marketplaceCode, code],
    );
    const [first, second] = rows;
    if (!first) throw notFound(WEBHOOK_NOT_FOUND);
    if (first.tenant_kind !== 'admin' && second) {
      throw new AppError('conflict', 'Several tenants use this webhook code in this marketplace; an admin can address it only when one tenant does.');
    }
    return first;
  }
  const tenant = tenantOf(principal);
  const { rows } = await db.query<WebhookRow>(
    `SELECT * FROM webhooks WHERE tenant_kind = $1 AND tenant_id = $2 AND marketplace_code = $3 AND code = $4`,
    [tenant.kind, tenant.id, marketplaceCode, code],
  );
  if (!rows[0]) throw notFound(WEBHOOK_NOT_FOUND);
  return rows[0];
}
