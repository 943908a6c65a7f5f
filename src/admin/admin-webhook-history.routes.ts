import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FeatureDeps } from '../deps.js';
import { problemResponses, responseHeaders } from '../http/openapi.js';
import { historyPage, sendHistoryLink } from '../webhooks/webhook-history.routes.js';
import { adminHistoryItem, AdminHistoryPage, AdminHistoryQuery } from '../webhooks/webhook-history.schemas.js';
import { ADMIN_SECURITY, requireRole } from './admin-guard.js';

/**
 * GET /api/v2/admin/webhook-history?marketplace_code=…&code=…: the history of every webhook that had
 * this code in this marketplace, every tenant's, deleted ones too (the owner's read needs the
 * webhook). Kept for AUTH_AUDIT_RETENTION_DAYS like the other audit rows.
 */
export const adminWebhookHistoryRoutes: FastifyPluginAsyncTypebox<FeatureDeps> = async (app, deps) => {
  const { db } = deps;
  app.addHook('onRequest', requireRole(deps, 'admin'));
  app.get('/api/v2/admin/webhook-history', {
    schema: {
      tags: ['admin'],
      security: ADMIN_SECURITY,
      operationId: 'adminGetWebhookHistory',
      summary: 'The history of a webhook code, deleted webhooks\' too',
      description: 'Admins only. Every history row of every webhook that had `code` in `marketplace_code` (any tenant, also deleted ones), newest first, with the webhook\'s id and owner. Rows older than AUTH_AUDIT_RETENTION_DAYS are pruned.',
      querystring: AdminHistoryQuery,
      response: { 200: responseHeaders(AdminHistoryPage, 'Link'), ...problemResponses(400, 401, 403, 503) },
    },
  }, async (request, reply) => {
    const { marketplace_code: marketplaceCode, code, limit, cursor } = request.query;
    const { rows, next } = await historyPage(db, { marketplaceCode, code }, { limit, cursor });
    sendHistoryLink(request, reply, next);
    return { items: rows.map(adminHistoryItem), next_cursor: next };
  });
};
