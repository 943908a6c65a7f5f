import { STATUS_CODE_PATTERN, isPublicationTopic, type EventBody } from '../event-schema.js';
import { computeChanges, sameJson, type FieldChange } from './entity-diff.js';
import type { Snapshot, SnapshotKey } from './snapshots.repository.js';

const STATUS_CODE = new RegExp(STATUS_CODE_PATTERN);

/** What the notification takes from the last snapshot where the producer left it out. */
export interface Derived {
  /** publication/update without `changes`, after an earlier snapshot: what changed. */
  changes?: FieldChange[];
  /** An order event without `state_from`: the order's previous state, null for the first. */
  stateFrom?: string | null;
  /** publication/update or order/update whose entity equals the last snapshot. */
  unchanged: boolean;
}

export function snapshotKey(event: EventBody, marketplaceCode: string): SnapshotKey {
  return { marketplaceCode, sellerId: event.seller_id, kind: isPublicationTopic(event.topic) ? 'publication' : 'order', entityId: String(event.entity_id) };
}

/**
 * The snapshot this event leaves: the entity object and, for an order, the state it is in: the event's
 * `state_to`, else the order's `status` when it is a status code (else null, nothing known).
 */
export function nextSnapshot(event: EventBody): Snapshot {
  if (isPublicationTopic(event.topic)) return { snapshot: event.publication!, state: null };
  const status = (event.order as Record<string, unknown>).status;
  const state = event.state_to ?? (typeof status === 'string' && STATUS_CODE.test(status) ? status : null);
  return { snapshot: event.order!, state };
}

/**
 * A field the producer sent (`changes`, `state_from`; an explicit null too) is kept as given; one left
 * out is derived from the previous snapshot (docs/events.md, "What changed").
 */
export function derive(event: EventBody, previous: Snapshot | undefined, next: Snapshot): Derived {
  const unchanged =
    (event.topic === 'publication/update' || event.topic === 'order/update') &&
    previous !== undefined &&
    previous.state === next.state &&
    sameJson(previous.snapshot, next.snapshot);
  if (isPublicationTopic(event.topic)) {
    const changes = event.topic === 'publication/update' && event.changes === undefined && previous ? computeChanges(previous.snapshot, next.snapshot) : undefined;
    return { unchanged, ...(changes ? { changes } : {}) };
  }
  return { unchanged, ...(event.state_from === undefined ? { stateFrom: previous?.state ?? null } : {}) };
}
