import { createHash, randomUUID } from 'node:crypto';
import type { Principal } from '../accounts/principal.js';
import { refuseIfUserGone } from '../auth/authenticate.js';
import type { Clock } from '../clock.js';
import type { Database } from '../db/database.js';
import { clockOffsetMs } from '../db/database-clock.js';
import { AppError } from '../http/errors.js';
import type { TenantRateLimits } from '../http/tenant-rate-limit.js';
import { buildNotification, matchingTopics } from './envelope.js';
import type { EventAccepted, EventBody } from './event-schema.js';
import { createDeliveries, findEvent, insertEvent, markUnchanged } from './events.repository.js';
import { matchesFilter } from '../webhooks/filter/filter.js';
import { derive, nextSnapshot, snapshotKey } from './snapshots/derive.js';
import { replaceSnapshot } from './snapshots/snapshots.repository.js';
import { validateEvent } from './validate-event.js';
import { readIntakeChecks } from './intake-checks.js';
import { marketplaceNotFound } from '../webhooks/webhook-access.js';
import { supersedeEarlier } from './supersede.js';
import { canonicalJson } from './canonical-json.js';
import { activeTracer, inSpan, type TraceSpan } from '../telemetry/tracing.js';

export { canonicalJson };

/** Everything but the key itself: a retry of the same event has the same hash. */
export function requestHash(event: EventBody): string {
  const { event_id: _key, ...rest } = event;
  return createHash('sha256').update(canonicalJson(rest)).digest('base64url');
}

/**
 * The caller may send events for this seller: an admin for any, a seller for its own, and a
 * marketplace for any seller connected to it. That the marketplace in the path is one the caller may
 * use and the seller is connected to it, the intake checks next (readIntakeChecks, validateEvent).
 */
export function assertMaySendFor(principal: Principal, sellerId: number): void {
  if (principal.role === 'admin' || principal.role === 'marketplace') return;
  if (principal.sellerId === sellerId) return;
  throw new AppError('forbidden', 'A seller may send events only for its own seller.');
}

function answerExisting(stored: { event_id: string; delivery_count: number; request_hash: string; unchanged: boolean }, hash: string): EventAccepted {
  if (stored.request_hash !== hash) {
    throw new AppError('conflict', 'This event_id was already used for a different event of this seller in this marketplace.');
  }
  return { event_id: stored.event_id, deliveries: stored.delivery_count, ...(stored.unchanged ? { unchanged: true as const } : {}) };
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
 * The same transaction replaces the entity's snapshot (snapshots/): the notification's computed
 * `changes` and derived `state_from` come from the one it replaces, and an update that changed
 * nothing creates no deliveries (with skipUnchanged, SKIP_UNCHANGED_EVENTS).
 * The body's size is taken from the sender's event storage budget once the body is known, after the
 * repeat lookup (a repeat costs nothing) and the validation, before the transaction commits (a
 * refusal rolls everything back), and given back when nothing was stored after all.
 * With traces exported, the intake is a span (child of the request's, `parent`) whose traceparent is
 * stored with the event: every send of its deliveries links to it (docs/operations.md, Traces).
 */
export async function acceptEvent(
  deps: { db: Database; clock: Clock; tenantRateLimits?: TenantRateLimits; skipUnchanged?: boolean },
  principal: Principal,
  marketplaceCode: string,
  event: EventBody,
  request: IntakeRequest,
): Promise<EventAccepted> {
  const tracer = activeTracer();
  if (!tracer.enabled) return accept(deps, principal, marketplaceCode, event, request, null);
  const span = tracer.startSpan('plaza.intake', {
    kind: 'producer',
    parent: request.parent ?? null,
    attributes: { 'plaza.marketplace': marketplaceCode, 'plaza.event.topic': event.topic, 'plaza.seller.id': event.seller_id },
  });
  return inSpan(
    span,
    () => accept(deps, principal, marketplaceCode, event, request, span.traceparent),
    (accepted) => ({ 'plaza.event.id': accepted.event_id, 'plaza.deliveries': accepted.deliveries, 'plaza.event.unchanged': accepted.unchanged ?? false }),
  );
}

/** What the intake needs of the HTTP request. */
export interface IntakeRequest {
  /** The request's span, the intake span's parent. */
  parent?: TraceSpan;
  /**
   * The refusal of a credential whose tenant is deactivated: the route authenticates with
   * tenantStateReadByRoute, and the intake's checks read the tenant's state (authenticate.ts).
   */
  inactiveTenant: () => AppError;
}

async function accept(
  deps: { db: Database; clock: Clock; tenantRateLimits?: TenantRateLimits; skipUnchanged?: boolean },
  principal: Principal,
  marketplaceCode: string,
  event: EventBody,
  request: IntakeRequest,
  traceContext: string | null,
): Promise<EventAccepted> {
  const { db, clock } = deps;
  const hash = requestHash(event);
  const eventId = event.event_id ?? randomUUID();

  const checks = await readIntakeChecks(db, principal, marketplaceCode, event, event.event_id ?? null);
  if (!checks.tenant_active) throw request.inactiveTenant();
  if (!checks.visible) throw marketplaceNotFound();
  // Most repeats are retries of a committed event: they get the first answer, even if the
  // database changed since (a connection removed), and without opening a transaction.
  if (checks.stored) return answerExisting(checks.stored, hash);
  validateEvent(marketplaceCode, event, checks);

  let giveBack = () => {};
  const takeBytes = (body: string) => {
    giveBack = deps.tenantRateLimits?.takeEventBytes(principal, Buffer.byteLength(body)) ?? (() => {});
  };
  try {
    const { accepted, inserted } = await insertWithDeliveries(db, principal, marketplaceCode, event, {
      eventId, hash, now: clock.now(), clock, takeBytes, skipUnchanged: deps.skipUnchanged ?? true, traceContext, filtered: checks.filtered ?? [],
    });
    if (!inserted) giveBack();
    return accepted;
  } catch (error) {
    giveBack();
    throw error;
  }
}

interface Intake {
  eventId: string;
  hash: string;
  now: Date;
  clock: Clock;
  /** Takes the body's bytes from the sender's budget (throws 429 past it). */
  takeBytes: (body: string) => void;
  skipUnchanged: boolean;
  /** The intake span's traceparent, stored with the event; null without traces. */
  traceContext: string | null;
  /** The fan-out's webhooks with a filter, read with the checks (IntakeChecks.filtered). */
  filtered: { id: number; filter: Record<string, unknown> }[];
}

async function insertWithDeliveries(
  db: Database,
  principal: Principal,
  marketplaceCode: string,
  event: EventBody,
  { eventId, hash, now, clock, takeBytes, skipUnchanged, traceContext, filtered }: Intake,
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
      traceContext,
    }).catch(refuseIfUserGone('events_created_by_fkey'));
    if (rowId === undefined) {
      // Another request with this event_id committed first (we waited on its row).
      const stored = await findEvent(tx, marketplaceCode, event.seller_id, eventId);
      if (!stored) throw new Error('event_id conflict without a stored event');
      return { accepted: answerExisting(stored, hash), inserted: false };
    }
    const next = nextSnapshot(event);
    const previous = await replaceSnapshot(tx, snapshotKey(event, marketplaceCode), next, now);
    const derived = derive(event, previous, next);
    // The text stored and sent: its size is what the event costs the tenant's storage budget.
    const notification = buildNotification(event, marketplaceCode, derived);
    const body = JSON.stringify(notification);
    takeBytes(body);
    if (derived.unchanged && skipUnchanged) {
      await markUnchanged(tx, rowId);
      return { accepted: { event_id: eventId, deliveries: 0, unchanged: true as const }, inserted: true };
    }
    const { count, latest } = await createDeliveries(tx, {
      eventRowId: rowId,
      marketplaceCode,
      sellerId: event.seller_id,
      entityKey: entityOrderKey(marketplaceCode, event.seller_id, event.entity_id),
      topics: matchingTopics(event.topic, event.state_to),
      now,
      clockOffsetMs: clockOffsetMs(clock),
      filterMatches: filtered.filter((webhook) => matchesFilter(webhook.filter, notification)).map((webhook) => webhook.id),
      body,
    });
    if (latest) await supersedeEarlier(tx, rowId, clockOffsetMs(clock));
    return { accepted: { event_id: eventId, deliveries: count }, inserted: true };
  });
}
