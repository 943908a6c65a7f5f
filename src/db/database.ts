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
   * Prepare the statement once per connection and reuse it: for the delivery engine's few hot
   * statements, whose planning cost as much as their execution (docs/performance.md).
   */
  prepare?: boolean;
  /**
   * Inside a transaction: this is its last statement, and COMMIT goes with it in the same round
   * trip. Then the transaction is over: a further statement is refused, and should the work throw
   * after it, what it did stays committed.
   */
  commit?: boolean;
}

/**
 * A statement with its parameters, for a round trip that carries several statements (a transaction's
 * prelude, a last statement with COMMIT). That is a simple query, which has no parameters: they are
 * written into the text (inline-parameters.ts says which values can be). `prepare`: as in
 * QueryOptions, by PREPARE (once per connection) and EXECUTE with the values written in.
 */
export interface Statement {
  sql: string;
  params?: readonly unknown[];
  prepare?: boolean;
}

export interface Queryable {
  query<Row = Record<string, unknown>>(sql: string, params?: readonly unknown[], options?: QueryOptions): Promise<QueryResult<Row>>;
  /** Runs several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

export interface TransactionOptions {
  /**
   * Statements that run right after BEGIN, in the same round trip: the locks a hot transaction
   * takes first, and what it reads once it holds them. `work` is given the rows of the last one.
   */
  prelude?: readonly (string | Statement)[];
  /**
   * SET LOCAL for this transaction, sent with BEGIN too. `synchronous_commit: 'off'` makes COMMIT
   * return before its WAL reaches the disk, so a crash of the database server may undo it (never
   * partly): only for changes that a crash may undo without losing anything, the delivery engine's
   * leases and attempt records (docs/delivery.md).
   */
  settings?: Record<string, string>;
  /**
   * COMMIT goes with the prelude: the whole transaction is one round trip, and `work` only reads the
   * rows (a statement it sends is refused).
   */
  commit?: boolean;
}

export interface Database extends Queryable {
  /**
   * Runs `work` in one transaction; commits when it resolves (unless its last statement did, see
   * QueryOptions.commit), rolls back when it throws. `work` gets the rows of the prelude's last
   * statement (none without a prelude).
   */
  transaction<T>(work: (tx: Queryable, prelude: Record<string, unknown>[]) => Promise<T>, options?: TransactionOptions): Promise<T>;
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
