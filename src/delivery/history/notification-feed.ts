import type { FeatureDeps } from '../../deps.js';
import { decodeCursor, encodeCursor } from '../../http/cursor.js';
import { AppError } from '../../http/errors.js';
import type { FeedWaiters } from './feed-waiters.js';
import { readFeed, settledHorizon, type FeedRow } from './notification-feed.repository.js';

/**
 * The notification feed of a webhook (issue 30): every notification created for it, in creation
 * order (delivery id), whatever its delivery state, for a consumer to catch up and reconcile.
 * Reading it changes nothing.
 *
 * The cursor is the one codec's (http/cursor.ts), two numbers: the delivery id after which the next
 * page starts, and the creation time (ms) of the oldest notification the holder of the cursor may
 * not have seen yet: the next one's when the page stopped at its limit, else the time the cursor was
 * issued (nothing newer existed then; anything created later is newer than that). Pruning
 * (NOTIFICATION_RETENTION_DAYS) removes notifications by creation time, so a cursor whose time is
 * past the retention may have lost notifications after its position: 410 cursor_expired. A consumer
 * polling a quiet webhook gets its position back with a fresh time, so it never expires while it polls.
 */
export interface FeedPage {
  rows: FeedRow[];
  nextCursor: string;
}

export interface FeedRequest {
  after?: string;
  limit: number;
  /** Seconds to wait for something newer when nothing is (0: answer at once). */
  waitSeconds: number;
  /** The webhook's owner, `kind:id`: the unit of the waiters' bound. */
  tenant: string;
  signal?: AbortSignal;
}

const DAY_MS = 86_400_000;

export function notificationFeed({ db, clock, config }: Pick<FeatureDeps, 'db' | 'clock' | 'config'>, waiters: FeedWaiters) {
  const position = (cursor: string | undefined): number => {
    if (cursor === undefined) return 0;
    const [afterId, oldestUnseenMs] = decodeCursor(cursor, ['bigint', 'bigint']);
    if (oldestUnseenMs < clock.now().getTime() - config.NOTIFICATION_RETENTION_DAYS * DAY_MS) {
      throw new AppError(
        'cursor_expired',
        `Notifications after this cursor may have been pruned (they are kept NOTIFICATION_RETENTION_DAYS, ${config.NOTIFICATION_RETENTION_DAYS} days). Start again without after, and reconcile from your own state.`,
      );
    }
    return afterId;
  };

  /**
   * Readers of one webhook share their settles: each takes the webhook's row lock, so a thousand
   * long-poll readers of it queued there, holding pool connections and keeping intakes to the
   * webhook out for seconds (bench/probes/feed-long-poll.ts). A reader that arrives while a settle
   * runs waits for the next one, which starts when that one ends and serves everyone who arrived
   * meanwhile: a settle begun after the reader arrived, so its horizon covers every notification
   * committed before (a long-poll reader woken by an intake's NOTIFY sees that intake's delivery).
   * At most one settle runs and one waits per webhook.
   */
  const settles = new Map<number, { running: Promise<number>; next?: Promise<number> }>();
  const startSettle = (webhookId: number): Promise<number> => {
    const entry: { running: Promise<number>; next?: Promise<number> } = { running: settledHorizon(db, webhookId) };
    const done = () => {
      if (settles.get(webhookId) === entry) settles.delete(webhookId);
    };
    entry.running.then(done, done);
    settles.set(webhookId, entry);
    return entry.running;
  };
  const settle = (webhookId: number): Promise<number> => {
    const entry = settles.get(webhookId);
    if (!entry) return startSettle(webhookId);
    entry.next ??= entry.running.then(
      () => startSettle(webhookId),
      () => startSettle(webhookId),
    );
    return entry.next;
  };

  const read = async (webhookId: number, afterId: number, limit: number): Promise<FeedPage> => {
    const horizon = await settle(webhookId);
    const rows = horizon > afterId ? await readFeed(db, webhookId, afterId, horizon, limit) : [];
    const page = rows.slice(0, limit);
    const next = rows[limit];
    const last = page.at(-1);
    const oldestUnseen = next ? new Date(next.created_at).getTime() : clock.now().getTime();
    return { rows: page, nextCursor: encodeCursor([last ? Number(last.id) : afterId, oldestUnseen]) };
  };

  return {
    /** One page after the cursor; with `waitSeconds`, waits (holding no connection) until one is not empty, or the time is up. */
    async page(webhookId: number, request: FeedRequest): Promise<FeedPage> {
      const afterId = position(request.after);
      const first = await read(webhookId, afterId, request.limit);
      if (first.rows.length > 0 || request.waitSeconds === 0) return first;
      await waiters.waitForNewer(request.tenant, webhookId, afterId, request.waitSeconds * 1000, request.signal);
      if (request.signal?.aborted) return first;
      return read(webhookId, afterId, request.limit);
    },
  };
}
