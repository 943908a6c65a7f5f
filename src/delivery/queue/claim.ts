import type { Database } from '../../db/database.js';
import { allocateSlots, type DueWebhook, type TenantLoad } from './fair-share.js';
import { lockDueWebhooks } from './lock-due-webhooks.js';
import { dueRowsSeen, moveStreamCursors, readDueStreams, streamsOf, type DueStreams } from './read-due-streams.js';
import { takeRows, type ClaimedDelivery } from './take-rows.js';

export interface ClaimRequest {
  workerId: string;
  /** Milliseconds between the injected clock and the database's (0 in production; see database-clock.ts). */
  clockOffsetMs: number;
  leaseSeconds: number;
  /** This worker's free slots: the most rows the claim takes. */
  free: number;
  /** This worker's slots in all (DELIVERY_CONCURRENCY). */
  concurrency: number;
  /** At most this many deliveries of one webhook in flight, over all workers. */
  perWebhookLimit: number;
  /** DELIVERY_TENANT_SHARE. */
  tenantShare: number;
  /** Most webhooks with waiting rows one claim looks at (DELIVERY_CLAIM_SCAN_WEBHOOKS). */
  scanWebhooks: number;
  /** Per webhook, this worker's sends that are over and wait for their attempt to be recorded: not in flight. */
  recording?: ReadonlyMap<number, number>;
  /** Where the worker's previous claim ended; moved on by this one. */
  position: ClaimPosition;
}

export interface ClaimPosition {
  /** The tenant the previous claim ended on; the round-robin resumes after it. */
  lastTenant?: string;
  /** The webhook id the previous claim's scan stopped at (0: none). */
  webhookCursor: number;
  /** Per webhook, the stream the previous claim's scan of its streams stopped at. */
  streamCursors: Map<number, string>;
}

export interface Claim {
  deliveries: ClaimedDelivery[];
  /**
   * Claim again soon: a lane this claim needed was held by another (free again in milliseconds), it
   * took rows and stopped before looking at every webhook, or its scan found nothing due and a due
   * row lies beyond it. Not when it took nothing from the webhooks it looked at (all at their
   * limits): the end of a send wakes the worker anyway.
   */
  more: boolean;
  /**
   * Due work may be left that this claim did not take: rows over a cap (per webhook, per tenant, the
   * free slots), rows waiting behind an unfinished delivery of their entity, webhooks it did not
   * lock or reach. False only when it saw every due row of every active webhook and took them all:
   * until something new is due (an intake's NOTIFY, a retry's time), another claim finds nothing.
   */
  left: boolean;
  /**
   * The database's time the claim counted as now (lock-due-webhooks.ts): what was due by then it
   * took or reports `left`; a row due later is for the next claim. Absent when it ran no statement.
   */
  now?: string;
}

/**
 * The claim transaction's settings, its first statement, so that they travel with BEGIN: one round
 * trip (db/postgres.ts). A lease that a crash of the database undoes is harmless: the row is due
 * again, and the worst outcome is a notification sent twice (at-least-once, docs/delivery.md).
 * Bitmap scans off: with the queue's statistics stale after a burst, the planner ANDed two indexes'
 * bitmaps instead of the few probes of the partial indexes, reading every waiting row
 * (bench/results/history.md, "Planning"). The three statements are prepared and run with one
 * generic plan per connection, kept until the queue's VACUUM: planned once rather than at every
 * claim (their planning cost more than their run: history.md, "The claim prepared", "The take
 * prepared"). Sequential scans off, so that a plan made while the queue was short stays a probe once
 * it is long (claim-plans.test.ts).
 */
export const CLAIM_SETTINGS = `SET LOCAL synchronous_commit = off; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_seqscan = off; SET LOCAL plan_cache_mode = force_generic_plan`;

/**
 * Claims due deliveries fairly, in one transaction of three statements whose cost depends neither on
 * the size of the backlog nor on webhooks without waiting work:
 * 1. lock-due-webhooks.ts: the webhooks with due work after the worker's cursor, and the lanes of as
 *    many as it has free slots, tried without waiting (a lane another claim holds is skipped);
 * 2. read-due-streams.ts: for those webhooks, their owners, streams (sellers) and due rows, and the
 *    live leases of all workers, read after the locks, so counting what the lanes' last claims took;
 * 3. fair-share.ts turns that into rows per (webhook, stream), and take-rows.ts takes them.
 * "Due" is due at the first statement's time in all three, so `left` is exact. The lanes are
 * released at COMMIT. No lock is taken by every claim: workers claim in parallel.
 */
export async function claimDueDeliveries(db: Database, request: ClaimRequest): Promise<Claim> {
  if (request.free <= 0) return { deliveries: [], more: false, left: true };
  const { position } = request;
  return db.transaction(async (tx) => {
    await tx.exec(CLAIM_SETTINGS);
    const lanes = await lockDueWebhooks(tx, { clockOffsetMs: request.clockOffsetMs, cursor: position.webhookCursor, scan: request.scanWebhooks, limit: request.free });
    position.webhookCursor = lanes.nextCursor;
    const skipped = lanes.contended || lanes.unvisited;
    const { now } = lanes;
    if (lanes.webhookIds.length === 0) return { deliveries: [], more: lanes.contended || lanes.dueBeyond, left: skipped, now };

    const after = lanes.webhookIds.map((id) => position.streamCursors.get(id) ?? null);
    const read = await readDueStreams(tx, { now, webhookIds: lanes.webhookIds, after, perWebhookLimit: request.perWebhookLimit });
    const { webhooks, loads, workers } = dueWork(read, request);
    const { quotas, last } = allocateSlots(webhooks, loads, {
      free: request.free,
      concurrency: request.concurrency,
      workers,
      share: request.tenantShare,
      perWebhookLimit: request.perWebhookLimit,
      after: position.lastTenant,
    });
    if (last !== undefined) position.lastTenant = last;
    moveStreamCursors(position.streamCursors, read, quotas);
    const due = dueRowsSeen(read, request.perWebhookLimit);
    if (quotas.length === 0) return { deliveries: [], more: lanes.contended, left: skipped || due > 0, now };
    const deliveries = await takeRows(tx, { now, workerId: request.workerId, leaseSeconds: request.leaseSeconds, quotas });
    return { deliveries, more: lanes.contended || (lanes.unvisited && deliveries.length > 0), left: skipped || deliveries.length < due, now };
  });
}

/** The due webhooks with their streams and in-flight counts, and the tenants' loads, from one read. */
function dueWork(read: DueStreams, request: ClaimRequest): { webhooks: DueWebhook[]; loads: Map<string, TenantLoad>; workers: number } {
  const recording = new Map(request.recording ?? []);
  const webhookLoad = new Map<number, number>();
  const streamLoad = new Map<string, number>();
  const loads = new Map<string, TenantLoad>();
  const workers = new Set<string>([request.workerId]);
  for (const lease of read.leases) {
    let n = lease.n;
    // This worker's sends waiting for their record are left out, once per webhook.
    if (lease.leased_by === request.workerId) {
      const settled = Math.min(n, recording.get(lease.webhook_id) ?? 0);
      recording.set(lease.webhook_id, (recording.get(lease.webhook_id) ?? 0) - settled);
      n -= settled;
    }
    webhookLoad.set(lease.webhook_id, (webhookLoad.get(lease.webhook_id) ?? 0) + n);
    if (lease.key !== null) streamLoad.set(`${lease.webhook_id}:${lease.key}`, (streamLoad.get(`${lease.webhook_id}:${lease.key}`) ?? 0) + n);
    const load = loads.get(lease.tenant) ?? { total: 0, mine: 0 };
    load.total += n;
    if (lease.leased_by === request.workerId) load.mine += n;
    loads.set(lease.tenant, load);
    workers.add(lease.leased_by);
  }
  const streams = streamsOf(read);
  const webhooks = read.webhooks.map(({ webhook_id: webhookId, tenant }) => ({
    webhookId,
    tenant,
    inFlight: webhookLoad.get(webhookId) ?? 0,
    streams: (streams.get(webhookId) ?? [])
      .filter((stream) => stream.due > 0)
      .map((stream) => ({ key: stream.key, due: stream.due, inFlight: streamLoad.get(`${webhookId}:${stream.key}`) ?? 0 })),
  }));
  return { webhooks, loads, workers: workers.size };
}
