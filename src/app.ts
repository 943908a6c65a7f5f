import { randomUUID } from 'node:crypto';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyServerOptions,
  type RawReplyDefaultExpression,
  type RawRequestDefaultExpression,
  type RawServerDefault,
} from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { systemClock } from './clock.js';
import type { AppDeps, FeatureDeps } from './deps.js';
import { registerOpenApi } from './http/openapi.js';
import { registerProblemHandlers, sendFrameworkProblem, writeClientProblem } from './http/problem.js';
import { defaultBodyLimit } from './http/body-limits.js';
import { jsonBodyParser, useJsonParser } from './http/json-body.js';
import { registerBodyGuard } from './http/body-guard.js';
import { registerCompression } from './http/compression.js';
import { parseCorsOrigins, registerCors } from './http/cors.js';
import { refuseUnfitInput } from './http/input-guard.js';
import { trackAllowedMethods } from './http/method-not-allowed.js';
import { registerResponseHeaders } from './http/response-headers.js';
import { createTenantRateLimits } from './http/tenant-rate-limit.js';
import { createValidatorCompiler } from './http/validation.js';
import { parseTrustProxy, proxyTrustFunction } from './net/trusted-proxies.js';
import { healthRoutes } from './http/health.routes.js';
import { OneLinePerRequest } from './http/request-log.js';
import { createLogger } from './logging.js';
import { authRoutes } from './auth/auth.routes.js';
import { productRoutes } from './products/products.routes.js';
import { webhookRoutes } from './webhooks/webhooks.routes.js';
import { webhookHistoryRoutes } from './webhooks/webhook-history.routes.js';
import { eventRoutes } from './events/events.routes.js';
import { deliveryRoutes } from './delivery/deliveries.routes.js';
import { notificationFeedRoutes } from './delivery/notifications.routes.js';
import { createMetrics } from './metrics.js';
import { requestMetrics } from './http/request-metrics.js';
import { requestSpans } from './http/request-spans.js';
import { activeTracer } from './telemetry/tracing.js';
import { refuseTrailingSlash } from './http/trailing-slash.js';
import { testNotificationRoutes } from './delivery/test-notification.routes.js';
import { portalLinkRoutes } from './portal/portal-links.routes.js';
import { adminRoutes } from './admin/admin.routes.js';
import { jwksRoutes } from './auth/jwks.routes.js';
import { portalRoutes } from './portal/portal.routes.js';
import { limitPasswordWork } from './auth/passwords.js';

export type App = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, FastifyBaseLogger, TypeBoxTypeProvider>;

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export async function buildApp(deps: AppDeps): Promise<App> {
  const { config } = deps;
  const clock = deps.clock ?? systemClock;
  // Process-wide, like the threads it guards (passwords.ts).
  limitPasswordWork(config.ARGON2_MAX_IN_PROGRESS);
  const feature: FeatureDeps = {
    config,
    db: deps.db,
    keys: deps.keys,
    clock,
    metrics: deps.metrics ?? createMetrics(),
    tenantRateLimits: deps.tenantRateLimits ?? createTenantRateLimits(config, clock),
  };

  const options: FastifyServerOptions = {
    // Per route: src/http/body-limits.ts (event intake and login/refresh set their own).
    bodyLimit: defaultBodyLimit(config),
    // X-Forwarded-For counts only from the proxies TRUST_PROXY names (or its last n hops).
    trustProxy: proxyTrustFunction(parseTrustProxy(config.TRUST_PROXY)),
    // A caller's X-Request-Id is kept when it is sane, so that logs join across services.
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    // Errors raised before routing, and by the HTTP parser, are problem+json too.
    frameworkErrors: sendFrameworkProblem,
    clientErrorHandler: writeClientProblem,
    logController: new OneLinePerRequest(),
  };
  if (deps.logger === false) options.logger = false;
  else if (deps.logger) options.loggerInstance = deps.logger;
  else options.loggerInstance = createLogger(config);

  const app = Fastify(options).withTypeProvider<TypeBoxTypeProvider>() as unknown as App;

  // First of all hooks: a request's span covers everything Plaza does with it (docs/operations.md, Traces).
  const tracer = activeTracer();
  if (tracer.enabled) await app.register(requestSpans, { tracer });
  app.setValidatorCompiler(createValidatorCompiler());
  app.addHook('preValidation', refuseUnfitInput);
  // Only JSON bodies are part of the API; anything else is 415.
  app.removeContentTypeParser('text/plain');
  useJsonParser(app, jsonBodyParser(app));
  // Content-Encoding and JSON depth, refused before the body is read (after authentication).
  registerBodyGuard(app);
  registerResponseHeaders(app);
  refuseTrailingSlash(app);
  const allowedMethods = trackAllowedMethods(app);
  registerProblemHandlers(app, config.DATABASE_RETRY_AFTER_SECONDS, allowedMethods);
  registerCors(app, parseCorsOrigins(config.CORS_ORIGINS), allowedMethods);
  // Before every route (it equips each route as it is added), /openapi.json included.
  await registerCompression(app);
  await registerOpenApi(app);
  // First, so that its request-duration hook sees every route. /metrics itself is served by the
  // operations listener (src/operations/), not on the public port.
  await app.register(requestMetrics, { metrics: feature.metrics });

  await app.register(healthRoutes, feature);
  await app.register(authRoutes, feature);
  await app.register(productRoutes, feature);
  await app.register(webhookRoutes, feature);
  await app.register(webhookHistoryRoutes, feature);
  await app.register(eventRoutes, feature);
  await app.register(deliveryRoutes, feature);
  await app.register(notificationFeedRoutes, feature);
  await app.register(testNotificationRoutes, feature);
  await app.register(adminRoutes, feature);
  await app.register(jwksRoutes, feature);
  await app.register(portalLinkRoutes, feature);
  await app.register(portalRoutes, feature);
  return app;
}
