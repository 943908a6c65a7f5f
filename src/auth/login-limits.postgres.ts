import type { Database, Queryable } from '../db/database.js';
import type { AttemptKeys, LimitKey } from './login-limit-keys.js';
import {
  currentState,
  expiredBefore,
  isCoolingDown,
  reserveFailure,
  retryAfterSeconds,
  undoReservation,
  type Cooldowns,
  type CounterState,
} from './login-limit-rules.js';
import type { LimitDecision } from './login-limits.js';

/**
 * Login-limit counters in the login_throttle table, shared by every API process on one
 * PostgreSQL (external or the embedded server).
 */

interface Row {
  key: string;
  failures: number;
  window_started_at: Date;
  blocked_until: Date | null;
}

const toState = (row: Row): CounterState => ({
  failures: row.failures,
  windowStartedAt: row.window_started_at.getTime(),
  blockedUntil: row.blocked_until?.getTime() ?? null,
});

const byKey = (a: LimitKey, b: LimitKey) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

const PRUNE_EVERY_MS = 60_000;
const PRUNE_BATCH = 5000;

export class SqlLimitStore {
  private nextPruneAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly db: Database,
    private readonly cooldowns: Cooldowns,
  ) {}

  /**
   * Reserve first: under row locks taken in key order (so parallel callers serialise and never
   * deadlock), refuse when any counter cools down, else count the attempt as a failure on all three.
   */
  async attempt(keys: AttemptKeys, now: Date): Promise<LimitDecision> {
    const at = now.getTime();
    const rules = [keys.pair, keys.user, keys.ip].sort(byKey);
    // During an attack most attempts are refused: a plain read answers those without a write.
    const blocked = await this.blockedUntil(this.db, rules, now);
    if (blocked !== null) return { allowed: false, retryAfterSeconds: retryAfterSeconds(blocked, at) };

    const decision = await this.db.transaction(async (tx): Promise<LimitDecision> => {
      const locked = await tx.query<Row>(
        `INSERT INTO login_throttle AS t (key, failures, window_started_at)
         VALUES ($1, 0, $4), ($2, 0, $4), ($3, 0, $4)
         ON CONFLICT (key) DO UPDATE SET failures = t.failures
         RETURNING key, failures, window_started_at, blocked_until`,
        [...rules.map((rule) => rule.key), now],
      );
      const states = new Map(locked.rows.map((row) => [row.key, toState(row)]));
      const cooling = [...states.values()].filter((state) => isCoolingDown(state, at));
      if (cooling.length > 0) {
        const until = Math.max(...cooling.map((state) => state.blockedUntil ?? at));
        return { allowed: false, retryAfterSeconds: retryAfterSeconds(until, at) };
      }
      const next = rules.map((rule) => ({ rule, state: reserveFailure(currentState(states.get(rule.key), at), rule, this.cooldowns, at) }));
      await writeStates(tx, next);
      return { allowed: true };
    });
    await this.pruneNowAndThen(now);
    return decision;
  }

  /** Takes the reservation back on the user and IP counters and forgets the (user, IP) one. */
  async succeeded(keys: AttemptKeys, _now: Date): Promise<void> {
    await this.db.transaction(async (tx) => {
      // The same lock order as attempt() (byte order, as JavaScript sorts these ASCII keys): both
      // touch these rows, so neither may wait in a cycle.
      const locked = await tx.query<Row>(
        `SELECT key, failures, window_started_at, blocked_until FROM login_throttle
         WHERE key = ANY(ARRAY[$1, $2, $3]::text[]) ORDER BY key COLLATE "C" FOR UPDATE`,
        [keys.pair.key, keys.user.key, keys.ip.key],
      );
      const states = new Map(locked.rows.map((row) => [row.key, toState(row)]));
      if (states.has(keys.pair.key)) await tx.query(`DELETE FROM login_throttle WHERE key = $1`, [keys.pair.key]);
      const next = [keys.user, keys.ip].flatMap((rule) => {
        const state = states.get(rule.key);
        return state ? [{ rule, state: undoReservation(state, rule) }] : [];
      });
      if (next.length > 0) await writeStates(tx, next);
    });
  }

  private async blockedUntil(db: Queryable, rules: LimitKey[], now: Date): Promise<number | null> {
    const result = await db.query<{ until: Date | null }>(
      `SELECT max(blocked_until) AS until FROM login_throttle
       WHERE key = ANY(ARRAY[$1, $2, $3]::text[]) AND blocked_until > $4`,
      [...rules.map((rule) => rule.key), now],
    );
    return result.rows[0]?.until?.getTime() ?? null;
  }

  /** Expired rows go in small batches, at most once a minute per process (sooner while a backlog remains). */
  private async pruneNowAndThen(now: Date): Promise<void> {
    if (now.getTime() < this.nextPruneAt) return;
    this.nextPruneAt = now.getTime() + PRUNE_EVERY_MS;
    // Best effort: a failed prune must not fail the login; the next one catches up.
    const deleted = await pruneLoginThrottle(this.db, now, this.cooldowns, PRUNE_BATCH).catch(() => 0);
    if (deleted === PRUNE_BATCH) this.nextPruneAt = Number.NEGATIVE_INFINITY;
  }
}

async function writeStates(tx: Queryable, next: { rule: LimitKey; state: CounterState }[]): Promise<void> {
  const params: unknown[] = [];
  const values = next.map(({ rule, state }) => {
    params.push(rule.key, state.failures, new Date(state.windowStartedAt), state.blockedUntil === null ? null : new Date(state.blockedUntil));
    const n = params.length;
    return `($${n - 3}::text, $${n - 2}::integer, $${n - 1}::timestamptz, $${n}::timestamptz)`;
  });
  await tx.query(
    `UPDATE login_throttle AS t
     SET failures = v.failures, window_started_at = v.window_started_at, blocked_until = v.blocked_until
     FROM (VALUES ${values.join(', ')}) AS v (key, failures, window_started_at, blocked_until)
     WHERE t.key = v.key`,
    params,
  );
}

/**
 * Deletes up to `limit` counters whose window and cooldown are both over. The window condition
 * sits on the outer DELETE too, so a row that a concurrent attempt has just renewed is re-checked
 * after its lock and kept; rows locked by an attempt in progress are skipped, so pruning never
 * waits on (or deadlocks with) a login. Returns how many rows went.
 */
export async function pruneLoginThrottle(db: Queryable, now: Date, cooldowns: Cooldowns, limit = PRUNE_BATCH): Promise<number> {
  const cutoff = new Date(expiredBefore(now.getTime(), cooldowns));
  const result = await db.query(
    `DELETE FROM login_throttle
     WHERE window_started_at < $1
       AND key IN (
         SELECT key FROM login_throttle WHERE window_started_at < $1
         LIMIT $2 FOR UPDATE SKIP LOCKED)`,
    [cutoff, limit],
  );
  return result.rowCount;
}
