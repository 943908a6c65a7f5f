import type { DeliveryStatus } from '../../webhooks/deliveries.repository.js';

/** Which deliveries of one webhook a list or a replay is about; every field narrows. */
export interface DeliveryMatch {
  webhookId: number;
  statuses?: readonly DeliveryStatus[];
  /** Created at or after. */
  since?: Date;
  /** Created before. */
  until?: Date;
  /** The producer's event_id (the idempotency key). */
  eventId?: string;
  /** The entity: publication id or order reference (the deliveries' ordering key). */
  entityId?: string;
  /** The event's topic, one of the six intake topics. */
  topic?: string;
}

/**
 * The WHERE conditions of a match over `deliveries d JOIN events e`, appending the values to
 * `params` (positional parameters). Only conditions that are asked for are written, so that the
 * planner sees plain predicates it can use indexes for (webhook_id + created_at).
 */
export function deliveryConditions(match: DeliveryMatch, params: unknown[]): string[] {
  const add = (value: unknown) => `$${params.push(value)}`;
  const conditions = [`d.webhook_id = ${add(match.webhookId)}`];
  if (match.statuses) conditions.push(`d.status = ANY(${add(match.statuses)}::text[])`);
  if (match.since) conditions.push(`d.created_at >= ${add(match.since)}`);
  if (match.until) conditions.push(`d.created_at < ${add(match.until)}`);
  if (match.eventId !== undefined) conditions.push(`e.event_id = ${add(match.eventId)}`);
  // The event's entity id: a delivery's entity_key is its ordering key, marketplace:seller:entity.
  if (match.entityId !== undefined) conditions.push(`e.entity_id = ${add(match.entityId)}`);
  if (match.topic !== undefined) conditions.push(`e.topic = ${add(match.topic)}`);
  return conditions;
}
