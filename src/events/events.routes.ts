import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FeatureDeps } from '../deps.js';
import { authenticate, tenantDeactivated } from '../auth/authenticate.js';
import { principalOf } from '../http/principal.js';
import { eventBodyLimit } from '../http/body-limits.js';
import { problemResponses } from '../http/openapi.js';
import { takeTenantLimit } from '../http/tenant-rate-limit.js';
import { requestSpan } from '../http/request-spans.js';
import { acceptEvent, assertMaySendFor } from './accept-event.js';
import { parseJsonKeepingNumbersExact, refuseInexactNumbers } from './exact-numbers.js';
import { EventAccepted, EventBody, MarketplaceParams } from './event-schema.js';

export const eventRoutes: FastifyPluginAsyncTypebox<FeatureDeps> = async (app, deps) => {
  parseJsonKeepingNumbersExact(app);
  const intake = { db: deps.db, clock: deps.clock, tenantRateLimits: deps.tenantRateLimits, skipUnchanged: deps.config.SKIP_UNCHANGED_EVENTS };
  app.post(
    '/v1/:marketplace_code/events',
    {
      // Authentication and the tenant's limit before the body is read: an anonymous caller, or one
      // past its limit, costs no reading or parsing, and learns nothing about the body rules.
      // The tenant's state is read with the intake's checks, in their statement (readIntakeChecks):
      // a round trip fewer for every event, and a deactivated tenant's body is parsed and validated
      // before its 401, as the webhook list's query string is.
      onRequest: [authenticate(deps, { tenantStateReadByRoute: true }), takeTenantLimit(deps.tenantRateLimits, 'events')],
      bodyLimit: eventBodyLimit(deps.config),
      // The number check runs after authentication too (see exact-numbers.ts).
      preValidation: refuseInexactNumbers,
      schema: {
        operationId: 'postEvent',
        tags: ['events'],
        summary: 'Accept an event and queue its notifications',
        description:
          'Stores the event and one delivery per matching webhook in one transaction (docs/events.md). ' +
          'event_id is an idempotency key of the producer (the seller the event is for, in this marketplace): the same event again returns the first answer; another event of that seller with the same key is 409. ' +
          'A publication/update or order/update whose entity equals the last one accepted creates no deliveries and answers `"unchanged": true` (SKIP_UNCHANGED_EVENTS). ' +
          'Left out, `changes` (publication/update) and `state_from` (order topics) are computed from the last accepted event of the entity. ' +
          'A deactivated seller or marketplace takes no events: 409 `tenant_inactive`. ' +
          'Each tenant has an event rate and an event storage budget (bytes of notification bodies per hour); past either, 429 `rate_limited` with Retry-After.',
        security: [{ bearerAuth: [] }],
        params: MarketplaceParams,
        body: EventBody,
        response: { 202: EventAccepted, ...problemResponses(400, 401, 403, 404, 409, 413, 415, 429) },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const { marketplace_code: marketplaceCode } = request.params;
      assertMaySendFor(principal, request.body.seller_id);
      const accepted = await acceptEvent(intake, principal, marketplaceCode, request.body, {
        parent: requestSpan(request),
        inactiveTenant: () => tenantDeactivated(request, principal.role),
      });
      return reply.code(202).send(accepted);
    },
  );
};
