import { notFound } from '../http/errors.js';
import type { WebhookRow } from '../webhooks/webhook-access.js';
import type { PortalSession } from './portal-sessions.js';

/**
 * What a portal session may do: a portal session never grants more than the API grants the
 * credential that made it. A session acts as its principal (the signed-in user, or a link's maker),
 * and the API's own rule decides (src/webhooks/webhook-access.ts, loadWebhookForPrincipal); a
 * link's scope only narrows that, never widens it:
 *
 * - a link made for seller S: the webhooks about S, that is, S's own webhooks (only when the maker
 *   may manage them through the API: admins) and the maker's webhooks for S alone (`seller_id` S; a
 *   webhook for every seller is not confined to S, so it is not in the scope);
 * - a link made without a seller: the maker's webhooks in the marketplace, sellers' own excepted.
 *
 * A seller's own webhooks that the maker may not manage (a marketplace's link for S) are listed
 * read-only, header values masked, and nothing else: their pages answer 404, as the API does.
 */
export function inLinkScope(session: Pick<PortalSession, 'scopeMarketplace' | 'scopeSeller'>, webhook: Pick<WebhookRow, 'marketplace_code' | 'tenant_kind' | 'tenant_id' | 'seller_id'>): boolean {
  if (session.scopeMarketplace === null) return true;
  if (webhook.marketplace_code !== session.scopeMarketplace) return false;
  if (session.scopeSeller === null) return webhook.tenant_kind !== 'seller';
  const seller = String(session.scopeSeller);
  return webhook.tenant_kind === 'seller' ? webhook.tenant_id === seller : webhook.seller_id === seller;
}

/** The webhook, already one the session's principal may address through the API, if in the scope; 404 otherwise. */
export function assertWebhookInScope<T extends WebhookRow>(session: PortalSession, webhook: T): T {
  if (!inLinkScope(session, webhook)) throw notFound('The webhook does not exist.');
  return webhook;
}

/**
 * The seller a webhook created or edited in the session is for: a link for seller S keeps every
 * webhook it touches about S (a form cannot move one out of the scope, or to every seller); other
 * sessions take the form's value.
 */
export function sellerIdForForm(session: PortalSession, submitted: string | undefined, existing?: Pick<WebhookRow, 'seller_id'>): string {
  if (session.scopeSeller !== null) return existing ? existing.seller_id : String(session.scopeSeller);
  return submitted?.trim() || '*';
}

/** Whether the form may change the seller a webhook is for (not for seller users, nor inside a seller's link). */
export function sellerEditable(session: PortalSession): boolean {
  return session.principal.role !== 'seller' && session.scopeSeller === null;
}

/**
 * A link for seller S made by a credential that may not manage S's own webhooks (a marketplace):
 * the session lists them read-only, header values masked; this is that seller, or undefined.
 */
export function readOnlySellerOf(session: PortalSession): number | undefined {
  return session.scopeSeller !== null && session.principal.role !== 'admin' ? session.scopeSeller : undefined;
}
