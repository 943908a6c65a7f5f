import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { UserName } from '../accounts/user-name.js';
import { verifyAccessToken } from '../auth/access-tokens.js';
import { createLoginGuards } from '../auth/login-guards.js';
import { login } from '../auth/login.service.js';
import { GivenPassword } from '../auth/password-bounds.js';
import { originOf } from '../auth/request-origin.js';
import { logout } from '../auth/sessions.service.js';
import type { FeatureDeps } from '../deps.js';
import { credentialsBodyLimit, defaultBodyLimit } from '../http/body-limits.js';
import { AppError } from '../http/errors.js';
import { fieldErrors } from '../http/problem.js';
import { consumePortalLink } from './portal-links.repository.js';
import { assertCsrfToken, assertSameOrigin, pageHeadersFor } from './portal-security.js';
import { parseFrameAncestors } from '../settings/frame-ancestors.js';
import { createPortalSession, deletePortalSession, findPortalSession, type PortalSession } from './portal-sessions.js';
import { sendPage, sessionOf } from './portal-pages.js';
import { registerPortalAssets } from './portal-assets.js';
import { portalWebhookRoutes } from './portal-webhooks.routes.js';
import { portalDeliveryRoutes } from './portal-deliveries.routes.js';
import { portalHistoryRoutes } from './portal-history.routes.js';
import { portalMfaRoutes, secondFactorPage } from './portal-mfa.routes.js';
import { portalPasskeyRoutes } from './portal-passkeys.routes.js';
import type { TokenPair } from '../auth/token-pair.js';
import { linkPage, loginPage, marketplacesPage } from './views/auth-pages.js';
import { errorPage } from './views/error-page.js';
import { overviewPage } from './views/overview-page.js';
import { webhooksForSession } from './portal-webhook-list.js';

export const SESSION_COOKIE = 'plaza_portal';

/** The fields of the API's login, with its schemas: a name or password the API refuses is refused here too. */
const LoginForm = Type.Object({ username: UserName, password: GivenPassword });
const LinkForm = Type.Object({ token: Type.String({ maxLength: 100 }) });
const LinkParams = Type.Object({ token: Type.String({ pattern: '^[A-Za-z0-9_-]{1,100}$' }) });
const hide = { hide: true };

/**
 * The webhook portal at /portal: server-rendered pages (tagged templates) made interactive with
 * htmx, in the same process and origin as the API. Pages call the same services as the API with
 * the session's principal, so tenancy, validation and limits are the API's own.
 */
export const portalRoutes: FastifyPluginAsyncTypebox<FeatureDeps> = async (app, deps) => {
  const { db, clock, config, keys } = deps;
  await app.register(cookie);
  // Forms are read within the API's limits (body-limits.ts): BODY_LIMIT_BYTES lowers them too.
  await app.register(formbody, { bodyLimit: defaultBodyLimit(config) });
  const guards = createLoginGuards(deps);
  app.addHook('onClose', async () => guards.close());
  registerPortalAssets(app);

  const frameAncestors = parseFrameAncestors(config.PORTAL_FRAME_ANCESTORS);
  const pageHeaders = pageHeadersFor(frameAncestors);
  app.addHook('onRequest', async (request, reply) => {
    if (!request.url.startsWith('/portal/assets/')) reply.headers(pageHeaders);
  });
  app.setErrorHandler(async (error, request, reply) => {
    const appError = error instanceof AppError ? error : undefined;
    const validation = (error as { validation?: unknown }).validation !== undefined;
    const status = appError?.status ?? (validation ? 400 : ((error as { statusCode?: number }).statusCode ?? 500));
    if (status >= 500) request.log.error({ err: error }, 'portal page failed');
    // A refusal's headers go with its page as with the API's answer: the Retry-After of a 503 when
    // ARGON2_MAX_IN_PROGRESS password checks are in progress (a sign-in), of a 429.
    if (appError?.options.headers) reply.headers(appError.options.headers);
    const detail = appError?.detail ?? (validation ? 'The request is not valid.' : status >= 500 ? 'Something went wrong on our side; try again.' : (error as Error).message);
    return sendPage(reply, errorPage(status, detail, request.portalSession), status);
  });

  // Every page but sign-in needs a session; every write a same-origin request with the CSRF token.
  const requireSession = async (request: FastifyRequest, reply: FastifyReply) => {
    const cookieValue = request.cookies[SESSION_COOKIE];
    const session = cookieValue ? await findPortalSession(db, cookieValue, clock.now()) : undefined;
    if (!session) {
      if (request.method === 'GET') return reply.redirect('/portal/login', 303);
      throw new AppError('unauthorized', 'Your portal session has ended; sign in again.');
    }
    request.portalSession = session;
    if (request.method !== 'GET') {
      assertSameOrigin(request);
      assertCsrfToken(request, session);
    }
  };

  // Framed by a marketplace's site (PORTAL_FRAME_ANCESTORS), the portal is a third party there: a
  // Strict (or Lax) cookie is not sent in the frame, so the cookie is SameSite=None, which browsers
  // take only with Secure, and Partitioned (CHIPS: kept per top-level site, so browsers that block
  // third-party cookies still keep it, and another site that frames the portal gets none). Writes
  // stay guarded by the origin check and the CSRF token (portal-security.ts). Not framed: Strict.
  const framed = frameAncestors.length > 0;
  const cookieOptions = (request: FastifyRequest) => ({
    path: '/portal',
    httpOnly: true,
    ...(framed ? { sameSite: 'none' as const, secure: true, partitioned: true } : { sameSite: 'strict' as const, secure: request.protocol === 'https' }),
  });
  const startSession = (reply: FastifyReply, request: FastifyRequest, id: string) =>
    reply.setCookie(SESSION_COOKIE, id, { ...cookieOptions(request), maxAge: config.PORTAL_SESSION_TTL_SECONDS });

  /** After a sign-in that answered the login result: a portal session for it (the tokens stay here). */
  const startPasswordSession = async (request: FastifyRequest, reply: FastifyReply, pair: TokenPair) => {
    const principal = await verifyAccessToken(keys, config, pair.token, clock.now());
    const id = await createPortalSession(db, {
      userId: principal.userId,
      authSessionId: principal.sessionId,
      role: principal.role,
      sellerId: principal.sellerId,
      marketplaceCode: principal.marketplaceCode,
      scopeMarketplace: null,
      scopeSeller: null,
      portalLinkId: null,
      displayName: pair.user_name,
      now: clock.now(),
      ttlSeconds: config.PORTAL_SESSION_TTL_SECONDS,
    });
    startSession(reply, request, id);
  };

  app.get('/portal/login', { schema: hide }, async (_request, reply) => sendPage(reply, loginPage({})));

  app.post('/portal/login', { bodyLimit: credentialsBodyLimit(config), schema: { ...hide, body: LoginForm }, attachValidation: true }, async (request, reply) => {
    assertSameOrigin(request);
    const failed = request.validationError as (Error & { validation?: Parameters<typeof fieldErrors>[1] }) | undefined;
    if (failed) {
      // The API's bounds on both fields, each problem beside its field (not an error page).
      const body = (request.body ?? {}) as Record<string, unknown>;
      const username = typeof body.username === 'string' ? body.username : undefined;
      return sendPage(reply, loginPage({ username, errors: fieldErrors('body', failed.validation ?? []) }), 400);
    }
    const { username, password } = request.body;
    try {
      // The API's own login: the same limits, audit and password checks. The tokens stay here:
      // the browser gets only the portal cookie.
      const pair = await login(deps, guards, { username, password, origin: originOf(request) });
      await startPasswordSession(request, reply, pair);
      return reply.redirect('/portal', 303);
    } catch (error) {
      if (!(error instanceof AppError) || error.status >= 500) throw error;
      // The right password of a user with a second factor: the code (or the enrolment) comes next.
      const secondStep = await secondFactorPage(deps, error);
      if (secondStep) return sendPage(reply, secondStep);
      if (error.options.headers?.['retry-after']) reply.header('retry-after', error.options.headers['retry-after']);
      return sendPage(reply, loginPage({ username, error: error.detail }), error.status);
    }
  });

  // GET only shows a button: link previews and scanners that fetch the URL do not use it up.
  app.get('/portal/link/:token', { schema: { ...hide, params: LinkParams } }, async (request, reply) => sendPage(reply, linkPage(request.params.token)));

  app.post('/portal/link', { bodyLimit: credentialsBodyLimit(config), schema: { ...hide, body: LinkForm } }, async (request, reply) => {
    assertSameOrigin(request);
    const now = clock.now();
    const opened = await db.transaction(async (tx) => {
      const link = await consumePortalLink(tx, request.body.token, now);
      if (!link) return undefined;
      const id = await createPortalSession(tx, {
        userId: link.createdBy.userId ?? null,
        apiKeyId: link.createdBy.apiKeyId,
        authSessionId: null,
        // The session acts as the link's maker (a user, or an API key), confined to the link's scope:
        // never as the seller it names, whose own rights the maker may not have (portal-access.ts).
        role: link.maker.role,
        sellerId: link.maker.sellerId,
        marketplaceCode: link.maker.marketplaceCode,
        scopeMarketplace: link.marketplaceCode,
        scopeSeller: link.sellerId,
        portalLinkId: link.id,
        displayName: link.sellerId === null ? `marketplace ${link.marketplaceCode}` : `seller ${link.sellerId} on ${link.marketplaceCode}`,
        now,
        ttlSeconds: config.PORTAL_SESSION_TTL_SECONDS,
      });
      return { id, marketplaceCode: link.marketplaceCode };
    });
    if (!opened) return sendPage(reply, linkPage(null), 410);
    startSession(reply, request, opened.id);
    return reply.redirect(`/portal/${encodeURIComponent(opened.marketplaceCode)}/webhooks`, 303);
  });

  app.post('/portal/logout', { schema: hide, preHandler: requireSession }, async (request, reply) => {
    const session = sessionOf(request);
    const authSessionId = await deletePortalSession(db, request.cookies[SESSION_COOKIE]!);
    // A portal session is always a user's (it began with a login), never an API key's.
    if (authSessionId && session.principal.apiKeyId === undefined) await logout(db, session.principal, originOf(request), clock.now());
    reply.clearCookie(SESSION_COOKIE, cookieOptions(request));
    return reply.redirect('/portal/login', 303);
  });

  app.get('/portal', { schema: hide, preHandler: requireSession }, async (request, reply) => {
    const session = sessionOf(request);
    const marketplaces = await marketplacesOf(deps, session);
    if (marketplaces.length === 1) return reply.redirect(`/portal/${encodeURIComponent(marketplaces[0]!)}/webhooks`, 303);
    return sendPage(reply, marketplacesPage(session, marketplaces));
  });

  // One page for a seller on many marketplaces: each marketplace the session may open, with its
  // webhooks as that marketplace's list has them. A link's session has its one marketplace.
  app.get('/portal/overview', { schema: hide, preHandler: requireSession }, async (request, reply) => {
    const session = sessionOf(request);
    const sections = [];
    for (const marketplaceCode of await marketplacesOf(deps, session)) {
      try {
        sections.push({ marketplaceCode, list: await webhooksForSession(db, keys.webhookSecretsKey, session, marketplaceCode) });
      } catch (error) {
        // Gone between the two reads (a connection removed): not listed, as it would not be now.
        if (error instanceof AppError && error.status === 404) continue;
        throw error;
      }
    }
    return sendPage(reply, overviewPage({ signedInAs: session.displayName, csrfToken: session.csrfToken }, sections));
  });

  await app.register(portalWebhookRoutes, { ...deps, requireSession });
  await app.register(portalDeliveryRoutes, { ...deps, requireSession });
  await app.register(portalHistoryRoutes, { ...deps, requireSession });
  await app.register(portalMfaRoutes, { ...deps, requireSession, guards, startPasswordSession });
  await app.register(portalPasskeyRoutes, { ...deps, requireSession, guards, startPasswordSession });
};

/** The marketplaces a session may open, by code. */
async function marketplacesOf({ db }: FeatureDeps, session: PortalSession): Promise<string[]> {
  if (session.scopeMarketplace) return [session.scopeMarketplace];
  const { principal } = session;
  if (principal.role === 'marketplace') return principal.marketplaceCode ? [principal.marketplaceCode] : [];
  const { rows } = principal.role === 'admin'
    ? await db.query<{ code: string }>(`SELECT code FROM marketplaces ORDER BY code`)
    : await db.query<{ code: string }>(`SELECT DISTINCT marketplace_code AS code FROM marketplace_connections WHERE seller_id = $1 ORDER BY 1`, [principal.sellerId]);
  return rows.map((row) => row.code);
}
