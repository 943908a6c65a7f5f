/**
 * The fairness rule of the claim, as a pure function over what the database reported. "In flight"
 * is the live leases the claim counts: all of the other workers', and of this worker's those not
 * left out (ClaimOptions.uncounted: its sends, whose caps it enforces as each starts, ready-queue.ts,
 * LOOK_AHEAD times each): a webhook or tenant of this worker may so count below zero, room to claim
 * ahead of its sends:
 * - a tenant (the owner of the webhooks: one seller, one marketplace, or the admins) holds at most
 *   `share` of this worker's slots and at most `share` of the slots of all live workers;
 * - a webhook holds at most `perWebhookLimit` deliveries in flight over all workers;
 * - free slots are handed out one at a time, round-robin across tenants (starting after the tenant
 *   the previous claim ended on), within a tenant round-robin across its webhooks (the one with the
 *   oldest due delivery first), and the claim then takes each webhook's rows in due order.
 */

/**
 * How many deliveries a worker may claim ahead of each of its recent sends (ready-queue.ts): they
 * wait in the worker and go as soon as a send ends. With one each, a webhook's waiting work was
 * one claim's worth and its sends waited for the next claim (measured in docs/performance.md).
 */
export const LOOK_AHEAD = 2;

export interface DueWebhook {
  webhookId: number;
  tenant: string;
  /** Due rows waiting, counted up to LOOK_AHEAD × the per-webhook limit. */
  due: number;
  /** Deliveries of this webhook in flight now (live leases, all workers). */
  inFlight: number;
}

export interface TenantLoad {
  /** Live leases of the tenant over all workers. */
  total: number;
  /** Live leases of the tenant held by this worker. */
  mine: number;
}

export interface ShareOptions {
  /** This worker's free slots. */
  free: number;
  /** This worker's slots in all (DELIVERY_CONCURRENCY). */
  concurrency: number;
  /** Workers that hold live leases, this one included. */
  workers: number;
  share: number;
  perWebhookLimit: number;
  /** The tenant the previous claim ended on: this one starts after it. */
  after?: string;
}

export interface Allocation {
  /** How many rows to take per webhook. */
  quotas: Map<number, number>;
  /** The last tenant served, where the next claim resumes. */
  last?: string;
}

/** A tenant's cap in a pool of `slots`: at least one slot, so that a small pool still serves everyone. */
export function tenantCap(slots: number, share: number): number {
  return Math.max(1, Math.floor(slots * share));
}

export function allocateSlots(webhooks: readonly DueWebhook[], loads: ReadonlyMap<string, TenantLoad>, options: ShareOptions): Allocation {
  const perWorker = tenantCap(options.concurrency, options.share);
  const overall = tenantCap(options.concurrency * Math.max(1, options.workers), options.share);
  const byTenant = new Map<string, { allowance: number; webhooks: { id: number; room: number }[]; next: number }>();
  for (const webhook of webhooks) {
    let tenant = byTenant.get(webhook.tenant);
    if (!tenant) {
      const load = loads.get(webhook.tenant) ?? { total: 0, mine: 0 };
      tenant = { allowance: Math.min(perWorker - load.mine, overall - load.total), webhooks: [], next: 0 };
      byTenant.set(webhook.tenant, tenant);
    }
    const room = Math.min(webhook.due, options.perWebhookLimit - webhook.inFlight);
    if (room > 0) tenant.webhooks.push({ id: webhook.webhookId, room });
  }
  const names = [...byTenant.keys()].sort();
  const start = options.after === undefined ? 0 : names.findIndex((name) => name > options.after!);
  const order = start <= 0 ? names : [...names.slice(start), ...names.slice(0, start)];

  const quotas = new Map<number, number>();
  let free = options.free;
  let last: string | undefined;
  let progress = true;
  while (free > 0 && progress) {
    progress = false;
    for (const name of order) {
      if (free === 0) break;
      const tenant = byTenant.get(name)!;
      if (tenant.allowance <= 0) continue;
      const webhook = nextWithRoom(tenant);
      if (!webhook) continue;
      webhook.room -= 1;
      tenant.allowance -= 1;
      quotas.set(webhook.id, (quotas.get(webhook.id) ?? 0) + 1);
      free -= 1;
      last = name;
      progress = true;
    }
  }
  return { quotas, last };
}

/** The tenant's next webhook in round-robin order that still has room, or undefined. */
function nextWithRoom(tenant: { webhooks: { id: number; room: number }[]; next: number }): { id: number; room: number } | undefined {
  for (let tried = 0; tried < tenant.webhooks.length; tried++) {
    const webhook = tenant.webhooks[tenant.next % tenant.webhooks.length]!;
    tenant.next += 1;
    if (webhook.room > 0) return webhook;
  }
  return undefined;
}
