import pino from 'pino';
import type { Config } from '../config.js';
import { createLogger } from '../logging.js';
import type { Database } from './database.js';
import { findRunningEmbeddedServer } from './embedded/client.js';
import type { EmbeddedLogger } from './embedded/cluster.js';
import { ensurePrivateDirectory } from './embedded/permissions.js';
import { connectionString, EmbeddedServer, EmbeddedServerBusyError, refuseLegacyLayout } from './embedded/server.js';
import { openPostgres } from './postgres.js';

export interface OpenOptions {
  onError?: (error: Error) => void;
  logger?: EmbeddedLogger;
  /**
   * `plaza serve` (role all) owns the embedded server: it refuses to start when another process
   * runs it. Everything else (the CLI, --role api|worker) connects to a running one.
   */
  exclusive?: boolean;
  /** The embedded server died and could not be restarted. */
  onFatal?: (error: Error) => void;
}

/**
 * DATABASE_URL when set. Otherwise the embedded PostgreSQL server of DATA_DIR: the one a running
 * Plaza process owns (found through its state file), or one started here for as long as the
 * returned Database is open (close() stops it).
 */
export async function openDatabase(config: Config, options: OpenOptions = {}): Promise<OpenedDatabase> {
  const target = await resolveDatabase(config, options);
  const pool = (poolSize: number) =>
    openPostgres({
      connectionString: target.url,
      poolSize,
      connectTimeoutMs: config.DATABASE_CONNECT_TIMEOUT_MS,
      statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
      ...(options.onError ? { onError: options.onError } : {}),
    });
  const db = pool(config.DATABASE_POOL_SIZE);
  return {
    ...db,
    async close() {
      await db.close();
      await target.release();
    },
    anotherPool(poolSize) {
      const other = pool(poolSize);
      return { ...other, listen: (channel, onNotification) => db.listen(channel, onNotification) };
    },
  };
}

export interface OpenedDatabase extends Database {
  /**
   * Another pool of `poolSize` connections on the same database (the same server, embedded or
   * not), for work that must not queue behind this pool's; it listens through this one's LISTEN
   * connection. Close it before this one.
   */
  anotherPool(poolSize: number): Database;
}

/**
 * The connection string of the database openDatabase would use, starting the embedded server
 * when needed; release() stops a server started here. For tools that need their own
 * connection (backup and restore stream COPY over one pg client).
 */
export async function resolveDatabase(config: Config, options: OpenOptions = {}): Promise<{ url: string; release(): Promise<void> }> {
  const nothingToRelease = async () => {};
  if (config.DATABASE_URL) return { url: config.DATABASE_URL, release: nothingToRelease };

  ensurePrivateDirectory(config.DATA_DIR);
  refuseLegacyLayout(config.DATA_DIR);
  // The process logger's form (ISO times, redaction), on standard error: a command's output stays its own.
  const logger = options.logger ?? createLogger(config, { stream: pino.destination(2), isTTY: Boolean(process.stderr.isTTY) });
  for (;;) {
    const running = await findRunningEmbeddedServer(config.DATA_DIR);
    if (running) {
      if (options.exclusive) throw new EmbeddedServerBusyError(config.DATA_DIR, running.owner);
      return { url: connectionString(running.connection), release: nothingToRelease };
    }
    try {
      const server = await EmbeddedServer.start(config.DATA_DIR, logger, options.onFatal ? { onFatal: options.onFatal } : {});
      return { url: connectionString(server.connection), release: () => server.stop() };
    } catch (error) {
      // Another process became the owner between our look and our claim: use its server.
      if (!(error instanceof EmbeddedServerBusyError) || options.exclusive) throw error;
    }
  }
}
