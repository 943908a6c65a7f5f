import { createHash, randomUUID } from 'node:crypto';
import type { Principal } from '../accounts/principal.js';
import { refuseIfUserGone } from '../auth/authenticate.js';
import type { Clock } from '../clock.js';
import type { Database } from '../db/database.js';
import { clockOffsetMs } from '../db/database-clock.js';
import { notifyDeliveryWorkers } from '../webhooks/deliveries.repository.js';
import { AppError } from '../http/errors.js';
import type { TenantRateLimits } from '../http/tenant-rate-limit.js';
import { buildNotification, matchingTopics } from './envelope.js';
import type { EventAccepted, EventBody } from './event-schema.js';
import { createDeliveries, findEvent, insertEvent, setDeliveryCount } from './events.repository.js';
import { validateEvent } from './validate-event.js';
import { supersedeEarlier } from './supersede.js';

/** JSON with object keys sorted, so that the same event sent with another key order hashes the same. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value as Record<string, unknown>)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value);
}

/** Everything but the key itself: a retry of the same event has the same hash. */
export function requestHash(event: EventBody): string {
  const { event_id: _key, ...rest } = event;
  return createHash('sha256').update(canonicalJson(rest)).digest('base64url');
}

/**
 * The caller may send events for this seller: an admin for any, a seller for its own, and a
 * marketplace for any seller connected to it. The marketplace in the path is already checked to be
 * the caller's (assertMarketplaceAccess) and the seller to be connected to it (validateEvent).
 */
export function assertMaySendFor(principal: Principal, sellerId: number): void {
  if (principal.role === 'admin' || principal.role === 'marketplace') return;
  if (principal.sellerId === sellerId) return;
  throw new AppError('forbidden', 'A seller may send events only for its own seller.');
}

function answerExisting(stored: { event_id: string; delivery_count: number; request_hash: string }, hash: string): EventAccepted {
  if (stored.request_hash !== hash) {
    throw new AppError('conflict', 'This event_id was already used for a different event of this seller in this marketplace.');
  }
  return { event_id: stored.event_id, deliveries: stored.delivery_count };
}

/**
 * The per-entity ordering key of a delivery (within its webhook): the marketplace, the seller and the
 * entity, so that one seller's failing delivery never holds back another seller's entity with the
 * same id. Neither a marketplace code nor a seller id contains ':'.
 */
export function entityOrderKey(marketplaceCode: string, sellerId: number, entityId: string | number): string {
  return `${marketplaceCode}:${sellerId}:${entityId}`;
}

/**
 * Accepts one event: the event row and one delivery per matching webhook are committed together
 * (transactional outbox), and the same transaction wakes the delivery workers. A repeated
 * event_id returns the first answer and creates nothing. event_id is scoped to the producer, the
 * seller the event is for: whoever sends it (a seller user, an admin or, later, an API key) may send
 * only for sellers it may act for, and the lookup never reads another seller's events.
 * The body's size is taken from the sender's event storage budget after the repeat lookup (a
 * repeat costs nothing) and the validation, before anything is written (a refusal writes nothing),
 * and given back when nothing was stored after all.
 */
export async function acceptEvent(
  deps: { db: Database; clock: Clock; tenantRateLimits?: TenantRateLimits },
  principal: Principal,
  marketplaceCode: string,
  event: EventBody,
): Promise<EventAccepted> {
  const { db, clock } = deps;
  const hash = requestHash(event);
  const eventId = event.event_id ?? randomUUID();

  if (event.event_id !== undefined) {
    // Most repeats are retries of a committed event: they get the first answer, even if the
    // database changed since (a connection removed), and without opening a transaction.
    const stored = await findEvent(db, marketplaceCode, event.seller_id, eventId);
    if (stored) return answerExisting(stored, hash);
  }
  await validateEvent(db, marketplaceCode, event);

  const now = clock.now();
  // The text stored and sent: its size is what the event costs the tenant's storage budget.
  const body = JSON.stringify(buildNotification(event, marketplaceCode));
  const giveBack = deps.tenantRateLimits?.takeEventBytes(principal, Buffer.byteLength(body)) ?? (() => {});
  try {
    const { accepted, inserted } = await insertWithDeliveries(db, principal, marketplaceCode, event, { eventId, hash, body, now, clock });
    if (!inserted) giveBack();
    return accepted;
  } catch (error) {
    giveBack();
    throw error;
  }
}

async function insertWithDeliveries(
  db: Database,
  principal: Principal,
  marketplaceCode: string,
  event: EventBody,
  { eventId, hash, body, now, clock }: { eventId: string; hash: string; body: string; now: Date; clock: Clock },
): Promise<{ accepted: EventAccepted; inserted: boolean }> {
  return db.transaction(async (tx) => {
    const rowId = await insertEvent(tx, {
      eventId,
      marketplaceCode,
      topic: event.topic,
      sellerId: event.seller_id,
      entityId: String(event.entity_id),
      requestHash: hash,
      createdBy: principal.userId,
      createdByApiKey: principal.apiKeyId ?? null,
      now,
    }).catch(refuseIfUserGone('events_created_by_fkey'));
    if (rowId === undefined) {
      // Another request with this event_id committed first (we waited on its row).
      const stored = await findEvent(tx, marketplaceCode, event.seller_id, eventId);
      if (!stored) throw new Error('event_id conflict without a stored event');
      return { accepted: answerExisting(stored, hash), inserted: false };
    }
    const count = await createDeliveries(tx, {
      eventRowId: rowId,
      marketplaceCode,
      sellerId: event.seller_id,
      entityKey: entityOrderKey(marketplaceCode, event.seller_id, event.entity_id),
      topics: matchingTopics(event.topic, event.state_to),
      now,
      clockOffsetMs: clockOffsetMs(clock),
    });
    if (count > 0) await supersedeEarlier(tx, rowId, clockOffsetMs(clock));
    await setDeliveryCount(tx, rowId, count, body);
    if (count > 0) await notifyDeliveryWorkers(tx);
    return { accepted: { event_id: eventId, deliveries: count }, inserted: true };
  });
}
