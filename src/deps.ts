import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from './clock.js';
import type { Config } from './config.js';
import type { Database } from './db/database.js';
import type { Keys } from './keys.js';
import type { Metrics } from './metrics.js';
import type { TenantRateLimits } from './http/tenant-rate-limit.js';

// The dependencies live in their own module so that features import them without importing the
// app that registers those features (which would be an import circle through the whole app).

/** Everything the HTTP API needs from the outside; tests pass their own database and clock. */
export interface AppDeps {
  config: Config;
  db: Database;
  keys: Keys;
  clock?: Clock;
  /** Prometheus metrics; `serve --role all` shares them with the worker. A fresh set by default. */
  metrics?: Metrics;
  /** Per-tenant rate limits (intake, retry, replay, test); one set per app by default. */
  tenantRateLimits?: TenantRateLimits;
  /** A pino logger, or false for none (tests). Defaults to JSON logs at LOG_LEVEL. */
  logger?: FastifyBaseLogger | false;
}

/** What route plugins and services receive: the deps with the clock resolved. */
export type FeatureDeps = Required<Omit<AppDeps, 'logger'>>;
