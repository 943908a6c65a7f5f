import { buildNotification, topicPath, type DerivedFields } from './envelope.js';
import { CHANGES_SCHEMA, EVENT_TOPICS, isPublicationTopic, STATUS_CODE_PATTERN, type EventBody, type EventTopic } from './event-schema.js';

/**
 * What a receiver gets for each topic, for the portal's event catalogue: the topic_path form, a
 * JSON Schema of the notification body (the envelope; the platform's objects are passed through
 * as the producer sent them, so only their identifying field is described) and an example body
 * built by the same code that builds real notifications.
 */
export interface CatalogueEntry {
  topic: EventTopic;
  topicPathForm: string;
  schema: Record<string, unknown>;
  example: unknown;
}

const SELLER_ID = { type: 'integer', minimum: 1, description: 'The seller the entity belongs to.' };
const CHANGES = {
  ...CHANGES_SCHEMA,
  description:
    'The producer\'s `changes`, kept as given (null too). Left out on publication/update after an earlier publication: what changed, computed by Plaza, an array of {field, from, to} (dotted paths for nested fields, arrays compared whole, added or removed fields with from or to null; empty when nothing changed). Else null.',
};
const STATE_FROM = {
  type: ['string', 'null'],
  pattern: STATUS_CODE_PATTERN,
  description: 'The producer\'s `state_from`, kept as given (null too). Left out: the state the order was in (the last accepted state_to, else the last order\'s status), null for its first event.',
};
const AUTHOR = { type: 'string', description: 'Who made the change.' };

function publicationSchema(topic: EventTopic): Record<string, unknown> {
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    title: `Notification body of ${topic}`,
    type: 'object',
    required: ['seller_id', 'marketplace_connection_id', 'topic_path', 'entity_id', 'payload'],
    properties: {
      seller_id: SELLER_ID,
      marketplace_connection_id: { type: 'integer', description: 'The seller\'s connection to the marketplace.' },
      topic_path: { type: 'string', pattern: `^publication/[A-Za-z0-9_-]+/${topic.split('/')[1]}$` },
      entity_id: { type: 'integer', description: 'The publication id.' },
      payload: {
        type: 'object',
        required: ['publication', 'changes', 'author'],
        properties: {
          publication: { type: 'object', required: ['id'], properties: { id: { type: 'integer' } }, additionalProperties: true },
          changes: CHANGES,
          author: AUTHOR,
        },
      },
    },
  };
}

function orderSchema(topic: EventTopic): Record<string, unknown> {
  const action = topic === 'order/status_change' ? 'status_changed/entered_[A-Za-z0-9_]{1,32}' : topic.split('/')[1];
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    title: `Notification body of ${topic}`,
    type: 'object',
    required: ['seller_id', 'topic_path', 'entity_id', 'payload'],
    properties: {
      seller_id: SELLER_ID,
      topic_path: { type: 'string', pattern: `^order/[A-Za-z0-9_-]+/${action}$` },
      entity_id: { type: 'string', description: 'The order reference.' },
      payload: {
        type: 'object',
        required: ['order', 'state_from', 'state_to', 'author'],
        properties: {
          order: { type: 'object', required: ['reference_order'], properties: { reference_order: { type: 'string' } }, additionalProperties: true },
          state_from: STATE_FROM,
          state_to: { type: ['string', 'null'], pattern: STATUS_CODE_PATTERN },
          author: AUTHOR,
        },
      },
    },
  };
}

function exampleEvent(topic: EventTopic): EventBody {
  if (isPublicationTopic(topic)) {
    return { topic, seller_id: 42, entity_id: 1001, marketplace_connection_id: 7, publication: { id: 1001, ...{ sku: 'SKU-1001', stock: 5, active: true, revisionStatus: 'PENDING' } }, ...(topic === 'publication/update' ? {} : { changes: null }), author: 'jane@seller.example' };
  }
  return {
    topic,
    seller_id: 42,
    entity_id: 'ORD-2026-0001',
    order: { reference_order: 'ORD-2026-0001', ...{ id: 77, status: 'APRO', products_subtotal: 21 } },
    ...(topic === 'order/update' ? {} : { state_from: topic === 'order/status_change' ? 'PROC' : null }),
    state_to: 'APRO',
    author: 'system',
  };
}

/**
 * What Plaza computes in the examples: a publication/update without the producer's `changes`, after
 * a publication with 6 in stock; an order/update of an order that was in PROC.
 */
const EXAMPLE_DERIVED: Partial<Record<EventTopic, DerivedFields>> = {
  'publication/update': { changes: [{ field: 'stock', from: 6, to: 5 }] },
  'order/update': { stateFrom: 'PROC' },
};

export function notificationCatalogue(marketplaceCode: string): CatalogueEntry[] {
  return EVENT_TOPICS.map((topic) => ({
    topic,
    topicPathForm: topic === 'order/status_change' ? topicPath(topic, '<marketplace_code>', '<status_code>') : topicPath(topic, '<marketplace_code>'),
    schema: isPublicationTopic(topic) ? publicationSchema(topic) : orderSchema(topic),
    example: buildNotification(exampleEvent(topic), marketplaceCode, EXAMPLE_DERIVED[topic]),
  }));
}
