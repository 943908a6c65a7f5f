import { createReadStream } from 'node:fs';
import { createGunzip } from 'node:zlib';

/**
 * A Plaza backup is one gzip stream of:
 *   line 1: the manifest (JSON)
 *   then, for each table of manifest.tables in order, its rows in PostgreSQL's COPY text format
 *   (one row per line: COPY escapes newlines and backslashes inside values) and a line `\.`.
 * `\.` cannot be a row: COPY writes a backslash in a value as `\\`. gzip's CRC-32 and length
 * catch a corrupted or truncated file; the row counts in the manifest catch a wrong one.
 */
export const FORMAT = 'plaza-backup';
export const FORMAT_VERSION = 1;
export const END_OF_TABLE = '\\.';

export interface Manifest {
  format: typeof FORMAT;
  formatVersion: number;
  plazaVersion: string;
  createdAt: string;
  migrations: Array<{ version: number; name: string; appliedAt: string }>;
  tables: Array<{ name: string; columns: string[]; rows: number }>;
}

/** The file is not a complete, intact Plaza backup. */
export class BackupFileError extends Error {}

// The manifest of the largest schema is a few kB; a longer first line means this is not a backup.
const MAX_MANIFEST_BYTES = 1 << 20;

/** The lines of a gzip file as Buffers (without the newline), read in chunks. */
async function* lines(file: string): AsyncGenerator<Buffer> {
  const input = createReadStream(file);
  const gunzip = createGunzip();
  input.on('error', (error) => gunzip.destroy(error));
  input.pipe(gunzip);
  let pending: Buffer = Buffer.alloc(0);
  for await (const chunk of gunzip as AsyncIterable<Buffer>) {
    let data = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    let newline: number;
    while ((newline = data.indexOf(0x0a)) !== -1) {
      yield data.subarray(0, newline);
      data = data.subarray(newline + 1);
    }
    pending = data;
  }
  if (pending.length) throw new BackupFileError('the last line has no end');
}

/** Where restore sends one table's rows; verification passes none. */
export type RowSink = (table: Manifest['tables'][number]) => { write(row: Buffer): Promise<void>; end(): Promise<void> } | undefined;

/**
 * Reads the whole file: checks its manifest, every table's row count and the end of the stream,
 * handing each row to the sink when one is given. Throws BackupFileError on anything wrong.
 */
export async function readBackup(file: string, onManifest: (manifest: Manifest) => Promise<void> | void, sink?: RowSink): Promise<Manifest> {
  const reader = lines(file)[Symbol.asyncIterator]();
  const next = async (): Promise<Buffer | undefined> => {
    try {
      const result = await reader.next();
      return result.done ? undefined : result.value;
    } catch (error) {
      if (error instanceof BackupFileError) throw error;
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'EACCES' || code === 'EISDIR') throw new BackupFileError((error as Error).message);
      // zlib: "unexpected end of file" (truncated), "incorrect data check" (corrupted), "incorrect header check" (not gzip).
      throw new BackupFileError(`it is not intact gzip data (${(error as Error).message})`);
    }
  };
  const first = await next();
  if (!first) throw new BackupFileError('it is empty');
  const manifest = parseManifest(first);
  await onManifest(manifest);
  for (const table of manifest.tables) {
    const target = sink?.(table);
    let rows = 0;
    for (;;) {
      const line = await next();
      if (line === undefined) throw new BackupFileError(`it ends inside table ${table.name}`);
      if (line.length === 2 && line.toString() === END_OF_TABLE) break;
      rows++;
      await target?.write(line);
    }
    if (rows !== table.rows) throw new BackupFileError(`table ${table.name} has ${rows} rows where the manifest says ${table.rows}`);
    await target?.end();
  }
  if ((await next()) !== undefined) throw new BackupFileError('it continues after the last table');
  return manifest;
}

function parseManifest(line: Buffer): Manifest {
  if (line.length > MAX_MANIFEST_BYTES) throw new BackupFileError('it does not start with a Plaza backup manifest');
  let manifest: Manifest;
  try {
    manifest = JSON.parse(line.toString('utf8')) as Manifest;
  } catch {
    throw new BackupFileError('it does not start with a Plaza backup manifest');
  }
  if (manifest?.format !== FORMAT) throw new BackupFileError('it does not start with a Plaza backup manifest');
  if (manifest.formatVersion !== FORMAT_VERSION) {
    throw new BackupFileError(`it has format version ${manifest.formatVersion}; this Plaza reads version ${FORMAT_VERSION}. Restore it with the Plaza version that made it (${manifest.plazaVersion}) or newer.`);
  }
  const valid =
    Array.isArray(manifest.migrations) &&
    manifest.migrations.every((m) => Number.isInteger(m?.version) && typeof m.name === 'string') &&
    Array.isArray(manifest.tables) &&
    manifest.tables.every((t) => typeof t?.name === 'string' && Array.isArray(t.columns) && t.columns.every((c) => typeof c === 'string') && Number.isInteger(t.rows) && t.rows >= 0);
  if (!valid) throw new BackupFileError('its manifest is malformed');
  return manifest;
}
