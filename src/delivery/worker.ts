import { setMaxListeners } from 'node:events';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import type { Keys } from '../keys.js';
import { releaseClaims, type ClaimedDelivery } from './claim.js';
import { clockOffsetMs, dbNow } from './database-clock.js';
import { DELIVERY_CHANNEL } from './deliveries.repository.js';
import { claim, createDeliverer, deliverClaimed, type Deliverer } from './deliver.js';
import { pruneAuthRecords } from '../auth/auth-maintenance.js';
import { pruneExpired } from './maintenance.js';
import { pruneWebhookHistory } from '../webhooks/webhook-history.repository.js';
import { pruneExpiredPortalRecords } from '../portal/portal-links.repository.js';
import type { Metrics } from './metrics.js';
import { disableFailingWebhooks } from './webhook-health.js';
import { QueueVacuum } from './queue-vacuum.js';
import { MAX_WAIT_MS, ReadyQueue } from './ready-queue.js';

export interface WorkerDeps {
  config: Config;
  db: Database;
  keys: Keys;
  clock: Clock;
  logger: FastifyBaseLogger;
  metrics?: Metrics;
  workerId?: string;
}

export interface DeliveryWorker {
  readonly workerId: string;
  /** Finishes in-flight sends (bounded by SHUTDOWN_TIMEOUT_MS) and releases the remaining claims. */
  stop(): Promise<void>;
}

const MAINTENANCE_INTERVAL_MS = 15 * 60_000;

/** A claimed delivery's send starts at least this long before its lease runs out (and DELIVERY_TIMEOUT_MS more). */
const LEASE_MARGIN_MS = 1000;

/**
 * While sends are in flight each of them wakes the worker when it ends, and every wake claims what
 * has become due meanwhile: the query for the next due time (which arms the timer for an idle
 * worker) is then needed at most this often, rather than after every claim.
 */
const NEXT_DUE_RECHECK_MS = 1000;

/**
 * Claims take turns on the claim lock (claim.ts). With two in progress, one waits for the lock
 * while the other holds it: the round trips before and after the locked part overlap, and a slot
 * freed during a claim waits for less than a whole claim to be filled again.
 */
const CLAIMS_IN_PROGRESS = 2;

/**
 * The long-running worker of `plaza serve`: wakes on NOTIFY, on the slow poll, when the earliest
 * scheduled retry is due and whenever a send finishes (a slot frees up, or the next delivery of an
 * entity may go); claims as many deliveries as it has free slots and sends them concurrently.
 */
export async function startDeliveryWorker(deps: WorkerDeps): Promise<DeliveryWorker> {
  const deliverer = createDeliverer(deps);
  const loop = new WorkerLoop(deliverer, deps);
  await loop.start();
  return { workerId: deliverer.workerId, stop: () => loop.stop() };
}

class WorkerLoop {
  /** Every delivery whose send started, until its attempt is recorded. */
  private readonly inFlight = new Set<Promise<void>>();
  /** Claimed deliveries until their send starts, and the sends in progress: what the caps bound. */
  private readonly ready: ReadyQueue;
  /** Per webhook, this worker's deliveries that were sent and wait for their attempt to be recorded. */
  private readonly settling = new Map<number, number>();
  /** When scheduleNextDue last ran (Date.now()). */
  private nextDueCheckedAt = 0;
  private readonly shutdown = new AbortController();
  private readonly vacuum: QueueVacuum;
  private stopping = false;
  /** Claim rounds in progress (at most CLAIMS_IN_PROGRESS). */
  private claims = 0;
  /** Rows the claims in progress set out to take (told before their take), until those are in the ready queue. */
  private reserved = 0;
  private again = false;
  private pollTimer: NodeJS.Timeout | undefined;
  private dueTimer: NodeJS.Timeout | undefined;
  private maintenanceTimer: NodeJS.Timeout | undefined;
  private maintenance: Promise<void> | undefined;
  private unlisten: (() => Promise<void>) | undefined;

  constructor(
    private readonly deliverer: Deliverer,
    private readonly deps: WorkerDeps,
  ) {
    this.vacuum = new QueueVacuum(deps.db, deps.logger);
    const { config } = deps;
    this.ready = new ReadyQueue({
      concurrency: config.DELIVERY_CONCURRENCY,
      perWebhookLimit: config.DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK,
      tenantShare: config.DELIVERY_TENANT_SHARE,
      // And a send that starts later than the lease allows could outlast it (and be sent twice).
      maxWaitMs: Math.max(0, Math.min(MAX_WAIT_MS, config.DELIVERY_LEASE_SECONDS * 1000 - config.DELIVERY_TIMEOUT_MS - LEASE_MARGIN_MS)),
    });
  }

  async start(): Promise<void> {
    const { db, config, logger } = this.deps;
    // Every send in flight listens on the shutdown signal: up to 2 × DELIVERY_CONCURRENCY listeners
    // is the design, not a leak (Node warns past 10).
    setMaxListeners(2 * config.DELIVERY_CONCURRENCY + 10, this.shutdown.signal);
    if (config.DELIVERY_LEASE_SECONDS * 1000 <= config.DELIVERY_TIMEOUT_MS) {
      logger.warn('DELIVERY_LEASE_SECONDS is not longer than DELIVERY_TIMEOUT_MS: a slow send may be taken over and sent twice');
    }
    try {
      this.unlisten = await db.listen(DELIVERY_CHANNEL, () => this.wake());
    } catch (error) {
      logger.warn({ err: error }, 'LISTEN failed; the worker relies on polling');
    }
    this.pollTimer = setInterval(() => this.wake(), config.DELIVERY_POLL_INTERVAL_MS);
    this.maintenanceTimer = setInterval(() => void this.startMaintenance(), MAINTENANCE_INTERVAL_MS);
    this.maintenanceTimer.unref();
    void this.startMaintenance();
    logger.info({ workerId: this.deliverer.workerId }, 'delivery worker started');
    this.wake();
  }

  /** Runs a claim round now, or right after one of those in progress. */
  wake(): void {
    if (this.stopping) return;
    if (this.claims >= CLAIMS_IN_PROGRESS) {
      this.again = true;
      return;
    }
    this.claims += 1;
    void this.round().finally(() => {
      this.claims -= 1;
      if (this.again && !this.stopping) {
        this.again = false;
        this.wake();
      }
    });
  }

  /** What a claim may take (ReadyQueue.room); the rows a claim in progress set out to take count as waiting. */
  private freeSlots(): number {
    return this.ready.room(this.reserved, this.inFlight.size);
  }

  /** The leases the claim leaves out of its caps: recent sends (ReadyQueue.lookAhead) and sends waiting for their record. */
  private uncounted(): Map<number, number> {
    const counts = new Map(this.settling);
    if (this.ready.looksAhead) for (const [webhookId, n] of this.ready.lookAhead(performance.now())) counts.set(webhookId, (counts.get(webhookId) ?? 0) + n);
    return counts;
  }

  private async round(): Promise<void> {
    let offered = 0;
    let reserved = 0;
    try {
      // The free slots are counted once this claim holds the claim lock, when the other claim in
      // progress has committed its rows. That one's reply may not have been handled yet: until it
      // is, the rows it set out to take count as taken. Not all the slots it was offered: had it
      // found nothing to take, this claim would be offered nothing, and a delivery that became due
      // in between would wait for the next wake, which may never come while nothing is in flight.
      // The rows' wait for a slot counts from before the claim: their leases start within it.
      const claimStarted = performance.now();
      const claimed = this.freeSlots() <= 0 ? [] : await claim(this.deliverer, () => (offered = Math.max(0, this.freeSlots())), {
        onAllocated: (rows) => {
          reserved = rows;
          this.reserved += rows;
        },
        uncounted: () => this.uncounted(),
        onOtherLeases: (others) => this.ready.setOtherLeases(others),
      });
      this.ready.add(claimed, claimStarted);
      this.reserved -= reserved;
      reserved = 0;
      this.startSends();
      // A full batch may mean more is due right away; otherwise sleep until the next due time.
      if (claimed.length > 0 && claimed.length === offered) this.again = true;
      else if (this.inFlight.size === 0 || Date.now() - this.nextDueCheckedAt >= NEXT_DUE_RECHECK_MS) await this.scheduleNextDue();
    } catch (error) {
      // The database may be restarting: the poll tries again.
      this.deps.logger.warn({ err: error }, 'claiming deliveries failed');
    } finally {
      this.reserved -= reserved;
    }
  }

  /** Starts the sends the caps allow now; gives back what waited too long. */
  private startSends(): void {
    if (this.stopping) return;
    const { send, expired } = this.ready.take(performance.now());
    for (const delivery of send) this.send(delivery);
    if (expired.length === 0) return;
    const { db, clock, logger } = this.deps;
    releaseClaims(db, this.deliverer.workerId, clockOffsetMs(clock), expired.map((delivery) => delivery.id)).catch((error: unknown) =>
      logger.warn({ err: error }, 'giving back deliveries that waited too long failed; they return after the lease'),
    );
  }

  private send(delivery: ClaimedDelivery): void {
    const webhookId = delivery.webhook_id;
    let sent = false;
    const onSent = () => {
      sent = true;
      this.ready.finished(delivery);
      this.settling.set(webhookId, (this.settling.get(webhookId) ?? 0) + 1);
      this.startSends();
      this.wake();
    };
    const task: Promise<void> = deliverClaimed(this.deliverer, delivery, this.shutdown.signal, onSent)
      .then(
        () => undefined,
        (error: unknown) => this.deps.logger.error({ err: error, deliveryId: delivery.id }, 'recording a delivery attempt failed'),
      )
      .finally(() => {
        if (!sent) this.ready.finished(delivery);
        else if (this.settling.get(webhookId) === 1) this.settling.delete(webhookId);
        else this.settling.set(webhookId, this.settling.get(webhookId)! - 1);
        this.inFlight.delete(task);
        this.vacuum.noteFinished();
        this.wake();
      });
    this.inFlight.add(task);
  }

  /** Sleeps until the earliest scheduled attempt rather than a whole poll interval. */
  private async scheduleNextDue(): Promise<void> {
    const { db, clock, config } = this.deps;
    // The wait is computed by the database, whose clock sets the due times.
    const { rows } = await db.query<{ wait_ms: number | null }>(
      `SELECT extract(epoch FROM min(next_attempt_at) - ${dbNow(1)}) * 1000 AS wait_ms
         FROM deliveries WHERE status = 'pending' AND next_attempt_at > ${dbNow(1)}`,
      [clockOffsetMs(clock)],
    );
    this.nextDueCheckedAt = Date.now();
    const wait = rows[0]?.wait_ms;
    clearTimeout(this.dueTimer);
    if (wait === null || wait === undefined || this.stopping) return;
    if (wait < config.DELIVERY_POLL_INTERVAL_MS) this.dueTimer = setTimeout(() => this.wake(), Math.max(Number(wait), 0) + 5);
  }

  /** One pass at a time; stop() waits for it, so that it never uses the pool after the pool ended. */
  private startMaintenance(): Promise<void> {
    if (this.stopping) return Promise.resolve();
    return (this.maintenance ??= this.maintain().finally(() => (this.maintenance = undefined)));
  }

  private async maintain(): Promise<void> {
    const { db, clock, config, logger } = this.deps;
    try {
      const disabledWebhooks = await disableFailingWebhooks(db, clock.now(), config.DELIVERY_DISABLE_AFTER_DAYS);
      for (const webhook of disabledWebhooks) logger.warn({ webhookId: webhook.id, marketplaceCode: webhook.marketplace_code, code: webhook.code }, 'webhook disabled: deliveries kept failing');
      const disabled = disabledWebhooks.length;
      const pruned = await pruneExpired(db, clock.now(), config.DELIVERY_RETENTION_DAYS);
      const prunedAuth = await pruneAuthRecords(db, clock.now(), {
        refreshTokenTtlSeconds: config.REFRESH_TOKEN_TTL_SECONDS,
        auditRetentionDays: config.AUTH_AUDIT_RETENTION_DAYS,
      });
      const prunedPortal = await pruneExpiredPortalRecords(db, clock.now());
      // Webhook history is audit too: the same retention (a deleted webhook's is read by admins until then).
      const prunedHistory = await pruneWebhookHistory(db, clock.now(), config.AUTH_AUDIT_RETENTION_DAYS);
      logger.info({ disabled, pruned, prunedAuth, prunedPortal, prunedHistory }, 'maintenance done');
    } catch (error) {
      logger.warn({ err: error }, 'delivery maintenance failed');
    }
  }

  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    const { db, clock, config, logger } = this.deps;
    clearInterval(this.pollTimer);
    clearInterval(this.maintenanceTimer);
    clearTimeout(this.dueTimer);
    await this.unlisten?.().catch(() => {});
    await this.maintenance;
    // Let a claim round in progress finish so that its claims are counted below.
    while (this.claims > 0) await new Promise((resolve) => setTimeout(resolve, 10));
    // What waits for a slot is not sent: it goes back with the other claims below.
    this.ready.clear();

    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<void>((resolve) => (timer = setTimeout(resolve, config.SHUTDOWN_TIMEOUT_MS)));
    await Promise.race([Promise.allSettled([...this.inFlight]), timedOut]);
    clearTimeout(timer);
    // Claims still held go back first; a send still running then finds its lease gone and changes nothing.
    try {
      await this.deliverer.completions.idle();
      const released = await releaseClaims(db, this.deliverer.workerId, clockOffsetMs(clock));
      logger.info({ workerId: this.deliverer.workerId, released }, 'delivery worker stopped');
    } catch (error) {
      logger.warn({ err: error }, 'releasing claims failed; they return after the lease');
    }
    this.shutdown.abort();
    await Promise.race([Promise.allSettled([...this.inFlight]), new Promise((resolve) => setTimeout(resolve, 1000))]);
    await this.deliverer.close().catch(() => {});
  }
}
