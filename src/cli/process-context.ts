import { loadConfig, type Config } from '../config.js';
import type { Database } from '../db/database.js';
import type { CliContext } from './command.js';

/**
 * Opens the database a CLI command works on (DATABASE_URL, or the embedded server of DATA_DIR:
 * the one a running plaza serve owns, or one started for the command), migrated unless told not to. The one place where
 * the CLI opens a database: change this when the way of opening changes.
 */
export async function openCliDatabase(config: Config, options: { migrate?: boolean } = {}): Promise<Database> {
  // Imported on use: `--help` and mistakes never load a database driver.
  const [{ openDatabase }, { migrate }] = await Promise.all([import('../db/open.js'), import('../db/migrate.js')]);
  const db = await openDatabase(config);
  try {
    if (options.migrate !== false) await migrate(db);
    return db;
  } catch (error) {
    await db.close();
    throw error;
  }
}

/** The context of `plaza` run from a shell: the environment, standard streams, the real clock. */
export function processContext(): CliContext & { close(): Promise<void> } {
  // `plaza … | head`: once the reader is gone, the rest of the output has nowhere to go, and the
  // command finishes (closing the embedded server it started) instead of dying on EPIPE.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
  });
  let config: Config | undefined;
  let db: Promise<Database> | undefined;
  const context = {
    config: () => (config ??= loadConfig()),
    database: (options?: { migrate?: boolean }) => (db ??= openCliDatabase(context.config(), options)),
    stdin: process.stdin,
    out: (text: string) => void process.stdout.write(`${text}\n`),
    err: (text: string) => void process.stderr.write(`${text}\n`),
    now: () => new Date(),
    async close() {
      if (db) await (await db.catch(() => undefined))?.close();
    },
  };
  return context;
}
