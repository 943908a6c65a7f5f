import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FeatureDeps } from '../deps.js';
import type { Queryable } from '../db/database.js';
import { authenticate } from '../auth/authenticate.js';
import { principalOf } from '../http/principal.js';
import { keysetPage, timeIdCursor } from '../http/cursor.js';
import { problemResponses, responseHeaders } from '../http/openapi.js';
import { nextPageLink } from '../http/pagination.js';
import { WebhookParams } from '../http/path-params.js';
import { loadWebhookForPrincipal } from './webhook-access.js';
import { listWebhookHistory, type HistoryOf, type HistoryRow } from './webhook-history.repository.js';
import { HISTORY_DEFAULT_PAGE_SIZE, historyItem, HistoryPage, HistoryQuery } from './webhook-history.schemas.js';

/**
 * One page of history, newest first, with the cursor of the next (null on the last page) and, for
 * the API, the same as a `Link: rel="next"` header, as the delivery log does.
 */
export async function historyPage(
  db: Queryable,
  filter: HistoryOf,
  query: { limit?: number; cursor?: string },
): Promise<{ rows: HistoryRow[]; next: string | null }> {
  const limit = query.limit ?? HISTORY_DEFAULT_PAGE_SIZE;
  const after = query.cursor === undefined ? undefined : timeIdCursor.decode(query.cursor);
  return keysetPage(await listWebhookHistory(db, { ...filter, after, limit }), limit, timeIdCursor.encode);
}

export function sendHistoryLink(request: FastifyRequest, reply: FastifyReply, next: string | null): void {
  if (next) reply.header('link', nextPageLink(request, next));
}

/** GET /v1/{marketplace_code}/webhooks/{code}/history: the owner's (and admins') read of one webhook's history. */
export const webhookHistoryRoutes: FastifyPluginAsyncTypebox<FeatureDeps> = async (app, deps) => {
  const { db } = deps;
  app.get(
    '/v1/:marketplace_code/webhooks/:code/history',
    {
      onRequest: authenticate(deps),
      schema: {
        operationId: 'getWebhookHistory',
        tags: ['webhooks'],
        summary: 'A webhook\'s history, newest first',
        description:
          'Every change to the webhook (create, update, pause, resume, rotate_secret, retry, replay, test) by any channel (API, portal, portal link, admin API, CLI): who, through what, when and which fields changed, never a secret or a header value. ' +
          'Who may read it: whoever may GET the webhook (another tenant\'s webhook is 404). A deleted webhook\'s history is read by admins at GET /api/v2/admin/webhook-history.',
        security: [{ bearerAuth: [] }],
        params: WebhookParams,
        querystring: HistoryQuery,
        response: { 200: responseHeaders(HistoryPage, 'Link'), ...problemResponses(400, 401, 404, 409) },
      },
    },
    async (request, reply) => {
      const { marketplace_code: marketplaceCode, code } = request.params;
      const webhook = await loadWebhookForPrincipal(db, principalOf(request), marketplaceCode, code);
      const { rows, next } = await historyPage(db, { webhookId: Number(webhook.id) }, request.query);
      sendHistoryLink(request, reply, next);
      return { items: rows.map(historyItem), next_cursor: next };
    },
  );
};
