import type { Principal } from '../accounts/principal.js';
import { tenantActiveSql } from '../accounts/tenant-state.js';
import type { Queryable } from '../db/database.js';
import { AppError, type FieldError } from '../http/errors.js';
import { marketplaceNotFound, marketplaceVisibleSql } from '../webhooks/webhook-access.js';
import { isPublicationTopic, type EventBody } from './event-schema.js';
import type { StoredEvent } from './events.repository.js';

/** What the intake reads before its transaction, in one statement (readIntakeChecks). */
export interface IntakeChecks {
  /** The caller's own seller or marketplace is active (tenantActiveSql; always for an admin). */
  tenant_active: boolean;
  /** The caller may use the marketplace in the path (assertMarketplaceAccess's rule). */
  visible: boolean;
  /** The producer's earlier event with this event_id, if any: a repeat answers from it. */
  stored: StoredEvent | null;
  seller_connected: boolean;
  connection_ok: boolean;
  seller_active: boolean | null;
  marketplace_active: boolean | null;
}

/**
 * One round trip before the intake's transaction: whether the caller's tenant is active (the route
 * leaves that to this statement: tenantStateReadByRoute), whether it may use the marketplace, the
 * producer's earlier use of the event_id (the seller the event is for; another seller's event with
 * the same key is never read), and what validateEvent checks in the database: that the seller
 * sells on this marketplace through the given connection, and that both are active.
 */
export async function readIntakeChecks(db: Queryable, principal: Principal, marketplaceCode: string, event: EventBody, eventId: string | null): Promise<IntakeChecks> {
  const { rows } = await db.query<IntakeChecks>(
    `SELECT ${tenantActiveSql('$5::text', '$6::int', '$7::text')} AS tenant_active,
            ${marketplaceVisibleSql('$1::text', '$5::text', '$6::int', '$7::text')} AS visible,
            (SELECT row_to_json(e) FROM (
               SELECT id, event_id, delivery_count, request_hash, unchanged FROM events
                WHERE marketplace_code = $1 AND seller_id = $2 AND event_id = $4) e) AS stored,
            EXISTS (SELECT 1 FROM marketplace_connections WHERE marketplace_code = $1 AND seller_id = $2) AS seller_connected,
            EXISTS (SELECT 1 FROM marketplace_connections WHERE marketplace_code = $1 AND seller_id = $2 AND id = $3) AS connection_ok,
            (SELECT active FROM sellers WHERE id = $2) AS seller_active,
            (SELECT active FROM marketplaces WHERE code = $1) AS marketplace_active`,
    [marketplaceCode, event.seller_id, event.marketplace_connection_id ?? null, eventId, principal.role, principal.sellerId, principal.marketplaceCode],
  );
  return rows[0]!;
}

/** assertMarketplaceAccess's answer from the checks: 404 for a marketplace the caller may not use. */
export function assertMarketplaceVisible(checks: IntakeChecks): void {
  if (!checks.visible) throw marketplaceNotFound();
}

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
