import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Queryable } from '../db/database.js';
import { WebhookParams } from '../http/path-params.js';
import type { WebhookRow } from '../webhooks/webhook-access.js';
import { historyPage as pageOfHistory } from '../webhooks/webhook-history.routes.js';
import { loadScopedWebhook, sendPage, sessionOf, type PortalDeps, pageContext } from './portal-pages.js';
import { historyPage, historySection } from './views/history-pages.js';

const PAGE_SIZE = 25;
/** Entries on the webhook's own page; the rest on its history page. */
export const DETAIL_HISTORY_SIZE = 10;
const HistoryQuery = Type.Object({ cursor: Type.Optional(Type.String({ maxLength: 200 })) });

/** The newest entries of a webhook's history, as the section of its page (the API's own read). */
export async function detailHistory(db: Queryable, webhook: WebhookRow) {
  const { rows, next } = await pageOfHistory(db, { webhookId: Number(webhook.id) }, { limit: DETAIL_HISTORY_SIZE });
  return historySection(webhook, rows, next !== null);
}

/** /portal/{mkt}/webhooks/{code}/history: the whole history, newest first, in pages. */
export const portalHistoryRoutes: FastifyPluginAsyncTypebox<PortalDeps> = async (app, deps) => {
  const { db, requireSession } = deps;
  app.get('/portal/:marketplace_code/webhooks/:code/history', { schema: { hide: true, params: WebhookParams, querystring: HistoryQuery }, preHandler: requireSession }, async (request, reply) => {
    const session = sessionOf(request);
    const webhook = await loadScopedWebhook(db, session, request.params);
    const { rows, next } = await pageOfHistory(db, { webhookId: Number(webhook.id) }, { limit: PAGE_SIZE, cursor: request.query.cursor });
    const nextUrl = next === null ? null : `${request.url.split('?')[0]}?${new URLSearchParams({ cursor: next })}`;
    return sendPage(reply, historyPage(pageContext(session, webhook.marketplace_code), webhook, rows, nextUrl));
  });
};
