import type { FeatureDeps } from '../../deps.js';
import { keysetPage, timeIdCursor } from '../../http/cursor.js';
import { AppError, invalidField, notFound } from '../../http/errors.js';
import type { WebhookActor } from '../../webhooks/webhook-history.js';
import type { DeliveryMatch } from './delivery-filter.js';
import { findDelivery, findEventDeliveries, listAttempts, listDeliveries, type DeliverySummary } from './delivery-history.repository.js';
import { readNotification } from './notification-feed.repository.js';
import { replayDeliveries, retryDelivery, type DeliveryAudit, type ReplayableStatus, type ReplayOutcome } from './replay.js';

/**
 * Delivery history, as the API (deliveries.routes.ts) and the portal (portal-deliveries.routes.ts)
 * both show and steer it: the log in pages, one delivery with its attempts, retry, and replay with
 * its window and pacing. The wording of its refusals is here once, for both.
 */

export const DELIVERY_NOT_FOUND = 'The delivery does not exist for this webhook.';

/** Why a retry is refused (409), in the API's problem and on the portal's page. */
export const RETRY_REFUSED = {
  delivering: 'The delivery is being sent right now; retry once this attempt has finished.',
  held: 'The delivery is held while its webhook is paused; resuming the webhook sends it.',
  superseded: 'The delivery was superseded by a newer notification of the same entity (latest-state mode); that one is sent instead.',
} as const;

/** The webhook whose deliveries are read or steered (already checked to be the caller's), for its history rows too. */
export type HistoryWebhook = DeliveryAudit['webhook'];

export interface ReplayRequest extends Omit<DeliveryMatch, 'webhookId' | 'statuses'> {
  /** Default `['failed']`. */
  statuses?: readonly ReplayableStatus[];
  /** Only count what matches. */
  dryRun: boolean;
}

export function deliveryHistory({ db, clock, config }: Pick<FeatureDeps, 'db' | 'clock' | 'config'>) {
  const get = async (webhook: HistoryWebhook, deliveryId: number): Promise<DeliverySummary> => {
    const delivery = await findDelivery(db, webhook.id, deliveryId);
    if (!delivery) throw notFound(DELIVERY_NOT_FOUND);
    return delivery;
  };

  /** The replay window starts at `since`, at most DELIVERY_REPLAY_MAX_DAYS back, which is also the default. */
  const replaySince = (since: Date | undefined): Date => {
    const earliest = new Date(clock.now().getTime() - config.DELIVERY_REPLAY_MAX_DAYS * 86_400_000);
    if (since === undefined) return earliest;
    if (since.getTime() < earliest.getTime()) throw invalidField('body.since', `must be at most ${config.DELIVERY_REPLAY_MAX_DAYS} days back`);
    return since;
  };

  return {
    /**
     * A page of the webhook's deliveries, newest first, and the cursor of the next page (null on
     * the last). A cursor only names a position, not the filters: used with other filters it
     * continues from there. One it cannot read is a 400 on `query.cursor`.
     */
    async list(webhook: HistoryWebhook, match: Omit<DeliveryMatch, 'webhookId'>, page: { limit: number; cursor?: string }) {
      const after = page.cursor === undefined ? undefined : timeIdCursor.decode(page.cursor);
      const rows = await listDeliveries(db, { ...match, webhookId: webhook.id, after, limit: page.limit });
      return keysetPage(rows, page.limit, timeIdCursor.encode);
    },

    /** One delivery; 404 when the webhook has none of this id. */
    get,

    /**
     * One delivery, its attempts (oldest first) and its notification body as stored, the text that
     * is (or would be) sent byte for byte (the feed's read, notification-feed.repository.ts).
     */
    async withAttempts(webhook: HistoryWebhook, deliveryId: number) {
      const delivery = await get(webhook, deliveryId);
      const [attempts, notification] = await Promise.all([listAttempts(db, delivery.id), readNotification(db, webhook.id, delivery.id)]);
      // Its event keeps the body while a delivery of it exists (pruning deletes events without
      // deliveries only): missing, the delivery was deleted between the two reads.
      if (!notification) throw notFound(DELIVERY_NOT_FOUND);
      return { delivery, attempts, notification: notification.body };
    },

    /** Sends one delivery again now; 404 when the webhook has none of this id, 409 while it is delivering or held. */
    async retry(webhook: HistoryWebhook, deliveryId: number, actor: WebhookActor): Promise<void> {
      const outcome = await retryDelivery(db, deliveryId, clock, { webhook, actor });
      if (outcome === 'not_found') throw notFound(DELIVERY_NOT_FOUND);
      if (outcome !== 'queued') throw new AppError('conflict', RETRY_REFUSED[outcome]);
    },

    /**
     * Replays the finished deliveries that match, paced DELIVERY_REPLAY_RATE_PER_SECOND, at most
     * DELIVERY_REPLAY_MAX_DELIVERIES (400 past it, and for a window starting too far back).
     */
    async replay(webhook: HistoryWebhook, request: ReplayRequest, actor: WebhookActor): Promise<ReplayOutcome> {
      const { dryRun, statuses, ...match } = request;
      return replayDeliveries(
        db,
        { ...match, webhookId: webhook.id, statuses: statuses ?? ['failed'], since: replaySince(request.since) },
        { clock, dryRun, ratePerSecond: config.DELIVERY_REPLAY_RATE_PER_SECOND, maxDeliveries: config.DELIVERY_REPLAY_MAX_DELIVERIES },
        { webhook, actor },
      );
    },

    /** One event and its deliveries to the tenant's webhooks (see findEventDeliveries). */
    ofEvent: (marketplaceCode: string, eventId: string, tenant: { kind: string; id: string } | undefined, sellerId: number | undefined) =>
      findEventDeliveries(db, marketplaceCode, eventId, tenant, sellerId),
  };
}
