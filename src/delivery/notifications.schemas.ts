import { Type } from 'typebox';
import { MarketplaceCode, WebhookCode } from '../http/path-params.js';

/** The notification feed (GET …/webhooks/{code}/notifications), issue 30. */
export const FEED_MAX_PAGE_SIZE = 500;
export const FEED_DEFAULT_PAGE_SIZE = 100;
export const FEED_MAX_WAIT_SECONDS = 30;

export const FeedParams = Type.Object({ marketplace_code: MarketplaceCode, code: WebhookCode });

export const FeedQuery = Type.Object(
  {
    after: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: '`next_cursor` of a previous answer. Absent: from the oldest notification kept.' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: FEED_MAX_PAGE_SIZE, default: FEED_DEFAULT_PAGE_SIZE })),
    wait: Type.Optional(Type.Integer({
      minimum: 0,
      maximum: FEED_MAX_WAIT_SECONDS,
      default: 0,
      description: 'Long poll: when nothing is newer than `after`, wait up to this many seconds and answer as soon as something is. At most NOTIFICATION_FEED_MAX_WAITERS_PER_TENANT requests of one tenant wait at once (429 beyond).',
    })),
  },
  { additionalProperties: false },
);

export const FeedItem = Type.Object({
  webhook_id: Type.String({ description: 'The notification\'s `webhook-id` header: the same on every attempt, retry and replay.' }),
  created_at: Type.String({ format: 'date-time' }),
  entity_id: Type.String({ description: 'The publication id or order reference the notification is about.' }),
  sequence: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], { description: 'Its `plaza-entity-sequence` header: its position among this webhook\'s notifications of the same entity, from 1, without gaps. Null only for a notification written by the previous release during a rolling upgrade.' }),
  topic_path: Type.String(),
  notification: Type.Object({}, { additionalProperties: true, description: 'The notification body exactly as it is (or would be) sent, byte for byte.' }),
});

export const FeedPageSchema = Type.Object({
  items: Type.Array(FeedItem, { description: 'In creation order, whatever their delivery state (sent, waiting, failing, failed, held by a pause, superseded, of a disabled webhook).' }),
  next_cursor: Type.String({ description: 'Always a string: pass it as `after` next time. After the last item; when nothing was newer, the same position as `after`.' }),
});
