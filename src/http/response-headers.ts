import type { FastifyInstance } from 'fastify';

/**
 * Headers every response carries. `nosniff` stops a browser from guessing a type other than the
 * one sent (a problem+json echoing input must never be run as HTML). `no-store` is the default
 * because API answers carry tokens, webhook secrets and webhook headers (receiver credentials):
 * no shared or browser cache may keep them. A route that can be cached sets its own Cache-Control.
 */
export function registerResponseHeaders(app: FastifyInstance): void {
  // Once the server is closing, an answer to a request that was already in flight ends its
  // connection: the server only closes connections that are idle when it starts closing, so a
  // keep-alive connection busy at SIGTERM would otherwise hold the shutdown until the client
  // leaves (or SHUTDOWN_TIMEOUT_MS runs out and the process exits 1).
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
    reply.header('x-content-type-options', 'nosniff');
    if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
    if (closing) reply.header('connection', 'close');
  });
}
