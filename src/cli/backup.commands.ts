import { writeBackup } from '../backup/backup.js';
import { BackupFileError } from '../backup/format.js';
import { restoreBackup, RestoreFailedError, RestoreRefusedError } from '../backup/restore.js';
import { EmbeddedServerBusyError } from '../db/embedded/server.js';
import { describeOwner } from '../db/embedded/state.js';
import { resolveDatabase } from '../db/open.js';
import { requireText, type Command } from './command.js';
import { UsageError } from './usage-error.js';

const KEYS_NOTE = `SECRETS_KEY is not in the backup: keep DATA_DIR/keys.json (or the SECRETS_KEY, JWT_PRIVATE_KEY and
JWT_VERIFICATION_KEYS you configure) with it; secrets in the backup are encrypted with SECRETS_KEY.`;

/** plaza backup / plaza restore over COPY (the embedded binaries have no pg_dump): see src/backup/. */
export const backupCommands: Command[] = [
  {
    name: 'backup',
    args: '<file>',
    summary: 'Write one consistent snapshot of the database to <file> (gzip, mode 0600) while Plaza runs',
    details: KEYS_NOTE,
    async run(input, ctx) {
      const file = requireText(input.positionals[0], '<file>');
      const database = await resolveDatabase(ctx.config());
      try {
        const manifest = await writeBackup(database.url, file);
        const rows = manifest.tables.reduce((sum, table) => sum + table.rows, 0);
        ctx.out(`Wrote ${file}: ${manifest.tables.length} tables, ${rows} rows, schema ${manifest.migrations.at(-1)?.name ?? '(empty)'}.`);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || code === 'EACCES' || code === 'ENOTDIR' || code === 'EISDIR' || code === 'ENOSPC') throw new UsageError(`Cannot write ${file}: ${(error as Error).message}`);
        // The migrations' table is missing (undefined_table): so is everything else.
        if (code === '42P01' && (error as Error).message.includes('schema_migrations')) throw new UsageError('The database has no Plaza schema yet (run plaza migrate, or start Plaza once): there is nothing to back up.');
        throw error;
      } finally {
        await database.release();
      }
    },
  },
  {
    name: 'restore',
    args: '<file>',
    summary: 'Replace everything in the database with a backup, in one transaction (refuses while Plaza uses the database)',
    details: `Refuses a damaged file or one from a newer Plaza without changing anything; applies newer migrations after loading.\n${KEYS_NOTE}`,
    async run(input, ctx) {
      const file = requireText(input.positionals[0], '<file>');
      try {
        const database = await resolveDatabase(ctx.config(), { exclusive: true });
        try {
          const { manifest, upgradedWith } = await restoreBackup(database.url, file);
          const rows = manifest.tables.reduce((sum, table) => sum + table.rows, 0);
          ctx.out(`Restored ${file} (made ${manifest.createdAt} by Plaza ${manifest.plazaVersion}): ${rows} rows.` +
            (upgradedWith.length ? ` Applied newer migrations ${upgradedWith.join(', ')}.` : ''));
        } finally {
          await database.release();
        }
      } catch (error) {
        if (error instanceof EmbeddedServerBusyError) {
          throw new UsageError(`Refusing to restore: the embedded PostgreSQL server in ${error.dataDir} is in use by ${describeOwner(error.owner)}. Stop it first.`);
        }
        if (error instanceof BackupFileError) throw new UsageError(`${file} is not a usable Plaza backup: ${error.message}. Nothing was changed.`);
        if (error instanceof RestoreRefusedError || error instanceof RestoreFailedError) throw new UsageError(`${error.message} Nothing was changed.`);
        throw error;
      }
    },
  },
];
