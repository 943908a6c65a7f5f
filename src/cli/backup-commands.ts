import { parseArgs } from 'node:util';
import { writeBackup } from '../backup/backup.js';
import { BackupFileError } from '../backup/format.js';
import { restoreBackup, RestoreFailedError, RestoreRefusedError } from '../backup/restore.js';
import { loadConfig } from '../config.js';
import { EmbeddedServerBusyError } from '../db/embedded/server.js';
import { describeOwner } from '../db/embedded/state.js';
import { resolveDatabase } from '../db/open.js';
import { UsageError } from './usage-error.js';

export const BACKUP_USAGE = `Usage: plaza backup <file>
       plaza restore <file>

  backup <file>    Writes one consistent snapshot of the whole database (gzip, mode 0600) while
                   Plaza keeps running. Back up the keys with it: DATA_DIR/keys.json, or the
                   JWT_PRIVATE_KEY and SECRETS_KEY you configure (webhook secrets in the backup
                   are encrypted with SECRETS_KEY).
  restore <file>   Replaces everything in the database with the backup, in one transaction, then
                   applies newer migrations. Refuses while any Plaza process uses the database,
                   and refuses a damaged file or one from a newer Plaza without changing anything.

The database is DATABASE_URL, or the embedded PostgreSQL server in DATA_DIR.`;

export async function runBackupCommand(command: 'backup' | 'restore', args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({ args, options: { help: { type: 'boolean', short: 'h' } }, allowPositionals: true, strict: true });
  if (values.help) {
    console.log(BACKUP_USAGE);
    return;
  }
  if (positionals.length !== 1) throw new UsageError(`plaza ${command} needs exactly one file.\n\n${BACKUP_USAGE}`);
  const file = positionals[0]!;
  const config = loadConfig();
  try {
    if (command === 'backup') {
      const database = await resolveDatabase(config);
      try {
        const manifest = await writeBackup(database.url, file);
        const rows = manifest.tables.reduce((sum, table) => sum + table.rows, 0);
        console.log(`Wrote ${file}: ${manifest.tables.length} tables, ${rows} rows, schema ${manifest.migrations.at(-1)?.name ?? '(empty)'}.`);
      } finally {
        await database.release();
      }
      return;
    }
    const database = await resolveDatabase(config, { exclusive: true });
    try {
      const { manifest, upgradedWith } = await restoreBackup(database.url, file);
      const rows = manifest.tables.reduce((sum, table) => sum + table.rows, 0);
      console.log(`Restored ${file} (made ${manifest.createdAt} by Plaza ${manifest.plazaVersion}): ${rows} rows.` +
        (upgradedWith.length ? ` Applied newer migrations ${upgradedWith.join(', ')}.` : ''));
    } finally {
      await database.release();
    }
  } catch (error) {
    if (error instanceof EmbeddedServerBusyError) {
      throw new UsageError(`Refusing to restore: the embedded PostgreSQL server in ${error.dataDir} is in use by ${describeOwner(error.owner)}. Stop it first.`);
    }
    if (error instanceof BackupFileError) throw new UsageError(`${file} is not a usable Plaza backup: ${error.message}. Nothing was changed.`);
    const code = (error as NodeJS.ErrnoException).code;
    if (command === 'backup' && (code === 'ENOENT' || code === 'EACCES' || code === 'ENOTDIR' || code === 'ENOSPC')) {
      throw new UsageError(`Cannot write ${file}: ${(error as Error).message}`);
    }
    if (error instanceof RestoreRefusedError || error instanceof RestoreFailedError) throw new UsageError(`${error.message} Nothing was changed.`);
    throw error;
  }
}
