import type { FastifyBaseLogger } from 'fastify';
import type { Database } from '../../db/database.js';
import { AppError } from '../../http/errors.js';
import { DELIVERY_CHANNEL } from '../../webhooks/deliveries.repository.js';
import { newestDeliveryIds } from './notification-feed.repository.js';

/** While requests wait, their webhooks are checked this often even without a notification (a LISTEN connection that dropped). */
const SAFETY_CHECK_MS = 2000;

interface Waiter {
  tenant: string;
  webhookId: number;
  afterId: number;
  wake: () => void;
}

/**
 * The feed's long poll (`wait`): requests wait here, in the process, holding no database
 * connection. They are woken by the intake's NOTIFY on the delivery workers' channel
 * (DELIVERY_CHANNEL, sent on commit with every new delivery), which this process LISTENs on once,
 * on the database's one LISTEN connection (db/postgres.ts), however many requests wait. A
 * notification names no webhook: one statement then reads the newest delivery id of every webhook
 * waited on, and wakes the requests whose webhook has something newer than their position; they
 * read their page again. Checks are coalesced: at most one runs at a time, and notifications that
 * arrive meanwhile cause one more. So the waiting requests of a process use one pooled connection at
 * most, for one short statement at a time, plus the LISTEN connection, whatever their number.
 * At most `maxPerTenant` requests of one tenant wait at once: one beyond is 429 rate_limited.
 */
export class FeedWaiters {
  private readonly waiters = new Set<Waiter>();
  private readonly perTenant = new Map<string, number>();
  private listening: Promise<(() => Promise<void>) | undefined> | undefined;
  private checking = false;
  private checkAgain = false;
  private safetyTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Database,
    private readonly maxPerTenant: number,
    private readonly logger?: FastifyBaseLogger,
  ) {}

  /** Requests waiting now (all tenants). */
  get size(): number {
    return this.waiters.size;
  }

  /**
   * Waits until the webhook has a delivery newer than `afterId`, `ms` at most, or until `signal`
   * aborts (the client went away). Never holds a database connection while it waits.
   */
  async waitForNewer(tenant: string, webhookId: number, afterId: number, ms: number, signal?: AbortSignal): Promise<void> {
    const count = this.perTenant.get(tenant) ?? 0;
    if (count >= this.maxPerTenant) {
      throw new AppError('rate_limited', `At most ${this.maxPerTenant} feed requests of one tenant may wait at once (NOTIFICATION_FEED_MAX_WAITERS_PER_TENANT); poll without wait, or wait in fewer requests.`, {
        headers: { 'retry-after': '1' },
      });
    }
    await this.listen();
    this.perTenant.set(tenant, count + 1);
    await new Promise<void>((resolve) => {
      const waiter: Waiter = { tenant, webhookId, afterId, wake: () => done() };
      const done = () => {
        if (!this.waiters.delete(waiter)) return;
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        const left = (this.perTenant.get(tenant) ?? 1) - 1;
        if (left > 0) this.perTenant.set(tenant, left);
        else this.perTenant.delete(tenant);
        if (this.waiters.size === 0) this.stopSafetyChecks();
        resolve();
      };
      this.waiters.add(waiter);
      const timer = setTimeout(done, ms);
      signal?.addEventListener('abort', done, { once: true });
      if (signal?.aborted) done();
      this.startSafetyChecks();
      // A delivery committed between the caller's read and this registration sent its NOTIFY before
      // anyone waited: one check now finds it.
      this.poke();
    });
  }

  /** Something may be newer: check every webhook waited on (coalesced). */
  poke(): void {
    if (this.waiters.size === 0) return;
    if (this.checking) {
      this.checkAgain = true;
      return;
    }
    this.checking = true;
    void this.check().finally(() => {
      this.checking = false;
      if (this.checkAgain) {
        this.checkAgain = false;
        this.poke();
      }
    });
  }

  async close(): Promise<void> {
    this.stopSafetyChecks();
    for (const waiter of [...this.waiters]) waiter.wake();
    const unlisten = await this.listening;
    this.listening = undefined;
    await unlisten?.().catch(() => {});
  }

  private async check(): Promise<void> {
    const waiting = [...this.waiters];
    if (waiting.length === 0) return;
    try {
      const newest = await newestDeliveryIds(this.db, [...new Set(waiting.map((waiter) => waiter.webhookId))]);
      for (const waiter of waiting) if ((newest.get(waiter.webhookId) ?? 0) > waiter.afterId) waiter.wake();
    } catch (error) {
      // The database is unreachable: the requests wait on; their timeout answers them.
      this.logger?.warn({ err: error }, 'cannot check the feeds waited on');
    }
  }

  private listen(): Promise<unknown> {
    this.listening ??= this.db.listen(DELIVERY_CHANNEL, () => this.poke()).catch((error: unknown) => {
      // Without LISTEN, the safety checks still wake the requests, later.
      this.logger?.warn({ err: error }, 'LISTEN failed; waiting feed requests rely on the periodic check');
      this.listening = undefined;
      return undefined;
    });
    return this.listening;
  }

  private startSafetyChecks(): void {
    if (this.safetyTimer) return;
    this.safetyTimer = setInterval(() => this.poke(), SAFETY_CHECK_MS);
    this.safetyTimer.unref();
  }

  private stopSafetyChecks(): void {
    clearInterval(this.safetyTimer);
    this.safetyTimer = undefined;
  }
}
