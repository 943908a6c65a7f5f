import type { EventBody, EventTopic } from './event-schema.js';
import type { FieldChange } from './snapshots/entity-diff.js';

/** The spec's publication notification envelope. */
export interface PublicationNotification {
  seller_id: number;
  marketplace_connection_id: number;
  topic_path: string;
  entity_id: number;
  payload: { publication: Record<string, unknown>; changes: unknown; author: string };
}

/** The spec's sale notification envelope: no marketplace_connection_id. */
export interface SaleNotification {
  seller_id: number;
  topic_path: string;
  entity_id: string;
  payload: { order: Record<string, unknown>; state_from: string | null; state_to: string | null; author: string };
}

export type Notification = PublicationNotification | SaleNotification;

/**
 * topic_path includes the marketplace code (spec, Delivery 4). The spec shows the publication
 * form and the status-change form; the other order topics follow the same `<kind>/<mkt>/<action>`.
 */
export function topicPath(topic: EventTopic, marketplaceCode: string, stateTo?: string | null): string {
  const [kind, action] = topic.split('/') as [string, string];
  if (topic === 'order/status_change') return `order/${marketplaceCode}/status_changed/entered_${stateTo}`;
  return `${kind}/${marketplaceCode}/${action}`;
}

/**
 * Webhook topics an event reaches: a status change also reaches the subscribers of the status entered.
 * The first is the event's own topic, the family of them all (events.repository.ts, TOPIC_FAMILY).
 */
export function matchingTopics(topic: EventTopic, stateTo?: string | null): string[] {
  return topic === 'order/status_change' ? [topic, `order/status_change/entered_${stateTo}`] : [topic];
}

/** What Plaza fills in where the producer left a field out (snapshots/derive.ts). */
export interface DerivedFields {
  changes?: FieldChange[];
  stateFrom?: string | null;
}

/**
 * The body receivers get, built from a request already validated by validateEvent. A `changes` or
 * `state_from` the producer sent (null included) is kept as given; else the derived one, else null.
 */
export function buildNotification(event: EventBody, marketplaceCode: string, derived: DerivedFields = {}): Notification {
  const topic_path = topicPath(event.topic, marketplaceCode, event.state_to);
  if (event.topic.startsWith('publication/')) {
    return {
      seller_id: event.seller_id,
      marketplace_connection_id: event.marketplace_connection_id!,
      topic_path,
      entity_id: event.entity_id as number,
      payload: { publication: event.publication!, changes: event.changes !== undefined ? event.changes : (derived.changes ?? null), author: event.author },
    };
  }
  return {
    seller_id: event.seller_id,
    topic_path,
    entity_id: event.entity_id as string,
    payload: { order: event.order!, state_from: event.state_from !== undefined ? event.state_from : (derived.stateFrom ?? null), state_to: event.state_to ?? null, author: event.author },
  };
}
