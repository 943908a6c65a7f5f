import { AppError, type FieldError } from '../http/errors.js';
import { isPublicationTopic, type EventBody } from './event-schema.js';
import type { IntakeChecks } from './intake-checks.js';

/**
 * The rules the schema cannot say: which fields each topic needs, that the identifying field of
 * the object equals entity_id, and that the connection is the seller's on this marketplace.
 * All problems are reported together, one entry per field. The database's part comes from
 * readIntakeChecks.
 */
export function validateEvent(marketplaceCode: string, event: EventBody, check: IntakeChecks): void {
  const errors: FieldError[] = [];
  const add = (field: string, message: string) => errors.push({ field: `body.${field}`, message });

  if (isPublicationTopic(event.topic)) {
    if (typeof event.entity_id !== 'number') add('entity_id', 'must be an integer (the publication id) for publication topics');
    if (!event.publication) add('publication', 'is required for publication topics');
    else if (event.publication.id !== event.entity_id) add('publication.id', 'must equal entity_id');
    if (event.marketplace_connection_id === undefined) add('marketplace_connection_id', 'is required for publication topics');
    for (const field of ['order', 'state_from', 'state_to'] as const) {
      if (event[field] !== undefined) add(field, 'is only for order topics');
    }
  } else {
    if (typeof event.entity_id !== 'string') add('entity_id', 'must be a string (the order reference) for order topics');
    if (!event.order) add('order', 'is required for order topics');
    else if (event.order.reference_order !== event.entity_id) add('order.reference_order', 'must equal entity_id');
    if (event.topic === 'order/status_change' && event.state_to === undefined) add('state_to', 'is required for order/status_change');
    for (const field of ['publication', 'changes'] as const) {
      if (event[field] !== undefined) add(field, 'is only for publication topics');
    }
  }

  // Events of a seller that does not sell on this marketplace are refused: a seller reaches a
  // marketplace only through a connection. A deactivated seller or marketplace takes no events,
  // whoever sends them.
  if (check.marketplace_active === false) throw new AppError('tenant_inactive', `Marketplace ${marketplaceCode} is deactivated: it takes no events.`);
  if (check.seller_active === false) throw new AppError('tenant_inactive', `Seller ${event.seller_id} is deactivated: it takes no events.`);
  if (!check.seller_connected) add('seller_id', `has no connection to marketplace ${marketplaceCode}`);
  else if (event.marketplace_connection_id !== undefined && !check.connection_ok) {
    add('marketplace_connection_id', `is not a connection of seller ${event.seller_id} to marketplace ${marketplaceCode}`);
  }

  if (errors.length > 0) {
    throw new AppError('validation_failed', errors.map((error) => `${error.field} ${error.message}`).join('; '), { errors });
  }
}
