import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { countHeldDeliveries } from '../webhooks/deliveries.repository.js';
import { createTestAgent, sendTestNotification } from '../delivery/test-notification.routes.js';
import { AppError, type FieldError } from '../http/errors.js';
import { fieldErrors } from '../http/problem.js';
import { formFieldOf } from './views/form-errors.js';
import { MarketplaceParams, WebhookParams } from '../http/path-params.js';
import { assertMarketplaceAccess } from '../webhooks/webhook-access.js';
import { webhooksForSession } from './portal-webhook-list.js';
import { STATUS_TOPIC_PREFIX } from '../webhooks/webhook-validators.js';
import { withOpenHeaders } from '../keys/header-box.js';
import { changeWebhook, createWebhook, rotateSecret, validateWebhookChange, validateWebhookCreate, webhookSettings } from '../webhooks/webhooks.service.js';
import { sellerEditable, sellerIdForForm } from './portal-access.js';
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
  send_traceparent: Text(10),
});
const FilterTestForm = Type.Object({ _csrf: CsrfField, filter: Text(16_384) });
const DONE_NOTICES = {
  paused: 'Paused: events that arrive meanwhile are held until you resume.',
  resumed: 'Resumed: held deliveries and waiting retries go out now, in order.',
  saved: 'Saved.',
} as const;
const DetailQuery = Type.Object({ done: Type.Optional(Type.Enum(Object.keys(DONE_NOTICES) as (keyof typeof DONE_NOTICES)[])) });
const hide = { hide: true };

/** `Name: value` lines to a header map; every line without a colon is reported on the field, at once. */
export function parseHeaderLines(text: string): { headers: Record<string, string> } | { error: string } {
  // No prototype: a line named __proto__ reaches the validator, which refuses it, instead of vanishing.
  const headers: Record<string, string> = Object.create(null) as Record<string, string>;
  const bad: number[] = [];
  for (const [index, line] of text.split(/\r?\n/).entries()) {
    if (line.trim() === '') continue;
    const colon = line.indexOf(':');
    if (colon <= 0) bad.push(index + 1);
    else headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
  }
  if (bad.length > 0) return { error: `${bad.length === 1 ? 'line' : 'lines'} ${bad.join(', ')}: write each header as Name: value` };
  return { headers };
}

/**
 * What a webhook form's submit gets wrong before any service is called: the schema's limits
 * (attachValidation: a too-long field is shown on the form, not as an error page), the header
 * lines, the filter's JSON. Each is a field error, with the values to show the form again with
 * and to check the rest of the fields with (the service's rules, validateWebhook*).
 */
function readWebhookForm(request: Pick<FastifyRequest, 'body' | 'validationError'>): { values: WebhookFormValues; problems: FieldError[]; headers: Record<string, string>; filter: Record<string, unknown> | null } {
  const problems: FieldError[] = [];
  const failed = request.validationError as (Error & { validation?: unknown[]; validationContext?: string }) | undefined;
  if (failed) {
    // Only the body's problems belong on the form; a bad path is the error page's (as without attachValidation).
    if (failed.validationContext !== 'body') throw failed;
    problems.push(...fieldErrors('body', (failed.validation ?? []) as Parameters<typeof fieldErrors>[1]));
  }
  const raw = (request.body ?? {}) as Record<string, unknown>;
  const text = (name: keyof WebhookFormValues) => (typeof raw[name] === 'string' ? raw[name] : undefined);
  const values: WebhookFormValues = {
    code: text('code'), name: text('name'), topic: text('topic'), status_code: text('status_code'), callback_url: text('callback_url'),
    seller_id: text('seller_id'), headers: text('headers'), delivery_mode: text('delivery_mode'), filter: text('filter'),
    send_traceparent: text('send_traceparent'),
  };
  const parsed = parseHeaderLines(values.headers ?? '');
  if ('error' in parsed) problems.push({ field: 'body.headers', message: parsed.error });
  const filter = parseFilterText(values.filter ?? '');
  if ('error' in filter) problems.push({ field: 'body.filter', message: filter.error });
  return { values, problems, headers: 'error' in parsed ? {} : parsed.headers, filter: 'error' in filter ? null : filter.filter };
}

/**
 * The form's own problems and the service's (every field's, validation_failed), in one list: a
 * field the form already found wrong is not reported twice (its value was not what the service saw).
 */
async function withServiceProblems(problems: FieldError[], check: () => Promise<void>): Promise<FieldError[]> {
  try {
    await check();
    return problems;
  } catch (error) {
    if (!(error instanceof AppError) || error.code !== 'validation_failed') throw error;
    const known = new Set(problems.map(formFieldOf));
    return [...problems, ...(error.options.errors ?? []).filter((problem) => !known.has(formFieldOf(problem)))];
  }
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

  app.get(hooks, { schema: { ...hide, params: MarketplaceParams }, preHandler: requireSession }, async (request, reply) => {
    const session = sessionOf(request);
    const { marketplace_code: mkt } = request.params;
    const context = scoped(session, mkt);
    const list = await webhooksForSession(db, settings.secretsKey, session, mkt);
    return sendPage(reply, webhookListPage(context, list.rows, list.held, list.openable, list.readOnly));
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
  const formFailure = (reply: FastifyReply, error: unknown, render: (errors: AppError['options']['errors'], detail?: string) => ReturnType<typeof webhookFormPage>) => {
    if (!(error instanceof AppError) || error.status >= 500 || error.status === 404) throw error;
    const errors = error.options.errors ?? (error.code === 'webhook_code_taken' ? [{ field: 'body.code', message: error.detail }] : []);
    // A field's problem is shown on the field (in plain words); the detail only for a refusal of no field.
    return sendPage(reply, render(errors, errors.length > 0 ? undefined : error.detail), error.status);
  };

  app.post(`${hooks}/new`, { schema: { ...hide, params: MarketplaceParams, body: WebhookForm }, attachValidation: true, preHandler: requireSession }, async (request, reply) => {
    const session = sessionOf(request);
    const { marketplace_code: mkt } = request.params;
    const context = scoped(session, mkt);
    const form = readWebhookForm(request);
    const { values } = form;
    const render = (errors: AppError['options']['errors'], detail?: string) => webhookFormPage(context, { values, errors, detail, sellerEditable: sellerEditable(session) });
    const statusCode = values.status_code?.trim();
    const topic = values.topic === 'order/status_change' && statusCode ? `${STATUS_TOPIC_PREFIX}${statusCode}` : (values.topic ?? '');
    const input = {
      code: values.code ?? '',
      name: values.name ?? '',
      topic,
      callback_url: values.callback_url ?? '',
      seller_id: sellerIdForForm(session, values.seller_id),
      headers: form.headers,
      ...(values.delivery_mode ? { delivery_mode: values.delivery_mode } : {}),
      filter: form.filter,
      // A checkbox: sent ('true') when ticked, absent when not.
      send_traceparent: values.send_traceparent === 'true',
    };
    try {
      // Every field is checked before anything is stored, so one answer names every problem.
      const problems = await withServiceProblems(form.problems, () => validateWebhookCreate(db, session.principal, mkt, input, settings));
      if (problems.length > 0) return sendPage(reply, render(problems), 400);
      const { webhook, secret } = await createWebhook(db, session.principal, mkt, input, settings, clock, portalActor(session));
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
      send_traceparent: webhook.send_traceparent ? 'true' : undefined,
    };
    return sendPage(reply, webhookFormPage(pageContext(session, webhook.marketplace_code), { existing: webhook, values, sellerEditable: sellerEditable(session) }));
  });

  app.post(`${one}/edit`, { schema: { ...hide, params: WebhookParams, body: WebhookForm }, attachValidation: true, preHandler: requireSession }, async (request, reply) => {
    const session = sessionOf(request);
    const form = readWebhookForm(request);
    const webhook = await load(session, request.params);
    const context = pageContext(session, webhook.marketplace_code);
    const { values } = form;
    const render = (errors: AppError['options']['errors'], detail?: string) => webhookFormPage(context, { existing: webhook, values, errors, detail, sellerEditable: sellerEditable(session) });
    const input = {
      name: values.name ?? '',
      callback_url: values.callback_url ?? '',
      seller_id: sellerIdForForm(session, values.seller_id, webhook),
      headers: form.headers,
      ...(values.delivery_mode ? { delivery_mode: values.delivery_mode } : {}),
      filter: form.filter,
      // A checkbox: sent ('true') when ticked, absent when not.
      send_traceparent: values.send_traceparent === 'true',
    };
    try {
      const problems = await withServiceProblems(form.problems, () => validateWebhookChange(db, session.principal, webhook.marketplace_code, webhook.code, input, settings));
      if (problems.length > 0) return sendPage(reply, render(problems), 400);
      await changeWebhook(db, session.principal, webhook.marketplace_code, webhook.code, input, settings, clock, portalActor(session));
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
