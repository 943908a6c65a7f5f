import type { Database, Queryable, Statement } from '../db/database.js';
import { dbNow } from './database-clock.js';
import { allocateSlots, LOOK_AHEAD, type DueWebhook, type TenantLoad } from './fair-share.js';

// Every statement here names the queue partition (deliveries_queue, migration 011) rather than the
// partitioned table: all the claim reads and writes is pending or delivering, and the planner then
// has no partitions to prune for each reference (about 0.3 ms less planning per statement, measured
// with bench/probes/claim-cost.ts; the claim is planned at every call, see its settings).

/** A delivery this worker holds a lease on, with what it needs to send it. */
export interface ClaimedDelivery {
  id: number;
  message_id: string;
  webhook_id: number;
  /** The webhook's owner, `kind:id` (the unit of the fairness rule). */
  tenant: string;
  attempts: number;
  callback_url: string;
  /** Read with openHeaders (header-box.ts). */
  headers: Record<string, string>;
  headers_encrypted: string | null;
  secret_encrypted: string;
  previous_secret_encrypted: string | null;
  previous_secret_expires_at: Date | null;
  /** The event's notification body as stored, sent byte for byte. */
  body: string;
}

export interface ClaimOptions {
  workerId: string;
  /** Milliseconds between the injected clock and the database's (0 in production; see database-clock.ts). */
  clockOffsetMs: number;
  leaseSeconds: number;
  /**
   * How many deliveries this worker may take now (its free slots). A function is asked once, when
   * the claim holds the lock and has read the due work, so after the worker's other claim in
   * progress committed (the worker counts that one's offer until its rows arrive).
   */
  limit: number | (() => number);
  /**
   * Told, before the take (which commits and so lets the next claim read), the most rows the claim
   * will take: a worker's other claim in progress may then count those instead of the whole limit.
   */
  onAllocated?: (rows: number) => void;
  /** This worker's slots in all (DELIVERY_CONCURRENCY). */
  concurrency: number;
  /** At most this many deliveries of one webhook in flight, over all workers. */
  perWebhookLimit: number;
  /** DELIVERY_TENANT_SHARE. */
  tenantShare: number;
  /** Where the worker's previous claim ended; moved on while the claim holds the lock (a read that started elsewhere is redone). */
  position: ClaimPosition;
  /** Most webhooks with waiting rows one claim looks at (DELIVERY_CLAIM_SCAN_WEBHOOKS). */
  scanWebhooks: number;
  /**
   * How many of this worker's leases, per webhook, the caps leave out: deliveries being sent, whose
   * caps the worker enforces itself as it starts each send (ready-queue.ts), LOOK_AHEAD times each
   * (so the figure may exceed the leases), and deliveries sent whose attempt waits to be recorded
   * (completion-batcher.ts), which load no receiver. The caps then bound what waits in the worker
   * to be sent, LOOK_AHEAD deliveries per send under way, so that a slot that frees is refilled at
   * once. Asked after the claim read the leases: sends started meanwhile (another claim's) are left
   * out too.
   */
  uncounted?: () => ReadonlyMap<number, number>;
  /** Told, under the lock, the live leases of the other workers (what the worker's own send caps leave room for). */
  onOtherLeases?: (others: OtherLeases) => void;
  /** Turn expired leases back into `pending` first (the worker does it at most once a second). */
  recoverLeases?: boolean;
}

/** The live leases of the other workers, as one claim read them. */
export interface OtherLeases {
  webhooks: ReadonlyMap<number, number>;
  tenants: ReadonlyMap<string, number>;
  /** Workers that hold live leases, this one included. */
  workers: number;
}

export interface ClaimPosition {
  /** The tenant the previous claim ended on; the round-robin resumes after it. */
  lastTenant?: string;
  /** The webhook id the previous claim's scan stopped at (0: none); the next scan continues after it. */
  webhookCursor: number;
}

/**
 * The one place that says which deliveries a worker may send: waiting (`pending`), due, of the
 * webhook `webhookId` (an SQL expression); the webhook's being active is checked by the caller.
 * Expired leases are turned back into `pending` first (recoverExpiredLeases). Read in due order
 * through deliveries_pending_webhook_due (see the claim's settings in claimDueDeliveries).
 */
const claimableOf = (webhookId: string) => `d.webhook_id = ${webhookId} AND d.status = 'pending' AND d.next_attempt_at <= ${dbNow(1)}`;

/**
 * Claims due deliveries fairly, in two main statements whose cost does not depend on the size of
 * the backlog nor on webhooks without waiting work:
 * 1. the webhooks with due work: a skip scan of deliveries_pending_webhook_due (one index probe per
 *    webhook that has waiting rows, then at most LOOK_AHEAD × perWebhookLimit rows each) over at most
 *    scanWebhooks such webhooks, continuing where the previous claim stopped; and, in the same
 *    statement, the live leases per webhook, tenant and worker (in-flight rows only: a few hundred
 *    at most). It goes with BEGIN and the lock, in one round trip;
 * 2. fair-share.ts turns that into a number of rows per webhook (leaving out of the caps this
 *    worker's deliveries being sent or waiting for their record: `uncounted`), and one statement
 *    takes them, sent with COMMIT:
 *    per webhook, its due rows in due order, through the same index, skipping rows locked by
 *    anything else (SKIP LOCKED below the LIMIT: a locked row is replaced by the next one instead of
 *    being dropped, so a worker fills its free slots).
 * The lock is thus held for one round trip between the read and the take (two when the scan wraps
 * around, or starts again from where the worker's other claim moved it), and none after.
 * Expired leases go back to `pending` before, when the caller asks (index on lease_expires_at of
 * `delivering` rows; the worker asks at most once a second, as a lease lasts a minute).
 * Claims of different workers take turns on one advisory lock (see claimDueDeliveries): each sees the
 * leases the previous one committed, so every worker gets work while work remains and the caps hold.
 * Per-entity order: a row is not taken while an earlier delivery of the same webhook and entity
 * key is unfinished (pending or delivering).
 */
export async function claimDueDeliveries(db: Database, options: ClaimOptions): Promise<ClaimedDelivery[]> {
  if (typeof options.limit === 'number' && options.limit <= 0) return [];
  // Claims take turns (a few milliseconds each): the caps are computed from what the previous
  // claim committed, so two workers cannot both fill the same webhook's or tenant's last room.
  // Completions, the intake and the API never take this lock: nothing else waits on it.
  return db.transaction(async (tx, [read]) => {
    const { webhooks, loads, workers, nextWebhookCursor } = await dueWork(tx, read as unknown as DueRead, options);
    options.position.webhookCursor = nextWebhookCursor;
    const { quotas, last } = allocateSlots(webhooks, loads, {
      free: Math.max(0, typeof options.limit === 'number' ? options.limit : options.limit()),
      concurrency: options.concurrency,
      workers,
      share: options.tenantShare,
      perWebhookLimit: options.perWebhookLimit,
      after: options.position.lastTenant,
    });
    options.onAllocated?.([...quotas.values()].reduce((sum, n) => sum + n, 0));
    if (quotas.size === 0) return [];
    // Moved on before the take, which commits and so lets the next claim in.
    if (last !== undefined) options.position.lastTenant = last;
    return takeRows(tx, options, quotas);
  }, {
    prelude: [
      `SELECT pg_advisory_xact_lock(${CLAIM_LOCK})`,
      ...(options.recoverLeases ?? true ? [recoverExpiredLeases(options.clockOffsetMs)] : []),
      readDueWork(options),
    ],
    settings: {
      // A lease that a crash of the database undoes is harmless: the row is due again, and the
      // worst outcome is the notification sent twice (at-least-once, docs/delivery.md).
      synchronous_commit: 'off',
      // Every read of the claim is a few probes of deliveries_pending_webhook_due in due order.
      // With the queue's statistics stale (a burst since the last ANALYZE), the planner ANDed the
      // bitmaps of two other indexes instead, reading every waiting row: 50-150 ms per claim behind
      // a tenant with a backlog (docs/performance.md). The statements are planned at every claim for
      // the same reason: prepared, even with bitmap scans off, a generic plan made B's p99 in the
      // tenant-fairness benchmark 177 ms to 2 s instead of 40 ms.
      enable_bitmapscan: 'off',
    },
  });
}

/** The advisory lock key of the claim ('plaza:claim' as a number; any constant no other code uses). */
const CLAIM_LOCK = 0x706c617a61;

/** A lease past its expiry means its worker died or stalled: the row is due again for anyone. */
function recoverExpiredLeases(clockOffsetMs: number): Statement {
  return {
    sql: `UPDATE deliveries_queue d SET status = 'pending', leased_by = NULL, lease_expires_at = NULL
           WHERE d.status = 'delivering' AND d.lease_expires_at <= ${dbNow(1)}`,
    params: [clockOffsetMs],
  };
}

interface DueWork {
  webhooks: DueWebhook[];
  loads: Map<string, TenantLoad>;
  workers: number;
  /** Where the next claim's scan starts (0: from the first webhook). */
  nextWebhookCursor: number;
}

interface Visited {
  webhook_id: number;
  /** Null when the webhook is disabled. */
  tenant: string | null;
  due: number;
}

interface Lease {
  webhook_id: number;
  tenant: string;
  leased_by: string;
  n: number;
}

/** What one read of the due work returns: the visited webhooks and the live leases. */
interface DueRead {
  /** The cursor the scan started after. */
  cursor: number;
  visited: Visited[];
  leases: Lease[];
}

/**
 * The claim's read, sent with BEGIN and the lock. The scan visits at most scanWebhooks webhooks with
 * waiting rows, starting after the cursor and wrapping around once: the claim costs the same with
 * 100 or 100 000 such webhooks, and successive claims walk round all of them. The wrap is a second
 * statement, needed only when the waiting webhooks outnumber scanWebhooks.
 */
function readDueWork(options: ClaimOptions): Statement {
  const cursor = options.position.webhookCursor;
  return {
    sql: `WITH RECURSIVE ${visitedWebhooks('$3', '$4', '$5')},
     leases AS (
       SELECT d.webhook_id, h.tenant_kind || ':' || h.tenant_id AS tenant, d.leased_by, count(*)::int AS n
         FROM deliveries_queue d JOIN webhooks h ON h.id = d.webhook_id
        WHERE d.status = 'delivering' AND d.lease_expires_at > ${dbNow(1)}
        GROUP BY 1, 2, 3
     )
     SELECT $3::bigint AS cursor,
            (SELECT coalesce(json_agg(v ORDER BY v.webhook_id), '[]') FROM visited v) AS visited,
            (SELECT coalesce(json_agg(l), '[]') FROM leases l) AS leases`,
    params: [options.clockOffsetMs, LOOK_AHEAD * options.perWebhookLimit, cursor, Number.MAX_SAFE_INTEGER, options.scanWebhooks],
  };
}

async function dueWork(db: Queryable, read: DueRead, options: ClaimOptions): Promise<DueWork> {
  // The worker's other claim in progress moved the cursor while this one waited for the lock
  // (possible only while more webhooks wait than one scan visits): read again from there.
  if (read.cursor !== options.position.webhookCursor) {
    const { sql, params } = readDueWork(options);
    read = (await db.query<DueRead>(sql, params)).rows[0]!;
  }
  const { cursor } = read;
  const first = read.visited;
  let visited = first;
  let nextWebhookCursor = first.length === options.scanWebhooks ? first.at(-1)!.webhook_id : 0;
  if (nextWebhookCursor === 0 && cursor > 0) {
    const second = await visitWebhooks(db, options, 0, cursor, options.scanWebhooks - first.length);
    visited = [...first, ...second];
    if (second.length === options.scanWebhooks - first.length && second.length > 0) nextWebhookCursor = second.at(-1)!.webhook_id;
  }

  // Read after the statement: a delivery recorded in between still counts as in flight (the safe
  // side); one sent in between is left out, as it should be.
  const uncounted = options.uncounted?.() ?? new Map<number, number>();
  const inFlight = new Map<number, number>();
  const loads = new Map<string, TenantLoad>();
  const workers = new Set<string>([options.workerId]);
  const others = { webhooks: new Map<number, number>(), tenants: new Map<string, number>() };
  for (const lease of read.leases) {
    let n = lease.n;
    if (lease.leased_by === options.workerId) {
      n -= uncounted.get(lease.webhook_id) ?? 0;
    } else {
      others.webhooks.set(lease.webhook_id, (others.webhooks.get(lease.webhook_id) ?? 0) + n);
      others.tenants.set(lease.tenant, (others.tenants.get(lease.tenant) ?? 0) + n);
    }
    inFlight.set(lease.webhook_id, (inFlight.get(lease.webhook_id) ?? 0) + n);
    const load = loads.get(lease.tenant) ?? { total: 0, mine: 0 };
    load.total += n;
    if (lease.leased_by === options.workerId) load.mine += n;
    loads.set(lease.tenant, load);
    workers.add(lease.leased_by);
  }
  options.onOtherLeases?.({ ...others, workers: workers.size });
  const webhooks = visited
    .filter((row) => row.tenant !== null && row.due > 0)
    .map((row) => ({ webhookId: row.webhook_id, tenant: row.tenant!, due: row.due, inFlight: inFlight.get(row.webhook_id) ?? 0 }));
  return { webhooks, loads, workers: workers.size, nextWebhookCursor };
}

/**
 * The CTEs `waiting` and `visited`: up to `budget` webhooks with waiting rows and ids in
 * (after, upTo], in id order. The recursive CTE is PostgreSQL's skip scan: each step is one probe of
 * deliveries_pending_webhook_due for the next webhook id. Per webhook: its owner (a scalar subquery
 * by primary key, so that the planner cannot turn it into a scan of all webhooks) and its due rows,
 * counted only up to the most one claim can give it ($2: LOOK_AHEAD × the per-webhook limit, when its
 * sends under way all leave room to look ahead). $1 is the clock offset.
 */
function visitedWebhooks(after: string, upTo: string, budget: string): string {
  return `waiting(webhook_id, depth) AS (
       (SELECT d.webhook_id, 1 FROM deliveries_queue d
         WHERE d.status = 'pending' AND d.webhook_id > ${after} AND d.webhook_id <= ${upTo} ORDER BY d.webhook_id LIMIT 1)
       UNION ALL
       SELECT (SELECT d.webhook_id FROM deliveries_queue d
                WHERE d.status = 'pending' AND d.webhook_id > w.webhook_id AND d.webhook_id <= ${upTo} ORDER BY d.webhook_id LIMIT 1),
              w.depth + 1
         FROM waiting w WHERE w.webhook_id IS NOT NULL AND w.depth < ${budget}
     ),
     visited AS (
       SELECT w.webhook_id,
              (SELECT h.tenant_kind || ':' || h.tenant_id FROM webhooks h WHERE h.id = w.webhook_id AND h.active) AS tenant,
              (SELECT count(*)::int FROM (
                 SELECT 1 FROM deliveries_queue d WHERE ${claimableOf('w.webhook_id')}
                  ORDER BY d.next_attempt_at, d.id LIMIT $2) s) AS due
         FROM waiting w
        WHERE w.webhook_id IS NOT NULL
     )`;
}

/** The second part of a scan that wrapped around: the webhooks in (after, upTo]. */
async function visitWebhooks(db: Queryable, options: ClaimOptions, after: number, upTo: number, budget: number): Promise<Visited[]> {
  if (budget <= 0) return [];
  const { rows } = await db.query<Visited>(
    `WITH RECURSIVE ${visitedWebhooks('$3', '$4', '$5')}
     SELECT * FROM visited ORDER BY webhook_id`,
    [options.clockOffsetMs, LOOK_AHEAD * options.perWebhookLimit, after, upTo, budget],
  );
  return rows;
}

/** The take, sent with COMMIT: the claim lock is held for no round trip after it. */
async function takeRows(db: Queryable, options: ClaimOptions, quotas: Map<number, number>): Promise<ClaimedDelivery[]> {
  const { rows } = await db.query<ClaimedDelivery>(
    `WITH quota AS (
       SELECT * FROM unnest($2::bigint[], $3::int[]) AS q(webhook_id, n)
     ),
     locked AS (
       SELECT c.id
         FROM quota q
        CROSS JOIN LATERAL (
          SELECT d.id FROM deliveries_queue d
           WHERE ${claimableOf('q.webhook_id')}
             -- Per-entity order: d is the first unfinished delivery of its (webhook, entity key).
             -- A correlated min() rather than NOT EXISTS: the subplan is always parameterized by
             -- both columns, so it is one probe of deliveries_unfinished_entity even when the
             -- planner's statistics are stale (an anti join then read the webhook's whole backlog).
             AND d.id = (SELECT min(x.id) FROM deliveries_queue x
                          WHERE x.webhook_id = d.webhook_id AND x.entity_key = d.entity_key
                            AND x.status IN ('pending', 'delivering'))
           ORDER BY d.next_attempt_at, d.id
           LIMIT q.n
           FOR UPDATE OF d SKIP LOCKED
        ) c
     ),
     taken AS (
       UPDATE deliveries_queue d
          SET status = 'delivering',
              leased_by = $4,
              lease_expires_at = ${dbNow(1)} + make_interval(secs => $5),
              updated_at = ${dbNow(1)}
        -- = ANY(ARRAY(…)) rather than a join to the CTE: the planner then looks the few rows up by
        -- primary key instead of hashing the whole queue.
        WHERE d.id = ANY(ARRAY(SELECT id FROM locked)) AND d.status = 'pending'
        RETURNING d.id, d.message_id, d.webhook_id, d.attempts, d.event_id
     )
     -- The webhook and the event of each taken row by primary key, one probe each: as a join, the
     -- planner merged the rows with an ordered scan of all webhooks (16 ms at 10 000 webhooks).
     SELECT t.id, t.message_id, t.webhook_id, h.tenant_kind || ':' || h.tenant_id AS tenant, t.attempts, h.callback_url, h.headers, h.headers_encrypted,
            h.secret_encrypted, h.previous_secret_encrypted, h.previous_secret_expires_at,
            (SELECT e.body::text FROM events e WHERE e.id = t.event_id) AS body
       FROM taken t
      CROSS JOIN LATERAL (SELECT * FROM webhooks w WHERE w.id = t.webhook_id OFFSET 0) h`,
    [options.clockOffsetMs, [...quotas.keys()], [...quotas.values()], options.workerId, options.leaseSeconds],
    { commit: true },
  );
  return rows.sort((a, b) => a.id - b.id);
}

/**
 * Gives this worker's claims back, due again at once for any worker: all of them (shutdown), or the
 * deliveries `ids` (claimed rows that could not be sent before their lease would run out).
 */
export async function releaseClaims(db: Queryable, workerId: string, clockOffsetMs: number, ids?: readonly number[]): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE deliveries_queue SET status = 'pending', leased_by = NULL, lease_expires_at = NULL, updated_at = ${dbNow(2)}
      WHERE leased_by = $1 AND status = 'delivering' AND ($3::bigint[] IS NULL OR id = ANY($3))`,
    [workerId, clockOffsetMs, ids ?? null],
  );
  return rowCount;
}
