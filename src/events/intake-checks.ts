import type { Principal } from '../accounts/principal.js';
import { tenantActiveSql } from '../accounts/tenant-state.js';
import type { Queryable } from '../db/database.js';
import { marketplaceVisibleSql } from '../webhooks/webhook-access.js';
import { matchingTopics } from './envelope.js';
import type { EventBody } from './event-schema.js';
import { filteredWebhooksSql, type StoredEvent } from './events.repository.js';

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
  /** The webhooks of the fan-out that have a filter, with it (filteredWebhooksSql); null for none. */
  filtered: { id: number; filter: Record<string, unknown> }[] | null;
}

/**
 * One round trip before the intake's transaction: whether the caller's tenant is active (the route
 * leaves that to this statement: tenantStateReadByRoute), whether it may use the marketplace, the
 * producer's earlier use of the event_id (the seller the event is for; another seller's event with
 * the same key is never read), what validateEvent checks in the database: that the seller sells on
 * this marketplace through the given connection, and that both are active; and the filters the
 * fan-out evaluates, only when nothing before refuses or answers the event (read here, outside the
 * transaction: the fan-out's statement only narrows to the ids that matched, so a filter changed
 * since counts as it was read here).
 */
export async function readIntakeChecks(db: Queryable, principal: Principal, marketplaceCode: string, event: EventBody, eventId: string | null): Promise<IntakeChecks> {
  const { rows } = await db.query<IntakeChecks>(
    `SELECT c.*,
            -- Only for an event that gets as far as its fan-out: a refused or repeated one reads no
            -- webhook (the subquery is evaluated only when the CASE reaches it), so a request refused
            -- for another marketplace costs nothing more and tells nothing of its webhooks.
            CASE WHEN c.tenant_active AND c.visible AND c.stored IS NULL AND c.seller_connected
                 THEN ${filteredWebhooksSql({ marketplace: '$1', sellerText: '$8', topics: '$9', sellerInt: '$2' })}
            END AS filtered
       FROM (SELECT ${tenantActiveSql('$5::text', '$6::int', '$7::text')} AS tenant_active,
                    ${marketplaceVisibleSql('$1::text', '$5::text', '$6::int', '$7::text')} AS visible,
                    (SELECT row_to_json(e) FROM (
                       SELECT id, event_id, delivery_count, request_hash, unchanged FROM events
                        WHERE marketplace_code = $1 AND seller_id = $2 AND event_id = $4) e) AS stored,
                    EXISTS (SELECT 1 FROM marketplace_connections WHERE marketplace_code = $1 AND seller_id = $2) AS seller_connected,
                    EXISTS (SELECT 1 FROM marketplace_connections WHERE marketplace_code = $1 AND seller_id = $2 AND id = $3) AS connection_ok,
                    (SELECT active FROM sellers WHERE id = $2) AS seller_active,
                    (SELECT active FROM marketplaces WHERE code = $1) AS marketplace_active
             OFFSET 0) c`,
    [
      marketplaceCode, event.seller_id, event.marketplace_connection_id ?? null, eventId, principal.role, principal.sellerId, principal.marketplaceCode,
      String(event.seller_id), matchingTopics(event.topic, event.state_to),
    ],
    // Prepared, as the fan-out (createDeliveries), whose conditions on webhooks the filters' subquery
    // shares: its plans stay probes as the tables grow (intake-plans.test.ts).
    { prepare: true },
  );
  return rows[0]!;
}
