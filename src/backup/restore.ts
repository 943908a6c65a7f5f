import { once } from 'node:events';
import { finished } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { Queryable } from '../db/database.js';
import { applyMigration, createMigrationsTable, readMigrations, type Migration } from '../db/migrate.js';
import { queryable, quoteIdentifier } from '../db/postgres.js';
import { BackupFileError, readBackup, type Manifest } from './format.js';

/** Loading the backup failed inside the transaction, which was rolled back. */
export class RestoreFailedError extends Error {}

/** Restore would break processes working on the database, or the file's schema is unknown here. */
export class RestoreRefusedError extends Error {}

/**
 * Checks the whole file (gzip integrity, manifest, every row count) and that this Plaza knows the
 * schema it was made with, without touching any database.
 */
export async function verifyBackup(file: string, migrations = readMigrations()): Promise<Manifest> {
  return readBackup(file, (manifest) => void migrationsOf(manifest, migrations));
}

/**
 * Replaces everything in the database at `url` with the backup: in ONE transaction it drops the
 * schema's objects, rebuilds the schema the backup was made with (its migrations), loads the rows
 * with COPY, moves every identity sequence past the loaded ids and applies the migrations that are
 * newer than the backup. Anything wrong (a damaged file, a failing migration) rolls it all back.
 */
export async function restoreBackup(url: string, file: string, migrations = readMigrations()): Promise<{ manifest: Manifest; upgradedWith: string[] }> {
  // Read once completely before changing anything: a damaged file is refused with the database untouched.
  await verifyBackup(file, migrations);
  const client = new pg.Client({ connectionString: url, application_name: 'plaza restore' });
  await client.connect();
  try {
    // The file is text: UTF-8, and timestamps in the ISO style, the one that reads back as the same
    // instant whatever the server's DateStyle and TimeZone (backup.test.ts).
    await client.query(`SET client_encoding = 'UTF8'; SET DateStyle = ISO`);
    const db = queryable(client);
    await refuseOtherSessions(db);
    await client.query('BEGIN');
    try {
      let newer: Migration[] = [];
      const manifest = await readBackup(
        file,
        async (manifest) => {
          const { applied, pending } = migrationsOf(manifest, migrations);
          newer = pending;
          await dropSchemaObjects(db);
          await createMigrationsTable(db);
          for (const { migration, appliedAt } of applied) await applyMigration(db, migration, appliedAt);
        },
        (table) => copySink(client, table),
      );
      await resetSequences(db);
      for (const migration of newer) await applyMigration(db, migration);
      await client.query('COMMIT');
      return { manifest, upgradedWith: newer.map((m) => m.name) };
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      if (error instanceof BackupFileError || error instanceof RestoreRefusedError) throw error;
      // A row the schema refuses, a failing newer migration: reported with PostgreSQL's own words.
      const where = (error as { where?: string }).where;
      throw new RestoreFailedError(`Restore failed and was rolled back: ${(error as Error).message}${where ? ` (${where.slice(0, 200)})` : ''}`, { cause: error });
    }
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * The backup's migrations must be this Plaza's first ones, name for name: a file from a newer
 * schema cannot be loaded into tables this version does not have.
 */
function migrationsOf(manifest: Manifest, known: Migration[]) {
  const applied = manifest.migrations.map((entry, index) => {
    const migration = known[index];
    if (!migration || migration.version !== entry.version || migration.name !== entry.name) {
      throw new RestoreRefusedError(
        `The backup was made with Plaza ${manifest.plazaVersion} on a schema this version does not know (migration ${entry.name}). ` +
          'Restore it with that Plaza version or a newer one.',
      );
    }
    return { migration, appliedAt: entry.appliedAt };
  });
  return { applied, pending: known.slice(applied.length) };
}

/** Other sessions on the database (a running API or worker) would see their tables vanish. */
async function refuseOtherSessions(db: Queryable): Promise<void> {
  const { rows } = await db.query<{ pid: number; application_name: string; client: string | null; backend_start: Date }>(
    `SELECT pid, application_name, COALESCE(host(client_addr), 'local socket') AS client, backend_start
       FROM pg_stat_activity
      WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
  );
  if (rows.length === 0) return;
  const sessions = rows.map((s) => `backend ${s.pid} (${s.application_name || 'no application name'}, from ${s.client}, since ${s.backend_start.toISOString()})`);
  throw new RestoreRefusedError(
    `Refusing to restore: ${rows.length} other session(s) use this database: ${sessions.join('; ')}. Stop every Plaza process (serve, workers) using it first.`,
  );
}

// Objects an extension installed in the schema belong to the extension, not to Plaza's migrations.
const extensionMember = (oid: string) => `EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = ${oid} AND d.deptype = 'e')`;

/** Everything the migrations create in the current schema, so that running them again starts clean. */
async function dropSchemaObjects(db: Queryable): Promise<void> {
  const { rows } = await db.query<{ statement: string }>(
    // Tables first: dropping one drops its identity sequences, which cannot be dropped on their own.
    `SELECT statement FROM (
       SELECT 1 AS step, format('DROP %s IF EXISTS %I.%I CASCADE', CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW' WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END, n.nspname, c.relname) AS statement
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm', 'S') AND NOT ${extensionMember('c.oid')}
          AND NOT (c.relkind = 'S' AND EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype IN ('a', 'i')))
       UNION ALL
       SELECT 2, format('DROP ROUTINE IF EXISTS %s CASCADE', p.oid::regprocedure)
         FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace AND NOT ${extensionMember('p.oid')}
       UNION ALL
       SELECT 3, format('DROP TYPE IF EXISTS %s CASCADE', t.oid::regtype)
         FROM pg_type t
        WHERE t.typnamespace = current_schema()::regnamespace AND NOT ${extensionMember('t.oid')}
          AND (t.typtype IN ('e', 'd', 'r') OR (t.typtype = 'c' AND (SELECT relkind FROM pg_class WHERE oid = t.typrelid) = 'c'))
     ) objects ORDER BY step`,
  );
  for (const { statement } of rows) await db.exec(statement);
}

/** A COPY … FROM STDIN for one table; rows are written one line each, with backpressure. */
function copySink(client: pg.Client, table: Manifest['tables'][number]) {
  const columns = table.columns.map(quoteIdentifier).join(', ');
  const stream = client.query(copyFrom(`COPY ${quoteIdentifier(table.name)} (${columns}) FROM STDIN`));
  // The server may refuse a row (a constraint, a bad value) while we still write: from then on
  // the stream is unusable, and the first error is the one to report.
  let failure: Error | undefined;
  const failed = new Promise<never>((_, reject) => stream.once('error', (error: Error) => reject((failure = error))));
  failed.catch(() => {});
  const newline = Buffer.from('\n');
  return {
    async write(row: Buffer) {
      if (failure) throw failure;
      // Both writes always happen; a false return only asks us to wait for 'drain'.
      stream.write(row);
      if (!stream.write(newline)) await Promise.race([once(stream, 'drain'), failed]);
    },
    async end() {
      if (failure) throw failure;
      stream.end();
      await Promise.race([finished(stream), failed]);
    },
  };
}

/**
 * COPY sets ids explicitly and leaves the identity sequences where the migrations left them: without
 * this, the next insert would collide with a restored row.
 */
async function resetSequences(db: Queryable): Promise<void> {
  const { rows } = await db.query<{ table: string; column: string; sequence: string }>(
    `SELECT c.relname AS table, a.attname AS column, pg_get_serial_sequence(format('%I.%I', n.nspname, c.relname), a.attname) AS sequence
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
      WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')
        AND pg_get_serial_sequence(format('%I.%I', n.nspname, c.relname), a.attname) IS NOT NULL`,
  );
  for (const { table, column, sequence } of rows) {
    // is_called = false: the next value handed out is exactly max + 1 (or 1 for an empty table).
    await db.query(`SELECT setval($1::regclass, COALESCE(max(${quoteIdentifier(column)}), 0) + 1, false) FROM ${quoteIdentifier(table)}`, [sequence]);
  }
}

