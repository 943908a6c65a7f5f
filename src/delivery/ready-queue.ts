import type { ClaimedDelivery, OtherLeases } from './claim.js';
import { LOOK_AHEAD, tenantCap } from './fair-share.js';

/**
 * A send older than this is slow: the claim takes nothing ahead of it (lookAhead), so that nothing
 * waits behind a slow or hanging receiver, holding leases that other workers count.
 */
export const RECENT_SEND_MS = 1000;

/**
 * The longest a claimed delivery waits for its slot: about what a send already under way may take
 * after its webhook is paused or deleted, not the minute of its lease.
 */
export const MAX_WAIT_MS = 2000;

export interface SendCaps {
  /** DELIVERY_CONCURRENCY: sends at once in this worker. */
  concurrency: number;
  /** DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK, over all workers. */
  perWebhookLimit: number;
  /** DELIVERY_TENANT_SHARE, of this worker's slots and of all workers'. */
  tenantShare: number;
  /**
   * How long a claimed delivery may wait here: MAX_WAIT_MS, or less when its lease could otherwise
   * run out during its send. 0 when the lease is too short to wait at all: the worker then claims
   * only what it can send.
   */
  maxWaitMs: number;
}

interface Waiting {
  delivery: ClaimedDelivery;
  claimedAt: number;
}

/**
 * A worker's claimed deliveries until their sends start. The claim leaves the worker's recent sends
 * out of its caps, LOOK_AHEAD times over (lookAhead, ClaimOptions.uncounted), and so takes, besides
 * what can go at once, the deliveries that are to go when those sends end: a slot that frees is
 * refilled here, at once, rather than by the next claim (which is a few milliseconds away, every
 * one of them a slot left idle).
 *
 * The caps then hold at the start of each send, over what the worker's last claim read of the other
 * workers' leases: a webhook's sends here stay within perWebhookLimit less the other workers' leases
 * on it, a tenant's within its share of this worker's slots and of all workers' less the other
 * workers' leases of the tenant. Another worker counts all of this worker's leases, waiting ones
 * included, so over all workers a webhook never has more than perWebhookLimit sends at once.
 */
export class ReadyQueue {
  private waiting: Waiting[] = [];
  private others: OtherLeases = { webhooks: new Map(), tenants: new Map(), workers: 1 };
  private readonly byWebhook = new Map<number, number>();
  private readonly byTenant = new Map<string, number>();
  /** The sends in progress, and when each started. */
  private readonly started = new Map<ClaimedDelivery, number>();

  constructor(private readonly caps: SendCaps) {}

  /** Whether claimed deliveries may wait for a slot (the claim then looks ahead: ClaimOptions.uncounted). */
  get looksAhead(): boolean {
    return this.caps.maxWaitMs > 0;
  }

  /** Sends in progress. */
  get sending(): number {
    return this.started.size;
  }

  /** Deliveries waiting for a send slot. */
  get size(): number {
    return this.waiting.length;
  }

  /**
   * How many deliveries the claim may take ahead of this worker's sends, per webhook: LOOK_AHEAD for
   * each send that began less than RECENT_SEND_MS ago. The claim's caps leave that many of the
   * worker's leases out (ClaimOptions.uncounted).
   */
  lookAhead(now: number): Map<number, number> {
    const counts = new Map<number, number>();
    for (const [delivery, at] of this.started) {
      if (now - at < RECENT_SEND_MS) counts.set(delivery.webhook_id, (counts.get(delivery.webhook_id) ?? 0) + LOOK_AHEAD);
    }
    return counts;
  }

  /**
   * How many deliveries a claim may add: up to LOOK_AHEAD × `concurrency` may wait for a slot, as
   * many as the claim may take ahead of all the slots' sends, so that a tenant's share of what
   * waits is its share of the slots and another tenant always finds room. A slot frees up when its
   * send is over, not when its attempt is recorded: recording is batched and would otherwise hold
   * every slot for a batch's round trip. What waits to be recorded is bounded too (another
   * `concurrency`), should the database fall behind.
   * `reserved`: rows a claim in progress set out to take; `unrecorded`: deliveries whose send started
   * and whose attempt is not recorded yet.
   */
  room(reserved: number, unrecorded: number): number {
    const { concurrency } = this.caps;
    // Without look-ahead (a lease too short for a delivery to wait), the sends count too.
    const waiting = this.waiting.length + reserved + (this.looksAhead ? 0 : this.sending);
    const pool = this.looksAhead ? LOOK_AHEAD * concurrency : concurrency;
    return Math.min(pool - waiting, pool + concurrency - unrecorded - waiting);
  }

  add(deliveries: readonly ClaimedDelivery[], now: number): void {
    for (const delivery of deliveries) this.waiting.push({ delivery, claimedAt: now });
  }

  setOtherLeases(others: OtherLeases): void {
    this.others = others;
  }

  /**
   * The deliveries to send now, oldest claim first, counted as sending from here on; and those that
   * waited past maxWaitMs, to give back (their lease may not outlast a send any more).
   */
  take(now: number): { send: ClaimedDelivery[]; expired: ClaimedDelivery[] } {
    const send: ClaimedDelivery[] = [];
    const expired: ClaimedDelivery[] = [];
    const kept: Waiting[] = [];
    for (const entry of this.waiting) {
      const { delivery } = entry;
      // Past its wait (maxWaitMs) a delivery is handed back rather than sent; a worker that does
      // not look ahead sends what it claimed at once or hands it back.
      const late = now - entry.claimedAt > this.caps.maxWaitMs;
      if ((!late || !this.looksAhead) && this.sending < this.caps.concurrency && this.hasRoom(delivery)) {
        this.started.set(delivery, now);
        this.count(delivery, 1);
        send.push(delivery);
      } else if (late) expired.push(delivery);
      else kept.push(entry);
    }
    this.waiting = kept;
    return { send, expired };
  }

  /** A send taken from here is over. */
  finished(delivery: ClaimedDelivery): void {
    if (this.started.delete(delivery)) this.count(delivery, -1);
  }

  /** Empties the queue (shutdown): the deliveries' leases are given back with the worker's others. */
  clear(): void {
    this.waiting = [];
  }

  private hasRoom({ webhook_id: webhookId, tenant }: ClaimedDelivery): boolean {
    const { perWebhookLimit, concurrency, tenantShare } = this.caps;
    if ((this.byWebhook.get(webhookId) ?? 0) >= perWebhookLimit - (this.others.webhooks.get(webhookId) ?? 0)) return false;
    const tenantRoom = Math.min(
      tenantCap(concurrency, tenantShare),
      tenantCap(concurrency * this.others.workers, tenantShare) - (this.others.tenants.get(tenant) ?? 0),
    );
    return (this.byTenant.get(tenant) ?? 0) < tenantRoom;
  }

  private count({ webhook_id: webhookId, tenant }: ClaimedDelivery, by: 1 | -1): void {
    adjust(this.byWebhook, webhookId, by);
    adjust(this.byTenant, tenant, by);
  }
}

function adjust<K>(counts: Map<K, number>, key: K, by: number): void {
  const n = (counts.get(key) ?? 0) + by;
  if (n === 0) counts.delete(key);
  else counts.set(key, n);
}
