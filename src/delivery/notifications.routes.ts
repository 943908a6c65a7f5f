import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FeatureDeps } from '../deps.js';
import { authenticate } from '../auth/authenticate.js';
import { principalOf } from '../http/principal.js';
import { problemResponses } from '../http/openapi.js';
import { loadWebhookForPrincipal } from '../webhooks/webhook-access.js';
import { FeedWaiters } from './history/feed-waiters.js';
import { notificationFeed } from './history/notification-feed.js';
import type { FeedRow } from './history/notification-feed.repository.js';
import { withNotification } from './notification-json.js';
import { FEED_DEFAULT_PAGE_SIZE, FeedPageSchema, FeedParams, FeedQuery } from './notifications.schemas.js';

/** The item as JSON text, the body spliced in as stored (withNotification). */
function itemJson(row: FeedRow): string {
  return withNotification({
    webhook_id: row.message_id,
    created_at: new Date(row.created_at).toISOString(),
    entity_id: row.entity_id,
    sequence: row.sequence === null ? null : Number(row.sequence),
    topic_path: row.topic_path,
  }, row.body);
}

export const notificationFeedRoutes: FastifyPluginAsyncTypebox<FeatureDeps> = async (app, deps) => {
  const waiters = new FeedWaiters(deps.db, deps.config.NOTIFICATION_FEED_MAX_WAITERS_PER_TENANT, app.log);
  const feed = notificationFeed(deps, waiters);
  app.addHook('onClose', () => waiters.close());

  app.get(
    '/v1/:marketplace_code/webhooks/:code/notifications',
    {
      onRequest: authenticate(deps),
      schema: {
        operationId: 'listNotifications',
        tags: ['deliveries'],
        summary: 'The webhook\'s notification feed, oldest first, to catch up and reconcile',
        description:
          'Every notification created for the webhook, in creation order, whatever its delivery state, kept NOTIFICATION_RETENTION_DAYS. ' +
          'Page with `after` = `next_cursor`; `wait` long-polls. A cursor older than the retention is 410 `cursor_expired`. Reading the feed changes no delivery. ' +
          'See docs/webhooks.md, "Sequence numbers and the feed".',
        security: [{ bearerAuth: [] }],
        params: FeedParams,
        querystring: FeedQuery,
        response: { 200: FeedPageSchema, ...problemResponses(400, 401, 404, 409, 410, 429) },
      },
    },
    async (request, reply) => {
      const webhook = await loadWebhookForPrincipal(deps.db, principalOf(request), request.params.marketplace_code, request.params.code);
      // A waiting request stops waiting when its client goes away (the response closes unanswered).
      const gone = new AbortController();
      const onClose = () => gone.abort();
      reply.raw.once('close', onClose);
      try {
        const page = await feed.page(webhook.id, {
          after: request.query.after,
          limit: request.query.limit ?? FEED_DEFAULT_PAGE_SIZE,
          waitSeconds: request.query.wait ?? 0,
          tenant: `${webhook.tenant_kind}:${webhook.tenant_id}`,
          signal: gone.signal,
        });
        // Written by hand (FeedPageSchema documents it): the bodies go out byte for byte (itemJson).
        return reply.type('application/json; charset=utf-8').send(`{"items":[${page.rows.map(itemJson).join(',')}],"next_cursor":${JSON.stringify(page.nextCursor)}}` as never);
      } finally {
        reply.raw.removeListener('close', onClose);
      }
    },
  );
};
