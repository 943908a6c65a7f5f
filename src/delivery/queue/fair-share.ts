/**
 * The fairness rule of the claim, as a pure function over what the database reported. "In flight" is
 * the live leases, less this worker's sends that are over and wait for their attempt to be recorded
 * (they load no receiver):
 * - a tenant (the owner of the webhooks: one seller, one marketplace, or the admins) holds at most
 *   `share` of this worker's slots and at most `share` of the slots of all live workers;
 * - a webhook holds at most `perWebhookLimit` deliveries in flight over all workers;
 * - free slots are handed out one at a time, round-robin across tenants (starting after the tenant
 *   the previous claim ended on), within a tenant round-robin across its webhooks, and within a
 *   webhook to the stream (seller) with the fewest deliveries in flight and given so far, the first
 *   in scan order on a tie: a seller's backlog in a shared webhook never holds another seller back
 *   by more than a slot's turn.
 */

export interface DueStream {
  key: string;
  /** Due rows, counted up to the per-webhook limit. */
  due: number;
  inFlight: number;
}

export interface DueWebhook {
  webhookId: number;
  tenant: string;
  inFlight: number;
  /** In scan order. */
  streams: DueStream[];
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

export interface Quota {
  webhookId: number;
  key: string;
  n: number;
}

export interface Allocation {
  quotas: Quota[];
  /** The last tenant served, where the next claim resumes. */
  last?: string;
}

/** A tenant's cap in a pool of `slots`: at least one slot, so that a small pool still serves everyone. */
export function tenantCap(slots: number, share: number): number {
  return Math.max(1, Math.floor(slots * share));
}

interface Room {
  webhook: DueWebhook;
  room: number;
  given: Map<string, number>;
}

export function allocateSlots(webhooks: readonly DueWebhook[], loads: ReadonlyMap<string, TenantLoad>, options: ShareOptions): Allocation {
  const perWorker = tenantCap(options.concurrency, options.share);
  const overall = tenantCap(options.concurrency * Math.max(1, options.workers), options.share);
  const byTenant = new Map<string, { allowance: number; webhooks: Room[]; next: number }>();
  for (const webhook of webhooks) {
    let tenant = byTenant.get(webhook.tenant);
    if (!tenant) {
      const load = loads.get(webhook.tenant) ?? { total: 0, mine: 0 };
      tenant = { allowance: Math.min(perWorker - load.mine, overall - load.total), webhooks: [], next: 0 };
      byTenant.set(webhook.tenant, tenant);
    }
    const due = webhook.streams.reduce((sum, stream) => sum + stream.due, 0);
    const room = Math.min(due, options.perWebhookLimit - webhook.inFlight);
    if (room > 0) tenant.webhooks.push({ webhook, room, given: new Map() });
  }
  const names = [...byTenant.keys()].sort();
  const start = options.after === undefined ? 0 : names.findIndex((name) => name > options.after!);
  const order = start <= 0 ? names : [...names.slice(start), ...names.slice(0, start)];

  let free = options.free;
  let last: string | undefined;
  let progress = true;
  while (free > 0 && progress) {
    progress = false;
    for (const name of order) {
      if (free === 0) break;
      const tenant = byTenant.get(name)!;
      if (tenant.allowance <= 0) continue;
      const room = nextWithRoom(tenant);
      if (!room) continue;
      const stream = leastBusyStream(room);
      room.room -= 1;
      room.given.set(stream.key, (room.given.get(stream.key) ?? 0) + 1);
      tenant.allowance -= 1;
      free -= 1;
      last = name;
      progress = true;
    }
  }
  const quotas = [...byTenant.values()].flatMap((tenant) =>
    tenant.webhooks.flatMap(({ webhook, given }) => [...given].map(([key, n]) => ({ webhookId: webhook.webhookId, key, n }))),
  );
  return { quotas, last };
}

/** The tenant's next webhook in round-robin order that still has room, or undefined. */
function nextWithRoom(tenant: { webhooks: Room[]; next: number }): Room | undefined {
  for (let tried = 0; tried < tenant.webhooks.length; tried++) {
    const room = tenant.webhooks[tenant.next % tenant.webhooks.length]!;
    tenant.next += 1;
    if (room.room > 0) return room;
  }
  return undefined;
}

/** The webhook's stream with due rows left and the fewest in flight and given; the first on a tie. */
function leastBusyStream({ webhook, given }: Room): DueStream {
  let best: DueStream | undefined;
  let bestLoad = Infinity;
  for (const stream of webhook.streams) {
    const n = given.get(stream.key) ?? 0;
    if (n >= stream.due) continue;
    if (stream.inFlight + n < bestLoad) {
      best = stream;
      bestLoad = stream.inFlight + n;
    }
  }
  // The webhook's room is at most its streams' due rows, so one is left.
  return best!;
}
