import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { TraceSpan, Tracer } from '../telemetry/tracing.js';

/** The span of each request in flight (requestSpan). */
const spans = new WeakMap<FastifyRequest, TraceSpan>();

/** The request's server span, to parent the spans of its work (the intake); undefined without traces. */
export function requestSpan(request: FastifyRequest): TraceSpan | undefined {
  return spans.get(request);
}

/**
 * One server span per HTTP request (docs/operations.md, Traces), registered only when traces are
 * exported: from onRequest (before authentication) to onResponse. Its parent is the caller's W3C
 * `traceparent` header when it sends one, so a producer's trace goes on into Plaza. Named and
 * labelled by the route's pattern, never the raw URL (ids in paths), as the request metrics are.
 */
const plugin: FastifyPluginAsync<{ tracer: Tracer }> = async (app, { tracer }) => {
  app.addHook('onRequest', async (request) => {
    const route = request.routeOptions.url;
    const incoming = request.headers.traceparent;
    const span = tracer.startSpan(route ? `${request.method} ${route}` : request.method, {
      kind: 'server',
      parent: typeof incoming === 'string' ? incoming : null,
      attributes: {
        'http.request.method': request.method,
        'url.scheme': request.protocol,
        ...(route ? { 'http.route': route } : {}),
        'client.address': request.ip,
      },
    });
    spans.set(request, span);
  });
  const end = async (request: FastifyRequest, statusCode?: number) => {
    const span = spans.get(request);
    if (!span) return;
    spans.delete(request);
    if (statusCode === undefined) span.fail('request aborted');
    else {
      span.setAttributes({ 'http.response.status_code': statusCode });
      if (statusCode >= 500) span.fail(`HTTP ${statusCode}`);
    }
    span.end();
  };
  app.addHook('onResponse', async (request, reply) => end(request, reply.statusCode));
  app.addHook('onRequestAbort', async (request) => end(request));
};

// skip-override: the hooks apply to every route of the app, not only inside this plugin.
(plugin as unknown as Record<symbol, boolean>)[Symbol.for('skip-override')] = true;
export const requestSpans = plugin;
