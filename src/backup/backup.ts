import { once } from 'node:events';
import { createWriteStream, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { queryable, quoteIdentifier } from '../db/postgres.js';
import { packageVersion } from '../paths.js';
import { listTables } from './catalog.js';
import { END_OF_TABLE, FORMAT, FORMAT_VERSION, type Manifest } from './format.js';

/**
 * Writes a backup of the database at `url` to `file`: every table of the schema, read in one
 * REPEATABLE READ READ ONLY transaction, so the file is one consistent snapshot while the service
 * keeps running. The file appears complete or not at all (written beside it, then renamed), readable
 * by its owner only: it holds password hashes and encrypted webhook secrets.
 */
export async function writeBackup(url: string, file: string): Promise<Manifest> {
  const target = resolve(file);
  const draft = join(dirname(target), `.${basename(target)}.${process.pid}.tmp`);
  const client = new pg.Client({ connectionString: url, application_name: 'plaza backup' });
  await client.connect();
  try {
    // The file is text: UTF-8, and timestamps in the ISO style, the one that reads back as the same
    // instant whatever the server's DateStyle and TimeZone (backup.test.ts).
    await client.query(`SET client_encoding = 'UTF8'; SET DateStyle = ISO`);
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const db = queryable(client);
    const tables = await listTables(db);
    const manifest: Manifest = {
      format: FORMAT,
      formatVersion: FORMAT_VERSION,
      plazaVersion: packageVersion,
      createdAt: new Date().toISOString(),
      migrations: (await db.query<{ version: number; name: string; appliedAt: Date }>(
        `SELECT version, name, applied_at AS "appliedAt" FROM schema_migrations ORDER BY version`,
      )).rows.map((m) => ({ version: m.version, name: m.name, appliedAt: m.appliedAt.toISOString() })),
      tables: [],
    };
    for (const table of tables) {
      // Counted in the same snapshot the rows are copied from, so the two agree.
      const { rows } = await db.query<{ count: number }>(`SELECT count(*)::int AS count FROM ${quoteIdentifier(table.name)}`);
      manifest.tables.push({ ...table, rows: rows[0]!.count });
    }

    const gzip = createGzip();
    // 'wx': never follow or reuse a file someone placed at the draft's name.
    const written = pipeline(gzip, createWriteStream(draft, { flags: 'wx', mode: 0o600, flush: true }));
    written.catch(() => {});
    try {
      const write = async (chunk: Buffer | string) => {
        // When the file fails (no such directory, disk full) the pipeline destroys gzip, which then
        // never drains: the pipeline's rejection ends the wait.
        if (!gzip.write(chunk)) await Promise.race([once(gzip, 'drain'), written]);
      };
      await write(`${JSON.stringify(manifest)}\n`);
      for (const table of manifest.tables) {
        const columns = table.columns.map(quoteIdentifier).join(', ');
        // COPY (SELECT …): COPY cannot read a partitioned table (deliveries) by name.
        const rows = client.query(copyTo(`COPY (SELECT ${columns} FROM ${quoteIdentifier(table.name)}) TO STDOUT`));
        for await (const chunk of rows as AsyncIterable<Buffer>) await write(chunk);
        await write(`${END_OF_TABLE}\n`);
      }
      gzip.end();
      await written;
      renameSync(draft, target);
    } catch (error) {
      gzip.destroy();
      await written.catch(() => {});
      rmSync(draft, { force: true });
      throw error;
    }
    await client.query('COMMIT');
    return manifest;
  } finally {
    await client.end();
  }
}
