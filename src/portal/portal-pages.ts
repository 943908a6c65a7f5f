import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FeatureDeps } from '../deps.js';
import type { Queryable } from '../db/database.js';
import { AppError, notFound } from '../http/errors.js';
import type { TenantAction } from '../http/tenant-rate-limit.js';
import { loadWebhookForPrincipal } from '../webhooks/webhook-access.js';
import type { Html } from './html.js';
import { assertWebhookInScope } from './portal-access.js';
import type { PortalSession } from './portal-sessions.js';
import type { PageContext } from './views/layout.js';

// What the portal's route files share: answering a page, the session of a request, the scope
// checks. In a module of its own, so that portal.routes.ts, which registers those route files,
// is not imported back by them (an import cycle).

declare module 'fastify' {
  interface FastifyRequest {
    portalSession?: PortalSession;
  }
}

export function sendPage(reply: FastifyReply, body: Html, status = 200) {
  return reply.code(status).type('text/html; charset=utf-8').send(body.text);
}

/**
 * Takes one unit of the API's per-tenant limit on `action` for the session's tenant: the portal's
 * retry, replay and test share the API's budget (a portal session is no way around it). Answers the
 * refusal (429 rate_limited, with Retry-After) for the route to show on its page, or undefined.
 */
export function refusedByTenantLimit(deps: Pick<FeatureDeps, 'tenantRateLimits'>, session: PortalSession, action: TenantAction): AppError | undefined {
  try {
    deps.tenantRateLimits.take(session.principal, action);
    return undefined;
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
}

/** A page with a refusal's status and headers (Retry-After). */
export function sendRefusal(reply: FastifyReply, refusal: AppError, body: Html) {
  return sendPage(reply.headers(refusal.options.headers ?? {}), body, refusal.status);
}

/** The session of a portal route behind `requireSession`. */
export function sessionOf(request: FastifyRequest): PortalSession {
  if (!request.portalSession) throw new AppError('unauthorized');
  return request.portalSession;
}

/** A portal-link session sees one marketplace; any other is "not found", like another tenant's. */
export function assertInScope(session: PortalSession, marketplaceCode: string): void {
  if (session.scopeMarketplace !== null && session.scopeMarketplace !== marketplaceCode) throw notFound('No such marketplace is available to you.');
}

/**
 * A webhook the session may manage: one the API lets its principal address (for a link, the
 * link's maker), inside the link's scope; 404 otherwise, as in the API. Every portal page and form
 * of one webhook goes through here (src/portal/portal-access.ts).
 */
export async function loadScopedWebhook(db: Queryable, session: PortalSession, params: { marketplace_code: string; code: string }) {
  assertInScope(session, params.marketplace_code);
  return assertWebhookInScope(session, await loadWebhookForPrincipal(db, session.principal, params.marketplace_code, params.code));
}

export type PortalDeps = FeatureDeps & { requireSession: (request: FastifyRequest, reply: FastifyReply) => Promise<unknown> };

/** What every portal page's layout shows: who is signed in, the form token, the marketplace. */
export function pageContext(session: PortalSession, marketplaceCode: string): PageContext {
  return { signedInAs: session.displayName, csrfToken: session.csrfToken, marketplaceCode };
}
