import { resolve } from 'node:path';
import type pino from 'pino';
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import { systemClock } from './clock.js';
import type { Config } from './config.js';
import { countUsers } from './accounts/accounts.repository.js';
import type { Database } from './db/database.js';
import { DatabaseUnavailableError, isUnavailable } from './db/database.js';
import { migrate } from './db/migrate.js';
import { openDatabase } from './db/open.js';
import { startDeliveryWorker, type DeliveryWorker } from './delivery/worker.js';
import { createMetrics } from './metrics.js';
import { maintenanceJobs } from './maintenance-jobs.js';
import { startMaintenance } from './maintenance/scheduler.js';
import { startOperationsListener } from './operations/operations-listener.js';
import { loadKeys, startKeyReloader } from './keys.js';
import { createLogger } from './logging.js';
import { listenNamed } from './startup-errors.js';
import { startTracing, stopTracing } from './telemetry/tracing.js';

export type Role = 'all' | 'api' | 'worker';

/** The commands that create a first user, logged as one structured line on an empty database. */
export const FIRST_USER_HINT = {
  hint: 'create the first user with the CLI',
  commands: [
    'npx plaza marketplaces add <code> --name "<Marketplace name>"',
    'npx plaza sellers add <seller id> --name "<Seller name>"',
    'npx plaza connections add --seller <seller id> --marketplace <code>',
    'echo "<password>" | npx plaza users add <username> --seller <seller id>',
  ],
};

/**
 * The start that generated DATA_DIR/keys.json says so, naming the file: every webhook secret and JWT
 * signing key is encrypted under it from now on, so a lost file (a container without a volume, a
 * DATA_DIR not in the backup) loses them, and a second machine needs the same key. Generating keeps
 * the one-command start of the README (and a single-machine install) working; a production that
 * wants no generated key sets SECRETS_KEY (docs/operations.md, Keys).
 */
export function generatedKeyWarning(file: string) {
  return {
    file,
    action: `back up ${file} with the database (it encrypts every webhook secret and JWT key); give every other process the same key, or set SECRETS_KEY from your secret store instead`,
  };
}

/** `plaza serve`: the API, the delivery worker, or both, and the maintenance, until SIGTERM or SIGINT. */
export async function serve(config: Config, role: Role): Promise<void> {
  const logger = createLogger(config);
  // Before the app is built: its request spans are registered only when traces are exported.
  const tracer = await startTracing(process.env);
  // The endpoint is not logged: a collector's URL may carry a token.
  if (tracer.enabled) logger.info({ serviceName: process.env.OTEL_SERVICE_NAME ?? 'plaza', protocol: tracer.protocol }, 'exporting traces over OTLP/HTTP');
  if (tracer.unsupportedProtocol) logger.warn({ asked: tracer.unsupportedProtocol, protocol: tracer.protocol }, 'OTEL_EXPORTER_OTLP_PROTOCOL names a protocol Plaza does not export with; using http/protobuf');
  // A signal may come at any moment of the start (an orchestrator, a Ctrl-C while the embedded
  // server is initialised): it is taken from here on and acted on once the start is complete, so
  // that shutdown always drains and stops the embedded server instead of Node's default of dying
  // on the spot (which left a running postgres, or a half-initialised cluster, behind). Waiting
  // for an unreachable database is the one part of the start that a signal cuts short.
  const shutdown: { stop?: (signal: string) => Promise<void>; signalled?: string } = {};
  const onSignal = (signal: string) => (shutdown.stop ? void shutdown.stop(signal) : (shutdown.signalled = signal));
  // Every signal, not the first only: a second one (`timeout`, a repeated Ctrl-C) would otherwise
  // get Node's default and kill the process mid-stop. SHUTDOWN_TIMEOUT_MS bounds the stop anyway.
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));

  // Role all owns the embedded server; --role api|worker may join the one a running Plaza owns.
  const db = await openDatabase(config, {
    onError: (error) => logger.warn({ err: error }, 'database connection error'),
    logger,
    exclusive: role === 'all',
    onFatal: (error) => {
      logger.fatal({ err: error }, 'the embedded database is gone; exiting');
      process.stderr.write(`plaza: ${error.message}\n`);
      process.exit(1);
    },
  });
  // Keys live in the database (encrypted under SECRETS_KEY): a process whose SECRETS_KEY cannot
  // open them refuses to start here, before serving or delivering anything.
  let keys;
  try {
    if (!(await migrateWhenReachable(db, logger, () => shutdown.signalled !== undefined))) {
      logger.info({ signal: shutdown.signalled }, 'stopped before the database could be reached');
      await db.close();
      process.exit(0);
    }
    keys = await loadKeys(config, db, systemClock);
  } catch (error) {
    await db.close();
    throw error;
  }
  if (keys.secrets.generated) {
    const file = resolve(keys.secrets.source);
    logger.warn(generatedKeyWarning(file), `SECRETS_KEY is not set: generated a new master key in ${file}`);
  }
  const stopKeyReloader = startKeyReloader(keys, config, (error) => logger.error({ err: error }, 'reloading the JWT keys failed; keeping the current ones'));
  if ((await countUsers(db)) === 0) {
    logger.warn(FIRST_USER_HINT, 'no user exists yet');
  }

  // One set of metrics, so that /metrics also shows this process's delivery attempts (role all).
  const metrics = createMetrics();
  const app = role === 'worker' ? undefined : await buildApp({ config, db, keys, logger, metrics });
  // Ports first, worker last: a port in use must stop the start before anything has been sent.
  let operations;
  try {
    if (app) await listenNamed('HOST', 'PORT', () => app.listen({ host: config.HOST, port: config.PORT }));
    operations = await startOperationsListener({ config, db, clock: systemClock, metrics }, logger);
  } catch (error) {
    // A port in use: close what is open (for the owner, the embedded server too), so that the
    // process ends with its one-line error instead of living on without serving.
    stopKeyReloader();
    await app?.close().catch(() => {});
    await db.close().catch(() => {});
    throw error;
  }
  let worker: DeliveryWorker | undefined;
  const workerDb = role === 'all' ? db.anotherPool(WORKER_POOL_SIZE) : db;
  if (role !== 'api') worker = await startDeliveryWorker({ config, db: workerDb, keys, clock: systemClock, logger, metrics });
  // Every role: an API-only installation prunes too, and the processes share each job's runs.
  const maintenance = startMaintenance({ db, clock: systemClock, logger }, maintenanceJobs(config, logger));
  logger.info({ role, database: config.DATABASE_URL ? 'external' : 'embedded', port: app ? config.PORT : undefined, metricsPort: operations.port }, 'plaza started');

  let stopping = false;
  shutdown.stop = async (signal: string) => {
    if (stopping) {
      logger.info({ signal }, 'already stopping');
      return;
    }
    stopping = true;
    logger.info({ signal }, 'stopping: finishing in-flight work');
    const deadline = setTimeout(() => {
      logger.error('shutdown took longer than SHUTDOWN_TIMEOUT_MS; exiting');
      process.exit(1);
    }, config.SHUTDOWN_TIMEOUT_MS + 5000);
    deadline.unref();
    // Stop accepting first, let in-flight requests and sends finish, then close the database
    // (for the owner of the embedded server, that stops it: fast shutdown).
    stopKeyReloader();
    const listeners = [app, operations.app].filter((listener) => listener !== undefined);
    await Promise.allSettled([...listeners.map((listener) => closeWithin(listener, config.SHUTDOWN_TIMEOUT_MS, logger)), worker?.stop(), maintenance.stop()]);
    if (workerDb !== db) await workerDb.close().catch(() => {});
    await db.close();
    // The last spans (the stop's sends and completions) go out before the process ends.
    await stopTracing().catch((error: unknown) => logger.warn({ err: error }, 'exporting the last spans failed'));
    logger.info('stopped');
    process.exit(0);
  };
  if (shutdown.signalled) void shutdown.stop(shutdown.signalled);
}

/**
 * Role all: the delivery worker's connections, besides DATABASE_POOL_SIZE: one claim at a time (which
 * every delivery waits for), one batch of records, and the next-due query, the lease recovery or the
 * queue's VACUUM beside them. On the API's pool its claims and records queued behind intakes for a
 * connection: scenario 5 at 200 events/s on a loaded host gave p50 0.9–1.1 s on one pool against
 * 41–50 ms with a pool of its own (bench/results/history.md, "Scenario 5: where the milliseconds go").
 * It listens through the process's LISTEN connection.
 */
export const WORKER_POOL_SIZE = 4;

/**
 * Closes a listener: requests in flight get `timeoutMs` to finish, then their connections are cut.
 * Fastify's close waits for them without a limit, so one client trickling a body (no credentials
 * needed) held the stop until the last-resort exit, which left the embedded server running.
 */
async function closeWithin(app: FastifyInstance, timeoutMs: number, logger: pino.Logger): Promise<void> {
  const cut = setTimeout(() => {
    logger.warn('requests still in flight after SHUTDOWN_TIMEOUT_MS; closing their connections');
    app.server.closeAllConnections();
  }, timeoutMs);
  try {
    await app.close();
  } finally {
    clearTimeout(cut);
  }
}

/**
 * At start the database may still be coming up (a container starting beside it): wait for it.
 * False when asked to stop meanwhile.
 */
async function migrateWhenReachable(db: Database, logger: pino.Logger, stopAsked: () => boolean): Promise<boolean> {
  for (let attempt = 1; ; attempt++) {
    try {
      const applied = await migrate(db);
      if (applied.length > 0) logger.info({ applied }, 'migrations applied');
      return true;
    } catch (error) {
      if (!isUnavailable(error) || attempt >= 30) throw error;
      if (stopAsked()) return false;
      // The driver's own error (ECONNREFUSED, 57P03…), not the wrapper's "database unavailable".
      const cause = (error instanceof DatabaseUnavailableError ? error.cause : error) as { code?: string; message?: string };
      logger.warn({ attempt, reason: cause.code ?? cause.message }, 'database unreachable; retrying in 1 s');
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}
