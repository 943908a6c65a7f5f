import { PGlite } from '@electric-sql/pglite';
import { join } from 'node:path';
import type { Database, Queryable, QueryResult } from './database.js';
import { lockDataDir, type DataDirLock } from './data-dir-lock.js';

type PGliteLike = Pick<PGlite, 'query' | 'exec'>;

function queryable(db: PGliteLike): Queryable {
  return {
    async query<Row>(sql: string, params: readonly unknown[] = []): Promise<QueryResult<Row>> {
      const result = await db.query<Row>(sql, params as unknown[]);
      return { rows: result.rows, rowCount: result.affectedRows || result.rows.length };
    },
    async exec(sql: string): Promise<void> {
      await db.exec(sql);
    },
  };
}

export function wrapPGlite(pglite: PGlite, onClose: () => void = () => {}): Database {
  return {
    engine: 'pglite',
    ...queryable(pglite),
    transaction: (work) => pglite.transaction((tx) => work(queryable(tx))),
    listen: async (channel, onNotification) => {
      const stop = await pglite.listen(channel, onNotification);
      return () => stop();
    },
    async close() {
      try {
        if (!pglite.closed) await pglite.close();
      } finally {
        onClose();
      }
    },
  };
}

/**
 * Opens the embedded database in `dataDir/pgdata`, holding the data directory's lock for as
 * long as it is open. fsync is off in PGlite: a process crash loses nothing committed, a power
 * loss may (docs/operations.md).
 */
export async function openPGlite(dataDir: string): Promise<Database> {
  const lock: DataDirLock = lockDataDir(dataDir);
  try {
    const pglite = await PGlite.create({ dataDir: join(dataDir, 'pgdata') });
    return wrapPGlite(pglite, () => lock.release());
  } catch (error) {
    lock.release();
    throw error;
  }
}
