import type { Config } from '../../config.js';
import { TokenBuckets } from '../../http/token-buckets.js';
import type { DestinationAddresses } from './destination-addresses.js';

/**
 * The send budgets a notification's bytes are taken from before it goes out, per worker process:
 *
 * - per destination: the address the callback's host connects to (destination-addresses.ts), not its
 *   name. Without it one large event fanned out to many webhooks of one receiver (or many retries)
 *   makes Plaza an amplifier against that host; keyed by name, five spellings of one receiver got
 *   five budgets. A destination over its budget waits; others' deliveries go on.
 * - per tenant (the webhooks' owner, who chose the fan-out): TENANT_SEND_BYTES_PER_MINUTE. A tenant
 *   over it waits; other tenants' deliveries go on.
 *
 * Waiting means postponed (queue/postpone-claim.ts): no attempt is counted and nothing is dropped.
 */
export interface SendBudgets {
  /** 0 when the bytes may go now (taken from both budgets), else the seconds to wait (nothing taken). */
  take(delivery: { callback_url: string; tenant: string }, bytes: number, nowMs: number): Promise<number>;
}

export function createSendBudgets(config: Config, addresses: DestinationAddresses): SendBudgets | undefined {
  const hosts =
    config.DELIVERY_HOST_BYTES_PER_SECOND > 0 && config.DELIVERY_HOST_BURST_BYTES > 0
      ? new TokenBuckets(config.DELIVERY_HOST_BURST_BYTES, config.DELIVERY_HOST_BYTES_PER_SECOND)
      : undefined;
  const perMinute = config.TENANT_SEND_BYTES_PER_MINUTE;
  // A minute's worth at once at most, then the minute's rate: what one tenant sends in any minute stays near it.
  const tenants = perMinute > 0 ? new TokenBuckets(perMinute, perMinute / 60) : undefined;
  if (!hosts && !tenants) return undefined;
  return {
    async take(delivery, bytes, nowMs) {
      const tenantWait = tenants?.take(delivery.tenant, bytes, nowMs) ?? 0;
      if (tenantWait > 0 || !hosts) return tenantWait;
      let hostname: string;
      try {
        hostname = new URL(delivery.callback_url).hostname;
      } catch {
        return 0; // the sender reports the bad URL as the attempt's error
      }
      // The address, not address:port: ports of one machine share its bandwidth.
      const hostWait = hosts.take(await addresses.keyOf(hostname), bytes, nowMs);
      // Not sent now: the tenant's bytes were not spent.
      if (hostWait > 0) tenants?.giveBack(delivery.tenant, bytes, nowMs);
      return hostWait;
    },
  };
}
