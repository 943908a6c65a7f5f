import pino from 'pino';
import { buildApp, REDACTED_PATHS } from './app.js';
import { systemClock } from './clock.js';
import type { Config } from './config.js';
import { countUsers } from './accounts/accounts.repository.js';
import type { Database } from './db/database.js';
import { isUnavailable } from './db/database.js';
import { migrate } from './db/migrate.js';
import { openDatabase } from './db/open.js';
import { startDeliveryWorker, type DeliveryWorker } from './delivery/worker.js';
import { createMetrics } from './delivery/metrics.js';
import { loadKeys, startKeyReloader } from './keys.js';

export type Role = 'all' | 'api' | 'worker';

export const FIRST_USER_HINT = [
  'No user exists yet. Create the first one with:',
  '  npx plaza marketplaces add <code> --name "<Marketplace name>"',
  '  npx plaza sellers add <seller id> --name "<Seller name>"',
  '  npx plaza connections add --seller <seller id> --marketplace <code>',
  '  echo "<password>" | npx plaza users add <username> --seller <seller id>',
  '(with the embedded database, stop the server first: the CLI needs the data directory lock).',
].join('\n');

/** `plaza serve`: the API, the delivery worker, or both, until SIGTERM or SIGINT. */
export async function serve(config: Config, role: Role): Promise<void> {
  const logger = pino({ level: config.LOG_LEVEL, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } });
  const db = await openDatabase(config, (error) => logger.warn({ err: error }, 'database connection error'));
  await migrateWhenReachable(db, logger);
  // Keys live in the database (encrypted under SECRETS_KEY): a process whose SECRETS_KEY cannot
  // open them refuses to start here, before serving or delivering anything.
  let keys;
  try {
    keys = await loadKeys(config, db, systemClock.now());
  } catch (error) {
    await db.close();
    throw error;
  }
  const stopKeyReloader = startKeyReloader(keys, db, config, systemClock, (error) => logger.error({ err: error }, 'reloading the JWT keys failed; keeping the current ones'));
  if ((await countUsers(db)) === 0) {
    logger.warn('no user exists yet');
    // Said in plain words too: a person starting Plaza for the first time reads this, not a log parser.
    process.stderr.write(`\n${FIRST_USER_HINT}\n\n`);
  }

  // One set of metrics, so that /metrics also shows this process's delivery attempts (role all).
  const metrics = createMetrics();
  const app = role === 'worker' ? undefined : await buildApp({ config, db, keys, logger, metrics });
  let worker: DeliveryWorker | undefined;
  if (role !== 'api') worker = await startDeliveryWorker({ config, db, keys, clock: systemClock, logger, metrics });
  if (app) await app.listen({ host: config.HOST, port: config.PORT });
  logger.info({ role, engine: db.engine, port: app ? config.PORT : undefined }, 'plaza started');

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping: finishing in-flight work');
    const deadline = setTimeout(() => {
      logger.error('shutdown took longer than SHUTDOWN_TIMEOUT_MS; exiting');
      process.exit(1);
    }, config.SHUTDOWN_TIMEOUT_MS + 5000);
    deadline.unref();
    // Stop accepting first, let in-flight requests and sends finish, then close the database.
    stopKeyReloader();
    await Promise.allSettled([app?.close(), worker?.stop()]);
    await db.close();
    logger.info('stopped');
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
}

/** At start the database may still be coming up (a container starting beside it): wait for it. */
async function migrateWhenReachable(db: Database, logger: pino.Logger): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      const applied = await migrate(db);
      if (applied.length > 0) logger.info({ applied }, 'migrations applied');
      return;
    } catch (error) {
      if (!isUnavailable(error) || attempt >= 30) throw error;
      logger.warn({ attempt }, 'database unreachable; retrying in 1 s');
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}
