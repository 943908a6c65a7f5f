import type { Database, Queryable } from '../db/database.js';
import { expiredBefore, type LimitRules } from './login-limit-rules.js';
import type { ApplyOptions, CounterState, CounterStore, Counters, Plan } from './login-limit-types.js';

/**
 * Login-limit counters in the login_throttle table, shared by every API process on one
 * PostgreSQL (external or the embedded server). Storage only: the rules come in as the `plan`
 * function (login-limit-rules.ts).
 */

interface Row {
  key: string;
  failures: number;
  window_started_at: Date;
  blocked_until: Date | null;
}

const countersOf = (rows: Row[]): Counters =>
  new Map(rows.map((row) => [row.key, { failures: row.failures, windowStartedAt: row.window_started_at.getTime(), blockedUntil: row.blocked_until?.getTime() ?? null }]));

const PRUNE_EVERY_MS = 60_000;
const PRUNE_BATCH = 5000;

export class SqlCounterStore implements CounterStore {
  private nextPruneAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly db: Database,
    private readonly rules: LimitRules,
  ) {}

  /**
   * A plain read first: during an attack most attempts are refused, and a refusal writes nothing.
   * Otherwise the plan is made again under row locks taken in key order (so parallel callers
   * serialise and never deadlock) and written in the same transaction.
   */
  async apply(keys: string[], now: Date, plan: (counters: Counters) => Plan, options: ApplyOptions = {}): Promise<Plan> {
    // A plan known to write skips the read: it would be made again under the locks anyway.
    if (!options.writes) {
      const read = await this.db.query<Row>(`SELECT key, failures, window_started_at, blocked_until FROM login_throttle WHERE key = ANY($1::text[])`, [keys]);
      const first = plan(countersOf(read.rows));
      if (first.writes.size === 0) return first;
    }

    const sorted = [...keys].sort();
    const result = await this.db.transaction(async (tx) => {
      // Inserting the missing rows is what locks them: two first attempts on a fresh key must
      // queue like any others. The VALUES order (byte order of the keys) is the lock order.
      const locked = await tx.query<Row>(
        `INSERT INTO login_throttle AS t (key, failures, window_started_at)
         SELECT k, 0, $2 FROM unnest($1::text[]) WITH ORDINALITY AS v (k, n) ORDER BY n
         ON CONFLICT (key) DO UPDATE SET failures = t.failures
         RETURNING key, failures, window_started_at, blocked_until`,
        [sorted, now],
      );
      const planned = plan(countersOf(locked.rows));
      await writeCounters(tx, planned.writes);
      return planned;
    });
    await this.pruneNowAndThen(now);
    return result;
  }

  /** Expired rows go in small batches, at most once a minute per process (sooner while a backlog remains). */
  private async pruneNowAndThen(now: Date): Promise<void> {
    if (now.getTime() < this.nextPruneAt) return;
    this.nextPruneAt = now.getTime() + PRUNE_EVERY_MS;
    // Best effort: a failed prune must not fail the login; the next one catches up.
    const deleted = await pruneLoginThrottle(this.db, now, this.rules, PRUNE_BATCH).catch(() => 0);
    if (deleted === PRUNE_BATCH) this.nextPruneAt = Number.NEGATIVE_INFINITY;
  }
}

/**
 * The planned writes in one statement: the deletions and one UPDATE … FROM (VALUES …) of the rest,
 * as a CTE of the update when there is one (they touch different keys, all locked by the caller).
 */
async function writeCounters(tx: Queryable, writes: Map<string, CounterState | null>): Promise<void> {
  const deleted = [...writes].filter(([, state]) => state === null).map(([key]) => key);
  const params: unknown[] = [deleted];
  const values: string[] = [];
  for (const [key, state] of writes) {
    if (state === null) continue;
    params.push(key, state.failures, new Date(state.windowStartedAt), state.blockedUntil === null ? null : new Date(state.blockedUntil));
    const n = params.length;
    values.push(`($${n - 3}::text, $${n - 2}::integer, $${n - 1}::timestamptz, $${n}::timestamptz)`);
  }
  const deletion = `DELETE FROM login_throttle WHERE key = ANY($1::text[])`;
  if (values.length === 0) {
    if (deleted.length > 0) await tx.query(deletion, params);
    return;
  }
  const update = `UPDATE login_throttle AS t
     SET failures = v.failures, window_started_at = v.window_started_at, blocked_until = v.blocked_until
     FROM (VALUES ${values.join(', ')}) AS v (key, failures, window_started_at, blocked_until)
     WHERE t.key = v.key`;
  // The deletion is there even with no key to delete: $1 must be used.
  await tx.query(`WITH deleted AS (${deletion}) ${update}`, params);
}

/**
 * Deletes up to `limit` counters whose window and cooldown are both over. The window condition
 * sits on the outer DELETE too, so a row that a concurrent attempt has just renewed is re-checked
 * after its lock and kept; rows locked by an attempt in progress are skipped, so pruning never
 * waits on (or deadlocks with) a login. Returns how many rows went.
 */
export async function pruneLoginThrottle(db: Queryable, now: Date, rules: LimitRules, limit = PRUNE_BATCH): Promise<number> {
  const cutoff = new Date(expiredBefore(now.getTime(), rules));
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
