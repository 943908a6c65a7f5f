import { randomBytes } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyBaseLogger } from 'fastify';
import { Type, type Static } from 'typebox';
import type { Agent, Dispatcher } from 'undici';
import type { WebhookRow } from '../webhooks/webhook-access.js';
import { openHeaders } from '../webhooks/header-box.js';
import type { Config } from '../config.js';
import type { FeatureDeps } from '../deps.js';
import { authenticate, principalOf } from '../auth/authenticate.js';
import { problemResponses } from '../http/openapi.js';
import { takeTenantLimit } from '../http/tenant-rate-limit.js';
import { parseNetworks } from '../net/address-policy.js';
import { loadWebhookForPrincipal } from '../webhooks/webhook-access.js';
import { attemptError, signingKeys } from './dispatch/deliver.js';
import { WebhookParams } from '../http/path-params.js';
import { sendNotification } from './dispatch/sender.js';
import { createGuardedAgent } from './dispatch/ssrf-guard.js';
import { apiActor, recordWebhookHistory, type WebhookActor } from '../webhooks/webhook-history.js';


const TestResult = Type.Object({
  success: Type.Boolean({ description: 'The receiver answered 2xx within the timeout.' }),
  status_code: Type.Union([Type.Integer(), Type.Null()], { description: 'The HTTP status the receiver answered, or null.' }),
  error: Type.Union([Type.String(), Type.Null()], {
    description: 'Why there is no 2xx: `HTTP <status>`, a timeout, `destination_blocked` (the address is not allowed), `dns_failure`, or a connection error.',
  }),
  duration_ms: Type.Integer(),
});

/**
 * POST /v1/{marketplace_code}/webhooks/{code}/test: one signed notification sent now, through the
 * same SSRF guard, signing and timeouts as real deliveries, but not stored as a delivery and not
 * counted in the webhook's health (it works on a disabled webhook too, to check a receiver before
 * re-enabling it).
 */
export const testNotificationRoutes: FastifyPluginAsyncTypebox<FeatureDeps> = async (app, deps) => {
  const { db, config } = deps;
  const agent = createTestAgent(config);
  app.addHook('onClose', async () => agent.close());

  app.post(
    '/v1/:marketplace_code/webhooks/:code/test',
    {
      // The tenant's limit before the body is read (tenant-rate-limit.ts).
      onRequest: [authenticate(deps), takeTenantLimit(deps.tenantRateLimits, 'test')],
      schema: {
        operationId: 'testWebhook',
        tags: ['webhooks'],
        summary: 'Send a signed test notification now',
        description: 'The body is `{"type":"webhook.test", marketplace_code, webhook_code, topic, sent_at}`, signed like every notification. The answer reports the outcome; no delivery is stored (the webhook\'s history records the test and its outcome).',
        security: [{ bearerAuth: [] }],
        params: WebhookParams,
        response: { 200: TestResult, ...problemResponses(400, 401, 404, 409, 429) },
      },
    },
    async (request) => {
      const { marketplace_code: marketplaceCode, code } = request.params;
      const webhook = await loadWebhookForPrincipal(db, principalOf(request), marketplaceCode, code);
      return sendTestNotification(deps, agent, webhook, apiActor(principalOf(request)), request.log);
    },
  );
};

/**
 * The HTTP client of test notifications (the API's and the portal's): the SSRF guard and timeouts of
 * deliveries. What bounds a tenant's test sockets is its TENANT_TESTS_PER_MINUTE, taken by both
 * doors; no cap per receiver origin, which every tenant with callbacks on that host would share.
 */
export function createTestAgent(config: Config): Agent {
  return createGuardedAgent({
    allowed: parseNetworks(config.WEBHOOK_ALLOWED_NETWORKS),
    connectTimeoutMs: config.DELIVERY_CONNECT_TIMEOUT_MS,
    responseTimeoutMs: config.DELIVERY_TIMEOUT_MS,
  });
}

export type TestResult = Static<typeof TestResult>;

/**
 * One signed test notification to the webhook's receiver, now; its outcome. No delivery is stored;
 * the webhook's history records the test with its outcome, once it is known.
 */
export async function sendTestNotification(
  { config, keys, clock, db }: Pick<FeatureDeps, 'config' | 'keys' | 'clock' | 'db'>,
  agent: Dispatcher,
  webhook: WebhookRow,
  actor: WebhookActor,
  log?: FastifyBaseLogger,
): Promise<TestResult> {
  const now = clock.now();
  const body = JSON.stringify({ type: 'webhook.test', marketplace_code: webhook.marketplace_code, webhook_code: webhook.code, topic: webhook.topic, sent_at: now.toISOString() });
  const result = await sendNotification(
    agent,
    {
      url: webhook.callback_url,
      messageId: `msg_test_${randomBytes(12).toString('hex')}`,
      body,
      keys: signingKeys(keys, webhook, now),
      headers: openHeaders(keys.webhookSecretsKey, webhook),
      timestampSeconds: Math.floor(now.getTime() / 1000),
    },
    config.DELIVERY_TIMEOUT_MS,
  );
  // The full cause (which address, which range) is for the log only; the caller gets the code.
  if (result.detail) log?.info({ webhookCode: webhook.code, error: result.error, detail: result.detail }, 'test notification got no answer');
  const success = result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300;
  const outcome = {
    success,
    status_code: result.statusCode,
    error: success ? null : attemptError(result),
    duration_ms: result.durationMs,
  };
  await recordWebhookHistory(db, webhook, actor, { action: 'test', detail: { success, status_code: outcome.status_code, error: outcome.error } }, clock);
  return outcome;
}
