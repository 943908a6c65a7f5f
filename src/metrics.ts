import { Counter, Histogram, Registry } from 'prom-client';

/**
 * The process's Prometheus metrics, in a registry of its own (tests build many apps in one process;
 * the global registry would make the second one fail). `plaza serve --role all` shares one between
 * the API and the worker so that /metrics shows both.
 */
export interface Metrics {
  registry: Registry;
  /** Finished attempts by outcome: succeeded, retry, failed, gone. */
  deliveryAttempts: Counter<'outcome'>;
  /** Deliveries that reached a final state: succeeded or failed. */
  deliveriesCompleted: Counter<'outcome'>;
  attemptDuration: Histogram<'outcome'>;
  httpDuration: Histogram<'method' | 'route' | 'status_code'>;
}

/** Label values known in advance are created at 0, so that rate() and absent() work from the first scrape. */
const ATTEMPT_OUTCOMES = ['succeeded', 'retry', 'failed', 'gone'] as const;
const FINAL_OUTCOMES = ['succeeded', 'failed'] as const;

export function createMetrics(): Metrics {
  const registry = new Registry();
  const metrics: Metrics = {
    registry,
    deliveryAttempts: new Counter({
      name: 'plaza_delivery_attempts_total',
      help: 'Delivery attempts made by this process, by outcome (succeeded, retry, failed, gone).',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    deliveriesCompleted: new Counter({
      name: 'plaza_deliveries_completed_total',
      help: 'Deliveries this process brought to a final state, by outcome (succeeded, failed).',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    attemptDuration: new Histogram({
      name: 'plaza_delivery_attempt_duration_seconds',
      help: 'Duration of one delivery attempt, from connect to the end of the response.',
      labelNames: ['outcome'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    httpDuration: new Histogram({
      name: 'plaza_http_request_duration_seconds',
      help: 'Duration of HTTP API requests, by method, route pattern and status code.',
      labelNames: ['method', 'route', 'status_code'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    }),
  };
  for (const outcome of ATTEMPT_OUTCOMES) {
    metrics.deliveryAttempts.inc({ outcome }, 0);
    metrics.attemptDuration.zero({ outcome });
  }
  for (const outcome of FINAL_OUTCOMES) metrics.deliveriesCompleted.inc({ outcome }, 0);
  return metrics;
}
