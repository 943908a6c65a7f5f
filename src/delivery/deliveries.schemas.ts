import { Type, type Static } from 'typebox';
import { MarketplaceCode, MAX_INT32, WebhookCode, WebhookParams } from '../http/path-params.js';
import { DELIVERY_STATUSES } from '../webhooks/deliveries.repository.js';
import type { DeliveryAttempt, DeliverySummary } from './history/delivery-history.repository.js';
import { EVENT_TOPICS, EventId, ORDER_REFERENCE_MAX_LENGTH } from '../events/event-schema.js';
import { REPLAYABLE_STATUSES } from './history/replay.js';

export const MAX_PAGE_SIZE = 100;
export const DEFAULT_PAGE_SIZE = 50;

const Timestamp = Type.String({ format: 'date-time' });
const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);
const Status = Type.Enum(DELIVERY_STATUSES);

export { WebhookParams };
export const DeliveryParams = Type.Object({
  marketplace_code: MarketplaceCode,
  code: WebhookCode,
  id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
});

/** Filters shared by the delivery log and the replay. */
const MatchFields = {
  event_id: Type.Optional(EventId('Only the deliveries of this event (the event_id given or generated at intake).')),
  entity_id: Type.Optional(Type.String({ minLength: 1, maxLength: ORDER_REFERENCE_MAX_LENGTH, description: 'Only the deliveries about this entity: a publication id or an order reference.' })),
  topic: Type.Optional(Type.Enum(EVENT_TOPICS, { description: 'Only the deliveries of events with this intake topic.' })),
};

export const ListQuery = Type.Object(
  {
    status: Type.Optional(Status),
    since: Type.Optional(Type.String({ format: 'date-time', description: 'Only deliveries created at or after this time.' })),
    until: Type.Optional(Type.String({ format: 'date-time', description: 'Only deliveries created before this time.' })),
    ...MatchFields,
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE })),
    cursor: Type.Optional(Type.String({ maxLength: 200, description: 'next_cursor of the previous page.' })),
  },
  { additionalProperties: false },
);
export type ListQuery = Static<typeof ListQuery>;

export const DeliveryItem = Type.Object({
  id: Type.Integer(),
  event_id: Type.String(),
  topic_path: Type.String(),
  status: Status,
  attempts: Type.Integer(),
  next_attempt_at: NullableTimestamp,
  last_status_code: Type.Union([Type.Integer(), Type.Null()]),
  last_error: Type.Union([Type.String(), Type.Null()]),
  created_at: Timestamp,
  completed_at: NullableTimestamp,
  blocked_by: Type.Union([Type.Integer(), Type.Null()], {
    description: 'Per-entity order: the id of the delivery this pending one waits for, the earliest earlier delivery of the same entity to the same webhook that is still pending or delivering (it goes first). Null when it waits for none, and for a delivery being sent, finished or held.',
  }),
  sequence: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], { description: 'The plaza-entity-sequence header: its position among this webhook\'s notifications of the same entity, from 1, without gaps. Null only for a delivery written by the previous release during a rolling upgrade (sent without the header).' }),
  superseded_by: Type.Union([Type.Integer(), Type.Null()], {
    description: 'Status `superseded` (latest-state mode): the id of the newer delivery of the same entity sent in its place. Null otherwise.',
  }),
});
export type DeliveryItem = Static<typeof DeliveryItem>;

export const DeliveryPage = Type.Object({
  items: Type.Array(DeliveryItem),
  next_cursor: Type.Union([Type.String(), Type.Null()], { description: 'Pass as `cursor` for the next page; null on the last page. Also sent as Link rel="next".' }),
});

export const AttemptItem = Type.Object({
  attempt: Type.Integer(),
  started_at: Timestamp,
  duration_ms: Type.Integer(),
  status_code: Type.Union([Type.Integer(), Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()]),
  response_body: Type.Union([Type.String(), Type.Null()], { description: 'The first 4 KiB of the answer.' }),
  request_headers: Type.Union([Type.Record(Type.String(), Type.String()), Type.Null()], {
    description: 'The request headers as sent: webhook-id, webhook-timestamp, webhook-signature, plaza-entity-sequence, content-type, user-agent and the webhook\'s own headers, whose values are masked when the name looks secret (authorization, *token*, *key*, …). Null for attempts recorded before this was kept, or when no request could be made.',
  }),
});

// In the single-delivery view `attempts` is the history itself; the count moves to attempt_count.
const { attempts: _count, ...detailFields } = DeliveryItem.properties;
export const DeliveryDetail = Type.Object({
  ...detailFields,
  attempt_count: Type.Integer({ description: 'Attempts made so far (the list view calls it attempts).' }),
  attempts: Type.Array(AttemptItem, { description: 'Each attempt, oldest first.' }),
  notification: Type.Object({}, {
    additionalProperties: true,
    description: 'The notification body exactly as it is (or, for a delivery not sent yet, would be) sent: the bytes the receiver gets and signs over, as in the notification feed. Only here, not in the list: a body can be large.',
  }),
});

export const ReplayBody = Type.Object(
  {
    since: Type.Optional(Type.String({ format: 'date-time', description: 'Deliveries created at or after this time; at most DELIVERY_REPLAY_MAX_DAYS back, which is also the default.' })),
    until: Type.Optional(Type.String({ format: 'date-time', description: 'Deliveries created before this time.' })),
    status: Type.Optional(Type.Array(Type.Enum(REPLAYABLE_STATUSES), { minItems: 1, uniqueItems: true, description: 'Statuses to replay; default `["failed"]`.' })),
    ...MatchFields,
    dry_run: Type.Optional(Type.Boolean({ default: false, description: 'Only count what matches (`matched`); nothing is sent.' })),
  },
  { additionalProperties: false, examples: [{ since: '2026-01-01T00:00:00Z', status: ['failed', 'succeeded'], topic: 'order/create', dry_run: true }] },
);
export const ReplayResult = Type.Object({
  replayed: Type.Integer({ description: 'Deliveries queued again (0 on a dry run).' }),
  matched: Type.Integer({ description: 'Deliveries the filter matches.' }),
  dry_run: Type.Boolean(),
});

export const EventDeliveriesParams = Type.Object({ marketplace_code: MarketplaceCode, event_id: EventId('The event_id given or generated at intake.') });
export const EventDelivery = Type.Object({ webhook_code: WebhookCode, ...DeliveryItem.properties });
export const EventDeliveriesQuery = Type.Object(
  {
    seller_id: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_INT32, description: 'The seller the event is for. An event_id is unique per seller only: needed when it names events of several sellers (409 otherwise).' })),
  },
  { additionalProperties: false },
);
export const EventDeliveries = Type.Object({
  event_id: Type.String(),
  seller_id: Type.Integer({ description: 'The seller the event is for.' }),
  topic: Type.String(),
  entity_id: Type.String(),
  created_at: Timestamp,
  deliveries: Type.Array(EventDelivery, { description: 'One per webhook of yours the event matched, by webhook code.' }),
});

const iso = (value: Date | null) => (value === null ? null : new Date(value).toISOString());

export function deliveryItem(row: DeliverySummary): DeliveryItem {
  return {
    id: Number(row.id),
    event_id: row.event_id,
    topic_path: row.topic_path,
    status: row.status,
    attempts: row.attempts,
    next_attempt_at: iso(row.next_attempt_at),
    last_status_code: row.last_status_code,
    last_error: row.last_error,
    created_at: iso(row.created_at)!,
    completed_at: iso(row.completed_at),
    blocked_by: row.blocked_by === null ? null : Number(row.blocked_by),
    sequence: row.sequence === null ? null : Number(row.sequence),
    superseded_by: row.superseded_by === null ? null : Number(row.superseded_by),
  };
}

export function attemptItem(row: DeliveryAttempt) {
  return { ...row, started_at: iso(row.started_at)! };
}
