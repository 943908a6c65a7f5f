import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import type { Database } from '../db/database.js';
import { migrate } from '../db/migrate.js';
import { wrapPGlite } from '../db/pglite.js';
import { openPostgres } from '../db/postgres.js';

/**
 * A fresh, migrated database for one test file: PGlite in memory by default, a new database on
 * the real PostgreSQL when DATABASE_URL is set. scripts/run-tests.mjs prepares a migrated
 * template once per run (a PGlite dump, or a template database) so each copy is cheap.
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  const url = process.env.DATABASE_URL;
  return url ? createPostgresCopy(url) : createPGliteCopy();
}

export interface TestDatabase extends Database {
  /** The connection string of this copy (PostgreSQL only), for child processes. */
  readonly url?: string;
}

async function createPGliteCopy(): Promise<TestDatabase> {
  const dump = process.env.PLAZA_TEST_PGLITE_DUMP;
  const pglite = dump
    ? await PGlite.create({ loadDataDir: new Blob([readFileSync(dump)]) })
    : await PGlite.create();
  const db = wrapPGlite(pglite);
  if (!dump) await migrate(db);
  return db;
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
