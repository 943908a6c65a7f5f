import { Type, type Static } from 'typebox';
import { MarketplaceParams, MAX_INT32 } from '../http/path-params.js';

/** The six topics a producer may send; status-specific subscriptions are matched, never sent. */
export const EVENT_TOPICS = ['publication/create', 'publication/update', 'order/create', 'order/update', 'order/invoice_upload', 'order/status_change'] as const;
export type EventTopic = (typeof EVENT_TOPICS)[number];

export const isPublicationTopic = (topic: EventTopic): boolean => topic.startsWith('publication/');

/** An order status code (`APRO`, `PROC`): it becomes part of a topic and of topic_path. */
export const STATUS_CODE_PATTERN = '^[A-Za-z0-9_]{1,32}$';
export const EVENT_ID_MAX_LENGTH = 200;

/**
 * `changes` as the producer sends it: an object, an array of anything, or null. `items: {}` says
 * "any items" out loud: JSON Schema needs no `items` beside `type: array`, but OpenAPI linters
 * (Spectral's array-items) and generated clients do, and it accepts exactly what it did without.
 */
export const CHANGES_SCHEMA = { type: ['object', 'array', 'null'], items: {} };

/** An event_id wherever it is accepted (body, path, filter): visible ASCII only, so no NUL or control character reaches SQL. */
export const EventId = (description: string) => Type.String({ pattern: `^[!-~]{1,${EVENT_ID_MAX_LENGTH}}$`, description });
export const AUTHOR_MAX_LENGTH = 200;
export const ORDER_REFERENCE_MAX_LENGTH = 200;

export { MarketplaceParams };

/**
 * The platform's objects are large and free-form: only the identifying field is checked, the rest
 * is passed through to receivers untouched.
 */
const PublicationObject = Type.Object(
  { id: Type.Integer({ minimum: 1, description: 'Publication id; equals entity_id.' }) },
  { additionalProperties: true, description: 'The publication object (spec: Publication object), passed through as given.' },
);
const OrderObject = Type.Object(
  { reference_order: Type.String({ minLength: 1, maxLength: ORDER_REFERENCE_MAX_LENGTH, description: 'Order reference; equals entity_id.' }) },
  { additionalProperties: true, description: 'The order object (spec: Order object), passed through as given.' },
);

export const EventBody = Type.Object(
  {
    event_id: Type.Optional(
      EventId(`Idempotency key, unique per seller in a marketplace: 1–${EVENT_ID_MAX_LENGTH} visible ASCII characters. Generated (UUID) when absent.`),
    ),
    topic: Type.Enum(EVENT_TOPICS, { description: 'One of the six fixed topics.' }),
    seller_id: Type.Integer({ minimum: 1, maximum: MAX_INT32, description: 'The seller the entity belongs to.' }),
    entity_id: Type.Unsafe<number | string>({
      type: ['integer', 'string'],
      minimum: 1,
      minLength: 1,
      maxLength: ORDER_REFERENCE_MAX_LENGTH,
      description: 'Publication id (integer) for publication topics, order reference (string) for order topics.',
    }),
    marketplace_connection_id: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_INT32, description: 'Required for publication topics: a connection of the seller to this marketplace.' })),
    publication: Type.Optional(PublicationObject),
    order: Type.Optional(OrderObject),
    changes: Type.Optional(Type.Unsafe<Record<string, unknown> | unknown[] | null>({ ...CHANGES_SCHEMA, description: 'Publication topics only: what changed, kept as given (null included). Left out on publication/update, Plaza computes it from the last accepted publication (docs/events.md).' })),
    state_from: Type.Optional(Type.Unsafe<string | null>({ type: ['string', 'null'], pattern: STATUS_CODE_PATTERN, description: 'Order topics only: the previous status, or null, kept as given. Left out, Plaza derives it from the last accepted event of the order (docs/events.md).' })),
    state_to: Type.Optional(Type.String({ pattern: STATUS_CODE_PATTERN, description: 'Order topics only; required for order/status_change. The status entered.' })),
    author: Type.String({ minLength: 1, maxLength: AUTHOR_MAX_LENGTH, description: 'Who made the change.' }),
  },
  { additionalProperties: false },
);
export type EventBody = Static<typeof EventBody>;

export const EventAccepted = Type.Object({
  event_id: Type.String({ description: 'The idempotency key, given or generated.' }),
  deliveries: Type.Integer({ description: 'Number of deliveries created for the matching webhooks.' }),
  unchanged: Type.Optional(
    Type.Literal(true, {
      description: 'Present (true) when a publication/update or order/update carried the entity exactly as last accepted (canonical JSON): no deliveries were created (SKIP_UNCHANGED_EVENTS).',
    }),
  ),
});
export type EventAccepted = Static<typeof EventAccepted>;
