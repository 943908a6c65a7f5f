import { Type, type Static } from 'typebox';
import { MarketplaceCode, WebhookCode, WebhookParams } from '../http/path-params.js';
import { DELIVERY_STATUSES, type DeliveryAttempt, type DeliverySummary } from './deliveries.repository.js';

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

export const ListQuery = Type.Object(
  {
    status: Type.Optional(Status),
    since: Type.Optional(Type.String({ format: 'date-time', description: 'Only deliveries created at or after this time.' })),
    until: Type.Optional(Type.String({ format: 'date-time', description: 'Only deliveries created before this time.' })),
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
});

// In the single-delivery view `attempts` is the history itself; the count moves to attempt_count.
const { attempts: _count, ...detailFields } = DeliveryItem.properties;
export const DeliveryDetail = Type.Object({
  ...detailFields,
  attempt_count: Type.Integer({ description: 'Attempts made so far (the list view calls it attempts).' }),
  attempts: Type.Array(AttemptItem, { description: 'Each attempt, oldest first.' }),
});

export const ReplayBody = Type.Object({ since: Type.String({ format: 'date-time' }) }, { additionalProperties: false });
export const ReplayResult = Type.Object({ replayed: Type.Integer({ description: 'Failed deliveries queued again.' }) });

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
  };
}

export function attemptItem(row: DeliveryAttempt) {
  return { ...row, started_at: iso(row.started_at)! };
}
