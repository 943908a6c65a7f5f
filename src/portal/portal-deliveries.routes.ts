import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { DELIVERY_STATUSES, type DeliveryStatus } from '../webhooks/deliveries.repository.js';
import { deliveryHistory } from '../delivery/history/delivery-history.js';
import { REPLAYABLE_STATUSES, type ReplayableStatus } from '../delivery/history/replay.js';
import { EVENT_TOPICS } from '../events/event-schema.js';
import { AppError, type FieldError } from '../http/errors.js';
import { plainMessage } from './views/form-errors.js';
import { MarketplaceParams, WebhookParams } from '../http/path-params.js';
import type { PortalSession } from './portal-sessions.js';
import { assertInScope, loadScopedWebhook, refusedByTenantLimit, sendPage, sendRefusal, sessionOf, type PortalDeps, pageContext } from './portal-pages.js';
import { CsrfField, CsrfForm } from './portal-security.js';
import { portalActor } from '../webhooks/webhook-history.js';
import { cataloguePage } from './views/catalogue-page.js';
import { deliveryDetailPage, deliveryLogPage, replayPage, type ReplayValues } from './views/delivery-pages.js';

const PAGE_SIZE = 25;
const hide = { hide: true };
// Empty form fields mean "any": '' is accepted and dropped.
const Choice = (values: readonly string[]) => Type.Optional(Type.Union([Type.Literal(''), Type.Enum(values)]));
const Text = (maxLength: number) => Type.Optional(Type.String({ maxLength }));

const LogQuery = Type.Object({ status: Choice(DELIVERY_STATUSES), topic: Choice(EVENT_TOPICS), event_id: Text(200), entity_id: Text(200), cursor: Text(200) });
const DeliveryParams = Type.Object({ ...WebhookParams.properties, id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }) });
const DetailQuery = Type.Object({ done: Type.Optional(Type.Literal('retried')) });
const ReplayForm = Type.Object({
  _csrf: CsrfField,
  mode: Type.Optional(Type.Union([Type.Literal('count'), Type.Literal('send')])),
  // One checkbox arrives as a string, several as an array.
  status: Type.Optional(Type.Union([Type.Enum(REPLAYABLE_STATUSES), Type.Array(Type.Enum(REPLAYABLE_STATUSES), { maxItems: 2 })])),
  since: Text(40),
  until: Type.Optional(Type.String({ maxLength: 40 })),
  topic: Choice(EVENT_TOPICS),
  entity_id: Text(200),
  event_id: Text(200),
});

const blankToUndefined = (value: string | undefined) => (value === undefined || value.trim() === '' ? undefined : value.trim());

/** datetime-local gives `2026-01-31T12:00` without a zone: the form says UTC. A problem is added to `problems`. */
function utcTime(value: string | undefined, field: string, problems: FieldError[]): Date | undefined {
  const text = blankToUndefined(value);
  if (text === undefined) return undefined;
  const date = new Date(/Z$|[+-]\d\d:\d\d$/.test(text) ? text : `${text}Z`);
  if (Number.isNaN(date.getTime())) problems.push({ field: `body.${field}`, message: 'is not a date and time' });
  return date;
}

/** Delivery log, delivery detail with retry, replay by filter (count first), event catalogue. */
export const portalDeliveryRoutes: FastifyPluginAsyncTypebox<PortalDeps> = async (app, deps) => {
  const { db, requireSession } = deps;
  const history = deliveryHistory(deps);
  const one = '/portal/:marketplace_code/webhooks/:code';
  const load = (session: PortalSession, params: { marketplace_code: string; code: string }) => loadScopedWebhook(db, session, params);

  app.get(`${one}/deliveries`, { schema: { ...hide, params: WebhookParams, querystring: LogQuery }, preHandler: requireSession }, async (request, reply) => {
    const session = sessionOf(request);
    const webhook = await load(session, request.params);
    const query = request.query;
    const filter = { status: blankToUndefined(query.status), topic: blankToUndefined(query.topic), event_id: blankToUndefined(query.event_id), entity_id: blankToUndefined(query.entity_id) };
    const match = { statuses: filter.status ? [filter.status as DeliveryStatus] : undefined, topic: filter.topic, eventId: filter.event_id, entityId: filter.entity_id };
    const context = pageContext(session, webhook.marketplace_code);
    try {
      const { rows, next } = await history.list(webhook, match, { limit: PAGE_SIZE, cursor: query.cursor || undefined });
      let nextUrl: string | null = null;
      if (next) {
        const params = new URLSearchParams(Object.entries(filter).filter((entry): entry is [string, string] => entry[1] !== undefined));
        params.set('cursor', next);
        nextUrl = `${request.url.split('?')[0]}?${params}`;
      }
      return sendPage(reply, deliveryLogPage(context, webhook, filter, rows, nextUrl));
    } catch (error) {
      // A cursor the service did not issue (a hand-edited link): the log's form says so.
      if (!(error instanceof AppError) || error.code !== 'validation_failed') throw error;
      return sendPage(reply, deliveryLogPage(context, webhook, filter, [], null, error.detail), 400);
    }
  });

  const showDelivery = async (session: PortalSession, params: { marketplace_code: string; code: string; id: number }, notice?: { kind: 'success' | 'error'; text: string }) => {
    const webhook = await load(session, params);
    const { delivery, attempts, notification } = await history.withAttempts(webhook, params.id);
    return deliveryDetailPage(pageContext(session, webhook.marketplace_code), webhook, delivery, attempts, notification, notice);
  };

  app.get(`${one}/deliveries/:id`, { schema: { ...hide, params: DeliveryParams, querystring: DetailQuery }, preHandler: requireSession }, async (request, reply) => {
    const notice = request.query.done === 'retried' ? { kind: 'success' as const, text: 'Queued: the delivery is sent again now.' } : undefined;
    return sendPage(reply, await showDelivery(sessionOf(request), request.params, notice));
  });

  app.post(`${one}/deliveries/:id/retry`, { schema: { ...hide, params: DeliveryParams, body: CsrfForm }, preHandler: requireSession }, async (request, reply) => {
    const session = sessionOf(request);
    const webhook = await load(session, request.params);
    const refusal = refusedByTenantLimit(deps, session, 'retry');
    if (refusal) return sendRefusal(reply, refusal, await showDelivery(session, request.params, { kind: 'error', text: refusal.detail }));
    try {
      await history.retry(webhook, request.params.id, portalActor(session));
    } catch (error) {
      // Delivering or held: the page says why, with the API's words.
      if (!(error instanceof AppError) || error.code !== 'conflict') throw error;
      return sendPage(reply, await showDelivery(session, request.params, { kind: 'error', text: error.detail }), 409);
    }
    // Post/redirect/get: a reload of the page shows the delivery, it does not retry again.
    return reply.redirect(`${request.url.replace(/\/retry$/, '')}?done=retried`, 303);
  });

  app.get(`${one}/replay`, { schema: { ...hide, params: WebhookParams }, preHandler: requireSession }, async (request, reply) => {
    const session = sessionOf(request);
    const webhook = await load(session, request.params);
    return sendPage(reply, replayPage(pageContext(session, webhook.marketplace_code), webhook, {}));
  });

  app.post(`${one}/replay`, { schema: { ...hide, params: WebhookParams, body: ReplayForm }, preHandler: requireSession }, async (request, reply) => {
    const session = sessionOf(request);
    const webhook = await load(session, request.params);
    const context = pageContext(session, webhook.marketplace_code);
    const body = request.body;
    const statuses: ReplayableStatus[] = body.status === undefined ? [] : Array.isArray(body.status) ? body.status : [body.status];
    const values: ReplayValues = { status: statuses, since: body.since, until: body.until, topic: body.topic, entity_id: body.entity_id, event_id: body.event_id };
    // Counting takes from the budget too, as the API's dry run does: it runs the same query.
    const refusal = refusedByTenantLimit(deps, session, 'replay');
    if (refusal) return sendRefusal(reply, refusal, replayPage(context, webhook, values, { matched: 0, error: refusal.detail }));
    // Every field's problem at once, in plain words (views/form-errors.ts).
    const problems: FieldError[] = [];
    if (statuses.length === 0) problems.push({ field: 'body.status', message: 'choose at least one status to replay' });
    const since = utcTime(body.since, 'since', problems);
    const until = utcTime(body.until, 'until', problems);
    const refused = (errors: FieldError[]) => sendPage(reply, replayPage(context, webhook, values, { matched: 0, error: errors.map(plainMessage).join(' · ') }), 400);
    if (problems.length > 0) return refused(problems);
    try {
      const dryRun = body.mode !== 'send';
      const outcome = await history.replay(
        webhook,
        { statuses, since, until, topic: blankToUndefined(body.topic), entityId: blankToUndefined(body.entity_id), eventId: blankToUndefined(body.event_id), dryRun },
        portalActor(session),
      );
      return sendPage(reply, replayPage(context, webhook, values, dryRun ? { matched: outcome.matched } : outcome), dryRun ? 200 : 202);
    } catch (error) {
      if (!(error instanceof AppError) || error.code !== 'validation_failed') throw error;
      if (error.options.errors?.length) return refused(error.options.errors);
      return sendPage(reply, replayPage(context, webhook, values, { matched: 0, error: error.detail }), 400);
    }
  });

  app.get('/portal/:marketplace_code/events', { schema: { ...hide, params: MarketplaceParams }, preHandler: requireSession }, async (request, reply) => {
    const session = sessionOf(request);
    assertInScope(session, request.params.marketplace_code);
    return sendPage(reply, cataloguePage(pageContext(session, request.params.marketplace_code)));
  });
};
