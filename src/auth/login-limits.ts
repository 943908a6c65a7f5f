import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { attemptKeys, type AttemptKeys } from './login-limit-keys.js';
import { cooldownsOf } from './login-limit-rules.js';
import { SqlLimitStore } from './login-limits.postgres.js';
import { RedisLimitStore } from './login-limits.redis.js';

export type LimitDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/**
 * Progressive login limits on three counters per attempt: (username, IP), username over all IPs,
 * IP over all usernames (IPv6 per /64). Rules: login-limit-rules.ts; keys: login-limit-keys.ts.
 */
export interface LoginLimiter {
  /**
   * Called before a password is verified. Atomically checks every limit for (username, ip) and,
   * when allowed, reserves the attempt as a failure; a cooled-down key answers not allowed
   * with the seconds until it may try again (no reservation made).
   */
  attempt(username: string, ip: string, now: Date): Promise<LimitDecision>;
  /** After a correct password: undoes the reservation and resets the (username, ip) counter. */
  succeeded(username: string, ip: string, now: Date): Promise<void>;
  close(): Promise<void>;
}

interface LimitStore {
  attempt(keys: AttemptKeys, now: Date): Promise<LimitDecision>;
  succeeded(keys: AttemptKeys, now: Date): Promise<void>;
  close?(): Promise<void>;
}

/**
 * Redis when REDIS_URL is set, else the login_throttle table of the service's database (which
 * every process on one PostgreSQL shares; the embedded database is one process anyway).
 * `redisKeyPrefix` keeps test runs on a shared Redis apart.
 */
export function createLoginLimiter(deps: { config: Config; db: Database; redisKeyPrefix?: string }): LoginLimiter {
  const { config } = deps;
  const cooldowns = cooldownsOf(config);
  const store: LimitStore = config.REDIS_URL
    ? new RedisLimitStore(config.REDIS_URL, cooldowns, deps.redisKeyPrefix)
    : new SqlLimitStore(deps.db, cooldowns);
  return {
    attempt: (username, ip, now) => store.attempt(attemptKeys(config, username, ip), now),
    succeeded: (username, ip, now) => store.succeeded(attemptKeys(config, username, ip), now),
    close: async () => store.close?.(),
  };
}
