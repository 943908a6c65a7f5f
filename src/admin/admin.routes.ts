import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FeatureDeps } from '../deps.js';
import { adminTenantRoutes } from './admin-tenants.routes.js';
import { adminUserRoutes } from './admin-users.routes.js';
import { apiKeyRoutes } from './api-keys.routes.js';
import { adminWebhookHistoryRoutes } from './admin-webhook-history.routes.js';

/** Administration over HTTP under /api/v2/admin/… (each plugin guards its own routes). */
export const adminRoutes: FastifyPluginAsyncTypebox<FeatureDeps> = async (app, deps) => {
  await app.register(adminTenantRoutes, deps);
  await app.register(adminUserRoutes, deps);
  await app.register(apiKeyRoutes, deps);
  await app.register(adminWebhookHistoryRoutes, deps);
};
