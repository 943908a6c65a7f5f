import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { collectDefaultMetrics, type Registry } from 'prom-client';
import type { FeatureDeps } from '../deps.js';
import { startQueueGauges, type QueueGauges } from '../delivery/queue/gauges.js';
import { healthRoutes } from '../http/health.routes.js';
import { ProblemSchema } from '../http/openapi.js';
import { registerCompression } from '../http/compression.js';
import { registerProblemHandlers } from '../http/problem.js';
import { OneLinePerRequest } from '../http/request-log.js';
import { registerResponseHeaders } from '../http/response-headers.js';
import { ListenError, listenNamed } from '../startup-errors.js';

type OperationsDeps = Pick<FeatureDeps, 'config' | 'db' | 'clock' | 'metrics'>;

export interface OperationsListener {
  readonly app: FastifyInstance;
  readonly gauges: QueueGauges;
  close(): Promise<void>;
}

/**
 * /metrics, /healthz and /readyz on a listener of their own (METRICS_HOST:METRICS_PORT, loopback by
 * default), in every role: a worker process is probed and scraped like an API process. Kept off the
 * public port because metrics need no token and describe every tenant's traffic. A scrape reads
 * memory only (the queue gauges are measured on an interval), so it answers while the database is
 * down and cannot be used to load it.
 */
export async function buildOperationsApp(deps: OperationsDeps, logger?: FastifyBaseLogger): Promise<OperationsListener> {
  const { config, metrics } = deps;
  // Scrapes and probes come every few seconds: their request lines would drown the log.
  const app = logger ? Fastify({ loggerInstance: logger, logController: new OneLinePerRequest() }) : Fastify({ logger: false });
  app.addSchema(ProblemSchema);
  registerResponseHeaders(app);
  registerProblemHandlers(app, config.DATABASE_RETRY_AFTER_SECONDS);
  // /metrics is some 450 KB of text per scrape; Prometheus asks for gzip.
  await registerCompression(app);
  await app.register(healthRoutes, deps);
  app.get('/metrics', async (_request, reply) => {
    reply.header('content-type', metrics.registry.contentType);
    return metrics.registry.metrics();
  });
  const gauges = startQueueGauges({ db: deps.db, clock: deps.clock, metrics, intervalSeconds: config.METRICS_QUEUE_INTERVAL_SECONDS, ...(logger ? { logger } : {}) });
  app.addHook('onClose', async () => gauges.stop());
  return { app, gauges, close: () => app.close() };
}

/**
 * prom-client's gauges that end in `_total`, a suffix Prometheus keeps for counters (`promtool check
 * metrics` reports each). Left out rather than renamed: each is the sum over the `type` label of the
 * series of the same name without the suffix (`nodejs_active_handles{type}`, …), which stay.
 */
export const OMITTED_DEFAULT_METRICS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'] as const;

/** The process and Node.js runtime metrics of prom-client, less those that break the naming rules. */
export function collectRuntimeMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry });
  for (const name of OMITTED_DEFAULT_METRICS) registry.removeSingleMetric(name);
}

/** The operations port when METRICS_PORT is unset. */
export const DEFAULT_METRICS_PORT = 9464;

/**
 * Starts the listener for `plaza serve`; with the process and Node.js runtime metrics (one set per
 * process). METRICS_PORT set: that port, or the start stops naming it. Unset: DEFAULT_METRICS_PORT,
 * or, when another process holds it (a second development instance on the machine), a free port
 * with a warning naming it: nothing scrapes a port nobody chose, and a second `npm start` with
 * its own PORT should not stop on a port its user never heard of.
 */
export async function startOperationsListener(
  deps: OperationsDeps,
  logger: FastifyBaseLogger,
  defaultPort: number = DEFAULT_METRICS_PORT,
): Promise<OperationsListener & { port: number }> {
  collectRuntimeMetrics(deps.metrics.registry);
  const listener = await buildOperationsApp(deps, logger);
  const host = deps.config.METRICS_HOST;
  const listen = (port: number) => listenNamed('METRICS_HOST', 'METRICS_PORT', () => listener.app.listen({ host, port }));
  try {
    if (deps.config.METRICS_PORT !== undefined) {
      await listen(deps.config.METRICS_PORT);
    } else {
      try {
        await listen(defaultPort);
      } catch (error) {
        if (!(error instanceof ListenError && (error.cause as NodeJS.ErrnoException).code === 'EADDRINUSE')) throw error;
        await listen(0);
        logger.warn(
          { metricsPort: portOf(listener.app), taken: defaultPort },
          `the operations port ${defaultPort} is taken (another Plaza?): /metrics, /healthz and /readyz are on port ${portOf(listener.app)} instead; set METRICS_PORT to choose one`,
        );
      }
    }
  } catch (error) {
    await listener.close().catch(() => {});
    throw error;
  }
  return { ...listener, port: portOf(listener.app) };
}

function portOf(app: FastifyInstance): number {
  const address = app.server.address();
  return typeof address === 'object' && address ? address.port : 0;
}
