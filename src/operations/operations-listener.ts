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
import { listenNamed } from '../startup-errors.js';

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

/** Starts the listener for `plaza serve`; with the process and Node.js runtime metrics (one set per process). */
export async function startOperationsListener(deps: OperationsDeps, logger: FastifyBaseLogger): Promise<OperationsListener & { port: number }> {
  collectRuntimeMetrics(deps.metrics.registry);
  const listener = await buildOperationsApp(deps, logger);
  await listenNamed('METRICS_HOST', 'METRICS_PORT', () => listener.app.listen({ host: deps.config.METRICS_HOST, port: deps.config.METRICS_PORT }));
  const address = listener.app.server.address();
  return { ...listener, port: typeof address === 'object' && address ? address.port : deps.config.METRICS_PORT };
}
