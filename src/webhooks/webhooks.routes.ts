import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import type { FeatureDeps } from '../deps.js';
import { authenticate } from '../auth/authenticate.js';
import { principalOf } from '../http/principal.js';
import { AppError } from '../http/errors.js';
import { problemResponses, responseHeaders } from '../http/openapi.js';
import { decodeCursor, encodeCursor, toWebhookListItem, toWebhookResponse } from './webhook-presenter.js';
import { loadWebhookForPrincipal } from './webhook-access.js';
import { withOpenHeaders } from '../keys/header-box.js';
import {
  CreatedWebhook, CreateWebhookBody, DEFAULT_PAGE_SIZE, FilterTestBody, FilterTestResult, ListQuery, MarketplaceParams, RotatedSecret, UpdateWebhookBody, Webhook, WebhookList, WebhookParams,
} from './webhook-schemas.js';
import { changeWebhook, createWebhook, removeWebhook, rotateSecret, testFilter, webhookSettings, type WebhookSettings } from './webhooks.service.js';
import { readWebhookPage } from './webhook-list.js';
import { apiActor } from './webhook-history.js';
import { nextPageLink } from '../http/pagination.js';
import { countHeldDeliveries } from './deliveries.repository.js';

const TAGS = ['webhooks'];
const SECURITY = [{ bearerAuth: [] }];
const IMMUTABLE_FIELDS = ['code', 'topic'] as const;

const webhookPath = (marketplaceCode: string, code: string) => `/v1/${encodeURIComponent(marketplaceCode)}/webhooks/${encodeURIComponent(code)}`;

/** Runs before body validation so that `code`/`topic` get their own error instead of "unknown field". */
async function refuseImmutableFields(request: FastifyRequest): Promise<void> {
  const body = request.body;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return;
  const given = IMMUTABLE_FIELDS.filter((field) => Object.hasOwn(body, field));
  if (given.length > 0) {
    throw new AppError('immutable_field', `${given.join(' and ')} cannot be changed; delete the webhook and create a new one instead.`, {
      errors: given.map((field) => ({ field: `body.${field}`, message: 'cannot be changed' })),
    });
  }
}

export const webhookRoutes: FastifyPluginAsyncTypebox<FeatureDeps> = async (app, deps) => {
  const { db, clock } = deps;
  const settings: WebhookSettings = webhookSettings(deps);
  // onRequest: a request without a valid token is 401 before its body is even looked at.
  const onRequest = authenticate(deps);
  // The list reads the tenant's state in its one statement (webhook-list.ts).
  const onListRequest = authenticate(deps, { tenantStateReadByRoute: true });

  app.post(
    '/v1/:marketplace_code/webhooks',
    {
      onRequest,
      schema: {
        operationId: 'createWebhook',
        tags: TAGS,
        summary: 'Create a webhook',
        description: 'Subscribes a callback URL to a topic in one marketplace, as the caller\'s tenant (its seller, its marketplace, or the admins), optionally with a `filter` on the notification body. Returns the webhook with its signing secret, which is shown only here and on rotation.',
        security: SECURITY,
        params: MarketplaceParams,
        body: CreateWebhookBody,
        response: { 201: responseHeaders(CreatedWebhook, 'Location'), ...problemResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request, reply) => {
      const { marketplace_code: marketplaceCode } = request.params;
      const { webhook, secret } = await createWebhook(db, principalOf(request), marketplaceCode, request.body, settings, clock, apiActor(principalOf(request)));
      // The secret is in this body: no cache on the way may keep it.
      reply.code(201).header('location', webhookPath(marketplaceCode, webhook.code)).header('cache-control', 'no-store');
      return { ...toWebhookResponse(webhook), secret };
    },
  );

  app.post(
    '/v1/:marketplace_code/webhooks/filter-test',
    {
      onRequest,
      schema: {
        operationId: 'testWebhookFilter',
        tags: TAGS,
        summary: 'Test a filter on a sample notification',
        description: 'Answers whether a webhook with this `filter` would get this notification body; nothing is stored or sent. The same access as creating a webhook in the marketplace. An invalid filter is 400 `validation_failed` naming its path (`body.filter.…`), as on create.',
        security: SECURITY,
        params: MarketplaceParams,
        body: FilterTestBody,
        response: { 200: FilterTestResult, ...problemResponses(400, 401, 404) },
      },
    },
    async (request) => {
      const { marketplace_code: marketplaceCode } = request.params;
      return { matches: await testFilter(db, principalOf(request), marketplaceCode, request.body) };
    },
  );

  app.get(
    '/v1/:marketplace_code/webhooks',
    {
      onRequest: onListRequest,
      schema: {
        operationId: 'listWebhooks',
        tags: TAGS,
        summary: 'List webhooks',
        description: 'The caller\'s webhooks in the marketplace (admins: every tenant\'s), ordered by code, as a plain array without `seller_id`. Pages: `limit` (default and maximum 100) and the `Link: <…>; rel="next"` header while there are more.',
        security: SECURITY,
        params: MarketplaceParams,
        querystring: ListQuery,
        response: {
          200: responseHeaders(WebhookList, 'Link'),
          ...problemResponses(400, 401, 404),
        },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const { marketplace_code: marketplaceCode } = request.params;
      const limit = request.query.limit ?? DEFAULT_PAGE_SIZE;
      const after = request.query.cursor === undefined ? undefined : decodeCursor(request.query.cursor);
      const page = await readWebhookPage(db, request, principal, marketplaceCode, { limit, after });
      const last = page.rows.at(-1);
      if (page.hasMore && last) {
        reply.header('link', nextPageLink(request, encodeCursor(last)));
      }
      return page.rows.map((row) => toWebhookListItem(withOpenHeaders(settings.secretsKey, row)));
    },
  );

  app.get(
    '/v1/:marketplace_code/webhooks/:code',
    {
      onRequest,
      schema: {
        operationId: 'getWebhook',
        tags: TAGS,
        summary: 'Get a webhook',
        description: 'One webhook of the caller\'s tenant, with `seller_id`. Another tenant\'s webhook is 404. For an admin, a code that several tenants use is the admins\' own, else 409.',
        security: SECURITY,
        params: WebhookParams,
        response: { 200: Webhook, ...problemResponses(401, 404, 409) },
      },
    },
    async (request) => {
      const { marketplace_code: marketplaceCode, code } = request.params;
      const webhook = await loadWebhookForPrincipal(db, principalOf(request), marketplaceCode, code);
      return toWebhookResponse(withOpenHeaders(settings.secretsKey, webhook), await countHeldDeliveries(db, webhook.id));
    },
  );

  app.patch(
    '/v1/:marketplace_code/webhooks/:code',
    {
      onRequest,
      preValidation: refuseImmutableFields,
      schema: {
        operationId: 'updateWebhook',
        tags: TAGS,
        summary: 'Update a webhook',
        description: 'Changes any of name, callback_url, seller_id, headers (replaces the whole map), filter (null removes it) and active. `code` and `topic` cannot be changed (400 `immutable_field`).',
        security: SECURITY,
        params: WebhookParams,
        body: UpdateWebhookBody,
        response: { 200: Webhook, ...problemResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request) => {
      const { marketplace_code: marketplaceCode, code } = request.params;
      const webhook = await changeWebhook(db, principalOf(request), marketplaceCode, code, request.body, settings, clock, apiActor(principalOf(request)));
      return toWebhookResponse(webhook, await countHeldDeliveries(db, webhook.id));
    },
  );

  app.delete(
    '/v1/:marketplace_code/webhooks/:code',
    {
      onRequest,
      schema: {
        operationId: 'deleteWebhook',
        tags: TAGS,
        summary: 'Delete a webhook',
        description: 'Deletes the webhook and its deliveries (pending ones are not sent). Its history stays readable by admins until the audit retention.',
        security: SECURITY,
        params: WebhookParams,
        response: { 204: { type: 'null', description: 'Deleted' }, ...problemResponses(401, 404, 409) },
      },
    },
    async (request, reply) => {
      const { marketplace_code: marketplaceCode, code } = request.params;
      await removeWebhook(db, principalOf(request), marketplaceCode, code, clock, apiActor(principalOf(request)));
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/v1/:marketplace_code/webhooks/:code/rotate-secret',
    {
      onRequest,
      schema: {
        operationId: 'rotateWebhookSecret',
        tags: TAGS,
        summary: 'Rotate the signing secret',
        description: 'Issues a new signing secret. The previous one keeps signing alongside (a second signature) until `previous_secret_expires_at` (WEBHOOK_SECRET_OVERLAP_SECONDS, 24 h by default), so receivers can switch without losing notifications.',
        security: SECURITY,
        params: WebhookParams,
        response: { 200: RotatedSecret, ...problemResponses(401, 404, 409) },
      },
    },
    async (request, reply) => {
      const { marketplace_code: marketplaceCode, code } = request.params;
      reply.header('cache-control', 'no-store');
      const rotated = await rotateSecret(db, principalOf(request), marketplaceCode, code, settings, clock, apiActor(principalOf(request)));
      return { secret: rotated.secret, previous_secret_expires_at: rotated.previousExpiresAt.toISOString() };
    },
  );
};
