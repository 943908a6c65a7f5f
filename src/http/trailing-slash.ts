import type { FastifyInstance } from 'fastify';
import { AppError } from './errors.js';

/**
 * No path of the API or the portal ends in a slash, and a path that does is 404 with a detail that
 * says so. Without this, `/v1/{marketplace_code}/webhooks/` matched `/webhooks/:code` with an empty
 * code and was a 400 about the code's pattern, which points the caller at the wrong fault.
 * Answering it like the path without the slash (Fastify's ignoreTrailingSlash) was the other
 * choice; a 404 keeps one URL per resource, as before for `/healthz/` and `/portal/`.
 *
 * Refused: a path no route matches, and one whose slash a route read as an empty last parameter.
 * Left alone: a prefix's root, which Fastify serves with and without the slash (the API browser's
 * `/docs/`). Runs first in onRequest, before authentication, so the answer is the same with or
 * without a token.
 */
const ENDS_IN_PARAMETER = /\/:[^/]+$/;

export function refuseTrailingSlash(app: FastifyInstance): void {
  app.addHook('onRequest', async (request) => {
    const path = request.url.split('?')[0]!;
    const route = request.routeOptions.url;
    if (path.length > 1 && path.endsWith('/') && (route === undefined || ENDS_IN_PARAMETER.test(route))) {
      throw new AppError('not_found', `No route for ${request.method} ${path}: Plaza's paths do not end in a slash (${path.replace(/\/+$/, '') || '/'}).`);
    }
  });
}
