import type { Config } from '../config.js';
import type { Database } from './database.js';
import { openPGlite } from './pglite.js';
import { openPostgres } from './postgres.js';

/** PostgreSQL when DATABASE_URL is set, the embedded PGlite database in DATA_DIR otherwise. */
export function openDatabase(config: Config, onError?: (error: Error) => void): Promise<Database> {
  if (!config.DATABASE_URL) return openPGlite(config.DATA_DIR, config.EMBEDDED_VACUUM_INTERVAL_SECONDS);
  return Promise.resolve(
    openPostgres({
      connectionString: config.DATABASE_URL,
      poolSize: config.DATABASE_POOL_SIZE,
      connectTimeoutMs: config.DATABASE_CONNECT_TIMEOUT_MS,
      statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
      ...(onError ? { onError } : {}),
    }),
  );
}
