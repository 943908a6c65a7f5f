import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../paths.js';
import type { Database, Queryable } from './database.js';

export const migrationsDir = join(projectRoot, 'migrations');

export interface Migration {
  version: number;
  name: string;
  sql: string;
  /** sha256 (hex) of the file's bytes, recorded when it is applied and compared at every start. */
  checksum: string;
}

export const migrationChecksum = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

export function readMigrations(dir = migrationsDir): Migration[] {
  return readdirSync(dir)
    .filter((file) => /^\d{3}_[a-z0-9_]+\.sql$/.test(file))
    .sort()
    .map((file) => {
      const bytes = readFileSync(join(dir, file));
      return { version: Number(file.slice(0, 3)), name: file.replace(/\.sql$/, ''), sql: bytes.toString('utf8'), checksum: migrationChecksum(bytes) };
    });
}

/**
 * An applied migration that is not the file of the same number any more: the schema this database
 * has is not the one the files describe, and applying later migrations on it could break it further.
 * Start and `plaza migrate` stop with this one line (exit 2; startup-errors.ts).
 */
export class MigrationMismatchError extends Error {}

/**
 * The first migration, the baseline that folded the migrations before the first release into one
 * file (issue 35). A database that applied those files has rows but none of this name.
 */
export const BASELINE = '001_baseline';

/** The one-off step that marks the baseline as applied on such a database (docs/operations.md, Upgrades). */
export const ADOPT_BASELINE_FILE = 'migrations/adopt-baseline.sql';

/**
 * Applies the forward-only migrations not yet recorded, each in its own transaction, after checking
 * that every applied one is still its file (same name, same checksum).
 * An advisory lock lets several processes start against one PostgreSQL at once.
 * Returns the names of the migrations it applied.
 */
export async function migrate(db: Database, migrations = readMigrations()): Promise<string[]> {
  await db.transaction(async (tx) => {
    await lockMigrations(tx);
    await createMigrationsTable(tx);
    await checkApplied(tx, migrations);
  });
  const applied: string[] = [];
  for (const migration of migrations) {
    await db.transaction(async (tx) => {
      await lockMigrations(tx);
      const done = await tx.query(`SELECT 1 FROM schema_migrations WHERE version = $1`, [migration.version]);
      if (done.rowCount > 0) return;
      await applyMigration(tx, migration);
      applied.push(migration.name);
    });
  }
  return applied;
}

const lockMigrations = (tx: Queryable) => tx.query(`SELECT pg_advisory_xact_lock(hashtext('plaza:migrate'))`);

/**
 * The table of applied migrations, which this runner owns: created here, and given the checksum
 * column here when it predates it (nullable: the previous release inserts rows without one).
 */
export async function createMigrationsTable(db: Queryable): Promise<void> {
  await db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now(),
    checksum text
  )`);
  // Looked up first: ALTER TABLE takes an exclusive lock even when the column is there.
  const { rowCount } = await db.query(
    `SELECT 1 FROM pg_attribute WHERE attrelid = 'schema_migrations'::regclass AND attname = 'checksum' AND NOT attisdropped`,
  );
  if (rowCount === 0) await db.exec(`ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS checksum text`);
}

/**
 * Every applied migration that has a file must be that file: the same name (a number is never
 * reused) and the same bytes. A row without a checksum (applied before checksums were recorded, or
 * by the previous release) takes the file's as it is now, once. A row with no file of its number is
 * left alone: a newer release applied it, and this one runs beside it during a rolling upgrade.
 */
async function checkApplied(tx: Queryable, migrations: Migration[]): Promise<void> {
  const { rows } = await tx.query<{ version: number; name: string; checksum: string | null }>(
    `SELECT version, name, checksum FROM schema_migrations ORDER BY version`,
  );
  refusePreBaseline(rows, migrations);
  const byVersion = new Map(migrations.map((migration) => [migration.version, migration]));
  for (const row of rows) {
    const file = byVersion.get(row.version);
    if (!file) continue;
    if (file.name !== row.name) {
      throw new MigrationMismatchError(
        `migration number ${String(row.version).padStart(3, '0')} was applied to this database as ${row.name}.sql, but migrations/${file.name}.sql now has that number: ` +
          'the database never got this file; recreate a development database, or see docs/operations.md (Migrations)',
      );
    }
    if (row.checksum === null) {
      await tx.query(`UPDATE schema_migrations SET checksum = $2 WHERE version = $1 AND checksum IS NULL`, [row.version, file.checksum]);
    } else if (row.checksum !== file.checksum) {
      throw new MigrationMismatchError(
        `migrations/${file.name}.sql has changed since it was applied to this database (sha256 ${row.checksum.slice(0, 12)}… applied, ${file.checksum.slice(0, 12)}… now): ` +
          'put the applied file back and write the change as a new migration; see docs/operations.md (Migrations)',
      );
    }
  }
}

/**
 * A database migrated with the files the baseline replaced: its schema is the baseline's only if it
 * applied all of them, which the one-off step checks. Refused before the name check, which would
 * only say that number 001 has another name now.
 */
function refusePreBaseline(rows: { name: string }[], migrations: Migration[]): void {
  if (rows.length === 0 || migrations[0]?.name !== BASELINE || rows.some((row) => row.name === BASELINE)) return;
  throw new MigrationMismatchError(
    `this database was migrated with the migrations from before migrations/${BASELINE}.sql (the last it applied: ${rows[rows.length - 1]!.name}.sql), which the baseline replaced: ` +
      `recreate a development database, or run ${ADOPT_BASELINE_FILE} once with psql; see docs/operations.md (Upgrades)`,
  );
}

/** Runs one migration and records it, inside the caller's transaction (restore runs several in one). */
export async function applyMigration(tx: Queryable, migration: Migration, appliedAt?: string): Promise<void> {
  await tx.exec(migration.sql);
  await tx.query(
    `INSERT INTO schema_migrations (version, name, applied_at, checksum) VALUES ($1, $2, COALESCE($3::timestamptz, now()), $4)`,
    [migration.version, migration.name, appliedAt ?? null, migration.checksum],
  );
}
