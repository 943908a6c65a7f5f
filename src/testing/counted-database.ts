import type { Database } from '../db/database.js';

/**
 * A database that counts its calls: those in progress (running, or queued for one of the pool's
 * connections), the most at once, and the transactions begun. LISTEN passes through uncounted.
 */
export function countedDatabase(db: Database) {
  const counts = { inUse: 0, most: 0, transactions: 0 };
  const counted = async <T>(work: () => Promise<T>) => {
    counts.most = Math.max(counts.most, ++counts.inUse);
    try {
      return await work();
    } finally {
      counts.inUse--;
    }
  };
  const wrapped: Database = {
    query: (sql, params, options) => counted(() => db.query(sql, params, options)),
    exec: (sql) => counted(() => db.exec(sql)),
    transaction: (work) => {
      counts.transactions++;
      return counted(() => db.transaction(work));
    },
    listen: (channel, handler) => db.listen(channel, handler),
    close: async () => {},
  };
  return { db: wrapped, counts };
}
