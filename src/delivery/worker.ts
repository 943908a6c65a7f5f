import { setMaxListeners } from 'node:events';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import type { Keys } from '../keys.js';
import { releaseClaims } from './queue/release-claims.js';
import type { ClaimedDelivery } from './queue/take-rows.js';
import { clockOffsetMs, dbNow } from '../db/database-clock.js';
import { DELIVERY_CHANNEL, notifyDeliveryWorkers } from '../webhooks/deliveries.repository.js';
import { claimWork, createDeliverer, deliverClaimed, LEASE_RECOVERY_INTERVAL_MS, recoverLeasesWhenDue, type Deliverer } from './dispatch/deliver.js';
import type { Metrics } from '../metrics.js';
import { QueueVacuum } from './queue/vacuum.js';

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

/**
 * While sends are in flight, the query for the next due time (which arms the timer for an idle
 * worker) runs at most this often, rather than after every claim.
 */
const NEXT_DUE_RECHECK_MS = 1000;

/**
 * A claim that found due work in lanes other claims held (queue/lock-due-webhooks.ts) tries again
 * this much later: those claims commit within a few milliseconds.
 */
const CONTENDED_RETRY_MS = 2;

/**
 * The long-running worker of `plaza serve`: claims when something may have made work due (an
 * intake's NOTIFY, the slow poll, the earliest scheduled retry, leases recovered from a crashed
 * worker) and, when its last claim left due work behind, whenever a send finishes (a slot frees up,
 * or the next delivery of an entity may go); claims as many deliveries as it has free slots and
 * sends them concurrently. One claim at a time; a wake during a claim runs the next one right after.
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
  /** Sends in progress: what DELIVERY_CONCURRENCY bounds. */
  private sending = 0;
  /** Per webhook, this worker's deliveries that were sent and wait for their attempt to be recorded. */
  private readonly recording = new Map<number, number>();
  /** When scheduleNextDue last ran (Date.now()). */
  private nextDueCheckedAt = 0;
  /**
   * A next-due query is running: another would add nothing (a retry recorded after its read arms
   * the timer from its own delay).
   */
  private checkingNextDue = false;
  /**
   * The due timer fired: the round after it looks for the next due time whatever else runs. The
   * timer keeps only the soonest of the due times it was given, so a later one was dropped and is
   * known again only from this query (without it, such a retry waited for the poll).
   */
  private nextDueOwed = false;
  private readonly shutdown = new AbortController();
  private readonly vacuum: QueueVacuum;
  private stopping = false;
  private claiming = false;
  private again = false;
  /**
   * A claim may find work: set by every wake and by a claim that left due work behind; cleared when
   * a claim starts. A finished send claims only while it is set: after a claim that took every due
   * row it saw, the end of a send frees a slot but makes nothing due.
   */
  private owed = true;
  /** A send finished while the claim in progress ran: if that claim leaves work behind, the next one runs at once. */
  private freedDuringClaim = false;
  /** The next-due query and the lease recovery, which run beside the claims. */
  private readonly background = new Set<Promise<void>>();
  private pollTimer: NodeJS.Timeout | undefined;
  private recoveryTimer: NodeJS.Timeout | undefined;
  private dueTimer: NodeJS.Timeout | undefined;
  /** When the due timer fires (Date.now()); Infinity when none is armed. */
  private dueAt = Infinity;
  private retryTimer: NodeJS.Timeout | undefined;
  private unlisten: (() => Promise<void>) | undefined;

  constructor(
    private readonly deliverer: Deliverer,
    private readonly deps: WorkerDeps,
  ) {
    this.vacuum = new QueueVacuum(deps.db, deps.logger);
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
    // Expired leases go back to pending beside the claims, not as a round trip before one.
    this.recoveryTimer = setInterval(() => this.inBackground(() => this.recoverLeases()), LEASE_RECOVERY_INTERVAL_MS);
    this.inBackground(() => this.recoverLeases());
    logger.info({ workerId: this.deliverer.workerId }, 'delivery worker started');
    this.wake();
  }

  /** Something may have made work due: claims now, or right after the claim in progress. */
  wake(): void {
    this.owed = true;
    this.claimSoon();
  }

  /** A send finished: a slot is free, and an entity's next delivery may go. */
  private sendFinished(): void {
    if (this.claiming) this.freedDuringClaim = true;
    else if (this.owed) this.claimSoon();
  }

  private claimSoon(): void {
    if (this.stopping) return;
    if (this.claiming) {
      this.again = true;
      return;
    }
    this.claiming = true;
    this.freedDuringClaim = false;
    void this.round().finally(() => {
      this.claiming = false;
      if ((this.again || (this.freedDuringClaim && this.owed)) && !this.stopping) {
        this.again = false;
        this.claimSoon();
      }
    });
  }

  /**
   * What a claim may take: the slots without a send, and no more than DELIVERY_CONCURRENCY sends
   * waiting for their record, should the database fall behind. A slot frees up when its send is
   * over, not when its attempt is recorded: recording is batched and would otherwise hold every slot
   * for a batch's round trip.
   */
  private freeSlots(): number {
    const { DELIVERY_CONCURRENCY: concurrency } = this.deps.config;
    return Math.min(concurrency - this.sending, 2 * concurrency - this.inFlight.size);
  }

  private async round(): Promise<void> {
    const offered = this.freeSlots();
    if (offered <= 0) return;
    this.owed = false;
    try {
      const { deliveries, more, left, now } = await claimWork(this.deliverer, offered, this.recording);
      if (left) this.owed = true;
      for (const delivery of deliveries) this.send(delivery);
      // Every slot taken and work left: more may be due right away; lanes held by other claims are
      // free again in a moment; otherwise sleep until the next due time.
      if (left && deliveries.length === offered) this.again = true;
      else if (more) this.retrySoon();
      else if (this.nextDueOwed || (!this.checkingNextDue && (this.inFlight.size === 0 || Date.now() - this.nextDueCheckedAt >= NEXT_DUE_RECHECK_MS))) {
        this.nextDueOwed = false;
        this.inBackground(() => this.scheduleNextDue(now));
      }
    } catch (error) {
      this.owed = true;
      // The database may be restarting: the poll tries again.
      this.deps.logger.warn({ err: error }, 'claiming deliveries failed');
    }
  }

  private retrySoon(): void {
    if (this.retryTimer || this.stopping) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.wake();
    }, CONTENDED_RETRY_MS);
  }

  private send(delivery: ClaimedDelivery): void {
    const webhookId = delivery.webhook_id;
    let sent = false;
    this.sending += 1;
    const onSent = () => {
      sent = true;
      this.sending -= 1;
      this.recording.set(webhookId, (this.recording.get(webhookId) ?? 0) + 1);
      this.sendFinished();
    };
    const task: Promise<void> = deliverClaimed(this.deliverer, delivery, this.shutdown.signal, onSent)
      .then(
        // A retry, or a send postponed by a budget, is due again at a known time: the worker wakes then.
        (result) => void (result.dueAgainInMs !== undefined && this.armDueTimer(result.dueAgainInMs)),
        (error: unknown) => this.deps.logger.error({ err: error, deliveryId: delivery.id }, 'recording a delivery attempt failed'),
      )
      .finally(() => {
        if (!sent) this.sending -= 1;
        else if (this.recording.get(webhookId) === 1) this.recording.delete(webhookId);
        else this.recording.set(webhookId, this.recording.get(webhookId)! - 1);
        this.inFlight.delete(task);
        this.vacuum.noteFinished();
        this.sendFinished();
      });
    this.inFlight.add(task);
  }

  /** Runs `work` beside the claims; stop() waits for it. Its failure is logged: the poll covers for it. */
  private inBackground(work: () => Promise<void>): void {
    if (this.stopping) return;
    const task: Promise<void> = work()
      .catch((error: unknown) => this.deps.logger.warn({ err: error }, 'delivery worker: a background query failed'))
      .finally(() => this.background.delete(task));
    this.background.add(task);
  }

  /** Expired leases of crashed workers back to pending (at most once a second); a claim takes them. */
  private async recoverLeases(): Promise<void> {
    if ((await recoverLeasesWhenDue(this.deliverer)) > 0) this.wake();
  }

  /**
   * Sleeps until the earliest scheduled attempt rather than a whole poll interval: the earliest due
   * after `claimedAt`, the time the last claim counted as now (what was due by then, it took or left
   * owed; a row due since may be due already, and the timer then wakes the worker at once).
   */
  private async scheduleNextDue(claimedAt: string | undefined): Promise<void> {
    const { db, clock } = this.deps;
    this.nextDueCheckedAt = Date.now();
    this.checkingNextDue = true;
    try {
      // The wait is computed by the database, whose clock sets the due times.
      const { rows } = await db.query<{ wait_ms: number | null }>(
        `SELECT extract(epoch FROM min(next_attempt_at) - ${dbNow(1)}) * 1000 AS wait_ms
           FROM deliveries WHERE status = 'pending' AND next_attempt_at > coalesce($2::timestamptz, ${dbNow(1)})`,
        [clockOffsetMs(clock), claimedAt ?? null],
      );
      const wait = rows[0]?.wait_ms;
      if (wait !== null && wait !== undefined) this.armDueTimer(Number(wait));
    } finally {
      this.checkingNextDue = false;
    }
  }

  /**
   * Wakes the worker `waitMs` from now (and a little after, so that the row is due by then), unless
   * the timer already fires sooner (the round after it then looks for this one: nextDueOwed); past
   * the poll interval, the poll does. A timer armed for a row that another worker took meanwhile
   * costs one claim that finds nothing.
   */
  private armDueTimer(waitMs: number): void {
    if (this.stopping || waitMs >= this.deps.config.DELIVERY_POLL_INTERVAL_MS) return;
    const at = Date.now() + Math.max(waitMs, 0) + 5;
    if (at >= this.dueAt) return;
    clearTimeout(this.dueTimer);
    this.dueAt = at;
    this.dueTimer = setTimeout(() => {
      this.dueTimer = undefined;
      this.dueAt = Infinity;
      this.nextDueOwed = true;
      this.wake();
    }, at - Date.now());
  }

  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    const { db, clock, config, logger } = this.deps;
    clearInterval(this.pollTimer);
    clearInterval(this.recoveryTimer);
    clearTimeout(this.dueTimer);
    clearTimeout(this.retryTimer);
    await this.unlisten?.().catch(() => {});
    // Let a claim round in progress finish so that its claims are counted below.
    while (this.claiming) await new Promise((resolve) => setTimeout(resolve, 10));
    await Promise.allSettled([...this.background]);

    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<void>((resolve) => (timer = setTimeout(resolve, config.SHUTDOWN_TIMEOUT_MS)));
    await Promise.race([Promise.allSettled([...this.inFlight]), timedOut]);
    clearTimeout(timer);
    // Claims still held go back first; a send still running then finds its lease gone and changes nothing.
    try {
      await this.deliverer.completions.idle();
      const released = await releaseClaims(db, this.deliverer.workerId, clockOffsetMs(clock));
      // Due again at once: the other workers claim them now, not at their next poll.
      if (released > 0) await notifyDeliveryWorkers(db);
      logger.info({ workerId: this.deliverer.workerId, released }, 'delivery worker stopped');
    } catch (error) {
      logger.warn({ err: error }, 'releasing claims failed; they return after the lease');
    }
    this.shutdown.abort();
    await Promise.race([Promise.allSettled([...this.inFlight]), new Promise((resolve) => setTimeout(resolve, 1000))]);
    await this.deliverer.close().catch(() => {});
  }
}
