/**
 * The one interface every repository talks to, implemented over `pg` for PostgreSQL: an external
 * server (DATABASE_URL) or the embedded server Plaza runs itself (src/db/embedded/).
 */
export interface QueryResult<Row> {
  rows: Row[];
  rowCount: number;
}

export interface QueryOptions {
  /**
   * Prepare the statement once per connection and reuse it: for the statements of the hot paths
   * whose planning cost as much as their execution — the delivery claim and the completion
   * (bench/results/history.md, "Delivery claim", "The claim prepared", "The take prepared"), the webhook list, login and refresh
   * (bench/results/api-paths.md), the event intake (docs/events.md). Such a statement names its columns, never
   * `*` of a table: PostgreSQL refuses to run a prepared statement whose result columns changed
   * ("cached plan must not change result type"), as they would once a migration adds a column
   * while the process runs.
   */
  prepare?: boolean;
}

export interface Queryable {
  query<Row = Record<string, unknown>>(sql: string, params?: readonly unknown[], options?: QueryOptions): Promise<QueryResult<Row>>;
  /** Runs several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

export interface Database extends Queryable {
  /** Runs `work` in one transaction: commits when it resolves, rolls back when it throws. */
  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T>;
  /** LISTEN on a channel; resolves to a function that stops listening. */
  listen(channel: string, onNotification: (payload: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

/** The database cannot be reached (down, restarting, pool exhausted): the API answers 503. */
export class DatabaseUnavailableError extends Error {
  constructor(
    cause: unknown,
    /** What is unreachable, as the 503 names it: the database, or the Redis of the login limits. */
    readonly store = 'database',
  ) {
    super(`${store} unavailable`, { cause });
  }
}

const UNAVAILABLE_CODES = new Set([
  // ENOENT: the embedded server's Unix socket is gone while the server restarts.
  'ECONNREFUSED', 'ENOENT', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', 'EAI_AGAIN',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '53300', // too_many_connections
  '08000', '08001', '08003', '08004', '08006', // connection_exception family
]);

/**
 * A deadlock (40P01) or serialization failure (40001): the transaction lost a race and was rolled
 * back, and running it again normally succeeds. Every writer takes webhook rows before their
 * deliveries, so these should not happen; if one does, the API answers 503 with Retry-After rather
 * than 500, and the worker retries its batch.
 */
export function isTransientConflict(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return code === '40P01' || code === '40001';
}

/**
 * Runs `work` (a whole transaction) again when it lost such a race, up to `attempts` times in all;
 * the last loss is thrown. For work whose transaction does nothing outside the database.
 */
export async function retryTransientConflicts<T>(work: () => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (!isTransientConflict(error) || attempt >= attempts) throw error;
    }
  }
}

/**
 * The statement ran past DATABASE_STATEMENT_TIMEOUT_MS (57014), typically waiting for a lock that a
 * migration or a long maintenance statement holds: transient, the API answers 503 with Retry-After.
 */
export function isStatementTimeout(error: unknown): boolean {
  return (error as { code?: unknown } | undefined)?.code === '57014';
}

/** Whether an error from the driver means "the database is not there right now". */
export function isUnavailable(error: unknown): boolean {
  if (error instanceof DatabaseUnavailableError) return true;
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && UNAVAILABLE_CODES.has(code)) return true;
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection closed|Query read timeout/i.test(error.message);
}

/** Foreign-key violation (23503) of the named constraint: a row the statement refers to is gone. */
export function isForeignKeyViolation(error: unknown, constraint: string): boolean {
  const e = error as { code?: unknown; constraint?: unknown };
  return e?.code === '23503' && e.constraint === constraint;
}

/** Unique violation (23505) of the named constraint, for turning a race into a 409. */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const e = error as { code?: unknown; constraint?: unknown; message?: unknown };
  if (e?.code !== '23505') return false;
  if (constraint === undefined) return true;
  return e.constraint === constraint || (typeof e.message === 'string' && e.message.includes(constraint));
}
