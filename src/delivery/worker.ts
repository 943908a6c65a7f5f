import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import type { Keys } from '../keys.js';

export interface WorkerDeps {
  config: Config;
  db: Database;
  keys: Keys;
  clock: Clock;
  logger: FastifyBaseLogger;
}

export interface DeliveryWorker {
  /** Finishes in-flight sends (bounded by SHUTDOWN_TIMEOUT_MS) and releases the remaining claims. */
  stop(): Promise<void>;
}

// PLACEHOLDER: replaced by the delivery implementation.
export async function startDeliveryWorker(_deps: WorkerDeps): Promise<DeliveryWorker> {
  return { stop: async () => {} };
}
