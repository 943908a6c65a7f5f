import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { FeatureDeps } from '../deps.js';
import { authenticate, refuseIfUserGone } from '../auth/authenticate.js';
import { principalOf } from '../http/principal.js';
import { AppError, invalidField } from '../http/errors.js';
import { problemResponses } from '../http/openapi.js';
import { ID_TEXT_PATTERN, idFromText, MarketplaceParams, MAX_INT32 } from '../http/path-params.js';
import { assertMarketplaceAccess } from '../webhooks/webhook-access.js';
import { isSellerConnected } from '../webhooks/webhooks.repository.js';
import { insertPortalLink } from './portal-links.repository.js';

const PortalLinkBody = Type.Object(
  {
    seller_id: Type.Optional(
      Type.Union([Type.Integer({ minimum: 1, maximum: MAX_INT32 }), Type.String({ pattern: ID_TEXT_PATTERN })], {
        description: 'The seller the portal session is confined to: the caller\'s webhooks for that seller alone (and, for an admin, the seller\'s own webhooks; a marketplace\'s link lists those read-only, header values masked). Left out: the caller\'s webhooks in the marketplace, sellers\' own excepted.',
        examples: [42],
      }),
    ),
  },
  { additionalProperties: false },
);

const PortalLink = Type.Object({
  id: Type.Integer({ description: 'The link\'s number: the webhook history names it (actor.portal_link_id) beside its maker for every change made in its session.' }),
  url: Type.String({ description: 'One-time URL that opens a portal session acting as the caller, limited to the scope. Open it in a new tab or window, or in a frame of a site whose origin PORTAL_FRAME_ANCESTORS lists (by default the portal refuses to be framed).' }),
  expires_at: Type.String({ format: 'date-time', description: 'The link is refused after this (PORTAL_LINK_TTL_SECONDS, 15 minutes by default) and after its first use.' }),
  marketplace_code: Type.String(),
  seller_id: Type.Union([Type.Integer(), Type.Null()], { description: 'The seller of the scope, or null (no seller).' }),
});

/**
 * POST /v1/{marketplace_code}/portal-links: a marketplace (for its own marketplace) or an admin
 * hands a seller, or its own staff, a sign-in-free way into the portal, for embedding the portal
 * in the marketplace's admin pages. The link carries no credentials of the caller.
 */
export const portalLinkRoutes: FastifyPluginAsyncTypebox<FeatureDeps> = async (app, deps) => {
  const { db, clock, config } = deps;
  app.post(
    '/v1/:marketplace_code/portal-links',
    {
      onRequest: authenticate(deps),
      schema: {
        tags: ['portal'],
        operationId: 'createPortalLink',
        summary: 'Create a one-time portal link',
        description: 'Marketplace users (their own marketplace) and admins, or their API keys (a `marketplace` key for its own marketplace, an `admin` key): sellers and seller keys get 403, another marketplace\'s user or key 404. The session acts as the caller (the user, or the key) and never gets more than the caller gets through the API: with `seller_id` (a seller connected to the marketplace), the caller\'s webhooks for that seller; without, the caller\'s webhooks in the marketplace. A key\'s link session ends when the key is revoked or expires.',
        security: [{ bearerAuth: [] }],
        params: MarketplaceParams,
        body: PortalLinkBody,
        response: { 201: PortalLink, ...problemResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const { marketplace_code: marketplaceCode } = request.params;
      // A link's session manages webhooks as its maker: a seller (user or key) has its own sign-in and
      // makes none. A marketplace's or an admin's API key may, and the session then acts as that key.
      if (principal.role === 'seller') throw new AppError('forbidden', 'Only marketplace users and admins, and their API keys, create portal links.');
      // Another marketplace's key or user: 404, as for every route of a marketplace it cannot see.
      await assertMarketplaceAccess(db, principal, marketplaceCode);
      const given = request.body.seller_id;
      // The schema bounds the number and the text's form; the text's value (up to ten digits) only here.
      const sellerId = given === undefined ? null : typeof given === 'number' ? given : idFromText(given);
      if (sellerId === undefined) throw invalidField('body.seller_id', `must be at most ${MAX_INT32}`);
      if (sellerId !== null && !(await isSellerConnected(db, String(sellerId), marketplaceCode))) {
        throw new AppError('validation_failed', `body.seller_id: seller ${sellerId} is not connected to marketplace ${marketplaceCode}`, {
          errors: [{ field: 'body.seller_id', message: `is not connected to marketplace ${marketplaceCode}` }],
        });
      }
      // The link records its maker (portal_links.created_by, or created_by_api_key): its session acts as it.
      const maker = principal.apiKeyId !== undefined ? { apiKeyId: principal.apiKeyId } : { userId: principal.userId };
      const { id, token, expiresAt } = await insertPortalLink(db, { marketplaceCode, sellerId }, maker, clock.now(), config.PORTAL_LINK_TTL_SECONDS).catch(
        refuseIfUserGone('portal_links_created_by_fkey'),
      );
      // The request's own origin unless configured: the caller gets back what it asked for, so a
      // forged Host header only misleads the one who forged it.
      const base = config.PORTAL_PUBLIC_URL?.replace(/\/+$/, '') ?? `${request.protocol}://${request.host}`;
      reply.code(201).header('cache-control', 'no-store');
      return { id, url: `${base}/portal/link/${token}`, expires_at: expiresAt.toISOString(), marketplace_code: marketplaceCode, seller_id: sellerId };
    },
  );
};
