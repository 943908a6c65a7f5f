import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, type Config } from './config.js';
import { EmbeddedUnavailableError } from './db/embedded/binaries.js';
import { EmbeddedServerBusyError } from './db/embedded/server.js';
import type { Database } from './db/database.js';
import { migrate } from './db/migrate.js';
import { openDatabase } from './db/open.js';
import { serve, type Role } from './server.js';
import { runAccountCommand } from './cli/account-commands.js';
import { UsageError } from './cli/usage-error.js';
import { runListenCommand } from './cli/listen.js';
import { runBackupCommand } from './cli/backup-commands.js';

const USAGE = `Usage: plaza <command>

  serve [--role all|api|worker]        Run the API and/or the delivery worker (default: all)
  migrate                              Apply pending database migrations
  marketplaces add <code> --name <name>
  sellers add <id> --name <name>
  connections add --seller <id> --marketplace <code>     Prints the new connection id
  users add <username> --seller <id> [--role seller|marketplace|admin] [--marketplace <code>] [--inactive]
                                       The password is read from standard input
  users set-active <username> true|false
  listen --port <n> [--secret whsec_…] [--status <code>] [--host <address>]
                                       A local webhook receiver for development: prints each
                                       notification, verifies its signature, answers <code> (200)
  backup <file>                        Write a consistent snapshot of the database (plaza backup --help)
  restore <file>                       Replace the database with a backup (refuses while Plaza runs)

The database is DATABASE_URL, or the embedded PostgreSQL server in DATA_DIR: the CLI uses the one a
running plaza serve owns, or starts it for the duration of the command.`;

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (!command || command === 'help' || command === '--help' || command === '-h') {
    console.log(USAGE);
    return;
  }
  // The receiver needs neither configuration nor database.
  if (command === 'listen') return runListenCommand(rest);
  if (command === 'backup' || command === 'restore') return runBackupCommand(command, rest);
  const config = loadConfig();
  if (command === 'serve') {
    const { values } = parseArgs({ args: rest, options: { role: { type: 'string', default: 'all' } }, strict: true });
    if (!['all', 'api', 'worker'].includes(values.role!)) throw new UsageError(`--role must be all, api or worker, not "${values.role}".`, true);
    await serve(config, values.role as Role);
    return;
  }
  await withDatabase(config, async (db) => {
    if (command === 'migrate') {
      const applied = await migrate(db);
      console.log(applied.length ? `Applied ${applied.join(', ')}.` : 'The database is up to date.');
      return;
    }
    await migrate(db);
    await runAccountCommand(db, command, rest);
  });
}

async function withDatabase(config: Config, work: (db: Database) => Promise<void>): Promise<void> {
  const db = await openDatabase(config);
  try {
    await work(db);
  } finally {
    await db.close();
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof UsageError || error instanceof ConfigError || error instanceof EmbeddedServerBusyError || error instanceof EmbeddedUnavailableError) {
    console.error(`plaza: ${error.message}`);
    if (error instanceof UsageError && error.showUsage) console.error(`\n${USAGE}`);
    process.exit(2);
  }
  console.error(error);
  process.exit(1);
});
