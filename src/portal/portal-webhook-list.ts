import type { Queryable } from '../db/database.js';
import { withOpenHeaders } from '../keys/header-box.js';
import { countHeldByWebhook } from '../webhooks/deliveries.repository.js';
import { addressableByAdmin, assertMarketplaceAccess, tenantOf, type WebhookRow } from '../webhooks/webhook-access.js';
import { listWebhooks } from '../webhooks/webhooks.repository.js';
import { inLinkScope, readOnlySellerOf } from './portal-access.js';
import type { PortalSession } from './portal-sessions.js';

/** A session's webhooks in one marketplace, as its list page and the overview show them. */
export interface SessionWebhooks {
  rows: WebhookRow[];
  /** Held deliveries per webhook id. */
  held: Map<number, number>;
  /** For an admin, the webhooks it can open by code (addressableByAdmin); undefined: all. */
  openable: ReadonlySet<number> | undefined;
  /** A seller's own webhooks the session may only see (portal-access.ts), header values to be masked. */
  readOnly: { sellerId: number; webhooks: WebhookRow[] } | undefined;
}

/**
 * The webhooks of one marketplace that a session lists: the API's list for the session's
 * principal (its marketplace access first: 404 otherwise), then the link's scope, the same rule as
 * each webhook's page (portal-access.ts). The list page and the overview both read it here, so
 * neither shows what the other would not, nor more than the API grants the same credential.
 */
export async function webhooksForSession(db: Queryable, secretsKey: Buffer, session: PortalSession, marketplaceCode: string): Promise<SessionWebhooks> {
  await assertMarketplaceAccess(db, session.principal, marketplaceCode);
  const linkScope = session.scopeMarketplace === null ? undefined : { sellerId: session.scopeSeller === null ? null : String(session.scopeSeller) };
  const listed = await listWebhooks(db, { tenant: session.principal.role === 'admin' ? undefined : tenantOf(session.principal), marketplaceCode, limit: 100, linkScope });
  const rows = listed.rows.filter((row) => inLinkScope(session, row));
  const held = await countHeldByWebhook(db, rows.map((row) => Number(row.id)));
  // An admin addresses webhooks by code across every tenant of the marketplace, in a link's scope or
  // not: of those in the list, the ones it can open (loadWebhookForPrincipal's rule).
  const everyTenant = session.principal.role !== 'admin' ? undefined : linkScope ? await sameCodes(db, marketplaceCode, rows) : listed.rows;
  const openable = everyTenant && addressableByAdmin(everyTenant);
  const readOnlySeller = readOnlySellerOf(session);
  const readOnly = readOnlySeller === undefined
    ? undefined
    : { sellerId: readOnlySeller, webhooks: (await listWebhooks(db, { tenant: { kind: 'seller', id: String(readOnlySeller) }, marketplaceCode, limit: 100 })).rows.map((row) => withOpenHeaders(secretsKey, row)) }; // names shown, values masked
  return { rows, held, openable, readOnly };
}

/** Every webhook in the marketplace with one of these rows' codes, whoever owns it. */
async function sameCodes(db: Queryable, marketplaceCode: string, rows: WebhookRow[]) {
  return (await db.query<Pick<WebhookRow, 'id' | 'code' | 'tenant_kind'>>(
    `SELECT id, code, tenant_kind FROM webhooks WHERE marketplace_code = $1 AND code = ANY($2::text[])`,
    [marketplaceCode, rows.map((row) => row.code)],
  )).rows;
}
