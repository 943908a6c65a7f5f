import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Gauge, Registry } from 'prom-client';
import { Type } from 'typebox';
import type { FeatureDeps } from '../deps.js';
import type { Queryable } from '../db/database.js';

interface QueueDepth {
  due: number;
  oldest_due: Date | null;
  delivering: number;
  failed: number;
}

/** The delivery queue as the database sees it, over all workers: computed on each scrape. */
export async function measureQueue(db: Queryable, now: Date): Promise<QueueDepth> {
  const { rows } = await db.query<QueueDepth>(
    `WITH due AS (
       SELECT d.next_attempt_at FROM deliveries d JOIN webhooks w ON w.id = d.webhook_id AND w.active
        WHERE (d.status = 'pending' AND d.next_attempt_at <= $1) OR (d.status = 'delivering' AND d.lease_expires_at <= $1)
     )
     SELECT (SELECT count(*)::int FROM due) AS due,
            (SELECT min(next_attempt_at) FROM due) AS oldest_due,
            (SELECT count(*)::int FROM deliveries WHERE status = 'delivering' AND lease_expires_at > $1) AS delivering,
            (SELECT count(*)::int FROM deliveries WHERE status = 'failed') AS failed`,
    [now],
  );
  return rows[0]!;
}

/**
 * GET /metrics in the Prometheus text format, and the HTTP request histogram (an onResponse hook on
 * every route, hence skip-override: the hook must not be encapsulated in this plugin). Not behind a
 * token, as scrapers expect; expose it only to the monitoring network.
 */
const plugin: FastifyPluginAsyncTypebox<FeatureDeps> = async (app, { db, clock, metrics }) => {
  app.addHook('onResponse', async (request, reply) => {
    metrics.httpDuration.observe(
      { method: request.method, route: request.routeOptions.url ?? 'unmatched', status_code: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
  });

  const queue = new Registry();
  const due = new Gauge({ name: 'plaza_deliveries_due', help: 'Deliveries due now and not yet taken by a worker (queue depth).', registers: [queue] });
  const oldest = new Gauge({ name: 'plaza_deliveries_oldest_due_age_seconds', help: 'How long the oldest due delivery has been waiting (0 when none).', registers: [queue] });
  const delivering = new Gauge({ name: 'plaza_deliveries_in_flight', help: 'Deliveries held by a worker with a live lease.', registers: [queue] });
  const failed = new Gauge({ name: 'plaza_deliveries_failed', help: 'Deliveries that failed for good and are still retained (replayable).', registers: [queue] });

  app.get(
    '/metrics',
    {
      schema: {
        tags: ['operations'],
        summary: 'Prometheus metrics',
        description: 'Delivery outcomes, attempt durations, queue depth and age, HTTP request durations.',
        produces: ['text/plain'],
        response: { 200: Type.String({ description: 'Prometheus text exposition format 0.0.4' }) },
      },
    },
    async (_request, reply) => {
      const now = clock.now();
      const depth = await measureQueue(db, now);
      due.set(depth.due);
      oldest.set(depth.oldest_due ? Math.max(0, (now.getTime() - new Date(depth.oldest_due).getTime()) / 1000) : 0);
      delivering.set(depth.delivering);
      failed.set(depth.failed);
      const merged = Registry.merge([metrics.registry, queue]);
      reply.header('content-type', merged.contentType);
      return merged.metrics();
    },
  );
};

(plugin as unknown as Record<symbol, boolean>)[Symbol.for('skip-override')] = true;
export const metricsRoutes = plugin;
