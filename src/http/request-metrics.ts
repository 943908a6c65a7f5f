import type { FastifyPluginAsync } from 'fastify';
import type { Metrics } from '../metrics.js';

/**
 * The HTTP request histogram: an onResponse hook on every route (hence skip-override: the hook must
 * not be encapsulated in this plugin), labelled by route pattern so that raw URLs never become
 * label values. The histogram is served by the operations listener, not by the API.
 */
const plugin: FastifyPluginAsync<{ metrics: Metrics }> = async (app, { metrics }) => {
  app.addHook('onResponse', async (request, reply) => {
    metrics.httpDuration.observe(
      { method: request.method, route: request.routeOptions.url ?? 'unmatched', status_code: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
  });
};

(plugin as unknown as Record<symbol, boolean>)[Symbol.for('skip-override')] = true;
export const requestMetrics = plugin;
