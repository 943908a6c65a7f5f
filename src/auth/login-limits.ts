import type { Config } from '../config.js';
import type { Database } from '../db/database.js';

// CONTRACT (implemented by the login-limits work): see the doc comments.
export type LimitDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number };

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

export function createLoginLimiter(_deps: { config: Config; db: Database }): LoginLimiter {
  return { attempt: async () => ({ allowed: true }), succeeded: async () => {}, close: async () => {} };
}
