import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import type { FeatureDeps } from '../deps.js';
import { authenticate } from '../auth/authenticate.js';
import { principalOf } from '../http/principal.js';
import { AppError, notFound } from '../http/errors.js';
import { problemResponses, responseHeaders } from '../http/openapi.js';
import { takeTenantLimit } from '../http/tenant-rate-limit.js';
import { loadWebhookForPrincipal } from '../webhooks/webhook-access.js';
import { assertMarketplaceAccess, tenantOf } from '../webhooks/webhook-access.js';
import { deliveryHistory } from './history/delivery-history.js';
import {
  attemptItem,
  DEFAULT_PAGE_SIZE,
  DeliveryDetail,
  DeliveryItem,
  deliveryItem,
  DeliveryPage,
  DeliveryParams,
  EventDeliveries,
  EventDeliveriesParams,
  EventDeliveriesQuery,
  ListQuery,
  ReplayBody,
  ReplayResult,
  WebhookParams,
} from './deliveries.schemas.js';
import type { Static } from 'typebox';
import { withNotification } from './notification-json.js';
import { nextPageLink } from '../http/pagination.js';
import { apiActor } from '../webhooks/webhook-history.js';

export const deliveryRoutes: FastifyPluginAsyncTypebox<FeatureDeps> = async (app, deps) => {
  const { db } = deps;
  const history = deliveryHistory(deps);
  const auth = authenticate(deps);
  const webhookOf = (request: FastifyRequest, params: { marketplace_code: string; code: string }) =>
    loadWebhookForPrincipal(db, principalOf(request), params.marketplace_code, params.code);

  app.get(
    '/v1/:marketplace_code/webhooks/:code/deliveries',
    {
      onRequest: auth,
      schema: {
        operationId: 'listDeliveries',
        tags: ['deliveries'],
        summary: 'List a webhook\'s deliveries, newest first',
        security: [{ bearerAuth: [] }],
        params: WebhookParams,
        querystring: ListQuery,
        response: { 200: responseHeaders(DeliveryPage, 'Link'), ...problemResponses(400, 401, 404, 409) },
      },
    },
    async (request, reply) => {
      const webhook = await webhookOf(request, request.params);
      const { status, since, until, cursor } = request.query;
      const { rows, next } = await history.list(
        webhook,
        {
          statuses: status === undefined ? undefined : [status],
          since: since === undefined ? undefined : new Date(since),
          until: until === undefined ? undefined : new Date(until),
          eventId: request.query.event_id,
          entityId: request.query.entity_id,
          topic: request.query.topic,
        },
        { limit: request.query.limit ?? DEFAULT_PAGE_SIZE, cursor },
      );
      if (next) reply.header('link', nextPageLink(request, next));
      return { items: rows.map(deliveryItem), next_cursor: next };
    },
  );

  app.get(
    '/v1/:marketplace_code/webhooks/:code/deliveries/:id',
    {
      onRequest: auth,
      schema: {
        operationId: 'getDelivery',
        tags: ['deliveries'],
        summary: 'One delivery with each of its attempts',
        security: [{ bearerAuth: [] }],
        params: DeliveryParams,
        response: { 200: DeliveryDetail, ...problemResponses(400, 401, 404, 409) },
      },
    },
    async (request, reply) => {
      const webhook = await webhookOf(request, request.params);
      const { delivery, attempts, notification } = await history.withAttempts(webhook, request.params.id);
      const { attempts: count, ...rest } = deliveryItem(delivery);
      const fields: Omit<Static<typeof DeliveryDetail>, 'notification'> = { ...rest, attempt_count: count, attempts: attempts.map(attemptItem) };
      // Written by hand (DeliveryDetail documents it), as the feed's items: the body goes out byte for byte.
      return reply.type('application/json; charset=utf-8').send(withNotification(fields, notification) as never);
    },
  );

  app.post(
    '/v1/:marketplace_code/webhooks/:code/deliveries/:id/retry',
    {
      // The tenant's limit before the body is read (tenant-rate-limit.ts).
      onRequest: [auth, takeTenantLimit(deps.tenantRateLimits, 'retry')],
      schema: {
        operationId: 'retryDelivery',
        tags: ['deliveries'],
        summary: 'Send a delivery again now',
        description: 'Allowed from `pending`, `failed` and `succeeded`; `delivering` and `held` (its webhook is paused: resuming sends it) are 409. The delivery becomes pending and due now; its webhook-id stays the same.',
        security: [{ bearerAuth: [] }],
        params: DeliveryParams,
        response: { 202: DeliveryItem, ...problemResponses(400, 401, 404, 409, 429) },
      },
    },
    async (request, reply) => {
      const webhook = await webhookOf(request, request.params);
      await history.retry(webhook, request.params.id, apiActor(principalOf(request)));
      return reply.code(202).send(deliveryItem(await history.get(webhook, request.params.id)));
    },
  );

  app.post(
    '/v1/:marketplace_code/webhooks/:code/replay',
    {
      onRequest: [auth, takeTenantLimit(deps.tenantRateLimits, 'replay')],
      schema: {
        operationId: 'replayDeliveries',
        tags: ['deliveries'],
        summary: 'Replay the deliveries that match a filter',
        description: `Sends again the webhook's finished deliveries that match every given filter: \`status\` (default failed), a time window \`since\`–\`until\` on creation (at most DELIVERY_REPLAY_MAX_DAYS, default 14, days back; that is also the default start), \`topic\`, \`entity_id\`, \`event_id\`. \`dry_run: true\` answers the count (200) and sends nothing. Replayed deliveries keep their webhook-id and are paced: DELIVERY_REPLAY_RATE_PER_SECOND become due per second, oldest first. More than DELIVERY_REPLAY_MAX_DELIVERIES matches are refused (400).`,
        security: [{ bearerAuth: [] }],
        params: WebhookParams,
        body: ReplayBody,
        response: { 200: ReplayResult, 202: ReplayResult, ...problemResponses(400, 401, 404, 409, 429) },
      },
    },
    async (request, reply) => {
      const webhook = await webhookOf(request, request.params);
      const { body } = request;
      const dryRun = body.dry_run ?? false;
      const outcome = await history.replay(
        webhook,
        {
          statuses: body.status,
          since: body.since === undefined ? undefined : new Date(body.since),
          until: body.until === undefined ? undefined : new Date(body.until),
          eventId: body.event_id,
          entityId: body.entity_id,
          topic: body.topic,
          dryRun,
        },
        apiActor(principalOf(request)),
      );
      return reply.code(dryRun ? 200 : 202).send({ ...outcome, dry_run: dryRun });
    },
  );

  app.get(
    '/v1/:marketplace_code/events/:event_id/deliveries',
    {
      preValidation: auth,
      schema: {
        tags: ['deliveries'],
        operationId: 'getEventDeliveries',
        summary: 'One event across your webhooks',
        description: 'The event (by the event_id given or generated at intake) and its delivery to each of your webhooks it matched (admins: every tenant\'s). 404 when it reached none of them.',
        security: [{ bearerAuth: [] }],
        params: EventDeliveriesParams,
        querystring: EventDeliveriesQuery,
        response: { 200: EventDeliveries, ...problemResponses(400, 401, 404, 409) },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const { marketplace_code: marketplaceCode, event_id: eventId } = request.params;
      await assertMarketplaceAccess(db, principal, marketplaceCode);
      const view = await history.ofEvent(marketplaceCode, eventId, principal.role === 'admin' ? undefined : tenantOf(principal), request.query.seller_id);
      if (!view) throw notFound('No delivery of this event to your webhooks exists.');
      if ('sellers' in view) throw new AppError('conflict', `This event_id names events of sellers ${view.sellers.join(', ')}; choose one with ?seller_id=.`);
      return {
        event_id: view.event_id,
        seller_id: view.seller_id,
        topic: view.topic,
        entity_id: view.entity_id,
        created_at: new Date(view.created_at).toISOString(),
        deliveries: view.deliveries.map((row) => ({ webhook_code: row.webhook_code, ...deliveryItem(row) })),
      };
    },
  );
};
