import { createHash } from 'node:crypto';
import pg from 'pg';
import type { Database, Queryable, QueryOptions, QueryResult } from './database.js';
import { DatabaseUnavailableError, isUnavailable } from './database.js';

// int8 (counts, bigserial ids) as numbers: our ids stay below 2^53.
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === 20 ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

export interface PostgresOptions {
  connectionString: string;
  poolSize: number;
  connectTimeoutMs: number;
  statementTimeoutMs: number;
  onError?: (error: Error) => void;
}

/** Translates "the server is not there" into DatabaseUnavailableError so the API can say 503. */
async function guard<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    throw isUnavailable(error) ? new DatabaseUnavailableError(error) : error;
  }
}

/** A prepared statement's name: from its text, so that one name never stands for two statements. */
const statementNames = new Map<string, string>();
function statementName(sql: string): string {
  let name = statementNames.get(sql);
  if (name === undefined) statementNames.set(sql, (name = `plaza_${createHash('sha256').update(sql).digest('hex').slice(0, 24)}`));
  return name;
}

export function queryable(client: pg.Pool | pg.ClientBase): Queryable {
  return {
    query: <Row>(sql: string, params: readonly unknown[] = [], options: QueryOptions = {}) =>
      guard(async (): Promise<QueryResult<Row>> => {
        const values = params as unknown[];
        const result = await client.query(options.prepare ? { name: statementName(sql), text: sql, values } : { text: sql, values });
        return { rows: result.rows as Row[], rowCount: result.rowCount ?? result.rows.length };
      }),
    exec: (sql: string) => guard(async () => void (await client.query(sql))),
  };
}

/**
 * A transaction's statements on its client, `BEGIN` sent with the first of them: with an `exec`
 * (the simple protocol, which carries several statements in one message) as one round trip, `BEGIN;
 * …`; before a parameterized query (the extended protocol, one statement per message) on its own.
 * Transactions that open with settings (`SET LOCAL …`, the delivery claim and its records) so save
 * a round trip; a transaction that sent nothing has nothing to commit or roll back.
 */
function beginWithFirstStatement(client: pg.ClientBase): { tx: Queryable; begun: () => boolean } {
  const statements = queryable(client);
  // Settles once BEGIN has run; every statement waits for it, so they reach the client in call order.
  let beginning: Promise<void> | undefined;
  const tx: Queryable = {
    query: async <Row>(sql: string, params?: readonly unknown[], options?: QueryOptions) => {
      await (beginning ??= guard(async () => void (await client.query('BEGIN'))));
      return statements.query<Row>(sql, params, options);
    },
    exec: (sql) => {
      if (beginning) return beginning.then(() => statements.exec(sql));
      beginning = statements.exec(`BEGIN; ${sql}`);
      return beginning;
    },
  };
  return { tx, begun: () => beginning !== undefined };
}

export function openPostgres(options: PostgresOptions): Database {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.poolSize,
    connectionTimeoutMillis: options.connectTimeoutMs,
    statement_timeout: options.statementTimeoutMs,
    // The server ends a statement at statement_timeout; a server that stops answering altogether
    // (stopped, partitioned away) would leave the query, and the request behind it, waiting for
    // ever. Past statement_timeout plus the time a connection may take, the driver gives up (an
    // unavailable database: 503) and the connection is dropped. TCP keepalive finds a peer that is
    // gone for connections that wait idle (the LISTEN connection has it too).
    query_timeout: options.statementTimeoutMs + options.connectTimeoutMs,
    keepAlive: true,
    // Plaza's statements are short: JIT compilation never pays off for them, yet the planner's
    // estimate for the delivery claim crossed jit_above_cost, and compiling cost 20-45 ms per claim
    // whose execution takes 6 ms (bench/results/history.md, JIT). Sent with the connection, like the timeout.
    // DateStyle ISO: a timestamp printed as text (the driver parses every one, and the claim hands its
    // time to the worker as text) must read back as the same instant, which only the ISO style's
    // numeric offsets do whatever the server's settings (date-style.test.ts).
    options: '-c jit=off -c DateStyle=ISO',
    idleTimeoutMillis: 30_000,
    types,
  });
  // An idle client whose server went away emits here; without a listener the process would exit.
  pool.on('error', (error) => options.onError?.(error));
  const listener = new NotificationListener(options);

  return {
    ...queryable(pool),
    async transaction(work) {
      const client = await guard(() => pool.connect());
      let broken: Error | undefined;
      // The pool listens for errors of idle clients only: a server shutdown between two statements
      // of this transaction would otherwise be an unhandled 'error' event, which ends the process.
      const onClientError = (error: Error) => {
        broken = error;
        options.onError?.(error);
      };
      client.on('error', onClientError);
      const { tx, begun } = beginWithFirstStatement(client);
      try {
        const result = await work(tx);
        if (begun()) await guard(() => client.query('COMMIT'));
        return result;
      } catch (error) {
        if (begun()) {
          await client.query('ROLLBACK').catch((rollbackError: Error) => {
            broken = rollbackError;
          });
        }
        throw error;
      } finally {
        client.removeListener('error', onClientError);
        client.release(broken);
      }
    },
    listen: (channel, onNotification) => listener.listen(channel, onNotification),
    async close() {
      await listener.close();
      await pool.end();
    },
  };
}

/**
 * One dedicated connection for LISTEN. When it drops (database restart) it reconnects and
 * listens again; in between, the delivery worker's slow poll keeps work moving.
 */
class NotificationListener {
  private client: pg.Client | undefined;
  private connecting: Promise<void> | undefined;
  private readonly handlers = new Map<string, Set<(payload: string) => void>>();
  private closed = false;
  private retryTimer: NodeJS.Timeout | undefined;

  constructor(private readonly options: PostgresOptions) {}

  async listen(channel: string, onNotification: (payload: string) => void): Promise<() => Promise<void>> {
    let set = this.handlers.get(channel);
    const isNew = !set;
    if (!set) this.handlers.set(channel, (set = new Set()));
    set.add(onNotification);
    await this.connect();
    if (isNew) await this.client?.query(`LISTEN ${quoteIdentifier(channel)}`).catch(() => this.reconnectSoon());
    return async () => {
      set.delete(onNotification);
      if (set.size === 0) {
        this.handlers.delete(channel);
        await this.client?.query(`UNLISTEN ${quoteIdentifier(channel)}`).catch(() => {});
      }
    };
  }

  private connect(): Promise<void> {
    if (this.client || this.closed) return Promise.resolve();
    this.connecting ??= (async () => {
      // keepAlive: a LISTEN connection only waits; without it a peer gone silent would never be noticed.
      const client = new pg.Client({ connectionString: this.options.connectionString, connectionTimeoutMillis: this.options.connectTimeoutMs, keepAlive: true });
      client.on('error', (error) => {
        this.options.onError?.(error);
        this.reconnectSoon();
      });
      client.on('end', () => this.reconnectSoon());
      client.on('notification', (message) => {
        for (const handler of this.handlers.get(message.channel) ?? []) handler(message.payload ?? '');
      });
      try {
        await client.connect();
        for (const channel of this.handlers.keys()) await client.query(`LISTEN ${quoteIdentifier(channel)}`);
        this.client = client;
      } catch (error) {
        this.options.onError?.(error as Error);
        client.end().catch(() => {});
        this.reconnectSoon();
      } finally {
        this.connecting = undefined;
      }
    })();
    return this.connecting;
  }

  private reconnectSoon(): void {
    const old = this.client;
    this.client = undefined;
    old?.removeAllListeners('end');
    old?.end().catch(() => {});
    if (this.closed || this.retryTimer || this.handlers.size === 0) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.connect();
    }, 1000);
    this.retryTimer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    const client = this.client;
    this.client = undefined;
    client?.removeAllListeners('end');
    await client?.end().catch(() => {});
  }
}

export function quoteIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
