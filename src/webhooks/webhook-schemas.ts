import { Type } from 'typebox';
import { DISABLED_REASONS, type DisabledReason } from './disabled-reasons.js';
import { CALLBACK_URL_MAX_LENGTH, FIXED_TOPICS, MAX_HEADERS, MAX_HEADERS_BYTES, NAME_MAX_LENGTH } from './webhook-validators.js';
import { CODE_PATTERN, MarketplaceParams, WebhookParams } from '../http/path-params.js';
import { DELIVERY_MODES } from './webhook-access.js';
import { FILTER_MAX_BYTES, FILTER_MAX_DEPTH } from './filter/filter.js';

/**
 * Request and response schemas of the webhook endpoints. Types and documentation live here; the
 * rules that need more than a type (topic forms, URL, headers, name trimming) are the pure
 * functions of webhook-validators.ts, so that each error names its field with a clear message.
 */
const exampleHeaders = { Authorization: 'Bearer 6f1c2d', 'X-Shop': 'north-1' };

const Code = Type.String({ pattern: CODE_PATTERN, description: 'Identifier of the webhook inside the marketplace: 1–100 ASCII letters, digits, `_` or `-`. Unique per tenant and marketplace; cannot be changed.', examples: ['orders-main'] });
const Name = Type.String({ description: `Free text label, trimmed, 1–${NAME_MAX_LENGTH} characters, no control characters, at least one visible.`, examples: ['Orders to ERP'] });
const Topic = Type.String({
  description: `One of ${FIXED_TOPICS.join(', ')}, or \`order/status_change/<status_code>\` (also accepted as \`order/status_change/entered_<status_code>\`; stored and returned in the \`entered_\` form). Status codes are 1–32 ASCII letters, digits or \`_\`. Cannot be changed.`,
  examples: ['order/create', 'order/status_change/entered_paid'],
});
const CallbackUrl = Type.String({ maxLength: CALLBACK_URL_MAX_LENGTH, description: `Absolute http or https URL, at most ${CALLBACK_URL_MAX_LENGTH} characters, without credentials or fragment. A literal IP address must be public (or in WEBHOOK_ALLOWED_NETWORKS).`, examples: ['https://erp.example.com/hooks/plaza'] });
const SellerIdIn = Type.Union([Type.String(), Type.Integer()], { description: '`*` (default: every seller the tenant may see) or one seller id; a JSON number is accepted and stored as its string. Seller users: only their own id or `*`.', examples: ['*', '42'] });
const SellerIdOut = Type.String({ description: '`*` or one seller id.', examples: ['*'] });
const Headers = Type.Record(Type.String(), Type.String(), {
  description: `Headers added to each notification: at most ${MAX_HEADERS} entries and ${MAX_HEADERS_BYTES} bytes in all; names are HTTP tokens; values printable ASCII. Names the service sets (host, content-*, user-agent, webhook-*, proxy-*, …) are refused.`,
  examples: [exampleHeaders],
});
const Timestamp = Type.String({ format: 'date-time' });
const DeliveryModeSchema = Type.Enum(DELIVERY_MODES, {
  description: '`all` (default): every notification is sent. `latest`: per entity, only the newest not yet sent: a new notification of an entity supersedes the webhook\'s waiting, retrying and held ones of that entity (status `superseded`, never sent); a send in progress finishes. For stock and price, where only the current state matters.',
  examples: ['all'],
});
const FILTER_DESCRIPTION =
  `Only notifications whose body matches get a delivery (evaluated at intake); null (the default): every notification of the topic. A MongoDB-style query: keys are dotted paths into the body (\`payload.order.status\`) or \`$and\`, \`$or\` (arrays of filters), \`$not\` (a filter); a literal value is equality, an object of operators \`$eq $ne $in $nin $gt $gte $lt $lte $exists\` holds when all hold. At most ${FILTER_MAX_BYTES} bytes and ${FILTER_MAX_DEPTH} levels; no regular expressions. See docs/webhooks.md, Filters.`;
const filterExample = { 'payload.order.status': { $in: ['APRO', 'PROC'] }, 'payload.order.total': { $gte: 100 } };
const FilterObject = Type.Unsafe<Record<string, unknown>>({ type: 'object', additionalProperties: true, description: 'A filter (docs/webhooks.md, Filters).', examples: [filterExample] });
const FilterIn = Type.Union([FilterObject, Type.Null()], { description: FILTER_DESCRIPTION, examples: [filterExample] });
const FilterOut = Type.Union([FilterObject, Type.Null()], { description: FILTER_DESCRIPTION });
const SEND_TRACEPARENT_DESCRIPTION =
  'Whether each notification carries a W3C `traceparent` header naming the span of its send, so that the receiver\'s traces can join Plaza\'s; sent only while Plaza exports traces (docs/operations.md, Traces), not signed. Off by default: the header gives the receiver Plaza\'s trace and span ids (docs/webhooks.md, Trace context).';
const SendTraceparent = Type.Boolean({ description: SEND_TRACEPARENT_DESCRIPTION });

export { MarketplaceParams, WebhookParams };

export const CreateWebhookBody = Type.Object(
  { code: Code, name: Name, topic: Topic, callback_url: CallbackUrl, seller_id: Type.Optional(SellerIdIn), headers: Type.Optional(Headers), delivery_mode: Type.Optional(DeliveryModeSchema), filter: Type.Optional(FilterIn), send_traceparent: Type.Optional(SendTraceparent) },
  {
    additionalProperties: false,
    examples: [{ code: 'orders-main', name: 'Orders to ERP', topic: 'order/status_change/paid', callback_url: 'https://erp.example.com/hooks/plaza', seller_id: '42', headers: exampleHeaders }],
  },
);

export const UpdateWebhookBody = Type.Object(
  {
    name: Type.Optional(Name),
    callback_url: Type.Optional(CallbackUrl),
    seller_id: Type.Optional(SellerIdIn),
    headers: Type.Optional(Type.Record(Type.String(), Type.String(), { description: 'Replaces the whole map of headers.' })),
    delivery_mode: Type.Optional(DeliveryModeSchema),
    filter: Type.Optional(Type.Union([FilterObject, Type.Null()], { description: 'Replaces the filter; null removes it (every notification of the topic).' })),
    send_traceparent: Type.Optional(SendTraceparent),
    active: Type.Optional(Type.Boolean({ description: '`false` pauses: events that match meanwhile are recorded as held deliveries. `true` resumes (or re-enables a webhook the delivery disabled, clearing the reason): held deliveries go out in order and waiting retries are due at once.' })),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    description: '`code` and `topic` cannot be changed (400 `immutable_field`); unknown fields are 400.',
    examples: [{ callback_url: 'https://erp.example.com/hooks/v2', headers: { Authorization: 'Bearer 9a8b7c' } }],
  },
);

const listItemProperties = { code: Code, name: Name, topic: Topic, callback_url: CallbackUrl, headers: Headers };
const webhookProperties = {
  ...listItemProperties,
  seller_id: SellerIdOut,
  filter: FilterOut,
  active: Type.Boolean({ description: 'False once paused (PATCH active=false: matching events are held) or disabled by the delivery (lasting failures or a 410: nothing is recorded).' }),
  disabled_reason: Type.Union([Type.Enum(Object.keys(DISABLED_REASONS) as DisabledReason[]), Type.Null()], {
    description: 'Why it is disabled, as a code (null while active): disabled_by_user (a pause: matching events are held), receiver_gone (410), failing_too_long, tenant_deactivated (its seller or marketplace is deactivated: matching events are held until it is activated again).',
  }),
  disabled_message: Type.Union([Type.String(), Type.Null()], { description: 'The same reason in words, for people; null while active.' }),
  disabled_at: Type.Union([Timestamp, Type.Null()], { description: 'When it was paused or disabled, while it is.' }),
  last_success_at: Type.Union([Timestamp, Type.Null()], { description: 'When a delivery last succeeded (updated at most once a minute).' }),
  failing_since: Type.Union([Timestamp, Type.Null()], { description: 'Since when deliveries have been failing without a success; null while healthy.' }),
  delivery_mode: DeliveryModeSchema,
  send_traceparent: SendTraceparent,
  held_count: Type.Integer({ description: 'Deliveries held by a pause; they go out, in order, when the webhook is active again (older than DELIVERY_RETENTION_DAYS are pruned).' }),
  created_at: Timestamp,
  updated_at: Timestamp,
};
const exampleWebhook = {
  code: 'orders-main',
  name: 'Orders to ERP',
  topic: 'order/status_change/entered_paid',
  seller_id: '42',
  callback_url: 'https://erp.example.com/hooks/plaza',
  headers: exampleHeaders,
  filter: null,
  active: true,
  disabled_reason: null,
  disabled_message: null,
  disabled_at: null,
  last_success_at: '2026-01-01T00:05:00.000Z',
  failing_since: null,
  delivery_mode: 'all',
  send_traceparent: false,
  held_count: 0,
  created_at: '2026-01-01T00:00:00.000Z',
  updated_at: '2026-01-01T00:00:00.000Z',
};

export const WebhookListItem = Type.Object(listItemProperties, { additionalProperties: false });
export const WebhookList = Type.Array(WebhookListItem, {
  description: 'Ordered by code. When there are more, a `Link: <…>; rel="next"` header gives the next page.',
  examples: [[{ code: 'orders-main', name: 'Orders to ERP', topic: 'order/create', callback_url: 'https://erp.example.com/hooks/plaza', headers: {} }]],
});
export const Webhook = Type.Object(webhookProperties, { additionalProperties: false, examples: [exampleWebhook] });
export const CreatedWebhook = Type.Object(
  { ...webhookProperties, secret: Type.String({ description: 'Signing secret (Standard Webhooks, `whsec_…`). Shown only here and on rotation.' }) },
  { additionalProperties: false, examples: [{ ...exampleWebhook, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }] },
);
export const RotatedSecret = Type.Object(
  {
    secret: Type.String({ description: 'The new signing secret, shown only here.' }),
    previous_secret_expires_at: Type.String({ format: 'date-time', description: 'Until then the previous secret signs alongside the new one.' }),
  },
  { additionalProperties: false, examples: [{ secret: 'whsec_3s1X9cZ7gM1f2L0oTqkR5yB8vN4wH6aJ', previous_secret_expires_at: '2026-01-02T00:00:00.000Z' }] },
);

export const DEFAULT_PAGE_SIZE = 100;
export const ListQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: DEFAULT_PAGE_SIZE, description: 'Page size (1–100).' })),
    cursor: Type.Optional(Type.String({ maxLength: 400, description: 'Opaque position from the `Link rel="next"` header.' })),
  },
);

export const FilterTestBody = Type.Object(
  {
    filter: Type.Unsafe<Record<string, unknown>>({ type: 'object', additionalProperties: true, description: 'The filter to test, as a webhook\'s `filter`.' }),
    notification: Type.Unsafe<Record<string, unknown>>({ type: 'object', additionalProperties: true, description: 'A notification body, as a receiver gets it (the portal\'s event catalogue has one per topic).' }),
  },
  {
    additionalProperties: false,
    examples: [{ filter: { 'payload.order.status': 'APRO' }, notification: { seller_id: 42, topic_path: 'order/MKT/update', entity_id: 'ORD-1', payload: { order: { reference_order: 'ORD-1', status: 'APRO' }, state_from: null, state_to: null, author: 'system' } } }],
  },
);
export const FilterTestResult = Type.Object(
  { matches: Type.Boolean({ description: 'Whether a webhook with this filter would get this notification.' }) },
  { additionalProperties: false, examples: [{ matches: true }] },
);
