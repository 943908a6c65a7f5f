import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { attemptKeys } from './login-limit-keys.js';
import { limitRulesOf, planAttempt, planSuccess } from './login-limit-rules.js';
import type { CounterStore, LimitDecision } from './login-limit-types.js';
import { SqlCounterStore } from './login-limits.postgres.js';
import type { RedisCounterStore } from './login-limits.redis.js';

/**
 * Progressive login limits on three counters per attempt: (account, IP), the account over all IPs,
 * the IP over all accounts (IPv6 per /64). Rules: login-limit-rules.ts; keys: login-limit-keys.ts.
 * `account` is what the user lookup matched (login-account.ts), never the typed name.
 */
export interface LoginLimiter {
  /**
   * Called before a password is verified. Atomically checks the limits for (account, ip) and,
   * when allowed, reserves the attempt as a failure; a cooled-down key answers not allowed
   * with the seconds until it may try again (no reservation made).
   */
  attempt(account: string, ip: string, now: Date): Promise<LimitDecision>;
  /** After a correct password: undoes the reservation, any cooldown, and the (account, ip) counter. */
  succeeded(account: string, ip: string, now: Date): Promise<void>;
  close(): Promise<void>;
}

/**
 * Redis when REDIS_URL is set (keys under REDIS_KEY_PREFIX), else the login_throttle table of the
 * service's database (which every process on one PostgreSQL shares).
 */
export function createLoginLimiter(deps: { config: Config; db: Database; counterKey: Buffer }): LoginLimiter {
  const { config } = deps;
  const rules = limitRulesOf(config);
  const store: CounterStore = config.REDIS_URL ? redisStore(config.REDIS_URL, `${config.REDIS_KEY_PREFIX}login:`) : new SqlCounterStore(deps.db, rules);
  const keysOf = (account: string, ip: string) => {
    const keys = attemptKeys(account, ip, deps.counterKey);
    return { keys, list: [keys.pair, keys.user, keys.ip] };
  };
  return {
    async attempt(account, ip, now) {
      const { keys, list } = keysOf(account, ip);
      return (await store.apply(list, now, (counters) => planAttempt(keys, counters, rules, now.getTime()))).decision;
    },
    async succeeded(account, ip, now) {
      const { keys, list } = keysOf(account, ip);
      // planSuccess always forgets the (account, address) counter that the attempt reserved.
      await store.apply(list, now, (counters) => planSuccess(keys, counters, now.getTime()), { writes: true });
    },
    close: async () => store.close?.(),
  };
}

/**
 * The Redis store, loaded on first use: the redis client is among the largest modules Plaza has
 * (≈0.15 s to load), and most installations have no REDIS_URL; not loading it at all for them keeps
 * it out of every start (bench/results/history.md, "Start-up times").
 */
function redisStore(url: string, prefix: string): CounterStore {
  let store: Promise<RedisCounterStore> | undefined;
  const load = () => (store ??= import('./login-limits.redis.js').then(({ RedisCounterStore }) => new RedisCounterStore(url, prefix)));
  return {
    apply: async (keys, now, plan) => (await load()).apply(keys, now, plan),
    close: async () => (store ? (await store).close() : undefined),
  };
}
