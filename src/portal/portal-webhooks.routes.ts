import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { countHeldByWebhook, countHeldDeliveries } from '../webhooks/deliveries.repository.js';
import { createTestAgent, sendTestNotification } from '../delivery/test-notification.routes.js';
import { AppError } from '../http/errors.js';
import { MarketplaceParams, WebhookParams } from '../http/path-params.js';
import { addressableByAdmin, assertMarketplaceAccess, tenantOf, type WebhookRow } from '../webhooks/webhook-access.js';
import { STATUS_TOPIC_PREFIX } from '../webhooks/webhook-validators.js';
import { listWebhooks } from '../webhooks/webhooks.repository.js';
import { withOpenHeaders } from '../keys/header-box.js';
import { changeWebhook, createWebhook, rotateSecret, webhookSettings } from '../webhooks/webhooks.service.js';
import { inLinkScope, readOnlySellerOf, sellerEditable, sellerIdForForm } from './portal-access.js';
import { CsrfField, CsrfForm } from './portal-security.js';
import { portalActor } from '../webhooks/webhook-history.js';
import { detailHistory } from './portal-history.routes.js';
import type { PortalSession } from './portal-sessions.js';
import { assertInScope, loadScopedWebhook, refusedByTenantLimit, sendPage, sendRefusal, sessionOf, type PortalDeps, pageContext } from './portal-pages.js';
import { webhookHealth } from '../delivery/history/attempt-health.js';
import { healthSection } from './views/health-chart.js';
import { filterText, secretPage, testNotice, webhookDetailPage, webhookFormPage, type WebhookFormValues } from './views/webhook-pages.js';
import { latestNotification, parseFilterText } from './portal-filters.js';
import { checkFilter, matchesFilter } from '../webhooks/filter/filter.js';
import { webhookListPage } from './views/webhook-pages.js';

const Text = (maxLength: number) => Type.Optional(Type.String({ maxLength }));
const WebhookForm = Type.Object({
  _csrf: CsrfField,
  code: Text(200),
  name: Text(400),
  topic: Text(200),
  status_code: Text(100),
  callback_url: Text(4096),
  seller_id: Text(20),
  headers: Text(16_384),
  delivery_mode: Text(20),
  filter: Text(16_384),
});
const FilterTestForm = Type.Object({ _csrf: CsrfField, filter: Text(16_384) });
const DONE_NOTICES = {
  paused: 'Paused: events that arrive meanwhile are held until you resume.',
  resumed: 'Resumed: held deliveries and waiting retries go out now, in order.',
  saved: 'Saved.',
} as const;
const DetailQuery = Type.Object({ done: Type.Optional(Type.Enum(Object.keys(DONE_NOTICES) as (keyof typeof DONE_NOTICES)[])) });
const hide = { hide: true };

/** `Name: value` lines to a header map; a line without a colon is reported on the field. */
export function parseHeaderLines(text: string): { headers: Record<string, string> } | { error: string } {
  // No prototype: a line named __proto__ reaches the validator, which refuses it, instead of vanishing.
  const headers: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [index, line] of text.split(/\r?\n/).entries()) {
    if (line.trim() === '') continue;
    const colon = line.indexOf(':');
    if (colon <= 0) return { error: `line ${index + 1}: write each header as Name: value` };
    headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
  }
  return { headers };
}

const detailPath = (webhook: { marketplace_code: string; code: string }) => `/portal/${webhook.marketplace_code}/webhooks/${encodeURIComponent(webhook.code)}`;

const headerLines = (headers: Record<string, string>) => Object.entries(headers).map(([name, value]) => `${name}: ${value}`).join('\n');

/** Webhook pages: list with health, create, edit, detail with test, pause/resume and rotation. */
export const portalWebhookRoutes: FastifyPluginAsyncTypebox<PortalDeps> = async (app, deps) => {
  const { db, clock, requireSession } = deps;
  const settings = webhookSettings(deps);
  const health = webhookHealth(deps);
  const healthOf = async (webhook: { id: number | string }) => healthSection(await health.all(Number(webhook.id)));
  const agent = createTestAgent(deps.config);
  app.addHook('onClose', async () => agent.close());
  const hooks = '/portal/:marketplace_code/webhooks';
  const one = `${hooks}/:code`;
  const scoped = (session: PortalSession, marketplaceCode: string) => {
    assertInScope(session, marketplaceCode);
    return pageContext(session, marketplaceCode);
  };
  // Opened here once: the detail page names the headers, the edit form shows them, a test sends them.
  const load = async (session: PortalSession, params: { marketplace_code: string; code: string }) => withOpenHeaders(settings.secretsKey, await loadScopedWebhook(db, session, params));

  /** Every webhook in the marketplace with one of these rows' codes, whoever owns it. */
  const sameCodes = async (marketplaceCode: string, rows: WebhookRow[]) =>
    (await db.query<Pick<WebhookRow, 'id' | 'code' | 'tenant_kind'>>(
      `SELECT id, code, tenant_kind FROM webhooks WHERE marketplace_code = $1 AND code = ANY($2::text[])`,
      [marketplaceCode, rows.map((row) => row.code)],
    )).rows;

  app.get(hooks, { schema: { ...hide, params: MarketplaceParams }, preHandler: requireSession }, async (request, reply) => {
    const session = sessionOf(request);
    const { marketplace_code: mkt } = request.params;
    const context = scoped(session, mkt);
    await assertMarketplaceAccess(db, session.principal, mkt);
    // The principal's webhooks as the API lists them, then the link's scope (the same rule as each page's).
    const linkScope = session.scopeMarketplace === null ? undefined : { sellerId: session.scopeSeller === null ? null : String(session.scopeSeller) };
    const listed = await listWebhooks(db, { tenant: session.principal.role === 'admin' ? undefined : tenantOf(session.principal), marketplaceCode: mkt, limit: 100, linkScope });
    const rows = listed.rows.filter((row) => inLinkScope(session, row));
    const held = await countHeldByWebhook(db, rows.map((row) => Number(row.id)));
    // An admin addresses webhooks by code across every tenant of the marketplace, in a link's scope or
    // not: of those in the list, the ones it can open (loadWebhookForPrincipal's rule).
    const everyTenant = session.principal.role !== 'admin' ? undefined : linkScope ? await sameCodes(mkt, rows) : listed.rows;
    const openable = everyTenant && addressableByAdmin(everyTenant);
    const readOnlySeller = readOnlySellerOf(session);
    const readOnly = readOnlySeller === undefined
      ? undefined
      : (await listWebhooks(db, { tenant: { kind: 'seller', id: String(readOnlySeller) }, marketplaceCode: mkt, limit: 100 })).rows.map((row) => withOpenHeaders(settings.secretsKey, row)); // names shown, values masked
    return sendPage(reply, webhookListPage(context, rows, held, openable, readOnly && { sellerId: readOnlySeller!, webhooks: readOnly }));
  });

  app.get(`${hooks}/new`, { schema: { ...hide, params: MarketplaceParams }, preHandler: requireSession }, async (request, reply) => {
    const session = sessionOf(request);
    const context = scoped(session, request.params.marketplace_code);
    await assertMarketplaceAccess(db, session.principal, request.params.marketplace_code);
    // Inside a seller's link the seller is fixed (sellerIdForForm): the hidden field says which.
    const values = session.scopeSeller === null ? {} : { seller_id: String(session.scopeSeller) };
    return sendPage(reply, webhookFormPage(context, { values, sellerEditable: sellerEditable(session) }));
  });

  /** A validation problem from the service goes back onto the form; anything else is an error page. */
  const formFailure = (reply: FastifyReply, error: unknown, render: (errors: AppError['options']['errors'], detail: string) => ReturnType<typeof webhookFormPage>) => {
    if (!(error instanceof AppError) || error.status >= 500 || error.status === 404) throw error;
    const errors = error.options.errors ?? (error.code === 'webhook_code_taken' ? [{ field: 'body.code', message: error.detail }] : []);
    return sendPage(reply, render(errors, error.detail), error.status);
  };

  app.post(`${hooks}/new`, { schema: { ...hide, params: MarketplaceParams, body: WebhookForm }, preHandler: requireSession }, async (request, reply) => {
    const session = sessionOf(request);
    const { marketplace_code: mkt } = request.params;
    const context = scoped(session, mkt);
    const values: WebhookFormValues = request.body;
    const render = (errors: AppError['options']['errors'], detail: string) => webhookFormPage(context, { values, errors, detail, sellerEditable: sellerEditable(session) });
    const parsed = parseHeaderLines(values.headers ?? '');
    if ('error' in parsed) return sendPage(reply, render([{ field: 'body.headers', message: parsed.error }], 'Please correct the fields below.'), 400);
    const filter = parseFilterText(values.filter ?? '');
    if ('error' in filter) return sendPage(reply, render([{ field: 'body.filter', message: filter.error }], 'Please correct the fields below.'), 400);
    const statusCode = values.status_code?.trim();
    const topic = values.topic === 'order/status_change' && statusCode ? `${STATUS_TOPIC_PREFIX}${statusCode}` : (values.topic ?? '');
    try {
      const { webhook, secret } = await createWebhook(db, session.principal, mkt, {
        code: values.code ?? '',
        name: values.name ?? '',
        topic,
        callback_url: values.callback_url ?? '',
        seller_id: sellerIdForForm(session, values.seller_id),
        headers: parsed.headers,
        ...(values.delivery_mode ? { delivery_mode: values.delivery_mode } : {}),
        filter: filter.filter,
      }, settings, clock, portalActor(session));
      return sendPage(reply, secretPage(context, webhook, secret), 201);
    } catch (error) {
      return formFailure(reply, error, render);
    }
  });

  app.get(one, { schema: { ...hide, params: WebhookParams, querystring: DetailQuery }, preHandler: requireSession }, async (request, reply) => {
    const session = sessionOf(request);
    const webhook = await load(session, request.params);
    const done = request.query.done;
    const notice = done ? { kind: 'success' as const, text: DONE_NOTICES[done] } : undefined;
    return sendPage(reply, webhookDetailPage(pageContext(session, webhook.marketplace_code), webhook, await countHeldDeliveries(db, webhook.id), notice, await detailHistory(db, webhook), undefined, await healthOf(webhook)));
  });

  app.get(`${one}/edit`, { schema: { ...hide, params: WebhookParams }, preHandler: requireSession }, async (request, reply) => {
    const session = sessionOf(request);
    const webhook = await load(session, request.params);
    const values = {
      name: webhook.name, callback_url: webhook.callback_url, seller_id: webhook.seller_id, headers: headerLines(webhook.headers), delivery_mode: webhook.delivery_mode, filter: filterText(webhook.filter),
    };
    return sendPage(reply, webhookFormPage(pageContext(session, webhook.marketplace_code), { existing: webhook, values, sellerEditable: sellerEditable(session) }));
  });

  app.post(`${one}/edit`, { schema: { ...hide, params: WebhookParams, body: WebhookForm }, preHandler: requireSession }, async (request, reply) => {
    const session = sessionOf(request);
    const webhook = await load(session, request.params);
    const context = pageContext(session, webhook.marketplace_code);
    const values: WebhookFormValues = request.body;
    const render = (errors: AppError['options']['errors'], detail: string) => webhookFormPage(context, { existing: webhook, values, errors, detail, sellerEditable: sellerEditable(session) });
    const parsed = parseHeaderLines(values.headers ?? '');
    if ('error' in parsed) return sendPage(reply, render([{ field: 'body.headers', message: parsed.error }], 'Please correct the fields below.'), 400);
    const filter = parseFilterText(values.filter ?? '');
    if ('error' in filter) return sendPage(reply, render([{ field: 'body.filter', message: filter.error }], 'Please correct the fields below.'), 400);
    try {
      await changeWebhook(db, session.principal, webhook.marketplace_code, webhook.code, {
        name: values.name ?? '',
        callback_url: values.callback_url ?? '',
        seller_id: sellerIdForForm(session, values.seller_id, webhook),
        headers: parsed.headers,
        ...(values.delivery_mode ? { delivery_mode: values.delivery_mode } : {}),
        filter: filter.filter,
      }, settings, clock, portalActor(session));
    } catch (error) {
      return formFailure(reply, error, render);
    }
    return reply.redirect(`${detailPath(webhook)}?done=saved`, 303);
  });

  app.post(`${one}/test`, { schema: { ...hide, params: WebhookParams, body: CsrfForm }, preHandler: requireSession }, async (request, reply) => {
    const session = sessionOf(request);
    const webhook = await load(session, request.params);
    const page = async (notice: ReturnType<typeof testNotice>) =>
      webhookDetailPage(pageContext(session, webhook.marketplace_code), webhook, await countHeldDeliveries(db, webhook.id), notice, await detailHistory(db, webhook), undefined, await healthOf(webhook));
    const refusal = refusedByTenantLimit(deps, session, 'test');
    if (refusal) return sendRefusal(reply, refusal, await page({ kind: 'error', text: refusal.detail }));
    return sendPage(reply, await page(testNotice(await sendTestNotification(deps, agent, webhook, portalActor(session)))));
  });

  // The filter (the webhook's, or a draft) on the webhook's latest notification: nothing saved or sent.
  app.post(`${one}/filter-test`, { schema: { ...hide, params: WebhookParams, body: FilterTestForm }, preHandler: requireSession }, async (request, reply) => {
    const session = sessionOf(request);
    const webhook = await load(session, request.params);
    const draft = request.body.filter ?? '';
    const page = async (notice: { kind: 'success' | 'error'; text: string }, status = 200) =>
      sendPage(reply, webhookDetailPage(pageContext(session, webhook.marketplace_code), webhook, await countHeldDeliveries(db, webhook.id), notice, await detailHistory(db, webhook), draft, await healthOf(webhook)), status);
    const parsed = parseFilterText(draft);
    if ('error' in parsed) return page({ kind: 'error', text: `Filter: ${parsed.error}` }, 400);
    const problems = parsed.filter === null ? [] : checkFilter(parsed.filter);
    if (problems.length > 0) return page({ kind: 'error', text: `Filter: ${problems.map((problem) => (problem.path ? `${problem.path}: ${problem.message}` : problem.message)).join('; ')}` }, 400);
    const notification = await latestNotification(db, webhook.id);
    if (notification === undefined) return page({ kind: 'error', text: 'This webhook has no notification yet to test on: see the event catalogue for sample bodies.' });
    const matches = parsed.filter === null || matchesFilter(parsed.filter, notification.body);
    return page({ kind: 'success', text: `The filter ${matches ? 'matches' : 'does not match'} the latest notification (event ${notification.eventId}, ${notification.topicPath}).` });
  });

  for (const [action, active] of [['pause', false], ['resume', true]] as const) {
    app.post(`${one}/${action}`, { schema: { ...hide, params: WebhookParams, body: CsrfForm }, preHandler: requireSession }, async (request, reply) => {
      const session = sessionOf(request);
      const webhook = await load(session, request.params);
      // The API's own PATCH {active}: a resume releases the held deliveries and wakes the workers.
      await changeWebhook(db, session.principal, webhook.marketplace_code, webhook.code, { active }, settings, clock, portalActor(session));
      return reply.redirect(`${detailPath(webhook)}?done=${active ? 'resumed' : 'paused'}`, 303);
    });
  }

  app.post(`${one}/rotate-secret`, { schema: { ...hide, params: WebhookParams, body: CsrfForm }, preHandler: requireSession }, async (request, reply) => {
    const session = sessionOf(request);
    const webhook = await load(session, request.params);
    const rotated = await rotateSecret(db, session.principal, webhook.marketplace_code, webhook.code, settings, clock, portalActor(session));
    return sendPage(reply, secretPage(pageContext(session, webhook.marketplace_code), webhook, rotated.secret, rotated.previousExpiresAt));
  });
};
