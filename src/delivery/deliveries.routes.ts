import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import type { FeatureDeps } from '../deps.js';
import { authenticate, principalOf } from '../auth/authenticate.js';
import { AppError, invalidField, notFound } from '../http/errors.js';
import { problemResponses } from '../http/openapi.js';
import { loadWebhookForPrincipal } from '../webhooks/webhook-access.js';
import { clockOffsetMs } from './database-clock.js';
import { findDelivery, listAttempts, listDeliveries, notifyDeliveryWorkers, requeueDelivery, requeueFailedSince } from './deliveries.repository.js';
import { decodeCursor, encodeCursor } from './delivery-cursor.js';
import {
  attemptItem,
  DEFAULT_PAGE_SIZE,
  DeliveryDetail,
  DeliveryItem,
  deliveryItem,
  DeliveryPage,
  DeliveryParams,
  ListQuery,
  ReplayBody,
  ReplayResult,
  WebhookParams,
} from './deliveries.schemas.js';
import { nextPageLink } from '../http/pagination.js';

const DELIVERY_NOT_FOUND = 'The delivery does not exist for this webhook.';

export const deliveryRoutes: FastifyPluginAsyncTypebox<FeatureDeps> = async (app, deps) => {
  const { db, clock, config } = deps;
  const auth = authenticate(deps);
  const webhookOf = (request: FastifyRequest, params: { marketplace_code: string; code: string }) =>
    loadWebhookForPrincipal(db, principalOf(request), params.marketplace_code, params.code);

  app.get(
    '/v1/:marketplace_code/webhooks/:code/deliveries',
    {
      preValidation: auth,
      schema: {
        tags: ['deliveries'],
        summary: 'List a webhook\'s deliveries, newest first',
        security: [{ bearerAuth: [] }],
        params: WebhookParams,
        querystring: ListQuery,
        response: { 200: DeliveryPage, ...problemResponses(400, 401, 404, 409) },
      },
    },
    async (request, reply) => {
      const webhook = await webhookOf(request, request.params);
      const { status, since, until, cursor } = request.query;
      const limit = request.query.limit ?? DEFAULT_PAGE_SIZE;
      const after = cursor === undefined ? undefined : decodeCursor(cursor);
      if (cursor !== undefined && !after) throw invalidField('query.cursor', 'is not a cursor returned by this endpoint');
      const rows = await listDeliveries(db, webhook.id, {
        status,
        since: since === undefined ? undefined : new Date(since),
        until: until === undefined ? undefined : new Date(until),
        after,
        limit,
      });
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      const next = rows.length > limit && last ? encodeCursor({ createdMicros: Number(last.created_micros), id: Number(last.id) }) : null;
      if (next) reply.header('link', nextPageLink(request, next));
      return { items: page.map(deliveryItem), next_cursor: next };
    },
  );

  app.get(
    '/v1/:marketplace_code/webhooks/:code/deliveries/:id',
    {
      preValidation: auth,
      schema: {
        tags: ['deliveries'],
        summary: 'One delivery with each of its attempts',
        security: [{ bearerAuth: [] }],
        params: DeliveryParams,
        response: { 200: DeliveryDetail, ...problemResponses(400, 401, 404, 409) },
      },
    },
    async (request) => {
      const webhook = await webhookOf(request, request.params);
      const delivery = await findDelivery(db, webhook.id, request.params.id);
      if (!delivery) throw notFound(DELIVERY_NOT_FOUND);
      const { attempts, ...rest } = deliveryItem(delivery);
      const history = await listAttempts(db, delivery.id);
      return { ...rest, attempt_count: attempts, attempts: history.map(attemptItem) };
    },
  );

  app.post(
    '/v1/:marketplace_code/webhooks/:code/deliveries/:id/retry',
    {
      preValidation: auth,
      schema: {
        tags: ['deliveries'],
        summary: 'Send a delivery again now',
        description: 'Allowed in every status but `delivering` (409). The delivery becomes pending and due now; its webhook-id stays the same.',
        security: [{ bearerAuth: [] }],
        params: DeliveryParams,
        response: { 202: DeliveryItem, ...problemResponses(400, 401, 404, 409) },
      },
    },
    async (request, reply) => {
      const webhook = await webhookOf(request, request.params);
      const outcome = await db.transaction(async (tx) => {
        const result = await requeueDelivery(tx, webhook.id, request.params.id, clockOffsetMs(clock));
        if (result === 'queued') await notifyDeliveryWorkers(tx);
        return result;
      });
      if (outcome === 'not_found') throw notFound(DELIVERY_NOT_FOUND);
      if (outcome === 'delivering') throw new AppError('conflict', 'The delivery is being sent right now; retry once this attempt has finished.');
      const delivery = await findDelivery(db, webhook.id, request.params.id);
      if (!delivery) throw notFound(DELIVERY_NOT_FOUND);
      return reply.code(202).send(deliveryItem(delivery));
    },
  );

  app.post(
    '/v1/:marketplace_code/webhooks/:code/replay',
    {
      preValidation: auth,
      schema: {
        tags: ['deliveries'],
        summary: 'Send again the failed deliveries since a time',
        description: `Requeues the webhook's deliveries in status failed that were created at or after \`since\` (at most DELIVERY_REPLAY_MAX_DAYS, default 14, days back).`,
        security: [{ bearerAuth: [] }],
        params: WebhookParams,
        body: ReplayBody,
        response: { 202: ReplayResult, ...problemResponses(400, 401, 404, 409) },
      },
    },
    async (request, reply) => {
      const webhook = await webhookOf(request, request.params);
      const now = clock.now();
      const since = new Date(request.body.since);
      const earliest = now.getTime() - config.DELIVERY_REPLAY_MAX_DAYS * 86_400_000;
      if (since.getTime() < earliest) throw invalidField('body.since', `must be at most ${config.DELIVERY_REPLAY_MAX_DAYS} days back`);
      const replayed = await db.transaction(async (tx) => {
        const count = await requeueFailedSince(tx, webhook.id, since, clockOffsetMs(clock));
        if (count > 0) await notifyDeliveryWorkers(tx);
        return count;
      });
      return reply.code(202).send({ replayed });
    },
  );
};
