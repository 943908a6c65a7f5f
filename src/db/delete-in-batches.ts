import type { Queryable } from './database.js';

/** Rows one pruning statement removes at most, so that a large backlog never holds long locks. */
export const PRUNE_BATCH = 1000;

/** Repeats a `DELETE … LIMIT ${PRUNE_BATCH}` statement taking the cutoff as $1 (and more cutoffs as $2, …) until it removes less than a batch. */
export async function deleteInBatches(db: Queryable, sql: string, cutoff: Date, ...more: Date[]): Promise<number> {
  let total = 0;
  for (;;) {
    const { rowCount } = await db.query(sql, [cutoff, ...more]);
    total += rowCount;
    if (rowCount < PRUNE_BATCH) return total;
  }
}
