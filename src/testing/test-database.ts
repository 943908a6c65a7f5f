import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Database } from '../db/database.js';
import { migrate } from '../db/migrate.js';
import { openPostgres } from '../db/postgres.js';

/**
 * A fresh, migrated database for one test file on DATABASE_URL's server: the machine's
 * PostgreSQL, or the embedded server that scripts/run-tests.mjs starts for the run when
 * DATABASE_URL is unset. The runner prepares a migrated template once per run, so each copy
 * is a cheap CREATE DATABASE … TEMPLATE.
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('No DATABASE_URL: run the tests with `npm test`, which starts an embedded PostgreSQL server for them.');
  return createPostgresCopy(url);
}

export interface TestDatabase extends Database {
  /** The connection string of this copy, for child processes. */
  readonly url: string;
}

async function createPostgresCopy(url: string): Promise<TestDatabase> {
  const name = `plaza_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  const template = process.env.PLAZA_TEST_TEMPLATE_DB;
  await withAdminClient(url, (admin) => admin.query(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}`));
  const copyUrl = withDatabase(url, name);
  const db = openPostgres({ connectionString: copyUrl, poolSize: 10, connectTimeoutMs: 3000, statementTimeoutMs: 30_000 });
  if (!template) await migrate(db);
  return {
    ...db,
    url: copyUrl,
    async close() {
      await db.close();
      await withAdminClient(url, (admin) => admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).catch(() => {});
    },
  };
}

export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

export async function withAdminClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}
