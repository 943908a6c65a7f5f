import { retryTransientConflicts, type Database } from '../../db/database.js';
import { AppError } from '../../http/errors.js';
import { notifyDeliveryWorkers } from '../deliveries.repository.js';
import { requeueDelivery, type RetryOutcome } from './delivery-history.repository.js';
import type { Clock } from '../../clock.js';
import { clockOffsetMs, dbNow } from '../../db/database-clock.js';
import { deliveryConditions, type DeliveryMatch } from './delivery-filter.js';
import type { WebhookRow } from '../../webhooks/webhook-access.js';
import { recordWebhookHistory, type WebhookActor } from '../../webhooks/webhook-history.js';

/** Who asks for a retry or replay of which webhook's deliveries: its history row (webhook-history.ts). */
export interface DeliveryAudit {
  webhook: Pick<WebhookRow, 'id' | 'tenant_kind' | 'tenant_id' | 'marketplace_code' | 'code'>;
  actor: WebhookActor;
}

/** Only finished deliveries are replayed: pending and held ones are going out anyway. */
export const REPLAYABLE_STATUSES = ['succeeded', 'failed'] as const;
export type ReplayableStatus = (typeof REPLAYABLE_STATUSES)[number];

export interface ReplayOptions {
  /** The service's clock: replayed deliveries are due from its now on (database-clock.ts). */
  clock: Clock;
  dryRun: boolean;
  /** Replayed deliveries become due this many per second, oldest first. */
  ratePerSecond: number;
  /** Most deliveries one replay may requeue. */
  maxDeliveries: number;
}

export interface ReplayOutcome {
  matched: number;
  replayed: number;
}

/**
 * Replays the deliveries that match: they become pending again with the same webhook-id (a
 * receiver that already processed one can recognise it), attempts keep counting. Pacing: the i-th
 * (oldest first) is due at now + i / ratePerSecond, so a replay of thousands trickles out instead
 * of flooding the receiver, and the claim, which takes due work across all webhooks, keeps serving
 * other tenants in between. A dry run answers the count and changes nothing.
 */
export async function replayDeliveries(db: Database, match: DeliveryMatch & { statuses: readonly ReplayableStatus[] }, options: ReplayOptions, audit: DeliveryAudit): Promise<ReplayOutcome> {
  // A delivery whose attempt is being recorded meanwhile moves to another partition of deliveries,
  // and its row lock then fails with a serialization error (40001): the replay runs again, after it.
  return retryTransientConflicts(() => db.transaction(async (tx) => {
    const countParams: unknown[] = [];
    const { rows } = await tx.query<{ count: number }>(
      `SELECT count(*)::int AS count FROM deliveries d JOIN events e ON e.id = d.event_id WHERE ${deliveryConditions(match, countParams).join(' AND ')}`,
      countParams,
    );
    const matched = rows[0]!.count;
    if (options.dryRun) return { matched, replayed: 0 };
    // A replay is recorded even when nothing matched (the owner asked for one); a dry run is a count, not a change.
    const record = (replayed: number) => recordWebhookHistory(tx, audit.webhook, audit.actor, {
      action: 'replay',
      detail: {
        matched,
        replayed,
        statuses: [...match.statuses],
        since: match.since?.toISOString(),
        until: match.until?.toISOString() ?? null,
        topic: match.topic ?? null,
        entity_id: match.entityId ?? null,
        event_id: match.eventId ?? null,
      },
    }, options.clock);
    if (matched === 0) {
      await record(0);
      return { matched, replayed: 0 };
    }
    if (matched > options.maxDeliveries) {
      throw new AppError('validation_failed', `The filter matches ${matched} deliveries; one replay sends at most ${options.maxDeliveries}. Narrow the time window or add a filter.`, {
        errors: [{ field: 'body', message: `matches ${matched} deliveries, more than ${options.maxDeliveries}` }],
      });
    }
    const params: unknown[] = [];
    const conditions = deliveryConditions(match, params);
    // Due times by the database's clock (database-clock.ts): zero offset but for an injected test clock.
    const now = dbNow(params.push(clockOffsetMs(options.clock)));
    const spacingMs = `$${params.push(1000 / options.ratePerSecond)}::float8`;
    const statuses = `$${params.push(match.statuses)}::text[]`;
    // The status is checked again on the row being updated: one that a retry made pending meanwhile is left alone.
    const { rows: replayed } = await tx.query<{ count: number }>(
      `WITH matched AS (
         SELECT d.id, row_number() OVER (ORDER BY d.created_at, d.id) - 1 AS position
           FROM deliveries d JOIN events e ON e.id = d.event_id
          WHERE ${conditions.join(' AND ')}
       ), requeued AS (
         UPDATE deliveries d
            SET status = 'pending', next_attempt_at = ${now} + m.position * ${spacingMs} * interval '1 millisecond',
                updated_at = ${now}, completed_at = NULL, leased_by = NULL, lease_expires_at = NULL
           FROM matched m
          WHERE d.id = m.id AND d.status = ANY(${statuses})
         RETURNING 1
       )
       SELECT count(*)::int AS count FROM requeued`,
      params,
    );
    const count = replayed[0]!.count;
    if (count > 0) await notifyDeliveryWorkers(tx);
    await record(count);
    return { matched, replayed: count };
  }));
}

/**
 * Sends one delivery again now and wakes the workers (on commit); 'delivering' while a worker holds
 * it. Only a retry that queued is recorded in the history: a refused one changed nothing.
 */
export function retryDelivery(db: Database, deliveryId: number, clock: Clock, audit: DeliveryAudit): Promise<RetryOutcome> {
  // As for a replay: a delivery changing partition under its row lock is a 40001; then it runs again.
  return retryTransientConflicts(() =>
    db.transaction(async (tx) => {
      const result = await requeueDelivery(tx, audit.webhook.id, deliveryId, clockOffsetMs(clock));
      if (result === 'queued') {
        await notifyDeliveryWorkers(tx);
        await recordWebhookHistory(tx, audit.webhook, audit.actor, { action: 'retry', detail: { delivery_id: deliveryId } }, clock);
      }
      return result;
    }),
  );
}
