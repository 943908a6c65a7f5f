/**
 * The shapes shared by the login limiter (login-limits.ts), its rules (login-limit-rules.ts) and its
 * two stores (login-limits.postgres.ts, login-limits.redis.ts). They live here, apart from all of
 * them, so that the factory imports the stores and no store imports the factory.
 */

export type LimitDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/** One counter as stored, times in epoch milliseconds. */
export interface CounterState {
  failures: number;
  /** Start of the window (for the sliding (user, IP) counter: the time of its last failure). */
  windowStartedAt: number;
  /** Until when the counter refuses attempts; null when it is not cooling down. */
  blockedUntil: number | null;
}

/** The counters of one attempt by key, as read (an absent key has never failed, or expired). */
export type Counters = ReadonlyMap<string, CounterState>;

/**
 * What the rules decided from a set of counters: the answer, and the counters to write (null:
 * delete the key). A plan without writes (a refusal) needs no write at all.
 */
export interface Plan {
  decision: LimitDecision;
  writes: Map<string, CounterState | null>;
}

/**
 * Storage for the counters: no rules in here. `apply` reads the keys, asks `plan` what to do and
 * writes the result atomically: when another caller changed one of the keys in between, the plan
 * is made again from the new values (row locks in SQL, compare-and-set in Redis).
 */
export interface ApplyOptions {
  /**
   * The plan is known to write (a success takes back the reservation its attempt made): a store
   * that reads before it locks, to write nothing for refusals, may go straight to the locked write.
   */
  writes?: true;
}

export interface CounterStore {
  apply(keys: string[], now: Date, plan: (counters: Counters) => Plan, options?: ApplyOptions): Promise<Plan>;
  close?(): Promise<void>;
}
