import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

export { parseCorsOrigins } from '../settings/cors-origins.js';

/** Public documents: any web page may read them (a verifier's JWKS, a client generator's OpenAPI). */
const PUBLIC_DOCUMENTS = new Set(['/.well-known/jwks.json', '/openapi.json']);

/** The request headers the API reads beyond the CORS-safelisted ones. */
const ALLOWED_HEADERS = 'Authorization, DPoP, Content-Type, X-Request-Id, If-None-Match';

/** The response headers a page may read beyond the safelisted ones (Content-Type, Cache-Control, …). */
const EXPOSED_HEADERS = 'X-Request-Id, Retry-After, Location, Link, WWW-Authenticate, ETag';

/** How long a browser may keep a preflight's answer. */
const PREFLIGHT_MAX_AGE_SECONDS = 600;

const isPortal = (path: string) => path === '/portal' || path.startsWith('/portal/');

/**
 * Cross-origin access for browsers, as a hook on every request (before authentication: a preflight
 * carries no token).
 * - /.well-known/jwks.json and /openapi.json: every origin (`Access-Control-Allow-Origin: *`).
 * - The API: the origins of CORS_ORIGINS (none by default), their preflight (OPTIONS with
 *   Access-Control-Request-Method) answered 204 with the path's methods, the headers the API reads,
 *   and a max-age. Answers vary by Origin then.
 * - The portal: none (its forms post to itself; a page elsewhere has no business there).
 * Not `Access-Control-Allow-Credentials`: the API takes bearer tokens, not cookies, so a page sends
 * its token in Authorization and the browser's cookies never count. An origin not allowed gets no
 * CORS header (the browser refuses the answer to its page); its preflight is answered as any OPTIONS
 * request (405 with Allow).
 */
export function registerCors(app: FastifyInstance, origins: Set<string>, allowedMethods: (path: string) => string[]): void {
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0]!;
    const isPublic = PUBLIC_DOCUMENTS.has(path);
    const api = !isPublic && !isPortal(path);
    if (api && origins.size > 0) reply.header('vary', 'Origin');
    const origin = request.headers.origin;
    if (origin === undefined) return;
    const allowed = isPublic ? '*' : api && origins.has(origin) ? origin : undefined;
    if (allowed === undefined) return;
    reply.header('access-control-allow-origin', allowed);
    if (request.method === 'OPTIONS' && request.headers['access-control-request-method'] !== undefined) {
      const methods = allowedMethods(path);
      // No such path: answered 404 as without CORS.
      if (methods.length === 0) return;
      reply
        .header('access-control-allow-methods', methods.join(', '))
        .header('access-control-allow-headers', ALLOWED_HEADERS)
        .header('access-control-max-age', String(PREFLIGHT_MAX_AGE_SECONDS));
      return reply.code(204).send();
    }
    reply.header('access-control-expose-headers', EXPOSED_HEADERS);
  });
}
