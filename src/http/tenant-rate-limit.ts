import type { FastifyRequest } from 'fastify';
import type { Principal } from '../accounts/principal.js';
import { principalOf } from './principal.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import { rateLimited } from './errors.js';
import { TokenBuckets } from './token-buckets.js';

/**
 * Per-tenant rate limits on what makes Plaza send to third parties: event intake (each event fans
 * out to every matching webhook), delivery retry, replay and test notifications. One tenant using
 * its whole budget leaves every other tenant's untouched.
 *
 * Decision: token buckets in each API process's memory, not in the database. A limit check costs no
 * query and cannot itself be a load on the shared database; the price is that N API processes allow
 * N times the configured rate (documented in docs/configuration.md and docs/reliability.md). The
 * limits are a guard against amplification, not a billing quota, so that is the right trade.
 */
export type TenantAction = 'events' | 'retry' | 'replay' | 'test';

export interface TenantRateLimits {
  /** Takes one unit of `action` for the principal's tenant, or throws 429 rate_limited with Retry-After. */
  take(principal: Principal, action: TenantAction): void;
  /**
   * Takes `bytes` of the tenant's event storage budget (TENANT_EVENT_BYTES_PER_HOUR), or throws 429
   * rate_limited with Retry-After. Returns what gives them back, for an event that was not stored
   * after all (a repeat of a committed event_id, a failed transaction).
   */
  takeEventBytes(principal: Principal, bytes: number): () => void;
}

/**
 * The tenant a limit counts against: the seller, the marketplace, or one admin user (admins are
 * operators, not one tenant). The credential's tenant, not the seller an event is for: a
 * marketplace sending for its sellers spends its own budgets, so it can never use up a seller's
 * (nor a seller the marketplace's).
 */
export function tenantKey(principal: Principal): string {
  if (principal.role === 'admin') return `admin:${principal.userId}`;
  if (principal.role === 'marketplace') return `marketplace:${principal.marketplaceCode ?? ''}`;
  return `seller:${principal.sellerId}`;
}

const perMinute = (count: number) => ({ capacity: count, perSecond: count / 60 });

export function createTenantRateLimits(config: Config, clock: Clock): TenantRateLimits {
  const settings: Record<TenantAction, { capacity: number; perSecond: number }> = {
    events: { capacity: config.TENANT_EVENTS_BURST, perSecond: config.TENANT_EVENTS_PER_SECOND },
    retry: perMinute(config.TENANT_RETRIES_PER_MINUTE),
    replay: perMinute(config.TENANT_REPLAYS_PER_MINUTE),
    test: perMinute(config.TENANT_TESTS_PER_MINUTE),
  };
  const buckets = new Map<TenantAction, TokenBuckets>();
  for (const [action, { capacity, perSecond }] of Object.entries(settings) as [TenantAction, { capacity: number; perSecond: number }][]) {
    // 0 turns a limit off.
    if (capacity > 0 && perSecond > 0) buckets.set(action, new TokenBuckets(capacity, perSecond));
  }
  // Bytes, not events: a tenant's share of the database, whatever the size of its events.
  const eventBytes =
    config.TENANT_EVENT_BYTES_PER_HOUR > 0 && config.TENANT_EVENT_BURST_BYTES > 0
      ? new TokenBuckets(config.TENANT_EVENT_BURST_BYTES, config.TENANT_EVENT_BYTES_PER_HOUR / 3600)
      : undefined;
  return {
    take(principal, action) {
      const wait = buckets.get(action)?.take(tenantKey(principal), 1, clock.now().getTime()) ?? 0;
      if (wait > 0) throw rateLimited(wait, `Too many ${action === 'events' ? 'events' : `${action} requests`} for this tenant`);
    },
    takeEventBytes(principal, bytes) {
      if (!eventBytes) return () => {};
      const key = tenantKey(principal);
      const wait = eventBytes.take(key, bytes, clock.now().getTime());
      if (wait > 0) throw rateLimited(wait, 'This tenant\'s event storage budget (bytes of events per hour) is used up');
      let given = false;
      return () => {
        if (given) return;
        given = true;
        eventBytes.giveBack(key, bytes, clock.now().getTime());
      };
    },
  };
}

/**
 * The route's limit as an onRequest hook, after `authenticate`: one unit is taken before a byte of the
 * body is read, so a caller past its tenant's limit gets 429 at the cost of a token check, and its body
 * is neither read nor parsed (a limit taken in the handler came after parsing and validation).
 */
export function takeTenantLimit(limits: TenantRateLimits, action: TenantAction) {
  return async (request: FastifyRequest): Promise<void> => limits.take(principalOf(request), action);
}
