import type { FastifyInstance } from 'fastify';

/**
 * Headers every response carries. `nosniff` stops a browser from guessing a type other than the
 * one sent (a problem+json echoing input must never be run as HTML). `no-store` is the default
 * because API answers carry tokens, webhook secrets and webhook headers (receiver credentials):
 * no shared or browser cache may keep them. A route that can be cached sets its own Cache-Control.
 */
export function registerResponseHeaders(app: FastifyInstance): void {
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
    reply.header('x-content-type-options', 'nosniff');
    if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
  });
}
