import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../paths.js';
import type { Database, Queryable } from './database.js';

export const migrationsDir = join(projectRoot, 'migrations');

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export function readMigrations(dir = migrationsDir): Migration[] {
  return readdirSync(dir)
    .filter((file) => /^\d{3}_[a-z0-9_]+\.sql$/.test(file))
    .sort()
    .map((file) => ({ version: Number(file.slice(0, 3)), name: file.replace(/\.sql$/, ''), sql: readFileSync(join(dir, file), 'utf8') }));
}

/**
 * Applies the forward-only migrations not yet recorded, each in its own transaction.
 * An advisory lock lets several processes start against one PostgreSQL at once.
 * Returns the names of the migrations it applied.
 */
export async function migrate(db: Database, migrations = readMigrations()): Promise<string[]> {
  await createMigrationsTable(db);
  const applied: string[] = [];
  for (const migration of migrations) {
    await db.transaction(async (tx) => {
      await tx.query(`SELECT pg_advisory_xact_lock(hashtext('plaza:migrate'))`);
      const done = await tx.query(`SELECT 1 FROM schema_migrations WHERE version = $1`, [migration.version]);
      if (done.rowCount > 0) return;
      await applyMigration(tx, migration);
      applied.push(migration.name);
    });
  }
  return applied;
}

export async function createMigrationsTable(db: Queryable): Promise<void> {
  await db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
  )`);
}

/** Runs one migration and records it, inside the caller's transaction (restore runs several in one). */
export async function applyMigration(tx: Queryable, migration: Migration, appliedAt?: string): Promise<void> {
  await tx.exec(migration.sql);
  await tx.query(`INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, COALESCE($3::timestamptz, now()))`, [migration.version, migration.name, appliedAt ?? null]);
}
